//! PD049: a router that finds its servers by their pods' labels misses them.

use super::{Check, Context, Finding, Rule, Severity};

/// Reported by the linter, which reads the pods' labels, annotations and namespaces.
pub static RULE: Rule = Rule {
    code: "PD049",
    name: "service-discovery-misses",
    severity: Severity::Error,
    summary: "a router with `--service-discovery` selects no server of a side, or reaches a server at a port it \
        does not listen on",
    explanation: "With `--service-discovery`, the router registers each ready pod that carries every label of \
        `--prefill-selector` (or `--decode-selector`), in `--service-discovery-namespace` when one is given, at \
        `http://<pod IP>:<--service-discovery-port>`: one port for the pods of both sides. A selector that no \
        server pod's labels match leaves that side without servers, so every request fails; a server that \
        listens on another port is registered where nothing answers, and fails the router's health checks. \
        (With a fixed list of servers the same router error means that the servers listed are not up yet, or \
        fail its health checks.)",
    sglang_errors: &[
        "No prefill workers available. Please check if prefill servers are configured and healthy.",
        "No decode workers available. Please check if decode servers are configured and healthy.",
    ],
    fix: "Give the server pod templates the selectors' labels (in the router's namespace), and make every \
        server's `--port` the router's `--service-discovery-port`; `pdlaunch render --format kubernetes` with \
        `kubernetes.service_discovery` writes all three consistently.",
    check: Check::Commands(check),
};

/// The linter reports these while linking the router to its servers.
fn check(_: &Context) -> Vec<Finding> {
    Vec::new()
}
