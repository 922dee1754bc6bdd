//! srtctl recipes (NVIDIA's srt-slurm): one YAML file that describes a prefill-decode deployment
//! on SLURM, read as the processes srtctl starts from it.
//!
//! Two layouts are read. The older one has `resources.{prefill,decode,agg}_{nodes,workers}` and
//! `gpus_per_{prefill,decode,agg}`, the SGLang arguments under
//! `backend.sglang_config.{prefill,decode,aggregated}` and the environment under
//! `backend.{prefill,decode,aggregated}_environment`; the newer one (`schema: 2`) has
//! `roles.{prefill,decode,agg}.{nodes,workers,gpus,env,args}`, with `nodes: colocate` for a
//! decode on the prefill's spare GPUs. Aggregated workers are plain servers (their arguments are
//! still checked). A file with `base:` is read as srtctl expands it: one
//! variant per `override_NAME` (merged into the base: mappings key by key, other values
//! replaced, `null` removing a key) and per item of a `zip_override_NAME`'s lists (one-item lists
//! go to every variant), or the base alone when it has none. Each recipe or variant is one
//! deployment ([`Scope`]), never grouped with other material; a fix never edits text that
//! another variant reads.
//!
//! What srtctl does, and this reader repeats:
//! - each worker takes `gpus` GPUs (else `nodes x gpus_per_node / workers`, else a whole node);
//!   a worker of a node or more takes whole consecutive nodes, smaller ones share a node at GPU
//!   offsets (with `CUDA_VISIBLE_DEVICES` set), prefill workers first, then decode from a fresh
//!   node unless colocated;
//! - one process per node of a worker: `python3 -m dynamo.sglang` (or `sglang.launch_server`
//!   behind the SGLang router frontend) with `--model-path`, `--served-model-name`, `--host`,
//!   `--port`, `--disaggregation-mode`, the prefill's `--disaggregation-bootstrap-port`, and
//!   `--dist-init-addr`/`--nnodes`/`--node-rank` for a worker of several nodes; then the role's
//!   arguments in key order, `_` read as `-`, `true` as the bare flag, `false` and `null` left
//!   out, a list as the flag and its items. The recipe's own `model-path`, `served-model-name`,
//!   `nccl-port` and `grpc-port` are replaced by srtctl's;
//! - ports as the current srtctl allocates them: HTTP 6100 + 32 k and bootstrap 7200 + k for the
//!   k-th worker leader on a node, `--dist-init-addr` port 8300;
//! - the environment is the role's, then the recipe's top-level `environment`, with `{node}` and
//!   `{node_id}` filled in;
//! - behind the SGLang router frontend, one router with every worker leader.
//!
//! Nodes are named `node0`, `node1`… in allocation order: SLURM picks the real ones. The words
//! srtctl adds are [`Embed::Generated`]: findings on them point at the role, fixes leave them
//! alone. Values with a sweep's `{placeholder}` stay unknown.

use super::config::{py_scalar, py_str, Py};
use super::launch::{gpu_in_text, release_for, version_in_image, Launch, Program, Scope, Surroundings, DYNAMO_WORKER};
use crate::read::source::{Embed, Word};
use crate::read::yaml::{Map, Node, Scalar};

/// The most workers of one role read, the most nodes of one worker, and the most processes of one
/// role.
const MAX_WORKERS: u32 = 64;
const MAX_NODES_PER_WORKER: u32 = 64;
const MAX_PROCESSES: u32 = 256;
/// The most variants of one file read (in file order).
const MAX_VARIANTS: usize = 32;
/// srtctl's port bases (`srtctl/ports.py`).
const HTTP_PORT_BASE: u32 = 6100;
const HTTP_PORT_STRIDE: u32 = 32;
const BOOTSTRAP_PORT_BASE: u32 = 7200;
const DIST_INIT_PORT: u32 = 8300;
/// The router's port when only one frontend runs.
const FRONTEND_PORT: u32 = 8000;
/// Keys srtctl takes out of the role's arguments and passes itself.
const POPPED: &[&str] = &["model-path", "served-model-name", "nccl-port", "grpc-port"];

/// True when the document is an srtctl recipe with SGLang prefill or decode roles.
pub fn is_recipe(doc: &Node) -> bool {
    let doc = doc.get("base").unwrap_or(doc);
    if doc.get("apiVersion").is_some() || doc.get("model").is_none() {
        return false;
    }
    let engine_ok = !matches!(engine_type(doc), Some(t) if t != "sglang");
    engine_ok && roles(doc).iter().any(|r| r.is_some())
}

/// The engine a recipe names (`engine: sglang`, `engine: {type: …}`, `backend: {type: …}`).
fn engine_type<'n>(doc: &'n Node) -> Option<&'n str> {
    let engine = doc.get("engine");
    engine
        .and_then(Node::str)
        .or_else(|| engine.and_then(|e| e.get("type")).and_then(Node::str))
        .or_else(|| doc.get("backend").and_then(|b| b.get("type")).and_then(Node::str))
}

