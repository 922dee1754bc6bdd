//! PD029: plain data parallelism across nodes.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};

/// Without DP attention, `--dp-size` starts independent replicas behind one DP controller, which
/// SGLang only supports within one node.
pub static RULE: Rule = Rule {
    code: "PD029",
    name: "multi-node-dp",
    severity: Severity::Error,
    summary: "`--dp-size > 1` on a multi-node server without DP attention",
    explanation: "SGLang's data-parallel controller runs its replicas as local processes; across nodes it only \
        supports DP when the replicas are DP-attention groups of one model (DeepSeek-style), where the MoE layers \
        still span every GPU. `check_server_args` asserts this, so the server exits at startup.",
    sglang_errors: &["multi-node data parallel is not supported unless dp attention!"],
    fix: "Use DP attention (`attn_dp`) for multi-node instances, or run each replica as its own instance.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let (dp, nnodes) = (s.size("dp_size"), s.size("nnodes"));
        let dp_attention = s.attn_dp() > 1;
        (dp > 1 && nnodes > 1 && !dp_attention)
            .then(|| (dp, nnodes, s.origin("dp_size").map(ToString::to_string).unwrap_or_default()))
    });
    groups
        .into_iter()
        .map(|((dp, nnodes, origin), servers)| {
            let message = format!("{}: --dp-size {dp} across {nnodes} nodes without DP attention", labels(&servers));
            let side = servers[0].role.map_or("the side", |r| r.as_str());
            let fix = format!(
                "replace `{origin}` by DP attention (`{side}.attn_dp: {dp}`), or split the replicas into {dp} \
                 instances (`{side}.instances`) with `{side}.dp: 1`"
            );
            servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "dp_size").at(s, "nnodes"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn dp_attention_across_nodes_is_fine() {
        assert!(!codes(&deepseek()).contains(&"PD029"));
        assert!(!codes(&llama()).contains(&"PD029"));
    }

    #[test]
    fn plain_dp_across_nodes_is_rejected() {
        let mut d = deepseek();
        d.decode.attn_dp = 1;
        d.decode.dp = 2;
        let f = findings(&d, "PD029");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("--dp-size 2 across 2 nodes"), "{}", f[0].message);
        assert!(f[0].fix.contains("`decode.dp`") && f[0].fix.contains("decode.attn_dp: 2"), "{}", f[0].fix);
    }
}
