//! Property tests of the linter.
//!
//! `round_trip`: for any deployment the renderer can express, linting its rendered shell scripts
//! and reconstructing gives back the same deployment, up to [`reconstruct::normalize`] (implicit
//! ports, bootstrap and dist-init ports and base GPU ids made explicit) and the fields no command
//! line carries (`name`, the releases, which the test passes as lint options). The generator
//! keeps to what the renderer expresses unambiguously: SGLang 0.5.23 and router 0.3.2, choices
//! the 0.5.23 spec accepts, side `env` keys disjoint from `shared.env` and from each other,
//! `extra_args` of unmodelled options without repeats, no decode KV offload (it renders no flag
//! of its own without HiCache), no KV canaries, no `bind_host`, `gpu` or per-node GPU counts.
//!
//! `kubernetes_manifests_are_a_fixed_point`, `rbg_groups_are_a_fixed_point`,
//! `dynamo_graphs_are_a_fixed_point`: for any deployment and cluster settings the `kubernetes`
//! (`rbg`, `dynamo`) format renders, the deployment reconstructed from the manifests (the
//! RoleBasedGroup, the DynamoGraphDeployment) renders the same text.
//! `sbatch_scripts_are_a_fixed_point` and `srtctl_recipes_are_a_fixed_point`: the same for the
//! `slurm` and `srtctl` formats; the recipe also starts the plan's processes, srtctl's own hosts,
//! ports and GPUs apart.
//!
//! `every_engine_runs_the_same_server_arguments`: the servers the linter reads back from every
//! launch format (`shell`, `sglang-config` with its `--config` files, `kubernetes`, `rbg`,
//! `dynamo`, `slurm`, `srtctl`; the pictures are not launches) run the `json` format's options,
//! compared as argparse ends with them (destination and value, `--config` files expanded), but
//! for those each engine decides itself: where a pod runs for the Kubernetes engines, srtctl's
//! own for a recipe, none for the scripts (the sbatch script's against the plan on its nodes,
//! `$node_k`). A format that refuses a case is left out of that case only; the test prints how
//! many cases each format compared and fails under an eighth.
//!
//! The fuzz tests feed each reader arbitrary text and near-valid mutations of the fixtures, and
//! print how many inputs each tried; a panic fails them.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::group::bare_model;
use super::*;
use crate::deployment::*;
use crate::release::{Release, RouterRelease};

fn accepted(flag: &str, names: &[&'static str]) -> Vec<&'static str> {
    let spec = Release::LATEST.spec();
    let ok = spec.get(flag).and_then(|f| f.choice_strings()).unwrap_or_default();
    names.iter().copied().filter(|n| ok.iter().any(|o| o == n)).collect()
}

fn choice<T: serde::de::DeserializeOwned + std::fmt::Debug + Clone + 'static>(
    flag: &str,
    names: &[&'static str],
) -> impl Strategy<Value = T> {
    let names = accepted(flag, names);
    proptest::sample::select(names)
        .prop_map(|n| serde_json::from_value::<T>(serde_json::Value::String(n.to_owned())).expect("choice"))
}

/// Strings that reach argv as one word: spaces, quotes, `$`, backslashes, unicode, newlines.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_./][a-zA-Z0-9 _./:'\"$`\\\\é漢\n=,()-]{0,12}"
}

fn env_map(prefix: &'static str) -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[A-Z]{1,4}".prop_map(move |k| format!("{prefix}{k}")), text(), 0..3)
}

fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(s)
}

const HOSTS: &[&str] = &["10.0.0.1", "10.0.0.2", "node-a.cluster.local", "fd00::5"];

fn instance() -> impl Strategy<Value = Instance> {
    let node = (
        proptest::sample::select(HOSTS),
        opt(0u32..4),
        opt(proptest::sample::select(&["mlx5_0", "mlx5_0,mlx5_1"][..])),
    )
        .prop_map(|(h, base, ib)| Node {
            host: h.to_owned(),
            gpus: None,
            gpus_installed: None,
            base_gpu_id: base,
            ib_device: ib.map(str::to_owned),
        });
    (
        prop::collection::vec(node, 1..3),
        opt(31000u16..31100),
        opt(9000u16..9100),
        opt(6000u16..6100),
        opt(7000u16..7100),
    )
        .prop_map(|(nodes, port, bootstrap_port, dist_init_port, nccl_port)| Instance {
            nodes,
            port,
            bootstrap_port,
            dist_init_port,
            nccl_port,
        })
}

const ROUTER_EXTRA: &[&[&str]] = &[&["--request-timeout-secs", "600"], &["--log-level", "debug"]];
const EXTRA: &[&[&str]] =
    &[&["--watchdog-timeout", "600"], &["--log-level", "info"], &["--enable-cache-report"], &["--random-seed", "7"]];

fn side(role: Role) -> impl Strategy<Value = Side> {
    let sizes = (
        proptest::sample::select(&[1u32, 2, 4, 8][..]),
        1u32..3,
        1u32..3,
        1u32..3,
        opt(1u32..9),
        1u32..3,
        any::<bool>(),
        1u32..3,
    );
    let moe = (
        opt(choice::<crate::choices::MoeA2aBackend>("--moe-a2a-backend", crate::choices::MoeA2aBackend::NAMES)),
        opt(choice::<crate::choices::DeepepMode>("--deepep-mode", crate::choices::DeepepMode::NAMES)),
        opt(1u32..3),
        any::<bool>(),
    );
    let memory = (
        opt(proptest::sample::select(&[0.7f64, 0.85, 0.9][..])),
        opt(1u32..512),
        opt(proptest::sample::select(&[-1i64, 4096, 8192][..])),
        opt(1024u64..65536),
        opt(1u32..256),
        any::<bool>(),
        opt(choice::<crate::choices::LoadBalanceMethod>(
            "--load-balance-method",
            crate::choices::LoadBalanceMethod::NAMES,
        )),
    );
    let caches = (
        opt((opt(proptest::sample::select(&[1.5f64, 2.0][..])), opt(1u32..64))),
        any::<bool>(),
        opt(choice::<crate::choices::RetractionBackup>(
            "--disaggregation-decode-retraction-backup",
            crate::choices::RetractionBackup::NAMES,
        )),
        opt(1u32..1024),
        opt(1u32..8),
        opt(0u32..4),
        any::<bool>(),
        opt(1u32..16),
    );
    let prefix = if role == Role::Prefill { "P_" } else { "D_" };
    let rest = (prop::collection::vec(instance(), 1..3), env_map(prefix), proptest::sample::subsequence(EXTRA, 0..3));
    (sizes, moe, memory, caches, rest).prop_map(move |(s, m, mem, c, (instances, env, extra))| Side {
        gpu: None,
        instances,
        tp: s.0,
        dp: s.1,
        attn_dp: s.2,
        pp: s.3,
        ep: s.4,
        attn_cp: s.5,
        enable_prefill_cp: s.6,
        dcp: s.7,
        moe_a2a_backend: m.0,
        deepep_mode: m.1,
        moe_dense_tp: m.2,
        enable_dp_lm_head: m.3,
        mem_fraction_static: mem.0,
        max_running_requests: mem.1,
        chunked_prefill_size: mem.2,
        max_prefill_tokens: mem.3,
        cuda_graph_max_bs: mem.4,
        disable_cuda_graph: mem.5,
        load_balance_method: mem.6,
        hicache: c.0.map(|(ratio, size)| HiCache { ratio, size, storage_backend: None, write_policy: None }),
        decode_radix_cache: c.1,
        decode_offload_kvcache: false,
        decode_retraction_backup: c.2,
        num_reserved_decode_tokens: c.3,
        decode_extra_slots: c.4,
        decode_polling_interval: c.7,
        optimistic_prefill_attempts: c.5,
        enable_metrics: c.6,
        bind_host: None,
        env,
        extra_args: extra.iter().flat_map(|a| a.iter().map(|s| (*s).to_owned())).collect(),
    })
}

