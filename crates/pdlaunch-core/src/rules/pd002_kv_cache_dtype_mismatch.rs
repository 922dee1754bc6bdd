//! PD002: the effective KV-cache dtype string differs between prefill and decode.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::Resolved;

/// The decode compares the prefill's `kv_cache_dtype_str` with its own on the first request.
///
/// SGLang compares *strings*, after its own rewrites: DSA models turn `auto` into `fp8_e4m3` on
/// SM100+ and `bfloat16` below (and `bf16` into `bfloat16`), DeepSeek-V4 turns `auto` into
/// `fp8_e4m3`. So identical flags on a Hopper prefill and a Blackwell decode can still differ.
pub static RULE: Rule = Rule {
    code: "PD002",
    name: "kv-cache-dtype-mismatch",
    severity: Severity::Error,
    summary: "prefill and decode resolve to different KV-cache dtype strings",
    explanation: "The decode server checks the prefill's KV-cache dtype on the first request that pairs them \
        and raises, which kills the decode scheduler. The check is a string comparison of the value after \
        SGLang's model rewrites (DSA and DeepSeek-V4 models rewrite `auto` per GPU generation), so spellings \
        of the same type (`bf16`/`bfloat16`, or `auto` on a bfloat16 model) fail it too; PD003 points those out.",
    sglang_errors: &[super::KV_DTYPE_MISMATCH_ERROR],
    fix: "Set one explicit `shared.kv_cache_dtype` (for DSA models `fp8_e4m3` or `bfloat16`, never `auto` on \
        mixed GPU generations) and do not override `--kv-cache-dtype` in one side's `extra_args`.",
    check: Check::Deployment(check),
};

/// SGLang's rewrite of the value, in parentheses, or nothing.
fn rewrites(r: &Resolved<String>) -> String {
    if r.why.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.why.join("; "))
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let pk = p.kv_cache_dtype(&ctx.model);
        let dk = d.kv_cache_dtype(&ctx.model);
        // The rewrite of `auto` depends on the GPU generation; without it, say so rather than guess.
        if let Some(assumption) = pk.assumption.as_ref().or(dk.assumption.as_ref()) {
            let raw = |s: &crate::effective::ServerView| s.value("kv_cache_dtype").unwrap_or_else(|| "auto".into());
            let message = format!(
                "cannot tell whether {} (kv_cache_dtype={}) and {} (kv_cache_dtype={}) agree: {assumption}",
                p.label,
                raw(p),
                d.label,
                raw(d)
            );
            let fix = "set `prefill.gpu` and `decode.gpu`, or set `shared.kv_cache_dtype` to `fp8_e4m3` or \
                `bfloat16` explicitly so that it does not depend on the GPU";
            out.push(
                Finding::new(&RULE, message, fix)
                    .severity(Severity::Note)
                    .at(p, "kv_cache_dtype")
                    .at(d, "kv_cache_dtype"),
            );
            continue;
        }
        if pk.value == dk.value {
            continue;
        }
        let message = format!(
            "{} uses kv_cache_dtype={}{} but {} uses kv_cache_dtype={}{}",
            p.label,
            pk.value,
            rewrites(&pk),
            d.label,
            dk.value,
            rewrites(&dk)
        );
        let rewritten = !pk.why.is_empty() || !dk.why.is_empty();
        let fix = if rewritten {
            format!(
                "SGLang rewrites this value per GPU generation for this model: set `shared.kv_cache_dtype` to \
                 `{}` explicitly so both sides resolve to the same string, and remove per-side \
                 `--kv-cache-dtype` overrides",
                if pk.value.starts_with("fp8") || dk.value.starts_with("fp8") { "fp8_e4m3" } else { "bfloat16" }
            )
        } else {
            let overrides = super::overrides(p, d, "kv_cache_dtype", Some("shared.kv_cache_dtype"));
            if overrides.is_empty() {
                format!("pass the same `--kv-cache-dtype` to {} and {}", p.label, d.label)
            } else {
                format!(
                    "set the dtype once in `shared.kv_cache_dtype` and remove the per-side `--kv-cache-dtype` at `{}`",
                    overrides.join("`, `")
                )
            }
        };
        out.push(Finding::new(&RULE, message, fix).at(p, "kv_cache_dtype").at(d, "kv_cache_dtype"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::deployment::Gpu;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn equal_dtypes_pass() {
        assert!(!codes(&llama()).contains(&"PD002"));
        assert!(!codes(&deepseek()).contains(&"PD002"));
    }

    #[test]
    fn decode_override_is_caught_with_both_values() {
        let mut d = llama();
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "fp8_e4m3".into()];
        let f = findings(&d, "PD002");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("prefill[0] uses kv_cache_dtype=auto"), "{}", f[0].message);
        assert!(f[0].message.contains("decode[0] uses kv_cache_dtype=fp8_e4m3"), "{}", f[0].message);
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "decode.extra_args[0]"));
        assert!(f[0].fix.contains("remove the per-side `--kv-cache-dtype` at `decode.extra_args[0]`"), "{}", f[0].fix);
    }

    #[test]
    fn spelling_difference_is_still_an_error() {
        // SGLang compares strings, so `bf16` against `bfloat16` really raises (PD003 explains it).
        let mut d = llama();
        d.prefill.extra_args = vec!["--kv-cache-dtype".into(), "bf16".into()];
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bfloat16".into()];
        let f = findings(&d, "PD002");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn dsa_auto_on_mixed_gpu_generations_is_caught() {
        let mut d = deepseek();
        d.model.geometry.as_mut().unwrap().architecture = Some("DeepseekV32ForCausalLM".into());
        d.decode.gpu = Some(Gpu::B200);
        let f = findings(&d, "PD002");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("kv_cache_dtype=bfloat16") && f[0].message.contains("kv_cache_dtype=fp8_e4m3"));
        assert!(f[0].fix.contains("shared.kv_cache_dtype"));
        // Pinning the dtype resolves it.
        d.shared.kv_cache_dtype = crate::choices::KvCacheDtype::Fp8E4m3;
        assert!(findings(&d, "PD002").is_empty());
    }

    #[test]
    fn dsa_auto_with_unknown_gpu_is_a_note() {
        let mut d = deepseek();
        d.model.geometry.as_mut().unwrap().architecture = Some("DeepseekV32ForCausalLM".into());
        d.decode.gpu = None;
        let f = findings(&d, "PD002");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Note);
        assert!(f[0].message.contains("GPU is unknown"), "{}", f[0].message);
    }
}
