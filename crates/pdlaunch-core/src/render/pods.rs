//! What the formats that run the servers on Kubernetes pods share: the YAML writer, the layout of
//! the servers on pods (sets of instances, the plan of the deployment placed on the pods, one
//! pod template per set), the pod templates and the router's pod and objects.
//!
//! A set is the instances of one side that start alike (a LeaderWorkerSet, or a RoleBasedGroup
//! role), or one instance of a side whose instances differ. Each node's host is its pod's stable
//! name in the set's headless Service, as the [`Engine`] names it; the servers and the router bind
//! `0.0.0.0`, and each pod numbers its GPUs from 0 (the device plugin gives it its own). The pods
//! of a group share one template, so `--dist-init-addr` is the engine's leader address variable
//! and `--node-rank` its worker index variable; every other `$` is written `$$`, which Kubernetes
//! turns back into `$`, so no value is expanded on the way to SGLang's argv.

use super::cluster::{cluster, is_label, Cluster, Volume, MODEL_CACHE_MOUNT};
use super::RenderError;
use crate::deployment::{Deployment, Role};
use crate::flags::{self, Flag};
use crate::plan::{plan, Plan, ServerProcess};
use crate::yaml_value;

/// The label naming the application instance (the deployment) an object belongs to.
pub(crate) const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The annotation the router's service discovery reads a prefill pod's bootstrap port from.
pub(crate) const BOOTSTRAP_ANNOTATION: &str = "sglang.ai/bootstrap-port";
/// The label LeaderWorkerSet gives each pod with its index in its group (0 on the leader).
pub(crate) const WORKER_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/worker-index";
/// The label RoleBasedGroup gives each pod of a leader-worker role with its index in its group.
pub(crate) const RBG_INDEX_LABEL: &str = "rbg.workloads.x-k8s.io/component-index";
/// Longest StatefulSet name whose pods Kubernetes can label with their revision.
const MAX_STATEFUL_SET: usize = 52;

/// The controller that makes the groups of pods, which names the pods and gives each its
/// leader's address and its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Engine {
    /// LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`): group `g` of set `s` is the StatefulSet
    /// `s-g`, its leader the pod `s-g`, its workers `s-g-k`, all in the headless Service `s`.
    Lws,
    /// RoleBasedGroup's leader-worker pattern (`workloads.x-k8s.io/v1alpha2`, whose default
    /// workload is a RoleInstanceSet): group `g` of role set `s` is the RoleInstance `s-g`, its
    /// pods `s-g-k` (the leader `s-g-0`), in the headless Service `s-s`.
    Rbg,
    /// Dynamo's operator (`nvidia.com/v1alpha1`): each replica of a worker service is a group of
    /// `multinode.nodeCount` pods, `<graph>-<service>-<g>-<k>` here (the operator's names are its
    /// own; no command line the format writes carries them: the operator adds a multi-node
    /// worker's `--dist-init-addr`, `--nnodes` and `--node-rank` itself).
    Dynamo,
}

impl Engine {
    /// The host name of pod `k` of group `g` of set `set`, within the namespace.
    pub(super) fn host(self, set: &str, g: usize, k: usize) -> String {
        match (self, k) {
            (Engine::Lws, 0) => format!("{set}-{g}.{set}"),
            (Engine::Lws, _) => format!("{set}-{g}-{k}.{set}"),
            (Engine::Rbg, _) => format!("{set}-{g}-{k}.{}", rbg_service(set)),
            (Engine::Dynamo, _) => format!("{set}-{g}-{k}"),
        }
    }
    /// The variable holding the leader's address in a pod.
    fn leader_address(self) -> &'static str {
        match self {
            Engine::Lws => "$(LWS_LEADER_ADDRESS)",
            Engine::Rbg => "$(RBG_LWP_LEADER_ADDRESS)",
            Engine::Dynamo => unreachable!("pod_argv leaves out a Dynamo worker's multi-node arguments"),
        }
    }
    /// The variable holding a pod's index in its group (0 on the leader).
    fn worker_index(self) -> &'static str {
        match self {
            Engine::Lws => "$(LWS_WORKER_INDEX)",
            Engine::Rbg => "$(RBG_LWP_WORKER_INDEX)",
            Engine::Dynamo => unreachable!("pod_argv leaves out a Dynamo worker's multi-node arguments"),
        }
    }
    /// The label the controller gives each pod with its index in its group.
    pub(super) fn index_label(self) -> &'static str {
        match self {
            Engine::Lws => WORKER_INDEX_LABEL,
            Engine::Rbg => RBG_INDEX_LABEL,
            Engine::Dynamo => unreachable!("the dynamo format writes no router of SGLang's"),
        }
    }
}

/// The headless Service RoleBasedGroup makes for the pods of a role (`s-<group>-<role>`).
pub(super) fn rbg_service(set: &str) -> String {
    format!("s-{set}")
}

