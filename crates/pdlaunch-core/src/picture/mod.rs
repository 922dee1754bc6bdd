//! A picture of a deployment: which processes run on which hosts, with their GPUs and ports, who
//! talks to whom, and the findings on the boxes and links they concern. One graph model
//! ([`Graph`]), built from a deployment ([`of_deployment`]: its plan and the rules' findings) or
//! from a linted group ([`of_lint_group`]: the servers the linter read and its findings), and two
//! writers: [`svg`] (hand-laid-out SVG for the app, docs and reviews) and [`mermaid`] (a Mermaid
//! flowchart for Markdown).
//!
//! # What is drawn
//!
//! - **Boxes.** The router, and one box per server process, grouped into one frame per instance
//!   with one row per node: host, GPUs (`GPU 0-3`), HTTP port and, on a prefill, its bootstrap port.
//! - **Links.** Router → each instance's node 0 (its HTTP entry); for every prefill and decode pair
//!   one link holding the KV transfer (solid, prefill → decode, labelled with the transfer backend
//!   and the IB devices of both ends) and the bootstrap query (dashed, decode → the prefill's
//!   bootstrap server): the router pairs any prefill with any decode.
//! - **Findings.** Each finding goes where it points: a finding of a rule about the pairing
//!   ([`PAIR_CODES`]) that names a prefill and a decode marks the link of each named pair (PD001's
//!   page-size mismatch); one that names the router and servers marks the router's links to them; a port collision (PD019) or a GPU
//!   topology problem (PD020) marks the boxes of the processes involved and their port or GPU range;
//!   any other marks the boxes it names. A marked box or link gets the colour of its worst
//!   severity (red for an error), a badge with the codes, and `data-findings="PD001 PD020"`. What
//!   names no box or link (a model-wide note) sits in the header.
//!
//! # Layout (SVG)
//!
//! Three columns, left to right: the router (and, below it, servers whose role is unknown), the
//! prefill instances, the decode instances. The router's links to the decodes run along lanes
//! above the boxes and enter the decodes from the right, so they do not cross the KV links between
//! the prefill and decode columns. A legend closes the picture. Coordinates are integers and every
//! list is in the order of the deployment, so equal inputs draw byte-identical pictures.
//!
//! Up to [`MAX_INSTANCES`] instances per side and [`MAX_NODES`] nodes per instance are drawn (8P8D of
//! 4 nodes each stays readable, about 1200 × 1800 px); a larger fleet collapses the rest into one
//! box per side ("+ 12 more prefill instances") or one row per instance ("+ 4 more nodes"), which
//! carries the findings of what it hides.
//!
//! Every value from the deployment or the linted text is escaped (XML entities in SVG, Mermaid's
//! `#NNN;` codes in Mermaid); element ids are made of roles and numbers only. Long values are
//! shortened on the picture and kept whole in each box's `<title>`, which a browser shows on hover.
//!
//! The picture formats are [`render::Format::Svg`] and [`render::Format::Mermaid`]; [`render`] here
//! renders every format (the picture needs the rules' findings, which sit above the renderer).

mod mermaid;
mod svg;

pub use mermaid::mermaid;
pub use svg::svg;

use crate::deployment::{Deployment, Role};
use crate::effective::ServerView;
use crate::lint::Linted;
use crate::render::{Format, RenderError, RenderedFile};
use crate::rules::{Context, Finding, RouterView, Severity};

/// Instances of one side drawn before the rest collapse into a count.
pub const MAX_INSTANCES: usize = 8;
/// Nodes of one instance drawn before the rest collapse into a count.
pub const MAX_NODES: usize = 4;

