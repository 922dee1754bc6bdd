//! The agents on the deployment's own nodes (`pdlaunch smoke --across hosts`): the plan they run,
//! and their reports read back into the same run a local smoke test makes.
//!
//! On those nodes only the deployment's image (or environment) is sure to be there, so the agent
//! is a small Python program ([`SCRIPT`], `python/host_agent.py`) that drives the image's own NIXL
//! or Mooncake bindings, the very ones SGLang calls. It knows no layout: [`plan`] resolves every
//! case (the clean one and the negative controls) into pool sizes, the regions each side
//! registers and SGLang's write descriptors per rank pair, as tables of little-endian u64s
//! compressed with xz and base64-encoded (see [`pack`]: a ConfigMap holds 1 MiB).
//!
//! The agent's pools carry a position pattern instead of canaries (every 8-byte word names its
//! rank and index), so that the decode can report, as runs, where each word of its pools came
//! from. [`Replay`] turns those runs back into the decode pools a local run would have: the
//! prefill's canary pools copied at the reported places over the decode's initial pools, garbage
//! where the decode saw words of no pool. The standard verification, table and figures follow,
//! from the prefill's timings.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::launch::agent_run;
use super::region::{rank_infos, regions, resolve};
use super::{Memory, PrefillOutcome, Role, Transport};
use crate::case::{prepare, Case, Perturbation, Prepared};
use crate::engine::{Engine, EngineError, EngineRun, Job};
use crate::geometry::KvGeometry;
use crate::sides::Sides;
use crate::transfer::TransferBackend;

/// The agent program.
pub const SCRIPT: &str = include_str!("../../python/host_agent.py");
/// What starts an agent's report line.
pub const REPORT_PREFIX: &str = "PDLAUNCH-SMOKE-REPORT ";
/// The plan's format.
pub const PLAN_SCHEMA: &str = "pdlaunch-smoke-plan/1";
/// The reports' format.
pub const REPORT_SCHEMA: &str = "pdlaunch-smoke-report/1";
/// The word size of the position pattern: every offset and length must be a multiple of it.
const WORD: u64 = 8;
/// What a word of no pool is rebuilt as (it matches no canary, guard or stale pattern).
const GARBAGE: u8 = 0xDB;

/// Each side's `--disaggregation-ib-device`, as the deployment gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideDevices {
    /// The prefill's.
    pub prefill: Option<String>,
    /// The decode's.
    pub decode: Option<String>,
}

impl SideDevices {
    /// The device names of both sides (a JSON mapping's values included).
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for text in [&self.prefill, &self.decode].into_iter().flatten() {
            let lists: Vec<String> = match serde_json::from_str::<BTreeMap<String, String>>(text) {
                Ok(m) => m.into_values().collect(),
                Err(_) if text.ends_with(".json") => Vec::new(),
                Err(_) => vec![text.clone()],
            };
            for d in lists.iter().flat_map(|l| l.split(',')).map(str::trim).filter(|d| !d.is_empty()) {
                if !out.iter().any(|o| o == d) {
                    out.push(d.to_owned());
                }
            }
        }
        out
    }
}

/// What the run is about, echoed by both agents so that their reports alone rebuild it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The deployment's name.
    pub name: String,
    /// Model geometry.
    pub geometry: KvGeometry,
    /// Where it came from.
    pub geometry_source: String,
    /// Both sides as the pools see them.
    pub sides: Sides,
    /// Tokens in the request.
    pub tokens: u32,
    /// Canary seed.
    pub seed: u64,
    /// The transfer engine whose descriptors are reproduced.
    pub transfer: TransferBackend,
    /// Whether the negative controls run too.
    pub negative_controls: bool,
    /// Timed repetitions (the agents run one more: the first carries the connection).
    pub iterations: u32,
    /// The library.
    pub transport: Transport,
    /// The IB devices the deployment names.
    pub ib_device: SideDevices,
}

