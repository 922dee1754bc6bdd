//! KV transfer through the libraries SGLang uses, between two agent processes: a prefill side
//! and a decode side, each started alone with a plan ([`AgentPlan`]), meeting on the prefill's
//! bootstrap host:port.
//!
//! Each side prepares the same case as the in-process engines ([`crate::case::prepare`]: the
//! layouts, pages, SGLang's descriptors and the ground truth are deterministic), lays its pools
//! out in shared memory ([`pools`]) and registers them per layer buffer as SGLang does
//! ([`region`]). The decode connects and sends its region addresses and page indices
//! ([`wire`]); the prefill resolves SGLang's descriptors against them and writes through the
//! library ([`nixl`]: a WRITE transfer with a notification per pair; [`mooncake`]:
//! `batch_transfer_sync_write` in batches the engine accepts), repeats the plan, then copies the
//! same bytes as one contiguous region for the reference figure. The decode waits for the
//! notifications, verifies its own pools with the canaries and guard patterns, and reports.
//! [`launch`] starts both sides (here, or in two network namespaces, [`netns`]) and turns
//! their reports into an engine run.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::case::{prepare, Case, Perturbation};
use crate::verify::{Class, Verification};

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
    /// GPU memory (NIXL `VRAM_SEG`).
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
    /// Prepares to write to the peer.
    fn connect(&mut self, peer: &str, metadata: &[u8]) -> Result<(), AgentError>;
    /// Writes `(source, destination, length)` descriptors to the peer and waits until done.
    fn write(&mut self, descs: &[WriteDesc], notify: &str, deadline: Instant) -> Result<WriteStats, AgentError>;
    /// Waits until `n` notifications arrived; returns how many did.
    fn await_notifications(&mut self, n: u32, deadline: Instant) -> Result<u32, AgentError>;
}

fn open_link(plan: &AgentPlan) -> Result<Box<dyn Link>, AgentError> {
    if plan.memory == Memory::Vram {
        return Err(AgentError::Environment(vram_unavailable()));
    }
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

/// Why GPU pools cannot be used through the agents here.
fn vram_unavailable() -> String {
    #[cfg(feature = "cuda")]
    {
        use crate::engine::cuda::{probe, Probe};
        match probe() {
            Probe::Available { .. } => {
                "--backend cuda with --transport nixl|mooncake: GPU pools (VRAM_SEG) are not wired into the agents yet; use --backend cpu".into()
            }
            Probe::Unavailable { reason } => {
                format!("--backend cuda with --transport nixl|mooncake needs a GPU for VRAM_SEG pools: {reason}; use --backend cpu")
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        "--backend cuda with --transport nixl|mooncake needs the CUDA engine (feature cuda) and a GPU; use --backend cpu".into()
    }
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
            let pools: Vec<SharedPool> =
                p.prefill_pools().iter().map(|v| SharedPool::with_contents("prefill", v)).collect::<Result<_, _>>()?;
            let reference = SharedPool::create("prefill-ref", bytes)?;
            let mut link = open_link(plan)?;
            let mut all: Vec<&SharedPool> = pools.iter().collect();
            all.push(&reference);
            let bases = link.attach(&all)?;
            all.iter().for_each(|p| p.unlink());
            let mut regs: Vec<(u64, u64)> = regions(&p.prefill, &bases).iter().map(|r| (r.addr, r.len)).collect();
            regs.push((bases[pools.len()], reference.len() as u64));
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
                link.connect(&info.peer, &info.metadata)?;
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
                        let d = [(bases[pools.len()], info.reference.0, bytes)];
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
            let pools: Vec<SharedPool> =
                p.decode_pools().iter().map(|v| SharedPool::with_contents("decode", v)).collect::<Result<_, _>>()?;
            let reference = SharedPool::create("decode-ref", bytes)?;
            let mut link = open_link(plan)?;
            let mut all: Vec<&SharedPool> = pools.iter().collect();
            all.push(&reference);
            let bases = link.attach(&all)?;
            all.iter().for_each(|p| p.unlink());
            let mut regs: Vec<(u64, u64)> = regions(&p.decode, &bases).iter().map(|r| (r.addr, r.len)).collect();
            regs.push((bases[pools.len()], reference.len() as u64));
            link.register(&regs)?;
            let (peer, metadata) = link.identity()?;
            let mut conn = wire::connect(&plan.bootstrap, deadline, timeout)?;
            conn.send(&DecodeInfo {
                case: label(plan),
                peer,
                metadata,
                ranks: rank_infos(&p.decode, &bases),
                pages: p.decode_pages.clone(),
                reference: (bases[pools.len()], reference.len() as u64),
            })?;
            let done: Done = conn.recv("the prefill's completion", deadline)?;
            if let Some(e) = done.error {
                return Err(AgentError::Transfer(format!("the prefill failed: {e}")));
            }
            let notifications = link.await_notifications(done.notifications, deadline)?;
            let images: Vec<Vec<u8>> = pools
                .iter()
                .zip(&p.decode.ranks)
                .map(|(pool, r)| pool.as_slice()[..r.pool_bytes as usize].to_vec())
                .collect();
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
