//! PD001: the effective page size differs between prefill and decode.

use super::{Check, Context, Finding, Rule, Severity};

/// The decode compares its KV pool's page size with the prefill's on the first request.
///
/// SGLang resolves the page size per server: the flag, then model overrides (DSA 64, DeepSeek-V4
/// 256), then attention-backend snaps that override even an explicit value (flashmla 64,
/// cutlass_mla 128, trtllm_* 64, fa4 128 on Blackwell...). The backend itself defaults by GPU, so
/// a Hopper prefill and a Blackwell decode can disagree with identical flags.
pub static RULE: Rule = Rule {
    code: "PD001",
    name: "page-size-mismatch",
    severity: Severity::Error,
    summary: "prefill and decode resolve to different KV page sizes",
    explanation: "The decode server checks the prefill's page size on the first request that pairs them \
        and raises, which kills the decode scheduler after both servers spent minutes loading the model. \
        Page size sets the KV layout and the page-index math of every transfer, so it must be equal. \
        SGLang compares the effective value: attention backends and some architectures override `--page-size`.",
    sglang_errors: &[
        "Page size mismatch: prefill server has page_size={info.page_size}, but decode server has page_size={self.kv_args.page_size}. Both servers must use the same --page-size value.",
    ],
    fix: "Set one `shared.page_size` that every backend in use keeps (16, 32 or 64 suit most), and do not \
        override `--page-size` or the attention backend in one side's `extra_args`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let pp = p.page_size(&ctx.model);
        let dp = d.page_size(&ctx.model);
        if pp.value == dp.value {
            continue;
        }
        let explain = |r: &crate::effective::Resolved<u32>| {
            if r.why.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.why.join("; "))
            }
        };
        let message = format!(
            "{} uses page_size={}{} but {} uses page_size={}{}",
            p.label,
            pp.value,
            explain(&pp),
            d.label,
            dp.value,
            explain(&dp)
        );
        let fix = format!(
            "make both sides resolve to the same value: set `shared.page_size` to {} (or another size both \
             sides' attention backends keep) and remove per-side `--page-size`/attention-backend overrides",
            pp.value.max(dp.value)
        );
        let mut f = Finding::new(&RULE, message, fix).at(p, "page_size").at(d, "page_size");
        for (side, dest) in [
            (p, "attention_backend"),
            (d, "attention_backend"),
            (p, "decode_attention_backend"),
            (d, "decode_attention_backend"),
        ] {
            if side.explicit(dest).is_some() {
                f = f.at(side, dest);
            }
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn equal_page_sizes_pass() {
        assert!(!codes(&llama()).contains(&"PD001"));
    }

    #[test]
    fn decode_extra_page_size_is_caught_with_both_values() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size".into(), "1".into()];
        let f = findings(&d, "PD001");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("page_size=16") && f[0].message.contains("page_size=1"), "{}", f[0].message);
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "decode.extra_args[0]"));
    }

    #[test]
    fn decode_attention_backend_snap_is_caught() {
        let mut d = llama();
        d.decode.extra_args = vec!["--attention-backend".into(), "flashmla".into()];
        let f = findings(&d, "PD001");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("snapped from 16 to 64 by attention backend flashmla"), "{}", f[0].message);
    }

    #[test]
    fn blackwell_default_backend_snaps_page_one() {
        let mut d = llama();
        d.shared.page_size = 1;
        d.decode.gpu = Some(crate::deployment::Gpu::B200);
        let f = findings(&d, "PD001");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("trtllm_mha"), "{}", f[0].message);
        // 16 is kept by trtllm_mha, so the same fleet is fine with the example's page size.
        d.shared.page_size = 16;
        assert!(findings(&d, "PD001").is_empty());
    }
}
