//! PD048: the nodes of a multi-node server do not have the ranks `0..nnodes`.

use super::{Check, Context, Finding, Rule, Severity};

/// A server started with `--nnodes N` forms once N processes with node ranks 0 to N-1 have joined
/// its rendezvous. Scripts that repeat the command per node are where a rank goes wrong: a copied
/// line keeps its rank, or `--nnodes` is raised without adding the node.
pub static RULE: Rule = Rule {
    code: "PD048",
    name: "node-ranks",
    severity: Severity::Error,
    summary: "a multi-node server's nodes do not have the node ranks 0 to `--nnodes` - 1",
    explanation: "Every node of a server started with `--nnodes N` takes a share of the server's GPU ranks by its \
        `--node-rank`, which must lie in 0..N-1, one node per rank. A node whose rank is N or more takes no valid \
        share, and a rank that no node has leaves the others waiting for it: the server fails at start-up or waits \
        there until a timeout, before it ever reaches the peer side.",
    sglang_errors: &["a multi-node server waits at start-up for a node rank that never joins"],
    fix: "Start exactly one node with each `--node-rank` from 0 to `--nnodes` - 1, and make `--nnodes` the number of \
        nodes that serve the instance.",
    check: Check::Commands(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for nodes in ctx.instances() {
        let before = out.len();
        for s in nodes.iter().filter(|s| s.explicit("node_rank").is_some()) {
            let nnodes = s.size("nnodes") as usize;
            if s.node >= nnodes {
                let message = format!(
                    "{} has `--node-rank {}` but `--nnodes {nnodes}`: node ranks run from 0 to {}",
                    s.label,
                    s.node,
                    nnodes.saturating_sub(1)
                );
                let fix = format!(
                    "give {} a rank below {nnodes} that no other node of the server has, or raise `--nnodes` on every \
                     node",
                    s.label
                );
                out.push(Finding::new(&RULE, message, fix).at(s, "node_rank").at(s, "nnodes"));
            }
        }
        // Missing ranks, where the material starts several nodes of the server (with one node, the
        // others are most likely written in files that were not linted) and no rank is out of
        // range (correcting that one is the fix).
        let Some(head) = nodes.iter().find(|s| s.node == 0) else { continue };
        let nnodes = head.size("nnodes") as usize;
        if nodes.len() < 2 || out.len() > before {
            continue;
        }
        let missing: Vec<String> =
            (0..nnodes).filter(|r| !nodes.iter().any(|s| s.node == *r)).map(|r| r.to_string()).collect();
        if missing.is_empty() {
            continue;
        }
        let started: Vec<String> = nodes.iter().map(|s| s.node.to_string()).collect();
        let (noun, them) = if missing.len() == 1 { ("node", "it") } else { ("nodes", "them") };
        let message = format!(
            "{} has `--nnodes {nnodes}`, but the linted material starts only nodes {}: unless {noun} {} {} started \
             elsewhere, the server waits for {them} at start-up",
            head.label,
            and_list(&started),
            and_list(&missing),
            if missing.len() == 1 { "is" } else { "are" }
        );
        let fix = format!("start {noun} {} of the server too, or lower `--nnodes` on every node", and_list(&missing));
        let mut f = Finding::new(&RULE, message, fix).at(head, "nnodes");
        f.severity = Severity::Warning;
        out.push(f);
    }
    out
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::{linted, two_node_job as job};

    #[test]
    fn a_rank_past_nnodes_breaks_and_ranks_zero_and_one_pass() {
        let found = linted(&[("nodes.sh", &job("2", ""))], "PD048");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("prefill[0] node 2 (nodes.sh:2) has `--node-rank 2` but `--nnodes 2`"), "{}", found[0]);
        assert!(linted(&[("nodes.sh", &job("1", ""))], "PD048").is_empty());
    }
}
