//! PD004: both sides say `--kv-cache-dtype auto` but store KV in different element types.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// With `auto` the KV element type is the model dtype (`--dtype`), which SGLang never compares.
///
/// The cross-server check sees the string `auto` on both sides and passes; the transfer then
/// copies bf16 bits into an fp16 pool (or fp32 rows of another length). Inferred from the source,
/// hence a warning.
pub static RULE: Rule = Rule {
    code: "PD004",
    name: "kv-element-type-mismatch",
    severity: Severity::Warning,
    summary: "both sides use `--kv-cache-dtype auto` with different `--dtype`, so the KV element types differ",
    explanation: "SGLang's KV-cache dtype check compares the strings, and `auto` equals `auto`. With `auto` \
        the pool's element type is the model dtype, so a different `--dtype` on one side changes the bytes \
        without anything noticing: Mooncake copies pages with the prefill's item length, giving garbage \
        output at low load and out-of-range transfers at high load.",
    sglang_errors: &[
        "no error: both sides report kv_cache_dtype=auto, the KV bytes are reinterpreted as another type and the output is garbage",
        "Requested address not found",
    ],
    fix: "Set the dtype once in `model.dtype` and remove per-side `--dtype` overrides (or set an explicit \
        `shared.kv_cache_dtype`).",
    check: Check::Deployment(check),
};

/// SGLang's `--dtype`, with its synonyms folded (`half` is `float16`, `float` is `float32`).
fn model_dtype(s: &ServerView) -> String {
    match s.value("dtype").as_deref() {
        Some("half") => "float16".into(),
        Some("float") => "float32".into(),
        Some(v) => v.into(),
        None => "auto".into(),
    }
}

/// How the element type reads in a message.
fn describe(dtype: &str) -> String {
    if dtype == "auto" {
        "the checkpoint's dtype (--dtype auto)".into()
    } else {
        format!("{dtype} (--dtype {dtype})")
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        // Only `auto` on both sides hides the difference; any other difference is PD002's.
        if p.kv_cache_dtype(&ctx.model).value != "auto" || d.kv_cache_dtype(&ctx.model).value != "auto" {
            continue;
        }
        let (pt, dt) = (model_dtype(p), model_dtype(d));
        if pt == dt {
            continue;
        }
        let mut message = format!(
            "both sides use kv_cache_dtype=auto, but {} stores KV as {} and {} as {}",
            p.label,
            describe(&pt),
            d.label,
            describe(&dt)
        );
        if pt == "auto" || dt == "auto" {
            message.push_str(" (the same bytes only if the checkpoint's dtype is that one)");
        }
        let overrides = super::overrides(p, d, "dtype", Some("model.dtype"));
        let fix = if overrides.is_empty() {
            "pass the same `--dtype` to both sides".to_owned()
        } else {
            format!("set `model.dtype` once and remove the per-side `--dtype` at `{}`", overrides.join("`, `"))
        };
        out.push(Finding::new(&RULE, message, fix).at(p, "dtype").at(d, "dtype"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn same_dtype_passes() {
        assert!(!codes(&llama()).contains(&"PD004"));
        let mut d = llama();
        d.model.dtype = Some(crate::choices::ModelDtype::Float16);
        d.decode.extra_args = vec!["--dtype".into(), "half".into()];
        assert!(findings(&d, "PD004").is_empty(), "half and float16 are one type");
    }

    #[test]
    fn decode_dtype_override_is_caught() {
        let mut d = llama();
        d.model.dtype = Some(crate::choices::ModelDtype::Bfloat16);
        d.decode.extra_args = vec!["--dtype".into(), "float16".into()];
        let f = findings(&d, "PD004");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("prefill[0] stores KV as bfloat16"), "{}", f[0].message);
        assert!(f[0].message.contains("decode[0] as float16"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
    }

    #[test]
    fn explicit_kv_dtype_makes_dtype_irrelevant_here() {
        let mut d = llama();
        d.shared.kv_cache_dtype = crate::choices::KvCacheDtype::Fp8E4m3;
        d.decode.extra_args = vec!["--dtype".into(), "float16".into()];
        assert!(findings(&d, "PD004").is_empty());
    }
}
