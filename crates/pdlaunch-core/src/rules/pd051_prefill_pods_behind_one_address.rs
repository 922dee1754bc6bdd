//! PD051: a router's prefill entry reaches several prefill pods through one address.

use super::{Check, Context, Finding, Rule, Severity};

/// Reported by the linter, which reads the objects' `replicas` and the pods of each
/// LeaderWorkerSet group. A deployment lists each prefill instance at an address of its own.
pub static RULE: Rule = Rule {
    code: "PD051",
    name: "prefill-pods-behind-one-address",
    severity: Severity::Error,
    summary: "a router `--prefill` entry reaches several prefill pods through one address",
    explanation: "The router sends each request to the address of one `--prefill` entry and tells the decode to \
        fetch the prefill's KV bootstrap information at that address's host. A Kubernetes Service (or a headless \
        Service's name) hands each connection to any of the pods behind it, so the router's requests spread over \
        the prefill pods. The decode asks the bootstrap server at the address once, keeps the ranks of the pod \
        that answered and sends every request's KV destination there. A request that the router's connection \
        took to another prefill pod never gets its destination: that prefill waits in bootstrapping until \
        `SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT` and aborts, and its decode fails too. With n pods behind the \
        address, about n - 1 of every n requests fail, slowly. (The same timeouts also come from a network that \
        blocks the transfer's ports, or from prefills that are far too busy.)",
    sglang_errors: &[
        "Some requests timed out when bootstrapping, which means prefill instances fail to receive the KV indices \
         from the decode instance of this request.",
        "Request {bootstrap_room} timed out after {elapsed}s in KVPoll.Bootstrapping",
    ],
    fix: "List each prefill pod in the router at an address of its own: a StatefulSet pod's name \
        (`http://<name>-<i>.<service>:<port>`) or a LeaderWorkerSet leader's (`http://<name>-<group>.<name>:<port>`), \
        or let the router find the pods (`--service-discovery` with a `--prefill-selector`). `pdlaunch render \
        --format kubernetes` writes one entry per prefill instance, or lets the router discover them \
        (`kubernetes.service_discovery`).",
    check: Check::Commands(check),
};

/// The linter reports these while linking the router to its servers.
fn check(_: &Context) -> Vec<Finding> {
    Vec::new()
}
