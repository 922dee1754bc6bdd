//! PD011: attention context parallelism on a decode server.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// Attention CP splits a prompt's tokens across ranks, which only the prefill does; the decode's
/// rank mapping asserts `attn_cp_size == 1`, and `--enable-prefill-cp` is refused on decode.
pub static RULE: Rule = Rule {
    code: "PD011",
    name: "decode-context-parallel",
    severity: Severity::Error,
    summary: "the decode uses attention context parallelism (`--attn-cp-size` > 1 or `--enable-prefill-cp`)",
    explanation: "Context parallelism of attention is a prefill technique: the decode receives whole KV pages \
        per request and maps prefill CP ranks onto a single CP rank of its own. `--enable-prefill-cp` on a \
        decode server fails an assertion at startup, and an attention CP size above 1 fails the decode's \
        rank-mapping assertion on the first request, killing the decode scheduler. (Decode-side context \
        parallelism is `--dcp-size`, checked by PD012.)",
    sglang_errors: &[
        "Decode cp size ({self.attn_cp_size}) should be equal to 1",
        "CP is only supported for prefill when PD disaggregation, please remove --enable-prefill-cp.",
    ],
    fix: "Remove `decode.attn_cp` and `decode.enable_prefill_cp` (or the matching flags in `decode.extra_args`).",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in ctx.heads(Role::Decode) {
        if d.switch("enable_prefill_cp") {
            let message = format!("{} has --enable-prefill-cp, which SGLang allows on prefill servers only", d.label);
            let fix =
                format!("remove it from the decode (`{}`)", origin(d, "enable_prefill_cp", "decode.enable_prefill_cp"));
            let mut f = Finding::new(&RULE, message, fix).at(d, "enable_prefill_cp");
            f.sglang_error = Some(RULE.sglang_errors[1]);
            out.push(f);
        }
        let cp = d.size("attn_cp_size");
        if cp > 1 {
            let prefill_cp: Vec<String> =
                ctx.heads(Role::Prefill).map(|p| format!("{} has {}", p.label, p.size("attn_cp_size"))).collect();
            let message = format!(
                "{} has attn_cp_size={cp} but the decode must use 1 ({})",
                d.label,
                if prefill_cp.is_empty() { "no prefill in view".to_owned() } else { prefill_cp.join(", ") }
            );
            let fix = format!(
                "set the decode's attention CP size to 1 (`{}`), and use `decode.dcp` for decode-side context \
                 parallelism",
                origin(d, "attn_cp_size", "decode.attn_cp")
            );
            out.push(Finding::new(&RULE, message, fix).at(d, "attn_cp_size"));
        }
    }
    out
}

/// Where `dest` was set on `s`, or `fallback` when it is unknown.
fn origin(s: &crate::effective::ServerView, dest: &str, fallback: &str) -> String {
    s.origin(dest).map_or_else(|| fallback.to_owned(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn prefill_cp_passes() {
        assert!(!codes(&llama()).contains(&"PD011"));
        let mut d = deepseek();
        d.prefill.attn_cp = 2;
        d.prefill.enable_prefill_cp = true;
        assert!(findings(&d, "PD011").is_empty());
    }

    #[test]
    fn decode_attn_cp_is_caught() {
        let mut d = deepseek();
        d.prefill.attn_cp = 2;
        d.decode.attn_cp = 2;
        let f = findings(&d, "PD011");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("decode[0] node 0 has attn_cp_size=2"), "{}", f[0].message);
        assert!(f[0].message.contains("prefill[0] node 0 has 2"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode.attn_cp"), "{}", f[0].fix);
    }

    #[test]
    fn decode_enable_prefill_cp_is_caught() {
        let mut d = llama();
        d.decode.extra_args = vec!["--enable-prefill-cp".into()];
        let f = findings(&d, "PD011");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].sglang_error.unwrap().starts_with("CP is only supported for prefill"));
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
    }
}