/// One set: instances of one side, a group each.
pub(super) struct Set {
    pub(super) role: Role,
    /// `<deployment>-<side>`, or `<deployment>-<side>-<instance>`.
    pub(super) name: String,
    pub(super) instances: Vec<usize>,
}

/// The pod template of a set, read from its first process.
pub(super) struct Template {
    /// The process, in the plan's servers.
    pub(super) server: usize,
    pub(super) argv: Vec<String>,
}

/// How the deployment runs on Kubernetes.
pub(super) struct Layout {
    pub(super) engine: Engine,
    pub(super) sets: Vec<Set>,
    /// The plan of the deployment placed on the pods.
    pub(super) plan: Plan,
    /// One per set.
    pub(super) templates: Vec<Template>,
    /// The servers' image.
    pub(super) image: String,
    /// The `kubernetes` section.
    pub(super) cluster: Cluster,
    /// The port of every server, when the router discovers them.
    pub(super) discovery: Option<u16>,
}

/// Why the pods of a set cannot share a template.
enum Differs {
    /// Two instances of one side start differently: one set per instance then.
    Instances(Role),
    /// Two nodes of one instance start differently: no group of pods can start them.
    Nodes(RenderError),
}

/// One set per side, or per instance of a side whose instances start differently.
pub(super) fn layout(d: &Deployment, engine: Engine) -> Result<Layout, RenderError> {
    check_name(&d.name)?;
    let cluster = cluster(&d.kubernetes)?;
    let port = discovery_port(d)?;
    let mut apart = [false; 2];
    loop {
        let sets = sets(d, apart);
        check_pod_names(d, &sets, engine)?;
        let plan = plan(&place(d, &sets, port, engine));
        match templates(&plan, &sets, engine) {
            Ok(templates) => {
                check_secret_env(&plan, &cluster)?;
                return Ok(Layout { engine, sets, plan, templates, image: image(d)?, cluster, discovery: port });
            }
            Err(Differs::Instances(role)) if !apart[role as usize] => apart[role as usize] = true,
            Err(Differs::Instances(role)) => unreachable!("a {role} set of one instance has no other instance"),
            Err(Differs::Nodes(why)) => return Err(why),
        }
    }
}

/// The deployment name names every object: it must be a DNS label.
pub(super) fn check_name(name: &str) -> Result<(), RenderError> {
    if is_label(name) && name.as_bytes()[0].is_ascii_lowercase() {
        Ok(())
    } else {
        Err(RenderError::at(
            "name",
            format_args!(
                "({name:?}) names the Kubernetes objects and pods, so it must be a DNS label: lowercase \
             letters, digits and `-`, starting with a letter and ending with a letter or digit; rename the deployment"
            ),
        ))
    }
}

/// The one port every server listens on when the router discovers them (the router reaches
/// every pod at `--service-discovery-port`); `None` without discovery.
fn discovery_port(d: &Deployment) -> Result<Option<u16>, RenderError> {
    if !d.kubernetes.service_discovery {
        return Ok(None);
    }
    if d.kubernetes.namespace.is_none() {
        return Err(RenderError::at(
            "kubernetes.service_discovery",
            format_args!(
                "needs `kubernetes.namespace`: the router watches the pods of one namespace, and its RoleBinding \
                 must name it; set the namespace the manifests go to"
            ),
        ));
    }
    let port = d.prefill.instances.first().and_then(|i| i.port).unwrap_or(crate::plan::default_port(Role::Prefill));
    for role in Role::BOTH {
        for (i, inst) in d.side(role).instances.iter().enumerate() {
            if let Some(own) = inst.port.filter(|p| *p != port) {
                return Err(RenderError::at(
                    format!("{role}.instances[{i}].port"),
                    format_args!(
                        "is {own}, but with `kubernetes.service_discovery` the router reaches \
                     every server at one port (`--service-discovery-port`), here {port}; give every instance that \
                     port, or none"
                    ),
                ));
            }
        }
    }
    Ok(Some(port))
}

/// A variable read from a Secret must not also have a plain value: Kubernetes would keep the one
/// written last, silently.
fn check_secret_env(plan: &Plan, cluster: &Cluster) -> Result<(), RenderError> {
    for (var, ..) in &cluster.secret_env {
        if let Some(p) = plan.servers.iter().find(|p| p.env.contains_key(var)) {
            return Err(RenderError::at(
                format!("kubernetes.secret_env.{var}"),
                format_args!(
                    "reads a Secret, but the {} servers also set `{var}` in `env`; \
                 keep one of the two",
                    p.role
                ),
            ));
        }
    }
    Ok(())
}

fn sets(d: &Deployment, apart: [bool; 2]) -> Vec<Set> {
    let mut sets = Vec::new();
    for role in Role::BOTH {
        let n = d.side(role).instances.len();
        if apart[role as usize] {
            sets.extend((0..n).map(|i| Set { role, name: format!("{}-{role}-{i}", d.name), instances: vec![i] }));
        } else if n > 0 {
            sets.push(Set { role, name: format!("{}-{role}", d.name), instances: (0..n).collect() });
        }
    }
    sets
}

