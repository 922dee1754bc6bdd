//! PD038: the model's attention or KV heads cannot be split over a server's attention TP size.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::AttentionKind;

/// Every attention layer of SGLang's models divides its heads over the attention TP ranks at load
/// time: query heads must divide evenly; KV heads are split when there are at least as many as
/// ranks (and must divide evenly) and replicated otherwise (the rank count must then be a
/// multiple of them).
pub static RULE: Rule = Rule {
    code: "PD038",
    name: "kv-heads-divisibility",
    severity: Severity::Error,
    summary: "the model's attention or KV heads do not divide over the attention TP size",
    explanation: "Each attention-TP rank holds `num_heads / attn_tp` query heads and `max(1, kv_heads / attn_tp)` \
        KV heads. With fewer KV heads than ranks, consecutive ranks share (replicate) a head, which works only \
        when the rank count is a multiple of the KV heads; with more, the heads are split and the count must be \
        a multiple of the rank count. SGLang asserts both while building the model, so the server dies after \
        loading the weights. The per-rank KV head count also fixes the KV row that PD transfers slice: heads \
        that do not split evenly over both sides' ranks fail the head-sliced transfer. \
        Attention TP is `tp / attn_dp / attn_cp`.",
    sglang_errors: &[
        "assert self.total_num_kv_heads % tp_size == 0",
        "assert tp_size % self.total_num_kv_heads == 0",
        "assert self.total_num_heads % tp_size == 0",
        "KV item lengths (prefill={src_item_len}, decode={dst_item_len}) do not split into {src_heads} and {dst_heads} heads of {total_kv_heads} total with page_size={page_size}",
        "Slice size exceeds destination token capacity for TP slice transfer",
    ],
    fix: "Choose `tp` (with `attn_dp`) so that the attention TP size divides the model's attention heads, and \
        either divides its KV heads or is a multiple of them.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(g) = ctx.model.geometry.as_ref().filter(|g| g.attention_heads.is_some()) else {
        let wide: Vec<&_> = ctx.servers.iter().filter(|s| s.attn_tp() > 1).collect();
        if wide.is_empty() {
            return Vec::new();
        }
        let message = format!(
            "{} use attention TP > 1; model geometry unknown, rule skipped (the attention and KV heads must divide \
             over it)",
            labels(&wide)
        );
        let fix = "set `model.preset` or `model.geometry` (with `attention_heads` and `kv_heads`), or pass \
            `--model-config config.json`";
        return vec![Finding::new(&RULE, message, fix).severity(Severity::Note).or_preset(ctx)];
    };
    let heads = g.attention_heads.expect("filtered");
    let kv = if g.attention == AttentionKind::Mla { None } else { g.kv_heads };
    let groups = group(&ctx.servers, |s| {
        let t = s.attn_tp();
        let mut problems = Vec::new();
        let mut which = 2;
        if !heads.is_multiple_of(t) {
            problems.push(format!("its {heads} attention heads do not divide over attention TP {t}"));
        }
        if let Some(k) = kv {
            if k >= t && !k.is_multiple_of(t) {
                which = 0;
                problems.push(format!(
                    "its {k} KV heads cannot be split over attention TP {t} ({k} is not a multiple of {t})"
                ));
            } else if k < t && !t.is_multiple_of(k) {
                which = 1;
                problems.push(format!(
                    "its {k} KV heads cannot be replicated over attention TP {t} ({t} is not a multiple of {k})"
                ));
            }
        }
        (!problems.is_empty()).then_some((t, problems, which))
    });
    let model = g.architecture.as_deref().unwrap_or("the model");
    groups
        .into_iter()
        .map(|((t, problems, which), servers)| {
            let message = format!("{} run attention TP {t}, but for {model} {}", labels(&servers), problems.join("; "));
            let mut sizes: Vec<u32> = (1..=t.max(heads).min(256))
                .filter(|n| heads.is_multiple_of(*n) && kv.is_none_or(|k| k.is_multiple_of(*n) || n.is_multiple_of(k)))
                .collect();
            sizes.retain(|n| *n != t);
            let nearest = sizes.iter().min_by_key(|n| n.abs_diff(t)).copied().unwrap_or(1);
            let fix = format!(
                "use an attention TP size that fits the heads, e.g. {nearest} (sizes that work: {})",
                sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            );
            let mut f = servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "tp_size"));
            f.sglang_error = RULE.sglang_errors.get(which).copied();
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn dividing_and_replicating_sizes_pass() {
        assert!(!codes(&llama()).contains(&"PD038"));
        let mut d = llama();
        // 8 KV heads: TP 2, 4, 8 split them; TP 16 replicates each over 2 ranks; 32 query heads fit all.
        for tp in [2, 4, 8, 16, 32] {
            d.decode.tp = tp;
            assert!(findings(&d, "PD038").is_empty(), "tp {tp}");
        }
        assert!(!codes(&deepseek()).contains(&"PD038"));
    }

    #[test]
    fn kv_heads_that_neither_split_nor_replicate_are_caught() {
        let mut d = llama();
        d.decode.tp = 6;
        let f = findings(&d, "PD038");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "decode[0] run attention TP 6, but for LlamaForCausalLM its 32 attention heads do not divide over \
             attention TP 6; its 8 KV heads cannot be split over attention TP 6 (8 is not a multiple of 6)"
        );
        assert_eq!(f[0].sglang_error, Some("assert self.total_num_kv_heads % tp_size == 0"));
        assert!(f[0].fix.contains("e.g. 4 ") || f[0].fix.contains("e.g. 8 "), "{}", f[0].fix);
        // 2 KV heads over 3 ranks: not replicable.
        let g = d.model.geometry.as_mut().unwrap();
        g.kv_heads = Some(2);
        g.attention_heads = Some(12);
        d.decode.tp = 3;
        let f = findings(&d, "PD038");
        assert!(f[0]
            .message
            .ends_with("its 2 KV heads cannot be replicated over attention TP 3 (3 is not a multiple of 2)"));
        assert_eq!(f[0].sglang_error, Some("assert tp_size % self.total_num_kv_heads == 0"));
    }

    #[test]
    fn mla_checks_query_heads_only_and_unknown_geometry_is_a_note() {
        let mut d = deepseek();
        // DeepSeek-V3 has 128 heads: attention TP 3 does not divide them.
        d.decode.attn_dp = 1;
        d.decode.tp = 3;
        d.decode.instances[0].nodes.truncate(1);
        let f = findings(&d, "PD038");
        assert!(f.iter().any(|f| f.message.contains("128 attention heads do not divide over attention TP 3")), "{f:?}");
        let mut d = llama();
        d.decode.tp = 2;
        d.model.geometry = None;
        let f = findings(&d, "PD038");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Note);
        assert!(f[0].message.contains("model geometry unknown, rule skipped"), "{}", f[0].message);
    }
}
