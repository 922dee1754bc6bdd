//! PD008: different attention TP sizes where SGLang cannot reslice the KV at all.

use super::{Check, Context, Finding, Rule, Severity};

/// Heterogeneous TP is refused for non-MLA hybrid sliding-window models and for unified memory.
///
/// The prefill's transfer worker raises per request: for the SWA state of a non-MLA hybrid model
/// (gpt-oss) and for the whole-envelope layout of `--enable-unified-memory`, which cannot be
/// TP-resliced. The raise happens in the transfer thread, so users see requests hang and fail.
pub static RULE: Rule = Rule {
    code: "PD008",
    name: "hetero-tp-unsupported",
    severity: Severity::Error,
    summary: "attention TP sizes differ on a model or KV layout that cannot be resliced",
    explanation: "For non-MLA hybrid sliding-window models (gpt-oss class) the prefill raises on every \
        transfer when the attention TP sizes differ, and with `--enable-unified-memory` the whole KV \
        envelope cannot be split across a different TP either. The error is raised in the prefill's \
        transfer worker, so the request fails after the prefill work and the client sees a 500 or a hang.",
    sglang_errors: &[
        "PD Disaggregation does NOT support PD different TP sizes for non-MLA {st.upper()} hybrid models yet.",
        "--enable-unified-memory does not support different prefill / decode attention TP sizes (prefill={...}, decode={...}): the whole-envelope state cannot be TP-resliced.",
        "Head-sliced PD transfer needs matching per-layer K/V buffers: prefill has {len(src_ptrs)} entries, decode has {len(dst_ptrs)}",
    ],
    fix: "Use the same attention TP size on both sides (`prefill.tp`/`decode.tp` with `attn_dp`), or for \
        unified memory turn off `shared.enable_unified_memory`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let swa = ctx.model.is_swa_hybrid() == Some(true);
    for (p, d) in ctx.pairs() {
        let (pa, da) = (p.attn_tp(), d.attn_tp());
        if pa == da {
            continue;
        }
        let sizes = format!("{} has attention TP {pa} and {} has attention TP {da}", p.label, d.label);
        if swa {
            let model = ctx.model.architecture().unwrap_or("this model");
            let message = format!("{sizes}, but {model} is a non-MLA hybrid sliding-window model");
            let fix = format!(
                "give both sides the same attention TP size: set `decode.tp` to {} (or `prefill.tp` to {}), \
                 keeping `attn_dp` equal",
                p.size("tp_size"),
                d.size("tp_size")
            );
            out.push(Finding::new(&RULE, message, fix).at(p, "tp_size").at(d, "tp_size"));
        }
        let unified: Vec<&str> =
            [p, d].iter().filter(|s| s.switch("enable_unified_memory")).map(|s| s.label.as_str()).collect();
        if !unified.is_empty() {
            let message = format!("{sizes}, but --enable-unified-memory is on ({})", unified.join(", "));
            let fix = "give both sides the same attention TP size (`prefill.tp`/`decode.tp`), or turn off \
                `shared.enable_unified_memory`";
            let mut f = Finding::new(&RULE, message, fix).at(p, "tp_size").at(d, "tp_size");
            // A unified prefill refuses the TP sizes; a plain one slices heads and meets the
            // decode's single envelope region.
            let which = if p.switch("enable_unified_memory") { 1 } else { 2 };
            f.sglang_error = Some(RULE.sglang_errors[which]);
            for s in [p, d] {
                if s.switch("enable_unified_memory") {
                    f = f.at(s, "enable_unified_memory");
                }
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn gpt_oss() -> crate::deployment::Deployment {
        let mut d = llama();
        let g = d.model.geometry.as_mut().unwrap();
        g.architecture = Some("GptOssForCausalLM".into());
        g.hybrid_swa = true;
        g.sliding_window = Some(128);
        d
    }

    #[test]
    fn equal_tp_and_plain_models_pass() {
        assert!(!codes(&gpt_oss()).contains(&"PD008"));
        // Different TP on a plain GQA model is PD009's business, not this rule's.
        let qwen = crate::examples::example("qwen3-2p1d-nixl").unwrap();
        assert!(!codes(&qwen).contains(&"PD008"));
    }

    #[test]
    fn swa_hybrid_with_different_tp_is_caught() {
        let mut d = gpt_oss();
        d.decode.tp = 2;
        let f = findings(&d, "PD008");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("prefill[0] has attention TP 1 and decode[0] has attention TP 2"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("GptOssForCausalLM"));
        assert!(f[0].sglang_error.unwrap().contains("non-MLA {st.upper()} hybrid"));
        assert!(f[0].fix.contains("`decode.tp` to 1"), "{}", f[0].fix);
    }

    #[test]
    fn unified_memory_with_different_tp_is_caught() {
        let mut d = llama();
        d.decode.tp = 2;
        d.shared.enable_unified_memory = true;
        let f = findings(&d, "PD008");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("--enable-unified-memory is on (prefill[0], decode[0])"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().starts_with("--enable-unified-memory does not support"));
    }

    #[test]
    fn a_unified_decode_behind_a_plain_prefill_meets_the_head_sliced_path() {
        let mut d = llama();
        d.decode.tp = 2;
        d.decode.extra_args = vec!["--enable-unified-memory".into()];
        let f = findings(&d, "PD008");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("--enable-unified-memory is on (decode[0])"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().starts_with("Head-sliced PD transfer needs matching per-layer"));
    }
}