/// A LeaderWorkerSet makes a StatefulSet per group, `<set>-<group>`, whose pods Kubernetes
/// labels with its name and an 11-character revision hash in at most 63 characters (its pods,
/// `<set>-<group>-<k>`, are then short enough too). A RoleBasedGroup names its pods
/// `<set>-<group>-<k>` and their Service `s-<set>`: each a DNS label, of at most 63.
fn check_pod_names(d: &Deployment, sets: &[Set], engine: Engine) -> Result<(), RenderError> {
    for set in sets {
        let groups = set.instances.len() - 1;
        let (longest, most) = match engine {
            Engine::Lws => (format!("{}-{groups}", set.name), MAX_STATEFUL_SET),
            Engine::Rbg | Engine::Dynamo => {
                let nodes = set.instances.iter().map(|&i| d.side(set.role).instances[i].nodes.len()).max();
                let pod = format!("{}-{groups}-{}", set.name, nodes.unwrap_or(1).saturating_sub(1));
                let service = rbg_service(&set.name);
                (if service.len() > pod.len() { service } else { pod }, 63)
            }
        };
        if longest.len() > most {
            let what = match engine {
                Engine::Lws => "StatefulSet",
                Engine::Rbg | Engine::Dynamo => "pod and Service",
            };
            return Err(RenderError::at(
                "name",
                format_args!(
                    "({:?}) gives {what} names up to {} characters (`{longest}`), over the \
                 {most} Kubernetes allows; shorten the deployment's name",
                    d.name,
                    longest.len()
                ),
            ));
        }
    }
    Ok(())
}

/// The deployment as it runs on the pods: hosts are the pods' names, everything binds all
/// addresses, GPUs are numbered from 0 in each pod, and with service discovery every server
/// listens on `port`.
fn place(d: &Deployment, sets: &[Set], port: Option<u16>, engine: Engine) -> Deployment {
    let mut placed = d.clone();
    for set in sets {
        let side = placed.side_mut(set.role);
        side.bind_host = Some("0.0.0.0".into());
        for (g, &i) in set.instances.iter().enumerate() {
            if port.is_some() {
                side.instances[i].port = port;
            }
            for (k, node) in side.instances[i].nodes.iter_mut().enumerate() {
                node.host = engine.host(&set.name, g, k);
                node.base_gpu_id = None;
                node.gpus_installed = None;
            }
        }
    }
    placed.router.host = "0.0.0.0".into();
    placed
}

pub(super) fn is(arg_flag: Option<&'static Flag>, flag: &'static Flag) -> bool {
    arg_flag.is_some_and(|f| std::ptr::eq(f, flag))
}

/// Kubernetes expands `$(VAR)` in commands and environment values; `$$` stays `$`.
pub(super) fn escape(s: &str) -> String {
    s.replace('$', "$$")
}

/// The argv of a server process as its pod template writes it. Dynamo's operator adds a
/// multi-node worker's `--dist-init-addr`, `--nnodes` and `--node-rank` itself: they are left out.
fn pod_argv(plan: &Plan, p: &ServerProcess, engine: Engine) -> Vec<String> {
    let mut argv: Vec<String> = plan.server_argv(p)[..3].iter().map(|t| escape(t)).collect();
    for a in &p.args {
        let multi_node = [&flags::NODE_RANK, &flags::DIST_INIT_ADDR, &flags::NNODES].into_iter().any(|f| is(a.flag, f));
        if engine == Engine::Dynamo && multi_node {
            continue;
        }
        argv.push(escape(&a.tokens[0]));
        for t in &a.tokens[1..] {
            argv.push(if is(a.flag, &flags::NODE_RANK) {
                engine.worker_index().to_owned()
            } else if is(a.flag, &flags::DIST_INIT_ADDR) {
                // `<leader host>:<port>`; the host holds no `:` (it is a pod name).
                let port = t.rsplit_once(':').map_or("", |(_, port)| port);
                format!("{}:{port}", engine.leader_address())
            } else {
                escape(t)
            });
        }
    }
    argv
}

