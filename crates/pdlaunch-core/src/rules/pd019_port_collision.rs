//! PD019: two processes on one host listen on the same port.

use super::{split_url, Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;
use crate::plan::{Origin, DIST_INIT_PORT_BLOCK};

/// Every port a process binds, per host: HTTP, prefill bootstrap, explicit NCCL init, the
/// `--dist-init-addr` block, and the router's own port.
///
/// Only node rank 0 of an instance runs the HTTP server and (on prefill) the bootstrap server;
/// the decode binds no bootstrap port. The `--dist-init-addr` block lives on the rendezvous host
/// and is counted once per instance, from its node-0 process.
pub static RULE: Rule = Rule {
    code: "PD019",
    name: "port-collision",
    severity: Severity::Error,
    summary: "two processes on one host listen on the same port",
    explanation: "Every SGLang server binds its HTTP `--port`; a prefill also binds its KV bootstrap server on \
        `--disaggregation-bootstrap-port`; a multi-node instance takes the `--dist-init-addr` port and the six \
        above it on its rank-0 host (torch rendezvous, then SGLang's ZMQ ports); an explicit `--nccl-port` is \
        bound for the NCCL/torch init of a single-node server. When two of these land on the same port of one \
        machine, the second process to start dies with \"address already in use\", often only after loading \
        weights, or its rendezvous joins the wrong instance. The router's own port counts too when it runs on \
        one of the servers' machines.",
    sglang_errors: &[
        "[Errno 98] error while attempting to bind on address {address}: address already in use",
        "The server socket has failed to listen on any local network address. port: {port}, useIpv6: {ipv6}, code: -98, name: EADDRINUSE, message: address already in use",
    ],
    fix: "Give each process on a host its own ports: set distinct `port`, `bootstrap_port`, `dist_init_port` \
        (blocks of 7) and `nccl_port` on the instances that share a machine, and keep the router's `port` off them.",
    check: Check::Deployment(check),
};

/// Hosts that do not name one machine: the router bound there may run anywhere.
const WILDCARD_HOSTS: &[&str] = &["0.0.0.0", "::", "[::]", "127.0.0.1", "localhost", "::1", "[::1]"];

/// Where a port use is configured.
#[derive(Clone)]
enum Place<'a> {
    /// A server flag, located with [`Finding::at`].
    Server(&'a ServerView, &'static str),
    /// The router's `--port`.
    Router(Origin),
}

/// What a port is bound for; its text is written only when a finding needs it.
#[derive(Clone, Copy, PartialEq)]
enum Purpose {
    Http(u16),
    Bootstrap(u16),
    Rendezvous(u16, u16),
    Nccl(u16),
    Router(u16),
}

impl std::fmt::Display for Purpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Purpose::Http(p) => write!(f, "its HTTP server (--port {p})"),
            Purpose::Bootstrap(p) => write!(f, "its KV bootstrap server (--disaggregation-bootstrap-port {p})"),
            Purpose::Rendezvous(lo, hi) => write!(f, "its --dist-init-addr rendezvous (ports {lo}-{hi})"),
            Purpose::Nccl(p) => write!(f, "its NCCL init (--nccl-port {p})"),
            Purpose::Router(p) => write!(f, "its listener (--port {p})"),
        }
    }
}

/// One port range bound by one process for one purpose.
#[derive(Clone)]
struct PortUse<'a> {
    /// The machine, as a comparison key.
    host: String,
    /// The process whose machine is unknown (bound on a wildcard address), else `None`.
    unplaced: Option<&'a str>,
    lo: u16,
    hi: u16,
    who: &'a str,
    what: Purpose,
    place: Place<'a>,
}

impl PortUse<'_> {
    /// The machine, for messages (`host 10.0.0.1`).
    fn machine(&self) -> String {
        match self.unplaced {
            Some(label) => format!("the machine of {label}"),
            None => format!("host {}", self.host),
        }
    }
    fn overlaps(&self, other: &PortUse) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }
    fn origin(&self) -> Origin {
        match &self.place {
            Place::Server(s, dest) => s.origin(dest).cloned().unwrap_or(Origin::Derived),
            Place::Router(o) => o.clone(),
        }
    }
    fn locate(&self, f: Finding) -> Finding {
        match &self.place {
            Place::Server(s, dest) => f.at(s, dest),
            Place::Router(o) => f.at_origin("router", Some("--port"), o.clone()),
        }
    }
}