/// One case as the agents run it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostCase {
    /// `clean` or the negative control's name.
    pub label: String,
    /// Bytes of each prefill rank's pool.
    pub prefill_pools: Vec<u64>,
    /// Bytes of each decode rank's pool.
    pub decode_pools: Vec<u64>,
    /// Bytes of the contiguous reference region (on both sides).
    pub reference: u64,
    /// The prefill's registered regions: rows of (rank, offset, length).
    pub prefill_regions: String,
    /// The decode's.
    pub decode_regions: String,
    /// Pairs in the transfer plan (those without writes included).
    pub pair_count: usize,
    /// The writes of each pair that has any.
    pub pairs: Vec<HostPair>,
}

/// One rank pair's writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostPair {
    /// Index in the transfer plan.
    pub index: usize,
    /// Rows of (prefill rank, offset, decode rank, offset, length).
    pub descs: String,
}

/// The plan both agents of a pair read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostPlan {
    /// [`PLAN_SCHEMA`].
    pub schema: String,
    /// The library.
    pub transport: Transport,
    /// The prefill's bootstrap HOST:PORT (each agent's `--bootstrap` may replace it).
    pub bootstrap: String,
    /// Seconds each side may take.
    pub timeout_s: u64,
    /// Repetitions of each case's writes (the first carries the connection).
    pub iterations: u32,
    /// Pool memory.
    pub memory: Memory,
    /// Each side's IB devices (the agent checks them and gives them to Mooncake).
    pub ib_device: SideDevices,
    /// The cases, clean first.
    pub cases: Vec<HostCase>,
    /// Echoed in the reports.
    pub context: Context,
}

/// A table of `columns` words a row as the agents take it: each word the difference from the
/// same column of the row before (wrapping), little-endian, xz, base64. Descriptor lists step by
/// constant strides between pages the test shuffles, so the differences repeat over long
/// distances: the writes of an 80-layer GQA model at page size 1, TP 8 -> 4, 1,024 tokens (1.3
/// million descriptors, 52 MB of words) are 9 KB with xz, where zlib leaves 1.8 MB of the
/// differences (35 MB of the words themselves), over the 1 MiB a ConfigMap holds. Python reads
/// xz with its standard `lzma`.
fn pack(rows: &[u64], columns: usize) -> String {
    let mut prev = vec![0u64; columns];
    let mut bytes = Vec::with_capacity(rows.len() * 8);
    for (i, &v) in rows.iter().enumerate() {
        let c = i % columns;
        bytes.extend(v.wrapping_sub(prev[c]).to_le_bytes());
        prev[c] = v;
    }
    let mut z = xz2::write::XzEncoder::new(Vec::new(), 6);
    // Writing to a Vec cannot fail.
    let _ = z.write_all(&bytes);
    base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap_or_default())
}

/// The rows of a table [`pack`] wrote.
fn unpack(text: &str, columns: usize) -> Result<Vec<Vec<i64>>, String> {
    let z = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("not base64: {e}"))?;
    let mut bytes = Vec::new();
    xz2::read::XzDecoder::new(&z[..]).read_to_end(&mut bytes).map_err(|e| format!("not xz: {e}"))?;
    if bytes.len() % (8 * columns) != 0 {
        return Err(format!("{} bytes are not rows of {columns} words", bytes.len()));
    }
    let mut prev = vec![0u64; columns];
    Ok(bytes
        .chunks(8 * columns)
        .map(|row| {
            row.chunks(8)
                .zip(prev.iter_mut())
                .map(|(w, p)| {
                    *p = p.wrapping_add(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
                    *p as i64
                })
                .collect()
        })
        .collect())
}

