//! Launches inside YAML manifests: the `command`/`args` of containers anywhere in a document
//! (Deployments, StatefulSets, Jobs, LeaderWorkerSets, RBG roles, OME runtimes' `runner`s, Dynamo
//! services' `mainContainer`s), and docker-compose services' `entrypoint`/`command`. A container
//! is any mapping with `command` or `args`; its role hints come from the names around it.
//!
//! The pods a controller makes are read as it makes them: each group of a LeaderWorkerSet and of
//! a RoleBasedGroup's leader-worker role (their pod names, leader addresses, indices and index
//! labels), the replicas of an RBG role or a Dynamo service, and each pod of a multi-node Dynamo
//! service with the `--dist-init-addr`, `--nnodes` and `--node-rank` its operator adds.

use std::sync::Arc;

use super::launch::{
    gpu_in_text, release_for, scan_scripts, scan_shell, take_launch, version_in_image, Launch, LwsGroup, NamedPort,
    Pod, PodMeta, Service, ServicePort, Surroundings, Target,
};
use super::shell::{Lexer, Vars};
use crate::read::source::{Embed, SrcMap, Word};
use crate::read::yaml::{Map, Node, Scalar};
use crate::render::cluster::{self, Toleration, Volume, MODEL_CACHE_MOUNT};

/// How `$` in list items is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// Kubernetes: `$(VAR)` from the container's `env`, `$$` is `$`.
    Kubernetes,
    /// Compose: `${VAR}`, `${VAR:-default}`, `$VAR` from the environment, `$$` is `$`.
    Compose,
}

/// Finds every launch in the documents of one YAML file.
pub fn scan_documents(docs: &[Node], file: usize, base: &Surroundings, out: &mut Vec<Launch>) {
    for doc in docs {
        let dialect = if doc.get("services").is_some() && doc.get("apiVersion").is_none() {
            Dialect::Compose
        } else {
            Dialect::Kubernetes
        };
        if super::recipe::is_recipe(doc) {
            super::recipe::scan(doc, file, base, out);
            continue;
        }
        let mut around = base.clone();
        around.isolated = dialect == Dialect::Kubernetes;
        let metadata = doc.get("metadata");
        let namespace = metadata.and_then(|m| m.get("namespace")).and_then(Node::str);
        // What the object's metadata says of all its pods, in the `kubernetes` section's words.
        let topology = metadata
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(crate::render::EXCLUSIVE_TOPOLOGY))
            .and_then(Node::str)
            .filter(|key| cluster::is_label_key(key));
        if around.isolated && (namespace.is_some() || topology.is_some()) {
            let mut pod = Pod::default();
            pod.kubernetes.namespace = namespace.filter(|ns| cluster::is_label(ns)).map(str::to_owned);
            pod.kubernetes.exclusive_topology = topology.map(str::to_owned);
            around.pod = Some(Arc::new(pod));
        }
        let Some(name) = metadata.and_then(|m| m.get("name")).and_then(Node::str) else {
            walk(doc, file, dialect, &mut around, out, 0);
            continue;
        };
        around.hints.push(name.to_ascii_lowercase());
        if doc.get("kind").and_then(Node::str) == Some("RoleBasedGroup") {
            around.rbg = Some((name.to_owned(), namespace.map(|n| format!(".{n}")).unwrap_or_default()));
        }
        if doc.get("kind").and_then(Node::str) != Some("LeaderWorkerSet") {
            walk(doc, file, dialect, &mut around, out, 0);
            continue;
        }
        // Each replica of a LeaderWorkerSet is a group of its own, whose leader is `<name>-<group>`.
        let namespace = namespace.map(|n| format!(".{n}")).unwrap_or_default();
        for group in 0..lws_groups(doc) {
            around.lws_group =
                Some(LwsGroup { name: name.to_owned(), group, namespace: namespace.clone(), rbg: false });
            walk(doc, file, dialect, &mut around, out, 0);
        }
    }
}

/// The Services among the documents of one YAML file whose ports can be read: a list of ports,
/// each with its number (Kubernetes refuses other Services, so nothing is said of them).
pub fn services(docs: &[Node], file: usize) -> Vec<Service> {
    let mut out = Vec::new();
    for doc in docs.iter().filter(|d| d.get("kind").and_then(Node::str) == Some("Service")) {
        let metadata = doc.get("metadata");
        let Some(name) = metadata.and_then(|m| m.get("name")).and_then(Node::str) else { continue };
        let spec = doc.get("spec");
        let headless = spec.and_then(|s| s.get("clusterIP")).and_then(Node::str) == Some("None");
        let port_of = |n: &Node| n.str().and_then(|s| s.trim().parse::<u16>().ok()).filter(|p| *p != 0);
        // A target that is no port number names a port of the pods' containers.
        let target_of = |n: &Node| match port_of(n) {
            Some(p) => Target::Port(p),
            None => Target::Named(n.str().unwrap_or_default().to_owned()),
        };
        let (at, ports) = match spec.and_then(|s| s.entry("ports")) {
            Some((key, list @ Node::Seq(_))) => {
                let read = list.items().iter().map(|p| {
                    let port = port_of(p.get("port")?)?;
                    Some(ServicePort { port, target: p.get("targetPort").map_or(Target::Port(port), target_of) })
                });
                match read.collect::<Option<Vec<_>>>() {
                    Some(ports) => (key.start, ports),
                    None => continue,
                }
            }
            None if headless => (doc.start(), Vec::new()),
            _ => continue,
        };
        let selector = match spec.and_then(|s| s.get("selector")) {
            Some(Node::Map(m)) => {
                m.entries.iter().filter_map(|(k, v)| Some(format!("{}={}", k.text, v.str()?))).collect()
            }
            _ => Vec::new(),
        };
        out.push(Service {
            name: name.to_owned(),
            namespace: metadata.and_then(|m| m.get("namespace")).and_then(Node::str).map(str::to_owned),
            headless,
            ports,
            selector,
            file,
            at,
        });
    }
    out
}

/// The most pods of all groups of one LeaderWorkerSet read.
const MAX_LWS_PODS: u32 = 256;

