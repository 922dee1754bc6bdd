//! Deployment -> plan: every process (role, instance, node) with its argv and environment, in a
//! stable order. Each argument remembers the deployment field it came from, so findings can point
//! at the field to change. The output formats in [`crate::render`] are views of a plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::deployment::{Deployment, Role, Side};
use crate::fast_hash::FastMap;
use crate::flags::{self, first_available, Flag};
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

struct ArgList<'a> {
    release: Release,
    args: Vec<Arg>,
    dropped: Vec<Dropped>,
    side_path: &'a str,
}

impl ArgList<'_> {
    fn push(&mut self, flag: &'static Flag, values: Vec<String>, origin: Origin, scope: Scope) {
        let mut tokens = vec![flag.name.to_owned()];
        tokens.extend(values);
        self.args.push(Arg { flag: Some(flag), tokens, origin, scope });
    }
    fn value(&mut self, candidates: &[&'static Flag], value: impl ToString, path: String, scope: Scope) {
        match first_available(candidates, self.release) {
            Some(flag) => self.push(flag, vec![value.to_string()], Origin::field(path), scope),
            None => self.leave_out(candidates, value.to_string(), path),
        }
    }
    fn leave_out(&mut self, candidates: &[&'static Flag], value: String, path: String) {
        self.dropped.push(Dropped { path, value, flags: candidates.to_vec(), reason: None });
    }
    fn opt<T: ToString>(&mut self, candidates: &[&'static Flag], value: &Option<T>, path: String) {
        if let Some(v) = value {
            self.value(candidates, v.to_string(), path, Scope::Role);
        }
    }
    fn switch(&mut self, candidates: &[&'static Flag], on: bool, path: String) {
        if on {
            match first_available(candidates, self.release) {
                Some(flag) => self.push(flag, vec![], Origin::field(path), Scope::Role),
                None => self.leave_out(candidates, "true".into(), path),
            }
        }
    }
    fn side(&self, field: &str) -> String {
        format!("{}.{field}", self.side_path)
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
                let (args, left_out) = server_args(d, role, side, i, rank, addr, base);
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

fn server_args(
    d: &Deployment,
    role: Role,
    side: &Side,
    inst_index: usize,
    rank: usize,
    addr: &InstanceAddr,
    base_gpu: u32,
) -> (Vec<Arg>, Vec<Dropped>) {
    use flags::*;
    let side_path = role.as_str();
    let mut a = ArgList { release: d.sglang_version, args: Vec::new(), dropped: Vec::new(), side_path };
    let m = &d.model;
    let inst = &side.instances[inst_index];
    let node = &inst.nodes[rank];
    let inst_path = format!("{side_path}.instances[{inst_index}]");
    let node_path = format!("{inst_path}.nodes[{rank}]");

    // Model identity: identical on both sides.
    a.value(&[&MODEL_PATH], &m.path, "model.path".into(), Scope::Role);
    a.opt(&[&TOKENIZER_PATH], &m.tokenizer, "model.tokenizer".into());
    a.opt(&[&TOKENIZER_MODE], &m.tokenizer_mode, "model.tokenizer_mode".into());
    a.opt(&[&REVISION], &m.revision, "model.revision".into());
    a.switch(&[&TRUST_REMOTE_CODE], m.trust_remote_code, "model.trust_remote_code".into());
    a.opt(&[&DTYPE], &m.dtype, "model.dtype".into());
    a.opt(&[&QUANTIZATION], &m.quantization, "model.quantization".into());
    a.opt(&[&CONTEXT_LENGTH], &m.context_length, "model.context_length".into());
    a.opt(&[&SERVED_MODEL_NAME], &m.served_name, "model.served_name".into());
    a.opt(&[&CHAT_TEMPLATE], &m.chat_template, "model.chat_template".into());

    // Disaggregation wiring.
    a.push(&DISAGGREGATION_MODE, vec![role.as_str().into()], Origin::Derived, Scope::Role);
    let sh = &d.shared;
    a.value(&[&TRANSFER_BACKEND], sh.transfer_backend, "shared.transfer_backend".into(), Scope::Role);
    let bootstrap_path = match role {
        Role::Prefill => format!("{inst_path}.bootstrap_port"),
        Role::Decode => "prefill.instances[0].bootstrap_port".to_owned(),
    };
    a.value(&[&BOOTSTRAP_PORT], addr.bootstrap_port, bootstrap_path, Scope::Process);
    if let Some(ib) = &node.ib_device {
        a.value(&[&IB_DEVICE], ib, format!("{node_path}.ib_device"), Scope::Process);
    }

    // Network and topology.
    let bind = side.bind_host.clone().unwrap_or_else(|| node.host.clone());
    let bind_path = if side.bind_host.is_some() { a.side("bind_host") } else { format!("{node_path}.host") };
    a.value(&[&HOST], bind, bind_path, Scope::Process);
    a.value(&[&PORT], addr.port, format!("{inst_path}.port"), Scope::Process);
    if let Some(p) = addr.dist_init_port {
        a.value(&[&DIST_INIT_ADDR], host_port(&addr.host, p), format!("{inst_path}.dist_init_port"), Scope::Process);
        a.push(&NNODES, vec![inst.nodes.len().to_string()], Origin::Derived, Scope::Process);
        a.push(&NODE_RANK, vec![rank.to_string()], Origin::Derived, Scope::Process);
    }
    if base_gpu != 0 {
        a.value(&[&BASE_GPU_ID], base_gpu, format!("{node_path}.base_gpu_id"), Scope::Process);
    }
    if let Some(p) = inst.nccl_port {
        a.value(&[&NCCL_PORT], p, format!("{inst_path}.nccl_port"), Scope::Process);
    }

    // Parallelism.
    a.value(&[&TP_SIZE], side.tp, a.side("tp"), Scope::Role);
    let has_attn_dp_flag = ATTN_DP_SIZE.in_release(d.sglang_version);
    if side.attn_dp > 1 && !has_attn_dp_flag {
        // Before 0.5.23 DP attention is `--dp-size N --enable-dp-attention`, and a replica count
        // has no flag left to say it.
        a.value(&[&DP_SIZE], side.attn_dp, a.side("attn_dp"), Scope::Role);
        a.switch(&[&ENABLE_DP_ATTENTION], true, a.side("attn_dp"));
        if side.dp > 1 {
            a.dropped.push(Dropped {
                path: a.side("dp"),
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
            a.value(&[&DP_SIZE], side.dp, a.side("dp"), Scope::Role);
        }
        if side.attn_dp > 1 {
            a.value(&[&ATTN_DP_SIZE], side.attn_dp, a.side("attn_dp"), Scope::Role);
        }
    }
    if side.pp > 1 {
        a.value(&[&PP_SIZE], side.pp, a.side("pp"), Scope::Role);
    }
    a.opt(&[&EP_SIZE], &side.ep, a.side("ep"));
    if side.attn_cp > 1 {
        a.value(&[&ATTN_CP_SIZE], side.attn_cp, a.side("attn_cp"), Scope::Role);
    }
    a.switch(&[&ENABLE_PREFILL_CP], side.enable_prefill_cp, a.side("enable_prefill_cp"));
    if side.dcp > 1 {
        a.value(&[&DCP_SIZE], side.dcp, a.side("dcp"), Scope::Role);
    }
    a.opt(&[&MOE_A2A_BACKEND], &side.moe_a2a_backend, a.side("moe_a2a_backend"));
    a.opt(&[&DEEPEP_MODE], &side.deepep_mode, a.side("deepep_mode"));
    a.opt(&[&MOE_DENSE_TP_SIZE], &side.moe_dense_tp, a.side("moe_dense_tp"));
    a.switch(&[&ENABLE_DP_LM_HEAD], side.enable_dp_lm_head, a.side("enable_dp_lm_head"));

    // KV layout: shared, always explicit.
    a.value(&[&PAGE_SIZE], sh.page_size, "shared.page_size".into(), Scope::Role);
    a.value(&[&KV_CACHE_DTYPE], sh.kv_cache_dtype, "shared.kv_cache_dtype".into(), Scope::Role);
    a.opt(&[&ATTENTION_BACKEND], &sh.attention_backend, "shared.attention_backend".into());
    a.opt(&[&PREFILL_ATTENTION_BACKEND], &sh.prefill_attention_backend, "shared.prefill_attention_backend".into());
    a.opt(&[&DECODE_ATTENTION_BACKEND], &sh.decode_attention_backend, "shared.decode_attention_backend".into());
    a.opt(&[&DSA_PREFILL_BACKEND, &NSA_PREFILL_BACKEND], &sh.dsa_prefill_backend, "shared.dsa_prefill_backend".into());
    a.opt(&[&DSA_DECODE_BACKEND, &NSA_DECODE_BACKEND], &sh.dsa_decode_backend, "shared.dsa_decode_backend".into());
    if let Some(s) = sh.speculative.as_ref().filter(|s| !(s.decode_only && role == Role::Prefill)) {
        a.value(&[&SPECULATIVE_ALGORITHM], &s.algorithm, "shared.speculative.algorithm".into(), Scope::Role);
        a.opt(&[&SPECULATIVE_DRAFT_MODEL_PATH], &s.draft_model_path, "shared.speculative.draft_model_path".into());
        a.opt(&[&SPECULATIVE_NUM_STEPS], &s.num_steps, "shared.speculative.num_steps".into());
        a.opt(&[&SPECULATIVE_EAGLE_TOPK], &s.eagle_topk, "shared.speculative.eagle_topk".into());
        a.opt(&[&SPECULATIVE_NUM_DRAFT_TOKENS], &s.num_draft_tokens, "shared.speculative.num_draft_tokens".into());
        a.opt(
            &[&SPECULATIVE_DRAFT_KV_CACHE_DTYPE],
            &s.draft_kv_cache_dtype,
            "shared.speculative.draft_kv_cache_dtype".into(),
        );
        a.opt(
            &[&SPECULATIVE_DRAFT_ATTENTION_BACKEND],
            &s.draft_attention_backend,
            "shared.speculative.draft_attention_backend".into(),
        );
    }
    a.opt(&[&KV_CANARY], &sh.kv_canary, "shared.kv_canary".into());
    a.opt(&[&KV_CANARY_REAL_DATA], &sh.kv_canary_real_data, "shared.kv_canary_real_data".into());
    a.switch(&[&ENABLE_UNIFIED_MEMORY], sh.enable_unified_memory, "shared.enable_unified_memory".into());
    a.switch(
        &[&ENABLE_PAGE_MAJOR_KV_LAYOUT],
        sh.enable_page_major_kv_layout,
        "shared.enable_page_major_kv_layout".into(),
    );

    // Memory, batching and side-only features.
    a.opt(&[&MEM_FRACTION_STATIC], &side.mem_fraction_static, a.side("mem_fraction_static"));
    a.opt(&[&MAX_RUNNING_REQUESTS], &side.max_running_requests, a.side("max_running_requests"));
    a.opt(&[&CHUNKED_PREFILL_SIZE], &side.chunked_prefill_size, a.side("chunked_prefill_size"));
    a.opt(&[&MAX_PREFILL_TOKENS], &side.max_prefill_tokens, a.side("max_prefill_tokens"));
    let graph_bs: &[&'static Flag] = match role {
        Role::Prefill => &[&CUDA_GRAPH_MAX_BS_PREFILL],
        Role::Decode => &[&CUDA_GRAPH_MAX_BS_DECODE, &CUDA_GRAPH_MAX_BS],
    };
    a.opt(graph_bs, &side.cuda_graph_max_bs, a.side("cuda_graph_max_bs"));
    let no_graph: &[&'static Flag] = match role {
        Role::Prefill => &[&DISABLE_PREFILL_CUDA_GRAPH, &DISABLE_CUDA_GRAPH],
        Role::Decode => &[&DISABLE_DECODE_CUDA_GRAPH, &DISABLE_CUDA_GRAPH],
    };
    a.switch(no_graph, side.disable_cuda_graph, a.side("disable_cuda_graph"));
    a.opt(&[&LOAD_BALANCE_METHOD], &side.load_balance_method, a.side("load_balance_method"));
    if let Some(h) = &side.hicache {
        a.switch(
            &[&ENABLE_HIERARCHICAL_CACHE],
            !side.decode_offload_kvcache || role == Role::Prefill,
            a.side("hicache"),
        );
        a.opt(&[&HICACHE_RATIO], &h.ratio, a.side("hicache.ratio"));
        a.opt(&[&HICACHE_SIZE], &h.size, a.side("hicache.size"));
        a.opt(&[&HICACHE_STORAGE_BACKEND], &h.storage_backend, a.side("hicache.storage_backend"));
        a.opt(&[&HICACHE_WRITE_POLICY], &h.write_policy, a.side("hicache.write_policy"));
    }
    a.switch(&[&DECODE_RADIX_CACHE], side.decode_radix_cache, a.side("decode_radix_cache"));
    a.switch(&[&DECODE_OFFLOAD_KVCACHE], side.decode_offload_kvcache, a.side("decode_offload_kvcache"));
    a.opt(&[&DECODE_RETRACTION_BACKUP], &side.decode_retraction_backup, a.side("decode_retraction_backup"));
    a.opt(&[&NUM_RESERVED_DECODE_TOKENS], &side.num_reserved_decode_tokens, a.side("num_reserved_decode_tokens"));
    a.opt(&[&DECODE_EXTRA_SLOTS], &side.decode_extra_slots, a.side("decode_extra_slots"));
    a.opt(&[&OPTIMISTIC_PREFILL_ATTEMPTS], &side.optimistic_prefill_attempts, a.side("optimistic_prefill_attempts"));
    a.switch(&[&ENABLE_METRICS], side.enable_metrics, a.side("enable_metrics"));

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
    push(&R_PD_DISAGGREGATION, vec![], Origin::Derived);
    let mut prefills = Vec::new();
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
    let mut decodes = Vec::new();
    for i in 0..d.decode.instances.len() {
        let a = &addrs[&(Role::Decode, i)];
        let u = url(&a.host, a.port);
        push(&R_DECODE, vec![u.clone()], Origin::field(format!("decode.instances[{i}]")));
        decodes.push(u);
    }
    push(&R_HOST, vec![r.host.clone()], Origin::field("router.host"));
    push(&R_PORT, vec![r.port.to_string()], Origin::field("router.port"));
    for (flag, v, path) in [
        (&R_POLICY, r.policy, "router.policy"),
        (&R_PREFILL_POLICY, r.prefill_policy, "router.prefill_policy"),
        (&R_DECODE_POLICY, r.decode_policy, "router.decode_policy"),
    ] {
        if let Some(p) = v {
            push(flag, vec![p.to_string()], Origin::field(path));
        }
    }
    if r.mini_lb {
        push(&R_MINI_LB, vec![], Origin::field("router.mini_lb"));
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