pub(crate) fn deployment() -> impl Strategy<Value = Deployment> {
    let model = (
        text(),
        opt(text()),
        any::<bool>(),
        opt(choice::<crate::choices::ModelDtype>("--dtype", crate::choices::ModelDtype::NAMES)),
        opt(1024u64..200_000),
        opt(text()),
        opt(text()),
    );
    let shared = (
        1u32..257,
        choice::<crate::choices::KvCacheDtype>("--kv-cache-dtype", crate::choices::KvCacheDtype::NAMES),
        choice::<crate::choices::TransferBackend>(
            "--disaggregation-transfer-backend",
            crate::choices::TransferBackend::NAMES,
        ),
        opt(choice::<crate::choices::AttentionBackend>("--attention-backend", crate::choices::AttentionBackend::NAMES)),
        opt((
            proptest::sample::select(&["EAGLE", "EAGLE3", "NEXTN"][..]),
            opt(1u32..5),
            opt(1u32..4),
            opt(2u32..8),
            any::<bool>(),
        )),
        any::<bool>(),
        env_map("S_"),
    );
    let router = (
        proptest::sample::select(&["0.0.0.0", "10.0.0.9"][..]),
        8000u16..8100,
        opt(proptest::sample::select(&["round_robin", "random", "cache_aware"][..])),
        any::<bool>(),
        proptest::sample::subsequence(ROUTER_EXTRA, 0..2),
        proptest::sample::select(&["python3", "python", "/opt/venv/bin/python3"][..]),
    );
    (model, shared, side(Role::Prefill), side(Role::Decode), router).prop_map(|(m, s, prefill, decode, r)| Deployment {
        name: "rt".into(),
        sglang_version: Release::LATEST,
        router_version: RouterRelease::LATEST,
        launcher: Launcher { python: r.5.to_owned(), config_dir: ".".into(), image: None },
        model: {
            let mut model = bare_model(&m.0);
            model.tokenizer = m.1;
            model.trust_remote_code = m.2;
            model.dtype = m.3;
            model.context_length = m.4;
            model.served_name = m.5;
            model.revision = m.6;
            model
        },
        shared: Shared {
            page_size: s.0,
            kv_cache_dtype: s.1,
            transfer_backend: s.2,
            attention_backend: s.3,
            speculative: s.4.map(|(a, steps, topk, tokens, decode_only)| Speculative {
                algorithm: a.to_owned(),
                decode_only,
                draft_model_path: None,
                num_steps: steps,
                eagle_topk: topk,
                num_draft_tokens: tokens,
                draft_kv_cache_dtype: None,
                draft_attention_backend: None,
            }),
            enable_unified_memory: s.5,
            env: s.6,
            ..Shared::default()
        },
        prefill,
        decode,
        router: Router {
            host: r.0.to_owned(),
            port: r.1,
            policy: r.2.map(|p| serde_json::from_value(serde_json::Value::String(p.into())).expect("policy")),
            mini_lb: r.3,
            extra_args: r.4.iter().flat_map(|a| a.iter().map(|s| (*s).to_owned())).collect(),
            ..Router::default()
        },
        kubernetes: Default::default(),
    })
}

/// The fewest cases a property test runs, whatever `PDLAUNCH_PROPTEST_CASES` says: a quick run
/// may lower the count, but `0` would pass every property without trying one.
pub(crate) const MIN_CASES: u32 = 16;

/// Proptest cases: `PDLAUNCH_PROPTEST_CASES`, or `default`; at least [`MIN_CASES`].
pub(crate) fn cases(default: u32) -> u32 {
    cases_from(std::env::var("PDLAUNCH_PROPTEST_CASES").ok().as_deref(), default)
}

fn cases_from(setting: Option<&str>, default: u32) -> u32 {
    setting.and_then(|v| v.trim().parse().ok()).unwrap_or(default).max(MIN_CASES)
}

/// Lint options naming the SGLang and router releases `d` was rendered for.
fn release_options(d: &Deployment) -> Options {
    Options { release: Some(d.sglang_version), router_release: Some(d.router_version), ..Options::default() }
}

#[test]
fn the_case_count_has_a_floor() {
    assert_eq!(cases_from(None, 300), 300);
    assert_eq!(cases_from(Some("5000"), 300), 5000);
    assert_eq!(cases_from(Some(" 40 "), 300), 40);
    assert_eq!(cases_from(Some("0"), 300), MIN_CASES);
    assert_eq!(cases_from(Some("3"), 300), MIN_CASES);
    assert_eq!(cases_from(Some("many"), 300), 300);
    assert_eq!(cases_from(None, 4), MIN_CASES);
}

#[test]
fn round_trip() {
    let n = cases(300);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    runner
        .run(&deployment(), |d| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let inputs: Vec<Input> = files.iter().map(|f| Input::new(f.name.clone(), f.contents.clone())).collect();
            let opts = release_options(&d);
            let linted = lint(&inputs, &opts);
            prop_assert_eq!(
                linted.groups.len(),
                1,
                "groups: {:?}",
                linted.groups.iter().map(|g| &g.name).collect::<Vec<_>>()
            );
            let r = reconstruct::deployment(&linted, 0).map_err(TestCaseError::fail)?;
            let mut got = r.deployment;
            got.name = d.name.clone();
            prop_assert_eq!(reconstruct::normalize(&d), reconstruct::normalize(&got), "notes: {:?}", r.notes);
            Ok(())
        })
        .unwrap();
    eprintln!("round_trip: {n} generated deployments rendered, linted and reconstructed");
}

/// Cluster settings: what the `kubernetes` section can say, in the forms Kubernetes accepts.
pub(crate) fn cluster() -> impl Strategy<Value = Kubernetes> {
    let name = "[a-z]([-a-z0-9]{0,6}[a-z0-9])?";
    let key = prop_oneof![
        Just("nvidia.com/gpu.product".to_owned()),
        "[a-z]{1,4}/[A-Za-z0-9]([-A-Za-z0-9_.]{0,5}[A-Za-z0-9])?",
        "[A-Za-z]([A-Za-z0-9_]{0,5}[A-Za-z0-9])?"
    ];
    let value = "([A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?)?";
    let key2 = key.clone();
    let extra = prop::collection::btree_map(key.clone(), value, 0..2);
    let notes = prop::collection::btree_map(key.clone(), any::<String>(), 0..2);
    let selector = prop::collection::btree_map(key.clone(), value, 0..3);
    let effect = prop_oneof![
        Just(String::new()),
        Just(":NoSchedule".to_owned()),
        Just(":PreferNoSchedule".to_owned()),
        Just(":NoExecute".to_owned())
    ];
    let taint = (key, prop::option::of("[a-z0-9]{1,5}"), effect).prop_map(|(k, v, e)| match v {
        Some(v) => format!("{k}={v}{e}"),
        None => format!("{k}{e}"),
    });
    let taints = prop::collection::vec(taint, 0..3);
    let placement = (selector.clone(), taints.clone())
        .prop_map(|(node_selector, tolerations)| Placement { node_selector, tolerations });
    let secret_env = prop::collection::btree_map(
        "[A-Z][A-Z0-9_]{0,6}",
        (name, "[A-Za-z0-9_.-]{1,6}").prop_map(|(s, k)| format!("{s}/{k}")),
        0..3,
    );
    let cache = prop::option::of(prop_oneof![name.prop_map(|n| n), "/[a-z]{1,6}(/[a-z ]{1,4})?"]);
    (
        (prop::option::of(name), selector, taints, placement.clone(), placement, extra, notes),
        (secret_env, cache, prop::collection::vec(name, 0..2), any::<bool>(), 1..4u32, prop::option::of(key2)),
    )
        .prop_map(
            |(
                (namespace, node_selector, tolerations, prefill, decode, labels, pod_annotations),
                (secret_env, model_cache, pull, discovery, replicas, topology),
            )| {
                Kubernetes {
                    // Discovery needs a namespace: the render refuses without one (tested apart).
                    namespace: namespace.or_else(|| discovery.then(|| "llm".to_owned())),
                    node_selector,
                    tolerations,
                    prefill,
                    decode,
                    // Not the deployment's own variables (a variable is set once; tested apart).
                    secret_env: secret_env.into_iter().map(|(k, v)| (format!("S_{k}"), v)).collect(),
                    model_cache,
                    image_pull_secrets: pull,
                    service_discovery: discovery,
                    exclusive_topology: topology,
                    labels,
                    pod_annotations,
                    router_replicas: replicas,
                }
            },
        )
}

