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

use serde_json::{json, Value};

use super::{header, RenderedFile};
use crate::deployment::{Deployment, Role};
use crate::flags::{self, Flag};
use crate::plan::{plan, Plan, ServerProcess};

/// The leader's address in a LeaderWorkerSet pod.
const LEADER_ADDRESS: &str = "$(LWS_LEADER_ADDRESS)";
/// The pod's index in its group (0 on the leader).
const WORKER_INDEX: &str = "$(LWS_WORKER_INDEX)";
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
}

/// Why the pods of a set cannot share a template.
enum Differs {
    /// Two instances of one side start differently: one set per instance then.
    Instances(Role),
    /// Two nodes of one instance start differently: no LeaderWorkerSet can start them.
    Nodes(String),
}

/// Renders the deployment as one multi-document YAML file (`<name>.kubernetes.yaml`).
pub fn render_kubernetes(d: &Deployment) -> Result<RenderedFile, String> {
    manifest(d, &layout(d)?)
}

/// One LeaderWorkerSet per side, or per instance of a side whose instances start differently.
fn layout(d: &Deployment) -> Result<Layout, String> {
    check_name(&d.name)?;
    let mut apart = [false; 2];
    loop {
        let sets = sets(d, apart);
        check_pod_names(d, &sets)?;
        let plan = plan(&place(d, &sets));
        match templates(&plan, &sets) {
            Ok(templates) => return Ok(Layout { sets, plan, templates }),
            Err(Differs::Instances(role)) if !apart[role as usize] => apart[role as usize] = true,
            Err(Differs::Instances(role)) => unreachable!("a {role} set of one instance has no other instance"),
            Err(Differs::Nodes(why)) => return Err(why),
        }
    }
}

/// The deployment name names every object: it must be a DNS label.
fn check_name(name: &str) -> Result<(), String> {
    let b = name.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`name` ({name:?}) names the Kubernetes objects and pods, so it must be a DNS label: lowercase \
             letters, digits and `-`, starting with a letter and ending with a letter or digit; rename the deployment"
        ))
    }
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
fn check_pod_names(d: &Deployment, sets: &[Set]) -> Result<(), String> {
    for set in sets {
        let longest = format!("{}-{}", set.name, set.instances.len() - 1);
        if longest.len() > MAX_STATEFUL_SET {
            return Err(format!(
                "`name` ({:?}) gives StatefulSet names up to {} characters (`{longest}`), over the \
                 {MAX_STATEFUL_SET} Kubernetes allows; shorten the deployment's name",
                d.name,
                longest.len()
            ));
        }
    }
    Ok(())
}