/// The groups of a LeaderWorkerSet read: its `replicas` (1 when not a number), at most as many as
/// keep its pods within [`MAX_LWS_PODS`].
fn lws_groups(doc: &Node) -> u32 {
    let spec = doc.get("spec");
    let replicas = spec.and_then(|s| s.get("replicas")).and_then(count).unwrap_or(1);
    let size = spec.and_then(|s| s.get("leaderWorkerTemplate")).and_then(|t| t.get("size")).and_then(count);
    replicas.min(MAX_LWS_PODS / size.unwrap_or(1).clamp(1, MAX_LWS_GROUP))
}

/// A count in a manifest (`replicas`, `size`), written plain or quoted.
fn count(n: &Node) -> Option<u32> {
    n.str()?.trim().parse().ok()
}

/// Keys whose values name a role.
const ROLE_KEYS: &[&str] = &["name", "subComponentType", "componentType", "role", "component"];

/// What the walk reads from a mapping's keys, found in one pass over its entries. Where a key is
/// written twice the last entry wins, as `Node::get` reads.
#[derive(Default)]
struct Keys<'n, 'a> {
    /// The value of each of ROLE_KEYS, in that order.
    roles: [Option<&'n Node<'a>>; ROLE_KEYS.len()],
    /// The GPU model named under the first key that names one.
    gpu: Option<crate::deployment::Gpu>,
    /// True when some `command`, `args` or `entrypoint` is not a mapping: a container.
    container: bool,
    // The values of the keys a container reads.
    image: Option<&'n Node<'a>>,
    env: Option<&'n Node<'a>>,
    environment: Option<&'n Node<'a>>,
    command: Option<&'n Node<'a>>,
    args: Option<&'n Node<'a>>,
    entrypoint: Option<&'n Node<'a>>,
    volume_mounts: Option<&'n Node<'a>>,
    ports: Option<&'n Node<'a>>,
    metadata: Option<&'n Node<'a>>,
    // The values of the keys of a pod spec that the deployment's `kubernetes` section writes.
    node_selector: Option<&'n Node<'a>>,
    tolerations: Option<&'n Node<'a>>,
    pull_secrets: Option<&'n Node<'a>>,
    volumes: Option<&'n Node<'a>>,
}

impl<'n, 'a> Keys<'n, 'a> {
    /// Classifies the keys of `m`.
    fn of(m: &'n Map<'a>) -> Keys<'n, 'a> {
        let mut keys = Keys::default();
        for (k, v) in &m.entries {
            // A command's key makes the mapping a container; the others are read as they are.
            let (slot, command) = match &*k.text {
                "command" => (&mut keys.command, true),
                "args" => (&mut keys.args, true),
                "entrypoint" => (&mut keys.entrypoint, true),
                "image" => (&mut keys.image, false),
                "env" => (&mut keys.env, false),
                "environment" => (&mut keys.environment, false),
                "volumeMounts" => (&mut keys.volume_mounts, false),
                "ports" => (&mut keys.ports, false),
                "metadata" => (&mut keys.metadata, false),
                "tolerations" => (&mut keys.tolerations, false),
                "imagePullSecrets" => (&mut keys.pull_secrets, false),
                "volumes" => (&mut keys.volumes, false),
                key => {
                    if key == "nodeSelector" {
                        keys.node_selector = Some(v);
                    }
                    if let Some(i) = ROLE_KEYS.iter().position(|r| key == *r) {
                        keys.roles[i] = Some(v);
                    } else if keys.gpu.is_none() && names_gpu(key) {
                        keys.gpu = gpu_under(v, 0);
                    }
                    continue;
                }
            };
            *slot = Some(v);
            keys.container |= command && !matches!(v, Node::Map(_));
        }
        keys
    }
}