/// Passes when `again` is `want`; else fails at the first line that differs, which says more than
/// the two whole texts, with `context`.
fn same_text(again: &str, want: &str, context: &dyn std::fmt::Debug) -> Result<(), TestCaseError> {
    if again == want {
        return Ok(());
    }
    let first = again.lines().zip(want.lines()).position(|(a, b)| a != b);
    Err(TestCaseError::fail(format!(
        "line {first:?}: {:?} against {:?}\n{context:?}",
        first.and_then(|i| again.lines().nth(i)),
        first.and_then(|i| want.lines().nth(i)),
    )))
}

/// For any deployment and cluster settings the `kubernetes` format renders, the deployment the
/// linter reconstructs from the manifests renders the very same manifests.
#[test]
fn kubernetes_manifests_are_a_fixed_point() {
    manifests_are_a_fixed_point(crate::render::Format::Kubernetes);
}

/// The same of the `rbg` format's RoleBasedGroup.
#[test]
fn rbg_groups_are_a_fixed_point() {
    manifests_are_a_fixed_point(crate::render::Format::Rbg);
}

/// The same of the `dynamo` format's DynamoGraphDeployment, multi-node workers included.
#[test]
fn dynamo_graphs_are_a_fixed_point() {
    manifests_are_a_fixed_point(crate::render::Format::Dynamo);
}

/// `d` without what `format` (`kubernetes`, `rbg` or `dynamo`) refuses for reasons of its own.
pub(crate) fn fit_manifests(format: crate::render::Format, d: &mut Deployment) {
    // What the format refuses for reasons of its own (tested apart): nodes of an instance
    // that start differently, and instance ports of their own with discovery; a
    // RoleBasedGroup has no exclusive topology per group.
    let discovery = d.kubernetes.service_discovery;
    for role in Role::BOTH {
        for inst in &mut d.side_mut(role).instances {
            let (ib, gpus) = (inst.nodes[0].ib_device.clone(), inst.nodes[0].gpus);
            for node in &mut inst.nodes {
                (node.ib_device, node.gpus) = (ib.clone(), gpus);
            }
            if discovery {
                inst.port = None;
            }
        }
    }
    if format == crate::render::Format::Rbg {
        d.kubernetes.exclusive_topology = None;
    }
    // A Dynamo graph's multi-node workers rendezvous at the operator's port, in a Dynamo
    // runtime built on the release (no Dynamo release ships 0.5.23 yet), behind Dynamo's
    // own Frontend; it writes no labels or annotations yet.
    if format == crate::render::Format::Dynamo {
        for role in Role::BOTH {
            for inst in &mut d.side_mut(role).instances {
                inst.dist_init_port = None;
            }
        }
        d.launcher.image = Some(format!("registry.local/sglang:v{}-dynamo", d.sglang_version));
        let k = &mut d.kubernetes;
        (k.service_discovery, k.router_replicas, k.exclusive_topology) = (false, 1, None);
        k.labels.clear();
        k.pod_annotations.clear();
    }
}

/// For any deployment and cluster settings `format` renders (as one file), the deployment the
/// linter reconstructs from that file renders the very same file.
fn manifests_are_a_fixed_point(format: crate::render::Format) {
    let n = cases(150);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let rendered = std::cell::Cell::new(0);
    let render = |d: &Deployment| match crate::render::render(d, format) {
        Ok(mut files) if files.len() == 1 => Ok(files.remove(0)),
        Ok(_) => panic!("{} renders one file", format.as_str()),
        Err(e) => Err(e),
    };
    runner
        .run(&(deployment(), cluster()), |(mut d, k)| {
            d.kubernetes = k;
            fit_manifests(format, &mut d);
            let Ok(file) = render(&d) else { return Ok(()) };
            rendered.set(rendered.get() + 1);
            let linted = lint(&[Input::new("k8s.yaml", file.contents.as_str())], &Options::default());
            prop_assert_eq!(linted.groups.len(), 1);
            let back = reconstruct::deployment(&linted, 0).map_err(TestCaseError::fail)?.deployment;
            let again = render(&back).map_err(|e| TestCaseError::fail(e.message))?;
            same_text(&again.contents, &file.contents, &(&d.kubernetes, &back.kubernetes))?;
            Ok(())
        })
        .unwrap();
    eprintln!(
        "{} fixed point: {} of {n} generated deployments rendered and came back the same",
        format.as_str(),
        rendered.get()
    );
}

/// The deployment on the sbatch script's nodes: its distinct hosts, in the order the plan first
/// meets them, become `$node_0`, `$node_1`...; a router on one of them too.
fn on_job_nodes(d: &Deployment) -> Deployment {
    let mut hosts: Vec<String> = Vec::new();
    let mut placed = d.clone();
    for role in Role::BOTH {
        for inst in &mut placed.side_mut(role).instances {
            for node in &mut inst.nodes {
                let k = hosts.iter().position(|h| *h == node.host).unwrap_or_else(|| {
                    hosts.push(node.host.clone());
                    hosts.len() - 1
                });
                node.host = format!("$node_{k}");
            }
        }
    }
    if let Some(k) = hosts.iter().position(|h| *h == d.router.host) {
        placed.router.host = format!("$node_{k}");
    }
    placed
}

#[test]
fn sbatch_scripts_are_a_fixed_point() {
    let n = cases(150);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let rendered = std::cell::Cell::new(0);
    runner
        .run(&(deployment(), any::<bool>()), |(mut d, on_host)| {
            // A router on a deployment host runs on its node; one on another address is refused
            // (tested apart).
            d.router.host = if on_host { d.decode.instances[0].nodes[0].host.clone() } else { "0.0.0.0".into() };
            let file = crate::render::render_slurm(&d).map_err(|e| TestCaseError::fail(e.message))?;
            rendered.set(rendered.get() + 1);
            let linted = lint(&[Input::new(file.name.clone(), file.contents.as_str())], &Options::default());
            prop_assert_eq!(linted.groups.len(), 1);
            // Each step runs the plan's command line for the deployment placed on the job's
            // nodes, which the linter reads as the script's `$node_k`.
            let plan = crate::plan::plan(&on_job_nodes(&d));
            let argv = |l: &crate::lint::launch::Launch| l.args.iter().map(|w| w.text.clone()).collect::<Vec<_>>();
            let (servers, router): (Vec<_>, Vec<_>) =
                linted.launches.iter().partition(|l| l.program == crate::lint::launch::Program::Server);
            prop_assert_eq!(servers.len(), plan.servers.len());
            for (l, p) in servers.iter().zip(&plan.servers) {
                prop_assert_eq!(argv(l), plan.server_argv(p)[3..].to_vec(), "{}", p.label());
                prop_assert_eq!(l.python.as_deref(), Some(plan.python.as_str()));
            }
            prop_assert_eq!(argv(router[0]), plan.router_argv()[3..].to_vec());
            let back = reconstruct::deployment(&linted, 0).map_err(TestCaseError::fail)?.deployment;
            let again = crate::render::render_slurm(&back).map_err(|e| TestCaseError::fail(e.message))?;
            same_text(&again.contents, &file.contents, &())?;
            Ok(())
        })
        .unwrap();
    eprintln!("sbatch fixed point: {} of {n} generated deployments rendered and came back the same", rendered.get());
}

