//! The whole smoke run from deployment files, on the CPU engine: verdicts, exit-2 conditions,
//! the memory cap, and the report's shape.

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::load::{parse_deployment, Syntax};
use pdlaunch_kv::geometry::KvGeometry;
use pdlaunch_kv::sides::from_deployment;
use pdlaunch_kv::smoke::{run, BackendChoice, Input, Options, SmokeError, Verdict};
use pdlaunch_kv::transfer::TransferBackend;

fn deployment(text: &str) -> Deployment {
    parse_deployment(text, "test.yaml", Syntax::Yaml).expect("test deployment parses")
}

fn input(d: &Deployment) -> Input {
    let g = d.model.geometry.clone().expect("geometry in the test deployment");
    Input {
        name: d.name.clone(),
        geometry: KvGeometry::from_core(&g).unwrap(),
        geometry_source: "model.geometry".into(),
        sides: from_deployment(d).unwrap(),
    }
}

fn cpu(tokens: u32) -> Options {
    Options {
        tokens,
        backend: BackendChoice::Cpu,
        negative_controls: true,
        iterations: 1,
        threads: Some(2),
        ..Options::default()
    }
}

const HETERO: &str = r#"
name: hetero
model: {path: x/y, geometry: {attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}}
shared: {page_size: 16, transfer_backend: nixl}
prefill: {tp: 4, instances: [{nodes: [{host: 10.0.0.1}]}]}
decode: {tp: 2, instances: [{nodes: [{host: 10.0.0.2}]}]}
"#;

#[test]
fn examples_pass_with_every_control_caught() {
    for (name, text) in [
        ("llama", include_str!("../../../examples/llama-1p1d.yaml")),
        ("deepseek", include_str!("../../../examples/deepseek-v3-dp-deepep.yaml")),
        ("qwen", include_str!("../../../examples/qwen3-2p1d-nixl.yaml")),
        ("hetero", HETERO),
    ] {
        let d = deployment(text);
        let r = run(&input(&d), &cpu(40), &|_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.verdict, Verdict::Pass, "{name}:\n{}", pdlaunch_kv::smoke::render_text(&r));
        let dynamic = r.dynamic.as_ref().unwrap();
        assert!(dynamic.clean);
        assert!(dynamic.pairs.iter().all(|p| p.status != "fail"));
        assert!(r.negative_controls.iter().filter(|c| c.applicable).all(|c| c.caught == Some(true)), "{name}");
        assert_eq!(r.negative_controls.len(), 5);
    }
}

#[test]
fn hetero_pairs_cover_every_decode_rank() {
    let d = deployment(HETERO);
    let r = run(&input(&d), &cpu(20), &|_| {}).unwrap();
    let pairs = &r.dynamic.as_ref().unwrap().pairs;
    // Decode TP 2 pulls from prefill ranks (0, 1) and (2, 3).
    let got: Vec<(String, String)> = pairs.iter().map(|p| (p.prefill.clone(), p.decode.clone())).collect();
    assert_eq!(
        got,
        [("pp0/tp0", "pp0/tp0"), ("pp0/tp1", "pp0/tp0"), ("pp0/tp2", "pp0/tp1"), ("pp0/tp3", "pp0/tp1")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert!(pairs.iter().all(|p| p.slices == 20 * 2 * 2 && p.bad == 0));
    assert_eq!(r.transfer, Some(TransferBackend::Nixl));
}

#[test]
fn page_size_drift_fails() {
    let d = deployment(
        r#"
name: drift
model: {path: x/y, geometry: {attention: gqa, layers: 2, kv_heads: 2, head_dim: 64}}
shared: {page_size: 16}
prefill: {tp: 1, instances: [{nodes: [{host: 10.0.0.1}]}]}
decode: {tp: 1, extra_args: ["--page-size", "64"], instances: [{nodes: [{host: 10.0.0.2}]}]}
"#,
    );
    let r = run(&input(&d), &Options { negative_controls: false, ..cpu(100) }, &|_| {}).unwrap();
    assert_eq!(r.verdict, Verdict::Fail);
    assert!(r.static_checks.iter().any(|c| c.id == "page_size" && c.status == pdlaunch_kv::checks::Status::Fail));
    assert!(!r.dynamic.unwrap().clean);
}

/// `--backend cuda` runs on the GPU when the probe finds one, and is otherwise refused with
/// the probe's reason and the advice to run on the CPU: the probe decides which is expected.
#[cfg(feature = "cuda")]
#[test]
fn cuda_without_a_gpu_is_an_environment_error() {
    use pdlaunch_kv::engine::cuda::{probe, Probe};
    let d = deployment(HETERO);
    let opts = Options { backend: BackendChoice::Cuda, ..cpu(8) };
    let result = run(&input(&d), &opts, &|_| {});
    match probe() {
        Probe::Unavailable { reason } => match result {
            Err(SmokeError::Environment(msg)) => assert_eq!(
                msg,
                format!("--backend cuda: no usable GPU: {reason}. Run with --backend cpu (or auto) on this machine.")
            ),
            other => panic!("no GPU ({reason}), yet {other:?}"),
        },
        Probe::Available { devices, .. } => {
            let r = result.unwrap_or_else(|e| panic!("a GPU is present, yet: {e}"));
            assert_eq!(r.environment.backend, "cuda");
            assert_eq!(r.environment.devices.len(), devices.len());
            assert_eq!(r.verdict, Verdict::Pass, "{}", pdlaunch_kv::smoke::render_text(&r));
            let engines = &r.dynamic.as_ref().unwrap().engines;
            assert!(!engines.is_empty() && engines.iter().all(|e| e.engine.starts_with("cuda-")), "{engines:?}");
        }
    }
}

/// A build without the CUDA engine refuses `--backend cuda` and says why.
#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_a_gpu_is_an_environment_error() {
    let d = deployment(HETERO);
    let opts = Options { backend: BackendChoice::Cuda, ..cpu(8) };
    match run(&input(&d), &opts, &|_| {}) {
        Err(SmokeError::Environment(msg)) => assert!(msg.contains("without the `cuda` feature"), "{msg}"),
        other => panic!("expected an environment error, got {other:?}"),
    }
}

#[test]
fn memory_cap_refuses_with_numbers_and_advice() {
    let d = deployment(HETERO);
    let opts = Options { max_memory: Some(64 << 10), ..cpu(512) };
    match run(&input(&d), &opts, &|_| {}) {
        Err(SmokeError::Memory(msg)) => {
            assert!(msg.contains("bytes") && msg.contains("--tokens") && msg.contains("--max-memory"), "{msg}");
        }
        other => panic!("expected a memory refusal, got {other:?}"),
    }
}

#[test]
fn report_serialises_with_the_schema_id() {
    let d = deployment(HETERO);
    let r = run(&input(&d), &cpu(8), &|_| {}).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema"], "pdlaunch-kv-smoke/1");
    assert_eq!(v["verdict"], "pass");
    let e = &v["dynamic"]["engines"][0];
    for key in ["gbps", "ratio", "bytes", "descriptors"] {
        assert!(e.get(key).is_some(), "missing {key}");
    }
    assert!(e["reference"]["gbps"].is_number());
    assert!(v["static_checks"].as_array().unwrap().len() >= 6);
    let text = pdlaunch_kv::smoke::render_text(&r);
    assert!(text.contains("verdict: PASS") && text.contains("negative controls"));
}
