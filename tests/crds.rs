//! The RoleBasedGroup (and Dynamo) manifests that `render` writes validate against those
//! projects' own CRD schemas (`tests/fixtures/crds/`, with the commit each came from), checked by
//! an independent validator (the `jsonschema` crate). Kubernetes prunes unknown fields of a custom
//! resource, or with strict field validation (`kubectl apply`'s default) rejects them; the schemas
//! are read strictly, so a misspelt key fails here rather than vanishing in the cluster.

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::render::{render, Format};
use serde::Deserialize;
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/crds");

/// A CRD schema read as the API server's strict field validation reads it: an object that lists
/// its properties and keeps no unknown fields (`x-kubernetes-preserve-unknown-fields`) takes no
/// others.
fn strict(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                let closed = m.contains_key("properties")
                    && !m.contains_key("additionalProperties")
                    && m.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true));
                if closed {
                    m.insert("additionalProperties".into(), Value::Bool(false));
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

fn validator(file: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{file}")).unwrap();
    jsonschema::validator_for(&strict(serde_json::from_str(&text).unwrap())).expect("a valid JSON Schema")
}

/// The YAML documents of a rendered file, as JSON.
fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| serde_json::to_value(serde_yaml::Value::deserialize(doc).unwrap()).unwrap())
        .collect()
}

/// The examples and variants that use every setting the formats write (those a format refuses are
/// left out of its checks).
fn deployments() -> Vec<Deployment> {
    let mut all: Vec<Deployment> = EXAMPLES.iter().map(|e| example(e.name).unwrap()).collect();
    let mut own = example("qwen3-2p1d-nixl").unwrap();
    own.prefill.instances[1].port = Some(31000);
    let mut cluster = example("llama-1p1d").unwrap();
    let k = &mut cluster.kubernetes;
    k.namespace = Some("llm".into());
    k.node_selector.insert("nvidia.com/gpu.product".into(), "NVIDIA-H200".into());
    k.tolerations = vec!["dedicated=llm".into(), "nvidia.com/gpu:NoSchedule".into()];
    k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
    k.model_cache = Some("hf-cache".into());
    k.image_pull_secrets = vec!["regcred".into()];
    k.router_replicas = 2;
    k.labels.insert("kueue.x-k8s.io/queue-name".into(), "gpu-queue".into());
    k.pod_annotations.insert("prometheus.io/scrape".into(), "true".into());
    let mut discovered = example("qwen3-2p1d-nixl").unwrap();
    discovered.kubernetes.namespace = Some("llm".into());
    discovered.kubernetes.service_discovery = true;
    // Releases a Dynamo runtime ships, for the `dynamo` format.
    let mut dynamo: Vec<Deployment> = all
        .iter()
        .cloned()
        .map(|mut d| {
            d.sglang_version = pdlaunch_core::release::Release::V0_5_10;
            d
        })
        .collect();
    let mut old = example("qwen3-2p1d-nixl").unwrap();
    old.sglang_version = pdlaunch_core::release::Release::V0_5_3;
    // Multi-node workers at the operator's rendezvous port, without the SGLang router's discovery.
    let mut multinode = example("deepseek-v3-dp-deepep").unwrap();
    multinode.sglang_version = pdlaunch_core::release::Release::V0_5_6;
    multinode.prefill.instances[0].dist_init_port = None;
    multinode.decode.instances[0].dist_init_port = None;
    multinode.kubernetes.service_discovery = false;
    dynamo.extend([old, multinode]);
    all.extend([own, cluster, discovered]);
    all.extend(dynamo);
    all
}

/// Every document of `kind` that `format` renders for the deployments, with its deployment's name.
fn rendered(format: Format, kind: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for d in deployments() {
        let Ok(files) = render(&d, format) else { continue };
        for f in files {
            out.extend(
                documents(&f.contents).into_iter().filter(|doc| doc["kind"] == kind).map(|doc| (d.name.clone(), doc)),
            );
        }
    }
    out
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

#[test]
fn role_based_groups_validate_against_the_rbg_crd() {
    let v = validator("rolebasedgroup-v1alpha2.json");
    let docs = rendered(Format::Rbg, "RoleBasedGroup");
    assert!(docs.len() >= 8, "{}", docs.len());
    for (name, doc) in &docs {
        assert_eq!(doc["apiVersion"], "workloads.x-k8s.io/v1alpha2");
        let found = errors(&v, doc);
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
    // The validator reads the schema strictly: a misspelt key or a count written as a word fails.
    let (_, doc) = &docs[0];
    let mut typo = doc.clone();
    let role = typo["spec"]["roles"][0].as_object_mut().unwrap();
    let pattern = role.remove("leaderWorkerPattern").unwrap();
    role.insert("leaderWorkerPatern".into(), pattern);
    assert!(!errors(&v, &typo).is_empty());
    let mut word = doc.clone();
    word["spec"]["roles"][0]["replicas"] = "one".into();
    assert!(!errors(&v, &word).is_empty());
    // Down to the pods' containers.
    let mut deep = doc.clone();
    deep["spec"]["roles"][0]["leaderWorkerPattern"]["template"]["spec"]["containers"][0]["comand"] = "x".into();
    assert!(!errors(&v, &deep).is_empty());
}

#[test]
fn dynamo_graphs_validate_against_the_dynamo_crds() {
    let docs = rendered(Format::Dynamo, "DynamoGraphDeployment");
    assert!(docs.len() >= 5, "{}", docs.len());
    assert!(docs.iter().any(|(_, doc)| doc["spec"]["services"]["prefill"]["multinode"]["nodeCount"] == 2));
    for file in ["dynamographdeployment-v1alpha1-dynamo-0.6.json", "dynamographdeployment-v1alpha1-dynamo-1.5.json"] {
        let v = validator(file);
        for (name, doc) in &docs {
            assert_eq!(doc["apiVersion"], "nvidia.com/v1alpha1");
            let found = errors(&v, doc);
            assert!(found.is_empty(), "{file}: {name}: {found:#?}");
        }
        let (_, doc) = &docs[0];
        let mut typo = doc.clone();
        typo["spec"]["services"]["prefill"]["subComponetType"] = "prefill".into();
        assert!(!errors(&v, &typo).is_empty(), "{file}");
        let mut deep = doc.clone();
        deep["spec"]["services"]["prefill"]["extraPodSpec"]["mainContainer"]["args"] = 5.into();
        assert!(!errors(&v, &deep).is_empty(), "{file}");
    }
}
