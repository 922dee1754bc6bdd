//! Deployment -> plan: every process (role, instance, node) with its argv and environment, in a
//! stable order. Each argument remembers the deployment field it came from, so findings can point
//! at the field to change. The output formats in [`crate::render`] are views of a plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::deployment::{Deployment, Role, Side};
use crate::fast_hash::FastMap;
use crate::flags::{self, first_available, At, Flag, Written};
use crate::release::{Release, RouterRelease};

/// Where an argument came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A deployment field, as a path (`shared.page_size`, `decode.extra_args[3]`).
    Field { path: String },
    /// A position in a source file. The name is shared by every origin in that file.
    Source {
        #[serde(serialize_with = "serialize_shared_str")]
        file: Arc<str>,
        line: u32,
        column: u32,
    },
    /// Derived from the topology (node rank, node count, mode).
    Derived,
    /// Not on the command line: SGLang's default applies.
    Default,
}

fn serialize_shared_str<S: serde::Serializer>(s: &Arc<str>, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s)
}

impl Origin {
    fn field(path: impl Into<String>) -> Origin {
        Origin::Field { path: path.into() }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Field { path } => f.write_str(path),
            Origin::Source { file, line, column } => write!(f, "{file}:{line}:{column}"),
            Origin::Derived => f.write_str("(derived)"),
            Origin::Default => f.write_str("(not set: SGLang's default)"),
        }
    }
}

/// How widely an argument applies; decides what goes into a role's `--config` YAML.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The same on every process of the role.
    Role,
    /// Specific to one instance or node.
    Process,
    /// Verbatim extra arguments.
    Extra,
}

/// One flag occurrence with its values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arg {
    /// The flag from the table (`None` for extra arguments).
    #[serde(skip)]
    pub flag: Option<&'static Flag>,
    /// Tokens: the flag spelling followed by its values.
    pub tokens: Vec<String>,
    /// Where it came from.
    pub origin: Origin,
    /// How widely it applies.
    pub scope: Scope,
}

/// One SGLang server process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerProcess {
    /// Prefill or decode.
    pub role: Role,
    /// Instance index within the side.
    pub instance: usize,
    /// Node rank within the instance.
    pub node: usize,
    /// Number of nodes of the instance.
    pub nnodes: usize,
    /// Address of the node.
    pub host: String,
    /// GPUs this process uses on its node, as (first index, count).
    pub gpus: (u32, u32),
    /// Arguments after `-m sglang.launch_server`.
    pub args: Vec<Arg>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
}

impl ServerProcess {
    /// The arguments as a flat token list (what argparse sees).
    pub fn arg_tokens(&self) -> Vec<String> {
        self.args.iter().flat_map(|a| a.tokens.iter().cloned()).collect()
    }
    /// The origin of each token of [`Self::arg_tokens`].
    pub fn token_origins(&self) -> Vec<&Origin> {
        self.args.iter().flat_map(|a| a.tokens.iter().map(move |_| &a.origin)).collect()
    }
    /// A short label, e.g. `prefill[0] node 1`.
    pub fn label(&self) -> String {
        if self.nnodes > 1 {
            format!("{}[{}] node {}", self.role, self.instance, self.node)
        } else {
            format!("{}[{}]", self.role, self.instance)
        }
    }
    /// A file-name-safe identifier, e.g. `prefill-0-node-1`.
    pub fn id(&self) -> String {
        format!("{}-{}-node-{}", self.role, self.instance, self.node)
    }
}

/// One prefill entry on the router command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouterPrefill {
    /// `http://host:port`.
    pub url: String,
    /// Bootstrap port passed after the URL (`None` = omitted: the decode then uses its own).
    pub bootstrap_port: Option<u16>,
}

/// The router process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouterProcess {
    /// Listen address.
    pub host: String,
    /// Listen port.
    pub port: u16,
    /// Prefill entries.
    pub prefills: Vec<RouterPrefill>,
    /// Decode URLs.
    pub decodes: Vec<String>,
    /// Arguments after `-m sglang_router.launch_router`.
    pub args: Vec<Arg>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
}

impl RouterProcess {
    /// The arguments as a flat token list.
    pub fn arg_tokens(&self) -> Vec<String> {
        self.args.iter().flat_map(|a| a.tokens.iter().cloned()).collect()
    }
}