/// The graph both writers draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The deployment's (or linted group's) name.
    pub title: String,
    /// The release and model, one line.
    pub subtitle: String,
    /// The router, when there is one.
    pub router: Option<RouterBox>,
    /// Drawn instances: prefill first, then decode, then those of unknown role.
    pub instances: Vec<InstanceBox>,
    /// Instances collapsed into a count, one entry per side that has any.
    pub more: Vec<More>,
    /// Links between boxes.
    pub links: Vec<Link>,
    /// Every finding, in the rules' order; boxes and links hold indexes into it.
    pub findings: Vec<Mark>,
    /// Findings that name no box or link, shown in the header.
    pub unplaced: Vec<usize>,
}

/// A finding as the picture shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// Rule code, `PD001`...
    pub code: &'static str,
    /// Severity: the colour.
    pub severity: Severity,
    /// The finding's message, for the hover text.
    pub message: String,
}

/// The router box.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterBox {
    /// Listen address, `host:port`.
    pub listen: String,
    /// Router entries that reach no server of the picture, as written (`--decode http://h:1`).
    pub unmatched: Vec<String>,
    /// Findings on the box.
    pub findings: Vec<usize>,
}

/// One instance: a frame around its nodes' processes.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceBox {
    /// Element id, e.g. `prefill-0` (roles and numbers only).
    pub id: String,
    /// Prefill, decode, or unknown.
    pub role: Option<Role>,
    /// Heading, e.g. `prefill[0] · TP16 · 2 nodes`.
    pub label: String,
    /// Drawn processes, node rank order.
    pub processes: Vec<ProcessBox>,
    /// Nodes not drawn (beyond [`MAX_NODES`]).
    pub more_nodes: usize,
    /// Findings on processes that are not drawn.
    pub findings: Vec<usize>,
    /// The transfer backend its node 0 uses.
    pub backend: Option<String>,
    /// The IB devices of its nodes, each once, in node order.
    pub ib_devices: Vec<String>,
    /// Host and port of its bootstrap server (a prefill's node 0).
    pub bootstrap: Option<String>,
}

/// One server process: a row of its instance.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessBox {
    /// Element id, e.g. `prefill-0-node-1`.
    pub id: String,
    /// The label findings use (`decode[0]`, `run.sh:4`).
    pub label: String,
    /// Node rank and count.
    pub node: (usize, usize),
    /// Host (empty when unknown).
    pub host: String,
    /// GPUs on the host, as (first, count).
    pub gpus: Option<(u32, u32)>,
    /// HTTP port (node 0 runs the HTTP server).
    pub port: Option<u16>,
    /// Bootstrap port (a prefill's node 0 binds it).
    pub bootstrap_port: Option<u16>,
    /// `--dist-init-addr`, multi-node instances.
    pub dist_init: Option<String>,
    /// `--disaggregation-ib-device`.
    pub ib_device: Option<String>,
    /// Findings on the box.
    pub findings: Vec<usize>,
    /// True when a finding concerns its GPU range (PD020).
    pub gpus_flagged: bool,
    /// True when a finding concerns its ports (PD019).
    pub ports_flagged: bool,
}

impl ProcessBox {
    /// `GPU 0-3`, `GPU 5`, or `GPU ?` when unknown.
    pub fn gpu_text(&self) -> String {
        match self.gpus {
            Some((first, 1)) => format!("GPU {first}"),
            Some((first, n)) => format!("GPU {first}-{}", u64::from(first) + u64::from(n.max(1)) - 1),
            None => "GPU ?".to_owned(),
        }
    }
    /// `:30000 · bootstrap 8998`, `rank 1 of 2`, or empty.
    pub fn port_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.port {
            parts.push(format!(":{p}"));
        }
        if let Some(b) = self.bootstrap_port {
            parts.push(format!("bootstrap {b}"));
        }
        if self.node.0 > 0 {
            parts.push(format!("rank {} of {}", self.node.0, self.node.1));
        }
        parts.join(" · ")
    }
}

/// Instances collapsed into a count.
#[derive(Clone, Debug, PartialEq)]
pub struct More {
    /// Element id, e.g. `more-prefill`.
    pub id: String,
    /// Their side.
    pub role: Option<Role>,
    /// How many instances.
    pub instances: usize,
    /// How many processes they have.
    pub processes: usize,
    /// Findings on them.
    pub findings: Vec<usize>,
}

