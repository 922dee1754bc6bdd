//! PD017: the router, the prefill and the decode disagree on a prefill's bootstrap port.

use super::{Check, Context, Finding, Material, RouterEntry, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::{host_port, Origin};

/// The decode reaches a prefill's bootstrap server at the host of the router's `--prefill` URL and
/// the port given after it, or, when the router gives none, at the decode's own
/// `--disaggregation-bootstrap-port`.
///
/// The prefill binds its bootstrap server on its own `--disaggregation-bootstrap-port`, so all three
/// must agree. Nothing checks this at startup; the decode fails to fetch the prefill's info on every
/// request and aborts them.
pub static RULE: Rule = Rule {
    code: "PD017",
    name: "bootstrap-port-link",
    severity: Severity::Error,
    summary: "a router prefill entry does not lead to the prefill's bootstrap server",
    explanation: "The router injects `bootstrap_host` (the host of its `--prefill` URL) and `bootstrap_port` (the \
        port written after the URL, or null) into every request. The decode connects there to fetch the \
        prefill's parallel layout, using its own `--disaggregation-bootstrap-port` when the port is null. If \
        that is not where the prefill's bootstrap server listens, or the URL names no prefill server at all, \
        every request fails with connection errors and is aborted after 15 attempts.",
    sglang_errors: &[
        "Error fetching prefill server info from bootstrap: {e}",
        "Could not fetch prefill parallel info from {bootstrap_addr} after {count} attempts",
    ],
    fix: "Set each prefill's bootstrap port only in `prefill.instances[i].bootstrap_port`: pdlaunch renders the \
        prefill flag, the router entry and the decode fallback from it. Remove `--disaggregation-bootstrap-port`, \
        `--port` and `--host` overrides from `extra_args`.",
    check: Check::DeploymentAndMaterial(check, check_services),
};

/// True when a server on `server_host` is the one a router URL host names. Loopback names all
/// mean "this machine"; a server whose host is unknown (a lone command line) matches on the port.
fn names(server_host: &str, url_host: &str) -> bool {
    let lo = |h: &str| h.eq_ignore_ascii_case("localhost") || h == "::1" || h.starts_with("127.");
    server_host.is_empty() || server_host.eq_ignore_ascii_case(url_host) || (lo(server_host) && lo(url_host))
}

/// The router's entry: `--prefill http://host:port [bootstrap]` as the router has it, or the pod
/// its service discovery finds, with the pod's bootstrap annotation.
fn entry_text(e: &RouterEntry) -> String {
    if e.discovered {
        let annotation = match e.bootstrap_port {
            Some(b) => format!("annotation `{ANNOTATION}: {b}`"),
            None => format!("no `{ANNOTATION}` annotation"),
        };
        return format!("the router's discovered prefill `{}` ({annotation})", e.host);
    }
    format!("router entry `{}`", e.prefill_flag())
}

/// The pod annotation a discovering router reads a prefill's bootstrap port from.
const ANNOTATION: &str = "sglang.ai/bootstrap-port";

/// The router flag an entry comes from.
fn entry_flag(e: &RouterEntry) -> &'static str {
    if e.discovered {
        "--prefill-selector"
    } else {
        "--prefill"
    }
}