fn host_case(p: &Prepared) -> Result<HostCase, String> {
    let label = p.label();
    let aligned = |what: &str, v: u64| {
        if v.is_multiple_of(WORD) {
            Ok(())
        } else {
            Err(format!(
                "case {label}: {what} of {v} bytes is not a multiple of {WORD}: the agents' position pattern needs \
                 8-byte words (a layout this small cannot run across hosts; use --across local|netns)"
            ))
        }
    };
    for r in p.prefill.ranks.iter().chain(&p.decode.ranks) {
        aligned("a pool", r.pool_bytes)?;
    }
    let table = |side: &crate::layout::SideLayout| {
        let zero = vec![0u64; side.ranks.len()];
        regions(side, &zero).iter().flat_map(|r| [r.rank as u64, r.addr, r.len]).collect::<Vec<u64>>()
    };
    let zero = vec![0u64; p.decode.ranks.len()];
    let infos = rank_infos(&p.decode, &zero);
    let mut pairs = Vec::new();
    for (index, pair) in p.plan.pairs.iter().enumerate() {
        let Some(d) = pair.decode else { continue };
        if pair.descriptors.is_empty() {
            continue;
        }
        let mut rows = Vec::with_capacity(pair.descriptors.len() * 5);
        for x in &pair.descriptors {
            let dst = resolve(&p.decode.ranks[d], &infos[d], x.dst, x.len).ok_or_else(|| {
                format!(
                    "case {label}: a descriptor of {} -> {} is outside the decode's registered buffers",
                    pair.prefill_label, pair.decode_label
                )
            })?;
            aligned("a slice", x.len)?;
            aligned("a source offset", x.src)?;
            aligned("a destination offset", dst)?;
            rows.extend([pair.prefill as u64, x.src, d as u64, dst, x.len]);
        }
        pairs.push(HostPair { index, descs: pack(&rows, 5) });
    }
    Ok(HostCase {
        label: label.to_owned(),
        prefill_pools: p.prefill.ranks.iter().map(|r| r.pool_bytes).collect(),
        decode_pools: p.decode.ranks.iter().map(|r| r.pool_bytes).collect(),
        reference: p.plan.bytes(),
        prefill_regions: pack(&table(&p.prefill), 3),
        decode_regions: pack(&table(&p.decode), 3),
        pair_count: p.plan.pairs.len(),
        pairs,
    })
}

/// The case of a context.
pub fn case_of(ctx: &Context) -> Case {
    Case {
        geometry: ctx.geometry,
        prefill: ctx.sides.prefill.config,
        decode: ctx.sides.decode.config,
        backend: ctx.transfer,
        tokens: ctx.tokens,
        seed: ctx.seed,
    }
}

/// The agents' plan: the clean case and, when asked, every negative control that applies.
pub fn plan(ctx: Context, bootstrap: &str, timeout_s: u64, memory: Memory) -> Result<HostPlan, String> {
    let case = case_of(&ctx);
    let clean = prepare(&case, None).map_err(|e| e.to_string())?;
    let mut cases = vec![host_case(&clean)?];
    drop(clean);
    if ctx.negative_controls {
        for c in Perturbation::ALL {
            if c.apply(&case).is_err() {
                continue;
            }
            if let Ok(p) = prepare(&case, Some(c)) {
                cases.push(host_case(&p)?);
            }
        }
    }
    Ok(HostPlan {
        schema: PLAN_SCHEMA.into(),
        transport: ctx.transport,
        bootstrap: bootstrap.to_owned(),
        timeout_s: timeout_s.max(1),
        iterations: ctx.iterations.max(1) + 1,
        memory,
        ib_device: ctx.ib_device.clone(),
        cases,
        context: ctx,
    })
}

/// An RDMA device port as an agent saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPort {
    /// Port number.
    pub port: u32,
    /// `4: ACTIVE`...
    #[serde(default)]
    pub state: Option<String>,
    /// `InfiniBand` or `Ethernet` (RoCE).
    #[serde(default)]
    pub link_layer: Option<String>,
}

/// An RDMA device as an agent saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbDevice {
    /// `mlx5_0`...
    pub name: String,
    /// Its ports.
    #[serde(default)]
    pub ports: Vec<IbPort>,
}

