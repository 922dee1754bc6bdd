//! KV transfer through the libraries SGLang uses, between two agent processes: a prefill side
//! and a decode side, each started alone with a plan ([`AgentPlan`]), meeting on the prefill's
//! bootstrap host:port.
//!
//! Each side prepares the same case as the in-process engines ([`crate::case::prepare`]: the
//! layouts, pages, SGLang's descriptors and the ground truth are deterministic), lays its pools
//! out in shared memory ([`pools`]), or with GPU pools on its GPU (NIXL: this process,
//! `device`; Mooncake: its Python agent, from the shared memory as staging), and registers them
//! per layer buffer as SGLang does ([`region`]). The decode connects and sends its region
//! addresses and page indices ([`wire`]); the prefill resolves SGLang's descriptors against
//! them and writes through the library ([`nixl`]: a WRITE transfer with a notification per
//! pair; [`mooncake`]: `batch_transfer_sync_write` in batches the engine accepts), repeats the
//! plan, then copies the same bytes as one contiguous region for the reference figure. The
//! decode waits for the notifications, reads its pools back (Mooncake's GPU pools into their
//! staging memory), verifies them with the canaries and guard patterns, and reports.
//! [`launch`] starts both sides (here, or in two network namespaces, [`netns`]) and turns
//! their reports into an engine run.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::case::{prepare, Case, Perturbation};
use crate::transfer::TransferBackend;
use crate::verify::{Class, Verification};

#[cfg(feature = "cuda")]
pub mod device;
pub mod hosts;
pub mod launch;
pub mod mooncake;
pub mod netns;
#[cfg(feature = "nixl")]
pub mod nixl;
pub mod pools;
pub mod region;
pub mod wire;

use pools::SharedPool;
use region::{check_peer, rank_infos, regions, resolve};
use wire::{Bye, DecodeInfo, Done};

/// How KV moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// In-process copies (the CPU or CUDA engines).
    Memcpy,
    /// NIXL (UCX) between two agent processes.
    Nixl,
    /// Mooncake's transfer engine between two agent processes.
    Mooncake,
}

impl Transport {
    /// The `--transport` value.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Memcpy => "memcpy",
            Transport::Nixl => "nixl",
            Transport::Mooncake => "mooncake",
        }
    }

    /// The library of a `--disaggregation-transfer-backend` (`mooncake_tcp` too), if it has an agent.
    pub fn of_backend(backend: &str) -> Option<Transport> {
        crate::smoke::transfer_from_name(backend).map(Transport::of_model)
    }

    /// The library whose KV manager writes `model`'s descriptors.
    pub fn of_model(model: TransferBackend) -> Transport {
        match model {
            TransferBackend::Nixl => Transport::Nixl,
            TransferBackend::Mooncake => Transport::Mooncake,
        }
    }

    /// The descriptors this library's KV manager writes (`None` for memcpy, which models none).
    pub fn modelled(self) -> Option<TransferBackend> {
        match self {
            Transport::Memcpy => None,
            Transport::Nixl => Some(TransferBackend::Nixl),
            Transport::Mooncake => Some(TransferBackend::Mooncake),
        }
    }
}

/// Where the two agents run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Both on this machine, over loopback.
    Local,
    /// Each in its own network namespace, joined by a veth pair (root).
    Netns,
}

impl Placement {
    /// The `--across` value.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Local => "local",
            Placement::Netns => "netns",
        }
    }
}

/// Which side an agent plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Holds the KV and writes it.
    Prefill,
    /// Receives and verifies it.
    Decode,
}

/// Where the pools live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// Host memory (NIXL `DRAM_SEG`).
    Dram,
    /// GPU memory (NIXL `VRAM_SEG`; Mooncake's agent allocates it and registers it itself).
    Vram,
}

/// Why an agent stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The environment cannot run it (library missing, no namespaces, no GPU): exit 2.
    #[error("{0}")]
    Environment(String),
    /// The plan cannot be run (exit 2).
    #[error("{0}")]
    Input(String),
    /// The sides did not meet (bootstrap unreachable, timeout): exit 1.
    #[error("{0}")]
    Connect(String),
    /// The library refused or failed a registration or transfer: exit 1.
    #[error("{0}")]
    Transfer(String),
}

impl AgentError {
    /// The exit status.
    pub fn exit_code(&self) -> u8 {
        match self {
            AgentError::Environment(_) | AgentError::Input(_) => 2,
            AgentError::Connect(_) | AgentError::Transfer(_) => 1,
        }
    }
}

