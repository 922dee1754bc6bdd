//! The whole smoke test as `pdlaunch smoke` runs it: static checks, the memory budget, the
//! engine choice, the clean transfer for every prefill-rank -> decode-rank pair with every
//! engine variant, the negative controls, and the report (JSON and text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::agent::launch::{Launcher, TransportEngine};
use crate::agent::{Memory, Transport};
use crate::case::{prepare, Case, Perturbation, Prepared};
use crate::checks::{dynamic_possible, static_checks, Check, Status};
use crate::engine::cpu::CpuEngine;
use crate::engine::{gbps, Engine, EngineRun, Job};
use crate::geometry::KvGeometry;
use crate::layout::{SideConfig, SideLayout};
use crate::memory::{host_available, human};
use crate::sides::Sides;
use crate::transfer::{Path, TransferBackend};
use crate::verify::{Class, SliceError, Verification};

/// Version of the JSON report.
pub const SCHEMA: &str = "pdlaunch-kv-smoke/1";

/// Which engine to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA when a GPU is usable, else the CPU.
    Auto,
    /// The CPU engine.
    Cpu,
    /// The CUDA engine; no GPU is an environment error.
    Cuda,
}

/// How to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Tokens in the test request.
    pub tokens: u32,
    /// Engine.
    pub backend: BackendChoice,
    /// Transfer engine to model instead of the deployment's.
    pub transfer: Option<TransferBackend>,
    /// Also run the negative controls.
    pub negative_controls: bool,
    /// Memory cap in bytes for the host and for each GPU (default: half of what is free).
    pub max_memory: Option<u64>,
    /// Timed repetitions of the clean transfer.
    pub iterations: u32,
    /// Seed for canaries and page shuffling.
    pub seed: u64,
    /// Limit for every GPU wait.
    pub wait_limit: Duration,
    /// CPU engine threads (default: available parallelism, at most 8).
    pub threads: Option<usize>,
    /// Move the KV between two agent processes through NIXL or Mooncake instead of the
    /// in-process engines.
    pub transport: Option<Launcher>,
    /// Read the run back from the reports of agents that ran on the deployment's own nodes
    /// (`--report`) instead of running it.
    pub hosts: Option<crate::agent::hosts::Replay>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            tokens: 1024,
            backend: BackendChoice::Auto,
            transfer: None,
            negative_controls: false,
            max_memory: None,
            iterations: 3,
            seed: 0x5EED_4B56,
            wait_limit: Duration::from_secs(60),
            threads: None,
            transport: None,
            hosts: None,
        }
    }
}

/// What the test is about.
#[derive(Clone, Debug)]
pub struct Input {
    /// A name for reports (the deployment's).
    pub name: String,
    /// Model geometry.
    pub geometry: KvGeometry,
    /// Where it came from (`--layers ... flags`, `model.geometry`).
    pub geometry_source: String,
    /// Both sides.
    pub sides: Sides,
}

/// Progress reports while running.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// The engine was chosen: `cpu` or `cuda`.
    Engine(&'a str),
    /// A step starts.
    Stage(&'a str),
    /// Pairs done in the current transfer.
    Pairs {
        /// Case label.
        case: &'a str,
        /// Engine variant.
        engine: &'a str,
        /// Done.
        done: usize,
        /// Total.
        total: usize,
    },
}

/// A problem with the input or the environment (exit status 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SmokeError {
    /// The environment cannot run what was asked (no GPU for `--backend cuda`).
    #[error("{0}")]
    Environment(String),
    /// The test would need more memory than allowed.
    #[error("{0}")]
    Memory(String),
    /// The input cannot be tested.
    #[error("{0}")]
    Input(String),
}

/// Pass or fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every check passed, every slice landed, every negative control was caught.
    Pass,
    /// Something failed.
    Fail,
}

/// A GPU as reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    /// Ordinal.
    pub ordinal: usize,
    /// Name.
    pub name: String,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
    /// Memory in bytes.
    pub total_bytes: u64,
    /// Free memory in bytes.
    pub free_bytes: u64,
}

/// Where the test ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// `cpu` or `cuda`.
    pub backend: String,
    /// What was asked (`auto`, `cpu`, `cuda`).
    pub requested: BackendChoice,
    /// Why the CPU was used when a GPU was allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// CPU engine threads.
    pub cpu_threads: usize,
    /// CUDA driver version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<i32>,
    /// GPUs.
    pub devices: Vec<Device>,
    /// How the gather kernel was obtained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// Memory the run uses, stated before allocating.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryBudget {
    /// Host bytes (largest case).
    pub host_bytes: u64,
    /// Host cap.
    pub host_cap: Option<u64>,
    /// Where the cap came from.
    pub cap_source: String,
    /// Bytes per GPU ordinal.
    pub gpu_bytes: BTreeMap<usize, u64>,
    /// Cap per GPU ordinal.
    pub gpu_cap: BTreeMap<usize, u64>,
}

