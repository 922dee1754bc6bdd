//! PD003: the two KV-cache dtype strings differ but name the same element type.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// Explains the PD002 errors that are only a spelling difference.
///
/// SGLang's cross-server check compares `kv_cache_dtype_str`, so `bf16` against `bfloat16`, or
/// `auto` on a bfloat16 model against an explicit `bfloat16`, raise although both pools hold the
/// same bytes. The error is real (the decode dies); this rule says that only the spelling matters.
pub static RULE: Rule = Rule {
    code: "PD003",
    name: "kv-cache-dtype-spelling",
    severity: Severity::Warning,
    summary: "the KV-cache dtype strings differ only in spelling (same element type)",
    explanation: "`bf16` and `bfloat16` are the same element type, and `auto` stores the model dtype, yet SGLang \
        compares the `--kv-cache-dtype` strings and raises \"KV cache dtype mismatch\" on the first request \
        (reported as PD002). Nothing is wrong with the KV layout: writing the same spelling on both sides \
        is the whole fix.",
    sglang_errors: &[super::KV_DTYPE_MISMATCH_ERROR],
    fix: "Write one spelling on both sides: set `shared.kv_cache_dtype` and remove per-side `--kv-cache-dtype` \
        overrides.",
    check: Check::Deployment(check),
};

/// The element type a KV-cache dtype string stores on `s`: `None` for `auto` when the model dtype
/// is left to the checkpoint (unknown here).
fn stored(s: &ServerView, kv: &str) -> Option<String> {
    match kv {
        "bf16" | "bfloat16" => Some("bfloat16".into()),
        "auto" => match s.value("dtype").as_deref() {
            Some("bfloat16") => Some("bfloat16".into()),
            Some("half") | Some("float16") => Some("float16".into()),
            Some("float") | Some("float32") => Some("float32".into()),
            _ => None,
        },
        other => Some(other.into()),
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let pk = p.kv_cache_dtype(&ctx.model);
        let dk = d.kv_cache_dtype(&ctx.model);
        // With an assumption PD002 only notes the uncertainty; there is no error to explain.
        if pk.value == dk.value || pk.assumption.is_some() || dk.assumption.is_some() {
            continue;
        }
        let (ps, ds) = (stored(p, &pk.value), stored(d, &dk.value));
        let detail = match (&ps, &ds) {
            (Some(a), Some(b)) if a == b => format!("both store {a}"),
            // `auto` with the checkpoint's dtype against an explicit bfloat16: most current
            // checkpoints are bfloat16, so this is usually the same false positive.
            (None, Some(b)) | (Some(b), None) if b == "bfloat16" => {
                "`auto` stores the checkpoint's dtype, so both store bfloat16 if the checkpoint is bfloat16".into()
            }
            _ => continue,
        };
        let message = format!(
            "{} has kv_cache_dtype={} and {} has kv_cache_dtype={}: {detail}, but SGLang compares the strings \
             and the decode raises \"KV cache dtype mismatch\"",
            p.label, pk.value, d.label, dk.value
        );
        let spelling = ps.or(ds).unwrap_or_else(|| "bfloat16".into());
        let overrides = super::overrides(p, d, "kv_cache_dtype", Some("shared.kv_cache_dtype"));
        let fix = if overrides.is_empty() {
            format!("write `--kv-cache-dtype {spelling}` on both sides")
        } else {
            format!(
                "set `shared.kv_cache_dtype: {spelling}` and remove the per-side `--kv-cache-dtype` at `{}`",
                overrides.join("`, `")
            )
        };
        out.push(Finding::new(&RULE, message, fix).at(p, "kv_cache_dtype").at(d, "kv_cache_dtype"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn equal_spellings_pass() {
        assert!(!codes(&llama()).contains(&"PD003"));
        assert!(!codes(&deepseek()).contains(&"PD003"));
    }

    #[test]
    fn bf16_against_bfloat16_is_explained_next_to_the_error() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--kv-cache-dtype".into(), "bf16".into()];
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bfloat16".into()];
        let f = findings(&d, "PD003");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("kv_cache_dtype=bf16") && f[0].message.contains("kv_cache_dtype=bfloat16"));
        assert!(f[0].message.contains("both store bfloat16"), "{}", f[0].message);
        assert!(
            f[0].fix.contains("prefill.extra_args[0]") && f[0].fix.contains("decode.extra_args[0]"),
            "{}",
            f[0].fix
        );
        // SGLang really raises, so PD002 reports the error as well.
        assert!(codes(&d).contains(&"PD002"));
    }

    #[test]
    fn auto_on_a_bfloat16_model_against_bfloat16() {
        let mut d = llama();
        d.model.dtype = Some(crate::choices::ModelDtype::Bfloat16);
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bf16".into()];
        let f = findings(&d, "PD003");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("both store bfloat16"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
    }

    #[test]
    fn a_real_type_difference_is_not_a_spelling_issue() {
        let mut d = llama();
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "fp8_e4m3".into()];
        assert!(findings(&d, "PD003").is_empty());
        d.model.dtype = Some(crate::choices::ModelDtype::Float16);
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bfloat16".into()];
        assert!(findings(&d, "PD003").is_empty());
    }
}