/// What one agent is told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentPlan {
    /// Side.
    pub role: Role,
    /// Library.
    pub transport: Transport,
    /// The case both sides prepare.
    pub case: Case,
    /// The negative control, if any.
    pub perturbation: Option<Perturbation>,
    /// The prefill's bootstrap `host:port` (the prefill listens there, the decode connects).
    pub bootstrap: String,
    /// This side's own address, for the library (Mooncake's session id); empty: the address
    /// this host reaches the bootstrap from.
    pub host: String,
    /// Repetitions of the plan (the first one carries the connection cost).
    pub iterations: u32,
    /// Milliseconds the whole side may take.
    pub timeout_ms: u64,
    /// Pool memory.
    pub memory: Memory,
    /// The GPU this side's pools go on (`Memory::Vram`).
    #[serde(default)]
    pub gpu: u32,
    /// The Python that imports `mooncake` (Mooncake only).
    pub mooncake_python: String,
    /// Mooncake's protocol (`tcp`, `rdma`).
    pub mooncake_protocol: String,
}

/// The prefill's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefillOutcome {
    /// The library, as it describes itself.
    pub library: String,
    /// Seconds per pair per repetition.
    pub pair_times: Vec<Vec<f64>>,
    /// Seconds of the whole plan per repetition (the first includes the connection).
    pub totals: Vec<f64>,
    /// Seconds of each contiguous reference copy.
    pub reference: Vec<f64>,
    /// Bytes of the reference copy.
    pub reference_bytes: u64,
    /// Calls into the library per repetition (transfers or batches).
    pub calls: u64,
}

/// The decode's findings.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DecodeOutcome {
    /// Verification of its pools.
    pub verification: Verification,
    /// Class of each expected slice, one letter each (see [`class_letter`]).
    pub classes: String,
    /// Notifications received.
    pub notifications: u32,
}

/// An agent's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// From the prefill.
    Prefill(PrefillOutcome),
    /// From the decode.
    Decode(DecodeOutcome),
}

/// One line an agent prints on stdout.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Report {
    /// The prefill listens on this bootstrap address.
    Ready(String),
    /// The side finished.
    Outcome(Box<Outcome>),
    /// The side failed.
    Error {
        /// Exit status.
        code: u8,
        /// Why.
        message: String,
    },
}

/// The letter of a slice class in [`DecodeOutcome::classes`].
pub fn class_letter(c: Class) -> char {
    match c {
        Class::Ok => 'o',
        Class::Missing => 'm',
        Class::Misplaced => 'p',
        Class::Unrequested => 'u',
        Class::WrongDtype => 'd',
        Class::Corrupt => 'c',
    }
}

/// The class of a letter.
pub fn letter_class(c: char) -> Class {
    match c {
        'o' => Class::Ok,
        'm' => Class::Missing,
        'p' => Class::Misplaced,
        'u' => Class::Unrequested,
        'd' => Class::WrongDtype,
        _ => Class::Corrupt,
    }
}

/// One write as the library takes it: (source address, destination address, bytes).
pub type WriteDesc = (u64, u64, u64);

/// One write's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteStats {
    /// Seconds the library took.
    pub seconds: f64,
    /// Calls into the library (transfers or batches).
    pub calls: u32,
    /// Whether a notification went with it.
    pub notified: bool,
}

/// A transfer library as one side drives it.
pub trait Link {
    /// The library and its settings, for reports.
    fn describe(&self) -> String;
    /// Makes `pools` known to the library; returns their addresses as the library sees them.
    fn attach(&mut self, pools: &[&SharedPool]) -> Result<Vec<u64>, AgentError>;
    /// Registers `(address, length)` regions.
    fn register(&mut self, regions: &[(u64, u64)]) -> Result<(), AgentError>;
    /// This side's name for the peer, and the metadata the peer must load.
    fn identity(&mut self) -> Result<(String, Vec<u8>), AgentError>;
    /// Prepares to write to the peer, whose pools are on GPU `peer_gpu` (`Memory::Vram`).
    fn connect(&mut self, peer: &str, metadata: &[u8], peer_gpu: u32) -> Result<(), AgentError>;
    /// Writes `(source, destination, length)` descriptors to the peer and waits until done.
    fn write(&mut self, descs: &[WriteDesc], notify: &str, deadline: Instant) -> Result<WriteStats, AgentError>;
    /// Waits until `n` notifications arrived; returns how many did.
    fn await_notifications(&mut self, n: u32, deadline: Instant) -> Result<u32, AgentError>;
    /// Copies the first `lens[i]` bytes of each pool the library holds apart from the attached
    /// ones back into them (Mooncake's GPU pools, allocated by its agent, into their staging
    /// memory), once every write landed; nothing where the library uses the attached pools.
    fn readback(&mut self, lens: &[u64]) -> Result<(), AgentError> {
        let _ = lens;
        Ok(())
    }
}