/// `d` without what the `srtctl` format refuses (tested apart).
fn fit_srtctl(d: &mut Deployment) {
    // What srtctl decides itself (refusals tested apart): the router's address and port,
    // the interpreter, and one set of arguments for the processes of a role.
    (d.router.host, d.router.port, d.launcher.python) = ("0.0.0.0".into(), 8000, "python3".into());
    d.prefill.gpu = Some(Gpu::H200);
    // The workers of a role are alike: each instance has the first one's nodes.
    for role in Role::BOTH {
        let first = d.side(role).instances[0].nodes.clone();
        let ib = first[0].ib_device.clone();
        for inst in &mut d.side_mut(role).instances {
            inst.nodes.resize(first.len(), first[0].clone());
            for node in &mut inst.nodes {
                node.ib_device = ib.clone();
            }
        }
    }
}

#[test]
fn srtctl_recipes_are_a_fixed_point() {
    let n = cases(150);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let rendered = std::cell::Cell::new(0);
    runner
        .run(&deployment(), |mut d| {
            fit_srtctl(&mut d);
            let Ok(file) = crate::render::render_srtctl(&d) else { return Ok(()) };
            rendered.set(rendered.get() + 1);
            crate::render::assert_recipe_runs_the_plan(&d);
            let linted = lint(&[Input::new(file.name.clone(), file.contents.as_str())], &Options::default());
            prop_assert_eq!(linted.groups.len(), 1);
            let back = reconstruct::deployment(&linted, 0).map_err(TestCaseError::fail)?.deployment;
            let again = crate::render::render_srtctl(&back).map_err(|e| TestCaseError::fail(e.message))?;
            same_text(&again.contents, &file.contents, &())?;
            Ok(())
        })
        .unwrap();
    eprintln!("srtctl fixed point: {} of {n} generated deployments rendered and came back the same", rendered.get());
    assert!(rendered.get() * 8 >= n, "too few generated deployments render as a recipe");
}

/// The options whose values name where a server runs rather than what it runs: each Kubernetes
/// engine writes its own (pod names, the engine's rank and leader variables, `0.0.0.0`, GPUs from
/// 0, one port per pod).
const PLACEMENT: &[&str] = &[
    "--host",
    "--port",
    "--dist-init-addr",
    "--nnodes",
    "--node-rank",
    "--base-gpu-id",
    "--disaggregation-bootstrap-port",
    "--nccl-port",
];

/// The server options srtctl writes itself, as `render/srtctl.rs` says: the nodes (`--nnodes`,
/// `--node-rank`, `--dist-init-addr`), the GPUs (`--base-gpu-id`), `--host`, the ports,
/// `--model-path`, `--served-model-name` and `--disaggregation-mode`.
const SRTCTL_OWNED: &[&str] = &[
    "--nnodes",
    "--node-rank",
    "--dist-init-addr",
    "--base-gpu-id",
    "--host",
    "--port",
    "--disaggregation-bootstrap-port",
    "--nccl-port",
    "--model-path",
    "--served-model-name",
    "--disaggregation-mode",
];

/// Each launch format, with the server options whose values the engine decides itself (not
/// compared) and whether the linter reads one server per process (else one per template: a
/// LeaderWorkerSet's leader and worker, whatever its size and replicas). The `slurm` format's
/// servers run on the job's nodes, `$node_k`, and are compared with the plan on those nodes.
const LAUNCH_FORMATS: &[(crate::render::Format, &[&str], bool)] = {
    use crate::render::Format;
    &[
        (Format::Shell, &[], true),
        (Format::SglangConfig, &[], true),
        (Format::Kubernetes, PLACEMENT, false),
        (Format::Rbg, PLACEMENT, false),
        (Format::Dynamo, PLACEMENT, false),
        (Format::Slurm, &[], true),
        (Format::Srtctl, SRTCTL_OWNED, true),
    ]
};

/// The test excludes for `srtctl` exactly what the renderer leaves to srtctl; and every format
/// but `json` (the reference) and the pictures is compared.
#[test]
fn every_launch_format_is_compared() {
    use crate::render::Format;
    let set = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(set(SRTCTL_OWNED), set(crate::render::SRTCTL_SERVER_OWNED));
    let compared: Vec<Format> = LAUNCH_FORMATS.iter().map(|f| f.0).collect();
    let launches: Vec<Format> = Format::ALL.into_iter().filter(|f| !f.is_picture() && *f != Format::Json).collect();
    assert_eq!(compared, launches);
}

/// A server's effective options as argparse reads them: each destination's final value (the last
/// occurrence wins, `--config` files first), and what argparse would reject.
type Effective = (BTreeMap<&'static str, String>, Vec<String>);

/// The effective options of `parsed`, less the options of `owned`.
fn effective(parsed: &crate::spec::Parsed, spec: &crate::spec::Spec, owned: &[&str]) -> Effective {
    let owned: Vec<&str> = owned.iter().filter_map(|s| spec.get(s)).map(|f| f.dest.as_str()).collect();
    let mut options = BTreeMap::new();
    for u in parsed.uses.iter().filter(|u| !owned.contains(&u.dest)) {
        options.insert(u.dest, format!("{:?}", parsed.get(u.dest).expect("used")));
    }
    (options, parsed.problems.iter().map(|p| p.to_string()).collect())
}

/// The servers of each role (`--disaggregation-mode`), each distinct one with how many run it
/// (or 1, when `per_process` is false).
type Servers = BTreeMap<String, BTreeMap<Effective, usize>>;

fn servers<'a>(
    parsed: impl Iterator<Item = &'a crate::spec::Parsed>,
    spec: &crate::spec::Spec,
    owned: &[&str],
    per_process: bool,
) -> Servers {
    let mut out = Servers::new();
    for p in parsed {
        let mode = p.get("disaggregation_mode").map(|v| v.as_text()).unwrap_or_default();
        let n = out.entry(mode).or_default().entry(effective(p, spec, owned)).or_insert(0);
        *n = if per_process { *n + 1 } else { 1 };
    }
    out
}

/// What differs between two sets of servers, option by option: what a failure says first.
fn difference(got: &Servers, want: &Servers) -> Vec<String> {
    let mut out = Vec::new();
    let roles: std::collections::BTreeSet<&String> = got.keys().chain(want.keys()).collect();
    for role in roles {
        let none = BTreeMap::new();
        let (g, w) = (got.get(role).unwrap_or(&none), want.get(role).unwrap_or(&none));
        let only = |a: &BTreeMap<Effective, usize>, b: &BTreeMap<Effective, usize>| -> Vec<(Effective, usize)> {
            a.iter().filter(|(k, n)| b.get(*k) != Some(*n)).map(|(k, n)| (k.clone(), *n)).collect()
        };
        let (og, ow) = (only(g, w), only(w, g));
        if og.len() != ow.len() {
            out.push(format!("{role}: {} distinct servers, not {}", g.len(), w.len()));
        }
        for ((gk, gn), (wk, wn)) in og.iter().zip(&ow) {
            for (dest, v) in &wk.0 {
                match gk.0.get(dest) {
                    None => out.push(format!("{role}: `{dest}` ({v}) is missing")),
                    Some(x) if x != v => out.push(format!("{role}: `{dest}` is {x}, not {v}")),
                    Some(_) => {}
                }
            }
            for (dest, v) in gk.0.iter().filter(|(d, _)| !wk.0.contains_key(*d)) {
                out.push(format!("{role}: `{dest}` ({v}) is extra"));
            }
            if gk.1 != wk.1 {
                out.push(format!("{role}: argparse rejects {:?}, not {:?}", gk.1, wk.1));
            }
            if gk == wk && gn != wn {
                out.push(format!("{role}: {gn} servers run one argv, not {wn}"));
            }
        }
    }
    out
}