/// What an agent saw of its node's network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    /// Its host name.
    #[serde(default)]
    pub hostname: String,
    /// Its address toward the other side.
    #[serde(default)]
    pub address: Option<String>,
    /// The interface holding that address.
    #[serde(default)]
    pub interface: Option<String>,
    /// The RDMA devices of the node.
    #[serde(default)]
    pub ib_devices: Vec<IbDevice>,
    /// The transport settings in its environment (`UCX_TLS`, `MOONCAKE_PROTOCOL`...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The transports and devices UCX chose for the writes (the prefill, NIXL), e.g. `tcp/eth0`
    /// or `rc_mlx5/mlx5_0:1`.
    #[serde(default)]
    pub lanes: Vec<String>,
}

/// One case as an agent reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case.
    pub label: String,
    /// The prefill's figures.
    #[serde(default)]
    pub prefill: Option<PrefillOutcome>,
    /// The decode's runs: rows of (rank, word, words, kind, source rank, source word).
    #[serde(default)]
    pub runs: Option<String>,
    /// Notifications the decode waited for.
    #[serde(default)]
    pub notifications: Option<u32>,
}

/// Why an agent stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentFailure {
    /// Its exit status.
    pub code: u8,
    /// Why.
    pub message: String,
}

/// One agent's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostReport {
    /// [`REPORT_SCHEMA`].
    pub schema: String,
    /// Its side.
    pub role: Role,
    /// Its pair.
    #[serde(default)]
    pub pair: u32,
    /// The plan's digest (both sides must have run one plan).
    #[serde(default)]
    pub plan: String,
    /// The run's context.
    #[serde(default)]
    pub context: Option<Context>,
    /// The bootstrap address it used.
    #[serde(default)]
    pub bootstrap: String,
    /// What it saw of its network.
    #[serde(default)]
    pub network: Network,
    /// The library, as the agent describes it.
    #[serde(default)]
    pub library: Option<String>,
    /// The cases it completed.
    #[serde(default)]
    pub cases: Vec<CaseReport>,
    /// Why it stopped early.
    #[serde(default)]
    pub error: Option<AgentFailure>,
}

/// The two reports of one agent pair.
#[derive(Clone, Debug)]
pub struct PairReports {
    /// The pair's number.
    pub pair: u32,
    /// Its prefill's report.
    pub prefill: HostReport,
    /// Its decode's report.
    pub decode: HostReport,
}

/// The agents' reports in `files` (name, text: `kubectl logs` output, SLURM output files, a
/// shell's log), paired. Every line holding [`REPORT_PREFIX`] is one report.
pub fn read_reports(files: &[(String, String)]) -> Result<Vec<PairReports>, String> {
    let mut found: Vec<(String, HostReport)> = Vec::new();
    for (name, text) in files {
        let before = found.len();
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find(REPORT_PREFIX) else { continue };
            let r: HostReport = serde_json::from_str(&line[at + REPORT_PREFIX.len()..])
                .map_err(|e| format!("{name}:{}: the agent's report is not understood: {e}", n + 1))?;
            if r.schema != REPORT_SCHEMA {
                return Err(format!(
                    "{name}:{}: a report of format {} (this pdlaunch reads {REPORT_SCHEMA})",
                    n + 1,
                    r.schema
                ));
            }
            found.push((format!("{name}:{}", n + 1), r));
        }
        if found.len() == before {
            return Err(format!(
                "{name}: no agent report in it (a line starting `{REPORT_PREFIX}`): give the output of the agents, \
                 e.g. `kubectl logs <agent pod>` or the SLURM step's log"
            ));
        }
    }
    let mut pairs: BTreeMap<u32, (Option<HostReport>, Option<HostReport>)> = BTreeMap::new();
    for (place, r) in found {
        let slot = pairs.entry(r.pair).or_default();
        let side = if r.role == Role::Prefill { &mut slot.0 } else { &mut slot.1 };
        if side.is_some() {
            return Err(format!("{place}: a second {:?} report for pair {}", r.role, r.pair).to_lowercase());
        }
        *side = Some(r);
    }
    // A side that failed is a verdict alone (the other may never have started: a closed port).
    let absent = |present: &HostReport, role: Role| HostReport {
        role,
        network: Network::default(),
        library: None,
        cases: Vec::new(),
        error: Some(AgentFailure { code: 1, message: "no report (its log was not given, or it did not run)".into() }),
        ..present.clone()
    };
    pairs
        .into_iter()
        .map(|(pair, slot)| match slot {
            (Some(prefill), Some(decode)) => Ok(PairReports { pair, prefill, decode }),
            (Some(p), None) if p.error.is_some() => {
                Ok(PairReports { pair, decode: absent(&p, Role::Decode), prefill: p })
            }
            (None, Some(d)) if d.error.is_some() => {
                Ok(PairReports { pair, prefill: absent(&d, Role::Prefill), decode: d })
            }
            (Some(_), None) => Err(format!("pair {pair}: the decode agent's report is missing; give both sides' logs")),
            _ => Err(format!("pair {pair}: the prefill agent's report is missing; give both sides' logs")),
        })
        .collect()
}