fn open_link(plan: &AgentPlan) -> Result<Box<dyn Link>, AgentError> {
    match plan.transport {
        #[cfg(feature = "nixl")]
        Transport::Nixl => Ok(Box::new(nixl::NixlLink::new(plan)?)),
        #[cfg(not(feature = "nixl"))]
        Transport::Nixl => Err(AgentError::Environment(
            "this pdlaunch was built without NIXL: rebuild it with `cargo build --release --features pdlaunch/nixl` (needs libclang-dev)".into(),
        )),
        Transport::Mooncake => Ok(Box::new(mooncake::MooncakeLink::start(plan)?)),
        Transport::Memcpy => Err(AgentError::Input("memcpy runs inside one process, not between agents".into())),
    }
}

/// One side's pools: shared memory the library maps (`Memory::Dram`, and with Mooncake also
/// `Memory::Vram`: the staging copy its agent allocates GPU pools from), or one GPU allocation
/// each (`Memory::Vram` with NIXL).
enum Pools {
    Host(Vec<SharedPool>),
    #[cfg(feature = "cuda")]
    Device(Vec<device::DevicePool>),
}

impl Pools {
    /// Lays out `contents` (one pool per rank) and, last, a zeroed reference region of
    /// `reference` bytes, in the plan's memory. Made before the library is opened, so that the
    /// library (dropped first) lets go of them before they are freed, and a missing GPU is told
    /// before a missing library (NIXL; Mooncake's agent, which opens the driver, tells it once
    /// Mooncake is imported).
    fn create(plan: &AgentPlan, tag: &str, contents: &[Vec<u8>], reference: u64) -> Result<Pools, AgentError> {
        // Mooncake's agent allocates its GPU pools itself, from these as staging.
        if plan.memory == Memory::Dram || plan.transport == Transport::Mooncake {
            let mut pools: Vec<SharedPool> =
                contents.iter().map(|v| SharedPool::with_contents(tag, v)).collect::<Result<_, _>>()?;
            pools.push(SharedPool::create(&format!("{tag}-ref"), reference)?);
            return Ok(Pools::Host(pools));
        }
        #[cfg(feature = "cuda")]
        {
            let gpu = device::Gpu::open(plan.gpu)?;
            let mut pools: Vec<device::DevicePool> =
                contents.iter().map(|v| gpu.pool(v, v.len())).collect::<Result<_, _>>()?;
            pools.push(gpu.pool(&[], reference as usize)?);
            Ok(Pools::Device(pools))
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(vram_gpus(plan.transport, None)
                .err()
                .unwrap_or_else(|| AgentError::Environment("no CUDA engine".into())))
        }
    }

    /// Makes the pools known to `link`; returns their addresses as the library sees them and
    /// the reference region's length.
    fn attach(&self, link: &mut dyn Link) -> Result<(Vec<u64>, u64), AgentError> {
        match self {
            Pools::Host(pools) => {
                let all: Vec<&SharedPool> = pools.iter().collect();
                let bases = link.attach(&all)?;
                all.iter().for_each(|p| p.unlink());
                Ok((bases, pools.last().map_or(0, |p| p.len() as u64)))
            }
            // This process's device addresses are the ones NIXL registers.
            #[cfg(feature = "cuda")]
            Pools::Device(pools) => {
                Ok((pools.iter().map(device::DevicePool::addr).collect(), pools.last().map_or(0, |p| p.len() as u64)))
            }
        }
    }

    /// The first `lens[i]` bytes of each rank's pool (the reference region left out), on the
    /// host.
    fn images(&self, lens: &[u64]) -> Result<Vec<Vec<u8>>, AgentError> {
        match self {
            Pools::Host(p) => Ok(p.iter().zip(lens).map(|(pool, &n)| pool.as_slice()[..n as usize].to_vec()).collect()),
            #[cfg(feature = "cuda")]
            Pools::Device(p) => p.iter().zip(lens).map(|(pool, &n)| pool.read(n as usize)).collect(),
        }
    }
}