/// Everything to launch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Deployment name.
    pub name: String,
    /// Target SGLang release.
    pub release: Release,
    /// Target router release.
    pub router_release: RouterRelease,
    /// The Python interpreter.
    pub python: String,
    /// Where `--config` files live on the nodes.
    pub config_dir: String,
    /// Server processes: prefill instances first, then decode; nodes in rank order.
    pub servers: Vec<ServerProcess>,
    /// The router.
    pub router: RouterProcess,
    /// Set fields that no server renders: the target release has none of their flags. Each
    /// field once, in rendering order.
    #[serde(skip)]
    pub dropped: Vec<Dropped>,
}

/// A set deployment field the renderer left out: the target release has none of the flags that
/// would carry it, so the servers run with SGLang's default instead (PD025 reports it).
#[derive(Clone, Debug, PartialEq)]
pub struct Dropped {
    /// Field path, e.g. `shared.kv_canary`.
    pub path: String,
    /// The value as it would have been written (`true` for a switch).
    pub value: String,
    /// The flags that would have carried it, preferred first.
    pub flags: Vec<&'static Flag>,
    /// Why it is left out when the release does have one of those flags.
    pub reason: Option<String>,
}

/// The module SGLang servers are started with.
pub const SERVER_MODULE: &str = "sglang.launch_server";
/// The module the router is started with.
pub const ROUTER_MODULE: &str = "sglang_router.launch_router";

impl Plan {
    /// Full argv of a server process, interpreter first.
    pub fn server_argv(&self, p: &ServerProcess) -> Vec<String> {
        let mut v = vec![self.python.clone(), "-m".into(), SERVER_MODULE.into()];
        v.extend(p.arg_tokens());
        v
    }
    /// Full argv of the router, interpreter first.
    pub fn router_argv(&self) -> Vec<String> {
        let mut v = vec![self.python.clone(), "-m".into(), ROUTER_MODULE.into()];
        v.extend(self.router.arg_tokens());
        v
    }
    /// The servers of one role.
    pub fn role(&self, role: Role) -> impl Iterator<Item = &ServerProcess> {
        self.servers.iter().filter(move |p| p.role == role)
    }
}

/// Default HTTP port of a side's first instance on a host.
pub fn default_port(role: Role) -> u16 {
    match role {
        Role::Prefill => 30000,
        Role::Decode => 30001,
    }
}
/// Default bootstrap port of the first prefill instance on a host.
pub const DEFAULT_BOOTSTRAP_PORT: u16 = 8998;
/// Default first port of the `--dist-init-addr` block.
pub const DEFAULT_DIST_INIT_PORT: u16 = 5000;
/// Ports SGLang takes from the `--dist-init-addr` port upward.
pub const DIST_INIT_PORT_BLOCK: u16 = 7;

/// Resolved per-instance facts shared by the plan and the rules.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceAddr {
    /// Host of node 0.
    pub host: String,
    /// HTTP port.
    pub port: u16,
    /// Bootstrap port (prefill: bound; decode: fallback value).
    pub bootstrap_port: u16,
    /// First port of the dist-init block (multi-node only).
    pub dist_init_port: Option<u16>,
}

/// Ports of every instance, with defaults that keep colocated instances apart: the k-th instance
/// of a side whose node 0 is on a given host gets port `base + 2k`, bootstrap `8998 + k`, and the
/// k-th multi-node instance on a host gets dist-init port `5000 + 10k`.
pub fn instance_addrs(d: &Deployment) -> FastMap<(Role, usize), InstanceAddr> {
    let mut out = FastMap::default();
    let mut per_host_side: FastMap<(Role, String), u16> = FastMap::default();
    let mut per_host_multi: FastMap<String, u16> = FastMap::default();
    let mut first_prefill_bootstrap = None;
    for role in Role::BOTH {
        for (i, inst) in d.side(role).instances.iter().enumerate() {
            let host = inst.nodes.first().map(|n| n.host.clone()).unwrap_or_default();
            let k = per_host_side.entry((role, host.clone())).or_insert(0);
            let port = inst.port.unwrap_or(default_port(role).saturating_add(2 * *k));
            let own_bootstrap = inst.bootstrap_port.unwrap_or(DEFAULT_BOOTSTRAP_PORT.saturating_add(*k));
            *k += 1;
            let bootstrap_port = match role {
                Role::Prefill => {
                    first_prefill_bootstrap.get_or_insert(own_bootstrap);
                    own_bootstrap
                }
                // The decode binds nothing; its value is the fallback when the router omits a port.
                Role::Decode => first_prefill_bootstrap.unwrap_or(DEFAULT_BOOTSTRAP_PORT),
            };
            let dist_init_port = (inst.nodes.len() > 1).then(|| {
                let m = per_host_multi.entry(host.clone()).or_insert(0);
                let p = inst.dist_init_port.unwrap_or(DEFAULT_DIST_INIT_PORT.saturating_add(10 * *m));
                *m += 1;
                p
            });
            out.insert((role, i), InstanceAddr { host, port, bootstrap_port, dist_init_port });
        }
    }
    out
}