/// A side's pools, summarised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayoutSummary {
    /// Settings.
    pub config: SideConfig,
    /// Ranks (stages x attention TP).
    pub ranks: usize,
    /// KV heads per rank.
    pub heads_per_rank: u32,
    /// Row bytes of one buffer on one rank.
    pub row_bytes: u64,
    /// SGLang's `kv_item_len`.
    pub item_len: u64,
    /// Usable pages per buffer in the test pools.
    pub pages: u32,
    /// Bytes of all ranks' test pools.
    pub pool_bytes: u64,
}

impl LayoutSummary {
    fn of(l: &SideLayout) -> LayoutSummary {
        let r = &l.ranks[0];
        LayoutSummary {
            config: l.config,
            ranks: l.ranks.len(),
            heads_per_rank: r.heads.end - r.heads.start,
            row_bytes: r.row_bytes,
            item_len: r.item_len(),
            pages: r.pages,
            pool_bytes: l.total_bytes(),
        }
    }
}

/// Both sides' pools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layouts {
    /// Prefill.
    pub prefill: LayoutSummary,
    /// Decode.
    pub decode: LayoutSummary,
}

/// The plan in numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    /// Engine modelled.
    pub backend: TransferBackend,
    /// Descriptors executed.
    pub descriptors: usize,
    /// Payload bytes.
    pub bytes: u64,
    /// Calls into the transfer engine.
    pub transfer_calls: u64,
    /// Descriptors set aside as out of the registered region.
    pub rejected: usize,
    /// Their bytes.
    pub rejected_bytes: u64,
    /// The first of them.
    pub first_rejected: Vec<String>,
    /// Prefill pages dropped because the decode sent fewer indices.
    pub truncated_pages: u32,
    /// Pairs SGLang would refuse, and why.
    pub refused: Vec<String>,
}

/// One engine's timing of a pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairTime {
    /// Engine variant.
    pub engine: String,
    /// Seconds.
    pub seconds: f64,
    /// GB/s.
    pub gbps: f64,
}

/// One prefill-rank -> decode-rank pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairReport {
    /// Prefill rank.
    pub prefill: String,
    /// Decode rank.
    pub decode: String,
    /// Path.
    pub path: Path,
    /// Descriptors.
    pub descriptors: usize,
    /// Bytes.
    pub bytes: u64,
    /// Transfer-engine calls.
    pub transfer_calls: u32,
    /// Decode slices this pair supplies.
    pub slices: u64,
    /// Of which wrong (under any engine).
    pub bad: u64,
    /// `ok`, `fail` or `dummy`.
    pub status: &'static str,
    /// Per engine.
    pub timings: Vec<PairTime>,
}

/// The reference copy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReferenceReport {
    /// What.
    pub what: String,
    /// Bytes.
    pub bytes: u64,
    /// Seconds.
    pub seconds: f64,
    /// GB/s.
    pub gbps: f64,
}

/// One engine variant's run.
#[derive(Clone, Debug, Serialize)]
pub struct EngineReport {
    /// Variant.
    pub engine: String,
    /// Details.
    pub detail: String,
    /// Seconds for the plan.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Descriptors.
    pub descriptors: usize,
    /// GB/s.
    pub gbps: f64,
    /// The reference copy measured in the same run.
    pub reference: ReferenceReport,
    /// Seconds of the first repetition, connection included (transports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seconds: Option<f64>,
    /// What the first repetition took beyond a steady one: the connection's cost (transports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_seconds: Option<f64>,
    /// Engine GB/s over reference GB/s.
    pub ratio: f64,
    /// What landed.
    pub verification: Verification,
}

/// One case (clean or a control).
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// `clean` or the control's name.
    pub label: String,
    /// The decode that ran.
    pub decode_actual: SideConfig,
    /// The plan.
    pub plan: PlanSummary,
    /// Pairs.
    pub pairs: Vec<PairReport>,
    /// Engine variants.
    pub engines: Vec<EngineReport>,
    /// All slices in place, nothing stray, nothing set aside or refused.
    pub clean: bool,
}