/// One role of a recipe, wherever its layout put its parts.
struct RoleSpec<'n, 'a> {
    mode: &'static str,
    /// The key the findings on srtctl's own words point at.
    key: &'n Scalar<'a>,
    args: Option<&'n Map<'a>>,
    env: Option<&'n Node<'a>>,
    nodes: Option<&'n Node<'a>>,
    workers: Option<&'n Node<'a>>,
    gpus: Option<&'n Node<'a>>,
}

/// The prefill, decode and aggregated roles, in either layout: (mode, `sglang_config` key,
/// `resources` prefix).
const ROLES: [(&str, &str, &str); 3] =
    [("prefill", "prefill", "prefill"), ("decode", "decode", "decode"), ("agg", "aggregated", "agg")];

/// The roles of a recipe, in either layout.
fn roles<'n, 'a>(doc: &'n Node<'a>) -> [Option<RoleSpec<'n, 'a>>; 3] {
    ROLES.map(|(mode, config_key, prefix)| {
        if let Some((key, role)) = doc.get("roles").and_then(|r| r.entry(mode)) {
            role.map()?;
            return Some(RoleSpec {
                mode,
                key,
                args: role.get("args").and_then(Node::map),
                env: role.get("env"),
                nodes: role.get("nodes"),
                workers: role.get("workers"),
                gpus: role.get("gpus"),
            });
        }
        let backend = doc.get("backend");
        let (key, args) = backend.and_then(|b| b.get("sglang_config")).and_then(|c| c.entry(config_key))?;
        // Arguments are a mapping; an empty role is one without any.
        if !matches!(args, Node::Map(_) | Node::Null(_)) {
            return None;
        }
        let resources = doc.get("resources");
        Some(RoleSpec {
            mode,
            key,
            args: args.map(),
            env: backend.and_then(|b| b.get(&format!("{config_key}_environment"))),
            nodes: resources.and_then(|r| r.get(&format!("{prefix}_nodes"))),
            workers: resources.and_then(|r| r.get(&format!("{prefix}_workers"))),
            gpus: resources.and_then(|r| r.get(&format!("gpus_per_{prefix}"))),
        })
    })
}

fn number(n: Option<&Node>) -> Option<u32> {
    n?.str()?.trim().parse().ok()
}

/// Where one process of a worker runs.
struct Process {
    node: u32,
    rank: u32,
    /// The GPUs it sees, when it takes part of a node.
    gpus: Option<std::ops::Range<u32>>,
}

/// One worker: its processes and its leader's ports.
struct Worker {
    processes: Vec<Process>,
    http_port: u32,
    bootstrap_port: u32,
}

/// srtctl's node allocation (`srtctl/core/topology.py`).
#[derive(Default)]
struct Allocator {
    node: u32,
    gpu: u32,
    /// Worker leaders placed on each node so far.
    leaders: Vec<u32>,
}

impl Allocator {
    fn next_node(&mut self) {
        if self.gpu > 0 {
            self.node += 1;
            self.gpu = 0;
        }
    }

    fn worker(&mut self, gpus: u32, per_node: u32) -> Worker {
        let processes = if gpus >= per_node {
            self.next_node();
            let nodes = gpus.div_ceil(per_node).min(MAX_NODES_PER_WORKER);
            let first = self.node;
            self.node += nodes;
            (0..nodes).map(|rank| Process { node: first + rank, rank, gpus: None }).collect()
        } else {
            if self.gpu + gpus > per_node {
                self.next_node();
            }
            let range = self.gpu..self.gpu + gpus;
            self.gpu += gpus;
            let p = Process { node: self.node, rank: 0, gpus: Some(range) };
            if self.gpu == per_node {
                self.next_node();
            }
            vec![p]
        };
        let leader = processes[0].node as usize;
        if self.leaders.len() <= leader {
            self.leaders.resize(leader + 1, 0);
        }
        let k = self.leaders[leader];
        self.leaders[leader] += 1;
        Worker { processes, http_port: HTTP_PORT_BASE + HTTP_PORT_STRIDE * k, bootstrap_port: BOOTSTRAP_PORT_BASE + k }
    }
}