/// One template per set, or why its pods differ.
fn templates(plan: &Plan, sets: &[Set], engine: Engine) -> Result<Vec<Template>, Differs> {
    let mut out = Vec::new();
    for set in sets {
        let mut first: Option<Template> = None;
        for &i in &set.instances {
            let nodes: Vec<usize> = (0..plan.servers.len())
                .filter(|&k| plan.servers[k].role == set.role && plan.servers[k].instance == i)
                .collect();
            let leader = Template { server: nodes[0], argv: pod_argv(plan, &plan.servers[nodes[0]], engine) };
            for &k in &nodes[1..] {
                let p = &plan.servers[k];
                if let Some(why) = difference(plan, &leader, p, &pod_argv(plan, p, engine)) {
                    let (role, n) = (set.role, p.node);
                    return Err(Differs::Nodes(RenderError::at(
                        format!("{role}.instances[{i}].nodes[{n}]"),
                        format_args!(
                            "would start unlike its leader (`nodes[0]`): {why}. The pods of one group \
                             share a template: give every node of an instance the same `gpus` and \
                             `ib_device`, or render the `shell` format"
                        ),
                    )));
                }
            }
            match &first {
                None => first = Some(leader),
                Some(f) if difference(plan, f, &plan.servers[leader.server], &leader.argv).is_some() => {
                    return Err(Differs::Instances(set.role))
                }
                Some(_) => {}
            }
        }
        out.extend(first);
    }
    Ok(out)
}

/// How a process would start unlike a template, if it would.
fn difference(plan: &Plan, t: &Template, p: &ServerProcess, argv: &[String]) -> Option<String> {
    let tp = &plan.servers[t.server];
    if p.gpus.1 != tp.gpus.1 {
        return Some(format!("{} GPUs against {}", p.gpus.1, tp.gpus.1));
    }
    if p.env != tp.env {
        return Some("another environment".into());
    }
    if argv != t.argv {
        let at = argv.iter().zip(&t.argv).position(|(a, b)| a != b).unwrap_or(argv.len().min(t.argv.len()));
        let word = |v: &[String]| v.get(at).map_or_else(|| "nothing".to_owned(), |w| format!("`{w}`"));
        return Some(format!("argument {at} is {} against {}", word(argv), word(&t.argv)));
    }
    None
}

/// YAML text, written line by line: strings through the core's YAML scalar writer, so that each
/// reads back as the very string (`'8998'` stays a string, a newline stays a newline).
pub(super) struct Yaml(pub(super) String);

impl Yaml {
    pub(super) fn line(&mut self, indent: usize, text: &str) {
        self.0.extend(std::iter::repeat_n(' ', indent));
        self.0.push_str(text);
        self.0.push('\n');
    }
    /// `key:`, a collection following.
    pub(super) fn key(&mut self, indent: usize, key: &str) {
        self.line(indent, &format!("{key}:"));
    }
    /// `key: value`, a string value.
    pub(super) fn pair(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("{key}: {}", yaml_value::string(value)));
    }
    /// `key: 8`, a number or boolean.
    pub(super) fn plain(&mut self, indent: usize, key: &str, value: impl std::fmt::Display) {
        self.line(indent, &format!("{key}: {value}"));
    }
    /// `- value`, a string item.
    pub(super) fn item(&mut self, indent: usize, value: &str) {
        self.line(indent, &format!("- {}", yaml_value::string(value)));
    }
    /// `- key: value`, the first entry of a mapping in a list; the others follow at `indent + 2`.
    pub(super) fn first(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("- {key}: {}", yaml_value::string(value)));
    }
    /// The head of an object: its API version, kind and metadata.
    pub(super) fn object(&mut self, api: &str, kind: &str, d: &Deployment, name: &str, component: &str) {
        self.pair(0, "apiVersion", api);
        self.pair(0, "kind", kind);
        self.metadata(0, d, Some(name), component);
    }
    /// An object's metadata (`name` given) or a pod template's.
    pub(super) fn metadata(&mut self, indent: usize, d: &Deployment, name: Option<&str>, component: &str) {
        self.key(indent, "metadata");
        if let Some(name) = name {
            self.pair(indent + 2, "name", name);
            if let Some(ns) = &d.kubernetes.namespace {
                self.pair(indent + 2, "namespace", ns);
            }
        }
        self.key(indent + 2, "labels");
        self.labels(indent + 4, d, component);
        for (key, value) in &d.kubernetes.labels {
            self.pair(indent + 4, key, value);
        }
    }
    /// pdlaunch's own labels of a component, which selectors select by.
    pub(super) fn labels(&mut self, indent: usize, d: &Deployment, component: &str) {
        self.pair(indent, "app.kubernetes.io/name", "sglang");
        self.pair(indent, INSTANCE_LABEL, &d.name);
        self.pair(indent, "app.kubernetes.io/component", component);
    }
    /// A container's `env`: values, then variables read from Secrets (left out when empty).
    pub(super) fn env(
        &mut self,
        indent: usize,
        env: &std::collections::BTreeMap<String, String>,
        secrets: &[(String, String, String)],
    ) {
        if !env.is_empty() || !secrets.is_empty() {
            self.key(indent, "env");
            for (k, v) in env {
                self.first(indent, "name", k);
                self.pair(indent + 2, "value", &escape(v));
            }
            for (var, secret, key) in secrets {
                self.first(indent, "name", var);
                self.key(indent + 2, "valueFrom");
                self.key(indent + 4, "secretKeyRef");
                self.pair(indent + 6, "name", secret);
                self.pair(indent + 6, "key", key);
            }
        }
    }
    /// A pod's `imagePullSecrets` (left out when empty).
    pub(super) fn pull_secrets(&mut self, indent: usize, secrets: &[String]) {
        if !secrets.is_empty() {
            self.key(indent, "imagePullSecrets");
            for s in secrets {
                self.first(indent, "name", s);
            }
        }
    }
    /// A container's `ports`, the first probed for readiness when `probe`.
    pub(super) fn ports(&mut self, indent: usize, ports: &[(&str, u16)], probe: bool) {
        let Some((_, probed)) = ports.first() else { return };
        self.key(indent, "ports");
        for (name, port) in ports {
            self.first(indent, "name", name);
            self.plain(indent + 2, "containerPort", port);
        }
        if !probe {
            return;
        }
        self.key(indent, "readinessProbe");
        self.key(indent + 2, "tcpSocket");
        self.plain(indent + 4, "port", probed);
        self.plain(indent + 2, "periodSeconds", 10);
    }
}