/// A negative control's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct ControlReport {
    /// Which.
    pub control: Perturbation,
    /// Its name.
    pub name: String,
    /// Whether it applies to this deployment.
    pub applicable: bool,
    /// Caught (`None` when not applicable).
    pub caught: Option<bool>,
    /// Why not applicable, or how it was caught.
    pub summary: String,
    /// Likely causes named by the verifier.
    pub diagnosis: Vec<String>,
    /// The first wrong slice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<SliceError>,
    /// Descriptors set aside.
    pub rejected_descriptors: usize,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Schema id.
    pub schema: &'static str,
    /// Pass or fail.
    pub verdict: Verdict,
    /// Deployment name.
    pub name: String,
    /// Geometry.
    pub geometry: KvGeometry,
    /// Its source.
    pub geometry_source: String,
    /// Tokens in the request.
    pub tokens: u32,
    /// Seed.
    pub seed: u64,
    /// Transfer engine modelled.
    pub transfer: Option<TransferBackend>,
    /// Both sides.
    pub sides: Sides,
    /// Where it ran.
    pub environment: Environment,
    /// Memory stated before allocating.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryBudget>,
    /// Static checks.
    pub static_checks: Vec<Check>,
    /// Pools per side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layouts>,
    /// The clean transfer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<CaseReport>,
    /// Why the dynamic test did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_skipped: Option<String>,
    /// Negative controls.
    pub negative_controls: Vec<ControlReport>,
}

/// The transfer engine named by a `--disaggregation-transfer-backend` value, if modelled.
pub fn transfer_from_name(name: &str) -> Option<TransferBackend> {
    match name {
        "mooncake" | "mooncake_tcp" => Some(TransferBackend::Mooncake),
        "nixl" => Some(TransferBackend::Nixl),
        _ => None,
    }
}

struct Chosen {
    engine: Box<dyn Engine>,
    env: Environment,
}

