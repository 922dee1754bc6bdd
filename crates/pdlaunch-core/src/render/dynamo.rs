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
//! A multi-node instance is a replica of a `multinode` service (`nodeCount` pods): the operator
//! adds each pod's `--dist-init-addr <leader>:29500`, `--nnodes` and `--node-rank` itself, so the
//! worker's arguments leave them out, and a `dist_init_port` other than 29500 is refused.
//!
//! Refused, each at its field: that `dist_init_port`, `kubernetes.service_discovery` and
//! `kubernetes.router_replicas` (SGLang router settings), `kubernetes.exclusive_topology`, and
//! `kubernetes.labels` and `pod_annotations` (not written yet: Dynamo puts pod metadata under
//! `extraPodMetadata`).

use super::pods::{container_mounts, layout, pod_placement, pod_volumes, rdma, volume_sources, Engine, Layout, Yaml};
use super::{header, RenderError, RenderedFile};
use crate::deployment::{Deployment, Role};

/// The API version written.
pub(crate) const API_VERSION: &str = "nvidia.com/v1alpha1";

/// The port Dynamo's operator gives a multi-node worker's `--dist-init-addr`.
const DIST_INIT_PORT: u16 = 29500;

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
            if let Some(port) = inst.dist_init_port.filter(|p| *p != DIST_INIT_PORT && inst.nodes.len() > 1) {
                return Err(RenderError::at(
                    format!("{role}.instances[{i}].dist_init_port"),
                    format_args!(
                        "is {port}, but Dynamo's operator gives a multi-node worker's `--dist-init-addr` the port \
                         {DIST_INIT_PORT} itself; leave it unset (or {DIST_INIT_PORT}) for the `dynamo` format"
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
         # `router` section does not apply); each worker replica is one instance, a pod per node. Pods that use RDMA\n\
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
        if p.nnodes > 1 {
            y.key(6, "multinode");
            y.plain(8, "nodeCount", p.nnodes);
        }
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

    /// The examples at a release a Dynamo runtime ships (multi-node instances at the operator's
    /// rendezvous port, and without the SGLang router's discovery), and variants with every
    /// setting the format writes.
    pub(crate) fn deployments() -> Vec<Deployment> {
        let mut all: Vec<Deployment> = Vec::new();
        for e in EXAMPLES {
            let mut d = example(e.name).unwrap();
            for role in Role::BOTH {
                for inst in &mut d.side_mut(role).instances {
                    inst.dist_init_port = None;
                }
            }
            d.kubernetes.service_discovery = false;
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

    /// What the plan of the deployment placed on the pods says each worker service runs, as
    /// Dynamo's worker module: a single-node service once (the linter reads its pods once), a
    /// multi-node one per pod, with the multi-node arguments the operator adds in place of the
    /// plan's.
    fn placed(d: &Deployment) -> Vec<Started> {
        let (layout, _) = dynamo_layout(d).unwrap();
        let p = &layout.plan;
        let mut out = Vec::new();
        for (k, set) in layout.sets.iter().enumerate() {
            let server = &p.servers[layout.templates[k].server];
            let argv = p.server_argv(server);
            let entry = format!("{} -m {WORKER}", argv[0]);
            let env: Vec<(String, String)> = server.env.clone().into_iter().collect();
            let mut args = argv[3..].to_vec();
            for flag in ["--dist-init-addr", "--nnodes", "--node-rank"] {
                if let Some(i) = args.iter().position(|w| w == flag) {
                    args.drain(i..i + 2);
                }
            }
            if server.nnodes == 1 {
                out.push((entry, args, env));
                continue;
            }
            let service = service_name(d, &set.name);
            for g in 0..set.instances.len() {
                for rank in 0..server.nnodes {
                    let mut args = args.clone();
                    args.extend([
                        "--dist-init-addr".to_owned(),
                        format!("{service}-{g}-0:{DIST_INIT_PORT}"),
                        "--nnodes".to_owned(),
                        server.nnodes.to_string(),
                        "--node-rank".to_owned(),
                        rank.to_string(),
                    ]);
                    out.push((entry.clone(), args, env.clone()));
                }
            }
        }
        out
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

    /// A multi-node instance is a replica of a `multinode` service; the operator adds the
    /// multi-node arguments, which the linter adds back as it reads the pods.
    #[test]
    fn a_multi_node_instance_is_a_multinode_replica() {
        let d = deployments().into_iter().find(|d| d.name == "deepseek-v3-dp-deepep").unwrap();
        let text = rendered(&d);
        let docs = documents(&text);
        let prefill = &docs[0]["spec"]["services"]["prefill"];
        assert_eq!(
            (&prefill["multinode"]["nodeCount"], &prefill["resources"]["limits"]["gpu"]),
            (&2.into(), &"8".into())
        );
        assert!(!text.contains("--dist-init-addr") && !text.contains("--node-rank") && !text.contains("--nnodes"));
        let linted = lint(&[Input::new("dgd.yaml", text.as_str())], &Options::default());
        let ranks: Vec<String> = linted
            .launches
            .iter()
            .map(|l| {
                let after = |flag: &str| l.args.iter().position(|w| w.text == flag).map(|i| l.args[i + 1].text.clone());
                format!("{} {}", after("--dist-init-addr").unwrap(), after("--node-rank").unwrap())
            })
            .collect();
        assert_eq!(ranks, ["prefill-0-0:29500 0", "prefill-0-0:29500 1", "decode-0-0:29500 0", "decode-0-0:29500 1"]);
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
        assert_eq!(refused(&d), "prefill.instances[0].dist_init_port");
        d.prefill.instances[0].dist_init_port = Some(29500);
        d.decode.instances[0].dist_init_port = None;
        assert_eq!(refused(&d), "kubernetes.service_discovery");
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
