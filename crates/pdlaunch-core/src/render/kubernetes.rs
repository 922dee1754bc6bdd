//! Kubernetes manifests: each side's servers as a LeaderWorkerSet, the router as a Deployment
//! behind a Service.
//!
//! A side whose instances start alike is one LeaderWorkerSet with a replica (group) per instance,
//! the nodes of an instance being the pods of its group; a side whose instances differ (their own
//! ports, node counts or NICs) gets one LeaderWorkerSet per instance. The command lines are the
//! plan's for the deployment placed on the pods: each node's host is its pod's stable name
//! (`<set>-<group>` for the leader, `<set>-<group>-<k>` for worker k, in the set's headless
//! Service), the servers and the router bind `0.0.0.0`, and each pod numbers its GPUs from 0 (the
//! device plugin gives it its own). The pods of a group share one template, so `--dist-init-addr`
//! is `$(LWS_LEADER_ADDRESS):port` and `--node-rank` is `$(LWS_WORKER_INDEX)`; every other `$` is
//! written `$$`, which Kubernetes turns back into `$`, so no value is expanded on the way to
//! SGLang's argv.
//!
//! `cluster.rs` checks the deployment's `kubernetes` section against Kubernetes' name rules and reads
//! taints in `kubectl taint` form, both ways (the linter writes a manifest's pod settings back in
//! those words when it reconstructs a deployment). With `kubernetes.service_discovery` the router's
//! lists of servers give way to label selectors; the linter turns such a router's selectors back
//! into entries, one per server pod whose labels they match.

use super::cluster::{cluster, is_label, Cluster, Volume, MODEL_CACHE_MOUNT};
use super::{header, RenderError, RenderedFile};
use crate::deployment::{Deployment, Role};
use crate::flags::{self, Flag};
use crate::plan::{plan, Plan, ServerProcess};
use crate::yaml_value;

/// The leader's address in a LeaderWorkerSet pod.
const LEADER_ADDRESS: &str = "$(LWS_LEADER_ADDRESS)";
/// The pod's index in its group (0 on the leader).
const WORKER_INDEX: &str = "$(LWS_WORKER_INDEX)";
/// The label naming the application instance (the deployment) an object belongs to.
pub(crate) const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The LeaderWorkerSet annotation that gives each group a topology domain of its own.
pub(crate) const EXCLUSIVE_TOPOLOGY: &str = "leaderworkerset.sigs.k8s.io/exclusive-topology";
/// The annotation the router's service discovery reads a prefill pod's bootstrap port from.
pub(crate) const BOOTSTRAP_ANNOTATION: &str = "sglang.ai/bootstrap-port";
/// The label LeaderWorkerSet gives each pod with its index in its group (0 on the leader).
pub(crate) const WORKER_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/worker-index";
/// Longest StatefulSet name whose pods Kubernetes can label with their revision.
const MAX_STATEFUL_SET: usize = 52;

/// One LeaderWorkerSet: instances of one side, a group each.
struct Set {
    role: Role,
    name: String,
    instances: Vec<usize>,
}

/// The pod template of a set, read from its first process.
struct Template {
    /// The process, in the plan's servers.
    server: usize,
    argv: Vec<String>,
}

/// How the deployment runs on Kubernetes.
struct Layout {
    sets: Vec<Set>,
    /// The plan of the deployment placed on the pods.
    plan: Plan,
    /// One per set.
    templates: Vec<Template>,
    /// The servers' image.
    image: String,
    /// The `kubernetes` section.
    cluster: Cluster,
    /// The port of every server, when the router discovers them.
    discovery: Option<u16>,
}

/// Why the pods of a set cannot share a template.
enum Differs {
    /// Two instances of one side start differently: one set per instance then.
    Instances(Role),
    /// Two nodes of one instance start differently: no LeaderWorkerSet can start them.
    Nodes(RenderError),
}

/// Renders the deployment as one multi-document YAML file (`<name>.kubernetes.yaml`).
pub fn render_kubernetes(d: &Deployment) -> Result<RenderedFile, RenderError> {
    Ok(manifest(d, &layout(d)?))
}

/// Why the deployment cannot run as Kubernetes manifests, if it cannot (the manifests are not
/// written).
pub(crate) fn refusal(d: &Deployment) -> Option<RenderError> {
    layout(d).err()
}

/// One LeaderWorkerSet per side, or per instance of a side whose instances start differently.
fn layout(d: &Deployment) -> Result<Layout, RenderError> {
    check_name(&d.name)?;
    let cluster = cluster(&d.kubernetes)?;
    let port = discovery_port(d)?;
    let mut apart = [false; 2];
    loop {
        let sets = sets(d, apart);
        check_pod_names(d, &sets)?;
        let plan = plan(&place(d, &sets, port));
        match templates(&plan, &sets) {
            Ok(templates) => {
                check_secret_env(&plan, &cluster)?;
                return Ok(Layout { sets, plan, templates, image: image(d)?, cluster, discovery: port });
            }
            Err(Differs::Instances(role)) if !apart[role as usize] => apart[role as usize] = true,
            Err(Differs::Instances(role)) => unreachable!("a {role} set of one instance has no other instance"),
            Err(Differs::Nodes(why)) => return Err(why),
        }
    }
}

