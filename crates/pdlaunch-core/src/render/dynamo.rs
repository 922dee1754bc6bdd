//! A `DynamoGraphDeployment` (`nvidia.com/v1alpha1`, NVIDIA Dynamo's operator): Dynamo's
//! `Frontend` (its OpenAI server and router, in place of SGLang's router) and a `dynamo.sglang`
//! worker service per set of server instances (`prefill`, `decode`, or `prefill-<i>` when the
//! instances of a side start differently), a replica per instance.
//!
//! The worker runs `python3 -m dynamo.sglang` with the servers' SGLang arguments as the plan
//! renders them for a pod (`--host 0.0.0.0`, GPUs from 0): Dynamo's worker parses its own options
//! and hands every other one to SGLang's parser, so the worker's own options (those
//! `lint/dynamo.rs` lists) are written only where the deployment's `extra_args` name them. The
//! deployment's `router` section does not apply: the Frontend finds the workers through Dynamo's
//! own discovery, and its defaults (port 8000) are the operator's.
//!
//! Written for the Dynamo releases whose SGLang runtime image ships the target SGLang release
//! ([`crate::release::DYNAMO_RELEASES`]: Dynamo 0.6.1 for SGLang 0.5.3, 0.8.1 for 0.5.6, 1.1.1 for
//! 0.5.10), and validated against the v1alpha1 schema of the DynamoGraphDeployment CRD of Dynamo
//! 0.6 and of Dynamo 1.5 (`tests/fixtures/crds/`). For another target release, `launcher.image`
//! names a Dynamo SGLang runtime built on it; without one the format refuses.
//!
//! Refused, each at its field: multi-node instances (the operator's `multinode` adds its own
//! `--dist-init-addr`, `--nnodes` and `--node-rank`, which pdlaunch does not write yet),
//! `kubernetes.service_discovery` and `kubernetes.router_replicas` (SGLang router settings),
//! `kubernetes.exclusive_topology`, and `kubernetes.labels` and `pod_annotations` (not written
//! yet: Dynamo puts pod metadata under `extraPodMetadata`).

use super::pods::{container_mounts, layout, pod_placement, pod_volumes, rdma, volume_sources, Engine, Layout, Yaml};
use super::{header, RenderError, RenderedFile};
use crate::deployment::{Deployment, Role};

/// The API version written.
pub(crate) const API_VERSION: &str = "nvidia.com/v1alpha1";

/// Dynamo's SGLang worker module.
const WORKER: &str = "dynamo.sglang";

/// The image of Dynamo's SGLang runtime.
const RUNTIME: &str = "nvcr.io/nvidia/ai-dynamo/sglang-runtime";

/// Renders the deployment as one YAML file (`<name>.dynamo.yaml`).
pub fn render_dynamo(d: &Deployment) -> Result<RenderedFile, RenderError> {
    let (layout, image) = dynamo_layout(d)?;
    Ok(manifest(d, &layout, &image))
}

/// Why the deployment cannot run as a DynamoGraphDeployment, if it cannot.
pub(crate) fn refusal(d: &Deployment) -> Option<RenderError> {
    dynamo_layout(d).err()
}

/// The image of the Frontend and the workers: `launcher.image`, or the runtime of the Dynamo
/// release that ships the target SGLang release.
fn image(d: &Deployment) -> Result<String, RenderError> {
    if let Some(image) = &d.launcher.image {
        return Ok(image.clone());
    }
    match runtime_image(d.sglang_version) {
        Some(image) => Ok(image),
        None => {
            let shipped: Vec<String> = crate::release::DYNAMO_RELEASES
                .iter()
                .map(|(dynamo, sglang)| format!("Dynamo {dynamo} ships SGLang {sglang}"))
                .collect();
            Err(RenderError::at(
                "sglang_version",
                format_args!(
                    "({}) is in no Dynamo release's SGLang runtime ({}); target one of those releases, or set \
                     `launcher.image` to a Dynamo SGLang runtime image built on SGLang {}",
                    d.sglang_version,
                    shipped.join(", "),
                    d.sglang_version
                ),
            ))
        }
    }
}

/// The image of the Dynamo runtime that ships `release`, if one does: what the format names
/// when the deployment names no image.
pub(crate) fn runtime_image(release: crate::release::Release) -> Option<String> {
    release.dynamo().map(|dynamo| format!("{RUNTIME}:{dynamo}"))
}