/// The servers of the `json` format's document: the reference.
fn json_servers(d: &Deployment, owned: &[&str], per_process: bool) -> Servers {
    let files = crate::render::render(d, crate::render::Format::Json).expect("json renders everything");
    let doc: serde_json::Value = serde_json::from_str(&files[0].contents).expect("json");
    let spec = d.sglang_version.spec();
    let parsed: Vec<crate::spec::Parsed> = doc["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| {
            let argv: Vec<String> = serde_json::from_value(s["argv"].clone()).expect("argv");
            // The interpreter, `-m` and the module.
            crate::spec::parse_argv(spec, &argv[3..])
        })
        .collect();
    servers(parsed.iter(), spec, owned, per_process)
}

/// For any deployment, the servers the linter reads from every launch format (the scripts of
/// `shell`, the `--config` files of `sglang-config` with the scripts that load them, the
/// manifests, the sbatch script, the srtctl recipe) run the options the `json` format gives
/// them, but for those that say where each runs and the engine decides. A format that refuses a
/// case is left out of that case only; each must compare at least an eighth of the cases.
#[test]
fn every_engine_runs_the_same_server_arguments() {
    use crate::render::Format;
    let n = cases(100);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let compared = std::cell::RefCell::new(BTreeMap::<&'static str, u32>::new());
    runner
        .run(&(deployment(), cluster()), |(mut d, k)| {
            d.kubernetes = k;
            for &(format, owned, per_process) in LAUNCH_FORMATS {
                // What the format refuses for reasons of its own (tested apart).
                let mut d = d.clone();
                match format {
                    Format::Kubernetes | Format::Rbg | Format::Dynamo => fit_manifests(format, &mut d),
                    Format::Srtctl => fit_srtctl(&mut d),
                    // A router on an address of no node of the job: on a deployment host.
                    Format::Slurm if d.router.host != "0.0.0.0" => {
                        d.router.host = d.decode.instances[0].nodes[0].host.clone();
                    }
                    _ => {}
                }
                let Ok(files) = crate::render::render(&d, format) else { continue };
                let inputs: Vec<Input> = files
                    .iter()
                    .map(|f| match format {
                        Format::SglangConfig if f.name.ends_with(".yaml") => Input::config(&f.name, &f.contents),
                        _ => Input::new(&f.name, &f.contents),
                    })
                    .collect();
                let opts = release_options(&d);
                let linted = lint(&inputs, &opts);
                prop_assert_eq!(linted.groups.len(), 1, "{}", format.as_str());
                let group = &linted.groups[0];
                let got =
                    servers(group.servers.iter().map(|s| &s.view.parsed), group.release.spec(), owned, per_process);
                let placed = if format == Format::Slurm { on_job_nodes(&d) } else { d.clone() };
                let want = json_servers(&placed, owned, per_process);
                prop_assert_eq!(want.keys().map(String::as_str).collect::<Vec<_>>(), ["decode", "prefill"]);
                prop_assert!(
                    got == want,
                    "{}: {}\nread back: {:?}\njson: {:?}",
                    format.as_str(),
                    difference(&got, &want).join("; "),
                    got,
                    want
                );
                *compared.borrow_mut().entry(format.as_str()).or_default() += 1;
            }
            Ok(())
        })
        .unwrap();
    let compared = compared.into_inner();
    for &(format, _, _) in LAUNCH_FORMATS {
        let c = compared.get(format.as_str()).copied().unwrap_or(0);
        eprintln!("engines' server arguments: {} compared in {c} of {n} generated deployments", format.as_str());
        assert!(c * 8 >= n, "{}: too few generated deployments compared ({c} of {n})", format.as_str());
    }
}

// ---- fuzzing: no reader panics ----

/// Fragments that exercise the readers' edge cases.
fn fragments(set: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop_oneof![3 => proptest::sample::select(set).prop_map(str::to_owned), 1 => "[a-z0-9 ]{0,4}", 1 => any::<String>()], 0..40)
        .prop_map(|v| v.concat())
}

const SHELL_BITS: &[&str] = &[
    "'",
    "\"",
    "\\",
    "\\\n",
    "$",
    "${",
    "}",
    "$(",
    ")",
    "`",
    "$'",
    "#",
    "\n",
    " ",
    ";",
    "&",
    "|",
    "<",
    ">",
    "<<",
    "<<-EOF\n",
    "EOF\n",
    "2>&1",
    "=",
    "A=",
    "export ",
    "bash -c ",
    "python3 -m sglang.launch_server ",
    "sglang serve ",
    "--page-size ",
    "python -m sglang_router.launch_router ",
    "docker run --entrypoint python3 img -m sglang.launch_server ",
    "docker run --gpus '\"device=0\"' img ",
    "python3 components/worker.py --skip-tokenizer-init ",
    "smg server --router-policy ",
    "python3 serve.py ",
    "dynamo-run out=sglang ",
    "--prefill ",
    "http://h:1 ",
    "--config ",
    "x.yaml ",
    "${X:-",
    "é",
    "(",
    "[",
];
const YAML_BITS: &[&str] = &[
    ": ",
    "- ",
    "  ",
    "\n",
    "[",
    "]",
    "{",
    "}",
    ",",
    "|",
    ">",
    "|-",
    ">+",
    "'",
    "\"",
    "\\",
    "&a ",
    "*a",
    "<<: ",
    "#",
    "---\n",
    "...\n",
    "!!str ",
    "? ",
    "command: ",
    "args: ",
    "containers:\n",
    "- name: prefill\n",
    "python3",
    "-m",
    "sglang.launch_server",
    "--page-size",
    "\"64\"",
    "\t",
    "é",
    "\\u00e9",
    "\\x4",
    "key",
    "services:\n",
    "kind: Service\n",
    "ports: ",
    "port: ",
    "targetPort: ",
    "containerPort: ",
    "selector: ",
    "http",
    "65536",
];

