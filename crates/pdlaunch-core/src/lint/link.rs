//! Linking routers to servers: the router's `--prefill`/`--decode` entries read from its argv,
//! the pods its service discovery registers (and what its selectors miss), the pod ports that the
//! Services its entries name forward to, and the addresses at which servers are reached.

use super::group::{origins_of, Pre};
use super::launch::{Launch, Service};
use super::{base_name, RouterEntryInfo};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::Origin;
use crate::read::source::SourceFile;
use crate::release::RouterRelease;
use crate::rules::material::{DiscoveryMiss, MissedServer};
use crate::rules::{self, RouterEntry, RouterView};
use crate::spec::{parse_argv, ArgValue};

/// The router a launch starts, its `--prefill`/`--decode` entries read from its argv.
pub(super) fn router_info(k: usize, l: &Launch, files: &[SourceFile], release: RouterRelease) -> RouterEntryInfo {
    let tokens: Vec<String> = l.args.iter().map(|w| w.text.clone()).collect();
    let origins = origins_of(files, &l.args);
    let parsed = parse_argv(release.spec(), &tokens);
    let mut prefills = Vec::new();
    let mut decodes = Vec::new();
    let mut prefill_tokens = Vec::new();
    let mut decode_tokens = Vec::new();
    for u in &parsed.uses {
        let ArgValue::Many(groups) = &u.value else { continue };
        let Some(last) = groups.last() else { continue };
        let mut parts = last.split('\t');
        let url = parts.next().unwrap_or("");
        let (host, port) = rules::split_url(url).unwrap_or_default();
        let origin = origins.get(u.index).cloned().unwrap_or(Origin::Derived);
        match u.dest {
            "prefill" => {
                let bootstrap = parts.next().and_then(|p| p.parse::<u16>().ok());
                prefills.push(RouterEntry {
                    host,
                    port,
                    bootstrap_port: bootstrap,
                    origin,
                    discovered: false,
                    forwarded: None,
                });
                prefill_tokens.push(u.index);
            }
            "decode" => {
                decodes.push(RouterEntry {
                    host,
                    port,
                    bootstrap_port: None,
                    origin,
                    discovered: false,
                    forwarded: None,
                });
                decode_tokens.push(u.index);
            }
            _ => {}
        }
    }
    let value = |dest: &str| {
        parsed.get(dest).map(ArgValue::as_text).or_else(|| release.spec().default_text(dest).map(str::to_owned))
    };
    let view = RouterView {
        host: value("host").unwrap_or_else(|| "0.0.0.0".into()),
        port: value("port").and_then(|p| p.parse().ok()).unwrap_or(30000),
        prefills,
        decodes,
        tokens,
        parsed,
        origins,
        release,
    };
    RouterEntryInfo {
        launch: k,
        view,
        words: l.args.clone(),
        prefill_tokens,
        decode_tokens,
        discovered: None,
        misses: Vec::new(),
    }
}

/// The servers a router with `--service-discovery` registers: each server pod its prefill or
/// decode selector matches (in its namespace, when it names one) is an entry at the discovery
/// port, a prefill's with the bootstrap port its pod's annotation gives, and is linked to the
/// router. A selector that matches no pod, and a server that listens on another port, are
/// misses (PD049).
pub(super) fn discover(info: &mut RouterEntryInfo, servers: &[Pre], launches: &[Launch], files: &[SourceFile]) {
    let view = &mut info.view;
    if !matches!(view.parsed.get("service_discovery"), Some(ArgValue::Switch(true))) {
        return;
    }
    let value = |dest: &str| {
        view.parsed
            .get(dest)
            .map(ArgValue::as_text)
            .or_else(|| view.release.spec().default_text(dest).map(str::to_owned))
    };
    let port: u16 = value("service_discovery_port").and_then(|p| p.parse().ok()).unwrap_or(80);
    // A namespace the pod's environment gives (`$(POD_NAMESPACE)`) is not known here.
    let namespace = value("service_discovery_namespace").filter(|n| !n.contains('$'));
    let mut linked = [Vec::new(), Vec::new()];
    let mut found = [Vec::new(), Vec::new()];
    for (role, dest) in [(Role::Prefill, "prefill_selector"), (Role::Decode, "decode_selector")] {
        let Some(u) = view.parsed.last_use(dest) else { continue };
        let selector: Vec<String> = match &u.value {
            ArgValue::Many(v) => v.clone(),
            other => vec![other.as_text()],
        };
        let origin = view.origins.get(u.index).cloned().unwrap_or(Origin::Derived);
        let miss = |server| DiscoveryMiss {
            role,
            selector: selector.join(" "),
            origin: origin.clone(),
            port,
            namespace: namespace.clone(),
            server,
        };
        let (mut matched, mut labelled) = (false, false);
        for pre in servers {
            let l = &launches[pre.launch];
            let Some(meta) = l.meta.as_deref().filter(|m| m.pod) else { continue };
            labelled = true;
            let elsewhere = namespace.as_deref().is_some_and(|n| meta.namespace.as_deref().is_some_and(|m| m != n));
            if elsewhere || !meta.matches(&selector) || l.scope.is_some() {
                continue;
            }
            let f = &files[l.file];
            let host = l
                .machine
                .clone()
                .unwrap_or_else(|| format!("pod of {role} ({}:{})", base_name(&f.name), f.position(l.at).0));
            let bootstrap = meta.annotation(crate::render::BOOTSTRAP_ANNOTATION).and_then(|b| b.trim().parse().ok());
            let bootstrap_port = bootstrap.filter(|_| role == Role::Prefill);
            found[role as usize].push(RouterEntry {
                host,
                port,
                bootstrap_port,
                origin: origin.clone(),
                discovered: true,
                forwarded: None,
            });
            matched = true;
            linked[role as usize].push(pre.launch);
            if pre.view.port() != Some(port) {
                let written_at = format!("{}:{}", base_name(&f.name), f.position(l.at).0);
                let listens = pre.view.port();
                info.misses.push(miss(Some(MissedServer { launch: pre.launch, written_at, listens })));
            }
        }
        // Pods an operator makes get labels the material does not show.
        if !matched && labelled {
            info.misses.push(miss(None));
        }
    }
    let [prefills, decodes] = found;
    view.prefills.extend(prefills);
    view.decodes.extend(decodes);
    info.discovered = Some(linked);
}