/// The GPUs for both sides' pools when both agents run on this machine with `--backend cuda`
/// (`asked`, else see [`device::local_gpus`]). NIXL's pools are this process's: `Environment`
/// (exit 2) when there is no driver or no GPU, or an asked one is not there. Mooncake's are its
/// Python agent's, which opens the driver itself and says when there is none: where this process
/// sees no driver, `asked` (else GPU 0 for both) goes to the agents as it is.
pub fn vram_gpus(transport: Transport, asked: Option<(u32, u32)>) -> Result<(u32, u32), AgentError> {
    #[cfg(feature = "cuda")]
    {
        use crate::engine::cuda::{probe, Probe};
        if transport == Transport::Mooncake && matches!(probe(), Probe::Unavailable { .. }) {
            return Ok(asked.unwrap_or((0, 0)));
        }
        device::local_gpus(asked)
    }
    #[cfg(not(feature = "cuda"))]
    {
        match transport {
            Transport::Mooncake => Ok(asked.unwrap_or((0, 0))),
            _ => Err(AgentError::Environment(
                "--backend cuda with --transport nixl needs the CUDA engine: this pdlaunch was built without the feature cuda; use --backend cpu".into(),
            )),
        }
    }
}

/// Why `--backend cuda` cannot run with `transport` here, if this process can tell: NIXL's
/// `VRAM_SEG` needs a driver and a GPU here; Mooncake's agent checks its own.
pub fn vram_refusal(transport: Transport) -> Result<(), AgentError> {
    vram_gpus(transport, None).map(|_| ())
}

fn input(e: impl std::fmt::Display) -> AgentError {
    AgentError::Input(e.to_string())
}

fn label(plan: &AgentPlan) -> String {
    plan.perturbation.map_or("clean", Perturbation::name).to_owned()
}

/// The address this host reaches `bootstrap` from (the source address of a route to it), for a
/// decode started alone; 127.0.0.1 when there is no route.
fn route_to(bootstrap: &str) -> String {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|u| u.connect(bootstrap).and_then(|()| u.local_addr()))
        .map_or_else(|_| "127.0.0.1".to_owned(), |a| a.ip().to_string())
}