fn walk(node: &Node, file: usize, dialect: Dialect, around: &mut Surroundings, out: &mut Vec<Launch>, depth: usize) {
    if depth > 48 {
        return;
    }
    match node {
        Node::Map(m) => {
            let saved = (around.hints.len(), around.gpu, around.pod.clone(), around.meta.clone(), around.pod_at);
            let keys = Keys::of(m);
            if dialect == Dialect::Kubernetes && m.entries.iter().any(|(k, _)| k.text == "containers") {
                around.pod_at = Some(node.start());
            }
            // A role of a RoleBasedGroup, or a service of a DynamoGraphDeployment: its replicas are
            // its pods' (or groups') count.
            let replicas = node.get("replicas").and_then(count);
            let owner = match (&around.rbg, node.get("name").and_then(Node::str), node.get("componentType")) {
                (Some(_), Some(name), _) => Some(Some(name)),
                (None, _, Some(_)) => Some(None),
                _ => None,
            };
            if let (Some(owner), Some(replicas)) = (owner, replicas) {
                let mut meta = around.meta.as_deref().cloned().unwrap_or_default();
                meta.replicas = Some(replicas);
                meta.owner = owner.map(str::to_owned);
                around.meta = Some(Arc::new(meta));
            }
            if dialect == Dialect::Kubernetes {
                if let Some(pod) = pod_settings(&keys, around.pod.as_deref()) {
                    around.pod = Some(Arc::new(pod));
                }
                if let Some(meta) = keys.metadata.and_then(|md| pod_meta(md, node, around.meta.as_deref())) {
                    around.meta = Some(Arc::new(meta));
                }
            }
            for v in keys.roles.into_iter().flatten().filter_map(Node::str) {
                push_hint(&mut around.hints, v);
            }
            if let Some(g) = keys.gpu {
                around.gpu = Some(g);
            }
            if keys.container {
                container(&keys, file, dialect, around, out);
            }
            for (k, v) in &m.entries {
                if keys.container && matches!(&*k.text, "command" | "args" | "entrypoint" | "env" | "environment") {
                    continue;
                }
                let before = around.hints.len();
                match &*k.text {
                    "engineConfig" | "engine" => around.hints.push("prefill".to_owned()),
                    "decoderConfig" | "decoder" => around.hints.push("decode".to_owned()),
                    "routerConfig" => around.hints.push("router".to_owned()),
                    other => push_hint(&mut around.hints, other),
                }
                // Once per group: a template nested in another one's pods is read once per outer
                // pod, not 64 times more at every level.
                let inside_a_pod = || around.env.iter().any(|(name, _)| INDEX_VARS.contains(&name.as_str()));
                if let Some((nodes, at)) = dynamo_nodes(v).filter(|_| !inside_a_pod()) {
                    dynamo_groups(&k.text, v, (nodes, at), file, dialect, around, out, depth);
                    around.hints.truncate(before);
                    continue;
                }
                match group_pods(node, &k.text, v).filter(|_| !inside_a_pod()) {
                    Some(pods) => {
                        // A RoleBasedGroup's leader-worker role: each of its replicas is a group
                        // of its own, `<group>-<role>-<replica>`.
                        let role = node.get("name").and_then(Node::str);
                        let rbg = match (&around.rbg, role, pods.vars) {
                            (Some((name, namespace)), Some(role), RBG_LWP_VARS) => {
                                Some((format!("{name}-{role}"), namespace.clone()))
                            }
                            _ => None,
                        };
                        let groups = match &rbg {
                            Some(_) => node.get("replicas").map_or(Some(1), count).unwrap_or(1),
                            None => 1,
                        };
                        let groups = groups.min(MAX_LWS_PODS / pods.size.clamp(1, MAX_LWS_GROUP));
                        let outer = around.lws_group.clone();
                        for group in 0..groups {
                            if let Some((name, namespace)) = &rbg {
                                let namespace = namespace.clone();
                                around.lws_group = Some(LwsGroup { name: name.clone(), group, namespace, rbg: true });
                            }
                            for rank in pods.ranks.clone() {
                                let env_len = around.env.len();
                                around.env.push((pods.vars.0.to_owned(), pods.size.to_string()));
                                around.env.push((pods.vars.1.to_owned(), rank.to_string()));
                                // The leader's address tells the groups of two sets apart; each
                                // pod is a machine of its own, named after its set and group.
                                let machine = around.machine.clone();
                                let leader = if pods.vars == LWS_VARS { LWS_LEADER } else { RBG_LWP_LEADER };
                                if let Some(lws) =
                                    around.lws_group.as_ref().filter(|l| l.rbg == (pods.vars != LWS_VARS))
                                {
                                    around.env.push((leader.to_owned(), lws.leader_address()));
                                    around.machine = Some(lws.pod(rank));
                                }
                                walk(v, file, dialect, around, out, depth + 1);
                                around.env.truncate(env_len);
                                around.machine = machine;
                            }
                        }
                        around.lws_group = outer;
                    }
                    None => walk(v, file, dialect, around, out, depth + 1),
                }
                around.hints.truncate(before);
            }
            around.hints.truncate(saved.0);
            around.gpu = saved.1;
            around.pod = saved.2;
            around.meta = saved.3;
            around.pod_at = saved.4;
        }
        Node::Seq(s) => {
            for item in &s.items {
                walk(item, file, dialect, around, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// The port Dynamo's operator gives a multi-node SGLang worker's `--dist-init-addr`.
const DYNAMO_DIST_INIT_PORT: u16 = 29500;

/// A DynamoGraphDeployment service (`componentType` beside it) of several nodes per replica
/// (`multinode.nodeCount`): the count, and where the count is written.
fn dynamo_nodes(service: &Node) -> Option<(u32, usize)> {
    service.get("componentType")?;
    let (key, count_node) = service.get("multinode")?.entry("nodeCount")?;
    let n = count(count_node).filter(|n| *n >= 2)?;
    Some((n.min(MAX_LWS_GROUP), key.start))
}

/// The pods of a multi-node Dynamo worker service `name`: each replica a group of `nodes` pods,
/// `<name>-<replica>-<k>` here, to whose command the operator adds `--dist-init-addr
/// <leader>:29500 --nnodes <nodes> --node-rank <k>` (its SGLang backend's `getMultinodeFlags`).
#[allow(clippy::too_many_arguments)]
fn dynamo_groups(
    name: &str,
    service: &Node,
    (nodes, at): (u32, usize),
    file: usize,
    dialect: Dialect,
    around: &mut Surroundings,
    out: &mut Vec<Launch>,
    depth: usize,
) {
    let replicas = service.get("replicas").map_or(Some(1), count).unwrap_or(1);
    let groups = replicas.min(MAX_LWS_PODS / nodes);
    let machine = around.machine.clone();
    let appended = std::mem::take(&mut around.appended);
    // The replicas are groups read one by one, not copies made by the reconstruction.
    let meta = around.meta.clone();
    if let Some(m) = around.meta.as_deref() {
        let mut m = m.clone();
        m.replicas = None;
        around.meta = Some(Arc::new(m));
    }
    for g in 0..groups {
        let leader = format!("{name}-{g}-0");
        for k in 0..nodes {
            around.machine = Some(format!("{name}-{g}-{k}"));
            around.appended = [
                "--dist-init-addr".to_owned(),
                format!("{leader}:{DYNAMO_DIST_INIT_PORT}"),
                "--nnodes".to_owned(),
                nodes.to_string(),
                "--node-rank".to_owned(),
                k.to_string(),
            ]
            .into_iter()
            .map(|w| (w, at, at + "nodeCount".len()))
            .collect();
            walk(service, file, dialect, around, out, depth + 1);
        }
    }
    around.machine = machine;
    around.appended = appended;
    around.meta = meta;
}

/// The most pods of one LeaderWorkerSet group read (the linter makes at most this many nodes of
/// an instance anyway).
const MAX_LWS_GROUP: u32 = 64;

/// The variables holding a leader-worker group's size and a pod's index in it: LeaderWorkerSet's
/// (also under a RoleBasedGroup `leaderWorkerSet`, which creates one), and those of RoleBasedGroup's
/// `leaderWorkerPattern`.
const LWS_VARS: (&str, &str) = ("LWS_GROUP_SIZE", "LWS_WORKER_INDEX");
const RBG_LWP_VARS: (&str, &str) = ("RBG_LWP_GROUP_SIZE", "RBG_LWP_WORKER_INDEX");
const INDEX_VARS: [&str; 2] = [LWS_VARS.1, RBG_LWP_VARS.1];
const LWS_LEADER: &str = "LWS_LEADER_ADDRESS";
const RBG_LWP_LEADER: &str = "RBG_LWP_LEADER_ADDRESS";
/// The label LeaderWorkerSet gives each pod with its set's name.
const LWS_NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";
/// The variables a leader-worker controller gives each pod, which the linter sets as it reads
/// the pods: the pods' environment, but not the deployment's.
pub const POD_VARS: [&str; 6] = [LWS_VARS.0, LWS_VARS.1, LWS_LEADER, RBG_LWP_VARS.0, RBG_LWP_VARS.1, RBG_LWP_LEADER];

/// The pods that one template of a leader-worker group starts.
struct Pods {
    /// The group size.
    size: u32,
    /// The worker indices of the pods the template starts (the leader is 0).
    ranks: std::ops::Range<u32>,
    /// The variables that hold the size and the index.
    vars: (&'static str, &'static str),
}

/// The pods that the value `value` of `key` in mapping `node` starts, when it is the template of
/// a leader-worker group, each pod getting the group's variables (which SGLang's `--nnodes` and
/// `--node-rank` read):
/// - a LeaderWorkerSet's `leaderTemplate` (index 0) and `workerTemplate` (1.., or 0.. without a
///   leader template) under its `leaderWorkerTemplate`;
/// - a RoleBasedGroup role's `leaderWorkerPattern` (`size`, `template`) and the `template` of a role
///   with a `leaderWorkerSet` (`size`): one template for every pod. Their leader and worker
///   patches are merged into it by the operator; when a patch changes the containers, the pods
///   differ in ways not read here, so the template is read once, as a plain one.
fn group_pods(node: &Node, key: &str, value: &Node) -> Option<Pods> {
    let size_of = |n: Option<&Node>| match n {
        None => Some(1),
        Some(n) => count(n).filter(|s| *s >= 1),
    };
    let patches_containers = |group: &Node, patches: [&str; 2]| {
        patches.iter().any(|p| group.get(p).and_then(|t| t.get("spec")).and_then(|s| s.get("containers")).is_some())
    };
    let (size, first, vars) = match key {
        "leaderTemplate" | "workerTemplate" if node.get("workerTemplate").is_some() => {
            let size = size_of(node.get("size"))?;
            match key {
                "leaderTemplate" => return Some(Pods { size, ranks: 0..1, vars: LWS_VARS }),
                _ if node.get("leaderTemplate").is_some() => (size, 1, LWS_VARS),
                _ => (size, 0, LWS_VARS),
            }
        }
        "leaderWorkerPattern" if !patches_containers(value, ["leaderTemplatePatch", "workerTemplatePatch"]) => {
            (size_of(value.get("size"))?, 0, RBG_LWP_VARS)
        }
        "template" => {
            let lws = node.get("leaderWorkerSet").filter(|l| matches!(l, Node::Map(_)))?;
            if patches_containers(lws, ["patchLeaderTemplate", "patchWorkerTemplate"]) {
                return None;
            }
            (size_of(lws.get("size"))?, 0, LWS_VARS)
        }
        _ => return None,
    };
    Some(Pods { size, ranks: first..size.min(MAX_LWS_GROUP), vars })
}

/// Keeps a name as a role hint when it names a role (lowercase).
fn push_hint(hints: &mut Vec<String>, name: &str) {
    if has_role_word(name) {
        hints.push(name.to_ascii_lowercase());
    }
}

/// True when `name` holds `prefill`, `decode` or `router` in any case.
fn has_role_word(name: &str) -> bool {
    let b = name.as_bytes();
    // Each word starts with a letter no other starts with: look at those positions only, up to
    // where the shortest word (six letters) still fits. `| 0x20` lowercases the three letters
    // and maps no other byte onto them.
    (0..(b.len() + 1).saturating_sub(6)).any(|i| {
        let rest = &b[i..];
        match b[i] | 0x20 {
            b'p' => rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"prefill"),
            b'd' => rest[..6].eq_ignore_ascii_case(b"decode"),
            b'r' => rest[..6].eq_ignore_ascii_case(b"router"),
            _ => false,
        }
    })
}

/// True for a key under which a node selector, affinity or label names the GPU model.
fn names_gpu(key: &str) -> bool {
    ["nodeSelector", "affinity", "acceleratorClass", "accelerator"].iter().any(|n| key.eq_ignore_ascii_case(n))
        // Both words are at least 10 bytes long: shorter keys cannot hold them.
        || key.len() >= 10 && (key.contains("gpu.product") || key.contains("ccelerator"))
}

/// The GPU model named by the first scalar under `n`.
fn gpu_under(n: &Node, depth: usize) -> Option<crate::deployment::Gpu> {
    if depth > 8 {
        return None;
    }
    match n {
        Node::Scalar(s) => gpu_in_text(&s.text),
        Node::Seq(s) => s.items.iter().find_map(|i| gpu_under(i, depth + 1)),
        Node::Map(m) => m.entries.iter().find_map(|(_, v)| gpu_under(v, depth + 1)),
        Node::Null(_) => None,
    }
}

/// The settings of a pod spec (`keys`) inside an object (`outer`: its namespace), as the
/// deployment's `kubernetes` section writes them; `None` when it sets none. What that section
/// cannot say (a selector value no label can have, a toleration of every key) is left out.
fn pod_settings(keys: &Keys, outer: Option<&Pod>) -> Option<Pod> {
    keys.node_selector.or(keys.tolerations).or(keys.pull_secrets).or(keys.volumes)?;
    let mut pod = Pod { kubernetes: outer.map(|p| p.kubernetes.clone()).unwrap_or_default(), volumes: Vec::new() };
    let k = &mut pod.kubernetes;
    if let Some(Node::Map(m)) = keys.node_selector {
        for (key, v) in &m.entries {
            if let Some(v) = v.str().filter(|v| cluster::is_label_key(&key.text) && cluster::is_label_value(v)) {
                k.node_selector.insert(key.text.to_string(), v.to_owned());
            }
        }
    }
    for t in keys.tolerations.map(Node::items).unwrap_or_default() {
        let field = |name: &str| t.get(name).and_then(Node::str);
        if let Some(t) = field("key")
            .and_then(|key| Toleration::from_manifest(key, field("operator"), field("value"), field("effect")))
        {
            k.tolerations.push(t.to_string());
        }
    }
    for s in keys.pull_secrets.map(Node::items).unwrap_or_default() {
        if let Some(name) = s.get("name").and_then(Node::str).filter(|n| cluster::is_subdomain(n)) {
            k.image_pull_secrets.push(name.to_owned());
        }
    }
    for v in keys.volumes.map(Node::items).unwrap_or_default() {
        let source = |key: &str, field: &str| v.get(key).and_then(|s| s.get(field)).and_then(Node::str);
        let volume = match (source("persistentVolumeClaim", "claimName"), source("hostPath", "path")) {
            (Some(claim), _) if cluster::is_subdomain(claim) => Volume::Claim(claim.to_owned()),
            (None, Some(path)) if path.starts_with('/') => Volume::Host(path.to_owned()),
            _ => continue,
        };
        if let Some(name) = v.get("name").and_then(Node::str) {
            pod.volumes.push((name.to_owned(), volume));
        }
    }
    Some(pod)
}

/// The labels, annotations and namespace of the `metadata` of `object` (a pod, a pod template,
/// or an object with pods of its own); the namespace of the object around a template is the
/// template's.
fn pod_meta(metadata: &Node, object: &Node, outer: Option<&PodMeta>) -> Option<PodMeta> {
    let Node::Map(_) = metadata else { return None };
    let pairs = |key: &str| -> Vec<(String, String)> {
        let Some(Node::Map(m)) = metadata.get(key) else { return Vec::new() };
        m.entries.iter().filter_map(|(k, v)| Some((k.text.to_string(), v.str()?.to_owned()))).collect()
    };
    let namespace = metadata.get("namespace").and_then(Node::str).map(str::to_owned);
    let spec = object.get("spec");
    let own = spec.and_then(|s| s.get("replicas")).and_then(count);
    let owner = match own {
        Some(_) => metadata.get("name").and_then(Node::str).map(str::to_owned),
        None => outer.and_then(|o| o.owner.clone()),
    };
    Some(PodMeta {
        labels: pairs("labels"),
        annotations: pairs("annotations"),
        namespace: namespace.or_else(|| outer.and_then(|o| o.namespace.clone())),
        pod: spec.and_then(|s| s.get("containers")).is_some(),
        replicas: own.or_else(|| outer.and_then(|o| o.replicas)),
        owner,
        ports: Vec::new(),
    })
}

/// The cluster settings of a container: its pod's, its variables read from Secrets, and the
/// volume it mounts as the Hugging Face cache. `None` when there are none.
fn container_settings(keys: &Keys, pod: Option<&Pod>, meta: Option<&PodMeta>) -> Option<crate::deployment::Kubernetes> {
    let mut k = pod.map(|p| p.kubernetes.clone()).unwrap_or_default();
    // The pod's own labels and annotations, less those pdlaunch and LeaderWorkerSet write.
    if let Some(meta) = meta.filter(|m| m.pod) {
        let own = |pairs: &[(String, String)]| {
            let mut own = std::collections::BTreeMap::new();
            own.extend(pairs.iter().filter(|(key, _)| !cluster::is_reserved(key)).cloned());
            own
        };
        k.labels = own(&meta.labels);
        k.labels.retain(|key, value| cluster::is_label_key(key) && cluster::is_label_value(value));
        k.pod_annotations = own(&meta.annotations);
        k.pod_annotations.retain(|key, _| cluster::is_label_key(key));
    }
    for item in keys.env.map(Node::items).unwrap_or_default() {
        let secret = item.get("valueFrom").and_then(|v| v.get("secretKeyRef"));
        let field = |name: &str| secret.and_then(|s| s.get(name)).and_then(Node::str);
        if let (Some(var), Some(name), Some(key)) = (item.get("name").and_then(Node::str), field("name"), field("key"))
        {
            k.secret_env.insert(var.to_owned(), format!("{name}/{key}"));
        }
    }
    let cache = keys.volume_mounts.map(Node::items).unwrap_or_default().iter().find_map(|m| {
        (m.get("mountPath").and_then(Node::str) == Some(MODEL_CACHE_MOUNT))
            .then(|| m.get("name").and_then(Node::str))?
    });
    if let (Some(name), Some(pod)) = (cache, pod) {
        k.model_cache = pod.volumes.iter().find(|(n, _)| n == name).map(|(_, v)| match v {
            Volume::Claim(claim) => claim.clone(),
            Volume::Host(path) => path.clone(),
        });
    }
    // Only what the section can say.
    k.secret_env.retain(|var, from| cluster::secret_ref(var, from).is_ok());
    (!k.is_empty()).then_some(k)
}

/// Scans one container's command with its image's release and its environment added to
/// `around`, which it leaves as it found it.
fn container(keys: &Keys, file: usize, dialect: Dialect, around: &mut Surroundings, out: &mut Vec<Launch>) {
    let (release, version, env_len) = (around.release, around.version.clone(), around.env.len());
    let image = keys.image.and_then(Node::str);
    if let Some((r, v)) = image.and_then(version_in_image).and_then(release_for) {
        around.release = Some(r);
        around.version = v;
    }
    let outer_image = std::mem::replace(&mut around.image, image.map(str::to_owned));
    let settings = match dialect {
        Dialect::Kubernetes => container_settings(keys, around.pod.as_deref(), around.meta.as_deref()).map(Arc::new),
        Dialect::Compose => None,
    };
    let outer_settings = std::mem::replace(&mut around.kubernetes, settings);
    // A LeaderWorkerSet labels each pod with its set and its index in the group; a
    // RoleBasedGroup with its index.
    let outer_meta = around.meta.clone();
    if let Some(lws) = &around.lws_group {
        let index = if lws.rbg { RBG_LWP_VARS.1 } else { LWS_VARS.1 };
        if let Some(rank) = around.env.iter().rev().find(|(k, _)| k == index).map(|(_, v)| v.clone()) {
            let mut meta = around.meta.as_deref().cloned().unwrap_or_default();
            if lws.rbg {
                meta.labels.push((crate::render::RBG_INDEX_LABEL.to_owned(), rank));
            } else {
                meta.labels.push((LWS_NAME_LABEL.to_owned(), lws.name.clone()));
                meta.labels.push((crate::render::WORKER_INDEX_LABEL.to_owned(), rank));
            }
            around.meta = Some(Arc::new(meta));
        }
    }
    // The container's named ports, which a Service's `targetPort` may name.
    let named: Vec<NamedPort> = keys
        .ports
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let name = p.get("name")?.str()?.to_owned();
            Some(NamedPort { name, number: p.get("containerPort")?.str()?.trim().parse().ok()? })
        })
        .collect();
    if !named.is_empty() && dialect == Dialect::Kubernetes {
        let mut meta = around.meta.as_deref().cloned().unwrap_or_default();
        meta.ports = named;
        around.meta = Some(Arc::new(meta));
    }
    match keys.env.or(keys.environment) {
        Some(Node::Seq(s)) => {
            for item in &s.items {
                match item {
                    Node::Map(_) => {
                        if let (Some(n), Some(Node::Scalar(v))) =
                            (item.get("name").and_then(Node::str), item.get("value"))
                        {
                            // Kubernetes expands a value as it does a command's words.
                            let value = match v.text.contains('$') && dialect == Dialect::Kubernetes {
                                true => {
                                    expand_dollars(item_word(v, file, Embed::Generated, true), v, dialect, &around.env)
                                        .text
                                }
                                false => v.text.to_string(),
                            };
                            around.env.push((n.to_owned(), value));
                        }
                    }
                    Node::Scalar(s) => {
                        if let Some((k, v)) = s.text.split_once('=') {
                            around.env.push((k.to_owned(), v.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(Node::Map(em)) => {
            for (k, v) in &em.entries {
                if let Some(v) = v.str() {
                    around.env.push((k.text.to_string(), v.to_owned()));
                }
            }
        }
        _ => {}
    }
    let mut words = command_words(keys, file, dialect, &around.env);
    if !words.is_empty() {
        words.extend(around.appended.iter().map(|(text, start, end)| Word {
            text: text.clone(),
            file,
            start: *start,
            end: *end,
            unknown: Vec::new(),
            map: None,
            embed: Embed::Generated,
        }));
        let before = out.len();
        scan_container_words(words, file, around, out);
        // `docker compose up` starts every service of a file side by side on one Docker host.
        if dialect == Dialect::Compose {
            for l in &mut out[before..] {
                l.background = true;
            }
        }
    }
    around.env.truncate(env_len);
    around.release = release;
    around.version = version;
    around.image = outer_image;
    around.kubernetes = outer_settings;
    around.meta = outer_meta;
}

/// The words of a container's command: `command` then `args` (Kubernetes), `entrypoint` then
/// `command` (compose); a list's items are words, a string is split like a shell.
fn command_words(keys: &Keys, file: usize, dialect: Dialect, env: &[(String, String)]) -> Vec<Word> {
    let order = match dialect {
        Dialect::Kubernetes => [keys.command, keys.args],
        Dialect::Compose => [keys.entrypoint, keys.command],
    };
    let mut words: Vec<Word> = Vec::new();
    for v in order.into_iter().flatten() {
        match v {
            Node::Seq(s) => {
                for item in &s.items {
                    if let Node::Scalar(sc) = item {
                        // One look at the bytes for most items: those with neither space nor `$`.
                        let keep = sc.text.bytes().any(|b| b == b'$' || b.is_ascii_whitespace());
                        let w = item_word(sc, file, Embed::YamlItem { flow: s.flow, indent: s.indent }, keep);
                        words.push(if keep && sc.text.contains('$') { expand_dollars(w, sc, dialect, env) } else { w });
                    }
                }
            }
            Node::Scalar(sc) => {
                // A string command: split like a shell (compose does the same with shlex).
                let mut lx = Lexer::new(&sc.text, &sc.map, file, true);
                let vars = Vars::default();
                while lx.read_command(&vars) {
                    words.extend((0..lx.len()).map(|i| lx.take_word(i)));
                }
            }
            _ => {}
        }
    }
    words
}

/// Looks for a launch in a container's command words.
fn scan_container_words(words: Vec<Word>, file: usize, around: &Surroundings, out: &mut Vec<Launch>) {
    let vars = Vars::default();
    let env = &around.env;
    // A launch takes the words as its arguments: no copy.
    let Err(words) = take_launch(words, env, around, out) else { return };
    let before = out.len();
    scan_scripts(&words, env, &vars, around, out, 0);
    if out.len() == before {
        // A script in one item that the word scan did not recognise as `sh -c` (e.g. `args: [|]`).
        for w in &words {
            if let (Some(map), true) = (&w.map, w.text.contains("sglang")) {
                let mut vars = Vars::default();
                scan_shell(&w.text, map, file, true, &mut vars, around, out, 1);
            }
        }
    }
}

/// A list item as a word; `keep_map` for one that may hold a nested script (a space or a `$`).
fn item_word(sc: &Scalar, file: usize, embed: Embed, keep_map: bool) -> Word {
    Word {
        text: sc.text.to_string(),
        file,
        start: sc.start,
        end: sc.end,
        unknown: Vec::new(),
        map: keep_map.then(|| sc.map.clone()),
        embed,
    }
}

/// Kubernetes `$(VAR)` / compose `${VAR}` in a list item (which holds a `$`): literal values
/// substituted, others kept as written and marked unknown.
fn expand_dollars(mut w: Word, sc: &Scalar, dialect: Dialect, env: &[(String, String)]) -> Word {
    let src = &*sc.text;
    let b = src.as_bytes();
    let mut text = String::new();
    let mut table: Vec<usize> = Vec::new();
    let mut i = 0;
    let lookup = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1) == Some(&b'$') {
            text.push('$');
            table.push(sc.map.at(i));
            i += 2;
            continue;
        }
        let close = match (dialect, b.get(i + 1)) {
            (Dialect::Kubernetes, Some(b'(')) => Some(b')'),
            (Dialect::Compose, Some(b'{')) => Some(b'}'),
            _ => None,
        };
        if b[i] == b'$' {
            if let Some(close) = close {
                if let Some(k) = src[i + 2..].bytes().position(|c| c == close) {
                    let inner = &src[i + 2..i + 2 + k];
                    let (name, default) = match inner.split_once(":-").or_else(|| inner.split_once('-')) {
                        Some((n, d)) if dialect == Dialect::Compose => (n, Some(d)),
                        _ => (inner, None),
                    };
                    let value = match dialect {
                        Dialect::Kubernetes => lookup(name),
                        Dialect::Compose => default.map(str::to_owned),
                    };
                    let raw = &src[i..i + 3 + k];
                    match value {
                        Some(v) => {
                            text.push_str(&v);
                            table.extend(std::iter::repeat_n(sc.map.at(i), v.len()));
                        }
                        None => {
                            text.push_str(raw);
                            table.extend((i..i + raw.len()).map(|j| sc.map.at(j)));
                            w.unknown.push(raw.to_owned());
                        }
                    }
                    i += raw.len();
                    continue;
                }
            }
        }
        let ch_len = src[i..].chars().next().map_or(1, char::len_utf8);
        text.push_str(&src[i..i + ch_len]);
        table.extend((i..i + ch_len).map(|j| sc.map.at(j)));
        i += ch_len;
    }
    if text != w.text || !w.unknown.is_empty() {
        w.text = text;
        w.map = Some(SrcMap::Table(table));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::launch::Program;

    fn scan(text: &str) -> Vec<Launch> {
        let docs = crate::read::yaml::parse(text).unwrap();
        let mut out = Vec::new();
        scan_documents(&docs, 0, &Surroundings::default(), &mut out);
        out
    }

    #[test]
    fn deployment_with_command_and_args_and_env_expansion() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: llama-decode}\nspec:\n  template:\n    spec:\n      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}\n      containers:\n      - name: decode\n        image: lmsysorg/sglang:v0.5.6.post2\n        env:\n        - {name: PS, value: \"64\"}\n        command: [python3, -m, sglang.launch_server]\n        args:\n        - --page-size\n        - $(PS)\n        - --host\n        - $(POD_IP)\n";
        let l = scan(text);
        assert_eq!(l.len(), 1);
        let args: Vec<&str> = l[0].args.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(args, ["--page-size", "64", "--host", "$(POD_IP)"]);
        assert!(l[0].args[3].is_symbolic());
        assert!(l[0].hints.iter().any(|h| h == "decode"));
        assert_eq!(l[0].gpu, Some(crate::deployment::Gpu::H200));
        assert_eq!(l[0].release, Some(crate::release::Release::V0_5_6));
    }

    #[test]
    fn leader_worker_set_pods_get_their_group_size_and_index() {
        let template = |rank: &str| {
            format!(
                "      spec:\n        containers:\n        - command: [python3, -m, sglang.launch_server, --nnodes, \
                 $(LWS_GROUP_SIZE), --node-rank, {rank}]\n"
            )
        };
        let head = "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  leaderWorkerTemplate:\n";
        let ranks = |text: &str| -> Vec<String> {
            scan(text).iter().map(|l| format!("{} {}", l.args[1].text, l.args[3].text)).collect()
        };
        let both = format!(
            "{head}    size: 3\n    leaderTemplate:\n{}    workerTemplate:\n{}",
            template("$(LWS_WORKER_INDEX)"),
            template("$(LWS_WORKER_INDEX)")
        );
        assert_eq!(ranks(&both), ["3 0", "3 1", "3 2"]);
        let workers_only = format!("{head}    size: 2\n    workerTemplate:\n{}", template("$(LWS_WORKER_INDEX)"));
        assert_eq!(ranks(&workers_only), ["2 0", "2 1"]);
        // A container's own literal value wins; a size that is no number leaves the names unknown.
        let own = format!("{head}    size: 2\n    workerTemplate:\n{}", template("\"7\""));
        assert_eq!(ranks(&own), ["2 7", "2 7"]);
        let odd = format!("{head}    size: two\n    workerTemplate:\n{}", template("$(LWS_WORKER_INDEX)"));
        assert_eq!(ranks(&odd), ["$(LWS_GROUP_SIZE) $(LWS_WORKER_INDEX)"]);
        let huge = format!("{head}    size: 100000\n    workerTemplate:\n{}", template("$(LWS_WORKER_INDEX)"));
        assert_eq!(scan(&huge).len(), MAX_LWS_GROUP as usize);
        // Groups nested in groups multiply nothing: 64 pods, not 64 to the power of the depth.
        let mut nested = String::from("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n");
        let mut indent = String::from("  ");
        for _ in 0..6 {
            nested += &format!("{indent}leaderWorkerTemplate:\n{indent}  size: 64\n{indent}  workerTemplate:\n");
            indent += "    ";
        }
        nested += &format!(
            "{indent}containers:\n{indent}- command: [python3, -m, sglang.launch_server, --nnodes, \
            $(LWS_GROUP_SIZE), --node-rank, $(LWS_WORKER_INDEX)]\n"
        );
        assert_eq!(scan(&nested).len(), MAX_LWS_GROUP as usize);
    }

    /// Each replica of a LeaderWorkerSet is a group of pods whose leader is `<name>-<group>`.
    #[test]
    fn leader_worker_set_replicas_are_groups_of_their_own() {
        let lws = |replicas: &str, size: u32| {
            format!(
                "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: p, namespace: ns}}\n\
                 spec:\n  replicas: {replicas}\n  leaderWorkerTemplate:\n    size: {size}\n    workerTemplate:\n      \
                 spec:\n        containers:\n        - command: [python3, -m, sglang.launch_server, --dist-init-addr, \
                 '$(LWS_LEADER_ADDRESS):5000', --node-rank, $(LWS_WORKER_INDEX)]\n"
            )
        };
        let pods = |text: &str| -> Vec<String> {
            scan(text).iter().map(|l| format!("{} {}", l.args[1].text, l.args[3].text)).collect()
        };
        assert_eq!(pods(&lws("2", 2)), ["p-0.p.ns:5000 0", "p-0.p.ns:5000 1", "p-1.p.ns:5000 0", "p-1.p.ns:5000 1"]);
        assert_eq!(pods(&lws("three", 1)), ["p-0.p.ns:5000 0"]);
        assert!(pods(&lws("0", 1)).is_empty());
        assert_eq!(scan(&lws("1000000", 64)).len(), MAX_LWS_PODS as usize);
    }

    /// Kubernetes reads `$$` in an environment value as `$`, and `$(VAR)` as a variable set
    /// before it, as in a command's words.
    /// A hand-written pod's cluster settings, in the deployment's words: what the `kubernetes`
    /// section cannot say is left out, and a container has its own secrets and mounts.
    #[test]
    fn pod_settings_are_read_in_the_deployments_words() {
        let text = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: decode, namespace: llm}\nspec:\n  template:\n    spec:\n      \
                    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, bad key: x}\n      \
                    tolerations:\n      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n      \
                    - {operator: Exists}\n      - {key: pool, value: llm}\n      \
                    imagePullSecrets: [{name: regcred}]\n      \
                    volumes:\n      - {name: hf, hostPath: {path: /data/hf}}\n      - {name: shm, emptyDir: {}}\n      \
                    containers:\n      - name: decode\n        \
                    env:\n        - {name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf-token, key: token}}}\n        \
                    - {name: X, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n        \
                    volumeMounts: [{name: hf, mountPath: /root/.cache/huggingface}]\n        \
                    command: [python3, -m, sglang.launch_server, --port, '30001']\n      \
                    - name: sidecar\n        command: [python3, -m, sglang.launch_server, --port, '30002']\n";
        let l = scan(text);
        assert_eq!(l.len(), 2);
        let k = l[0].kubernetes.as_deref().unwrap();
        assert_eq!(k.namespace.as_deref(), Some("llm"));
        assert_eq!(k.node_selector, [("nvidia.com/gpu.product".to_owned(), "NVIDIA-H100-80GB-HBM3".to_owned())].into());
        assert_eq!(k.tolerations, ["nvidia.com/gpu:NoSchedule", "pool=llm"]);
        assert_eq!(k.image_pull_secrets, ["regcred"]);
        assert_eq!(k.secret_env, [("HF_TOKEN".to_owned(), "hf-token/token".to_owned())].into());
        assert_eq!(k.model_cache.as_deref(), Some("/data/hf"));
        assert!(!l[0].env.iter().any(|(k, _)| k == "HF_TOKEN"));
        let sidecar = l[1].kubernetes.as_deref().unwrap();
        assert!(sidecar.secret_env.is_empty() && sidecar.model_cache.is_none() && sidecar.namespace == k.namespace);
        // Compose has no pods.
        let compose = "services:\n  decode:\n    volumes: [/data/hf:/root/.cache/huggingface]\n    \
                       command: python3 -m sglang.launch_server\n";
        assert!(scan(compose)[0].kubernetes.is_none());
    }

    #[test]
    fn environment_values_are_expanded_as_kubernetes_does() {
        let text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - env:\n    - {name: A, value: '1'}\n    \
                    - {name: B, value: 'x$$(A)$(A)$(C)$$$'}\n    - {name: D, value: $}\n    \
                    command: [python3, -m, sglang.launch_server]\n";
        let env = &scan(text)[0].env;
        assert!(env.contains(&("B".to_owned(), "x$(A)1$(C)$$".to_owned())), "{env:?}");
        assert!(env.contains(&("D".to_owned(), "$".to_owned())), "{env:?}");
    }

    #[test]
    fn role_based_group_leader_worker_roles_start_one_node_per_pod() {
        // The template at `indent`, whose command reads the group's variables.
        let template = |indent: &str, (size, index): (&str, &str)| {
            format!(
                "{indent}spec:\n{indent}  containers:\n{indent}  - command: [python3, -m, sglang.launch_server, \
                 --nnodes, $({size}), --node-rank, $({index})]\n"
            )
        };
        let ranks = |text: &str| -> Vec<String> {
            scan(text).iter().map(|l| format!("{} {}", l.args[1].text, l.args[3].text)).collect()
        };
        // v1alpha2: a leaderWorkerPattern's one template starts every pod.
        let lwp = |size: &str, patch: &str| {
            format!(
                "apiVersion: workloads.x-k8s.io/v1alpha2\nkind: RoleBasedGroup\nspec:\n  roles:\n  - name: prefill\n    \
                 leaderWorkerPattern:\n      size: {size}\n      template:\n{}{patch}",
                template("        ", RBG_LWP_VARS)
            )
        };
        let labels = "      leaderTemplatePatch:\n        metadata: {labels: {role: leader}}\n";
        assert_eq!(ranks(&lwp("3", labels)), ["3 0", "3 1", "3 2"]);
        // A patch that changes the containers makes the pods differ: read once, names unknown.
        let own = "      workerTemplatePatch:\n        spec:\n          containers:\n          - name: sglang\n";
        assert_eq!(ranks(&lwp("2", own)), ["$(RBG_LWP_GROUP_SIZE) $(RBG_LWP_WORKER_INDEX)"]);
        // v1alpha1: the role's template, with a leaderWorkerSet beside it (an LWS underneath).
        let v1 = format!(
            "apiVersion: workloads.x-k8s.io/v1alpha1\nkind: RoleBasedGroup\nspec:\n  roles:\n  - name: decode\n    \
             leaderWorkerSet:\n      size: 2\n      patchWorkerTemplate:\n        metadata: {{labels: {{a: b}}}}\n    \
             template:\n{}",
            template("      ", LWS_VARS)
        );
        assert_eq!(ranks(&v1), ["2 0", "2 1"]);
    }

    #[test]
    fn bash_c_block_scalar_and_compose_strings() {
        let text = "services:\n  prefill:\n    image: x\n    command: >\n      python3 -m sglang.launch_server\n      --page-size ${PS:-16}\n  router:\n    entrypoint: [\"/bin/sh\", \"-c\"]\n    command:\n      - |\n        python -m sglang_router.launch_router --pd-disaggregation \\\n          --prefill http://prefill:30000 8998\n";
        let l = scan(text);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!(l[0].args[1].text, "16");
        assert_eq!(l[1].program, Program::Router);
        let w = &l[1].args[2];
        assert_eq!(&text[w.start..w.end], "http://prefill:30000");
    }
}