fn fuzz<S: Strategy>(name: &str, n: u32, strategy: S, f: impl Fn(S::Value)) {
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    runner
        .run(&strategy, |v| {
            f(v);
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz {name}: {n} inputs, no panic");
}

#[test]
fn fuzz_shell_reader() {
    let n = cases(4000);
    fuzz("shell", n, fragments(SHELL_BITS), |t| {
        let mut out = Vec::new();
        launch::scan_shell(
            &t,
            &SrcMap::Offset(0),
            0,
            false,
            &mut Vars::default(),
            &Surroundings::default(),
            &mut out,
            0,
        );
        for l in &out {
            for w in l.args.iter() {
                assert!(w.start <= w.end && w.end <= t.len(), "{w:?} out of {t:?}");
            }
        }
        // What was read when nothing starts SGLang: places inside the text.
        let files = [crate::read::source::SourceFile::new("run.sh", t.clone())];
        for s in crate::lint::seen::seen(&files, &[]) {
            assert!(s.at <= t.len() && !s.why.is_empty(), "{s:?} out of {t:?}");
        }
    });
}

#[test]
fn fuzz_yaml_and_manifest_readers() {
    let n = cases(4000);
    fuzz("yaml+manifest", n, fragments(YAML_BITS), |t| {
        if let Ok(docs) = yaml::parse(&t) {
            let mut out = Vec::new();
            manifest::scan_documents(&docs, 0, &Surroundings::default(), &mut out);
            manifest::services(&docs, 0);
        }
        let files = [crate::read::source::SourceFile::new("k.yaml", t.clone())];
        for s in crate::lint::seen::seen(&files, &[]) {
            assert!(s.at <= t.len(), "{s:?} out of {t:?}");
        }
    });
}

#[test]
fn fuzz_config_reader() {
    let n = cases(3000);
    fuzz("sglang-config", n, fragments(YAML_BITS), |t| {
        let files =
            vec![crate::read::source::SourceFile::new("run.sh", ""), crate::read::source::SourceFile::new("c.yaml", t)];
        let w = |s: &str| Word {
            text: s.into(),
            file: 0,
            start: 0,
            end: 0,
            unknown: vec![],
            map: None,
            embed: crate::read::source::Embed::Shell { nested: false },
        };
        let _ = config::expand(
            &[w("--config"), w("c.yaml"), w("--tp"), w("2")].into(),
            &files,
            &[1],
            Release::LATEST.spec(),
        );
    });
}

/// Fixture texts with random byte-range edits: near-valid input reaches deep into the readers.
fn mutated(base: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec((0..base.len().max(1), 0usize..8, fragments(SHELL_BITS)), 1..6).prop_map(move |edits| {
        let mut t = base.to_owned();
        for (at, del, ins) in edits {
            let mut at = at.min(t.len());
            while !t.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + del).min(t.len());
            while !t.is_char_boundary(end) {
                end += 1;
            }
            t.replace_range(at..end, &ins);
        }
        t
    })
}

#[test]
fn fuzz_whole_linter_on_mutated_fixtures() {
    let fixtures: &[(&str, &'static str)] = &[
        ("docs.sh", include_str!("../../../../tests/fixtures/lint/docs-1p1d.sh")),
        ("job.sbatch", include_str!("../../../../tests/fixtures/lint/slurm-deepseek.sbatch")),
        ("rbg.yaml", include_str!("../../../../tests/fixtures/lint/rbg-deepseek.yaml")),
        ("compose.yaml", include_str!("../../../../tests/fixtures/lint/docker-compose.yaml")),
        ("ome.yaml", include_str!("../../../../tests/fixtures/lint/ome-llama-runtime.yaml")),
        ("recipe.yaml", include_str!("../../../../tests/fixtures/lint/srtctl-qwen3-2p2d.yaml")),
        ("k8s.yaml", rendered_leader_worker_sets()),
        ("overlay.yaml", replicated_overlay()),
    ];
    let n = cases(400);
    let mut total = 0;
    for (name, text) in fixtures {
        fuzz(&format!("lint({name})"), n, mutated(text), |t| {
            let inputs = [Input::new(*name, t.clone()), Input::config("x.yaml", t)];
            let l = lint(&inputs, &Options::default());
            let _ = edit::edits(&l);
            for g in 0..l.groups.len() {
                let _ = reconstruct::deployment(&l, g);
            }
        });
        total += n;
    }
    eprintln!("fuzz whole linter: {total} mutated fixtures, no panic");
}

/// The Deployments and Services of the Kubernetes overlay fixture in one file, with three
/// prefill replicas behind their Service (PD051, and instances of their own when reconstructed),
/// which the router reaches at a port the Service forwards to the containers' port named `http`.
fn replicated_overlay() -> &'static str {
    let prefill = include_str!("../../../../tests/fixtures/lint/k8s-overlay/prefill.yaml");
    let decode = include_str!("../../../../tests/fixtures/lint/k8s-overlay/decode.yaml");
    let text = format!("{prefill}---\n{decode}")
        .replace("replicas: 1 ", "replicas: 3 ")
        .replace("- containerPort: 30000", "- {name: http, containerPort: 30000}")
        .replace("{name: http, port: 30000}", "{name: http, port: 80, targetPort: http}")
        .replace("llama-8b-prefill:30000", "llama-8b-prefill:80");
    Box::leak(text.into_boxed_str())
}

/// The Kubernetes manifests of a deployment with multi-node instances, two of them on the
/// prefill side (LeaderWorkerSet replicas), every cluster setting, and a router that discovers
/// the pods by their labels, leaked for the fixtures' lifetime.
fn rendered_leader_worker_sets() -> &'static str {
    let mut d = crate::examples::example("deepseek-v3-dp-deepep").expect("example");
    d.prefill.instances.push(d.prefill.instances[0].clone());
    let k = &mut d.kubernetes;
    k.namespace = Some("llm".into());
    k.service_discovery = true;
    k.node_selector.insert("nvidia.com/gpu.product".into(), "NVIDIA-H200".into());
    k.tolerations = vec!["nvidia.com/gpu:NoSchedule".into()];
    k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
    k.model_cache = Some("hf-cache".into());
    let text = crate::render::render_kubernetes(&d).expect("renders").contents;
    Box::leak(text.into_boxed_str())
}

/// Edge values (zero, negative, huge, not-a-number) of every numeric option, on either side or
/// both: the rules divide by page sizes and parallel sizes, and must not panic on what SGLang's
/// argparse accepts.
#[test]
fn numeric_edge_values_never_panic() {
    const EDGES: &[&str] =
        &["0", "-1", "65536", "4294967295", "9223372036854775807", "-9223372036854775808", "nan", "1e308"];
    const BASES: &[&str] = &[
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode prefill \
         --port 30000 --chunked-prefill-size 8192 --page-size 16 --tp-size 2 PREFILL\n\
         python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode decode \
         --port 30001 --base-gpu-id 2 --page-size 16 --tp-size 2 DECODE\n\
         python -m sglang_router.launch_router --pd-disaggregation --prefill http://127.0.0.1:30000 \
         --decode http://127.0.0.1:30001\n",
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --disaggregation-mode prefill \
         --tp-size 8 --dp-size 8 --enable-dp-attention --moe-a2a-backend deepep --chunked-prefill-size 16384 \
         --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 \
         --speculative-num-draft-tokens 4 --mem-fraction-static 0.8 PREFILL\n\
         python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --disaggregation-mode decode \
         --tp-size 8 --dp-size 8 --enable-dp-attention --moe-a2a-backend deepep --cuda-graph-max-bs 64 \
         --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 \
         --speculative-num-draft-tokens 4 --max-running-requests 128 DECODE\n",
        "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --disaggregation-mode prefill --host 10.0.0.1 \
         --port 30000 --tp-size 4 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000 PREFILL\n\
         python -m sglang.launch_server --model-path Qwen/Qwen3-32B --disaggregation-mode decode --host 10.0.0.1 \
         --port 30001 --base-gpu-id 4 --tp-size 4 DECODE\n",
    ];
    let spec = Release::LATEST.spec();
    let numeric: Vec<&str> = spec
        .flags
        .iter()
        .filter(|f| matches!(f.ty.as_deref(), Some("int" | "float")) && f.arity() == crate::spec::Arity::One)
        .filter_map(|f| f.flags.iter().find(|s| s.starts_with("--")).map(String::as_str))
        .collect();
    assert!(numeric.len() > 50, "only {} numeric options", numeric.len());
    let mut runs = 0;
    let mut failed = Vec::new();
    for base in BASES {
        for flag in &numeric {
            for value in EDGES {
                let arg = format!("{flag} {value}");
                for (p, d) in [(arg.as_str(), ""), ("", arg.as_str()), (arg.as_str(), arg.as_str())] {
                    let text = base.replace("PREFILL", p).replace("DECODE", d);
                    let run = std::panic::catch_unwind(|| {
                        let l = lint(&[Input::new("edge.sh", text.clone())], &Options::default());
                        let _ = edit::edits(&l);
                        for g in 0..l.groups.len() {
                            let _ = reconstruct::deployment(&l, g);
                        }
                    });
                    if run.is_err() {
                        failed.push(format!(
                            "`{arg}` on {}",
                            if d.is_empty() {
                                "prefill"
                            } else if p.is_empty() {
                                "decode"
                            } else {
                                "both"
                            }
                        ));
                    }
                    runs += 1;
                }
            }
        }
    }
    assert!(failed.is_empty(), "{} of {runs} scripts panicked: {}", failed.len(), failed.join("; "));
    eprintln!("numeric edge values: {runs} scripts linted, no panic");
}