/// Each entry of a router that names a Service of the material reaches the Service's pods at
/// the port it forwards the entry's port to.
pub(super) fn forward(info: &mut RouterEntryInfo, servers: &[Pre], launches: &[Launch], services: &[Service]) {
    let pods = || servers.iter().filter_map(|pre| launches[pre.launch].meta.as_deref());
    for e in info.view.prefills.iter_mut().chain(&mut info.view.decodes).filter(|e| !e.discovered) {
        let target = services.iter().find(|s| s.named_by(&e.host)).and_then(|s| s.pod_port(e.port, pods()));
        e.forwarded = target.flatten().filter(|t| *t != e.port);
    }
}

/// How a router names a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Link {
    /// By a prefill entry.
    Prefill,
    /// By a decode entry.
    Decode,
    /// By entries of both kinds (pods of both sides on one port).
    Both,
}

impl Link {
    /// The role the link gives the server, when it gives one.
    pub fn role(self) -> Option<Role> {
        match self {
            Link::Prefill => Some(Role::Prefill),
            Link::Decode => Some(Role::Decode),
            Link::Both => None,
        }
    }
}

/// How router `r` names server `s`: by an entry of its port (and host, when the server names
/// one), or as a pod it discovered. A recipe's launches link only among themselves.
pub(super) fn link(r: &RouterEntryInfo, s: &Pre, launches: &[Launch]) -> Option<Link> {
    if launches[r.launch].scope != launches[s.launch].scope {
        return None;
    }
    let of = |prefill: bool, decode: bool| match (prefill, decode) {
        (true, false) => Some(Link::Prefill),
        (false, true) => Some(Link::Decode),
        (true, true) => Some(Link::Both),
        (false, false) => None,
    };
    if let Some([prefills, decodes]) = &r.discovered {
        return of(prefills.contains(&s.launch), decodes.contains(&s.launch));
    }
    let port = s.view.port()?;
    let host = s.view.explicit("host").filter(|h| !is_wildcard(h));
    let hit = |e: &RouterEntry| {
        e.server_port() == port && host.as_deref().is_none_or(|h| h == e.host || loopback(h) && loopback(&e.host))
    };
    of(r.view.prefills.iter().any(hit), r.view.decodes.iter().any(hit))
}

/// The address of a server in a pod with a name of its own (`<pod>.<service>`, a
/// LeaderWorkerSet's), which binds all addresses: the router's spelling of the pod's name (the
/// namespace and `svc.cluster.local` may follow it), else the router entry the port names when it
/// names the pod's Service, else the pod's name. Replicas share a port, so an entry of the port
/// that names another pod is not this one's.
pub(super) fn pod_host(v: &ServerView, pod: &str, guess: Option<String>, r: Option<&RouterView>) -> String {
    let names =
        |host: &str, name: &str| host.strip_prefix(name).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
    let service = pod.split_once('.').map_or(pod, |(_, s)| s);
    let mut entries = r.into_iter().flat_map(|r| r.prefills.iter().chain(&r.decodes));
    if let Some(e) = entries.find(|e| Some(e.server_port()) == v.port() && names(&e.host, pod)) {
        return e.host.clone();
    }
    match guess {
        Some(guess) if names(&guess, service) => guess,
        _ => pod.to_owned(),
    }
}

fn loopback(h: &str) -> bool {
    h.eq_ignore_ascii_case("localhost") || h == "::1" || h.starts_with("127.")
}

/// The address peers use for a server: its concrete `--host`, else the host of the router entry
/// that names its port, else unknown.
pub(super) fn server_host(v: &ServerView, role: Option<Role>, r: &RouterView) -> String {
    if let Some(h) = v.explicit("host").filter(|h| !is_wildcard(h)) {
        return h;
    }
    let Some(port) = v.port() else { return String::new() };
    if v.node != 0 {
        return String::new();
    }
    let hits: Vec<&RouterEntry> = r.prefills.iter().chain(&r.decodes).filter(|e| e.server_port() == port).collect();
    if let [one] = hits.as_slice() {
        return one.host.clone();
    }
    // Pods of both sides on one port: the entries of the server's own role decide.
    let own: &[RouterEntry] = match role {
        Some(Role::Prefill) => &r.prefills,
        Some(Role::Decode) => &r.decodes,
        None => &[],
    };
    match own.iter().filter(|e| e.server_port() == port).collect::<Vec<_>>().as_slice() {
        [one] => one.host.clone(),
        _ => String::new(),
    }
}

/// True for a host that binds every address of its machine.
pub(super) fn is_wildcard(h: &str) -> bool {
    matches!(h, "0.0.0.0" | "::" | "[::]" | "")
}
