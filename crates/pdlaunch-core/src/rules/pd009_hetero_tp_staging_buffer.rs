//! PD009: different attention TP sizes on a non-MLA model without the staging buffer.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::AttentionKind;
use crate::effective::ServerView;

/// The environment variable that makes heterogeneous-TP transfers of non-MLA KV efficient.
const STAGING: &str = "SGLANG_DISAGG_STAGING_BUFFER";

/// For MHA/GQA models a different attention TP means each prefill rank sends head slices of every
/// page; SGLang warns once and, without the staging buffer, issues one small RDMA write per slice.
pub static RULE: Rule = Rule {
    code: "PD009",
    name: "hetero-tp-staging-buffer",
    severity: Severity::Warning,
    summary: "attention TP sizes differ on a non-MLA model and the staging buffer is not on for both sides",
    explanation: "MLA KV is one latent per token and is copied whole, but MHA/GQA KV is split by heads, so with \
        different attention TP sizes every page is cut into per-rank head slices. SGLang logs a warning and \
        transfers the slices one by one, which is slow enough to dominate time to first token. \
        `SGLANG_DISAGG_STAGING_BUFFER=1` on both sides gathers the slices in a staging buffer first \
        (Mooncake and NIXL only; it needs a positive `chunked_prefill_size` that is a multiple of the page size).",
    sglang_errors: &["Performance is NOT guaranteed when using different TP sizes for non-MLA models. "],
    fix: "Set `SGLANG_DISAGG_STAGING_BUFFER: \"1\"` in `shared.env` (both sides need it), or use the same attention \
        TP size on both sides.",
    check: Check::Deployment(check),
};

/// SGLang reads boolean environment variables as `true`/`1`, case-insensitively.
fn staging_on(s: &ServerView) -> bool {
    s.env.get(STAGING).is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true"))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    // PD008 reports these as errors: the staging buffer does not help there.
    if ctx.model.is_swa_hybrid() == Some(true) {
        return out;
    }
    for (p, d) in ctx.pairs() {
        let (pa, da) = (p.attn_tp(), d.attn_tp());
        if pa == da || p.switch("enable_unified_memory") || d.switch("enable_unified_memory") {
            continue;
        }
        let sizes = format!("{} has attention TP {pa} and {} has attention TP {da}", p.label, d.label);
        match ctx.model.attention() {
            Some(AttentionKind::Mla) => continue,
            None => {
                let message = format!(
                    "{sizes}; model geometry unknown, rule skipped (non-MLA models need {STAGING}=1 on both sides)"
                );
                let fix = "set `model.geometry` (at least `attention`) so that pdlaunch can tell MLA from MHA/GQA";
                let f = Finding::new(&RULE, message, fix).severity(Severity::Note).at(p, "tp_size").at(d, "tp_size");
                out.push(f.or_preset(ctx));
            }
            Some(kind) => {
                let kind = if kind == AttentionKind::Mha { "MHA" } else { "GQA" };
                let missing: Vec<&str> = [p, d].iter().filter(|s| !staging_on(s)).map(|s| s.label.as_str()).collect();
                if missing.is_empty() {
                    continue;
                }
                let message =
                    format!("{sizes} on a {kind} model, and {STAGING} is not on for {}", missing.join(" and "));
                let fix = format!(
                    "add `{STAGING}: \"1\"` to `shared.env` so both sides get it, or set `decode.tp`/`prefill.tp` \
                     to equal attention TP sizes ({pa} on both)"
                );
                out.push(Finding::new(&RULE, message, fix).at(p, "tp_size").at(d, "tp_size"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    fn qwen() -> crate::deployment::Deployment {
        crate::examples::example("qwen3-2p1d-nixl").unwrap()
    }

    #[test]
    fn staging_buffer_on_both_sides_passes() {
        assert!(!codes(&qwen()).contains(&"PD009"));
        assert!(!codes(&llama()).contains(&"PD009"));
        // MLA KV is copied whole; DeepSeek with different TP needs no staging buffer.
        let mut d = deepseek();
        d.decode.attn_dp = 4;
        assert!(findings(&d, "PD009").is_empty());
    }

    #[test]
    fn missing_staging_buffer_is_a_warning_naming_both_sizes() {
        let mut d = qwen();
        d.shared.env.clear();
        let f = findings(&d, "PD009");
        // Two prefill instances, one decode: one warning per pair.
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("prefill[0] has attention TP 2 and decode[0] has attention TP 4"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("GQA model"), "{}", f[0].message);
        assert!(f[0].message.contains("not on for prefill[0] and decode[0]"), "{}", f[0].message);
        assert!(f[0].fix.contains("shared.env"));
    }

    #[test]
    fn staging_buffer_on_one_side_only_names_the_other() {
        let mut d = qwen();
        d.shared.env.clear();
        d.prefill.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "true".into());
        let f = findings(&d, "PD009");
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].message.ends_with("not on for decode[0]"), "{}", f[0].message);
    }

    #[test]
    fn unknown_geometry_is_a_note() {
        let mut d = qwen();
        d.model.geometry = None;
        let f = findings(&d, "PD009");
        assert!(!f.is_empty());
        assert!(f.iter().all(|f| f.severity == Severity::Note));
        assert!(f[0].message.contains("model geometry unknown, rule skipped"), "{}", f[0].message);
    }
}