/// The ways a continued line of a command can lose its continuation (PD055), as the line's new
/// ending: the `\` at its end is replaced by this text.
const BREAKS: &[(&str, crate::rules::material::BreakKind)] = {
    use crate::rules::material::BreakKind::*;
    &[
        ("\\  ", BlankAfterBackslash),
        ("\\   # a note", CommentAfterBackslash),
        (" # a note \\", CommentEndsLine),
        ("", NoBackslash),
        ("\\\n    # a note", CommentLine),
        ("\\\n", BlankLine),
    ]
};

/// `broken_continuations_are_found_and_joined`: in any rendered script, a continuation broken in
/// any of the ways bash ends a command is reported once (PD055) at the broken line, with the
/// arguments of the next line first among those lost; the server is read with the arguments
/// before the break only; and `--fix` joins the lines so that every server gets its whole
/// argv again.
#[test]
fn broken_continuations_are_found_and_joined() {
    let n = cases(150);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let strategy = (deployment(), any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0..BREAKS.len());
    runner
        .run(&strategy, |(d, file, line, how)| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let inputs: Vec<Input> = files.iter().map(|f| Input::new(f.name.clone(), f.contents.clone())).collect();
            let opts = release_options(&d);
            let tokens = |l: &Linted| -> Vec<Vec<String>> {
                let mut v: Vec<Vec<String>> =
                    l.groups.iter().flat_map(|g| &g.servers).map(|s| s.view.tokens.clone()).collect();
                v.extend(l.groups.iter().filter_map(|g| g.router.as_ref()).map(|r| r.view.tokens.clone()));
                v
            };
            let fixed_all = |files: &[Input]| -> Vec<Input> {
                let fixed = edit::fix_all(files, &opts);
                files
                    .iter()
                    .map(|i| {
                        fixed
                            .iter()
                            .find(|x| x.name == i.name)
                            .map_or_else(|| i.clone(), |x| Input::new(&i.name, &x.after))
                    })
                    .collect()
            };
            // What the servers get once every fix is made, which `--fix` of the broken scripts must give too.
            let whole = tokens(&lint(&fixed_all(&inputs), &opts));
            // A continued line of one of the files, and the line after it.
            let f = file.index(inputs.len());
            let lines: Vec<&str> = inputs[f].text.split('\n').collect();
            let continued: Vec<usize> = (0..lines.len().saturating_sub(1))
                .filter(|&i| lines[i].ends_with(" \\") && lines[i + 1].trim_start().starts_with("--"))
                .collect();
            if continued.is_empty() {
                return Ok(());
            }
            let at = continued[line.index(continued.len())];
            let (ending, kind) = BREAKS[how];
            let mut broken = inputs.clone();
            let mut text: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            text[at] = [&lines[at][..lines[at].len() - 1], ending].concat();
            broken[f].text = text.join("\n");
            let linted = lint(&broken, &opts);
            let found: Vec<&LintFinding> = linted.findings.iter().filter(|x| x.finding.code == "PD055").collect();
            prop_assert_eq!(found.len(), 1, "{:?}\n{}", found, broken[f].text);
            let (got, b) = (&found[0], linted.launches.iter().flat_map(|l| &l.breaks).next().unwrap());
            prop_assert_eq!(b.kind, kind);
            let break_line = if matches!(
                kind,
                crate::rules::material::BreakKind::CommentLine | crate::rules::material::BreakKind::BlankLine
            ) {
                at + 2
            } else {
                at + 1
            };
            prop_assert_eq!(got.places[0].line as usize, break_line, "{}", got.finding.message);
            let next = lines[at + 1].split_whitespace().next().unwrap_or_default();
            prop_assert_eq!(b.lost.first().map(|w| w.text.as_str()), Some(next));
            prop_assert_ne!(
                tokens(&linted),
                tokens(&lint(&inputs, &opts)),
                "the server is read without the lost arguments"
            );
            let after = fixed_all(&broken);
            let again = lint(&after, &opts);
            prop_assert!(again.findings.iter().all(|x| x.finding.code != "PD055"), "{}", after[f].text);
            same_text(&tokens(&again).concat().join(" "), &whole.concat().join(" "), &after[f].text)?;
            Ok(())
        })
        .unwrap();
    eprintln!("broken continuations: {n} generated scripts broken, found and joined");
}

/// `files_given_together_pair_up`: the servers' scripts of any rendered deployment, without the
/// router's, are one deployment, even when every decode loads another checkpoint, which PD056
/// then reports once; a decode that loads a local copy named like the prefill's model is the
/// same model and gives no PD056.
#[test]
fn files_given_together_pair_up() {
    let n = cases(150);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    runner
        .run(&(deployment(), any::<bool>()), |(d, other)| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let model = &d.model.path;
            let name = model.trim_end_matches('/').rsplit('/').next().unwrap_or(model);
            if name.is_empty() {
                // A path that names no folder (`/`) has no local copy named like it.
                return Ok(());
            }
            let local = ["/models/", name].concat();
            let decode_path = if other { [model.as_str(), "-FP8"].concat() } else { local };
            let inputs: Vec<Input> = files
                .iter()
                .filter(|f| !f.name.starts_with("router"))
                .map(|f| {
                    let text = if f.name.starts_with("decode") {
                        f.contents.replace(
                            &format!("--model-path {}", crate::render::quote(model)),
                            &format!("--model-path {}", crate::render::quote(&decode_path)),
                        )
                    } else {
                        f.contents.clone()
                    };
                    Input::new(f.name.clone(), text)
                })
                .collect();
            let opts = release_options(&d);
            let linted = lint(&inputs, &opts);
            prop_assert_eq!(linted.groups.len(), 1, "{:?}", linted.groups.iter().map(|g| &g.name).collect::<Vec<_>>());
            let found = linted.findings.iter().filter(|f| f.finding.code == "PD056").count();
            prop_assert_eq!(
                found,
                usize::from(other),
                "{:?}",
                linted.findings.iter().map(|f| &f.finding.message).collect::<Vec<_>>()
            );
            Ok(())
        })
        .unwrap();
    eprintln!("files given together: {n} generated deployments' server scripts paired");
}