/// The image `render` names for the servers of a release when the deployment names none.
pub(crate) fn default_image(release: crate::release::Release) -> String {
    format!("lmsysorg/sglang:v{release}")
}

/// The server image, or why there is none.
pub(super) fn image(d: &Deployment) -> Result<String, RenderError> {
    if let Some(image) = &d.launcher.image {
        return Ok(image.clone());
    }
    match Role::BOTH.into_iter().find(|&r| d.side(r).gpu.is_some_and(|g| g.is_hip())) {
        Some(role) => Err(RenderError::at(
            format!("{role}.gpu"),
            format_args!(
                "is an AMD GPU, and SGLang's ROCm images are tagged by GPU family; set `launcher.image` \
             to the image the pods run"
            ),
        )),
        None => Ok(default_image(d.sglang_version)),
    }
}

/// The image `render` names for the router of a release when the deployment names none.
pub(crate) fn default_router_image(release: crate::release::RouterRelease) -> String {
    format!("lmsysorg/sglang-router:v{release}")
}

/// The absolute local paths the servers read (model, tokenizer, draft model): each is mounted
/// from the same path on the Kubernetes node.
fn local_paths(d: &Deployment) -> Vec<&str> {
    let draft = d.shared.speculative.as_ref().and_then(|s| s.draft_model_path.as_deref());
    let mut paths = Vec::new();
    for path in [Some(d.model.path.as_str()), d.model.tokenizer.as_deref(), draft].into_iter().flatten() {
        if path.starts_with('/') && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// Where a pod volume's files come from.
#[derive(Clone)]
pub(super) enum Source {
    /// Shared memory (`emptyDir` in memory).
    Memory,
    /// A path on the node or a claim.
    Volume(Volume),
    /// A ConfigMap, by name (the smoke-test agent's program and plan).
    ConfigMap(String),
}

/// A volume of a pod: its name, where it is mounted, its source and whether it is read-only.
pub(super) type PodVolume<'a> = (String, &'a str, Source, bool);

/// Whether the pods of set `k` use RDMA (a node names an `ib_device`).
pub(super) fn rdma(d: &Deployment, layout: &Layout, k: usize) -> bool {
    let set = &layout.sets[k];
    d.side(set.role).instances[set.instances[0]].nodes.iter().any(|n| n.ib_device.is_some())
}

/// The volumes of the server pods of set `k`: shared memory (when `shm`), the local paths the
/// servers read, the model cache and the InfiniBand devices.
pub(super) fn pod_volumes<'a>(d: &'a Deployment, layout: &Layout, k: usize, shm: bool) -> Vec<PodVolume<'a>> {
    let host = |path: &str| Source::Volume(Volume::Host(path.to_owned()));
    let mut volumes: Vec<PodVolume> = Vec::new();
    if shm {
        volumes.push(("dshm".into(), "/dev/shm", Source::Memory, false));
    }
    for (k, path) in local_paths(d).into_iter().enumerate() {
        volumes.push((format!("local-{k}"), path, host(path), true));
    }
    if let Some(cache) = &layout.cluster.model_cache {
        volumes.push(("model-cache".into(), MODEL_CACHE_MOUNT, Source::Volume(cache.clone()), false));
    }
    if rdma(d, layout, k) {
        volumes.push(("infiniband".into(), "/dev/infiniband", host("/dev/infiniband"), false));
    }
    volumes
}