fn dynamo_layout(d: &Deployment) -> Result<(Layout, String), RenderError> {
    for role in Role::BOTH {
        for (i, inst) in d.side(role).instances.iter().enumerate() {
            if inst.nodes.len() > 1 {
                return Err(RenderError::at(
                    format!("{role}.instances[{i}].nodes"),
                    format_args!(
                        "spans {} nodes; pdlaunch does not write Dynamo's multi-node workers yet (the operator's \
                         `multinode` adds its own `--dist-init-addr`, `--nnodes` and `--node-rank`). Render \
                         `kubernetes` or `rbg`, or give the instance one node",
                        inst.nodes.len()
                    ),
                ));
            }
        }
    }
    let k = &d.kubernetes;
    let refuse = |field: &str, why: &str| Err(RenderError::at(field, format_args!("{why}")));
    if k.service_discovery {
        return refuse(
            "kubernetes.service_discovery",
            "is the SGLang router's; Dynamo's Frontend finds its workers through Dynamo's own discovery. Leave \
             it unset for the `dynamo` format",
        );
    }
    if k.router_replicas != 1 {
        return refuse(
            "kubernetes.router_replicas",
            "sets the SGLang router's pods; Dynamo's Frontend takes its place (scale the `Frontend` service). \
             Leave it unset for the `dynamo` format",
        );
    }
    if k.exclusive_topology.is_some() {
        return refuse(
            "kubernetes.exclusive_topology",
            "is LeaderWorkerSet's; a DynamoGraphDeployment has no such setting per replica. Leave it unset for \
             the `dynamo` format",
        );
    }
    if !k.labels.is_empty() {
        return refuse(
            "kubernetes.labels",
            "is not written to a DynamoGraphDeployment yet; leave it unset for the `dynamo` format",
        );
    }
    if !k.pod_annotations.is_empty() {
        return refuse(
            "kubernetes.pod_annotations",
            "is not written to a DynamoGraphDeployment yet; leave it unset for the `dynamo` format",
        );
    }
    let image = image(d)?;
    Ok((layout(d, Engine::Dynamo)?, image))
}

/// The service of a set: the set's name less the deployment's (`prefill`, `decode-1`).
fn service_name<'a>(d: &Deployment, set: &'a str) -> &'a str {
    &set[d.name.len() + 1..]
}