/// What a side saw of its network, in a line.
pub fn network_line(r: &HostReport) -> String {
    let n = &r.network;
    let mut s = format!("{} agent on {}", if r.role == Role::Prefill { "prefill" } else { "decode" }, n.hostname);
    if let Some(a) = &n.address {
        s.push_str(&format!(", address {a}"));
        if let Some(i) = &n.interface {
            s.push_str(&format!(" ({i})"));
        }
    }
    let devs: Vec<String> = n
        .ib_devices
        .iter()
        .map(|d| {
            let ports: Vec<String> = d
                .ports
                .iter()
                .map(|p| {
                    let state = p.state.as_deref().map_or("?", |s| s.split(':').nth(1).unwrap_or(s).trim());
                    format!("{}:{state}{}", p.port, p.link_layer.as_deref().map_or(String::new(), |l| format!(" {l}")))
                })
                .collect();
            format!("{} [{}]", d.name, ports.join(", "))
        })
        .collect();
    s.push_str(&format!("; IB devices: {}", if devs.is_empty() { "none".into() } else { devs.join(", ") }));
    if let Some(l) = &r.library {
        s.push_str(&format!("; {l}"));
    }
    if !n.lanes.is_empty() {
        s.push_str(&format!("; UCX wrote over {}", n.lanes.join(", ")));
    }
    for (k, v) in &n.env {
        s.push_str(&format!("; {k}={v}"));
    }
    s
}

/// Why the run's bytes may not have gone the way the deployment's will: the deployment names
/// IB devices, and a side shows none, none active, or its library was set to TCP.
pub fn fallback_warnings(ctx: &Context, pair: &PairReports) -> Vec<String> {
    let named = ctx.ib_device.names();
    if named.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in [&pair.prefill, &pair.decode] {
        let side = if r.role == Role::Prefill { "prefill" } else { "decode" };
        let n = &r.network;
        let active = n.ib_devices.iter().any(|d| {
            named.contains(&d.name) && d.ports.iter().any(|p| p.state.as_deref().is_some_and(|s| s.contains("ACTIVE")))
        });
        let tcp = match ctx.transport {
            Transport::Nixl => {
                n.env.get("UCX_TLS").is_some_and(|t| t.split(',').all(|x| x.contains("tcp")))
                    || (!n.lanes.is_empty() && n.lanes.iter().all(|l| l.starts_with("tcp/")))
            }
            _ => {
                n.env.get("MOONCAKE_PROTOCOL").is_some_and(|p| p == "tcp")
                    || n.env.get("MC_FORCE_TCP").is_some_and(|v| v == "1")
            }
        };
        if tcp || !active {
            let why = if tcp && !n.lanes.is_empty() {
                format!("UCX chose {} for the writes", n.lanes.join(", "))
            } else if tcp {
                "its environment sets the library to TCP".to_owned()
            } else if n.ib_devices.is_empty() {
                format!("{} shows no IB device at all", n.hostname)
            } else {
                format!("none of them is an active port on {}", n.hostname)
            };
            out.push(format!(
                "the deployment names IB device(s) {}, but the {side} agent moved the KV over TCP: {why}; SGLang \
                 would too, at a fraction of the bandwidth (check the pod's RDMA resources and /dev/infiniband, \
                 `ibv_devinfo`, and UCX_TLS / MOONCAKE_PROTOCOL)",
                named.join(", ")
            ));
        }
    }
    out
}