/// Formats `host:port`, bracketing IPv6 literals.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// True for an IP address written as one (`10.0.0.1`, `fe80::1`, `[::1]`): a DNS name has no `:`
/// and is never all digits and dots.
pub fn is_ip_literal(host: &str) -> bool {
    host.contains(':') || (!host.is_empty() && host.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

struct ArgList {
    release: Release,
    args: Vec<Arg>,
    dropped: Vec<Dropped>,
}

impl ArgList {
    fn push(&mut self, flag: &'static Flag, values: Vec<String>, origin: Origin, scope: Scope) {
        let mut tokens = vec![flag.name.to_owned()];
        tokens.extend(values);
        self.args.push(Arg { flag: Some(flag), tokens, origin, scope });
    }
    /// Writes `value` with the first of `candidates` the release accepts, or records it dropped.
    fn write(&mut self, candidates: &[&'static Flag], value: Written, path: String, scope: Scope) {
        match first_available(candidates, self.release) {
            Some(flag) => {
                let values = match value {
                    Written::Switch(_) => vec![],
                    Written::Text(t) => vec![t],
                };
                self.push(flag, values, Origin::field(path), scope)
            }
            None => {
                let value = match value {
                    Written::Switch(_) => "true".to_owned(),
                    Written::Text(t) => t,
                };
                self.dropped.push(Dropped { path, value, flags: candidates.to_vec(), reason: None });
            }
        }
    }
    fn value(&mut self, flag: &'static Flag, value: impl ToString, path: String, scope: Scope) {
        self.write(&[flag], Written::Text(value.to_string()), path, scope);
    }
}

/// Builds the plan of a deployment. Pure and total: impossible combinations still render (the
/// validator reports them), so the user sees what would run.
pub fn plan(d: &Deployment) -> Plan {
    let addrs = instance_addrs(d);
    let mut gpu_cursor: FastMap<String, u32> = FastMap::default();
    let mut servers = Vec::new();
    let mut dropped: Vec<Dropped> = Vec::new();
    for role in Role::BOTH {
        let side = d.side(role);
        for (i, inst) in side.instances.iter().enumerate() {
            let addr = &addrs[&(role, i)];
            let nnodes = inst.nodes.len();
            for (rank, node) in inst.nodes.iter().enumerate() {
                let per_node = side.gpus_per_instance() / (nnodes.max(1) as u32);
                let count = node.gpus.unwrap_or(per_node.max(1));
                let cursor = gpu_cursor.entry(node.host.clone()).or_insert(0);
                let base = node.base_gpu_id.unwrap_or(*cursor);
                *cursor = (*cursor).max(base.saturating_add(count));
                let at = At { role, instance: i, node: rank };
                let (args, left_out) = server_args(d, at, addr, base);
                for f in left_out {
                    if !dropped.iter().any(|x| x.path == f.path) {
                        dropped.push(f);
                    }
                }
                let mut env = d.shared.env.clone();
                env.extend(side.env.iter().map(|(k, v)| (k.clone(), v.clone())));
                servers.push(ServerProcess {
                    role,
                    instance: i,
                    node: rank,
                    nnodes,
                    host: node.host.clone(),
                    gpus: (base, count),
                    args,
                    env,
                });
            }
        }
    }
    let router = router_process(d, &addrs);
    Plan {
        name: d.name.clone(),
        release: d.sglang_version,
        router_release: d.router_version,
        python: d.launcher.python.clone(),
        config_dir: d.launcher.config_dir.clone(),
        servers,
        router,
        dropped,
    }
}

/// The spellings of `flag`'s field for servers of `role`, in table order (the preferred first),
/// when `flag` is the first of them: a field renders once, at its first spelling.
fn spellings_at(flag: &'static Flag, role: Role) -> Option<Vec<&'static Flag>> {
    let same = |f: &&&'static Flag| f.field == flag.field && f.bind.on.has(role);
    let candidates: Vec<&'static Flag> = flags::SERVER_FLAGS.iter().filter(same).copied().collect();
    candidates.first().is_some_and(|f| std::ptr::eq(*f, flag)).then_some(candidates)
}

/// The arguments of one server process: the table's flags in its order, each bound field through
/// its binding; the flags the topology or the release decides (their doc comments say so) by
/// the code here; `extra_args` last.
fn server_args(d: &Deployment, at: At, addr: &InstanceAddr, base_gpu: u32) -> (Vec<Arg>, Vec<Dropped>) {
    use flags::*;
    let role = at.role;
    let side = d.side(role);
    let side_path = role.as_str();
    let mut a = ArgList { release: d.sglang_version, args: Vec::new(), dropped: Vec::new() };
    let inst = &side.instances[at.instance];
    let node = &inst.nodes[at.node];
    let inst_path = format!("{side_path}.instances[{}]", at.instance);
    let node_path = format!("{inst_path}.nodes[{}]", at.node);
    let side_field = |field: &str| format!("{side_path}.{field}");
    for &flag in SERVER_FLAGS {
        if let Some(get) = flag.bind.get {
            let Some(candidates) = spellings_at(flag, role) else { continue };
            if let (Some(value), Some(path)) = (get(d, at), flag.path(at)) {
                let scope = if flag.per_process() { Scope::Process } else { Scope::Role };
                a.write(&candidates, value, path, scope);
            }
            continue;
        }
        let is = |f: &'static Flag| std::ptr::eq(flag, f);
        if is(&DISAGGREGATION_MODE) {
            a.push(&DISAGGREGATION_MODE, vec![role.as_str().into()], Origin::Derived, Scope::Role);
        } else if is(&BOOTSTRAP_PORT) {
            let bootstrap_path = match role {
                Role::Prefill => format!("{inst_path}.bootstrap_port"),
                Role::Decode => "prefill.instances[0].bootstrap_port".to_owned(),
            };
            a.value(&BOOTSTRAP_PORT, addr.bootstrap_port, bootstrap_path, Scope::Process);
        } else if is(&HOST) {
            let bind = side.bind_host.clone().unwrap_or_else(|| node.host.clone());
            let bind_path =
                if side.bind_host.is_some() { side_field("bind_host") } else { format!("{node_path}.host") };
            a.value(&HOST, bind, bind_path, Scope::Process);
        } else if is(&PORT) {
            a.value(&PORT, addr.port, format!("{inst_path}.port"), Scope::Process);
        } else if is(&DIST_INIT_ADDR) {
            if let Some(p) = addr.dist_init_port {
                let path = format!("{inst_path}.dist_init_port");
                a.value(&DIST_INIT_ADDR, host_port(&addr.host, p), path, Scope::Process);
                a.push(&NNODES, vec![inst.nodes.len().to_string()], Origin::Derived, Scope::Process);
                a.push(&NODE_RANK, vec![at.node.to_string()], Origin::Derived, Scope::Process);
            }
        } else if is(&BASE_GPU_ID) {
            if base_gpu != 0 {
                a.value(&BASE_GPU_ID, base_gpu, format!("{node_path}.base_gpu_id"), Scope::Process);
            }
        } else if is(&DP_SIZE) {
            data_parallel(&mut a, side, side_path);
        }
    }

    // The escape hatch, last so that (as with argparse) it wins.
    let (mut args, dropped) = (a.args, a.dropped);
    for (k, tok) in side.extra_args.iter().enumerate() {
        args.push(Arg {
            flag: None,
            tokens: vec![tok.clone()],
            origin: Origin::field(format!("{side_path}.extra_args[{k}]")),
            scope: Scope::Extra,
        });
    }
    (args, dropped)
}

/// `--dp-size`, `--attn-dp-size` and `--enable-dp-attention`: the release decides how DP
/// attention is spelled.
fn data_parallel(a: &mut ArgList, side: &Side, side_path: &str) {
    use flags::*;
    let side_field = |field: &str| format!("{side_path}.{field}");
    if side.attn_dp > 1 && !ATTN_DP_SIZE.in_release(a.release) {
        // Before 0.5.23 DP attention is `--dp-size N --enable-dp-attention`, and a replica count
        // has no flag left to say it.
        a.value(&DP_SIZE, side.attn_dp, side_field("attn_dp"), Scope::Role);
        a.write(&[&ENABLE_DP_ATTENTION], Written::Switch(true), side_field("attn_dp"), Scope::Role);
        if side.dp > 1 {
            a.dropped.push(Dropped {
                path: side_field("dp"),
                value: side.dp.to_string(),
                flags: vec![&DP_SIZE],
                reason: Some(format!(
                    "before 0.5.23 `--dp-size` carries the DP-attention width `{side_path}.attn_dp`, so a separate \
                     replica count cannot be expressed"
                )),
            });
        }
    } else {
        if side.dp > 1 {
            a.value(&DP_SIZE, side.dp, side_field("dp"), Scope::Role);
        }
        if side.attn_dp > 1 {
            a.value(&ATTN_DP_SIZE, side.attn_dp, side_field("attn_dp"), Scope::Role);
        }
    }
}

fn url(host: &str, port: u16) -> String {
    format!("http://{}", host_port(host, port))
}

fn router_process(d: &Deployment, addrs: &FastMap<(Role, usize), InstanceAddr>) -> RouterProcess {
    use flags::*;
    let r = &d.router;
    let release = d.router_version;
    let mut args = Vec::new();
    let mut push = |flag: &'static Flag, values: Vec<String>, origin: Origin| {
        if flag.in_router_release(release) {
            let mut tokens = vec![flag.name.to_owned()];
            tokens.extend(values);
            args.push(Arg { flag: Some(flag), tokens, origin, scope: Scope::Role });
        }
    };
    let (mut prefills, mut decodes) = (Vec::new(), Vec::new());
    // The table's router flags in order: bound fields through their bindings, the server lists
    // from the instances' addresses.
    let at = At { role: Role::Prefill, instance: 0, node: 0 };
    for &flag in ROUTER_FLAGS {
        if let Some(get) = flag.bind.get {
            if let (Some(value), Some(path)) = (get(d, at), flag.path(at)) {
                let values = match value {
                    Written::Switch(_) => vec![],
                    Written::Text(t) => vec![t],
                };
                push(flag, values, Origin::field(path));
            }
        } else if std::ptr::eq(flag, &R_PD_DISAGGREGATION) {
            push(&R_PD_DISAGGREGATION, vec![], Origin::Derived);
        } else if std::ptr::eq(flag, &R_PREFILL) {
            for i in 0..d.prefill.instances.len() {
                let a = &addrs[&(Role::Prefill, i)];
                let entry = RouterPrefill { url: url(&a.host, a.port), bootstrap_port: Some(a.bootstrap_port) };
                push(
                    &R_PREFILL,
                    vec![entry.url.clone(), a.bootstrap_port.to_string()],
                    Origin::field(format!("prefill.instances[{i}]")),
                );
                prefills.push(entry);
            }
        } else if std::ptr::eq(flag, &R_DECODE) {
            for i in 0..d.decode.instances.len() {
                let a = &addrs[&(Role::Decode, i)];
                let u = url(&a.host, a.port);
                push(&R_DECODE, vec![u.clone()], Origin::field(format!("decode.instances[{i}]")));
                decodes.push(u);
            }
        }
    }
    for (k, tok) in r.extra_args.iter().enumerate() {
        args.push(Arg {
            flag: None,
            tokens: vec![tok.clone()],
            origin: Origin::field(format!("router.extra_args[{k}]")),
            scope: Scope::Extra,
        });
    }
    RouterProcess { host: r.host.clone(), port: r.port, prefills, decodes, args, env: r.env.clone() }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ip_literals_are_told_from_names() {
        for ip in ["10.0.0.1", "fe80::1", "[::1]", "::"] {
            assert!(super::is_ip_literal(ip), "{ip}");
        }
        for name in ["p-0.p", "node01", "10-0-0-1.nip", "", "llama-8b-prefill.llm.svc.cluster.local"] {
            assert!(!super::is_ip_literal(name), "{name}");
        }
    }
}
