//! PD068: different attention TP sizes on a transfer path that cannot slice the state it carries.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::AttentionKind;

/// SGLang 0.5.23 slices a non-MLA model's KV by head when the attention TP sizes differ, but not
/// everywhere: a sliding-window model's SWA state cannot be sliced under prefill PP (its pool has
/// no layer ids) nor on Mori, and an MXFP8 KV cache carries block scales that are not sliced. The
/// other state kinds it refuses (MiniMax, Mamba, Qwen's QSA) have no built-in model here, so their
/// texts are explained, not checked.
pub static RULE: Rule = Rule {
    code: "PD068",
    name: "hetero-tp-state-transfer",
    severity: Severity::Error,
    summary: "attention TP sizes differ on a transfer path that cannot slice the model's state",
    explanation: "With different attention TP sizes the prefill sends head slices. Every transfer fails for SWA \
        state under prefill PP or on mori, for MXFP8 block scales, and for MiniMax, Mamba and QSA state.",
    sglang_errors: &[
        "PD Disaggregation does NOT support PD different TP sizes for non-MLA SWA hybrid models with pipeline parallelism yet.",
        "PD state transfer does not support TP-mismatched non-MLA SWA models (prefill_tp_size={self.attn_tp_size}, decode_tp_size={peer_info.decode_tp_size})",
        "PD Disaggregation does NOT support different attention TP sizes with MXFP8 KV cache: prefill attn_tp_size={info.attn_tp_size}, decode attn_tp_size={self.attn_tp_size}, state types {[st.value for st in block_scale_states]}.",
        "MiniMax sparse PD requires matching attention TP sizes: prefill={info.attn_tp_size}, decode={self.attn_tp_size}.",
        "PD disagg: heterogeneous TP not supported for MiniMax state yet.",
        "PD disagg: heterogeneous TP not supported for {state_type} yet.",
        "Replicated Mamba PD state transfer currently requires matching prefill/decode attention TP sizes",
    ],
    fix: "Use equal attention TP sizes, or drop what cannot be sliced (prefill PP, mori, MXFP8).",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let swa = ctx.model.is_swa_hybrid() == Some(true);
    let mla = ctx.model.attention() == Some(AttentionKind::Mla);
    for (p, d) in ctx.pairs() {
        let (pa, da) = (p.attn_tp(), d.attn_tp());
        if pa == da {
            continue;
        }
        let sizes = format!("{} has attention TP {pa} and {} has attention TP {da}", p.label, d.label);
        let mut push = |i: usize, why: String, dest: &str| {
            let mut f = Finding::new(&RULE, format!("{sizes}, {why}"), RULE.fix).at(p, "tp_size").at(d, "tp_size");
            f = f.at(p, dest);
            f.sglang_error = Some(RULE.sglang_errors[i]);
            out.push(f);
        };
        let pp = p.size("pp_size");
        if swa && pp > 1 {
            push(0, format!("and the prefill runs --pp-size {pp}: the SWA state cannot be paired by layer"), "pp_size");
        }
        let backend = p.value("disaggregation_transfer_backend").unwrap_or_default();
        if swa && backend == "mori" {
            push(1, "over mori, which cannot slice the SWA state".into(), "disaggregation_transfer_backend");
        }
        let mxfp8 = [p, d].iter().any(|s| s.value("kv_cache_dtype").as_deref() == Some("mxfp8"));
        if mxfp8 && !mla && ctx.model.attention().is_some() {
            push(2, "with an MXFP8 KV cache, whose block scales are not sliced".into(), "kv_cache_dtype");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn with(preset: &str, prefill: &[&str], decode: &[&str]) -> Vec<&'static str> {
        let mut d = llama();
        d.model.preset = Some(preset.into());
        d.model.geometry = None;
        d.prefill.extra_args = prefill.iter().map(|a| (*a).into()).collect();
        d.decode.extra_args = decode.iter().map(|a| (*a).into()).collect();
        findings(&d, "PD068").iter().filter_map(|f| f.sglang_error).collect()
    }

    #[test]
    fn slicing_paths_that_work_pass() {
        // Head-sliced SWA over Mooncake without PP, MXFP8 at equal TP, and a plain GQA model.
        assert!(with("gpt-oss-20b", &["--tp", "2"], &[]).is_empty());
        assert!(with("llama-3.1-8b-instruct", &["--kv-cache-dtype", "mxfp8"], &["--kv-cache-dtype", "mxfp8"]).is_empty());
        assert!(with("llama-3.1-8b-instruct", &["--tp", "2"], &[]).is_empty());
    }

    #[test]
    fn swa_under_pp_or_mori_and_mxfp8_are_caught() {
        let t = with("gpt-oss-20b", &["--tp", "2", "--pp-size", "2"], &[]);
        assert!(t.len() == 1 && t[0].contains("with pipeline parallelism"), "{t:?}");
        let mori = ["--disaggregation-transfer-backend", "mori"];
        let t = with("gpt-oss-20b", &["--tp", "2", mori[0], mori[1]], &mori);
        assert!(t.len() == 1 && t[0].contains("TP-mismatched non-MLA SWA"), "{t:?}");
        let t = with("llama-3.1-8b-instruct", &["--tp", "2", "--kv-cache-dtype", "mxfp8"], &["--kv-cache-dtype", "mxfp8"]);
        assert!(t.len() == 1 && t[0].contains("MXFP8"), "{t:?}");
    }
}