/// The decode pools a local run would have after the transfer, from the decode's runs.
pub fn rebuild(p: &Prepared, runs: &str) -> Result<Vec<Vec<u8>>, String> {
    let rows = unpack(runs, 6)?;
    let mut images = p.decode_pools();
    let source = p.prefill_pools();
    for row in rows {
        let [q, word, words, kind, src, src_word] = row[..] else { continue };
        let bad = || format!("a run (rank {q}, word {word}, {words} words) is outside the pools");
        let image = images.get_mut(usize::try_from(q).map_err(|_| bad())?).ok_or_else(bad)?;
        let at = usize::try_from(word).map_err(|_| bad())? * 8;
        let len = usize::try_from(words).map_err(|_| bad())? * 8;
        let dst = image.get_mut(at..at + len).ok_or_else(bad)?;
        match kind {
            0 => {}
            1 => {
                let from = usize::try_from(src_word).map_err(|_| bad())? * 8;
                let pool = source.get(usize::try_from(src).map_err(|_| bad())?).ok_or_else(bad)?;
                dst.copy_from_slice(pool.get(from..from + len).ok_or_else(bad)?);
            }
            _ => dst.fill(GARBAGE),
        }
    }
    Ok(images)
}

/// The reports of one pair as an engine: each case's decode pools rebuilt from the decode's
/// runs, its figures from the prefill's timings.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The pair.
    pub reports: PairReports,
}

impl Replay {
    /// The library the agents used.
    fn transport(&self) -> Transport {
        self.reports.prefill.context.as_ref().map_or(Transport::Nixl, |c| c.transport)
    }

    /// Where the agents ran, for the report.
    pub fn describe(&self) -> String {
        let host = |r: &HostReport| {
            let n = &r.network;
            match &n.address {
                Some(a) => format!("{} ({a})", n.hostname),
                None => n.hostname.clone(),
            }
        };
        format!(
            "two agents on the deployment's nodes, prefill on {} and decode on {}, meeting on {}",
            host(&self.reports.prefill),
            host(&self.reports.decode),
            self.reports.prefill.bootstrap
        )
    }
}

impl Engine for Replay {
    fn variants(&self) -> Vec<String> {
        vec![self.transport().name().to_owned()]
    }