impl More {
    /// `+ 12 more prefill instances`.
    pub fn heading(&self) -> String {
        let side = self.role.map_or("", Role::as_str);
        let sep = if side.is_empty() { "" } else { " " };
        let s = if self.instances == 1 { "" } else { "s" };
        format!("+ {} more{sep}{side} instance{s}", self.instances)
    }
    /// `+ 12 more prefill instances (48 processes)`.
    pub fn text(&self) -> String {
        format!("{} ({} processes)", self.heading(), self.processes)
    }
}

/// An end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The router.
    Router,
    /// A drawn instance (its node 0), by index into [`Graph::instances`].
    Instance(usize),
    /// Collapsed instances, by index into [`Graph::more`].
    More(usize),
}

/// What a link carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// The router sends requests to a server.
    Http,
    /// The KV cache goes from a prefill to a decode; the decode first asks the prefill's bootstrap
    /// server where to fetch it.
    Kv,
}

/// A link between two boxes.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Element id, e.g. `kv-prefill-0-decode-1`.
    pub id: String,
    /// What it carries.
    pub kind: LinkKind,
    /// Where it starts (the router, or the prefill of a KV link).
    pub from: End,
    /// Where it ends (the server, or the decode of a KV link).
    pub to: End,
    /// Short text drawn on it.
    pub label: String,
    /// Whole text for the hover.
    pub detail: String,
    /// Findings on it.
    pub findings: Vec<usize>,
}

/// Renders a deployment in any format: the picture formats here, the others by
/// [`crate::render::render`]. One file each: `deployment.svg`, `deployment.mmd`.
pub fn render(d: &Deployment, format: Format) -> Result<Vec<RenderedFile>, RenderError> {
    let (name, contents) = match format {
        Format::Svg => ("deployment.svg", svg(&of_deployment(d))),
        Format::Mermaid => ("deployment.mmd", mermaid(&of_deployment(d))),
        _ => return crate::render::render(d, format),
    };
    Ok(vec![RenderedFile { name: name.to_owned(), contents, executable: false }])
}

/// The picture of a deployment: its plan's processes and router, and the rules' findings.
pub fn of_deployment(d: &Deployment) -> Graph {
    let plan = crate::plan::plan(d);
    let ctx = Context::from_deployment(d, &plan);
    let findings = crate::rules::run(&ctx);
    let source = Source {
        title: d.name.clone(),
        subtitle: format!(
            "SGLang {} · router {} · {}",
            d.sglang_version,
            d.router_version,
            if d.model.path.is_empty() { "model not set" } else { &d.model.path }
        ),
        servers: ctx.servers.iter().map(|v| (v.role, v)).collect(),
        router: ctx.router.as_ref(),
        findings: findings.iter().collect(),
    };
    build(source)
}

/// The picture of group `group` of what the linter read: its servers and router as read, and the
/// linter's findings of that group. `None` when there is no such group.
pub fn of_lint_group(linted: &Linted, group: usize) -> Option<Graph> {
    let g = linted.groups.get(group)?;
    let model = g.servers.iter().find_map(|s| s.view.explicit("model_path"));
    let version = g.version.clone().unwrap_or_else(|| g.release.to_string());
    let source = Source {
        title: g.name.clone(),
        subtitle: format!(
            "SGLang {version} · router {} · {} (as read)",
            g.router_release,
            model.as_deref().unwrap_or("model not named")
        ),
        servers: g.servers.iter().map(|s| (s.role(), &s.view)).collect(),
        router: g.router.as_ref().map(|r| &r.view),
        findings: linted.findings.iter().filter(|f| f.group == group).map(|f| &f.finding).collect(),
    };
    Some(build(source))
}

/// What a graph is built from, whichever way the servers were found.
struct Source<'a> {
    title: String,
    subtitle: String,
    /// Each server with its role (a linted server's may come from the material around it).
    servers: Vec<(Option<Role>, &'a ServerView)>,
    router: Option<&'a RouterView>,
    findings: Vec<&'a Finding>,
}