fn choose_engine(opts: &Options) -> Result<Chosen, SmokeError> {
    if let Some(r) = &opts.hosts {
        let env = Environment {
            backend: r.variants().remove(0),
            requested: opts.backend,
            note: Some(r.describe()),
            cpu_threads: 1,
            driver_version: None,
            devices: Vec::new(),
            kernel: None,
        };
        return Ok(Chosen { engine: Box::new(r.clone()), env });
    }
    if let Some(l) = &opts.transport {
        return transport_engine(l, opts);
    }
    let cpu = CpuEngine::new(opts.threads);
    let cpu_env = |note: Option<String>| Environment {
        backend: "cpu".into(),
        requested: opts.backend,
        note,
        cpu_threads: cpu.threads(),
        driver_version: None,
        devices: Vec::new(),
        kernel: None,
    };
    if opts.backend == BackendChoice::Cpu {
        return Ok(Chosen { engine: Box::new(cpu.clone()), env: cpu_env(None) });
    }
    #[cfg(feature = "cuda")]
    {
        use crate::engine::cuda::{probe, CudaEngine, Probe};
        match probe() {
            Probe::Available { driver_version, devices } => match CudaEngine::new(&devices, opts.wait_limit) {
                Ok(engine) => {
                    let env = Environment {
                        backend: "cuda".into(),
                        requested: opts.backend,
                        note: engine.note(),
                        cpu_threads: cpu.threads(),
                        driver_version: Some(driver_version),
                        devices: devices
                            .iter()
                            .map(|d| Device {
                                ordinal: d.ordinal,
                                name: d.name.clone(),
                                compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
                                total_bytes: d.total_bytes,
                                free_bytes: d.free_bytes,
                            })
                            .collect(),
                        kernel: Some(match engine.kernel_source() {
                            Some(s) => format!("{s}: {}", engine.kernel_note()),
                            None => engine.kernel_note().to_owned(),
                        }),
                    };
                    Ok(Chosen { engine: Box::new(engine), env })
                }
                Err(e) if opts.backend == BackendChoice::Cuda => {
                    Err(SmokeError::Environment(format!("--backend cuda: the GPU could not be used: {e}")))
                }
                Err(e) => Ok(Chosen {
                    engine: Box::new(cpu.clone()),
                    env: cpu_env(Some(format!("GPU unusable ({e}); ran on the CPU"))),
                }),
            },
            Probe::Unavailable { reason } if opts.backend == BackendChoice::Cuda => Err(SmokeError::Environment(
                format!("--backend cuda: no usable GPU: {reason}. Run with --backend cpu (or auto) on this machine."),
            )),
            Probe::Unavailable { reason } => Ok(Chosen {
                engine: Box::new(cpu.clone()),
                env: cpu_env(Some(format!("no usable GPU ({reason}); ran on the CPU"))),
            }),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        if opts.backend == BackendChoice::Cuda {
            return Err(SmokeError::Environment(
                "--backend cuda: this build has no CUDA engine (built without the `cuda` feature)".into(),
            ));
        }
        Ok(Chosen { engine: Box::new(cpu.clone()), env: cpu_env(Some("built without the CUDA engine".into())) })
    }
}

/// GPU bytes a case needs on each ordinal for the engine's placements (both pools on the first
/// GPU; with two GPUs the decode pools also go to the second).
fn gpu_bytes(p: &Prepared, env: &Environment) -> BTreeMap<usize, u64> {
    let mut out = BTreeMap::new();
    let items = p.plan.bytes() / crate::engine::KERNEL_ITEM_BYTES + p.plan.descriptors() as u64;
    let first = p.prefill.total_bytes() + p.decode.total_bytes() + 2 * p.plan.bytes() + items * 32;
    if let Some(d) = env.devices.first() {
        out.insert(d.ordinal, first);
    }
    if let Some(d) = env.devices.get(1) {
        out.insert(d.ordinal, p.decode.total_bytes() + 2 * p.plan.bytes());
    }
    out
}

fn budget(cases: &[&Prepared], env: &Environment, opts: &Options) -> Result<MemoryBudget, SmokeError> {
    let host_bytes = cases.iter().map(|p| p.host_bytes()).max().unwrap_or(0);
    let mut gpu_need: BTreeMap<usize, u64> = BTreeMap::new();
    for p in cases {
        for (k, v) in gpu_bytes(p, env) {
            let e = gpu_need.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    let (host_cap, cap_source) = match (opts.max_memory, host_available()) {
        (Some(m), _) => (Some(m), "--max-memory".to_owned()),
        (None, Some(a)) => (Some(a / 2), format!("half of the {} of host memory available", human(a))),
        (None, None) => (None, "unknown (no /proc/meminfo); no cap".to_owned()),
    };
    let gpu_cap: BTreeMap<usize, u64> =
        env.devices.iter().map(|d| (d.ordinal, opts.max_memory.unwrap_or(d.free_bytes / 2))).collect();
    let tokens = u64::from(cases.first().map_or(1, |c| c.case.tokens)).max(1);
    let shrink = |need: u64, cap: u64, what: &str| -> SmokeError {
        let per_token = need.div_ceil(tokens).max(1);
        let fits = cap / per_token;
        SmokeError::Memory(format!(
            "the test needs {} ({need} bytes) of {what}, above the cap of {} ({cap} bytes, {}); each token costs about {}: use --tokens {} or less, or raise --max-memory",
            human(need),
            human(cap),
            if opts.max_memory.is_some() { "--max-memory".to_owned() } else { cap_source.clone() },
            human(per_token),
            fits.max(1)
        ))
    };
    if let Some(cap) = host_cap {
        if host_bytes > cap {
            return Err(shrink(host_bytes, cap, "host memory"));
        }
    }
    for (ord, need) in &gpu_need {
        let cap = gpu_cap.get(ord).copied().unwrap_or(u64::MAX);
        if *need > cap {
            return Err(shrink(*need, cap, &format!("memory on GPU {ord}")));
        }
    }
    Ok(MemoryBudget { host_bytes, host_cap, cap_source, gpu_bytes: gpu_need, gpu_cap })
}

fn plan_summary(p: &Prepared) -> PlanSummary {
    PlanSummary {
        backend: p.plan.backend,
        descriptors: p.plan.descriptors(),
        bytes: p.plan.bytes(),
        transfer_calls: p.plan.pairs.iter().map(|x| u64::from(x.transfer_calls)).sum(),
        rejected: p.plan.rejected(),
        rejected_bytes: p.plan.rejected_bytes(),
        first_rejected: p
            .plan
            .pairs
            .iter()
            .flat_map(|x| {
                x.rejected.iter().map(move |r| format!("{} -> {}: {}", x.prefill_label, x.decode_label, r.reason))
            })
            .take(5)
            .collect(),
        truncated_pages: p.plan.pairs.iter().map(|x| x.truncated_pages).max().unwrap_or(0),
        refused: p
            .plan
            .pairs
            .iter()
            .filter_map(|x| x.refused.as_ref().map(|r| format!("{} -> {}: {r}", x.prefill_label, x.decode_label)))
            .collect(),
    }
}

/// The agents' engine for `--transport nixl|mooncake`.
fn transport_engine(l: &Launcher, opts: &Options) -> Result<Chosen, SmokeError> {
    if l.transport == Transport::Memcpy {
        return Err(SmokeError::Input("the memcpy transport runs the in-process engines".into()));
    }
    let mut l = l.clone();
    if opts.backend == BackendChoice::Cuda {
        l.memory = Memory::Vram;
        l.gpus =
            Some(crate::agent::vram_gpus(l.transport, l.gpus).map_err(|e| SmokeError::Environment(e.to_string()))?);
    }
    let engine = TransportEngine::new(l.clone()).map_err(|e| SmokeError::Environment(e.to_string()))?;
    let env = Environment {
        backend: l.transport.name().into(),
        requested: opts.backend,
        note: Some(format!("{}, placement {}", engine.describe(), l.placement.name())),
        cpu_threads: 1,
        driver_version: None,
        devices: Vec::new(),
        kernel: None,
    };
    Ok(Chosen { engine: Box::new(engine), env })
}

/// Runs every engine variant (or only the last one, for controls) on `p`.
fn run_case(
    p: &Prepared,
    chosen: &mut Chosen,
    iterations: u32,
    all_variants: bool,
    progress: &dyn Fn(Event<'_>),
) -> Result<(Vec<EngineRun>, Vec<Verification>), SmokeError> {
    let prefill = p.prefill_pools();
    let variants = chosen.engine.variants();
    let picked: Vec<usize> = if all_variants { (0..variants.len()).collect() } else { vec![variants.len() - 1] };
    let mut runs = Vec::new();
    let mut checks = Vec::new();
    for v in picked {
        let mut decode = p.decode_pools();
        let label = p.label();
        let name = variants[v].clone();
        let report = |done: usize, total: usize| progress(Event::Pairs { case: label, engine: &name, done, total });
        let job = Job { prepared: p, prefill: &prefill, iterations, progress: &report };
        let run = chosen
            .engine
            .run(v, &job, &mut decode)
            .map_err(|e| SmokeError::Environment(format!("{}: {e}", variants[v])))?;
        checks.push(chosen.engine.take_verification().unwrap_or_else(|| p.verify(&decode)));
        runs.push(run);
    }
    Ok((runs, checks))
}

fn case_report(p: &Prepared, runs: Vec<EngineRun>, checks: Vec<Verification>) -> CaseReport {
    // Slices of each decode rank, as index ranges into `expected` (generated rank by rank).
    let mut rank_ranges: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for (i, s) in p.expected.iter().enumerate() {
        let e = rank_ranges.entry(s.rank).or_insert((i, i));
        e.1 = i + 1;
    }
    let pairs = p
        .plan
        .pairs
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let src = &p.prefill.ranks[pair.prefill];
            let (mut slices, mut bad) = (0u64, 0u64);
            if pair.path != Path::Dummy {
                if let Some((a, b)) = pair.decode.and_then(|d| rank_ranges.get(&(d as u32)).copied()) {
                    for k in a..b {
                        let c = &p.expected[k].coord;
                        if src.layers.contains(&c.layer) && (p.case.geometry.is_mla() || src.heads.contains(&c.head)) {
                            slices += 1;
                            if checks.iter().any(|v| v.classes[k] != Class::Ok) {
                                bad += 1;
                            }
                        }
                    }
                }
            }
            let status = if pair.path == Path::Dummy {
                "dummy"
            } else if bad == 0 && pair.rejected.is_empty() && pair.refused.is_none() {
                "ok"
            } else {
                "fail"
            };
            PairReport {
                prefill: pair.prefill_label.clone(),
                decode: pair.decode_label.clone(),
                path: pair.path,
                descriptors: pair.descriptors.len(),
                bytes: pair.bytes(),
                transfer_calls: pair.transfer_calls,
                slices,
                bad,
                status,
                timings: runs
                    .iter()
                    .map(|r| {
                        let s = r.pairs.get(i).map_or(0.0, |t| t.seconds);
                        PairTime { engine: r.engine.clone(), seconds: s, gbps: gbps(pair.bytes(), s) }
                    })
                    .collect(),
            }
        })
        .collect();
    let plan = plan_summary(p);
    let clean = checks.iter().all(Verification::is_clean) && plan.rejected == 0 && plan.refused.is_empty();
    let engines = runs
        .into_iter()
        .zip(checks)
        .map(|(r, v)| EngineReport {
            first_seconds: r.first_seconds,
            connection_seconds: r.first_seconds.map(|f| (f - r.seconds).max(0.0)),
            gbps: r.gbps(),
            ratio: r.ratio(),
            reference: ReferenceReport {
                what: r.reference.what.clone(),
                bytes: r.reference.bytes,
                seconds: r.reference.seconds,
                gbps: r.reference_gbps(),
            },
            engine: r.engine,
            detail: r.detail,
            seconds: r.seconds,
            bytes: r.bytes,
            descriptors: r.descriptors,
            verification: v,
        })
        .collect();
    CaseReport { label: p.label().to_owned(), decode_actual: p.decode_actual, plan, pairs, engines, clean }
}

/// The run that agents on the deployment's own nodes made (`--across hosts`), from their
/// reports: the input and options their context echoes, the engine replaying their transfer.
pub fn from_reports(
    ctx: &crate::agent::hosts::Context,
    pair: crate::agent::hosts::PairReports,
) -> Result<Report, SmokeError> {
    let input = Input {
        name: ctx.name.clone(),
        geometry: ctx.geometry,
        geometry_source: ctx.geometry_source.clone(),
        sides: ctx.sides.clone(),
    };
    let opts = Options {
        tokens: ctx.tokens,
        seed: ctx.seed,
        transfer: Some(ctx.transfer),
        negative_controls: ctx.negative_controls,
        iterations: ctx.iterations,
        backend: BackendChoice::Cpu,
        hosts: Some(crate::agent::hosts::Replay { reports: pair }),
        ..Options::default()
    };
    run(&input, &opts, &|_| {})
}

/// Runs the smoke test. `Err` is an input or environment problem (exit 2); a report with
/// verdict `fail` is a finding (exit 1).
pub fn run(input: &Input, opts: &Options, progress: &dyn Fn(Event<'_>)) -> Result<Report, SmokeError> {
    if opts.tokens == 0 {
        return Err(SmokeError::Input("--tokens must be at least 1".into()));
    }
    let transfer = opts.transfer.or_else(|| transfer_from_name(&input.sides.prefill.transfer_backend));
    let backend_name: String =
        transfer.map_or_else(|| input.sides.prefill.transfer_backend.clone(), |t| t.name().to_owned());
    let checks = static_checks(&input.geometry, &input.sides.prefill, &input.sides.decode, &backend_name);
    let mut chosen = choose_engine(opts)?;
    progress(Event::Engine(&chosen.env.backend));
    let mut report = Report {
        schema: SCHEMA,
        verdict: Verdict::Fail,
        name: input.name.clone(),
        geometry: input.geometry,
        geometry_source: input.geometry_source.clone(),
        tokens: opts.tokens,
        seed: opts.seed,
        transfer,
        sides: input.sides.clone(),
        environment: chosen.env.clone(),
        memory: None,
        static_checks: checks,
        layout: None,
        dynamic: None,
        dynamic_skipped: None,
        negative_controls: Vec::new(),
    };
    let Some(transfer) = transfer else {
        report.dynamic_skipped =
            Some(format!("transfer backend {backend_name} is not modelled (use --transfer mooncake|nixl)"));
        return Ok(report);
    };
    if let Err(why) = dynamic_possible(&report.static_checks) {
        report.dynamic_skipped = Some(format!("the layouts cannot be paired: {why}"));
        return Ok(report);
    }
    progress(Event::Stage("laying out pools and planning the transfer"));
    let case = Case {
        geometry: input.geometry,
        prefill: input.sides.prefill.config,
        decode: input.sides.decode.config,
        backend: transfer,
        tokens: opts.tokens,
        seed: opts.seed,
    };
    let clean = prepare(&case, None).map_err(|e| SmokeError::Input(e.to_string()))?;
    report.layout =
        Some(Layouts { prefill: LayoutSummary::of(&clean.prefill), decode: LayoutSummary::of(&clean.decode) });
    let mut controls: Vec<(Perturbation, Result<Prepared, String>)> = Vec::new();
    if opts.negative_controls {
        for c in Perturbation::ALL {
            let prepared = c.apply(&case).and_then(|_| prepare(&case, Some(c)).map_err(|e| e.to_string()));
            controls.push((c, prepared));
        }
    }
    let mut all: Vec<&Prepared> = vec![&clean];
    all.extend(controls.iter().filter_map(|(_, p)| p.as_ref().ok()));
    let memory = budget(&all, &chosen.env, opts)?;
    let mut stated = format!("memory: {} on the host", human(memory.host_bytes));
    if let Some(cap) = memory.host_cap {
        let _ = write!(stated, " (cap {})", human(cap));
    }
    for (ord, b) in &memory.gpu_bytes {
        let _ = write!(stated, ", {} on GPU {ord} (cap {})", human(*b), human(memory.gpu_cap[ord]));
    }
    progress(Event::Stage(&stated));
    report.memory = Some(memory);

    progress(Event::Stage("clean transfer"));
    let (runs, verifs) = run_case(&clean, &mut chosen, opts.iterations, true, progress)?;
    let clean_report = case_report(&clean, runs, verifs);
    let clean_ok = clean_report.clean;
    report.dynamic = Some(clean_report);
    drop(clean);

    let mut controls_ok = true;
    for (c, prepared) in controls {
        let r = match prepared {
            Err(reason) => ControlReport {
                control: c,
                name: c.name().into(),
                applicable: false,
                caught: None,
                summary: reason,
                diagnosis: Vec::new(),
                first_error: None,
                rejected_descriptors: 0,
            },
            Ok(p) => {
                progress(Event::Stage(&format!("negative control: {}", c.name())));
                let (runs, verifs) = run_case(&p, &mut chosen, 1, false, progress)?;
                let cr = case_report(&p, runs, verifs);
                let v = &cr.engines[0].verification;
                let caught = !cr.clean;
                controls_ok &= caught;
                let mut summary = v.summary();
                let mut diagnosis = v.diagnosis.clone();
                if cr.plan.rejected > 0 {
                    let _ = write!(summary, "; {} descriptor(s) would leave the registered buffers", cr.plan.rejected);
                    diagnosis.insert(
                        0,
                        "descriptors address past the decode's registered buffers: the sender's item length (page size x row bytes) exceeds the decode's".into(),
                    );
                }
                for r in &cr.plan.refused {
                    let _ = write!(summary, "; refused: {r}");
                }
                ControlReport {
                    control: c,
                    name: c.name().into(),
                    applicable: true,
                    caught: Some(caught),
                    summary,
                    diagnosis,
                    first_error: v.first_errors.first().cloned(),
                    rejected_descriptors: cr.plan.rejected,
                }
            }
        };
        report.negative_controls.push(r);
    }
    let static_ok = report.static_checks.iter().all(|c| c.status != Status::Fail);
    report.verdict = if static_ok && clean_ok && controls_ok { Verdict::Pass } else { Verdict::Fail };
    Ok(report)
}

fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// Formats rows as aligned columns.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from("  ");
        for (c, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < r.len() {
                line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The report as text for a terminal.
pub fn render_text(r: &Report) -> String {
    let mut s = String::new();
    let env = &r.environment;
    let engine = if env.backend == "nixl" || env.backend == "mooncake" {
        format!("{} between two agent processes", env.backend)
    } else if env.backend == "cuda" {
        let names: Vec<String> = env.devices.iter().map(|d| format!("GPU {} {}", d.ordinal, d.name)).collect();
        format!("cuda ({})", names.join(", "))
    } else {
        format!("cpu ({} thread(s))", env.cpu_threads)
    };
    let _ = writeln!(
        s,
        "{}: {} ({}), {} tokens, transfer {}, engine {}",
        r.name,
        r.geometry.describe(),
        r.geometry_source,
        r.tokens,
        r.transfer.map_or("not modelled", TransferBackend::name),
        engine
    );
    if let Some(n) = &env.note {
        let _ = writeln!(s, "  note: {n}");
    }
    if let Some(k) = &env.kernel {
        let _ = writeln!(s, "  kernel: {k}");
    }
    s.push_str("\nstatic checks\n");
    let rows: Vec<Vec<String>> =
        r.static_checks.iter().map(|c| vec![c.status.name().to_owned(), c.id.to_owned(), c.detail.clone()]).collect();
    s.push_str(&table(&rows));
    if let Some(layout) = &r.layout {
        s.push_str("\npools (per rank)\n");
        let mut rows =
            vec![["side", "ranks", "page", "dtype", "attn tp", "pp", "heads", "row B", "item B", "pages", "all pools"]
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()];
        for (side, l) in [("prefill", &layout.prefill), ("decode", &layout.decode)] {
            rows.push(vec![
                side.to_string(),
                l.ranks.to_string(),
                l.config.page_size.to_string(),
                l.config.dtype.name().into(),
                l.config.attn_tp.to_string(),
                l.config.pp.to_string(),
                l.heads_per_rank.to_string(),
                l.row_bytes.to_string(),
                l.item_len.to_string(),
                l.pages.to_string(),
                human(l.pool_bytes),
            ]);
        }
        s.push_str(&table(&rows));
    }
    if let Some(m) = &r.memory {
        let _ = writeln!(
            s,
            "\nmemory: {} on the host, cap {} ({})",
            human(m.host_bytes),
            m.host_cap.map_or("none".into(), human),
            m.cap_source
        );
        for (ord, b) in &m.gpu_bytes {
            let _ = writeln!(s, "        {} on GPU {ord}, cap {}", human(*b), human(m.gpu_cap[ord]));
        }
    }
    if let Some(why) = &r.dynamic_skipped {
        let _ = writeln!(s, "\ndynamic test skipped: {why}");
    }
    if let Some(d) = &r.dynamic {
        let _ = writeln!(s, "\ntransfer, every prefill rank -> decode rank ({} model)", d.plan.backend.name());
        let mut head =
            ["prefill", "decode", "path", "descriptors", "bytes", "slices", "status"].map(String::from).to_vec();
        for e in &d.engines {
            head.push(format!("{} GB/s", e.engine));
        }
        let mut rows = vec![head];
        for p in &d.pairs {
            let mut row = vec![
                p.prefill.clone(),
                p.decode.clone(),
                p.path.name().into(),
                p.descriptors.to_string(),
                human(p.bytes),
                if p.path == Path::Dummy { "-".into() } else { format!("{}/{}", p.slices - p.bad, p.slices) },
                p.status.into(),
            ];
            row.extend(p.timings.iter().map(|t| if p.bytes == 0 { "-".into() } else { format!("{:.2}", t.gbps) }));
            rows.push(row);
        }
        s.push_str(&table(&rows));
        if d.plan.rejected > 0 || !d.plan.refused.is_empty() || d.plan.truncated_pages > 0 {
            let _ = writeln!(
                s,
                "  {} descriptor(s) set aside ({}), {} pair(s) refused, {} prefill page(s) truncated",
                d.plan.rejected,
                human(d.plan.rejected_bytes),
                d.plan.refused.len(),
                d.plan.truncated_pages
            );
            for x in d.plan.first_rejected.iter().chain(&d.plan.refused) {
                let _ = writeln!(s, "    {x}");
            }
        }
        s.push_str("\nengines\n");
        let mut rows = vec![["engine", "descriptors", "bytes", "time", "GB/s", "reference GB/s", "ratio", "placement"]
            .map(String::from)
            .to_vec()];
        for e in &d.engines {
            rows.push(vec![
                e.engine.clone(),
                e.descriptors.to_string(),
                human(e.bytes),
                secs(e.seconds),
                format!("{:.2}", e.gbps),
                format!("{:.2}", e.reference.gbps),
                format!("{:.2}", e.ratio),
                e.verification.summary(),
            ]);
        }
        s.push_str(&table(&rows));
        for e in &d.engines {
            let _ = writeln!(s, "  {}: {}; reference: {}", e.engine, e.detail, e.reference.what);
            if let (Some(first), Some(conn)) = (e.first_seconds, e.connection_seconds) {
                let _ = writeln!(
                    s,
                    "    first transfer {}, connection cost {} (apart from the figures above)",
                    secs(first),
                    secs(conn)
                );
            }
            for err in e.verification.first_errors.iter().take(3) {
                let _ = writeln!(
                    s,
                    "    {} page {} slot {}: {}: {}",
                    err.rank, err.page, err.slot, err.expected, err.detail
                );
            }
            for x in &e.verification.diagnosis {
                let _ = writeln!(s, "    likely: {x}");
            }
        }
    }
    if !r.negative_controls.is_empty() {
        s.push_str("\nnegative controls (each must be caught)\n");
        let rows: Vec<Vec<String>> = r
            .negative_controls
            .iter()
            .map(|c| {
                let status = match c.caught {
                    Some(true) => "caught",
                    Some(false) => "MISSED",
                    None => "n/a",
                };
                let mut what = c.summary.clone();
                if let Some(d) = c.diagnosis.first() {
                    let _ = write!(what, " -- {d}");
                }
                vec![status.to_owned(), c.name.clone(), what]
            })
            .collect();
        s.push_str(&table(&rows));
    }
    let _ = writeln!(s, "\nverdict: {}", if r.verdict == Verdict::Pass { "PASS" } else { "FAIL" });
    s
}
