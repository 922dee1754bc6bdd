//! PD016: the prefill's chunked-prefill size is not a multiple of the page size.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// SGLang asserts `chunked_prefill_size % page_size == 0` on prefill servers (the decode skips
/// it), after dividing the chunk by the DP size under DP attention; the page size is the effective
/// one, after attention-backend snaps. A page size that is not positive fails there on a prefill,
/// and on a decode that runs the KV canary, whose sources read the pool's page size.
pub static RULE: Rule = Rule {
    code: "PD016",
    name: "chunked-prefill-page-multiple",
    severity: Severity::Error,
    summary: "the prefill's chunked-prefill size (per DP-attention rank) is not a multiple of the page size",
    explanation: "A prefill allocates KV in whole pages per chunk, so SGLang asserts at startup that the chunk \
        is a multiple of the page size. With DP attention the chunk is first divided among the DP ranks, so \
        it is the per-rank share that must be a multiple. The page size compared is the effective one: an \
        attention backend can snap it (e.g. to 64 or 128) after the chunk size was chosen. argparse accepts any \
        integer as the page size; zero fails this check with a division by zero, and a decode running \
        `--kv-canary` refuses it when the canary attaches to the KV pool.",
    sglang_errors: &[
        "chunked_prefill_size must be divisible by page_size",
        "kv-canary: RealKvSource.page_size must be >= 1, got {self.page_size}",
    ],
    fix: "Set `prefill.chunked_prefill_size` to a multiple of `shared.page_size` times the prefill's `attn_dp`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in ctx.heads(Role::Decode) {
        let canary = d.value("kv_canary").filter(|c| c != "none");
        if let (Some(given), Some(canary)) = (d.invalid_page_size().filter(|&v| v <= 0), canary) {
            let message = format!(
                "{} has page_size={given} with --kv-canary {canary}: the canary reads the pool's page size and \
                 refuses one below 1",
                d.label
            );
            let at = d.origin("page_size").map_or_else(|| "shared.page_size".to_owned(), |o| o.to_string());
            let fix = format!("set a positive page size (`{at}`), e.g. 16, 32 or 64");
            let mut f = Finding::new(&RULE, message, fix).at(d, "page_size").at(d, "kv_canary");
            f.sglang_error = Some(RULE.sglang_errors[1]);
            out.push(f);
        }
    }
    for p in ctx.heads(Role::Prefill) {
        // Unset means SGLang's own GPU-memory-based default, which is a power of two.
        let chunk = p.explicit("chunked_prefill_size").and_then(|v| crate::spec::parse_human_int(&v));
        if chunk.is_some_and(|c| c <= 0) {
            continue;
        }
        // The effective page size leaves out a value that is no page size; it is reported here,
        // where SGLang first divides by it (a value past `u32` is at least positive).
        if let Some(given) = p.invalid_page_size().filter(|&v| v <= 0) {
            let failure = if given == 0 {
                "SGLang's startup check `chunked_prefill_size % page_size` divides by zero (ZeroDivisionError)"
            } else {
                "not a positive integer, which SGLang needs to page the KV cache"
            };
            let message = format!("{} has page_size={given}: {failure}", p.label);
            let at = p.origin("page_size").map_or_else(|| "shared.page_size".to_owned(), |o| o.to_string());
            let fix = format!("set a positive page size (`{at}`), e.g. 16, 32 or 64");
            out.push(Finding::new(&RULE, message, fix).at(p, "page_size"));
            continue;
        }
        let Some(chunk) = chunk else {
            continue;
        };
        let dp = i64::from(p.attn_dp());
        let per_rank = chunk / dp;
        let page = p.page_size(&ctx.model);
        let size = i64::from(page.value);
        if per_rank % size == 0 {
            continue;
        }
        let share =
            if dp > 1 { format!(" ({per_rank} per DP-attention rank with attn_dp {dp})") } else { String::new() };
        let snapped = if page.why.is_empty() { String::new() } else { format!(" ({})", page.why.join("; ")) };
        let message =
            format!("{} has chunked_prefill_size={chunk}{share}, not a multiple of page_size={size}{snapped}", p.label);
        let unit = size * dp;
        let suggestion = (chunk / unit).max(1) * unit;
        let at = p
            .origin("chunked_prefill_size")
            .map_or_else(|| "prefill.chunked_prefill_size".to_owned(), ToString::to_string);
        let fix = format!(
            "set the chunk size (`{at}`) to a multiple of {unit} (page_size {size} x attn_dp {dp}), e.g. {suggestion}"
        );
        out.push(Finding::new(&RULE, message, fix).at(p, "chunked_prefill_size").at(p, "page_size"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn multiples_pass() {
        assert!(!codes(&llama()).contains(&"PD016"));
        // 16384 / attn_dp 8 = 2048, a multiple of 64.
        assert!(!codes(&deepseek()).contains(&"PD016"));
        // The decode ignores the chunk size.
        let mut d = llama();
        d.decode.chunked_prefill_size = Some(1000);
        assert!(findings(&d, "PD016").is_empty());
    }

    #[test]
    fn non_multiple_is_caught() {
        let mut d = llama();
        d.prefill.chunked_prefill_size = Some(1000);
        let f = findings(&d, "PD016");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("chunked_prefill_size=1000, not a multiple of page_size=16"), "{}", f[0].message);
        assert!(f[0].fix.contains("e.g. 992"), "{}", f[0].fix);
    }

    #[test]
    fn the_per_rank_share_under_dp_attention_is_checked() {
        let mut d = deepseek();
        // 4160 = 65 x 64 is a multiple of the page size, but its per-rank share 4160 / 8 = 520 is not.
        d.prefill.chunked_prefill_size = Some(4160);
        let f = findings(&d, "PD016");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("(520 per DP-attention rank with attn_dp 8)"), "{}", f[0].message);
        assert!(f[0].fix.contains("multiple of 512"), "{}", f[0].fix);
    }

    #[test]
    fn disabled_chunking_passes() {
        let mut d = llama();
        d.prefill.chunked_prefill_size = Some(-1);
        assert!(findings(&d, "PD016").is_empty());
    }

    #[test]
    fn a_page_size_that_is_not_positive_is_caught_on_the_prefill() {
        for (value, failure) in [("0", "divides by zero"), ("-5", "not a positive integer")] {
            let mut d = llama();
            d.prefill.extra_args = vec!["--page-size".into(), value.into()];
            let f = findings(&d, "PD016");
            assert_eq!(f.len(), 1, "{f:?}");
            assert!(f[0].message.contains(&format!("has page_size={value}: ")), "{}", f[0].message);
            assert!(f[0].message.contains(failure), "{}", f[0].message);
            assert!(f[0].fix.contains("prefill.extra_args"), "{}", f[0].fix);
        }
        // The decode skips the check.
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size".into(), "0".into()];
        assert!(findings(&d, "PD016").is_empty());
    }

    #[test]
    fn a_decode_running_the_kv_canary_needs_a_positive_page_size() {
        let mut d = llama();
        d.decode.extra_args = ["--page-size", "0", "--kv-canary", "raise"].map(Into::into).into();
        let f = findings(&d, "PD016");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("decode[0] has page_size=0 with --kv-canary raise"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().starts_with("kv-canary: RealKvSource.page_size"));
        // A positive page size passes.
        d.decode.extra_args[1] = "32".into();
        assert!(findings(&d, "PD016").is_empty(), "{:?}", findings(&d, "PD016"));
    }
}
