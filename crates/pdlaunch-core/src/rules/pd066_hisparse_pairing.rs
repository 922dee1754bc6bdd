//! PD066: a HiSparse decode paired in a way its host-backed KV transfer cannot serve.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// A decode with `--enable-hisparse` keeps its KV in host memory and receives it there, with
/// only the draft KV (or DeepSeek-V4's compressed layers) on the device. SGLang's transfer paths
/// refuse what would mix the two kinds on one path: a DCP relayout, a speculating decode behind a
/// prefill that sends no draft KV, a different attention TP size on NIXL, and a draft pool on a
/// backend other than Mooncake.
pub static RULE: Rule = Rule {
    code: "PD066",
    name: "hisparse-pairing",
    severity: Severity::Error,
    summary: "a HiSparse decode is paired with a prefill, speculative setting or backend its transfer refuses",
    explanation: "A HiSparse decode receives KV into host memory, draft KV into device memory. The first request \
        fails on a DCP relayout, a draft on a backend other than mooncake, decode-only speculation, and on nixl \
        another attention TP size.",
    sglang_errors: &[
        "HiSparse destination device indices are not supported by PD DCP relayout",
        "HiSparse device-only PD transfer currently requires the Mooncake backend",
        "HiSparse spec PD transfer requires an appended device-only draft KV buffer",
        "NIXL PD transfer does not support HiSparse combined with decode-only speculative decoding.",
        "NIXL heterogeneous-TP direct-to-host KV transfer is not implemented safely yet",
        "NIXL {context} mixed KV memory kinds are not implemented safely yet: {sorted(unique)}",
    ],
    fix: "With a HiSparse decode keep DCP 1, speculate on both sides (over mooncake) or neither, and equal \
        attention TP sizes.",
    check: Check::Deployment(check),
};

fn speculates(s: &ServerView) -> bool {
    s.value("speculative_algorithm").is_some_and(|a| !a.eq_ignore_ascii_case("none") && !a.eq_ignore_ascii_case("null"))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        if !d.switch("enable_hisparse") {
            continue;
        }
        let backend = d.transfer_backend();
        let mooncake = backend == "mooncake";
        let nixl = backend == "nixl";
        let relayout = p.size("dcp_size") == 1 && d.size("dcp_size") > 1;
        let (pa, da) = (p.attn_tp(), d.attn_tp());
        let mut push = |i: usize, why: String, dests: &[&str]| {
            let message = format!("{} has --enable-hisparse {why}", d.label);
            let mut f = Finding::new(&RULE, message, RULE.fix).at(d, "enable_hisparse");
            for dest in dests {
                f = f.at(d, dest);
            }
            f.sglang_error = Some(RULE.sglang_errors[i]);
            out.push(f);
        };
        if relayout {
            push(0, format!("and --dcp-size {} behind a DCP-1 prefill", d.size("dcp_size")), &["dcp_size"]);
        }
        if speculates(d) && !mooncake {
            push(1, format!("and speculates, with transfer backend `{backend}`"), &["disaggregation_transfer_backend"]);
        }
        if speculates(d) && !speculates(p) {
            let i = if nixl { 3 } else { 2 };
            push(i, format!("and speculates, but {} does not (no draft KV is sent)", p.label), &["speculative_algorithm"]);
        }
        if nixl && pa != da {
            push(4, format!("on nixl with attention TP {da} against {pa} on {}", p.label), &["tp_size"]);
        }
        if nixl && speculates(d) && (relayout || pa != da) {
            push(5, "and a draft KV on nixl, on a relayout or resliced path: host and device regions mix".into(), &[]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn hisparse(p: &[&str], d: &[&str]) -> Vec<&'static str> {
        let mut dep = llama();
        dep.prefill.extra_args = p.iter().map(|a| (*a).into()).collect();
        dep.decode.extra_args = ["--enable-hisparse"].iter().chain(d).map(|a| (*a).into()).collect();
        findings(&dep, "PD066").iter().filter_map(|f| f.sglang_error).collect()
    }

    #[test]
    fn a_hisparse_decode_paired_alike_passes() {
        assert!(hisparse(&[], &[]).is_empty());
        let spec = ["--speculative-algorithm", "EAGLE"];
        assert!(hisparse(&spec, &spec).is_empty(), "{:?}", hisparse(&spec, &spec));
        assert!(findings(&llama(), "PD066").is_empty());
    }

    #[test]
    fn decode_only_speculation_and_nixl_reslicing_are_caught() {
        let t = hisparse(&[], &["--speculative-algorithm", "EAGLE"]);
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(t[0].contains("appended device-only draft KV buffer"));
        let nixl = ["--disaggregation-transfer-backend", "nixl"];
        let t = hisparse(&nixl, &["--speculative-algorithm", "EAGLE", "--tp", "2", nixl[0], nixl[1]]);
        assert_eq!(t.len(), 4, "{t:?}");
        for want in ["requires the Mooncake backend", "decode-only speculative", "direct-to-host", "mixed KV memory"] {
            assert!(t.iter().any(|x| x.contains(want)), "{want}: {t:?}");
        }
    }
}
