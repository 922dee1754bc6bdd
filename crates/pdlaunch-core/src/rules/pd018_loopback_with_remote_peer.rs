//! PD018: a server bound to, or a router entry pointing at, a loopback address that a peer on
//! another host (or at another address) must reach.

use super::{Check, Context, Finding, RouterEntry, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::{host_port, Origin};

/// The prefill's bootstrap server listens on `--host` (default `127.0.0.1`), and the decode
/// connects to the host of the router's prefill URL.
///
/// A server bound to loopback accepts no connection addressed to the machine's real address, even
/// from the same machine; and a loopback prefill URL makes every decode look for the bootstrap
/// server on its own machine.
pub static RULE: Rule = Rule {
    code: "PD018",
    name: "loopback-with-remote-peer",
    severity: Severity::Error,
    summary: "a loopback address is used where a peer reaches the server from another host or address",
    explanation: "SGLang's `--host` defaults to 127.0.0.1. A prefill bound there runs its bootstrap server on \
        loopback only, so decodes on other machines (and the router, when its URL names the real address) get \
        \"Connection refused\". Likewise the router passes the host of its `--prefill` URL to the decode as \
        `bootstrap_host`: a `127.0.0.1` URL sends a decode on another machine to itself. Requests fail after \
        the decode's 15 fetch attempts.",
    sglang_errors: &[
        "Error fetching prefill server info from bootstrap: {e}",
        "Could not fetch prefill parallel info from {bootstrap_addr} after {count} attempts",
    ],
    fix: "Bind servers to their node address or `0.0.0.0` (leave `prefill.bind_host` unset, or set it to \
        `0.0.0.0`), and give every node its real address in `instances[i].nodes[j].host`.",
    check: Check::Deployment(check),
};

fn is_loopback(h: &str) -> bool {
    let h = h.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h == "::1" || h.starts_with("127.")
}

/// Loopback names all mean "this machine".
fn same_host(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b) || (is_loopback(a) && is_loopback(b))
}