/// The machine key, and the process when the machine is unknown. A wildcard bind address (lint
/// input without node addresses) does not say which machine a process is on: it only collides
/// with itself.
fn machine<'a>(host: &str, label: &'a str) -> (String, Option<&'a str>) {
    let h = host.to_ascii_lowercase();
    if h.is_empty() || matches!(h.as_str(), "0.0.0.0" | "::" | "[::]") {
        (format!("\u{0}{label}"), Some(label))
    } else {
        (h, None)
    }
}

fn server_uses(s: &ServerView) -> Vec<PortUse<'_>> {
    let mut out = Vec::new();
    if s.int("node_rank").unwrap_or(0) != 0 {
        // Only node 0 runs the HTTP and bootstrap servers and owns the rendezvous block.
        return out;
    }
    let host = s.machine();
    let mut push = |host: &str, lo: u16, hi: u16, what: Purpose, dest: &'static str| {
        let (host, unplaced) = machine(host, &s.label);
        out.push(PortUse { host, unplaced, lo, hi, who: &s.label, what, place: Place::Server(s, dest) });
    };
    if let Some(p) = s.port() {
        push(host, p, p, Purpose::Http(p), "port");
    }
    if s.role == Some(crate::deployment::Role::Prefill) {
        if let Some(p) = s.bootstrap_port() {
            push(host, p, p, Purpose::Bootstrap(p), "disaggregation_bootstrap_port");
        }
    }
    let dist = s.explicit("dist_init_addr");
    if let Some((dist_host, p)) = dist.as_deref().and_then(split_url) {
        let hi = p.saturating_add(DIST_INIT_PORT_BLOCK - 1);
        push(&dist_host, p, hi, Purpose::Rendezvous(p, hi), "dist_init_addr");
    } else if let Some(p) = s.parsed.get("nccl_port").and_then(|_| s.int("nccl_port")) {
        if let Ok(p) = u16::try_from(p) {
            push(host, p, p, Purpose::Nccl(p), "nccl_port");
        }
    }
    out
}

fn range(lo: u16, hi: u16) -> String {
    if lo == hi {
        format!("port {lo}")
    } else {
        format!("ports {lo}-{hi}")
    }
}

/// The first port at or above `start` where a range as wide as `u` is free on its host.
fn free_port(uses: &[PortUse], u: &PortUse, start: u16) -> Option<u16> {
    let width = u.hi - u.lo;
    let mut p = start;
    loop {
        let end = p.checked_add(width)?;
        let blocker = uses.iter().filter(|o| o.host == u.host && o.lo <= end && p <= o.hi).map(|o| o.hi).max();
        match blocker {
            None => return Some(p),
            Some(hi) => p = hi.checked_add(1)?,
        }
    }
}