/// Where the prefill's bootstrap port was set, and what to change.
fn prefill_fix(p: &ServerView, want: u16) -> String {
    let field = format!("prefill.instances[{}].bootstrap_port", p.instance);
    match p.origin("disaggregation_bootstrap_port").map(ToString::to_string) {
        Some(o) if o.contains("extra_args") => format!(
            "remove `--disaggregation-bootstrap-port` at `{o}` and set `{field}: {want}` instead, so that the \
             router entry and the decode are rendered from the same value"
        ),
        Some(o) if o != field => format!("make the router entry and `{o}` give the same port"),
        _ => format!("set `{field}` and let pdlaunch render the router entry and the decode from it"),
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(router) = &ctx.router else { return out };
    for e in &router.prefills {
        let entry = entry_text(e);
        let Some(p) = ctx.heads(Role::Prefill).find(|p| names(&p.host, &e.host) && p.port() == Some(e.server_port()))
        else {
            // A discovered pod that listens elsewhere is PD049's.
            if e.discovered {
                continue;
            }
            let listening: Vec<String> = ctx
                .heads(Role::Prefill)
                .map(|p| format!("{} on {}", p.label, host_port(&p.host, p.port().unwrap_or_default())))
                .collect();
            let message = format!(
                "{entry} matches no prefill server (prefill servers listen: {})",
                if listening.is_empty() { "none".to_owned() } else { listening.join(", ") }
            );
            let fix = "point the router entry at a prefill's node-0 host and `--port`: remove `--port`/`--host` \
                overrides from `prefill.extra_args` (pdlaunch renders the router from `prefill.instances[i]`)";
            out.push(Finding::new(&RULE, message, fix).at_origin("router", Some(entry_flag(e)), e.origin.clone()));
            continue;
        };
        let Some(bound) = p.bootstrap_port() else { continue };
        match e.bootstrap_port {
            Some(given) if given != bound => {
                let message = format!(
                    "{entry} sends decodes to bootstrap port {given}, but {} binds its bootstrap \
                     server on {bound}",
                    p.label
                );
                let fix = match e.discovered {
                    true => format!("annotate the prefill pod template `{ANNOTATION}: \"{bound}\"`, the port it binds"),
                    false => prefill_fix(p, bound),
                };
                out.push(
                    Finding::new(&RULE, message, fix)
                        .at_origin("router", Some(entry_flag(e)), e.origin.clone())
                        .at(p, "disaggregation_bootstrap_port"),
                );
            }
            Some(_) => {}
            // No port after the URL: each decode substitutes its own --disaggregation-bootstrap-port.
            None => {
                for d in ctx.heads(Role::Decode) {
                    let fallback = d.bootstrap_port();
                    if fallback == Some(bound) {
                        continue;
                    }
                    let message = format!(
                        "{entry} gives no bootstrap port, so {} uses its own \
                         --disaggregation-bootstrap-port {}, but {} binds its bootstrap server on {bound}",
                        d.label,
                        fallback.map_or_else(|| "(unset)".to_owned(), |v| v.to_string()),
                        p.label
                    );
                    let fix = match e.discovered {
                        true => format!(
                            "annotate the prefill pod template `{ANNOTATION}: \"{bound}\"`, or give the decode \
                             `--disaggregation-bootstrap-port {bound}`"
                        ),
                        false => format!(
                            "write the port after the router's prefill URL (`{} {bound}`), or give the decode \
                             `--disaggregation-bootstrap-port {bound}`",
                            e.prefill_flag()
                        ),
                    };
                    out.push(
                        Finding::new(&RULE, message, fix)
                            .at_origin("router", Some(entry_flag(e)), e.origin.clone())
                            .at(d, "disaggregation_bootstrap_port")
                            .at(p, "disaggregation_bootstrap_port"),
                    );
                }
            }
        }
    }
    out
}

/// In linted material, the router's prefill entries that name a Service, which stands between
/// the decodes and the prefill's bootstrap server: a finding where it exposes no port for the
/// bootstrap port the decodes get, or forwards it to another pod port than the prefill binds; and
/// where it forwards that port to the one the prefill binds, the views' finding (which knows no
/// Services and compares the two ports) is withdrawn, since the Service links them.
fn check_services(m: &Material, found: &mut Vec<Finding>) {
    let Some(r) = m.router else { return };
    let mut out = Vec::new();
    let mut translated: Vec<&Origin> = Vec::new();
    let decode_fallback = m.servers.iter().find(|s| s.role() == Some(Role::Decode)).and_then(|s| s.view.bootstrap_port());
    for e in r.view.prefills.iter().filter(|e| !e.discovered) {
        let Some(service) = m.services.iter().find(|s| !s.headless && s.named_by(&e.host)) else { continue };
        // Where the decodes connect: the port after the URL, else their own bootstrap port.
        let Some(port) = e.bootstrap_port.or(decode_fallback) else { continue };
        let prefill = m.prefills_at(e).next();
        let bound = prefill.and_then(|p| p.view.bootstrap_port());
        let pods = m.servers.iter().filter_map(|s| s.meta);
        let problem = match (service.pod_port(port, pods), bound) {
            (None, _) => format!("Service `{}` exposes no port {port}", service.name),
            (Some(Some(target)), Some(bound)) if target == bound && port != bound => {
                translated.push(&e.origin);
                continue;
            }
            // A port forwarded as is to another than the prefill binds is the views' finding.
            (Some(Some(target)), Some(bound)) if target != bound && port == bound => format!(
                "Service `{}` forwards port {port} to pod port {target}, and {} binds its bootstrap server on {bound}",
                service.name,
                prefill.map_or("", |p| p.view.label.as_str())
            ),
            _ => continue,
        };
        let message = format!(
            "router entry `{}` sends decodes to {} for the prefill's bootstrap information, but {problem}: they cannot \
             fetch it, so every request fails",
            e.prefill_flag(),
            host_port(&e.host, port)
        );
        let fix = format!(
            "give Service `{}` the port `{{name: bootstrap, port: {port}, targetPort: {}}}`",
            service.name,
            bound.unwrap_or(port)
        );
        out.push(
            Finding::new(&RULE, message, fix)
                .at_origin("router", Some("--prefill"), e.origin.clone())
                .at_origin(format!("Service {}", service.name), Some("ports"), m.origin_at(service.file, service.at)),
        );
    }
    found.retain(|f| !(f.code == RULE.code && f.locations.first().is_some_and(|l| translated.contains(&&l.origin))));
    found.extend(out);
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Context;

    #[test]
    fn rendered_links_pass() {
        assert!(!codes(&llama()).contains(&"PD017"));
        assert!(!codes(&deepseek()).contains(&"PD017"));
        assert!(!codes(&crate::examples::example("qwen3-2p1d-nixl").unwrap()).contains(&"PD017"));
    }

    #[test]
    fn prefill_bootstrap_override_is_caught() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--disaggregation-bootstrap-port".into(), "9000".into()];
        let f = findings(&d, "PD017");
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(m.contains("`--prefill http://10.0.0.11:30000 8998` sends decodes to bootstrap port 8998"), "{m}");
        assert!(m.contains("prefill[0] binds its bootstrap server on 9000"), "{m}");
        assert!(f[0].fix.contains("prefill.extra_args[0]") && f[0].fix.contains("prefill.instances[0].bootstrap_port"));
    }

    #[test]
    fn omitted_router_port_falls_back_to_the_decode_flag() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--disaggregation-bootstrap-port".into(), "9000".into()];
        let plan = crate::plan::plan(&d);
        let mut ctx = Context::from_deployment(&d, &plan);
        let router = ctx.router.as_mut().unwrap();
        router.prefills[0].bootstrap_port = None;
        let f = super::check(&ctx);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("decode[0] uses its own --disaggregation-bootstrap-port 8998"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("prefill[0] binds its bootstrap server on 9000"), "{}", f[0].message);
        // Without the override the decode's fallback is the prefill's port.
        let d = llama();
        let plan = crate::plan::plan(&d);
        let mut ctx = Context::from_deployment(&d, &plan);
        ctx.router.as_mut().unwrap().prefills[0].bootstrap_port = None;
        assert!(super::check(&ctx).is_empty());
    }

    #[test]
    fn entry_without_a_prefill_is_caught() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--port".into(), "31000".into()];
        let f = findings(&d, "PD017");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("matches no prefill server"), "{}", f[0].message);
        assert!(f[0].message.contains("prefill[0] on 10.0.0.11:31000"), "{}", f[0].message);
    }
}