/// The deployment name names every object: it must be a DNS label.
fn check_name(name: &str) -> Result<(), RenderError> {
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

/// The name of the pod of node `k` of group `g` (the leader is `<set>-<g>`).
fn pod_name(set: &str, g: usize, k: usize) -> String {
    if k == 0 {
        format!("{set}-{g}")
    } else {
        format!("{set}-{g}-{k}")
    }
}

/// A LeaderWorkerSet makes a StatefulSet per group, `<set>-<group>`, whose pods Kubernetes
/// labels with its name and an 11-character revision hash in at most 63 characters (its pods,
/// `<set>-<group>-<k>`, are then short enough too).
fn check_pod_names(d: &Deployment, sets: &[Set]) -> Result<(), RenderError> {
    for set in sets {
        let longest = format!("{}-{}", set.name, set.instances.len() - 1);
        if longest.len() > MAX_STATEFUL_SET {
            return Err(RenderError::at(
                "name",
                format_args!(
                    "({:?}) gives StatefulSet names up to {} characters (`{longest}`), over the \
                 {MAX_STATEFUL_SET} Kubernetes allows; shorten the deployment's name",
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
fn place(d: &Deployment, sets: &[Set], port: Option<u16>) -> Deployment {
    let mut placed = d.clone();
    for set in sets {
        let side = placed.side_mut(set.role);
        side.bind_host = Some("0.0.0.0".into());
        for (g, &i) in set.instances.iter().enumerate() {
            if port.is_some() {
                side.instances[i].port = port;
            }
            for (k, node) in side.instances[i].nodes.iter_mut().enumerate() {
                node.host = format!("{}.{}", pod_name(&set.name, g, k), set.name);
                node.base_gpu_id = None;
                node.gpus_installed = None;
            }
        }
    }
    placed.router.host = "0.0.0.0".into();
    placed
}

fn is(arg_flag: Option<&'static Flag>, flag: &'static Flag) -> bool {
    arg_flag.is_some_and(|f| std::ptr::eq(f, flag))
}

/// Kubernetes expands `$(VAR)` in commands and environment values; `$$` stays `$`.
fn escape(s: &str) -> String {
    s.replace('$', "$$")
}

/// The argv of a server process as its pod template writes it.
fn pod_argv(plan: &Plan, p: &ServerProcess) -> Vec<String> {
    let mut argv: Vec<String> = plan.server_argv(p)[..3].iter().map(|t| escape(t)).collect();
    for a in &p.args {
        argv.push(escape(&a.tokens[0]));
        for t in &a.tokens[1..] {
            argv.push(if is(a.flag, &flags::NODE_RANK) {
                WORKER_INDEX.to_owned()
            } else if is(a.flag, &flags::DIST_INIT_ADDR) {
                // `<leader host>:<port>`; the host holds no `:` (it is a pod name).
                let port = t.rsplit_once(':').map_or("", |(_, port)| port);
                format!("{LEADER_ADDRESS}:{port}")
            } else {
                escape(t)
            });
        }
    }
    argv
}

/// One template per set, or why its pods differ.
fn templates(plan: &Plan, sets: &[Set]) -> Result<Vec<Template>, Differs> {
    let mut out = Vec::new();
    for set in sets {
        let mut first: Option<Template> = None;
        for &i in &set.instances {
            let nodes: Vec<usize> = (0..plan.servers.len())
                .filter(|&k| plan.servers[k].role == set.role && plan.servers[k].instance == i)
                .collect();
            let leader = Template { server: nodes[0], argv: pod_argv(plan, &plan.servers[nodes[0]]) };
            for &k in &nodes[1..] {
                let p = &plan.servers[k];
                if let Some(why) = difference(plan, &leader, p, &pod_argv(plan, p)) {
                    let (role, n) = (set.role, p.node);
                    return Err(Differs::Nodes(RenderError::at(
                        format!("{role}.instances[{i}].nodes[{n}]"),
                        format_args!(
                            "would start unlike its leader (`nodes[0]`): {why}. The pods of one LeaderWorkerSet \
                             group share a template: give every node of an instance the same `gpus` and \
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
struct Yaml(String);

impl Yaml {
    fn line(&mut self, indent: usize, text: &str) {
        self.0.extend(std::iter::repeat_n(' ', indent));
        self.0.push_str(text);
        self.0.push('\n');
    }
    /// `key:`, a collection following.
    fn key(&mut self, indent: usize, key: &str) {
        self.line(indent, &format!("{key}:"));
    }
    /// `key: value`, a string value.
    fn pair(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("{key}: {}", yaml_value::string(value)));
    }
    /// `key: 8`, a number or boolean.
    fn plain(&mut self, indent: usize, key: &str, value: impl std::fmt::Display) {
        self.line(indent, &format!("{key}: {value}"));
    }
    /// `- value`, a string item.
    fn item(&mut self, indent: usize, value: &str) {
        self.line(indent, &format!("- {}", yaml_value::string(value)));
    }
    /// `- key: value`, the first entry of a mapping in a list; the others follow at `indent + 2`.
    fn first(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("- {key}: {}", yaml_value::string(value)));
    }
    /// The head of an object: its API version, kind and metadata.
    fn object(&mut self, api: &str, kind: &str, d: &Deployment, name: &str, component: &str) {
        self.pair(0, "apiVersion", api);
        self.pair(0, "kind", kind);
        self.metadata(0, d, Some(name), component);
    }
    /// An object's metadata (`name` given) or a pod template's.
    fn metadata(&mut self, indent: usize, d: &Deployment, name: Option<&str>, component: &str) {
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
    fn labels(&mut self, indent: usize, d: &Deployment, component: &str) {
        self.pair(indent, "app.kubernetes.io/name", "sglang");
        self.pair(indent, INSTANCE_LABEL, &d.name);
        self.pair(indent, "app.kubernetes.io/component", component);
    }
    /// A container's `env`: values, then variables read from Secrets (left out when empty).
    fn env(
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
    fn pull_secrets(&mut self, indent: usize, secrets: &[String]) {
        if !secrets.is_empty() {
            self.key(indent, "imagePullSecrets");
            for s in secrets {
                self.first(indent, "name", s);
            }
        }
    }
    /// A container's `ports`, the first probed for readiness.
    fn ports(&mut self, indent: usize, ports: &[(&str, u16)]) {
        let Some((_, probed)) = ports.first() else { return };
        self.key(indent, "ports");
        for (name, port) in ports {
            self.first(indent, "name", name);
            self.plain(indent + 2, "containerPort", port);
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
fn image(d: &Deployment) -> Result<String, RenderError> {
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

/// A pod template of a set (`indent` is that of its `metadata`); the leader serves the ports.
fn pod(y: &mut Yaml, indent: usize, d: &Deployment, layout: &Layout, k: usize, leader: bool) {
    let (set, t) = (&layout.sets[k], &layout.templates[k]);
    let (p, argv) = (&layout.plan.servers[t.server], &t.argv);
    let side = d.side(set.role);
    let rdma = side.instances[set.instances[0]].nodes.iter().any(|n| n.ib_device.is_some());
    // The port a flag's value ends with (`30000`, `host:5000`).
    let port = |flag: &'static Flag| {
        let value = p.args.iter().find(|a| is(a.flag, flag)).and_then(|a| a.tokens.get(1))?;
        value.rsplit(':').next()?.parse::<u16>().ok()
    };
    // Declared so that the scheduler keeps two pods that bind one port (on the host network) off
    // the same node: the leader's HTTP, bootstrap and rendezvous ports (the first of its block).
    let mut ports: Vec<(&str, u16)> = Vec::new();
    if leader {
        ports.extend(port(&flags::PORT).map(|port| ("http", port)));
        if set.role == Role::Prefill {
            ports.extend(port(&flags::BOOTSTRAP_PORT).map(|port| ("bootstrap", port)));
        }
        ports.extend(port(&flags::DIST_INIT_ADDR).map(|port| ("rendezvous", port)));
    }
    let cluster = &layout.cluster;
    let host = |path: &str| Some(Volume::Host(path.to_owned()));
    // (name, mount path, source or none for shared memory, read-only)
    let mut volumes: Vec<(String, &str, Option<Volume>, bool)> = vec![("dshm".into(), "/dev/shm", None, false)];
    for (k, path) in local_paths(d).into_iter().enumerate() {
        volumes.push((format!("local-{k}"), path, host(path), true));
    }
    if let Some(cache) = &cluster.model_cache {
        volumes.push(("model-cache".into(), MODEL_CACHE_MOUNT, Some(cache.clone()), false));
    }
    if rdma {
        volumes.push(("infiniband".into(), "/dev/infiniband", host("/dev/infiniband"), false));
    }

    y.metadata(indent, d, None, set.role.as_str());
    // The router's service discovery reads a prefill leader's bootstrap port here.
    let bootstrap = match (layout.discovery, leader, set.role) {
        (Some(_), true, Role::Prefill) => port(&flags::BOOTSTRAP_PORT).map(|p| (BOOTSTRAP_ANNOTATION, p.to_string())),
        _ => None,
    };
    let annotations = cluster.pod_annotations.iter().map(|(k, v)| (k.as_str(), v.clone()));
    let annotations: Vec<(&str, String)> = bootstrap.into_iter().chain(annotations).collect();
    if !annotations.is_empty() {
        y.key(indent + 2, "annotations");
        for (key, value) in &annotations {
            y.pair(indent + 4, key, value);
        }
    }
    y.key(indent, "spec");
    let i = indent + 2;
    if rdma {
        y.plain(i, "hostNetwork", true);
        y.pair(i, "dnsPolicy", "ClusterFirstWithHostNet");
    }
    let placement = &cluster.placement[set.role as usize];
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
    y.pull_secrets(i, &cluster.image_pull_secrets);
    y.key(i, "containers");
    y.first(i, "name", set.role.as_str());
    let c = i + 2;
    y.pair(c, "image", &layout.image);
    y.key(c, "command");
    for word in argv {
        y.item(c, word);
    }
    y.env(c, &p.env, &cluster.secret_env);
    y.ports(c, &ports);
    y.key(c, "resources");
    y.key(c + 2, "limits");
    let gpu = if side.gpu.is_some_and(|g| g.is_hip()) { "amd.com/gpu" } else { "nvidia.com/gpu" };
    y.plain(c + 4, gpu, p.gpus.1);
    // Registering memory for RDMA pins it; the host's devices need a privileged pod.
    y.key(c, "securityContext");
    if rdma {
        y.plain(c + 2, "privileged", true);
    }
    y.key(c + 2, "capabilities");
    y.key(c + 4, "add");
    y.item(c + 4, "IPC_LOCK");
    y.key(c, "volumeMounts");
    for (name, mount, _, read_only) in &volumes {
        y.first(c, "name", name);
        y.pair(c + 2, "mountPath", mount);
        if *read_only {
            y.plain(c + 2, "readOnly", true);
        }
    }
    y.key(i, "volumes");
    for (name, _, source, _) in &volumes {
        y.first(i, "name", name);
        match source {
            None => {
                y.key(i + 2, "emptyDir");
                y.pair(i + 4, "medium", "Memory");
            }
            Some(Volume::Host(path)) => {
                y.key(i + 2, "hostPath");
                y.pair(i + 4, "path", path);
            }
            Some(Volume::Claim(name)) => {
                y.key(i + 2, "persistentVolumeClaim");
                y.pair(i + 4, "claimName", name);
            }
        }
    }
}

fn leader_worker_set(y: &mut Yaml, d: &Deployment, layout: &Layout, k: usize) {
    let set = &layout.sets[k];
    let nnodes = layout.plan.servers[layout.templates[k].server].nnodes;
    y.object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", d, &set.name, set.role.as_str());
    if let Some(key) = &layout.cluster.exclusive_topology {
        y.key(2, "annotations");
        y.pair(4, EXCLUSIVE_TOPOLOGY, key);
    }
    y.key(0, "spec");
    y.plain(2, "replicas", set.instances.len());
    y.key(2, "leaderWorkerTemplate");
    y.plain(4, "size", nnodes);
    y.pair(4, "restartPolicy", "RecreateGroupOnPodRestart");
    if nnodes > 1 {
        y.key(4, "leaderTemplate");
        pod(y, 6, d, layout, k, true);
    }
    y.key(4, "workerTemplate");
    pod(y, 6, d, layout, k, nnodes == 1);
}

/// The router's Deployment and the Service in front of it.
/// The router's argv: the plan's, or with service discovery the plan's without its lists of
/// servers, which the labels of the leader pods replace.
fn router_argv(d: &Deployment, layout: &Layout) -> Vec<String> {
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
                argv.extend(leader_selector(d, role).into_iter().map(|(k, v)| format!("{k}={v}")));
            }
            argv.extend([flags::R_SERVICE_DISCOVERY_PORT.name.into(), port.to_string()]);
            argv.push(flags::R_SERVICE_DISCOVERY_NAMESPACE.name.into());
            argv.extend(d.kubernetes.namespace.clone());
        }
    }
    argv
}

/// The labels of one side's leader pods.
fn leader_selector(d: &Deployment, role: Role) -> [(&'static str, String); 3] {
    [
        (INSTANCE_LABEL, d.name.clone()),
        ("app.kubernetes.io/component", role.as_str().to_owned()),
        (WORKER_INDEX_LABEL, "0".to_owned()),
    ]
}

/// The router's Deployment and the Service in front of it; with service discovery, the
/// ServiceAccount it runs as and the Role that lets it watch the pods.
fn router(y: &mut Yaml, d: &Deployment, layout: &Layout) {
    let name = format!("{}-router", d.name);
    let plan = &layout.plan;
    let port = plan.router.port;
    y.object("apps/v1", "Deployment", d, &name, "router");
    y.key(0, "spec");
    y.plain(2, "replicas", layout.cluster.router_replicas);
    y.key(2, "selector");
    y.key(4, "matchLabels");
    y.labels(6, d, "router");
    y.key(2, "template");
    y.metadata(4, d, None, "router");
    y.key(4, "spec");
    if layout.discovery.is_some() {
        y.pair(6, "serviceAccountName", &name);
    }
    y.pull_secrets(6, &d.kubernetes.image_pull_secrets);
    y.key(6, "containers");
    y.first(6, "name", "router");
    y.pair(8, "image", &d.router.image.clone().unwrap_or_else(|| default_router_image(d.router_version)));
    y.key(8, "command");
    for word in router_argv(d, layout) {
        y.item(8, &escape(&word));
    }
    y.env(8, &plan.router.env, &[]);
    y.ports(8, &[("http", port)]);
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

fn manifest(d: &Deployment, layout: &Layout) -> RenderedFile {
    let plan = &layout.plan;
    let mut y = Yaml(header(plan));
    y.0.push_str(
        "# Needs the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1); `kubectl apply -f` this file\n\
         # in one namespace. Each instance is one group of pods, one pod per node. Pods that use RDMA\n\
         # (`ib_device`) run on the host network. A local model path is mounted from the same path on the node.\n",
    );
    y.0.push_str(match layout.discovery {
        None => "# The router reaches the leaders by their pod names: render again after changing `instances`.\n",
        Some(_) => {
            "# The router finds the leader pods by their labels, so `kubectl scale leaderworkerset` adds groups\n\
             # it serves without a new router command.\n"
        }
    });
    let k = &layout.cluster;
    if k.placement.iter().any(|p| p.node_selector.is_empty()) {
        y.0.push_str(
            "# The servers are not pinned to a GPU model: set `kubernetes.node_selector` to your cluster's\n\
             # labels (such as nvidia.com/gpu.product).\n",
        );
    }
    let downloaded = !d.model.path.starts_with('/');
    if downloaded && k.model_cache.is_none() {
        y.0.push_str(
            "# Each server pod downloads the model whenever it starts: `kubernetes.model_cache` keeps the\n\
             # download on a volume.\n",
        );
    }
    if downloaded && k.secret_env.is_empty() {
        y.0.push_str("# A gated model needs a token: `kubernetes.secret_env` (HF_TOKEN: <secret>/<key>).\n");
    }
    for k in 0..layout.sets.len() {
        y.line(0, "---");
        leader_worker_set(&mut y, d, layout, k);
    }
    y.line(0, "---");
    router(&mut y, d, layout);
    RenderedFile { name: format!("{}.kubernetes.yaml", d.name), contents: y.0, executable: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};
    use crate::rules::Severity;

    /// A process as it starts: its entry (`python3 -m module`), arguments and environment.
    type Started = (String, Vec<String>, Vec<(String, String)>);

    fn rendered(d: &Deployment) -> String {
        render_kubernetes(d).unwrap_or_else(|e| panic!("{}: {e}", d.name)).contents
    }

    fn documents(text: &str) -> Vec<serde_yaml::Value> {
        use serde::Deserialize;
        serde_yaml::Deserializer::from_str(text).map(|doc| serde_yaml::Value::deserialize(doc).unwrap()).collect()
    }

    /// What the pods run, read back by the linter (which sets each pod's LeaderWorkerSet
    /// variables as the controller does): each process's argv and environment, in order.
    fn read_back(text: &str) -> Vec<Started> {
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
    /// leader's address as LeaderWorkerSet gives it (`<pod>.<set>.<namespace>` in a namespace).
    fn placed(d: &Deployment) -> Vec<Started> {
        let layout = layout(d).unwrap();
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

    #[test]
    fn every_pod_runs_what_the_plan_says() {
        for e in EXAMPLES {
            let d = example(e.name).unwrap();
            let text = rendered(&d);
            assert_eq!(read_back(&text), placed(&d), "{}", e.name);
            let kinds: Vec<String> =
                documents(&text).iter().map(|doc| doc["kind"].as_str().unwrap().to_owned()).collect();
            let mut want = vec!["LeaderWorkerSet", "LeaderWorkerSet", "Deployment", "Service"];
            if d.kubernetes.service_discovery {
                want.extend(["ServiceAccount", "Role", "RoleBinding"]);
            }
            assert_eq!(kinds, want, "{}", e.name);
        }
    }

    /// The manifests are a fixed point of linting: the deployment the linter reconstructs from
    /// them renders the very same manifests.
    #[test]
    fn the_reconstructed_deployment_renders_the_same_manifests() {
        let mut deployments: Vec<Deployment> = EXAMPLES.iter().map(|e| example(e.name).unwrap()).collect();
        let mut own = example("qwen3-2p1d-nixl").unwrap();
        own.prefill.instances[1].port = Some(31000);
        own.launcher.image = Some("registry.local/sglang:v0.5.23-custom".into());
        own.router.image = Some("registry.local/router:1".into());
        let mut local = example("deepseek-v3-dp-deepep").unwrap();
        local.model.path = "/models/deepseek-v3".into();
        local.kubernetes.model_cache = Some("/data/hf".into());
        let mut discovered = discovering("deepseek-v3-dp-deepep");
        discovered.prefill.instances.push(discovered.prefill.instances[0].clone());
        deployments.extend([own, local, in_cluster(), discovered, discovering("qwen3-2p1d-nixl")]);
        for d in deployments {
            let text = rendered(&d);
            // The reconstructed deployment is named after the pods' instance label.
            let linted = lint(&[Input::new("k8s.yaml", text.as_str())], &Options::default());
            let back = crate::lint::reconstruct::deployment(&linted, 0).unwrap().deployment;
            assert_eq!((&back.launcher.image, &back.router.image), (&d.launcher.image, &d.router.image));
            assert_eq!(back.kubernetes, d.kubernetes, "{}", d.name);
            assert_eq!(rendered(&back), text, "{}", d.name);
        }
    }

    /// Kubernetes expands `$(VAR)` in commands and environment values: every value reaches the
    /// server as written, whatever it holds.
    #[test]
    fn values_reach_the_servers_unexpanded() {
        let mut d = example("deepseek-v3-dp-deepep").unwrap();
        let nasty = "$(rm -rf /) $HOME $$ a$ $(LWS_WORKER_INDEX) 'q\" \\ \n\u{2028}é";
        d.model.served_name = Some(nasty.into());
        d.shared.env.insert("X".into(), nasty.into());
        d.prefill.extra_args = vec!["--json-model-override-args".into(), format!("{{\"a\": \"{nasty}\"}}")];
        d.router.env.insert("Y".into(), "$(X)$$".into());
        let text = rendered(&d);
        assert!(!text.replace("$$", "").contains("$(rm"), "an unescaped $( reached the manifest");
        assert_eq!(read_back(&text), placed(&d));
        let back = read_back(&text);
        assert!(back[0].1.contains(&nasty.to_owned()));
        assert!(back[0].2.contains(&("X".to_owned(), nasty.to_owned())));
    }

    /// Instances that start alike are the replicas of one LeaderWorkerSet; when one has a port
    /// of its own, each instance of that side is a LeaderWorkerSet of its own.
    #[test]
    fn instances_that_differ_get_a_leader_worker_set_each() {
        let d = example("qwen3-2p1d-nixl").unwrap();
        let names = |d: &Deployment| -> Vec<(String, u64)> {
            documents(&rendered(d))
                .iter()
                .filter(|doc| doc["kind"] == "LeaderWorkerSet")
                .map(|doc| {
                    (doc["metadata"]["name"].as_str().unwrap().to_owned(), doc["spec"]["replicas"].as_u64().unwrap())
                })
                .collect()
        };
        assert_eq!(names(&d), [("qwen3-2p1d-nixl-prefill".into(), 2), ("qwen3-2p1d-nixl-decode".into(), 1)]);
        let mut own_port = d.clone();
        own_port.prefill.instances[1].port = Some(31000);
        assert_eq!(
            names(&own_port),
            [
                ("qwen3-2p1d-nixl-prefill-0".into(), 1),
                ("qwen3-2p1d-nixl-prefill-1".into(), 1),
                ("qwen3-2p1d-nixl-decode".into(), 1)
            ]
        );
        let text = rendered(&own_port);
        assert!(text.contains("http://qwen3-2p1d-nixl-prefill-1-0.qwen3-2p1d-nixl-prefill-1:31000"));
        assert_eq!(read_back(&text), placed(&own_port));
    }

    /// The pods of one group share a template, so the nodes of an instance must start alike.
    #[test]
    fn nodes_of_an_instance_that_differ_are_refused() {
        let mut d = example("deepseek-v3-dp-deepep").unwrap();
        d.decode.instances[0].nodes[1].ib_device = Some("mlx5_9".into());
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.message.contains("`decode.instances[0].nodes[1]`") && err.message.contains("mlx5_9"), "{err}");
        assert_eq!(err.field.as_deref(), Some("decode.instances[0].nodes[1]"));
        let mut d = example("deepseek-v3-dp-deepep").unwrap();
        d.prefill.instances[0].nodes[1].gpus = Some(4);
        d.prefill.instances[0].nodes[0].gpus = Some(12);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.message.contains("4 GPUs against 12"), "{err}");
    }

    const GPU_LABEL: &str = "nvidia.com/gpu.product";

    /// A deployment with every cluster setting, prefill and decode on different GPU models.
    fn in_cluster() -> Deployment {
        let mut d = example("llama-1p1d").unwrap();
        let k = &mut d.kubernetes;
        k.namespace = Some("llm".into());
        k.node_selector.insert("pool".into(), "".into());
        k.prefill.node_selector.insert(GPU_LABEL.into(), "NVIDIA-H200".into());
        k.decode.node_selector.insert(GPU_LABEL.into(), "NVIDIA-H100-80GB-HBM3".into());
        // In key order, as the pods list them and the linter reads them back.
        k.tolerations = vec!["dedicated=llm".into(), "nvidia.com/gpu:NoSchedule".into(), "spot".into()];
        k.prefill.tolerations = vec!["h200:NoExecute".into()];
        k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
        k.model_cache = Some("hf-cache".into());
        k.image_pull_secrets = vec!["regcred".into()];
        k.router_replicas = 2;
        k.exclusive_topology = Some("cloud.google.com/gke-nodepool".into());
        k.labels.insert("kueue.x-k8s.io/queue-name".into(), "gpu-queue".into());
        k.pod_annotations.insert("prometheus.io/scrape".into(), "true".into());
        d
    }

    #[test]
    fn cluster_settings_reach_every_pod() {
        let d = in_cluster();
        let text = rendered(&d);
        // The pods still run what the plan says; the token is no plain value.
        assert_eq!(read_back(&text), placed(&d));
        assert!(!text.contains("not pinned") && !text.contains("downloads the model") && !text.contains("gated"));
        let docs = documents(&text);
        assert!(docs.iter().all(|doc| doc["metadata"]["namespace"] == "llm"));
        // Every object carries the extra labels; the server pods carry the annotations.
        assert!(docs.iter().all(|doc| doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue"));
        let pod_meta = &docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"];
        assert_eq!(pod_meta["annotations"]["prometheus.io/scrape"], "true");
        assert_eq!(pod_meta["labels"]["kueue.x-k8s.io/queue-name"], "gpu-queue");
        assert!(docs[2]["spec"]["selector"]["matchLabels"].get("kueue.x-k8s.io/queue-name").is_none());
        let topology = |doc: &serde_yaml::Value| doc["metadata"]["annotations"][EXCLUSIVE_TOPOLOGY].clone();
        assert_eq!(
            (topology(&docs[0]), topology(&docs[1])),
            ("cloud.google.com/gke-nodepool".into(), "cloud.google.com/gke-nodepool".into())
        );
        for (doc, gpu, tolerations) in [(&docs[0], "NVIDIA-H200", 4), (&docs[1], "NVIDIA-H100-80GB-HBM3", 3)] {
            let pod = &doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"];
            assert_eq!(pod["nodeSelector"][GPU_LABEL], gpu);
            assert_eq!(pod["nodeSelector"]["pool"], "");
            // In key order, wherever they were written.
            let t = pod["tolerations"].as_sequence().unwrap();
            let keys: Vec<&str> = t.iter().map(|t| t["key"].as_str().unwrap()).collect();
            let mut want = vec!["dedicated", "nvidia.com/gpu", "spot"];
            if tolerations == 4 {
                want.insert(1, "h200");
            }
            assert_eq!(keys, want);
            let by = |key: &str| t.iter().find(|t| t["key"] == key).unwrap();
            let gpu = by("nvidia.com/gpu");
            assert_eq!((&gpu["operator"], &gpu["effect"]), (&"Exists".into(), &"NoSchedule".into()));
            assert_eq!((&by("dedicated")["operator"], &by("dedicated")["value"]), (&"Equal".into(), &"llm".into()));
            assert_eq!((&by("spot")["operator"], by("spot").get("effect")), (&"Exists".into(), None));
            assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
            let c = &pod["containers"][0];
            let token = c["env"].as_sequence().unwrap().iter().find(|e| e["name"] == "HF_TOKEN").unwrap();
            assert_eq!(token["valueFrom"]["secretKeyRef"]["name"], "hf-token");
            assert_eq!(token["valueFrom"]["secretKeyRef"]["key"], "token");
            let mount = c["volumeMounts"].as_sequence().unwrap().iter().find(|m| m["name"] == "model-cache").unwrap();
            assert_eq!(mount["mountPath"], MODEL_CACHE_MOUNT);
            let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == "model-cache").unwrap();
            assert_eq!(volume["persistentVolumeClaim"]["claimName"], "hf-cache");
        }
        // The router needs no GPU node and no token, but may pull from the same registry.
        assert_eq!(docs[2]["spec"]["replicas"], 2);
        let router = &docs[2]["spec"]["template"]["spec"];
        assert!(router.get("nodeSelector").is_none() && router.get("tolerations").is_none());
        assert_eq!(router["imagePullSecrets"][0]["name"], "regcred");
        assert!(!text[text.find("kind: Deployment").unwrap()..].contains("HF_TOKEN"));
    }

    /// An example whose router discovers its servers.
    fn discovering(name: &str) -> Deployment {
        let mut d = example(name).unwrap();
        d.kubernetes.namespace = Some("llm".into());
        d.kubernetes.service_discovery = true;
        d
    }

    #[test]
    fn the_router_discovers_the_leader_pods() {
        let d = discovering("deepseek-v3-dp-deepep");
        let text = rendered(&d);
        let docs = documents(&text);
        let kinds: Vec<&str> = docs.iter().map(|doc| doc["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["LeaderWorkerSet", "LeaderWorkerSet", "Deployment", "Service", "ServiceAccount", "Role", "RoleBinding"]
        );
        let router = &docs[2]["spec"]["template"]["spec"];
        assert_eq!(router["serviceAccountName"], "deepseek-v3-dp-deepep-router");
        let argv: Vec<&str> =
            router["containers"][0]["command"].as_sequence().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert!(!argv.contains(&"--prefill") && !argv.contains(&"--decode"), "{argv:?}");
        let after = |flag: &str| argv[argv.iter().position(|w| *w == flag).unwrap() + 1..].to_vec();
        assert_eq!(
            after("--prefill-selector")[..3],
            [
                "app.kubernetes.io/instance=deepseek-v3-dp-deepep",
                "app.kubernetes.io/component=prefill",
                "leaderworkerset.sigs.k8s.io/worker-index=0"
            ]
        );
        assert_eq!((after("--service-discovery-port")[0], after("--service-discovery-namespace")[0]), ("30000", "llm"));
        // Every router flag exists in the router release, with a valid value.
        let spec = d.router_version.spec();
        let parsed = crate::spec::parse_argv(spec, &argv[3..].iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        // Every server listens on the discovery port; only a prefill leader carries its bootstrap port.
        let p = layout(&d).unwrap().plan;
        assert!(p.servers.iter().all(|s| s.args.iter().any(|a| a.tokens == ["--port", "30000"])));
        let lws = |k: usize, t: &str| docs[k]["spec"]["leaderWorkerTemplate"][t]["metadata"].clone();
        assert_eq!(lws(0, "leaderTemplate")["annotations"][BOOTSTRAP_ANNOTATION], "8998");
        assert!(
            lws(0, "workerTemplate").get("annotations").is_none()
                && lws(1, "leaderTemplate").get("annotations").is_none()
        );
        assert_eq!(docs[6]["subjects"][0]["namespace"], "llm");
        // Read back, the router is linked to every server it discovers, and all is clean.
        assert_eq!(read_back(&text).len(), 5);
        let linted = lint(&[Input::new("k8s.yaml", text.as_str())], &Options::default());
        assert_eq!(linted.groups.len(), 1);
        let r = linted.groups[0].router.as_ref().unwrap();
        assert_eq!((r.view.prefills.len(), r.view.decodes.len()), (1, 1));
        assert_eq!(r.view.prefills[0].bootstrap_port, Some(8998));
    }

    #[test]
    fn discovery_needs_a_namespace_and_one_port() {
        let mut d = discovering("qwen3-2p1d-nixl");
        d.kubernetes.namespace = None;
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.message.starts_with("`kubernetes.service_discovery` needs `kubernetes.namespace`"), "{err}");
        let mut d = discovering("qwen3-2p1d-nixl");
        d.decode.instances[0].port = Some(31000);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(
            err.message.starts_with("`decode.instances[0].port` is 31000") && err.message.contains("here 30000"),
            "{err}"
        );
        d.decode.instances[0].port = Some(30000);
        assert!(render_kubernetes(&d).is_ok());
    }

    #[test]
    fn a_variable_is_set_once() {
        let mut d = in_cluster();
        d.decode.env.insert("HF_TOKEN".into(), "hf_abc".into());
        let err = render_kubernetes(&d).unwrap_err();
        assert!(
            err.message.starts_with("`kubernetes.secret_env.HF_TOKEN`") && err.message.contains("decode servers"),
            "{err}"
        );
        d.kubernetes.tolerations.push("gpu:Sometimes".into());
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.message.starts_with("`kubernetes.tolerations[3]`"), "{err}");
        assert_eq!(err.field.as_deref(), Some("kubernetes.tolerations[3]"));
    }

    #[test]
    fn names_must_be_kubernetes_names() {
        let mut d = example("llama-1p1d").unwrap();
        for bad in ["Llama", "llama_1", "-llama", "llama-", "", "llama.1p1d"] {
            d.name = bad.into();
            let err = render_kubernetes(&d).unwrap_err();
            assert!(err.message.starts_with("`name`") && err.message.contains("DNS label"), "{bad}: {err}");
        }
        d.name = "a".repeat(43);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(
            err.message.contains("StatefulSet names up to 53 characters") && err.message.contains("over the 52"),
            "{err}"
        );
        d.name = "a".repeat(42);
        assert!(render_kubernetes(&d).is_ok());
    }

    #[test]
    fn images_gpus_and_local_paths() {
        let mut d = example("llama-1p1d").unwrap();
        let text = rendered(&d);
        assert!(text.contains("image: lmsysorg/sglang:v0.5.23\n") && text.contains("image: lmsysorg/sglang-router:v"));
        assert!(text.contains("nvidia.com/gpu: 1\n"));
        d.decode.gpu = Some(crate::deployment::Gpu::Mi300x);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.message.contains("`decode.gpu`") && err.message.contains("`launcher.image`"), "{err}");
        d.launcher.image = Some("registry.local/sglang:rocm".into());
        d.model.path = "/models/llama".into();
        let docs = documents(&rendered(&d));
        let decode = &docs[1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"];
        assert_eq!(decode["containers"][0]["image"], "registry.local/sglang:rocm");
        assert_eq!(decode["containers"][0]["resources"]["limits"]["amd.com/gpu"], 1);
        assert_eq!(decode["volumes"][1]["hostPath"]["path"], "/models/llama");
        assert_eq!(decode["containers"][0]["volumeMounts"][1]["mountPath"], "/models/llama");
    }
}
