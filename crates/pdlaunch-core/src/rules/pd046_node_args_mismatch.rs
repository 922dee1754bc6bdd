//! PD046: the nodes of one multi-node server are started with different arguments.

use super::{group, labels, Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;
use crate::spec::ArgValue;

/// Every node of a multi-node server runs the same scheduler, model and KV pool code for its
/// ranks, from its own command line; SGLang compares none of them. A node started with another
/// `--tp-size` hangs the NCCL rendezvous; one with another `--page-size` or `--kv-cache-dtype`
/// lays out its ranks' KV differently from the ranks the peer side pairs it with. Hand-written
/// scripts and manifests repeat the command once per node (or once for the leader and once for
/// the workers), and an edit made to one copy is the usual cause.
pub static RULE: Rule = Rule {
    code: "PD046",
    name: "node-args-mismatch",
    severity: Severity::Warning,
    summary: "the nodes of one multi-node server are started with different arguments",
    explanation: "A server that spans several nodes is one process per node, each reading its own command line. \
        Apart from what names the node itself (`--node-rank`, `--host`, `--base-gpu-id`, its NICs), every node must \
        be given the same arguments: SGLang does not compare them, and ranks that disagree on the parallel sizes \
        hang at start-up, while ranks that disagree on the page size, the KV cache dtype or the memory settings \
        send or receive KV laid out differently from their peers.",
    sglang_errors: &["no error: each node reads its own arguments, and SGLang does not compare them across nodes"],
    fix: "Start every node of the server with the same arguments; only the node's own rank, address, GPUs and \
        NICs may differ.",
    check: Check::Commands(check),
};

/// Options that nodes may set differently: what describes the node rather than the server, and
/// what only node 0's HTTP server and tokenizer read (the other nodes run no front end).
const PER_NODE: &[&str] = &[
    "node_rank",
    "host",
    "port",
    "base_gpu_id",
    "gpu_id_step",
    "disaggregation_ib_device",
    "config",
    "log_level",
    "log_level_http",
    "log_requests",
    "log_requests_level",
    "crash_dump_folder",
    "served_model_name",
    "api_key",
    "admin_api_key",
    "chat_template",
    "completion_template",
    "tool_call_parser",
    "reasoning_parser",
    "enable_metrics",
    "enable_cache_report",
    "file_storage_path",
];

/// One option on which a node differs from node 0: the option, node 0's value, the node's value.
#[derive(PartialEq)]
struct Diff {
    dest: &'static str,
    flag: String,
    head: Option<String>,
    node: Option<String>,
}

/// The options (explicit on either node, or with a default) whose values differ from the head's.
fn diffs(head: &ServerView, node: &ServerView) -> Vec<Diff> {
    // Most nodes repeat the head's options in the same order (rendered ones always do): then
    // nothing differs, which one pass shows.
    if shared(head).eq(shared(node)) {
        return Vec::new();
    }
    let mut dests: Vec<&'static str> = Vec::new();
    for u in head.parsed.uses.iter().chain(&node.parsed.uses) {
        if !PER_NODE.contains(&u.dest) && !dests.contains(&u.dest) {
            dests.push(u.dest);
        }
    }
    dests
        .into_iter()
        .filter_map(|dest| {
            let (h, n) = (head.value_ref(dest), node.value_ref(dest));
            if h == n {
                return None;
            }
            let flag = head.spec().by_dest(dest).map_or_else(|| dest.to_owned(), |f| f.flags[0].clone());
            Some(Diff { dest, flag, head: h.map(Into::into), node: n.map(Into::into) })
        })
        .collect()
}

/// The options a node gives that every node must share, with their values, in order.
fn shared(s: &ServerView) -> impl Iterator<Item = (&'static str, &ArgValue)> {
    s.parsed.uses.iter().filter(|u| !PER_NODE.contains(&u.dest)).map(|u| (u.dest, &u.value))
}

fn shown(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "unset".to_owned(), |v| format!("`{v}`"))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for nodes in ctx.instances() {
        let Some(head) = nodes.iter().find(|s| s.node == 0) else { continue };
        let others = nodes.iter().copied().filter(|s| s.node != 0);
        for (diffs, nodes) in group(others, |s| Some(diffs(head, s)).filter(|d| !d.is_empty())) {
            let what: Vec<String> =
                diffs.iter().map(|d| format!("{} {} (node 0: {})", d.flag, shown(&d.node), shown(&d.head))).collect();
            let verb = if nodes.len() == 1 { "starts" } else { "start" };
            let message =
                format!("{} {verb} with other arguments than {}: {}", labels(&nodes), head.label, what.join(", "));
            let fix = format!(
                "give {} the arguments of {} (only the node's rank, address, GPUs and NICs may differ)",
                labels(&nodes),
                head.label
            );
            let mut f = Finding::new(&RULE, message, fix).at(head, diffs[0].dest);
            for n in &nodes {
                f = diffs.iter().fold(f, |f, d| f.at(n, d.dest));
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::{linted, two_node_job as job};

    #[test]
    fn nodes_started_with_different_arguments_break_and_equal_ones_pass() {
        let found = linted(&[("nodes.sh", &job("1", " --mem-fraction-static 0.7"))], "PD046");
        assert!(!found.is_empty(), "{found:?}");
        assert!(found.iter().all(|f| f.contains("prefill[0]")), "{found:?}");
        assert!(linted(&[("nodes.sh", &job("1", ""))], "PD046").is_empty());
    }
    use crate::rules::testing::*;

    #[test]
    fn rendered_nodes_agree() {
        // The multi-node example renders every node from one side's settings.
        assert!(findings(&deepseek(), "PD046").is_empty());
    }

    #[test]
    fn per_node_options_are_options_of_some_release() {
        // A name that no release has would exempt nothing: a typo here hides a real mismatch.
        for dest in super::PER_NODE {
            assert!(
                crate::release::Release::ALL.iter().any(|r| r.spec().by_dest(dest).is_some()),
                "`{dest}` is no option of any release"
            );
        }
    }
}