/// The deployment as it runs on the pods: hosts are the pods' names, everything binds all
/// addresses, and GPUs are numbered from 0 in each pod.
fn place(d: &Deployment, sets: &[Set]) -> Deployment {
    let mut placed = d.clone();
    for set in sets {
        let side = placed.side_mut(set.role);
        side.bind_host = Some("0.0.0.0".into());
        for (g, &i) in set.instances.iter().enumerate() {
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
                    return Err(Differs::Nodes(format!(
                        "`{role}.instances[{i}].nodes[{n}]` would start unlike its leader (`nodes[0]`): {why}. \
                         The pods of one LeaderWorkerSet group share a template: give every node of an instance \
                         the same `gpus` and `ib_device`, or render the `shell` format",
                        role = set.role,
                        n = p.node
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

fn labels(d: &Deployment, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "sglang",
        "app.kubernetes.io/instance": d.name,
        "app.kubernetes.io/component": component,
    })
}

/// Sets a container's `env` (left out when empty).
fn set_env(container: &mut Value, env: &std::collections::BTreeMap<String, String>) {
    if !env.is_empty() {
        container["env"] = env.iter().map(|(k, v)| json!({"name": k, "value": escape(v)})).collect();
    }
}

/// The server image, or why there is none.
fn image(d: &Deployment) -> Result<String, String> {
    if let Some(image) = &d.launcher.image {
        return Ok(image.clone());
    }
    match Role::BOTH.into_iter().find(|&r| d.side(r).gpu.is_some_and(|g| g.is_hip())) {
        Some(role) => Err(format!(
            "`{role}.gpu` is an AMD GPU, and SGLang's ROCm images are tagged by GPU family; set `launcher.image` \
             to the image the pods run"
        )),
        None => Ok(format!("lmsysorg/sglang:v{}", d.sglang_version)),
    }
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

fn pod_spec(d: &Deployment, image: &str, set: &Set, p: &ServerProcess, argv: &[String], leader: bool) -> Value {
    let gpu_resource = if d.side(set.role).gpu.is_some_and(|g| g.is_hip()) { "amd.com/gpu" } else { "nvidia.com/gpu" };
    let rdma = d.side(set.role).instances[set.instances[0]].nodes.iter().any(|n| n.ib_device.is_some());
    let paths = local_paths(d);
    let mut mounts = vec![json!({"name": "dshm", "mountPath": "/dev/shm"})];
    let mut volumes = vec![json!({"name": "dshm", "emptyDir": {"medium": "Memory"}})];
    for (k, path) in paths.iter().enumerate() {
        mounts.push(json!({"name": format!("local-{k}"), "mountPath": path, "readOnly": true}));
        volumes.push(json!({"name": format!("local-{k}"), "hostPath": {"path": path}}));
    }
    if rdma {
        mounts.push(json!({"name": "infiniband", "mountPath": "/dev/infiniband"}));
        volumes.push(json!({"name": "infiniband", "hostPath": {"path": "/dev/infiniband"}}));
    }
    let port = p.args.iter().find(|a| is(a.flag, &flags::PORT)).and_then(|a| a.tokens[1].parse::<u16>().ok());
    let mut container = json!({
        "name": set.role.as_str(),
        "image": image,
        "command": argv,
        "resources": {"limits": {gpu_resource: p.gpus.1}},
        "securityContext": if rdma {
            json!({"privileged": true, "capabilities": {"add": ["IPC_LOCK"]}})
        } else {
            json!({"capabilities": {"add": ["IPC_LOCK"]}})
        },
        "volumeMounts": mounts,
    });
    set_env(&mut container, &p.env);
    if let (true, Some(port)) = (leader, port) {
        // Declared so that the scheduler keeps two pods that bind one port (on the host network)
        // off the same node.
        let mut ports = vec![json!({"name": "http", "containerPort": port})];
        if set.role == Role::Prefill {
            let bootstrap = p.args.iter().find(|a| is(a.flag, &flags::BOOTSTRAP_PORT));
            if let Some(b) = bootstrap.and_then(|a| a.tokens[1].parse::<u16>().ok()) {
                ports.push(json!({"name": "bootstrap", "containerPort": b}));
            }
        }
        container["ports"] = Value::Array(ports);
        container["readinessProbe"] = json!({"tcpSocket": {"port": port}, "periodSeconds": 10});
    }
    let mut spec = json!({"containers": [container], "volumes": volumes});
    if rdma {
        spec["hostNetwork"] = json!(true);
        spec["dnsPolicy"] = json!("ClusterFirstWithHostNet");
    }
    json!({"metadata": {"labels": labels(d, set.role.as_str())}, "spec": spec})
}

fn leader_worker_set(d: &Deployment, image: &str, plan: &Plan, set: &Set, t: &Template) -> Value {
    let p = &plan.servers[t.server];
    let mut group = json!({"size": p.nnodes, "restartPolicy": "RecreateGroupOnPodRestart"});
    if p.nnodes > 1 {
        group["leaderTemplate"] = pod_spec(d, image, set, p, &t.argv, true);
        group["workerTemplate"] = pod_spec(d, image, set, p, &t.argv, false);
    } else {
        group["workerTemplate"] = pod_spec(d, image, set, p, &t.argv, true);
    }
    json!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": set.name, "labels": labels(d, set.role.as_str())},
        "spec": {"replicas": set.instances.len(), "leaderWorkerTemplate": group},
    })
}

fn router(d: &Deployment, plan: &Plan) -> [Value; 2] {
    let name = format!("{}-router", d.name);
    let port = plan.router.port;
    let mut container = json!({
        "name": "router",
        "image": format!("lmsysorg/sglang-router:v{}", plan.router_release),
        "command": plan.router_argv().iter().map(|t| escape(t)).collect::<Vec<_>>(),
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 10},
    });
    set_env(&mut container, &plan.router.env);
    [
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels(d, "router")},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels(d, "router")},
                "template": {"metadata": {"labels": labels(d, "router")}, "spec": {"containers": [container]}},
            },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": labels(d, "router")},
            "spec": {"selector": labels(d, "router"), "ports": [{"name": "http", "port": port, "targetPort": port}]},
        }),
    ]
}

