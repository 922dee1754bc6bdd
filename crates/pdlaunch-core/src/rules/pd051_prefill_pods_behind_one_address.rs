//! PD051: a router's prefill entry reaches several prefill pods through one address.

use super::material::{Material, WrittenServer};
use super::{Check, Finding, RouterEntry, Rule, Severity};

/// Found in linted material, whose manifests give the objects' `replicas` and the pods of each
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
    check: Check::Material(check),
};

/// The router's prefill entries that reach several prefill pods through one address: the
/// replicas of one Deployment or StatefulSet behind a Service, or the leaders of the groups of one
/// LeaderWorkerSet behind its Service. An entry that names a pod (a StatefulSet's `<name>-<i>`) or
/// an IP address reaches one.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let Some(r) = m.router else { return };
    let report = |e: &RouterEntry, pods: u32, what: String, servers: &[&WrittenServer]| {
        let message = format!(
            "router entry `{}` reaches {pods} prefill pods through one address ({what}): the decode fetches the \
             bootstrap information there once and keeps the pod that answered, so the requests the router sends \
             to the other pods wait for KV destinations that never come, and time out",
            e.prefill_flag()
        );
        let fix = "list each prefill pod at an address of its own (a StatefulSet pod's or a LeaderWorkerSet \
                   leader's name), or let the router discover them (`--service-discovery` with a \
                   `--prefill-selector`)";
        let f = Finding::new(&RULE, message, fix).at_origin("router", Some("--prefill"), e.origin.clone());
        servers.iter().fold(f, |f, s| f.at(s.view, "port"))
    };
    for e in r.view.prefills.iter().filter(|e| !e.discovered && !crate::plan::is_ip_literal(&e.host)) {
        let behind: Vec<&WrittenServer> = m.prefills_at(e).filter(|s| s.isolated).collect();
        // One server that stands for the replicas of its object, one instance per `--nnodes` pods.
        for &s in behind.iter().filter(|s| s.view.pod.is_none()) {
            let Some(meta) = s.meta else { continue };
            let pods = meta.replicas.unwrap_or(1) / s.view.size("nnodes").max(1);
            let names_a_pod = meta.owner.as_deref().is_some_and(|owner| {
                let first = e.host.split('.').next().unwrap_or_default();
                first
                    .strip_prefix(owner)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
            });
            if pods >= 2 && !names_a_pod {
                found.push(report(e, pods, format!("the {pods} replicas of {}", s.view.label), &[s]));
            }
        }
        // The leaders of several groups, each in its own pod, that the entry's Service reaches.
        let leaders: Vec<&WrittenServer> = behind.into_iter().filter(|s| s.view.pod.is_some()).collect();
        if leaders.len() >= 2 {
            let labels: Vec<&str> = leaders.iter().map(|s| s.view.label.as_str()).collect();
            let what = format!("the leaders of {}", labels.join(", "));
            found.push(report(e, leaders.len() as u32, what, &leaders));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::linted;

    /// A prefill Deployment of `replicas` pods, a decode, and a router whose prefill entry is
    /// `http://{prefill}:30000`.
    fn manifests(replicas: u32, prefill: &str) -> String {
        let server = |name: &str, replicas: u32| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  \
                 template:\n    spec:\n      containers:\n      - name: {name}\n        command: [python3, -m, \
                 sglang.launch_server, --model-path, m, --disaggregation-mode, {name}, --host, 0.0.0.0, --port, \
                 '30000']\n---\n"
            )
        };
        server("prefill", replicas)
            + &server("decode", 1)
            + &format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: router}}\nspec:\n  template:\n    spec:\n      \
                 containers:\n      - name: router\n        command: [python3, -m, sglang_router.launch_router, \
                 --pd-disaggregation, --prefill, 'http://{prefill}:30000', --decode, 'http://decode:30000']\n"
            )
    }

    #[test]
    fn replicas_behind_one_address_break_and_one_replica_passes() {
        let found = linted(&[("k.yaml", &manifests(2, "prefill"))], "PD051");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("reaches 2 prefill pods through one address (the 2 replicas of"), "{}", found[0]);
        assert!(linted(&[("k.yaml", &manifests(1, "prefill"))], "PD051").is_empty());
        assert!(linted(&[("k.yaml", &manifests(2, "10.1.2.3"))], "PD051").is_empty());
    }
}