fn manifest(d: &Deployment, layout: &Layout, image: &str) -> RenderedFile {
    let mut y = Yaml(header(&layout.plan));
    let dynamo = d.launcher.image.is_none().then(|| d.sglang_version.dynamo()).flatten();
    y.0.push_str(&format!(
        "# Needs NVIDIA Dynamo's operator (nvidia.com/v1alpha1{}); `kubectl apply -f` this file\n\
         # in one namespace. Dynamo's Frontend takes the requests in place of SGLang's router (the deployment's\n\
         # `router` section does not apply); each worker replica is one pod, one instance. Pods that use RDMA\n\
         # (`ib_device`) run on the host network. A local model path is mounted from the same path on the node.\n",
        dynamo.map(|v| format!(", Dynamo {v}")).unwrap_or_default()
    ));
    y.line(0, "---");
    y.object(API_VERSION, "DynamoGraphDeployment", d, &d.name, "graph");
    y.key(0, "spec");
    y.pair(2, "backendFramework", "sglang");
    y.key(2, "services");
    y.key(4, "Frontend");
    y.pair(6, "componentType", "frontend");
    y.plain(6, "replicas", 1);
    y.key(6, "extraPodSpec");
    y.pull_secrets(8, &layout.cluster.image_pull_secrets);
    y.key(8, "mainContainer");
    y.pair(10, "image", image);
    for (k, set) in layout.sets.iter().enumerate() {
        let t = &layout.templates[k];
        let p = &layout.plan.servers[t.server];
        y.key(4, service_name(d, &set.name));
        y.pair(6, "componentType", "worker");
        y.pair(6, "subComponentType", set.role.as_str());
        y.plain(6, "replicas", set.instances.len());
        y.key(6, "resources");
        y.key(8, "limits");
        y.pair(10, "gpu", &p.gpus.1.to_string());
        y.key(6, "extraPodSpec");
        pod_placement(&mut y, 8, d, layout, k);
        y.key(8, "mainContainer");
        y.pair(10, "image", image);
        y.key(10, "command");
        y.item(10, &t.argv[0]);
        y.item(10, "-m");
        y.item(10, WORKER);
        y.key(10, "args");
        for word in &t.argv[3..] {
            y.item(10, word);
        }
        y.env(10, &p.env, &layout.cluster.secret_env);
        // The operator gives the pods their shared memory.
        let volumes = pod_volumes(d, layout, k, false);
        container_mounts(&mut y, 10, rdma(d, layout, k), &volumes);
        volume_sources(&mut y, 8, &volumes);
    }
    RenderedFile { name: format!("{}.dynamo.yaml", d.name), contents: y.0, executable: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};
    use crate::release::Release;
    use crate::render::pods::testing::{documents, read_back, Started};

    fn rendered(d: &Deployment) -> String {
        render_dynamo(d).unwrap_or_else(|e| panic!("{}: {e}", d.name)).contents
    }

    /// The examples of one node per instance at a release a Dynamo runtime ships, and variants
    /// with every setting the format writes.
    pub(crate) fn deployments() -> Vec<Deployment> {
        let mut all: Vec<Deployment> = Vec::new();
        for e in EXAMPLES {
            let mut d = example(e.name).unwrap();
            if d.prefill.instances.iter().chain(&d.decode.instances).any(|i| i.nodes.len() > 1) {
                continue;
            }
            d.sglang_version = Release::V0_5_10;
            all.push(d);
        }
        let mut own = example("qwen3-2p1d-nixl").unwrap();
        own.sglang_version = Release::V0_5_6;
        own.prefill.instances[1].port = Some(31000);
        let mut custom = example("llama-1p1d").unwrap();
        custom.launcher.image = Some("registry.local/sglang:v0.5.23-dynamo".into());
        custom.model.path = "/models/llama".into();
        let k = &mut custom.kubernetes;
        k.namespace = Some("llm".into());
        k.node_selector.insert("pool".into(), "".into());
        k.decode.node_selector.insert("nvidia.com/gpu.product".into(), "NVIDIA-H100-80GB-HBM3".into());
        k.tolerations = vec!["dedicated=llm".into(), "nvidia.com/gpu:NoSchedule".into()];
        k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
        k.model_cache = Some("hf-cache".into());
        k.image_pull_secrets = vec!["regcred".into()];
        all.extend([own, custom]);
        all
    }

    /// What the plan of the deployment placed on the pods says each worker service runs (the
    /// linter reads a service's pods once), as Dynamo's worker module.
    fn placed(d: &Deployment) -> Vec<Started> {
        let (layout, _) = dynamo_layout(d).unwrap();
        let p = &layout.plan;
        let server = |t: &crate::render::pods::Template| &p.servers[t.server];
        let started = |t| {
            let argv = p.server_argv(server(t));
            (format!("{} -m {WORKER}", argv[0]), argv[3..].to_vec(), server(t).env.clone().into_iter().collect())
        };
        layout.templates.iter().map(started).collect()
    }

    #[test]
    fn every_worker_runs_what_the_plan_says() {
        for d in deployments() {
            let text = rendered(&d);
            assert_eq!(read_back(&text), placed(&d), "{}", d.name);
            let docs = documents(&text);
            assert_eq!(docs.len(), 1);
            assert_eq!(docs[0]["kind"], "DynamoGraphDeployment");
            let services = docs[0]["spec"]["services"].as_mapping().unwrap();
            assert_eq!(services["Frontend"]["componentType"], "frontend");
        }
        let d = &deployments()[0];
        assert!(rendered(d).contains("image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.1.1\n"));
    }

    /// The graph is a fixed point of linting: the deployment the linter reconstructs from it
    /// renders the very same graph.
    #[test]
    fn the_reconstructed_deployment_renders_the_same_graph() {
        for d in deployments() {
            let text = rendered(&d);
            let linted = lint(&[Input::new("dgd.yaml", text.as_str())], &Options::default());
            let back = crate::lint::reconstruct::deployment(&linted, 0).unwrap().deployment;
            assert_eq!(back.kubernetes, d.kubernetes, "{}", d.name);
            assert_eq!(rendered(&back), text, "{}", d.name);
        }
    }

    #[test]
    fn what_a_graph_cannot_say_is_refused_at_its_field() {
        let refused = |d: &Deployment| render_dynamo(d).unwrap_err().field.unwrap();
        // SGLang 0.5.23 is in no Dynamo runtime yet.
        let d = example("llama-1p1d").unwrap();
        assert_eq!(refused(&d), "sglang_version");
        assert!(render_dynamo(&d).unwrap_err().message.contains("Dynamo 1.1.1 ships SGLang 0.5.10.post1"));
        let mut d = example("deepseek-v3-dp-deepep").unwrap();
        d.sglang_version = Release::V0_5_10;
        assert_eq!(refused(&d), "prefill.instances[0].nodes");
        let base = &deployments()[0];
        let mut d = base.clone();
        d.kubernetes.namespace = Some("llm".into());
        d.kubernetes.service_discovery = true;
        assert_eq!(refused(&d), "kubernetes.service_discovery");
        let mut d = base.clone();
        d.kubernetes.router_replicas = 2;
        assert_eq!(refused(&d), "kubernetes.router_replicas");
        let mut d = base.clone();
        d.kubernetes.labels.insert("team".into(), "a".into());
        assert_eq!(refused(&d), "kubernetes.labels");
        let mut d = base.clone();
        d.kubernetes.exclusive_topology = Some("kubernetes.io/hostname".into());
        assert_eq!(refused(&d), "kubernetes.exclusive_topology");
    }
}