fn manifest(d: &Deployment, layout: &Layout) -> Result<RenderedFile, String> {
    let image = image(d)?;
    let plan = &layout.plan;
    let mut docs: Vec<Value> = (layout.sets.iter().zip(&layout.templates))
        .map(|(set, t)| leader_worker_set(d, &image, plan, set, t))
        .collect();
    docs.extend(router(d, plan));
    let mut contents = header(plan);
    contents.push_str(
        "# Needs the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1); `kubectl apply -f` this file\n\
         # in one namespace. Each instance is one group of pods, one pod per node, and the router reaches\n\
         # the leaders by their pod names. Pods that use RDMA (`ib_device`) run on the host network.\n\
         # Pods are not pinned to a GPU model: add a nodeSelector for your cluster's labels (such as\n\
         # nvidia.com/gpu.product). A Hugging Face model is downloaded by each pod; a local path is\n\
         # mounted from the same path on the node.\n",
    );
    for doc in docs {
        contents.push_str("---\n");
        contents.push_str(&crate::yaml_value::to_string(&doc)?);
    }
    Ok(RenderedFile { name: format!("{}.kubernetes.yaml", d.name), contents, executable: false })
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

    /// What the plan of the deployment placed on the pods says each process runs.
    fn placed(d: &Deployment) -> Vec<Started> {
        let p = layout(d).unwrap().plan;
        let env = |e: &std::collections::BTreeMap<String, String>| e.clone().into_iter().collect();
        let mut out: Vec<_> = p
            .servers
            .iter()
            .map(|s| {
                let argv = p.server_argv(s);
                (argv[..3].join(" "), argv[3..].to_vec(), env(&s.env))
            })
            .collect();
        let router = p.router_argv();
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
            assert_eq!(kinds, ["LeaderWorkerSet", "LeaderWorkerSet", "Deployment", "Service"], "{}", e.name);
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
        assert!(err.contains("`decode.instances[0].nodes[1]`") && err.contains("mlx5_9"), "{err}");
        let mut d = example("deepseek-v3-dp-deepep").unwrap();
        d.prefill.instances[0].nodes[1].gpus = Some(4);
        d.prefill.instances[0].nodes[0].gpus = Some(12);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.contains("4 GPUs against 12"), "{err}");
    }

    #[test]
    fn names_must_be_kubernetes_names() {
        let mut d = example("llama-1p1d").unwrap();
        for bad in ["Llama", "llama_1", "-llama", "llama-", "", "llama.1p1d"] {
            d.name = bad.into();
            let err = render_kubernetes(&d).unwrap_err();
            assert!(err.starts_with("`name`") && err.contains("DNS label"), "{bad}: {err}");
        }
        d.name = "a".repeat(43);
        let err = render_kubernetes(&d).unwrap_err();
        assert!(err.contains("StatefulSet names up to 53 characters") && err.contains("over the 52"), "{err}");
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
        assert!(err.contains("`decode.gpu`") && err.contains("`launcher.image`"), "{err}");
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