/// The head of a server pod's spec (`i` is the indent of its keys): the host network for RDMA,
/// the side's node labels and taints, and the pull secrets.
pub(super) fn pod_placement(y: &mut Yaml, i: usize, d: &Deployment, layout: &Layout, k: usize) {
    if rdma(d, layout, k) {
        y.plain(i, "hostNetwork", true);
        y.pair(i, "dnsPolicy", "ClusterFirstWithHostNet");
    }
    let placement = &layout.cluster.placement[layout.sets[k].role as usize];
    if !placement.node_selector.is_empty() {
        y.key(i, "nodeSelector");
        for (key, value) in &placement.node_selector {
            y.pair(i + 2, key, value);
        }
    }
    if !placement.tolerations.is_empty() {
        y.key(i, "tolerations");
        for t in &placement.tolerations {
            y.first(i, "key", &t.key);
            match &t.value {
                Some(value) => {
                    y.pair(i + 2, "operator", "Equal");
                    y.pair(i + 2, "value", value);
                }
                None => y.pair(i + 2, "operator", "Exists"),
            }
            if let Some(effect) = &t.effect {
                y.pair(i + 2, "effect", effect);
            }
        }
    }
    y.pull_secrets(i, &layout.cluster.image_pull_secrets);
}

/// A server container's privileges and mounts (`c` is the indent of its keys).
pub(super) fn container_mounts(y: &mut Yaml, c: usize, rdma: bool, volumes: &[PodVolume]) {
    // Registering memory for RDMA pins it; the host's devices need a privileged pod.
    y.key(c, "securityContext");
    if rdma {
        y.plain(c + 2, "privileged", true);
    }
    y.key(c + 2, "capabilities");
    y.key(c + 4, "add");
    y.item(c + 4, "IPC_LOCK");
    if volumes.is_empty() {
        return;
    }
    y.key(c, "volumeMounts");
    for (name, mount, _, read_only) in volumes {
        y.first(c, "name", name);
        y.pair(c + 2, "mountPath", mount);
        if *read_only {
            y.plain(c + 2, "readOnly", true);
        }
    }
}

/// A pod's `volumes` (`i` is the indent of the pod spec's keys; left out when none).
pub(super) fn volume_sources(y: &mut Yaml, i: usize, volumes: &[PodVolume]) {
    if volumes.is_empty() {
        return;
    }
    y.key(i, "volumes");
    for (name, _, source, _) in volumes {
        y.first(i, "name", name);
        match source {
            Source::Memory => {
                y.key(i + 2, "emptyDir");
                y.pair(i + 4, "medium", "Memory");
            }
            Source::Volume(Volume::Host(path)) => {
                y.key(i + 2, "hostPath");
                y.pair(i + 4, "path", path);
            }
            Source::Volume(Volume::Claim(name)) => {
                y.key(i + 2, "persistentVolumeClaim");
                y.pair(i + 4, "claimName", name);
            }
            Source::ConfigMap(name) => {
                y.key(i + 2, "configMap");
                y.pair(i + 4, "name", name);
            }
        }
    }
}

/// A pod template of a set (`indent` is that of its `metadata`); the leader serves the ports.
/// `leader` is `None` for a template every pod of a group shares: it declares the leader's
/// ports, but probes none (the workers serve none of them).
pub(super) fn pod(y: &mut Yaml, indent: usize, d: &Deployment, layout: &Layout, k: usize, leader: Option<bool>) {
    let (set, t) = (&layout.sets[k], &layout.templates[k]);
    let p = &layout.plan.servers[t.server];
    // Declared so that the scheduler keeps two pods that bind one port (on the host network) off
    // the same node: the leader's HTTP, bootstrap and rendezvous ports (the first of its block).
    let mut ports: Vec<(&str, u16)> = Vec::new();
    if leader != Some(false) {
        ports.extend(port_of(p, &flags::PORT).map(|port| ("http", port)));
        if set.role == Role::Prefill {
            ports.extend(port_of(p, &flags::BOOTSTRAP_PORT).map(|port| ("bootstrap", port)));
        }
        ports.extend(port_of(p, &flags::DIST_INIT_ADDR).map(|port| ("rendezvous", port)));
    }
    y.metadata(indent, d, None, set.role.as_str());
    // The router's service discovery reads a prefill leader's bootstrap port here.
    let bootstrap = match (layout.discovery, leader != Some(false), set.role) {
        (Some(_), true, Role::Prefill) => {
            port_of(p, &flags::BOOTSTRAP_PORT).map(|p| (BOOTSTRAP_ANNOTATION, p.to_string()))
        }
        _ => None,
    };
    pod_annotations(y, indent + 2, layout, bootstrap);
    y.key(indent, "spec");
    let container = Container { name: set.role.as_str(), argv: &t.argv, ports, probe: leader.is_some(), extra: None };
    pod_spec(y, indent + 2, d, layout, k, &container);
}

/// The port a server flag's value ends with (`30000`, `host:5000`).
fn port_of(p: &ServerProcess, flag: &'static Flag) -> Option<u16> {
    let value = p.args.iter().find(|a| is(a.flag, flag)).and_then(|a| a.tokens.get(1))?;
    value.rsplit(':').next()?.parse::<u16>().ok()
}