/// Where a server or an instance ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A drawn instance, and the drawn process (`None`: a node beyond [`MAX_NODES`]).
    Drawn(usize, Option<usize>),
    /// A collapsed instance, by index into [`Graph::more`].
    Collapsed(usize),
}

impl Target {
    fn instance(self) -> Target {
        match self {
            Target::Drawn(i, _) => Target::Drawn(i, None),
            c => c,
        }
    }
}

/// The three columns' sides, in drawing order.
const SIDES: [Option<Role>; 3] = [Some(Role::Prefill), Some(Role::Decode), None];

fn side_name(role: Option<Role>) -> &'static str {
    role.map_or("server", Role::as_str)
}

/// True when a server at `server_host` is the one a router entry's `url_host` names (an unknown
/// host matches any; loopback names match each other).
fn names(server_host: &str, url_host: &str) -> bool {
    let lo = |h: &str| h.eq_ignore_ascii_case("localhost") || h == "::1" || h.starts_with("127.");
    server_host.is_empty() || server_host.eq_ignore_ascii_case(url_host) || (lo(server_host) && lo(url_host))
}

fn push_once(v: &mut Vec<usize>, i: usize) {
    if !v.contains(&i) {
        v.push(i);
    }
}

fn build(src: Source) -> Graph {
    // Instances per side, in first-seen order; their servers in node order.
    let mut groups: Vec<(Option<Role>, usize, Vec<&ServerView>)> = Vec::new();
    for side in SIDES {
        for &(role, v) in src.servers.iter().filter(|(r, _)| *r == side) {
            match groups.iter_mut().find(|(r, i, _)| *r == role && *i == v.instance) {
                Some((_, _, servers)) => {
                    let at = servers.iter().position(|s| s.node > v.node).unwrap_or(servers.len());
                    servers.insert(at, v);
                }
                None => groups.push((role, v.instance, vec![v])),
            }
        }
    }

    let mut graph = Graph {
        title: src.title,
        subtitle: src.subtitle,
        router: None,
        instances: Vec::new(),
        more: Vec::new(),
        links: Vec::new(),
        findings: src
            .findings
            .iter()
            .map(|f| Mark { code: f.code, severity: f.severity, message: f.message.clone() })
            .collect(),
        unplaced: Vec::new(),
    };
    // Where each server label and each (role, instance) went.
    let mut by_label: Vec<(&str, Target)> = Vec::new();
    let mut by_instance: Vec<(Option<Role>, usize, Target)> = Vec::new();
    let mut heads: Vec<(Option<Role>, Target, &ServerView)> = Vec::new();
    for side in SIDES {
        let of_side: Vec<&(Option<Role>, usize, Vec<&ServerView>)> =
            groups.iter().filter(|(r, _, _)| *r == side).collect();
        for (k, (role, instance, servers)) in of_side.iter().enumerate() {
            let target = if k < MAX_INSTANCES {
                graph.instances.push(instance_box(*role, k, servers));
                Target::Drawn(graph.instances.len() - 1, None)
            } else {
                if graph.more.last().is_none_or(|m| m.role != side) {
                    graph.more.push(More {
                        id: format!("more-{}", side_name(side)),
                        role: side,
                        instances: 0,
                        processes: 0,
                        findings: Vec::new(),
                    });
                }
                let m = graph.more.last_mut().expect("pushed above");
                m.instances += 1;
                m.processes += servers.len();
                Target::Collapsed(graph.more.len() - 1)
            };
            by_instance.push((*role, *instance, target));
            heads.push((*role, target, servers[0]));
            for (n, s) in servers.iter().enumerate() {
                let t = match target {
                    Target::Drawn(i, _) => Target::Drawn(i, (n < MAX_NODES).then_some(n)),
                    c => c,
                };
                by_label.push((s.label.as_str(), t));
            }
        }
    }

    // The router and its links to the instances its entries name.
    if let Some(r) = src.router {
        let mut router =
            RouterBox { listen: crate::plan::host_port(&r.host, r.port), unmatched: Vec::new(), findings: Vec::new() };
        for (role, entries) in [(Role::Prefill, &r.prefills), (Role::Decode, &r.decodes)] {
            for e in entries.iter() {
                let url = crate::plan::host_port(&e.host, e.port);
                let head = heads.iter().find(|(hr, _, v)| {
                    *hr == Some(role) && v.port() == Some(e.server_port()) && names(&v.host, &e.host)
                });
                let Some(&(_, target, _)) = head else {
                    let flag = if role == Role::Prefill { e.prefill_flag() } else { format!("--decode http://{url}") };
                    router.unmatched.push(flag);
                    continue;
                };
                let to = end_of(target);
                if graph.links.iter().any(|l| l.kind == LinkKind::Http && l.to == to) {
                    continue;
                }
                let boot = e.bootstrap_port.map(|b| format!(" · bootstrap {b}")).unwrap_or_default();
                let id = format!("http-{}", end_id(&graph, to));
                let name = end_name(&graph, to);
                graph.links.push(Link {
                    id,
                    kind: LinkKind::Http,
                    from: End::Router,
                    to,
                    label: format!("{url}{boot}"),
                    detail: format!("router → {name}: requests to http://{url}{boot}"),
                    findings: Vec::new(),
                });
            }
        }
        graph.router = Some(router);
    }

    // Every drawn prefill with every drawn decode: the router pairs any two.
    let sides: Vec<(usize, &InstanceBox)> = graph.instances.iter().enumerate().collect();
    let mut kv = Vec::new();
    for &(p, pb) in sides.iter().filter(|(_, b)| b.role == Some(Role::Prefill)) {
        for &(d, db) in sides.iter().filter(|(_, b)| b.role == Some(Role::Decode)) {
            kv.push(kv_link(p, pb, d, db));
        }
    }
    graph.links.extend(kv);

    // Each finding on what it concerns.
    for (fi, f) in src.findings.iter().enumerate() {
        place_finding(&mut graph, fi, f, &by_label, &by_instance);
    }
    graph
}

