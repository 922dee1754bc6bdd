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

use super::pods::{layout, pod, router_name, router_pod, router_service, Engine, Layout, Yaml};
use super::{header, RenderError, RenderedFile};
use crate::deployment::Deployment;

/// The LeaderWorkerSet annotation that gives each group a topology domain of its own.
pub(crate) const EXCLUSIVE_TOPOLOGY: &str = "leaderworkerset.sigs.k8s.io/exclusive-topology";

/// Renders the deployment as one multi-document YAML file (`<name>.kubernetes.yaml`).
pub fn render_kubernetes(d: &Deployment) -> Result<RenderedFile, RenderError> {
    Ok(manifest(d, &layout(d, Engine::Lws)?))
}

/// Why the deployment cannot run as Kubernetes manifests, if it cannot (the manifests are not
/// written).
pub(crate) fn refusal(d: &Deployment) -> Option<RenderError> {
    layout(d, Engine::Lws).err()
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
        pod(y, 6, d, layout, k, Some(true));
    }
    y.key(4, "workerTemplate");
    pod(y, 6, d, layout, k, Some(nnodes == 1));
}

/// The router's Deployment.
fn router(y: &mut Yaml, d: &Deployment, layout: &Layout) {
    y.object("apps/v1", "Deployment", d, &router_name(d), "router");
    y.key(0, "spec");
    y.plain(2, "replicas", layout.cluster.router_replicas);
    y.key(2, "selector");
    y.key(4, "matchLabels");
    y.labels(6, d, "router");
    y.key(2, "template");
    router_pod(y, 4, d, layout);
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
    router_service(&mut y, d, layout);
    RenderedFile { name: format!("{}.kubernetes.yaml", d.name), contents: y.0, executable: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};
    use crate::render::cluster::MODEL_CACHE_MOUNT;
    use crate::render::pods::testing::{documents, placed_on, read_back, Started};
    use crate::render::BOOTSTRAP_ANNOTATION;

    fn rendered(d: &Deployment) -> String {
        render_kubernetes(d).unwrap_or_else(|e| panic!("{}: {e}", d.name)).contents
    }

    fn placed(d: &Deployment) -> Vec<Started> {
        placed_on(d, Engine::Lws)
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
        let p = layout(&d, Engine::Lws).unwrap().plan;
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
