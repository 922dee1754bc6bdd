//! PD081: a prefill and a decode that disagree on `--enable-unified-memory`.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// With `--enable-unified-memory` the KV pool is one page-envelope region (the state of a hybrid
/// model included) and Mooncake sends each page whole (`_validate_unified_envelope_transfer`,
/// `srt/disaggregation/mooncake/conn.py`): the peer must have the same single region, and the
/// envelope cannot be resliced by head for another attention TP size.
pub static RULE: Rule = Rule {
    code: "PD081",
    name: "unified-memory-pairing",
    severity: Severity::Error,
    summary: "`--enable-unified-memory` on one side only",
    explanation: "A server with `--enable-unified-memory` registers its KV cache as one region of whole page \
        envelopes (every layer of a page, and a hybrid model's state, side by side); a server without it \
        registers one K and one V buffer per layer. The prefill sends an envelope as one block, so the decode must \
        have the same single region with the same item size: otherwise the first transfer fails with a layout \
        mismatch (a hybrid-Mamba model's state envelope first). Nothing checks this at startup: the servers boot, \
        and the first request fails. (An envelope cannot be cut by head either: PD008 checks the attention TP \
        sizes.)",
    sglang_errors: &[
        "PD KV layout mismatch on the whole-envelope path: prefill has {len(src_item_lens)} KV region(s) with item_lens={src_item_lens}, decode has {len(dst_kv_ptrs)} with item_len={dst_kv_item_len}. With --enable-unified-memory both sides must enable it and use the same page size and model spec.",
        "Mamba state layouts differ between prefill and decode (src item_lens={src_item_lens}, dst item_lens={dst_item_lens}) and no per-tensor dim metadata is available to reslice. With --enable-unified-memory, prefill and decode must both enable it and use equal attention TP sizes.",
    ],
    fix: "Give both sides the same `--enable-unified-memory`: set `shared.enable_unified_memory`, which renders it \
        on both, and remove it from one side's `extra_args`.",
    check: Check::Deployment(check),
};

fn place(s: &ServerView) -> String {
    s.origin("enable_unified_memory").map_or_else(|| format!("{}'s flags", s.label), ToString::to_string)
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mamba = ctx.model.is_mamba_hybrid();
    for (p, d) in ctx.pairs() {
        let (pu, du) = (p.switch("enable_unified_memory"), d.switch("enable_unified_memory"));
        if pu == du {
            continue;
        }
        let (on, off) = if pu { (p, d) } else { (d, p) };
        let message = format!(
            "{} has --enable-unified-memory but {} does not: one side registers whole page envelopes, the other \
             per-layer K/V buffers, so the first KV transfer fails",
            on.label, off.label
        );
        let fix = format!("add `--enable-unified-memory` to {}, or remove it at `{}`", off.label, place(on));
        let mut f = Finding::new(&RULE, message, fix).at(p, "enable_unified_memory").at(d, "enable_unified_memory");
        // A hybrid-Mamba model's state is checked first, with its own text.
        f.sglang_error = RULE.sglang_errors.get(usize::from(mamba)).copied();
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn found(p: &str, d: &str) -> Vec<crate::rules::Finding> {
        lint_findings(p, d, None).into_iter().filter(|f| f.code == "PD081").collect()
    }

    #[test]
    fn both_sides_alike_pass() {
        assert!(!lint_case("", "", None).contains(&"PD081"));
        assert!(found(" --enable-unified-memory", " --enable-unified-memory").is_empty());
        assert!(found(" --enable-unified-memory --tp 2", " --enable-unified-memory --tp 2").is_empty());
        // Different TP without unified memory is the hetero-TP rules' business.
        assert!(found(" --tp 2", " --tp 4").is_empty());
    }

    #[test]
    fn one_side_only_is_the_envelope_layout_mismatch() {
        for (p, d, on) in [(" --enable-unified-memory", "", "prefill[0]"), ("", " --enable-unified-memory", "decode[0]")] {
            let f = found(p, d);
            assert_eq!(f.len(), 1, "{f:?}");
            assert!(f[0].message.starts_with(&format!("{on} (pd.sh:")) && f[0].message.contains("has --enable-unified-memory but"), "{}", f[0].message);
            let error = f[0].sglang_error.unwrap_or_default();
            assert!(error.starts_with("PD KV layout mismatch on the whole-envelope path"), "{error}");
        }
    }

    #[test]
    fn a_hybrid_mamba_model_names_its_state_layout() {
        let mut d = llama();
        d.model.preset = None;
        let g = d.model.geometry.as_mut().unwrap();
        g.architecture = Some("Qwen3NextForCausalLM".into());
        d.prefill.extra_args = vec!["--enable-unified-memory".into()];
        let f = findings(&d, "PD081");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].sglang_error.unwrap_or_default().starts_with("Mamba state layouts differ"), "{f:?}");
        assert!(f[0].fix.contains("prefill.extra_args[0]"), "{}", f[0].fix);
    }

}
