//! A RoleBasedGroup (`workloads.x-k8s.io/v1alpha2`, SGLang's RBG controller): one role per set of
//! server instances (`prefill`, `decode`, or `prefill-<i>` when the instances of a side start
//! differently), each a leader-worker pattern of one pod per node, and a `router` role that
//! depends on every server role, so that the controller creates the routers once the servers are
//! ready. The Service in front of the routers (and, with `kubernetes.service_discovery`, the
//! ServiceAccount and RBAC that let them watch the pods) follow as objects of their own, as in
//! the `kubernetes` format.
//!
//! The pods are those of [`super::pods`] placed by [`Engine::Rbg`]: the role's default workload,
//! a RoleInstanceSet, makes instance `g` of role set `s` the RoleInstance `s-g` whose pods are
//! `s-g-0` (the leader) to `s-g-<k>`, all in the headless Service `s-s`; each pod reads its
//! leader's address and its index from `$(RBG_LWP_LEADER_ADDRESS)` and
//! `$(RBG_LWP_WORKER_INDEX)`. One template starts every pod of a group (no patch changes the
//! containers), so it declares the leader's ports and probes none when a group has workers.
//!
//! Written for the RBG controller's v1alpha2 API (its CRD as of the commit named in
//! `tests/fixtures/crds/README.md`); its `exclusive-topology` annotation separates roles, not
//! groups, so `kubernetes.exclusive_topology` (LeaderWorkerSet's meaning) is refused.

use super::pods::{layout, pod, router_pod, router_service, Engine, Layout, Yaml};
use super::{header, RenderError, RenderedFile};
use crate::deployment::Deployment;

/// The API version written.
pub(crate) const API_VERSION: &str = "workloads.x-k8s.io/v1alpha2";

/// Renders the deployment as one multi-document YAML file (`<name>.rbg.yaml`).
pub fn render_rbg(d: &Deployment) -> Result<RenderedFile, RenderError> {
    Ok(manifest(d, &rbg_layout(d)?))
}

/// Why the deployment cannot run as a RoleBasedGroup, if it cannot.
pub(crate) fn refusal(d: &Deployment) -> Option<RenderError> {
    rbg_layout(d).err()
}

fn rbg_layout(d: &Deployment) -> Result<Layout, RenderError> {
    if d.kubernetes.exclusive_topology.is_some() {
        return Err(RenderError::at(
            "kubernetes.exclusive_topology",
            format_args!(
                "gives each LeaderWorkerSet group a topology domain of its own; a RoleBasedGroup's \
                 exclusive topology keeps roles apart instead, and none keeps the groups of one role apart. \
                 Leave it unset for the `rbg` format, or render `kubernetes`"
            ),
        ));
    }
    layout(d, Engine::Rbg)
}

/// The role of a set: the set's name less the deployment's (`prefill`, `decode-1`).
fn role_name<'a>(d: &Deployment, set: &'a str) -> &'a str {
    &set[d.name.len() + 1..]
}