/// The router entries that name server `s` (its host and HTTP port; the port alone when the
/// server's host is unknown, as for a lone command line).
fn entries_of<'a>(ctx: &'a Context, s: &ServerView) -> Vec<&'a RouterEntry> {
    let Some(router) = &ctx.router else { return Vec::new() };
    let list = if s.role == Some(Role::Prefill) { &router.prefills } else { &router.decodes };
    list.iter()
        .filter(|e| (s.host.is_empty() || same_host(&e.host, &s.host)) && s.port() == Some(e.server_port()))
        .collect()
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    // Servers bound to loopback although something connects to them from elsewhere.
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some() && is_loopback(&s.bind_host())) {
        let mut reasons: Vec<String> = entries_of(ctx, s)
            .iter()
            .filter(|e| !is_loopback(&e.host))
            .map(|e| format!("the router reaches it at {}", host_port(&e.host, e.port)))
            .collect();
        if s.role == Some(Role::Prefill) && !s.host.is_empty() {
            reasons.extend(
                ctx.heads(Role::Decode)
                    .filter(|d| !d.host.is_empty() && !same_host(&d.host, &s.host))
                    .map(|d| format!("{} on {} fetches its bootstrap info from {}", d.label, d.host, s.host)),
            );
        }
        if reasons.is_empty() {
            continue;
        }
        let on = if s.host.is_empty() { String::new() } else { format!(" (on {})", s.host) };
        let message = format!("{}{on} binds to {} (--host), but {}", s.label, s.bind_host(), reasons.join(", and "));
        let role = s.role.map_or("prefill", |r| r.as_str());
        let fix = match s.origin("host").map(ToString::to_string) {
            Some(o) if o.ends_with(".bind_host") => {
                format!("set `{o}` to `0.0.0.0`, or remove it so that each node binds its own `host`")
            }
            Some(o) if o.contains("extra_args") => format!("remove the `--host` override at `{o}`"),
            Some(o) => format!("set `{o}` to the address peers use to reach this node, or `{role}.bind_host: 0.0.0.0`"),
            None => format!("pass `--host 0.0.0.0` or the node's address to {}", s.label),
        };
        out.push(Finding::new(&RULE, message, fix).at(s, "host"));
    }
    // Loopback prefill URLs: the router hands that host to every decode as the bootstrap host.
    if let Some(router) = &ctx.router {
        for e in router.prefills.iter().filter(|e| is_loopback(&e.host)) {
            let Some(p) =
                ctx.heads(Role::Prefill).find(|p| same_host(&e.host, &p.host) && p.port() == Some(e.server_port()))
            else {
                continue;
            };
            let remote: Vec<String> = ctx
                .heads(Role::Decode)
                .filter(|d| !d.host.is_empty() && !same_host(&d.host, &p.host))
                .map(|d| format!("{} runs on {}", d.label, d.host))
                .collect();
            if remote.is_empty() {
                continue;
            }
            let message = format!(
                "the router's prefill URL for {} uses {}, which it passes to decodes as the bootstrap host, but {}",
                p.label,
                e.host,
                remote.join(", ")
            );
            let fix = match &e.origin {
                Origin::Field { path } => format!(
                    "give `{path}.nodes[0].host` the prefill node's real address (the router URL and the decodes' \
                     bootstrap host are rendered from it)"
                ),
                o => format!("write the prefill node's real address in the router's `--prefill` URL (at `{o}`)"),
            };
            out.push(Finding::new(&RULE, message, fix).at_origin("router", Some("--prefill"), e.origin.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn node_addresses_and_all_loopback_pass() {
        assert!(!codes(&llama()).contains(&"PD018"));
        assert!(!codes(&deepseek()).contains(&"PD018"));
        // Everything on one machine, addressed as 127.0.0.1: loopback is fine.
        let mut d = llama();
        d.prefill.instances[0].nodes[0].host = "127.0.0.1".into();
        d.decode.instances[0].nodes[0].host = "127.0.0.1".into();
        assert!(findings(&d, "PD018").is_empty(), "{:?}", findings(&d, "PD018"));
        // Binding all interfaces is fine with a remote decode.
        let mut d = llama();
        d.decode.instances[0].nodes[0].host = "10.0.0.12".into();
        d.prefill.bind_host = Some("0.0.0.0".into());
        assert!(findings(&d, "PD018").is_empty());
    }

    #[test]
    fn loopback_bind_with_remote_decode_is_caught() {
        let mut d = llama();
        d.decode.instances[0].nodes[0].host = "10.0.0.12".into();
        d.prefill.bind_host = Some("127.0.0.1".into());
        let f = findings(&d, "PD018");
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(m.starts_with("prefill[0] (on 10.0.0.11) binds to 127.0.0.1 (--host)"), "{m}");
        assert!(m.contains("decode[0] on 10.0.0.12 fetches its bootstrap info from 10.0.0.11"), "{m}");
        assert!(m.contains("the router reaches it at 10.0.0.11:30000"), "{m}");
        assert!(f[0].fix.contains("`prefill.bind_host` to `0.0.0.0`"), "{}", f[0].fix);
    }

    #[test]
    fn loopback_bind_behind_a_real_router_url_is_caught_on_one_machine() {
        // Same machine, but the router (and the decode's bootstrap fetch) use 10.0.0.11, which a
        // socket bound to 127.0.0.1 does not accept.
        let mut d = llama();
        d.decode.bind_host = Some("localhost".into());
        let f = findings(&d, "PD018");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.starts_with("decode[0] (on 10.0.0.11) binds to localhost"), "{}", f[0].message);
    }

    #[test]
    fn loopback_prefill_url_with_remote_decode_is_caught() {
        let mut d = llama();
        d.prefill.instances[0].nodes[0].host = "127.0.0.1".into();
        d.decode.instances[0].nodes[0].host = "10.0.0.12".into();
        let f = findings(&d, "PD018");
        assert!(
            f.iter().any(|f| f.message.contains("prefill URL for prefill[0] uses 127.0.0.1")
                && f.message.contains("decode[0] runs on 10.0.0.12")
                && f.fix.contains("prefill.instances[0].nodes[0].host")),
            "{f:?}"
        );
    }
}
