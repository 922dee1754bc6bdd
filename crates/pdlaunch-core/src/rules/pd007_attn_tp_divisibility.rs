//! PD007: one side's attention TP size is not a multiple of the other's.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// The decode maps its attention-TP ranks onto the prefill's by integer division of the two sizes.
///
/// SGLang used to assert `max % min == 0` (`validate_disagg_tp_size`) and deleted the check in
/// 2026-03 (#19618); the rank mapping still assumes it, so 2 against 3 pairs ranks wrongly and
/// leaves some KV heads unsent.
pub static RULE: Rule = Rule {
    code: "PD007",
    name: "attn-tp-divisibility",
    severity: Severity::Error,
    summary: "the larger attention TP size is not a multiple of the smaller one",
    explanation: "With different attention TP sizes P and D, each decode rank pulls from prefill rank \
        `r // (D/P)` or from ranks `r*(P/D)..`. These integer divisions only cover every rank when one size \
        divides the other. Only the replicated-state transfer (QSA, Mamba) checks it; otherwise the \
        transfer targets wrong or missing ranks: requests hang until the bootstrap timeout or return garbage. Attention TP is \
        `tp / attn_dp / attn_cp` on each side.",
    sglang_errors: &[
        "no error: the attention TP sizes do not divide each other, ranks are paired wrongly and requests hang or return garbage",
        "One attention TP size must divide the other for replicated-state transfer: src={src_attn_tp_size}, dst={dst_attn_tp_size}",
    ],
    fix: "Choose `prefill.tp`/`decode.tp` (with `attn_dp`/`attn_cp`) so that one side's attention TP size is a \
        multiple of the other's.",
    check: Check::Deployment(check),
};

/// `4 (tp 8 / attn_dp 2)`: the attention TP size with how it was derived.
fn attn_tp_text(s: &ServerView) -> String {
    let (tp, dp, cp) = (s.size("tp_size"), s.attn_dp(), s.size("attn_cp_size"));
    let mut parts = vec![format!("tp {tp}")];
    if dp > 1 {
        parts.push(format!("attn_dp {dp}"));
    }
    if cp > 1 {
        parts.push(format!("attn_cp {cp}"));
    }
    format!("{} ({})", s.attn_tp(), parts.join(" / "))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pa, da) = (p.attn_tp(), d.attn_tp());
        let (lo, hi) = (pa.min(da), pa.max(da));
        if hi % lo == 0 {
            continue;
        }
        let message = format!(
            "{} has attention TP {} and {} has attention TP {}: {hi} is not a multiple of {lo}",
            p.label,
            attn_tp_text(p),
            d.label,
            attn_tp_text(d)
        );
        // Suggest the decode sizes nearest to the current one that divide or are divided by the prefill's.
        let fix = format!(
            "change `decode.tp` (or `prefill.tp`) so that the attention TP sizes divide each other, e.g. decode \
             attention TP {} or {} against prefill {pa}",
            largest_divisor_below(pa, da),
            u64::from(da.div_ceil(pa)) * u64::from(pa)
        );
        out.push(Finding::new(&RULE, message, fix).at(p, "tp_size").at(d, "tp_size"));
    }
    out
}

/// The largest divisor of `n` that is at most `limit` (at least 1).
fn largest_divisor_below(n: u32, limit: u32) -> u32 {
    super::divisors(n).into_iter().rfind(|&d| d <= limit).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn largest_divisor_below_agrees_with_counting_down() {
        for n in 1..300u32 {
            for limit in 0..310u32 {
                let naive = (1..=limit.min(n)).rev().find(|k| n.is_multiple_of(*k)).unwrap_or(1);
                assert_eq!(super::largest_divisor_below(n, limit), naive, "n {n}, limit {limit}");
            }
        }
        // A prime near the top of the range, without counting down four billion candidates.
        assert_eq!(super::largest_divisor_below(4_294_967_291, u32::MAX), 4_294_967_291);
        assert_eq!(super::largest_divisor_below(4_294_967_291, 4_294_967_290), 1);
    }

    #[test]
    fn equal_and_divisible_sizes_pass() {
        assert!(!codes(&llama()).contains(&"PD007"));
        assert!(!codes(&deepseek()).contains(&"PD007"));
        let mut d = llama();
        d.prefill.tp = 2;
        d.decode.tp = 8;
        assert!(findings(&d, "PD007").is_empty());
    }

    #[test]
    fn non_divisible_sizes_are_caught_with_both_values() {
        let mut d = llama();
        d.prefill.tp = 2;
        d.decode.tp = 3;
        let f = findings(&d, "PD007");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("prefill[0] has attention TP 2 (tp 2)"), "{}", f[0].message);
        assert!(f[0].message.contains("decode[0] has attention TP 3 (tp 3)"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode attention TP 2 or 4"), "{}", f[0].fix);
    }

    #[test]
    fn dp_attention_enters_the_attention_tp() {
        // The prefill keeps tp 16 / attn_dp 8 = 2; the decode gets 6 / 2 = 3.
        let mut d = deepseek();
        d.decode.attn_dp = 2;
        d.decode.tp = 6;
        let f = findings(&d, "PD007");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("attention TP 3 (tp 6 / attn_dp 2)"), "{}", f[0].message);
    }
}