/// A pod's `annotations` (`indent` is that of the metadata's keys): `first`, then the
/// `kubernetes` section's pod annotations; left out when none.
pub(super) fn pod_annotations(y: &mut Yaml, indent: usize, layout: &Layout, first: Option<(&str, String)>) {
    let annotations = layout.cluster.pod_annotations.iter().map(|(k, v)| (k.as_str(), v.clone()));
    let annotations: Vec<(&str, String)> = first.into_iter().chain(annotations).collect();
    if !annotations.is_empty() {
        y.key(indent, "annotations");
        for (key, value) in &annotations {
            y.pair(indent + 2, key, value);
        }
    }
}

/// What runs in a pod of a set: the server, or the smoke-test agent that stands in for it.
pub(super) struct Container<'a> {
    /// The container's name.
    pub(super) name: &'a str,
    /// Its command, `$` already escaped.
    pub(super) argv: &'a [String],
    /// The ports it declares.
    pub(super) ports: Vec<(&'a str, u16)>,
    /// Whether the first port is probed for readiness.
    pub(super) probe: bool,
    /// A volume beyond the server's, mounted last.
    pub(super) extra: Option<PodVolume<'a>>,
}

/// The spec of a pod of set `k` (`i` is the indent of its keys): the placement, the one
/// container with the set's image, environment, GPUs, privileges and mounts, and the volumes.
/// The server pods and the smoke-test agent pods are written by this one function, so an agent
/// is placed and equipped exactly as the server it stands in for.
pub(super) fn pod_spec(y: &mut Yaml, i: usize, d: &Deployment, layout: &Layout, k: usize, container: &Container) {
    let (set, t) = (&layout.sets[k], &layout.templates[k]);
    let p = &layout.plan.servers[t.server];
    let side = d.side(set.role);
    let mut volumes = pod_volumes(d, layout, k, true);
    volumes.extend(container.extra.clone());
    pod_placement(y, i, d, layout, k);
    y.key(i, "containers");
    y.first(i, "name", container.name);
    let c = i + 2;
    y.pair(c, "image", &layout.image);
    y.key(c, "command");
    for word in container.argv {
        y.item(c, word);
    }
    y.env(c, &p.env, &layout.cluster.secret_env);
    y.ports(c, &container.ports, container.probe);
    y.key(c, "resources");
    y.key(c + 2, "limits");
    let gpu = if side.gpu.is_some_and(|g| g.is_hip()) { "amd.com/gpu" } else { "nvidia.com/gpu" };
    y.plain(c + 4, gpu, p.gpus.1);
    container_mounts(y, c, rdma(d, layout, k), &volumes);
    volume_sources(y, i, &volumes);
}

/// The router's argv: the plan's, or with service discovery the plan's without its lists of
/// servers, which the labels of the leader pods replace.
pub(super) fn router_argv(d: &Deployment, layout: &Layout) -> Vec<String> {
    let plan = &layout.plan;
    let Some(port) = layout.discovery else { return plan.router_argv() };
    let mut argv = plan.router_argv()[..3].to_vec();
    for a in &plan.router.args {
        if is(a.flag, &flags::R_PREFILL) || is(a.flag, &flags::R_DECODE) {
            continue;
        }
        argv.extend(a.tokens.iter().cloned());
        if is(a.flag, &flags::R_PD_DISAGGREGATION) {
            argv.push(flags::R_SERVICE_DISCOVERY.name.into());
            for (flag, role) in [(&flags::R_PREFILL_SELECTOR, Role::Prefill), (&flags::R_DECODE_SELECTOR, Role::Decode)]
            {
                argv.push(flag.name.into());
                argv.extend(leader_selector(d, role, layout.engine).into_iter().map(|(k, v)| format!("{k}={v}")));
            }
            argv.extend([flags::R_SERVICE_DISCOVERY_PORT.name.into(), port.to_string()]);
            argv.push(flags::R_SERVICE_DISCOVERY_NAMESPACE.name.into());
            argv.extend(d.kubernetes.namespace.clone());
        }
    }
    argv
}