fn check<'a>(ctx: &'a Context) -> Vec<Finding> {
    let mut uses: Vec<PortUse<'a>> = ctx.servers.iter().flat_map(server_uses).collect();
    let mut out = Vec::new();

    if let Some(r) = &ctx.router {
        let origin = r
            .parsed
            .last_use("port")
            .and_then(|u| r.origins.get(u.index).cloned())
            .unwrap_or_else(|| Origin::Field { path: "router.port".into() });
        let host = r.host.to_ascii_lowercase();
        let router_use = |u: &PortUse<'a>| PortUse {
            host: u.host.clone(),
            unplaced: u.unplaced,
            lo: r.port,
            hi: r.port,
            who: "router",
            what: Purpose::Router(r.port),
            place: Place::Router(origin.clone()),
        };
        if WILDCARD_HOSTS.contains(&host.as_str()) {
            // The deployment does not say where the router runs; warn for each host it would clash on.
            let mut seen: Vec<String> = Vec::new();
            for u in uses.iter().filter(|u| u.lo <= r.port && r.port <= u.hi) {
                if seen.contains(&u.host) {
                    continue;
                }
                seen.push(u.host.clone());
                let message = format!(
                    "the router listens on {}:{} and {} uses {} on {} for {}: if the router runs on that \
                     machine, one of them cannot bind",
                    r.host,
                    r.port,
                    u.who,
                    range(u.lo, u.hi),
                    u.machine(),
                    u.what
                );
                let suggestion = free_port(&uses, &router_use(u), r.port).unwrap_or(8000);
                let fix = format!(
                    "run the router on another machine, or set `router.port` to a free port (e.g. {suggestion})"
                );
                let f = Finding::new(&RULE, message, fix).severity(Severity::Warning);
                out.push(u.locate(router_use(u).locate(f)));
            }
        } else if let Some(u) = uses.iter().find(|u| u.host == host) {
            let router = router_use(u);
            uses.push(router);
        }
    }

    // Each use against the first earlier one on its ports: n processes on one port make n - 1
    // findings, each moving one of them, not n(n - 1)/2.
    for (j, b) in uses.iter().enumerate() {
        let first =
            uses[..j].iter().find(|a| a.host == b.host && a.overlaps(b) && !(a.who == b.who && a.what == b.what));
        if let Some(a) = first {
            let (lo, hi) = (a.lo.max(b.lo), a.hi.min(b.hi));
            let message = format!(
                "{} on {}: {} uses it for {} and {} uses it for {}",
                range(lo, hi),
                a.machine(),
                a.who,
                a.what,
                b.who,
                b.what
            );
            let target = match b.origin() {
                Origin::Derived => a,
                _ => b,
            };
            let free = free_port(&uses, target, target.hi.saturating_add(1));
            let fix = match (target.origin(), free) {
                (Origin::Derived, _) => format!("give {} and {} different ports", a.who, b.who),
                (o, Some(p)) => format!("change `{o}` so that {} gets a free port (e.g. {p})", target.who),
                (o, None) => format!("change `{o}` so that {} gets a free port", target.who),
            };
            out.push(b.locate(a.locate(Finding::new(&RULE, message, fix))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn examples_have_no_collision() {
        assert!(!codes(&llama()).contains(&"PD019"));
        assert!(!codes(&deepseek()).contains(&"PD019"));
    }

    #[test]
    fn lint_input_on_wildcard_hosts_only_collides_with_itself() {
        use crate::rules::{run, Context};
        let server = |label: &str, args: &str| crate::rules::testing::server(label, "0.0.0.0", args, None);
        let args = "--disaggregation-mode prefill --host 0.0.0.0 --port 30000";
        let ctx = Context {
            servers: vec![
                server("a.sh:1", args),
                server("b.sh:1", args),
                server("c.sh:1", "--disaggregation-mode prefill --port 8998"),
            ],
            router: None,
            model: Default::default(),
            release: crate::release::Release::LATEST,
            deployment: None,
            dropped: Vec::new(),
        };
        let f: Vec<_> = run(&ctx).into_iter().filter(|f| f.code == "PD019").collect();
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("port 8998 on the machine of c.sh:1"), "{}", f[0].message);
    }

    #[test]
    fn colocated_http_ports_collide() {
        let mut d = llama();
        d.prefill.instances[0].port = Some(30001);
        let f = findings(&d, "PD019");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        let m = &f[0].message;
        assert!(m.contains("port 30001") && m.contains("prefill[0]") && m.contains("decode[0]"), "{m}");
        assert!(m.contains("10.0.0.11"), "{m}");
        assert!(f[0].fix.contains("decode.instances[0].port") && f[0].fix.contains("30002"), "{}", f[0].fix);
    }

    #[test]
    fn bootstrap_port_equal_to_http_port_of_the_decode() {
        let mut d = llama();
        d.prefill.instances[0].bootstrap_port = Some(30001);
        let f = findings(&d, "PD019");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("KV bootstrap server") && f[0].message.contains("HTTP server"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn dist_init_blocks_of_two_instances_on_one_host_overlap() {
        let mut d = deepseek();
        // A second decode instance whose rank-0 node is the prefill's rank-0 machine.
        let mut inst = d.decode.instances[0].clone();
        inst.nodes[0].host = "10.0.1.1".into();
        inst.nodes[1].host = "10.0.1.2".into();
        inst.dist_init_port = Some(5003);
        inst.port = Some(30011);
        d.decode.instances = vec![inst];
        let f = findings(&d, "PD019");
        let hit = f.iter().find(|f| f.message.contains("ports 5003-5006")).expect("block overlap reported");
        assert!(
            hit.message.contains("prefill[0] node 0") && hit.message.contains("decode[0] node 0"),
            "{}",
            hit.message
        );
        // Counted once per instance: node 1 does not add a second report.
        assert_eq!(f.iter().filter(|f| f.message.contains("5003")).count(), 1, "{f:?}");
    }

    #[test]
    fn router_on_a_server_host_collides_and_wildcard_router_warns() {
        let mut d = llama();
        d.router.host = "10.0.0.11".into();
        d.router.port = 30000;
        let f = findings(&d, "PD019");
        assert!(f.iter().any(|f| f.severity == Severity::Error && f.message.contains("router")), "{f:?}");
        assert!(f[0].fix.contains("router.port") || f.iter().any(|f| f.fix.contains("router.port")), "{f:?}");

        let mut d = llama();
        d.router.port = 30000;
        let f = findings(&d, "PD019");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("0.0.0.0:30000"), "{}", f[0].message);
    }
}