fn end_of(t: Target) -> End {
    match t {
        Target::Drawn(i, _) => End::Instance(i),
        Target::Collapsed(m) => End::More(m),
    }
}

/// The id of an end, for link ids.
fn end_id(g: &Graph, e: End) -> String {
    match e {
        End::Router => "router".to_owned(),
        End::Instance(i) => g.instances[i].id.clone(),
        End::More(m) => g.more[m].id.clone(),
    }
}

/// The name of an end, for hover texts.
fn end_name(g: &Graph, e: End) -> String {
    match e {
        End::Router => "router".to_owned(),
        End::Instance(i) => g.instances[i].label.split(" · ").next().unwrap_or_default().to_owned(),
        End::More(m) => g.more[m].text(),
    }
}

fn instance_box(role: Option<Role>, k: usize, servers: &[&ServerView]) -> InstanceBox {
    let side = side_name(role);
    let id = format!("{side}-{k}");
    let head = servers[0];
    let nnodes = servers.len().max(head.size("nnodes") as usize);
    let mut label = format!("{side}[{k}] · TP{}", head.size("tp_size"));
    if head.attn_dp() > 1 {
        label.push_str(&format!(" · attn DP {}", head.attn_dp()));
    }
    if nnodes > 1 {
        label.push_str(&format!(" · {nnodes} nodes"));
    }
    let mut ib_devices: Vec<String> = Vec::new();
    for s in servers {
        if let Some(ib) = s.value("disaggregation_ib_device").filter(|v| !v.is_empty()) {
            if !ib_devices.contains(&ib) {
                ib_devices.push(ib);
            }
        }
    }
    let processes = servers
        .iter()
        .take(MAX_NODES)
        .map(|s| ProcessBox {
            id: format!("{id}-node-{}", s.node),
            label: s.label.clone(),
            node: (s.node, nnodes),
            host: s.host.clone(),
            gpus: s.gpus.or_else(|| Some(gpus_from_args(s))),
            port: if s.node == 0 { s.port() } else { None },
            bootstrap_port: if s.node == 0 && role == Some(Role::Prefill) { s.bootstrap_port() } else { None },
            dist_init: if nnodes > 1 { s.explicit("dist_init_addr") } else { None },
            ib_device: s.value("disaggregation_ib_device").filter(|v| !v.is_empty()),
            findings: Vec::new(),
            gpus_flagged: false,
            ports_flagged: false,
        })
        .collect();
    let bootstrap = (role == Some(Role::Prefill))
        .then(|| head.bootstrap_port().map(|b| crate::plan::host_port(&head.host, b)))
        .flatten();
    InstanceBox {
        id,
        role,
        label,
        processes,
        more_nodes: servers.len().saturating_sub(MAX_NODES),
        findings: Vec::new(),
        backend: head.value("disaggregation_transfer_backend"),
        ib_devices,
        bootstrap,
    }
}