    fn run(&mut self, _variant: usize, job: &Job<'_>, decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError> {
        let label = job.prepared.label();
        let find = |r: &HostReport| r.cases.iter().find(|c| c.label == label).cloned();
        let missing = |side: &str| {
            EngineError::Device(format!("the {side} agent's report has no case `{label}` (it stopped before it)"))
        };
        let f = find(&self.reports.prefill).and_then(|c| c.prefill).ok_or_else(|| missing("prefill"))?;
        let runs = find(&self.reports.decode).and_then(|c| c.runs).ok_or_else(|| missing("decode"))?;
        let images =
            rebuild(job.prepared, &runs).map_err(|e| EngineError::Device(format!("the decode's report: {e}")))?;
        for (d, i) in decode.iter_mut().zip(images) {
            *d = i;
        }
        Ok(agent_run(self.transport(), &self.describe(), &f, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_round_trip_through_xz_and_base64() {
        let rows: Vec<u64> = (0..5000).map(|i| i * 4096 + 7).collect();
        let text = pack(&rows, 5);
        // Regular tables (as descriptor lists are) shrink well below their 8 bytes a word.
        assert!(text.len() < rows.len() / 8, "{} bytes for {} words", text.len(), rows.len());
        let back = unpack(&text, 5).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(back[3][2] as u64, rows[17]);
        assert!(unpack(&text, 3).unwrap_err().contains("not rows of 3 words"));
        // Differences wrap: a column that steps down, or past 2^63, comes back whole.
        let odd = [u64::MAX, 5, 0, 1 << 63, 3, 2];
        let back = unpack(&pack(&odd, 3), 3).unwrap();
        assert_eq!(back.concat().iter().map(|&v| v as u64).collect::<Vec<_>>(), odd);
        assert!(unpack("not base64!", 5).unwrap_err().starts_with("not base64"));
    }

    fn report(role: Role, network: Network) -> HostReport {
        HostReport {
            schema: REPORT_SCHEMA.into(),
            role,
            pair: 0,
            plan: "p".into(),
            context: None,
            bootstrap: "10.0.0.1:8998".into(),
            network,
            library: None,
            cases: Vec::new(),
            error: None,
        }
    }

    /// Named IB devices and a side whose writes went over TCP (UCX's own lanes, or the
    /// environment) or that shows no active port: one warning per such side, naming why.
    #[test]
    fn tcp_where_the_deployment_names_ib_devices_is_a_warning() {
        let d: pdlaunch_core::deployment::Deployment = pdlaunch_core::load::parse_deployment(
            "name: t\nmodel: {path: x/y, geometry: {attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}}\n\
             shared: {page_size: 16, transfer_backend: nixl}\nprefill: {instances: [{nodes: [{host: a}]}]}\n\
             decode: {instances: [{nodes: [{host: b}]}]}\n",
            "t.yaml",
            pdlaunch_core::load::Syntax::Yaml,
        )
        .unwrap();
        let ctx = Context {
            name: "t".into(),
            geometry: KvGeometry::from_core(d.model.geometry.as_ref().unwrap()).unwrap(),
            geometry_source: String::new(),
            sides: crate::sides::from_deployment(&d).unwrap(),
            tokens: 8,
            seed: 1,
            transfer: TransferBackend::Nixl,
            negative_controls: false,
            iterations: 1,
            transport: Transport::Nixl,
            ib_device: SideDevices { prefill: Some("mlx5_0".into()), decode: Some("mlx5_0".into()) },
        };
        let active = IbDevice {
            name: "mlx5_0".into(),
            ports: vec![IbPort { port: 1, state: Some("4: ACTIVE".into()), link_layer: Some("InfiniBand".into()) }],
        };
        let rdma = Network {
            hostname: "a".into(),
            ib_devices: vec![active.clone()],
            lanes: vec!["rc_mlx5/mlx5_0:1".into()],
            ..Network::default()
        };
        let tcp = Network { lanes: vec!["tcp/eth0".into()], ..rdma.clone() };
        let bare = Network { hostname: "b".into(), ..Network::default() };
        let pair = |p: &Network, d: &Network| PairReports {
            pair: 0,
            prefill: report(Role::Prefill, p.clone()),
            decode: report(Role::Decode, d.clone()),
        };
        assert!(fallback_warnings(&ctx, &pair(&rdma, &rdma)).is_empty());
        let w = fallback_warnings(&ctx, &pair(&tcp, &bare));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("prefill agent moved the KV over TCP: UCX chose tcp/eth0"), "{}", w[0]);
        assert!(w[1].contains("b shows no IB device at all"), "{}", w[1]);
        let none = Context { ib_device: SideDevices::default(), ..ctx };
        assert!(fallback_warnings(&none, &pair(&tcp, &bare)).is_empty());
    }

    #[test]
    fn device_names_come_from_lists_and_mappings() {
        let d = SideDevices {
            prefill: Some("mlx5_0, mlx5_1".into()),
            decode: Some(r#"{"0": "mlx5_2", "1": "mlx5_0"}"#.into()),
        };
        assert_eq!(d.names(), ["mlx5_0", "mlx5_1", "mlx5_2"]);
        assert!(SideDevices::default().names().is_empty());
    }
}