/// `placeholder_hosts_are_per_machine`: the per-process scripts of any rendered deployment, each
/// server's `--host` (and its rendezvous host) replaced by one placeholder that every machine
/// fills in (`${HOST_IP}`), as docs write one command per machine, give no port or GPU error
/// (PD019, PD020): equal placeholder text is not one machine.
#[test]
fn placeholder_hosts_are_per_machine() {
    let n = cases(100);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    // Cases where the placeholder read as one machine would collide: the ones the test is about.
    let told = std::cell::Cell::new(0u32);
    runner
        .run(&deployment(), |d| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let hosts: Vec<String> = Role::BOTH
                .into_iter()
                .flat_map(|r| d.side(r).instances.iter().flat_map(|i| i.nodes.iter().map(|n| n.host.clone())))
                .collect();
            let inputs: Vec<Input> = files
                .iter()
                .filter(|f| !f.name.starts_with("router"))
                .map(|f| {
                    let mut text = f.contents.clone();
                    for h in &hosts {
                        text = text.replace(&format!("--host {}", crate::render::quote(h)), "--host ${HOST_IP}");
                    }
                    Input::new(f.name.clone(), text)
                })
                .collect();
            let opts = release_options(&d);
            let linted = lint(&inputs, &opts);
            let wrong: Vec<&String> = linted
                .findings
                .iter()
                .filter(|f| {
                    matches!(f.finding.code, "PD019" | "PD020") && f.finding.severity != crate::rules::Severity::Note
                })
                .map(|f| &f.finding.message)
                .collect();
            // Only those the deployment itself has (its own literal hosts collide) may remain.
            let own = crate::rules::check(&d).findings.iter().filter(|f| matches!(f.code, "PD019" | "PD020")).count();
            prop_assert!(wrong.is_empty() || own > 0, "{:?}", wrong);
            let note = |f: &&LintFinding| f.finding.message.starts_with("if these run on one machine");
            told.set(told.get() + u32::from(linted.findings.iter().any(|f| note(&f))));
            Ok(())
        })
        .unwrap();
    eprintln!(
        "placeholder hosts: {n} generated deployments' scripts with one `${{HOST_IP}}` linted, {} of them would collide on one machine",
        told.get()
    );
    assert!(told.get() * 20 >= n, "too few cases where the placeholder matters: {} of {n}", told.get());
}

/// `a_gpu_split_in_one_file_is_one_machine`: the node-0 server scripts of any rendered
/// deployment in one file, their hosts replaced by one placeholder (`${HOST_IP}`), each run in
/// the foreground on GPUs of its own through `CUDA_VISIBLE_DEVICES` (one node's GPUs split
/// between them, as a one-node test writes it), are one machine: no collision is a note, no two
/// share a GPU, and a port the deployment uses on several of its hosts is a PD019 error.
#[test]
fn a_gpu_split_in_one_file_is_one_machine() {
    let n = cases(100);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    // Cases with a port collision on the one machine: those where the split decides.
    let collided = std::cell::Cell::new(0u32);
    runner
        .run(&deployment(), |d| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let mut text = String::new();
            let mut next = 0u32;
            for p in plan.servers.iter().filter(|p| p.node == 0) {
                let name = format!("{}.sh", p.id());
                let f = files.iter().find(|f| f.name == name).expect("a script per process");
                // Enough visible GPUs for the script's base GPU and count, none another's.
                let len = p.gpus.0 + p.gpus.1;
                let visible: Vec<String> = (next..next + len).map(|g| g.to_string()).collect();
                next += len;
                let body = f
                    .contents
                    .replace(&format!("--host {}", crate::render::quote(&p.host)), "--host ${HOST_IP}")
                    .replacen("\nexec ", &format!("\nCUDA_VISIBLE_DEVICES={} ", visible.join(",")), 1);
                text.push_str(&body);
            }
            let linted = lint(&[Input::new("one-node.sh", text.clone())], &release_options(&d));
            let servers: Vec<&ServerEntry> = linted.groups.iter().flat_map(|g| &g.servers).collect();
            let machines: Vec<Option<&str>> = servers.iter().map(|s| s.view.placeholder_machine.as_deref()).collect();
            prop_assert!(machines.iter().all(|m| m.is_some() && *m == machines[0]), "{:?}\n{}", machines, text);
            let notes: Vec<&String> = linted
                .findings
                .iter()
                .filter(|f| f.finding.message.starts_with("if these run on one machine"))
                .map(|f| &f.finding.message)
                .collect();
            prop_assert!(notes.is_empty(), "{:?}", notes);
            let shared =
                linted.findings.iter().find(|f| f.finding.code == "PD020" && f.finding.message.contains("they share"));
            prop_assert!(shared.is_none(), "{:?}", shared.map(|f| &f.finding.message));
            let port =
                |f: &&LintFinding| f.finding.code == "PD019" && f.finding.severity == crate::rules::Severity::Error;
            collided.set(collided.get() + u32::from(linted.findings.iter().any(|f| port(&f))));
            Ok(())
        })
        .unwrap();
    eprintln!(
        "a GPU split in one file: {n} generated deployments' node-0 scripts on one machine, {} with a port collision there",
        collided.get()
    );
    assert!(collided.get() * 20 >= n, "too few cases where the split matters: {} of {n}", collided.get());
}

/// `every_launcher_gives_the_bare_findings`: the server scripts of any rendered deployment, their
/// `python -m sglang.launch_server` started by another launcher SGLang's arguments reach
/// unchanged (Dynamo's early worker modules, `sglang_router.launch_server` with router options of
/// its own) or behind wrappers (`numactl`, `timeout`, `nsys profile`, `env`, a container's
/// `--entrypoint`), give the errors and warnings the bare scripts give.
#[test]
fn every_launcher_gives_the_bare_findings() {
    const FORMS: &[&str] = &[
        "{py} -m dynamo.sglang.worker",
        "{py} -m dynamo.sglang.decode_worker",
        "{py} -m sglang_router.launch_server --router-policy cache_aware",
        "numactl --cpunodebind=0 timeout --signal=TERM 3h {py} -m sglang.launch_server",
        "nsys profile -o trace-%p --trace=cuda,nvtx env SGLANG_LOG=1 {py} -m sglang.launch_server",
        "docker run --rm --network host --entrypoint {py} lmsysorg/sglang:latest -m sglang.launch_server",
        "sglang serve",
    ];
    let n = cases(60);
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let said = |l: &crate::lint::Linted| -> Vec<(&'static str, String)> {
        l.findings
            .iter()
            .filter(|f| f.finding.severity != crate::rules::Severity::Note)
            .map(|f| (f.finding.code, f.finding.message.clone()))
            .collect()
    };
    runner
        .run(&(deployment(), 0..FORMS.len()), |(d, form)| {
            let plan = crate::plan::plan(&d);
            let files = crate::render::render_shell(&plan);
            let bare = format!("{} -m {}", plan.python, crate::plan::SERVER_MODULE);
            let wrapped = FORMS[form].replace("{py}", &plan.python);
            let inputs = |wrap: bool| -> Vec<Input> {
                files
                    .iter()
                    .map(|f| {
                        let text = if wrap { f.contents.replace(&bare, &wrapped) } else { f.contents.clone() };
                        Input::new(f.name.clone(), text)
                    })
                    .collect()
            };
            // Every server's command is started by the other launcher.
            let servers = files.iter().map(|f| f.contents.matches(&bare).count()).sum::<usize>();
            prop_assert!(servers > 0, "no `{}` in {:?}", bare, files.iter().map(|f| &f.contents).collect::<Vec<_>>());
            let opts = release_options(&d);
            let (before, after) = (lint(&inputs(false), &opts), lint(&inputs(true), &opts));
            let servers_read =
                before.launches.iter().filter(|l| l.program == crate::lint::launch::Program::Server).count();
            prop_assert_eq!(servers, servers_read);
            prop_assert_eq!(after.launches.len(), before.launches.len(), "{}", FORMS[form]);
            prop_assert_eq!(said(&after), said(&before), "{}", FORMS[form]);
            Ok(())
        })
        .unwrap();
    eprintln!("every launcher: {n} generated deployments' scripts started by {} launchers", FORMS.len());
}