/// The GPUs a server without a known placement takes, as SGLang picks them: from
/// `--base-gpu-id` (0 by default), `tp × pp / nnodes` of them.
fn gpus_from_args(s: &ServerView) -> (u32, u32) {
    let per_node = u64::from(s.size("tp_size")) * u64::from(s.size("pp_size")) / u64::from(s.size("nnodes"));
    let base = s.int("base_gpu_id").and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    (base, u32::try_from(per_node).unwrap_or(u32::MAX).max(1))
}

fn kv_link(p: usize, pb: &InstanceBox, d: usize, db: &InstanceBox) -> Link {
    let backend = match (&pb.backend, &db.backend) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (a, b) => format!("{} / {}", a.as_deref().unwrap_or("?"), b.as_deref().unwrap_or("?")),
    };
    let (pi, di) = (pb.ib_devices.join(" "), db.ib_devices.join(" "));
    let ib = match (pi.is_empty(), di.is_empty()) {
        (true, true) => String::new(),
        _ if pi == di => format!(" · IB {pi}"),
        _ => format!(" · IB {} → {}", or_none(&pi), or_none(&di)),
    };
    let (pn, dn) = (pb.label.split(" · ").next().unwrap_or_default(), db.label.split(" · ").next().unwrap_or_default());
    let boot = match &pb.bootstrap {
        Some(b) => format!("; {dn} asks {pn}'s bootstrap server at {b}"),
        None => String::new(),
    };
    Link {
        id: format!("kv-{}-{}", pb.id, db.id),
        kind: LinkKind::Kv,
        from: End::Instance(p),
        to: End::Instance(d),
        label: format!("{backend}{ib}"),
        detail: format!(
            "KV cache {pn} → {dn} over {backend} (IB devices: prefill {}, decode {}){boot}",
            or_none(&pi),
            or_none(&di)
        ),
        findings: Vec::new(),
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() {
        "none"
    } else {
        s
    }
}

/// Findings about the resources of each process on its host, drawn on the boxes, never on links:
/// a port collision and a GPU topology problem.
const PORT_CODE: &str = "PD019";
const GPU_CODE: &str = "PD020";

/// The rules about how a prefill and a decode work together (their KV layout, transfer, bootstrap,
/// settings that must match): a finding of one that names servers of both sides goes on the links
/// of the pairs it names. Any other rule's findings go on the boxes they name, even when they name
/// both sides (PD038 lists every server whose heads do not divide): a rule added later lands on
/// boxes until it is listed here.
pub const PAIR_CODES: &[&str] = &[
    "PD001", "PD002", "PD003", "PD004", "PD005", "PD006", "PD007", "PD008", "PD009", "PD010", "PD012", "PD017",
    "PD018", "PD022", "PD023", "PD033", "PD036", "PD063", "PD065", "PD066", "PD068", "PD069",
];