/// Runs one side. `ready` is told the bootstrap address once the prefill listens. An empty
/// `plan.host` is the address this host reaches the bootstrap from.
pub fn serve(plan: &AgentPlan, ready: &mut dyn FnMut(&str)) -> Result<Outcome, AgentError> {
    let resolved;
    let plan = if plan.host.is_empty() {
        resolved = AgentPlan { host: route_to(&plan.bootstrap), ..plan.clone() };
        &resolved
    } else {
        plan
    };
    let timeout = Duration::from_millis(plan.timeout_ms.max(1));
    let deadline = Instant::now() + timeout;
    let p = prepare(&plan.case, plan.perturbation).map_err(input)?;
    let bytes = p.plan.bytes();
    match plan.role {
        Role::Prefill => {
            let pools = Pools::create(plan, "prefill", &p.prefill_pools(), bytes)?;
            let mut link = open_link(plan)?;
            let (bases, reference_len) = pools.attach(link.as_mut())?;
            let ranks = p.prefill.ranks.len();
            let mut regs: Vec<(u64, u64)> = regions(&p.prefill, &bases).iter().map(|r| (r.addr, r.len)).collect();
            regs.push((bases[ranks], reference_len));
            link.register(&regs)?;
            let (listener, addr) = wire::listen(&plan.bootstrap)?;
            ready(&addr);
            let mut conn = wire::accept(&listener, &addr, deadline)?;
            let info: DecodeInfo = conn.recv("the decode's transfer info", deadline)?;
            let result = (|| -> Result<(PrefillOutcome, u32), AgentError> {
                if info.case != label(plan) {
                    return Err(AgentError::Transfer(format!(
                        "the decode runs case `{}`, this prefill `{}`",
                        info.case,
                        label(plan)
                    )));
                }
                check_peer(&p.decode, &info.ranks).map_err(AgentError::Transfer)?;
                if info.pages != p.decode_pages {
                    return Err(AgentError::Transfer(
                        "the decode sent other page indices than the plan was made for".into(),
                    ));
                }
                link.connect(&info.peer, &info.metadata, info.gpu)?;
                // SGLang's descriptors, resolved against the decode's registered buffers.
                let mut work: Vec<(usize, Vec<WriteDesc>)> = Vec::new();
                for (i, pair) in p.plan.pairs.iter().enumerate() {
                    let Some(d) = pair.decode else { continue };
                    if pair.descriptors.is_empty() {
                        continue;
                    }
                    let src_base = bases[pair.prefill];
                    let descs = pair
                        .descriptors
                        .iter()
                        .map(|x| {
                            resolve(&p.decode.ranks[d], &info.ranks[d], x.dst, x.len)
                                .map(|dst| (src_base + x.src, dst, x.len))
                                .ok_or_else(|| {
                                    AgentError::Transfer(format!(
                                        "a descriptor of {} -> {} is outside the decode's registered buffers",
                                        pair.prefill_label, pair.decode_label
                                    ))
                                })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    work.push((i, descs));
                }
                let iterations = plan.iterations.max(2);
                let mut out = PrefillOutcome {
                    library: link.describe(),
                    pair_times: vec![Vec::new(); p.plan.pairs.len()],
                    totals: Vec::new(),
                    reference: Vec::new(),
                    reference_bytes: bytes,
                    calls: 0,
                };
                let mut notifications = 0u32;
                for it in 0..iterations {
                    let mut total = 0.0;
                    let mut calls = 0u64;
                    for (i, descs) in &work {
                        let s = link.write(descs, &format!("{}:{it}:{i}", info.case), deadline)?;
                        notifications += u32::from(s.notified);
                        out.pair_times[*i].push(s.seconds);
                        total += s.seconds;
                        calls += u64::from(s.calls);
                    }
                    out.totals.push(total);
                    out.calls = calls;
                }
                if bytes > 0 {
                    for it in 0..iterations {
                        let d = [(bases[ranks], info.reference.0, bytes)];
                        let s = link.write(&d, &format!("{}:reference:{it}", info.case), deadline)?;
                        notifications += u32::from(s.notified);
                        out.reference.push(s.seconds);
                    }
                }
                Ok((out, notifications))
            })();
            match result {
                Ok((out, notifications)) => {
                    conn.send(&Done { notifications, error: None })?;
                    let _: Bye = conn.recv("the decode's acknowledgement", deadline)?;
                    Ok(Outcome::Prefill(out))
                }
                Err(e) => {
                    let _ = conn.send(&Done { notifications: 0, error: Some(e.to_string()) });
                    Err(e)
                }
            }
        }
        Role::Decode => {
            let pools = Pools::create(plan, "decode", &p.decode_pools(), bytes)?;
            let mut link = open_link(plan)?;
            let (bases, reference_len) = pools.attach(link.as_mut())?;
            let ranks = p.decode.ranks.len();
            let mut regs: Vec<(u64, u64)> = regions(&p.decode, &bases).iter().map(|r| (r.addr, r.len)).collect();
            regs.push((bases[ranks], reference_len));
            link.register(&regs)?;
            let (peer, metadata) = link.identity()?;
            let mut conn = wire::connect(&plan.bootstrap, deadline, timeout)?;
            conn.send(&DecodeInfo {
                case: label(plan),
                peer,
                metadata,
                ranks: rank_infos(&p.decode, &bases),
                pages: p.decode_pages.clone(),
                reference: (bases[ranks], reference_len),
                gpu: plan.gpu,
            })?;
            let done: Done = conn.recv("the prefill's completion", deadline)?;
            if let Some(e) = done.error {
                return Err(AgentError::Transfer(format!("the prefill failed: {e}")));
            }
            let notifications = link.await_notifications(done.notifications, deadline)?;
            let lens: Vec<u64> = p.decode.ranks.iter().map(|r| r.pool_bytes).collect();
            link.readback(&lens)?;
            let images = pools.images(&lens)?;
            let verification = p.verify(&images);
            let classes = verification.classes.iter().map(|&c| class_letter(c)).collect();
            let _ = conn.send(&Bye { ok: true });
            Ok(Outcome::Decode(DecodeOutcome { verification, classes, notifications }))
        }
    }
}

/// The agent process: reads an [`AgentPlan`] (JSON) from stdin, runs it, and prints
/// [`Report`] lines on stdout. Returns the exit status. Any binary can host it (the CLI's hidden
/// `smoke-agent` command, the transport bench).
pub fn main_stdio() -> u8 {
    let mut text = String::new();
    let stdout = std::io::stdout();
    let say = |r: &Report| {
        let mut out = stdout.lock();
        let _ = serde_json::to_writer(&mut out, r);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    };
    let stdin = std::io::stdin();
    if let Err(e) = stdin.lock().read_line(&mut text) {
        say(&Report::Error { code: 2, message: format!("cannot read the agent plan from stdin: {e}") });
        return 2;
    }
    let plan: AgentPlan = match serde_json::from_str(&text) {
        Ok(p) => p,
        Err(e) => {
            say(&Report::Error { code: 2, message: format!("the agent plan on stdin is not valid: {e}") });
            return 2;
        }
    };
    match serve(&plan, &mut |addr| say(&Report::Ready(addr.to_owned()))) {
        Ok(o) => {
            say(&Report::Outcome(Box::new(o)));
            0
        }
        Err(e) => {
            say(&Report::Error { code: e.exit_code(), message: e.to_string() });
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::KvDtype;
    use crate::geometry::{KvAttention, KvGeometry};
    use crate::layout::SideConfig;
    use crate::transfer::TransferBackend;
    use pdlaunch_core::deployment::AttentionKind;

    fn plan(role: Role, transport: Transport) -> AgentPlan {
        let geometry = KvGeometry {
            kind: AttentionKind::Gqa,
            layers: 2,
            attention: KvAttention::Mha { kv_heads: 2, head_dim: 64 },
        };
        let side = SideConfig { page_size: 16, dtype: KvDtype::Bf16, attn_tp: 1, pp: 1 };
        AgentPlan {
            role,
            transport,
            case: Case { geometry, prefill: side, decode: side, backend: TransferBackend::Nixl, tokens: 32, seed: 3 },
            perturbation: None,
            bootstrap: "127.0.0.1:1".into(),
            host: "127.0.0.1".into(),
            iterations: 1,
            timeout_ms: 2000,
            memory: Memory::Vram,
            gpu: 0,
            mooncake_python: "/bin/false".into(),
            mooncake_protocol: "tcp".into(),
        }
    }

    /// Without a driver or a GPU, a side asked for GPU pools is an environment error (exit 2)
    /// saying to use the CPU: NIXL's before it loads the library (the pools are this
    /// process's), Mooncake's from its Python agent, which allocates them and finds no driver
    /// (through the real agent and the wheel in `PDLAUNCH_TEST_MOONCAKE_PYTHON`).
    #[cfg(feature = "cuda")]
    #[test]
    fn gpu_pools_without_a_gpu_are_an_environment_error() {
        use crate::engine::cuda::{probe, Probe};
        let Probe::Unavailable { reason } = probe() else {
            eprintln!("skipped: a GPU is here");
            return;
        };
        let python = std::env::var("PDLAUNCH_TEST_MOONCAKE_PYTHON").ok().filter(|p| !p.is_empty());
        if python.is_none() {
            eprintln!("skipped for Mooncake: PDLAUNCH_TEST_MOONCAKE_PYTHON is not set");
        }
        for role in [Role::Prefill, Role::Decode] {
            let e = serve(&plan(role, Transport::Nixl), &mut |_| {}).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(
                e.to_string().starts_with("no CUDA driver / no GPU: --backend cuda needs one; use --backend cpu"),
                "{e}"
            );
            assert_eq!(vram_refusal(Transport::Nixl).unwrap_err(), e);
            // Mooncake's agent opens the driver itself: nothing is refused here.
            assert_eq!(vram_refusal(Transport::Mooncake), Ok(()));
            assert_eq!(vram_gpus(Transport::Mooncake, None), Ok((0, 0)));
            assert_eq!(vram_gpus(Transport::Mooncake, Some((1, 2))), Ok((1, 2)));
            let Some(python) = &python else { continue };
            let p =
                AgentPlan { mooncake_python: python.clone(), timeout_ms: 30_000, ..plan(role, Transport::Mooncake) };
            let e = serve(&p, &mut |_| {}).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            let text = e.to_string();
            assert!(text.starts_with(&format!("the Mooncake agent ({python}): ")), "{text}");
            assert!(text.ends_with("use --backend cpu"), "{text}");
            if reason.contains("libcuda.so) was not found") {
                assert!(text.contains("cannot load libcuda.so.1 ("), "{text}");
            }
        }
    }

    /// The GPU of each side travels in its plan, and a plan without one is on GPU 0.
    #[test]
    fn the_plan_carries_the_pool_memory_and_gpu() {
        let p = AgentPlan { gpu: 1, ..plan(Role::Decode, Transport::Nixl) };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""memory":"vram""#) && text.contains(r#""gpu":1"#), "{text}");
        assert_eq!(serde_json::from_str::<AgentPlan>(&text).unwrap(), p);
        let old = text.replace(r#""gpu":1,"#, "");
        assert_eq!(serde_json::from_str::<AgentPlan>(&old).unwrap().gpu, 0);
    }
}
