//! PD049: a router that finds its servers by their pods' labels misses them.

use super::material::{DiscoveryMiss, Material};
use super::{Check, Finding, Rule, Severity};

/// Found in linted material, whose manifests give the pods' labels, annotations and namespaces.
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
    check: Check::Material(check),
};

/// What the selectors of a router with `--service-discovery` miss, as the linter recorded it
/// while linking the router to the pods they match.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let Some(r) = m.router else { return };
    found.extend(r.misses.iter().map(|miss| finding(m, miss)));
}

fn finding(m: &Material, miss: &DiscoveryMiss) -> Finding {
    let flag = format!("--{}-selector", miss.role);
    let within = miss.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
    let at_router = |f: Finding| f.at_origin("router", Some(&flag), miss.origin.clone());
    let Some(missed) = &miss.server else {
        let message = format!(
            "the router's `{flag} {}` matches no {} server pod{within}: the router has no {} server, so every request \
             fails",
            miss.selector, miss.role, miss.role
        );
        let fix = format!(
            "give the {} pod template the labels `{}`{within}, or select the labels it has",
            miss.role, miss.selector
        );
        return at_router(Finding::new(&RULE, message, fix));
    };
    let port = miss.port;
    let server = m.servers.iter().find(|s| s.launch == missed.launch);
    let label =
        server.map_or_else(|| format!("the {} at {}", miss.role, missed.written_at), |s| s.view.label.clone());
    let message = format!(
        "the router reaches {label}, which its `{flag}` selects, at `--service-discovery-port {port}`, but it listens on \
         {}: the router's requests and health checks reach nothing there",
        missed.listens.map_or_else(|| "no known port".to_owned(), |p| p.to_string())
    );
    let fix = format!(
        "give every server `--port {port}`, or the router the servers' port: it reaches the pods of both sides at one \
         port"
    );
    let f = at_router(Finding::new(&RULE, message, fix));
    match server {
        Some(s) => f.at(s.view, "port"),
        None => f,
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::linted;

    /// A prefill and a decode Deployment, labelled by their role, and a router that discovers
    /// them with `--prefill-selector component={selector}` at port 8000.
    fn manifests(selector: &str, decode_port: u16) -> String {
        let worker = |role: &str, port: u16| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {role}}}\nspec:\n  template:\n    metadata:\n      \
                 labels: {{component: {role}}}\n    spec:\n      containers:\n      - name: {role}\n        command: [python3, \
                 -m, sglang.launch_server, --model-path, m, --disaggregation-mode, {role}, --port, '{port}']\n---\n"
            )
        };
        worker("prefill", 8000)
            + &worker("decode", decode_port)
            + &format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: router}}\nspec:\n  template:\n    spec:\n      \
                 containers:\n      - name: router\n        command: [python3, -m, sglang_router.launch_router, \
                 --pd-disaggregation, --service-discovery, --prefill-selector, component={selector}, \
                 --decode-selector, component=decode, --service-discovery-port, '8000']\n"
            )
    }

    #[test]
    fn a_selector_that_matches_no_pod_breaks_and_one_that_matches_passes() {
        let found = linted(&[("k.yaml", &manifests("prefil", 8000))], "PD049");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`--prefill-selector component=prefil` matches no prefill server pod"), "{}", found[0]);
        assert!(linted(&[("k.yaml", &manifests("prefill", 8000))], "PD049").is_empty());
    }

    #[test]
    fn a_pod_on_another_port_than_the_router_reaches_breaks() {
        let found = linted(&[("k.yaml", &manifests("prefill", 8001))], "PD049");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`--service-discovery-port 8000`, but it listens on 8001"), "{}", found[0]);
    }
}