/// Reads a recipe into the launches srtctl makes of it: each variant of a file with a `base:` and
/// overrides, else the recipe itself.
pub fn scan(doc: &Node, file: usize, base: &Surroundings, out: &mut Vec<Launch>) {
    let name_of = |d: &Node| d.get("name").and_then(Node::str).map(str::to_owned);
    let (Some(recipe), Node::Map(m)) = (doc.get("base"), doc) else {
        let scope = Scope { at: (file, doc.start(), 0), name: name_of(doc), variant: false };
        return scan_one(doc, file, base, scope, out);
    };
    let base_name = name_of(recipe).unwrap_or_else(|| "unnamed".into());
    let mut variants = 0;
    for (key, value) in &m.entries {
        if variants == MAX_VARIANTS {
            break;
        }
        // An override is a mapping; srtctl refuses anything else.
        if !matches!(value, Node::Map(_)) {
            continue;
        }
        if let Some(suffix) = key.text.strip_prefix("override_") {
            let variant = merge(recipe, value);
            let name = format!("{base_name}_{suffix}");
            scan_one(&variant, file, base, Scope { at: (file, key.start, 0), name: Some(name), variant: true }, out);
            variants += 1;
        } else if let Some(group) = key.text.strip_prefix("zip_override_") {
            // Lists of unequal lengths (other than 1): srtctl refuses the file.
            let Some(n) = zip_len(value) else { continue };
            let names = value.get("name").filter(|n| matches!(n, Node::Seq(_)));
            for i in 0..n.min(MAX_VARIANTS - variants) {
                let variant = merge(recipe, &zip_slice(value, i));
                let name = match names {
                    Some(_) => name_of(&variant).unwrap_or_default(),
                    None => format!("{base_name}_{group}_{i}"),
                };
                scan_one(
                    &variant,
                    file,
                    base,
                    Scope { at: (file, key.start, i), name: Some(name), variant: true },
                    out,
                );
                variants += 1;
            }
        }
    }
    if variants == 0 {
        let scope = Scope { at: (file, recipe.start(), 0), name: Some(base_name), variant: false };
        scan_one(recipe, file, base, scope, out);
    }
}

/// A copy of `base` with `over` merged in as srtctl merges overrides: mappings key by key,
/// anything else replaced, a `null` removing the key.
fn merge<'a>(base: &Node<'a>, over: &Node<'a>) -> Node<'a> {
    let (Node::Map(b), Node::Map(o)) = (base, over) else { return over.clone() };
    let mut entries = b.entries.clone();
    for (k, v) in &o.entries {
        let at = entries.iter().position(|(e, _)| e.text == k.text);
        match (v, at) {
            (Node::Null(_), Some(i)) => {
                entries.remove(i);
            }
            (Node::Null(_), None) => {}
            (_, Some(i)) => entries[i] = (k.clone(), merge(&entries[i].1, v)),
            (_, None) => entries.push((k.clone(), v.clone())),
        }
    }
    Node::Map(Map { entries, start: b.start })
}

