//! PD065: DeepSeek-V4.1's DSpark speculative decoding set up in a way SGLang's PD refuses.

use super::pd033_env_contract_mismatch::env_origin;
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;

/// DSpark ships its draft state with the KV, so both sides must run it with one block size, one
/// draft-token count and one TP size (the prefill's bootstrap pairing compares them), and each PD
/// server must use static verify, the Mooncake or NIXL backend, no DCP, and on the decode no
/// attention CP (the DeepSeek-V4 hook, at startup).
pub static RULE: Rule = Rule {
    code: "PD065",
    name: "dspark-pairing",
    severity: Severity::Error,
    summary: "DSpark speculative decoding differs between the sides, or is combined with what its PD path refuses",
    explanation: "DSpark's draft KV travels with the target KV: pairing refuses DSpark on one side, another \
        block size or draft-token count, another TP size. Startup wants static verify, mooncake or nixl, DCP 1, \
        no decode CP.",
    sglang_errors: &[
        "DeepSeek-V4.1 DSpark PD layout mismatch ({', '.join(mismatched_fields)}): both servers must enable DSpark with the same block size and target/draft KV layout. Upgrade both servers together.",
        "DeepSeek-V4.1 DSpark PD requires the same TP size on both servers (including prefill CP ranks for MLA)",
        "DeepSeek-V4.1 DSpark PD requires static verify, Mooncake or NIXL, DCP=1, and CP=1 on decode. Prefill CP requires --enable-prefill-cp with the interleave strategy. DP attention is supported when both servers use the same block size and target/draft KV layout.",
        "DeepSeek-V4.1 DSpark PD requires target and draft SWA state",
    ],
    fix: "Set DSpark alike on both sides, with equal TP sizes, mooncake or nixl, and DCP 1.",
    check: Check::Deployment(check),
};

fn dspark(s: &ServerView) -> bool {
    s.value("speculative_algorithm").is_some_and(|a| a.eq_ignore_ascii_case("DSPARK"))
}

fn finding(i: usize, message: String, fix: &str) -> Finding {
    let mut f = Finding::new(&RULE, message, fix);
    f.sglang_error = Some(RULE.sglang_errors[i]);
    f
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pd, dd) = (dspark(p), dspark(d));
        if !pd && !dd {
            continue;
        }
        let mut differ: Vec<String> = Vec::new();
        if pd != dd {
            differ.push(format!("DSpark on {} only", if pd { &p.label } else { &d.label }));
        } else {
            for dest in ["speculative_dspark_block_size", "speculative_num_draft_tokens"] {
                let (a, b) = (p.value(dest), d.value(dest));
                if a != b {
                    let flag = p.spec().by_dest(dest).map_or(dest, |f| f.flags[0].as_str());
                    let shown = |v: Option<String>| v.unwrap_or_else(|| "unset".into());
                    differ.push(format!("{flag} {} against {}", shown(a), shown(b)));
                }
            }
        }
        if !differ.is_empty() {
            let message = format!("{} and {}: {}", p.label, d.label, differ.join("; "));
            let fix = "run DSpark on both sides with the same block size and draft-token count";
            out.push(finding(0, message, fix).at(p, "speculative_algorithm").at(d, "speculative_algorithm"));
            continue;
        }
        let (pt, dt) = (p.size("tp_size"), d.size("tp_size"));
        if pt != dt {
            let message = format!("{} has --tp-size {pt} and {} has --tp-size {dt} with DSpark", p.label, d.label);
            out.push(finding(1, message, "give both sides the same TP size").at(p, "tp_size").at(d, "tp_size"));
        }
    }
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some() && dspark(s)) {
        let mut why: Vec<String> = Vec::new();
        let mut at: Vec<&str> = Vec::new();
        if let Some(mode) = s.env.get("SGLANG_RAGGED_VERIFY_MODE").filter(|m| m.trim() != "static") {
            why.push(format!("SGLANG_RAGGED_VERIFY_MODE={mode}"));
        }
        let backend = s.transfer_backend();
        if !matches!(backend.as_str(), "mooncake" | "nixl") {
            why.push(format!("transfer backend `{backend}`"));
            at.push("disaggregation_transfer_backend");
        }
        let dcp = s.size("dcp_size");
        if dcp != 1 {
            why.push(format!("--dcp-size {dcp}"));
            at.push("dcp_size");
        }
        let cp = s.size("attn_cp_size");
        if s.role == Some(Role::Decode) && cp > 1 {
            why.push(format!("--attn-cp-size {cp} on the decode"));
            at.push("attn_cp_size");
        }
        if s.role == Some(Role::Prefill)
            && cp > 1
            && !(s.switch("enable_prefill_cp") && s.value("cp_strategy").as_deref() == Some("interleave"))
        {
            why.push(format!("prefill CP {cp} without --enable-prefill-cp --cp-strategy interleave"));
            at.push("cp_strategy");
        }
        if why.is_empty() {
            continue;
        }
        let message = format!("{} runs DSpark with {}", s.label, why.join(", "));
        let fix = "use static verify, the mooncake or nixl backend, `--dcp-size 1`, and attention CP on the prefill only";
        let mut f = finding(2, message, fix).at(s, "speculative_algorithm");
        for dest in at {
            f = f.at(s, dest);
        }
        if s.env.contains_key("SGLANG_RAGGED_VERIFY_MODE") {
            f = f.at_origin(s.label.clone(), None, env_origin(ctx, s, "SGLANG_RAGGED_VERIFY_MODE"));
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn both(args: &[&str]) -> crate::deployment::Deployment {
        let mut d = llama();
        d.prefill.extra_args = args.iter().map(|a| (*a).into()).collect();
        d.decode.extra_args = d.prefill.extra_args.clone();
        d
    }

    #[test]
    fn dspark_set_alike_on_both_sides_passes() {
        let d = both(&["--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "4"]);
        assert!(findings(&d, "PD065").is_empty(), "{:?}", findings(&d, "PD065"));
        assert!(findings(&llama(), "PD065").is_empty());
    }

    #[test]
    fn dspark_on_one_side_or_with_another_block_size_is_caught() {
        let mut d = both(&["--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "4"]);
        d.decode.extra_args[3] = "8".into();
        let f = findings(&d, "PD065");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("--speculative-dspark-block-size 4 against 8"), "{}", f[0].message);
        d.decode.extra_args.clear();
        let f = findings(&d, "PD065");
        assert!(f[0].message.contains("DSpark on prefill[0] only"), "{}", f[0].message);
    }

    #[test]
    fn dspark_with_other_tp_sizes_or_a_refused_setup_is_caught() {
        let mut d = both(&["--speculative-algorithm", "DSPARK"]);
        d.decode.tp = 2;
        d.decode.extra_args.extend(["--disaggregation-transfer-backend".into(), "mori".into()]);
        let texts: Vec<&str> = findings(&d, "PD065").iter().filter_map(|f| f.sglang_error).collect();
        assert!(texts.iter().any(|t| t.contains("same TP size on both servers")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("requires static verify, Mooncake or NIXL")), "{texts:?}");
    }
}