fn place_finding(
    g: &mut Graph,
    fi: usize,
    f: &Finding,
    by_label: &[(&str, Target)],
    by_instance: &[(Option<Role>, usize, Target)],
) {
    let mut router = false;
    let mut servers: Vec<Target> = Vec::new();
    for loc in &f.locations {
        if loc.process == "router" {
            router = true;
        } else if let Some(&(_, t)) = by_label.iter().find(|(l, _)| *l == loc.process) {
            if !servers.contains(&t) {
                servers.push(t);
            }
        }
    }
    let role_of = |t: Target| -> Option<Role> {
        by_instance.iter().find(|(_, _, it)| *it == t.instance()).and_then(|(r, _, _)| *r)
    };
    let resource = f.code == PORT_CODE || f.code == GPU_CODE;
    let pair = PAIR_CODES.contains(&f.code);
    let prefills: Vec<Target> =
        unique(servers.iter().filter(|t| role_of(**t) == Some(Role::Prefill)).map(|t| t.instance()));
    let decodes: Vec<Target> =
        unique(servers.iter().filter(|t| role_of(**t) == Some(Role::Decode)).map(|t| t.instance()));
    if pair && !prefills.is_empty() && !decodes.is_empty() {
        for &p in &prefills {
            for &d in &decodes {
                mark_pair(g, fi, p, d);
            }
        }
        // Servers of unknown role it names are drawn apart from the pairs.
        for &t in servers.iter().filter(|t| role_of(**t).is_none()) {
            mark_box(g, fi, t, f.code);
        }
        return;
    }
    if !resource && router && !servers.is_empty() {
        for t in unique(servers.iter().map(|t| t.instance())) {
            let to = end_of(t);
            match g.links.iter_mut().find(|l| l.kind == LinkKind::Http && l.to == to) {
                Some(l) => push_once(&mut l.findings, fi),
                None => mark_box(g, fi, t, f.code),
            }
        }
        return;
    }
    for &t in &servers {
        mark_box(g, fi, t, f.code);
    }
    match (&mut g.router, router) {
        (Some(r), true) => push_once(&mut r.findings, fi),
        _ if servers.is_empty() => g.unplaced.push(fi),
        _ => {}
    }
}

fn unique(it: impl Iterator<Item = Target>) -> Vec<Target> {
    let mut out = Vec::new();
    for t in it {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

fn mark_pair(g: &mut Graph, fi: usize, p: Target, d: Target) {
    let (from, to) = (end_of(p), end_of(d));
    if let Some(l) = g.links.iter_mut().find(|l| l.kind == LinkKind::Kv && l.from == from && l.to == to) {
        push_once(&mut l.findings, fi);
        return;
    }
    // A pair with a collapsed end has no link of its own: the collapsed box carries it.
    for t in [p, d] {
        if let Target::Collapsed(m) = t {
            push_once(&mut g.more[m].findings, fi);
        }
    }
}

fn mark_box(g: &mut Graph, fi: usize, t: Target, code: &str) {
    match t {
        Target::Drawn(i, Some(n)) => {
            let b = &mut g.instances[i].processes[n];
            push_once(&mut b.findings, fi);
            b.gpus_flagged |= code == GPU_CODE;
            b.ports_flagged |= code == PORT_CODE;
        }
        Target::Drawn(i, None) => push_once(&mut g.instances[i].findings, fi),
        Target::Collapsed(m) => push_once(&mut g.more[m].findings, fi),
    }
}

/// The worst severity among `findings` (indexes into `marks`).
fn worst(marks: &[Mark], findings: &[usize]) -> Option<Severity> {
    findings.iter().map(|&i| marks[i].severity).min()
}

/// The codes of `findings`, each once, space-separated: the `data-findings` value and the badge.
fn codes(marks: &[Mark], findings: &[usize]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for &i in findings {
        if !out.contains(&marks[i].code) {
            out.push(marks[i].code);
        }
    }
    out.join(" ")
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests;