/// The number of variants of a zip override: the length of its lists (those of one item are
/// given to every variant); `None` when two lists disagree.
fn zip_len(n: &Node) -> Option<usize> {
    fn lengths(n: &Node, out: &mut Vec<usize>) {
        match n {
            Node::Seq(s) if s.items.len() != 1 => out.push(s.items.len()),
            Node::Map(m) => m.entries.iter().for_each(|(_, v)| lengths(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    lengths(n, &mut all);
    match all.split_first() {
        None => Some(1),
        Some((first, rest)) => rest.iter().all(|l| l == first).then_some(*first),
    }
}

/// Variant `i` of a zip override: every list replaced by its `i`-th item (a one-item list by
/// that item).
fn zip_slice<'a>(n: &Node<'a>, i: usize) -> Node<'a> {
    match n {
        Node::Seq(s) => s.items.get(if s.items.len() == 1 { 0 } else { i }).cloned().unwrap_or(Node::Null(s.start)),
        Node::Map(m) => Node::Map(Map {
            entries: m.entries.iter().map(|(k, v)| (k.clone(), zip_slice(v, i))).collect(),
            start: m.start,
        }),
        other => other.clone(),
    }
}

/// Reads one recipe (or one variant) into its launches.
fn scan_one(doc: &Node, file: usize, base: &Surroundings, scope: Scope, out: &mut Vec<Launch>) {
    let model = doc.get("model");
    let resources = doc.get("resources");
    let per_node = number(resources.and_then(|r| r.get("gpus_per_node"))).filter(|n| *n > 0).unwrap_or(4);
    let gpu_type = resources
        .and_then(|r| r.get("gpu_type"))
        .or_else(|| doc.get("engine").and_then(|e| e.get("gpu_type")))
        .or_else(|| doc.get("backend").and_then(|b| b.get("gpu_type")))
        .and_then(Node::str);
    let release = doc
        .get("identity")
        .and_then(|i| i.get("frameworks"))
        .and_then(|f| f.get("sglang"))
        .and_then(Node::str)
        .or_else(|| model.and_then(|m| m.get("container")).and_then(Node::str).and_then(version_in_image))
        .and_then(release_for);
    let frontend = doc.get("frontend");
    let frontend_type = frontend.and_then(|f| f.get("type")).and_then(Node::str);
    let sglang_router = matches!(frontend_type, Some("sglang" | "sglang-router"))
        || frontend.and_then(|f| f.get("use_sglang_router")).and_then(Node::str) == Some("true");
    let module = if sglang_router { "sglang.launch_server" } else { DYNAMO_WORKER };
    let sweep = doc.get("sweep").is_some();
    let model_path = model.and_then(|m| m.get("path")).and_then(Node::str).unwrap_or("");
    let model_path = model_path.strip_prefix("hf:").unwrap_or(model_path);
    let name = scope.name.clone();
    let top_env: Vec<(String, String)> = env_pairs(doc.get("environment"));
    let roles = roles(doc);
    let served = roles
        .iter()
        .flatten()
        .find_map(|r| r.args.and_then(|a| arg_value(a, "served-model-name")))
        .unwrap_or_else(|| model_path.rsplit('/').find(|s| !s.is_empty()).unwrap_or(model_path).to_owned());

    // The recipe is one deployment: its launches are grouped apart from any other material.
    let scope = Some(scope);
    let mut alloc = Allocator::default();
    let mut prefill_gpus = None;
    let mut leaders: Vec<(&'static str, String, u32, Option<u32>)> = Vec::new();
    for role in roles.into_iter().flatten() {
        // An aggregated worker serves alone: no disaggregation flags, no router entry.
        let disaggregated = role.mode != "agg";
        let colocate = role.nodes.and_then(Node::str).is_some_and(|n| n == "colocate" || n == "0");
        let workers = number(role.workers).filter(|w| *w > 0).unwrap_or(1).min(MAX_WORKERS);
        let gpus = number(role.gpus)
            .or_else(|| number(role.nodes).filter(|n| *n > 0).map(|n| n.saturating_mul(per_node) / workers))
            .or(if colocate { prefill_gpus } else { None })
            .filter(|g| *g > 0)
            .unwrap_or(per_node);
        if role.mode == "prefill" {
            prefill_gpus = Some(gpus);
        } else if !colocate {
            alloc.next_node();
        }
        // At most MAX_PROCESSES processes per role: fewer workers beyond that.
        let workers = workers.min((MAX_PROCESSES / gpus.div_ceil(per_node).clamp(1, MAX_NODES_PER_WORKER)).max(1));
        let role_env = env_pairs(role.env);
        let mut args = role.args.map(|a| config_words(a, file, sweep)).unwrap_or_default();
        args.retain(|(key, _)| !POPPED.contains(&key.replace('_', "-").as_str()));
        let gen = |text: String| Word {
            text,
            file,
            start: role.key.start,
            end: role.key.end,
            unknown: Vec::new(),
            map: None,
            embed: Embed::Generated,
        };
        for _ in 0..workers {
            let w = alloc.worker(gpus, per_node);
            let nodes = w.processes.len() as u32;
            let leader = format!("node{}", w.processes[0].node);
            let bootstrap = (role.mode == "prefill").then_some(w.bootstrap_port);
            for p in &w.processes {
                let mut words: Vec<Word> = Vec::new();
                let mut flag = |f: &str, v: String| {
                    words.push(gen(f.to_owned()));
                    words.push(gen(v));
                };
                flag("--model-path", model_path.to_owned());
                flag("--served-model-name", served.clone());
                flag("--host", "0.0.0.0".to_owned());
                flag("--port", w.http_port.to_string());
                if disaggregated {
                    flag("--disaggregation-mode", role.mode.to_owned());
                }
                if let Some(b) = bootstrap {
                    flag("--disaggregation-bootstrap-port", b.to_string());
                }
                if nodes > 1 {
                    flag("--dist-init-addr", format!("{leader}:{DIST_INIT_PORT}"));
                    flag("--nnodes", nodes.to_string());
                    flag("--node-rank", p.rank.to_string());
                }
                words.extend(args.iter().flat_map(|(_, ws)| ws.iter().cloned()));
                let node = format!("node{}", p.node);
                let fill = |v: &str| v.replace("{node_id}", &p.node.to_string()).replace("{node}", &node);
                let mut env: Vec<(String, String)> = Vec::new();
                for (k, v) in role_env.iter().chain(&top_env) {
                    env.retain(|(e, _)| e != k);
                    env.push((k.clone(), fill(v)));
                }
                if let Some(g) = &p.gpus {
                    let list: Vec<String> = g.clone().map(|i| i.to_string()).collect();
                    env.push(("CUDA_VISIBLE_DEVICES".into(), list.join(",")));
                }
                let mut hints = base.hints.clone();
                hints.extend(name.as_deref().map(str::to_ascii_lowercase));
                hints.push(role.mode.to_owned());
                out.push(Launch {
                    program: Program::Server,
                    file,
                    at: role.key.start,
                    entry: format!("python3 -m {module}"),
                    python: Some("python3".into()),
                    args: words.into(),
                    env,
                    hints,
                    gpu: gpu_type.and_then(gpu_in_text).or(base.gpu),
                    release: release.as_ref().map(|r| r.0).or(base.release),
                    version: release.as_ref().map_or_else(|| base.version.clone(), |r| r.1.clone()),
                    image: None,
                    isolated: false,
                    srun_same_rank: None,
                    machine: Some(node),
                    scope: scope.clone(),
                    kubernetes: None,
                    meta: None,
                    breaks: Vec::new(),
                    background: false,
                    pod_at: None,
                });
            }
            if disaggregated {
                leaders.push((role.mode, leader, w.http_port, bootstrap));
            }
        }
    }
    if sglang_router && !leaders.is_empty() {
        out.push(router(doc, file, &leaders, base, scope));
    }
}

/// The SGLang router srtctl starts in front of the worker leaders.
fn router(
    doc: &Node,
    file: usize,
    leaders: &[(&'static str, String, u32, Option<u32>)],
    base: &Surroundings,
    scope: Option<Scope>,
) -> Launch {
    let frontend = doc.get("frontend");
    let (start, end) = doc.entry("frontend").map_or((0, 0), |(k, _)| (k.start, k.end));
    let at = start;
    let gen = |text: String| Word { text, file, start, end, unknown: Vec::new(), map: None, embed: Embed::Generated };
    let mut words = vec![gen("--pd-disaggregation".into())];
    for (mode, host, port, bootstrap) in leaders {
        words.push(gen(format!("--{mode}")));
        words.push(gen(format!("http://{host}:{port}")));
        words.extend(bootstrap.map(|b| gen(b.to_string())));
    }
    for w in ["--host", "0.0.0.0", "--port"].map(str::to_owned).into_iter().chain([FRONTEND_PORT.to_string()]) {
        words.push(gen(w));
    }
    let args = frontend.and_then(|f| f.get("args").or_else(|| f.get("sglang_router_args"))).and_then(Node::map);
    words.extend(args.map(|a| config_words(a, file, false)).unwrap_or_default().into_iter().flat_map(|(_, w)| w));
    let mut hints = base.hints.clone();
    hints.push("router".into());
    Launch {
        program: Program::Router,
        file,
        at,
        entry: "python3 -m sglang_router.launch_router".into(),
        python: Some("python3".into()),
        args: words.into(),
        env: env_pairs(frontend.and_then(|f| f.get("env"))),
        hints,
        gpu: None,
        release: None,
        version: None,
        image: None,
        isolated: false,
        srun_same_rank: None,
        machine: Some("node0".into()),
        scope,
        kubernetes: None,
        meta: None,
        breaks: Vec::new(),
        background: false,
        pod_at: None,
    }
}

/// A mapping of environment variables as (name, value) pairs.
fn env_pairs(n: Option<&Node>) -> Vec<(String, String)> {
    let Some(Node::Map(m)) = n else { return Vec::new() };
    m.entries.iter().filter_map(|(k, v)| Some((k.text.to_string(), py_str(v.scalar()?)))).collect()
}

/// The value srtctl passes for `key` (either spelling), when the role sets one.
fn arg_value(args: &Map, key: &str) -> Option<String> {
    let v = args.entries.iter().rev().find(|(k, _)| k.text.replace('_', "-") == key)?;
    match py_scalar(v.1.scalar()?) {
        Py::Text(t) => Some(t),
        Py::Bool(_) => None,
    }
}

/// The words srtctl makes of a role's arguments, in key order, each with its key as written.
fn config_words(args: &Map, file: usize, sweep: bool) -> Vec<(String, Vec<Word>)> {
    let mut keyed: Vec<(String, Vec<Word>)> = Vec::new();
    for (key, value) in &args.entries {
        let dashed = key.text.replace('_', "-");
        let key_word = Word {
            text: format!("--{dashed}"),
            file,
            start: key.start,
            end: key.end,
            unknown: Vec::new(),
            map: None,
            embed: Embed::ConfigKey,
        };
        let value_word = |text: String, start: usize, end: usize| {
            let unknown = if sweep && has_placeholder(&text) { vec![text.clone()] } else { Vec::new() };
            Word { text, file, start, end, unknown, map: None, embed: Embed::ConfigValue }
        };
        let words = match value {
            Node::Null(_) => continue,
            Node::Scalar(sc) => match py_scalar(sc) {
                Py::Bool(true) => vec![key_word],
                Py::Bool(false) => continue,
                Py::Text(t) if t == "None" && sc.style == crate::read::yaml::Style::Plain => continue,
                Py::Text(t) => vec![key_word, value_word(t, sc.start, sc.end)],
            },
            Node::Seq(s) => {
                let mut ws = vec![key_word];
                for item in &s.items {
                    let text = match item {
                        Node::Scalar(sc) => py_str(sc),
                        other => python_repr(other),
                    };
                    let start = item.start();
                    let end = item.scalar().map_or(start, |sc| sc.end);
                    ws.push(value_word(text, start, end));
                }
                ws
            }
            Node::Map(_) => vec![key_word, value_word(python_repr(value), value.start(), value.start())],
        };
        // A key written twice: the later entry replaces the earlier, as a Python dict does
        // (`tp_size` and `tp-size` are two keys, and both become `--tp-size`).
        keyed.retain(|(k, _)| *k != key.text);
        keyed.push((key.text.to_string(), words));
    }
    // srtctl passes them in key order.
    crate::sort::sort_by(&mut keyed, |a, b| a.0.cmp(&b.0));
    keyed
}

/// Python's `str()` of a mapping or list as PyYAML reads it: its `repr`, which is not JSON.
fn python_repr(n: &Node) -> String {
    match n {
        Node::Null(_) => "None".into(),
        Node::Scalar(sc) => match py_scalar(sc) {
            Py::Text(t) if sc.style != crate::read::yaml::Style::Plain || crate::float::parse(&t).is_none() => {
                format!("'{}'", t.replace('\\', "\\\\").replace('\'', "\\'"))
            }
            _ => py_str(sc),
        },
        Node::Seq(s) => format!("[{}]", s.items.iter().map(python_repr).collect::<Vec<_>>().join(", ")),
        Node::Map(m) => {
            let entries: Vec<String> = m
                .entries
                .iter()
                .map(|(k, v)| format!("'{}': {}", k.text.replace('\'', "\\'"), python_repr(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// True when the text holds a `{name}` placeholder of a sweep.
fn has_placeholder(t: &str) -> bool {
    t.split('{').skip(1).any(|rest| {
        rest.split_once('}').is_some_and(|(name, _)| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::yaml;

    fn read(text: &str) -> Vec<Launch> {
        let docs = yaml::parse(text).expect("YAML");
        let mut out = Vec::new();
        super::super::manifest::scan_documents(&docs, 0, &Surroundings::default(), &mut out);
        out
    }

    fn argv(l: &Launch) -> String {
        l.args.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// A recipe in the older layout: one node of 8 H200s per side, with these role arguments.
    fn two_roles(prefill: &str, decode: &str) -> String {
        format!(
            "name: r\nmodel: {{path: m, container: c, precision: fp8}}\n\
             resources: {{gpu_type: h200, gpus_per_node: 8, prefill_nodes: 1, decode_nodes: 1}}\n\
             backend:\n  sglang_config:\n    prefill: {prefill}\n    decode: {decode}\n"
        )
    }

    fn env<'l>(l: &'l Launch, k: &str) -> Option<&'l str> {
        l.env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    const OLD: &str = "\
name: t
model: {path: dsr1, container: \"lmsysorg/sglang:v0.5.6.post2-cu129\", precision: fp8}
resources: {gpu_type: h200, gpus_per_node: 8, prefill_nodes: 1, prefill_workers: 2, decode_nodes: 2, decode_workers: 1}
environment: {NCCL_DEBUG: WARN, WHERE: \"{node}/{node_id}\"}
backend:
  prefill_environment: {A: \"1\", NCCL_DEBUG: INFO}
  sglang_config:
    prefill:
      tp_size: 4
      model-path: /model/
      served-model-name: deepseek-ai/DeepSeek-R1
      trust-remote-code: true
      enable-metrics: false
      max-total-tokens: null
      disaggregation-mode: prefill
    decode:
      tp-size: 16
      cuda-graph-bs: [1, 2, 4]
      json-model-override-args: {rope_scaling: {factor: 2.0}, name: x}
";

    #[test]
    fn workers_become_processes_as_srtctl_starts_them() {
        let l = read(OLD);
        assert_eq!(l.len(), 4, "two prefill workers of 4 GPUs, one decode worker of 16 GPUs on two nodes");
        let machines: Vec<&str> = l.iter().map(|l| l.machine.as_deref().unwrap()).collect();
        assert_eq!(machines, ["node0", "node0", "node1", "node2"]);
        assert_eq!(
            argv(&l[0]),
            "--model-path dsr1 --served-model-name deepseek-ai/DeepSeek-R1 --host 0.0.0.0 --port 6100 \
             --disaggregation-mode prefill --disaggregation-bootstrap-port 7200 \
             --disaggregation-mode prefill --tp-size 4 --trust-remote-code"
        );
        assert!(argv(&l[1]).contains("--port 6132 --disaggregation-mode prefill --disaggregation-bootstrap-port 7201"));
        assert_eq!(env(&l[0], "CUDA_VISIBLE_DEVICES"), Some("0,1,2,3"));
        assert_eq!(env(&l[1], "CUDA_VISIBLE_DEVICES"), Some("4,5,6,7"));
        // The role's environment, then the recipe's, which wins; placeholders filled per node.
        assert_eq!((env(&l[0], "A"), env(&l[0], "NCCL_DEBUG")), (Some("1"), Some("WARN")));
        assert_eq!(env(&l[3], "WHERE"), Some("node2/2"));
        for (k, d) in l[2..].iter().enumerate() {
            assert_eq!(
                argv(d),
                format!(
                    "--model-path dsr1 --served-model-name deepseek-ai/DeepSeek-R1 --host 0.0.0.0 --port 6100 \
                     --disaggregation-mode decode --dist-init-addr node1:8300 --nnodes 2 --node-rank {k} \
                     --cuda-graph-bs 1 2 4 --json-model-override-args {{'rope_scaling': {{'factor': 2.0}}, 'name': 'x'}} \
                     --tp-size 16"
                )
            );
            assert_eq!(env(d, "CUDA_VISIBLE_DEVICES"), None, "whole nodes");
        }
        assert!(l.iter().all(|l| l.entry == "python3 -m dynamo.sglang" && l.program == Program::Server));
        assert_eq!(l[0].gpu, Some(crate::deployment::Gpu::H200));
        assert_eq!(l[0].release, crate::release::Release::named("0.5.6.post2"));
        // srtctl's own words are marked, the recipe's point at their keys and values.
        assert!(l[0].args[..12].iter().all(|w| w.embed == Embed::Generated));
        let tp = l[0].args.iter().find(|w| w.text == "--tp-size").unwrap();
        assert_eq!(&OLD[tp.start..tp.end], "tp_size");
    }

    #[test]
    fn the_new_layout_colocates_and_starts_the_sglang_router() {
        let l = read(
            "schema: 2\nname: r\nmodel: {path: \"hf:Qwen/Qwen3-32B\", container: sglang, precision: bf16}\n\
             resources: {gpu_type: h100, gpus_per_node: 8}\n\
             frontend: {type: sglang-router, args: {policy: cache_aware}}\nengine: sglang\n\
             roles:\n  prefill: {nodes: 1, workers: 2, gpus: 2, args: {tp-size: 2}}\n  \
             decode: {nodes: colocate, workers: 1, gpus: 4, args: {tp-size: 4}}\n",
        );
        assert_eq!(l.len(), 4);
        let gpus: Vec<Option<&str>> = l[..3].iter().map(|l| env(l, "CUDA_VISIBLE_DEVICES")).collect();
        assert_eq!(gpus, [Some("0,1"), Some("2,3"), Some("4,5,6,7")]);
        assert!(l[..3]
            .iter()
            .all(|l| l.machine.as_deref() == Some("node0") && l.entry.ends_with("sglang.launch_server")));
        assert!(argv(&l[0]).starts_with("--model-path Qwen/Qwen3-32B --served-model-name Qwen3-32B "));
        assert_eq!(l[3].program, Program::Router);
        assert_eq!(
            argv(&l[3]),
            "--pd-disaggregation --prefill http://node0:6100 7200 --prefill http://node0:6132 7201 \
             --decode http://node0:6164 --host 0.0.0.0 --port 8000 --policy cache_aware"
        );
    }

    #[test]
    fn overrides_are_variants_each_a_deployment() {
        let text = "base:\n  name: b\n  model: {path: m, container: c, precision: fp8}\n  \
             resources: {gpu_type: gb200, prefill_nodes: 1, decode_nodes: 1}\n  \
             backend:\n    sglang_config:\n      prefill: {tp-size: 4, page-size: 64}\n      \
             decode: {tp-size: 4, page-size: 64, context-length: 8192}\n\
             override_big:\n  resources: {decode_nodes: 2}\n  backend: {sglang_config: {decode: {tp-size: 8}}}\n\
             zip_override_ctx:\n  backend:\n    sglang_config:\n      \
             decode: {page-size: [64, 32], context-length: [null, 4096]}\n";
        let l = crate::lint::lint(&[crate::lint::Input::new("r.yaml", text)], &crate::lint::Options::default());
        let names: Vec<&str> = l.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["b_big", "b_ctx_0", "b_ctx_1"]);
        let decode_nodes: Vec<usize> =
            l.groups.iter().map(|g| g.servers.iter().filter(|s| s.view.label.starts_with("decode")).count()).collect();
        assert_eq!(decode_nodes, [2, 1, 1]);
        assert_eq!(l.launches[0].gpu, Some(crate::deployment::Gpu::Gb200));
        // A `null` in a zip removes the key from that variant.
        let context = |g: usize| l.groups[g].servers.iter().find_map(|s| s.view.explicit("context_length"));
        assert_eq!((context(1), context(2).as_deref()), (None, Some("4096")));
        // Only the variant whose override drifts is reported, at the override's line.
        let errors: Vec<(usize, &str, u32)> = l
            .findings
            .iter()
            .filter(|f| f.finding.severity == crate::rules::Severity::Error)
            .map(|f| (f.group, f.finding.code, f.places[1].line))
            .collect();
        assert_eq!(errors, [(2, "PD001", 15)]);
        // The fix edits the override, never the base the other variants share.
        let edits = crate::lint::edit::edits(&l);
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!((&text[edits[0].start..edits[0].end], edits[0].text.as_str()), ("32", "64"));
        assert_eq!(text[..edits[0].start].lines().count(), 15);
    }

    #[test]
    fn a_missing_key_is_added_to_the_role_in_its_own_style() {
        let text = |decode: &str| two_roles("\n      tp-size: 8\n      kv-cache-dtype: fp8_e4m3\n", decode);
        for (decode, want) in [
            ("{tp-size: 8, cuda-graph-bs: [1, 2]}", "{tp-size: 8, cuda-graph-bs: [1, 2], kv-cache-dtype: fp8_e4m3}"),
            ("\n      tp-size: 8\n      cuda-graph-bs:\n        - 1", "      kv-cache-dtype: fp8_e4m3\n"),
        ] {
            let inputs = [crate::lint::Input::new("r.yaml", text(decode))];
            let fixed = crate::lint::edit::fix_all(&inputs, &crate::lint::Options::default());
            let after = &fixed.first().expect("a fix").after;
            assert!(after.trim_end().ends_with(want.trim_end()), "{after}");
            let l = crate::lint::lint(&[crate::lint::Input::new("r.yaml", after.clone())], &Default::default());
            assert!(l.findings.iter().all(|f| f.finding.code != "PD002"), "{:#?}", l.findings);
        }
    }

    #[test]
    fn aggregated_workers_are_plain_servers() {
        let l = read(
            "schema: 2\nname: a\nmodel: {path: m, container: c, precision: bf16}\n\
             resources: {gpu_type: h100, gpus_per_node: 8}\nfrontend: {type: sglang-router}\nengine: sglang\n\
             roles:\n  agg: {nodes: 1, workers: 2, gpus: 4, args: {tp-size: 4}}\n",
        );
        assert_eq!(l.len(), 2, "two workers, no router for aggregated ones");
        assert_eq!(argv(&l[0]), "--model-path m --served-model-name m --host 0.0.0.0 --port 6100 --tp-size 4");
        let l = read(
            "name: a\nmodel: {path: m, container: c, precision: bf16}\nresources: {agg_nodes: 1, agg_workers: 1}\n\
             backend:\n  aggregated_environment: {A: \"1\"}\n  sglang_config:\n    aggregated: {tp-size: 4}\n",
        );
        assert_eq!((l.len(), env(&l[0], "A")), (1, Some("1")));
    }

    #[test]
    fn a_key_given_twice_is_removed_only_from_its_own_line() {
        let text = |prefill: &str| two_roles(prefill, "{tp-size: 2, page-size: 16}");
        // `tp-size` and `tp_size` are one option: the first (in key order) is dead text.
        let block = text("\n      tp_size: 2\n      tp-size: 2  # tuned\n      page-size: 16");
        let l = crate::lint::lint(&[crate::lint::Input::new("r.yaml", block.clone())], &Default::default());
        assert!(l.findings.iter().any(|f| f.finding.code == "PD041"), "{:#?}", l.findings);
        let edits = crate::lint::edit::edits(&l);
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(&block[edits[0].start..edits[0].end], "      tp-size: 2  # tuned\n");
        // In a flow mapping the key shares its line: no edit.
        let flow = text("{tp_size: 2, tp-size: 2, page-size: 16}");
        let l = crate::lint::lint(&[crate::lint::Input::new("r.yaml", flow)], &Default::default());
        assert!(l.findings.iter().any(|f| f.finding.code == "PD041"));
        assert!(crate::lint::edit::edits(&l).is_empty());
    }

    #[test]
    fn sweeps_stay_unknown() {
        let l = read(
            "name: s\nmodel: {path: m, container: c, precision: fp8}\nresources: {gpu_type: h200, prefill_nodes: 1, decode_nodes: 1}\n\
             sweep: {mrr: [64, 128]}\nbackend:\n  sglang_config:\n    prefill: {tp-size: 8}\n    \
             decode: {tp-size: 8, max-running-requests: \"{mrr}\"}\n",
        );
        let mrr = l[1].args.iter().skip_while(|w| w.text != "--max-running-requests").nth(1).unwrap();
        assert!(mrr.is_symbolic(), "{mrr:?}");
    }

    #[test]
    fn each_recipe_is_a_deployment_of_its_own() {
        let recipe = |name: &str, page: u32| {
            format!(
                "name: {name}\nmodel: {{path: m, container: c, precision: bf16}}\n\
                 resources: {{gpu_type: h200, gpus_per_node: 8, prefill_nodes: 1, decode_nodes: 1}}\n\
                 frontend: {{type: sglang}}\nbackend:\n  sglang_config:\n    \
                 prefill: {{tp-size: 8, page-size: {page}}}\n    decode: {{tp-size: 8, page-size: {page}}}\n"
            )
        };
        // Same model, same node names and ports, different page sizes: not compared.
        let inputs = [
            crate::lint::Input::new("1k1k.yaml", recipe("a", 64)),
            crate::lint::Input::new("8k1k.yaml", recipe("b", 16)),
        ];
        let l = crate::lint::lint(&inputs, &crate::lint::Options::default());
        assert_eq!(l.groups.len(), 2);
        assert!(l.groups.iter().all(|g| g.servers.len() == 2 && g.router.is_some()));
        assert!(l.findings.iter().all(|f| f.finding.severity == crate::rules::Severity::Note), "{:#?}", l.findings);
    }

    #[test]
    fn other_documents_are_not_recipes() {
        for text in [
            "apiVersion: v1\nkind: Pod\nmodel: {path: m}\nroles: {prefill: {args: {tp-size: 1}}}\n",
            "name: t\nmodel: {path: m}\nbackend: {type: trtllm, sglang_config: {prefill: {tp-size: 1}}}\n",
            "name: t\nbackend: {sglang_config: {prefill: {tp-size: 1}}}\n",
            "name: t\nmodel: {path: m}\nresources: {prefill_nodes: 1}\n",
            "name: t\nmodel: {path: m}\nroles: {prefill: 5, decode: [1]}\n",
            "name: t\nmodel: {path: m}\nbackend: {sglang_config: {prefill: [1, 2], decode: x}}\n",
        ] {
            let docs = yaml::parse(text).unwrap();
            assert!(!is_recipe(&docs[0]), "{text}");
        }
    }
}