fn manifest(d: &Deployment, layout: &Layout) -> RenderedFile {
    let mut y = Yaml(header(&layout.plan));
    y.0.push_str(
        "# Needs SGLang's RoleBasedGroup controller (workloads.x-k8s.io/v1alpha2); `kubectl apply -f` this\n\
         # file in one namespace. Each instance is one leader-worker group of pods, one pod per node; the\n\
         # router role starts once the server roles are ready. Pods that use RDMA (`ib_device`) run on\n\
         # the host network. A local model path is mounted from the same path on the node.\n",
    );
    y.0.push_str(match layout.discovery {
        None => "# The router reaches the leaders by their pod names: render again after changing `instances`.\n",
        Some(_) => "# The router finds the leader pods by their labels, so scaling a role adds groups it serves.\n",
    });
    y.line(0, "---");
    y.object(API_VERSION, "RoleBasedGroup", d, &d.name, "group");
    y.key(0, "spec");
    y.key(2, "roles");
    for (k, set) in layout.sets.iter().enumerate() {
        let nnodes = layout.plan.servers[layout.templates[k].server].nnodes;
        y.first(2, "name", role_name(d, &set.name));
        y.plain(4, "replicas", set.instances.len());
        y.key(4, "leaderWorkerPattern");
        y.plain(6, "size", nnodes);
        y.key(6, "restartPolicyConfig");
        y.pair(8, "type", "RecreateRoleInstanceOnPodRestart");
        y.key(6, "template");
        pod(&mut y, 8, d, layout, k, (nnodes == 1).then_some(true));
    }
    y.first(2, "name", "router");
    y.plain(4, "replicas", layout.cluster.router_replicas);
    y.key(4, "dependencies");
    for set in &layout.sets {
        y.item(4, role_name(d, &set.name));
    }
    y.key(4, "standalonePattern");
    y.key(6, "template");
    router_pod(&mut y, 8, d, layout);
    router_service(&mut y, d, layout);
    RenderedFile { name: format!("{}.rbg.yaml", d.name), contents: y.0, executable: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};
    use crate::render::pods::testing::{documents, placed_on, read_back};

    fn rendered(d: &Deployment) -> String {
        render_rbg(d).unwrap_or_else(|e| panic!("{}: {e}", d.name)).contents
    }

    /// Deployments that exercise every setting the format writes: the examples, a side whose
    /// instances start differently, local paths and a host-path cache, every cluster setting,
    /// and routers that discover their servers.
    pub(crate) fn deployments() -> Vec<Deployment> {
        let mut all: Vec<Deployment> = EXAMPLES.iter().map(|e| example(e.name).unwrap()).collect();
        let mut own = example("qwen3-2p1d-nixl").unwrap();
        own.prefill.instances[1].port = Some(31000);
        own.launcher.image = Some("registry.local/sglang:v0.5.23-custom".into());
        own.router.image = Some("registry.local/router:1".into());
        let mut local = example("deepseek-v3-dp-deepep").unwrap();
        local.model.path = "/models/deepseek-v3".into();
        local.kubernetes.model_cache = Some("/data/hf".into());
        let mut cluster = example("llama-1p1d").unwrap();
        let k = &mut cluster.kubernetes;
        k.namespace = Some("llm".into());
        k.node_selector.insert("pool".into(), "".into());
        k.decode.node_selector.insert("nvidia.com/gpu.product".into(), "NVIDIA-H100-80GB-HBM3".into());
        k.tolerations = vec!["dedicated=llm".into(), "nvidia.com/gpu:NoSchedule".into()];
        k.prefill.tolerations = vec!["h200:NoExecute".into()];
        k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
        k.model_cache = Some("hf-cache".into());
        k.image_pull_secrets = vec!["regcred".into()];
        k.router_replicas = 2;
        k.labels.insert("kueue.x-k8s.io/queue-name".into(), "gpu-queue".into());
        k.pod_annotations.insert("prometheus.io/scrape".into(), "true".into());
        let mut discovered = example("qwen3-2p1d-nixl").unwrap();
        discovered.kubernetes.namespace = Some("llm".into());
        discovered.kubernetes.service_discovery = true;
        all.extend([own, local, cluster, discovered]);
        all
    }

    #[test]
    fn every_pod_runs_what_the_plan_says() {
        for d in deployments() {
            let text = rendered(&d);
            assert_eq!(read_back(&text), placed_on(&d, Engine::Rbg), "{}", d.name);
            let docs = documents(&text);
            let kinds: Vec<&str> = docs.iter().map(|doc| doc["kind"].as_str().unwrap()).collect();
            let mut want = vec!["RoleBasedGroup", "Service"];
            if d.kubernetes.service_discovery {
                want.extend(["ServiceAccount", "Role", "RoleBinding"]);
            }
            assert_eq!(kinds, want, "{}", d.name);
        }
    }

    /// The group's roles: one per set, then the router, which depends on every one of them.
    #[test]
    fn the_router_role_starts_after_the_server_roles() {
        let mut d = example("qwen3-2p1d-nixl").unwrap();
        d.prefill.instances[1].port = Some(31000);
        let docs = documents(&rendered(&d));
        let roles = docs[0]["spec"]["roles"].as_sequence().unwrap();
        let names: Vec<&str> = roles.iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["prefill-0", "prefill-1", "decode", "router"]);
        let deps: Vec<&str> =
            roles[3]["dependencies"].as_sequence().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
        assert_eq!(deps, ["prefill-0", "prefill-1", "decode"]);
        let text = rendered(&d);
        assert!(text.contains("http://qwen3-2p1d-nixl-prefill-1-0-0.s-qwen3-2p1d-nixl-prefill-1:31000"), "{text}");
        // A multi-node role's one template probes no port (the workers serve none).
        let d = example("deepseek-v3-dp-deepep").unwrap();
        let docs = documents(&rendered(&d));
        let prefill = &docs[0]["spec"]["roles"][0]["leaderWorkerPattern"];
        assert_eq!(prefill["size"], 2);
        let container = &prefill["template"]["spec"]["containers"][0];
        assert!(container.get("readinessProbe").is_none() && container.get("ports").is_some());
    }

    /// The format is a fixed point of linting: the deployment the linter reconstructs from the
    /// group renders the very same text.
    #[test]
    fn the_reconstructed_deployment_renders_the_same_group() {
        for d in deployments() {
            let text = rendered(&d);
            let linted = lint(&[Input::new("rbg.yaml", text.as_str())], &Options::default());
            let back = crate::lint::reconstruct::deployment(&linted, 0).unwrap().deployment;
            assert_eq!(back.kubernetes, d.kubernetes, "{}", d.name);
            assert_eq!(rendered(&back), text, "{}", d.name);
        }
    }

    #[test]
    fn what_a_group_cannot_say_is_refused_at_its_field() {
        let mut d = example("llama-1p1d").unwrap();
        d.kubernetes.exclusive_topology = Some("kubernetes.io/hostname".into());
        let err = render_rbg(&d).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("kubernetes.exclusive_topology"), "{err}");
        let mut d = example("llama-1p1d").unwrap();
        d.name = "a".repeat(52);
        let err = render_rbg(&d).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("name"), "{err}");
        assert!(err.message.contains("over the 63"), "{err}");
        // `<name>-prefill-0-0`, the longest pod name, is then 63 characters long.
        d.name = "a".repeat(51);
        assert!(render_rbg(&d).is_ok());
    }
}