/// The labels of one side's leader pods.
fn leader_selector(d: &Deployment, role: Role, engine: Engine) -> [(&'static str, String); 3] {
    [
        (INSTANCE_LABEL, d.name.clone()),
        ("app.kubernetes.io/component", role.as_str().to_owned()),
        (engine.index_label(), "0".to_owned()),
    ]
}

/// The router's pod template (`indent` is that of its `metadata`).
pub(super) fn router_pod(y: &mut Yaml, indent: usize, d: &Deployment, layout: &Layout) {
    let i = indent + 2;
    y.metadata(indent, d, None, "router");
    y.key(indent, "spec");
    if layout.discovery.is_some() {
        y.pair(i, "serviceAccountName", &router_name(d));
    }
    y.pull_secrets(i, &d.kubernetes.image_pull_secrets);
    y.key(i, "containers");
    y.first(i, "name", "router");
    let c = i + 2;
    y.pair(c, "image", &d.router.image.clone().unwrap_or_else(|| default_router_image(d.router_version)));
    y.key(c, "command");
    for word in router_argv(d, layout) {
        y.item(c, &escape(&word));
    }
    y.env(c, &layout.plan.router.env, &[]);
    y.ports(c, &[("http", layout.plan.router.port)], true);
}

/// The name of the router's objects.
pub(super) fn router_name(d: &Deployment) -> String {
    format!("{}-router", d.name)
}

/// The Service in front of the routers; with service discovery, the ServiceAccount they run as
/// and the Role that lets them watch the pods. Each object follows a `---`.
pub(super) fn router_service(y: &mut Yaml, d: &Deployment, layout: &Layout) {
    let name = router_name(d);
    let port = layout.plan.router.port;
    y.line(0, "---");
    y.object("v1", "Service", d, &name, "router");
    y.key(0, "spec");
    y.key(2, "selector");
    y.labels(4, d, "router");
    y.key(2, "ports");
    y.first(2, "name", "http");
    y.plain(4, "port", port);
    y.plain(4, "targetPort", port);
    if layout.discovery.is_some() {
        discovery_access(y, d, &name);
    }
}

/// The router's ServiceAccount, and the Role and RoleBinding that let it watch the pods of its
/// namespace.
fn discovery_access(y: &mut Yaml, d: &Deployment, name: &str) {
    y.line(0, "---");
    y.object("v1", "ServiceAccount", d, name, "router");
    y.line(0, "---");
    y.object("rbac.authorization.k8s.io/v1", "Role", d, name, "router");
    y.key(0, "rules");
    y.key(0, "- apiGroups");
    y.item(2, "");
    y.key(2, "resources");
    y.item(2, "pods");
    y.key(2, "verbs");
    for verb in ["get", "list", "watch"] {
        y.item(2, verb);
    }
    y.line(0, "---");
    y.object("rbac.authorization.k8s.io/v1", "RoleBinding", d, name, "router");
    y.key(0, "roleRef");
    y.pair(2, "apiGroup", "rbac.authorization.k8s.io");
    y.pair(2, "kind", "Role");
    y.pair(2, "name", name);
    y.key(0, "subjects");
    y.first(0, "kind", "ServiceAccount");
    y.pair(2, "name", name);
    y.pair(2, "namespace", d.kubernetes.namespace.as_deref().unwrap_or_default());
}

/// What the tests of the formats on pods share.
#[cfg(test)]
pub(super) mod testing {
    use super::{layout, router_argv, Engine};
    use crate::deployment::Deployment;
    use crate::lint::{lint, Input, Options};
    use crate::rules::Severity;

    /// A process as it starts: its entry (`python3 -m module`), arguments and environment.
    pub type Started = (String, Vec<String>, Vec<(String, String)>);

    pub fn documents(text: &str) -> Vec<serde_yaml::Value> {
        use serde::Deserialize;
        serde_yaml::Deserializer::from_str(text).map(|doc| serde_yaml::Value::deserialize(doc).unwrap()).collect()
    }

    /// What the pods run, read back by the linter (which sets each pod's LeaderWorkerSet
    /// variables as the controller does): each process's argv and environment, in order.
    pub fn read_back(text: &str) -> Vec<Started> {
        let linted = lint(&[Input::new("k8s.yaml", text)], &Options::default());
        let errors: Vec<_> = linted.findings.iter().filter(|f| f.finding.severity == Severity::Error).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        linted
            .launches
            .iter()
            .map(|l| {
                let env = l.env.iter().filter(|(k, _)| !crate::lint::manifest::POD_VARS.contains(&k.as_str()));
                (l.entry.clone(), l.args.iter().map(|w| w.text.clone()).collect(), env.cloned().collect())
            })
            .collect()
    }

    /// What the plan of the deployment placed on the pods says each process runs, with the
    /// leader's address as the controller gives it (`<pod>.<service>.<namespace>` in a namespace).
    pub fn placed_on(d: &Deployment, engine: Engine) -> Vec<Started> {
        let layout = layout(d, engine).unwrap();
        let p = &layout.plan;
        let env = |e: &std::collections::BTreeMap<String, String>| e.clone().into_iter().collect();
        let leader = |w: &String| match (&d.kubernetes.namespace, w.rsplit_once(':')) {
            (Some(ns), Some((host, port))) if host.contains('.') => format!("{host}.{ns}:{port}"),
            _ => w.clone(),
        };
        let mut out: Vec<_> = p
            .servers
            .iter()
            .map(|s| {
                let mut argv = p.server_argv(s);
                if let Some(k) = argv.iter().position(|w| w == "--dist-init-addr") {
                    argv[k + 1] = leader(&argv[k + 1]);
                }
                (argv[..3].join(" "), argv[3..].to_vec(), env(&s.env))
            })
            .collect();
        let router = router_argv(d, &layout);
        out.push((router[..3].join(" "), router[3..].to_vec(), env(&p.router.env)));
        out
    }
}
