//! Starting the two agents of a case and reading their reports: the engine behind
//! `pdlaunch smoke --transport nixl|mooncake`. The prefill starts first and says where it
//! listens; the decode then meets it there. Both are watched with the timeout, killed past it,
//! and their last stderr lines are kept for the error message.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::netns::Netns;
use super::{letter_class, AgentError, AgentPlan, Memory, Outcome, Placement, Report, Role, Transport};
use crate::engine::{median, Engine, EngineError, EngineRun, Job, Reference};
use crate::verify::Verification;

/// How to run the agents.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// Library.
    pub transport: Transport,
    /// Where.
    pub placement: Placement,
    /// The program that hosts an agent ([`super::main_stdio`]) and its arguments, e.g. this
    /// binary and `smoke-agent`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment for the agents (library paths, `UCX_TLS`).
    pub env: Vec<(String, String)>,
    /// The prefill's bootstrap `host:port`: used as given on this machine (`local`; port 0 picks
    /// a free one); across namespaces only its port is used, on the prefill namespace's address.
    /// `None`: 127.0.0.1 (or the namespace's address) and a free port.
    pub bootstrap: Option<String>,
    /// Limit for each side of each case.
    pub timeout: Duration,
    /// The Python with `mooncake`.
    pub mooncake_python: String,
    /// Mooncake's protocol.
    pub mooncake_protocol: String,
    /// Pool memory.
    pub memory: Memory,
    /// The GPUs of the prefill's and the decode's pools (`Memory::Vram`); `None`: GPU 0 for
    /// the prefill, GPU 1 for the decode when there are two or more, else 0.
    pub gpus: Option<(u32, u32)>,
}

/// The environment the agents need for `transport`: for NIXL, the loader path of the wheel's
/// `libnixl_capi.so` (`nixl_lib`) and its bundled libraries, its plugin folder, and UCX over TCP
/// across namespaces (two hosts without RDMA; shared-memory transports cannot cross).
pub fn library_env(transport: Transport, placement: Placement, nixl_lib: Option<&Path>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if transport != Transport::Nixl {
        return env;
    }
    if let Some(lib) = nixl_lib {
        let dir = lib.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut paths = vec![dir.display().to_string()];
        if let Some(site) = dir.parent() {
            paths.push(site.join("nixl_cu12.libs").display().to_string());
        }
        if let Ok(old) = std::env::var("LD_LIBRARY_PATH") {
            paths.push(old);
        }
        env.push(("LD_LIBRARY_PATH".into(), paths.join(":")));
        if std::env::var_os("NIXL_PLUGIN_DIR").is_none() {
            env.push(("NIXL_PLUGIN_DIR".into(), dir.join("plugins").display().to_string()));
        }
    }
    if placement == Placement::Netns && std::env::var_os("UCX_TLS").is_none() {
        env.push(("UCX_TLS".into(), "tcp".into()));
    }
    env
}

/// The transport engine: one prefill agent and one decode agent per case.
pub struct TransportEngine {
    launcher: Launcher,
    netns: Option<Netns>,
    verification: Option<Verification>,
}

impl TransportEngine {
    /// An engine; sets the namespaces up for `--across netns`.
    pub fn new(launcher: Launcher) -> Result<TransportEngine, AgentError> {
        let netns = match launcher.placement {
            Placement::Netns => Some(Netns::create()?),
            Placement::Local => None,
        };
        Ok(TransportEngine { launcher, netns, verification: None })
    }

    /// Where the agents meet, as shown in reports.
    pub fn describe(&self) -> String {
        let place = match &self.netns {
            Some(ns) => format!(
                "two agent processes in network namespaces {} ({}) and {} ({}) joined by a veth pair",
                ns.prefill, ns.prefill_ip, ns.decode, ns.decode_ip
            ),
            None => "two agent processes on this machine".into(),
        };
        match (self.launcher.memory, self.launcher.gpus) {
            (Memory::Vram, Some((p, d))) => format!("{place}, pools in GPU memory (prefill GPU {p}, decode GPU {d})"),
            (Memory::Vram, None) => format!("{place}, pools in GPU memory"),
            (Memory::Dram, _) => place,
        }
    }
}

struct Running {
    role: Role,
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn tail(&self) -> String {
        let s = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(6)..].join("\n    ")
    }

    fn name(&self) -> &'static str {
        match self.role {
            Role::Prefill => "prefill agent",
            Role::Decode => "decode agent",
        }
    }

    /// The next report line before `deadline`.
    fn next(&mut self, deadline: Instant) -> Result<Report, AgentError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => match serde_json::from_str::<Report>(&l) {
                    Ok(r) => return Ok(r),
                    Err(e) if l.starts_with("{\"outcome\"") || l.starts_with("{\"error\"") => {
                        return Err(AgentError::Transfer(format!(
                            "the {}'s report is not understood: {e}",
                            self.name()
                        )))
                    }
                    Err(_) => continue, // a library printing on stdout
                },
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    return Err(AgentError::Connect(format!(
                        "the {} gave no result within the timeout; stopped it{}",
                        self.name(),
                        with_tail(&self.tail())
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    return Err(AgentError::Transfer(format!(
                        "the {} exited ({status}) without a result{}",
                        self.name(),
                        with_tail(&self.tail())
                    )));
                }
            }
        }
    }

    fn finish(mut self, deadline: Instant) -> Result<Outcome, AgentError> {
        let r = self.next(deadline);
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                _ if Instant::now() > until => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        match r? {
            Report::Outcome(o) => Ok(*o),
            Report::Error { code, message } => Err(if code == 2 {
                AgentError::Environment(format!("{}: {message}", self.name()))
            } else {
                AgentError::Transfer(format!("{}: {message}{}", self.name(), with_tail(&self.tail())))
            }),
            Report::Ready(_) => Err(AgentError::Transfer(format!("the {} said ready twice", self.name()))),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads a started child's output on two threads: its stdout as lines, sent as they come, and
/// the last `keep` bytes or so of its stderr, for error messages.
pub(super) fn watch(child: &mut Child, keep: usize) -> (Receiver<String>, Arc<Mutex<String>>) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let stderr = Arc::new(Mutex::new(String::new()));
    let tail = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut s = tail.lock().unwrap_or_else(|e| e.into_inner());
            s.push_str(&String::from_utf8_lossy(&buf[..n]));
            if s.len() > keep {
                let cut = s.len() - keep / 2;
                let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(s.len());
                s.drain(..cut);
            }
        }
    });
    (lines, stderr)
}

fn with_tail(t: &str) -> String {
    if t.is_empty() {
        String::new()
    } else {
        format!("; its last messages:\n    {t}")
    }
}

impl TransportEngine {
    fn spawn(&self, plan: &AgentPlan) -> Result<Running, AgentError> {
        let l = &self.launcher;
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns.of(plan.role)]).arg(&l.program);
                c
            }
            None => Command::new(&l.program),
        };
        cmd.args(&l.args).envs(l.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| AgentError::Environment(format!("cannot start the agent {}: {e}", l.program.display())))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let json = serde_json::to_string(plan).map_err(|e| AgentError::Input(e.to_string()))?;
        stdin
            .write_all(json.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .map_err(|e| AgentError::Environment(format!("cannot hand the agent its plan: {e}")))?;
        drop(stdin);
        let (lines, stderr) = watch(&mut child, 16384);
        Ok(Running { role: plan.role, child, lines, stderr })
    }

    /// Runs one case through both agents: the prefill's figures and the decode's findings.
    pub fn run_agents(&mut self, job: &Job<'_>) -> Result<(super::PrefillOutcome, super::DecodeOutcome), AgentError> {
        let l = &self.launcher;
        let p = job.prepared;
        let (prefill_host, decode_host) = match &self.netns {
            Some(ns) => (ns.prefill_ip.clone(), ns.decode_ip.clone()),
            None => ("127.0.0.1".to_owned(), "127.0.0.1".to_owned()),
        };
        let port = l.bootstrap.as_deref().and_then(|b| b.rsplit_once(':')).map_or("0", |(_, p)| p).to_owned();
        let bootstrap = match (&self.netns, l.bootstrap.as_deref()) {
            (None, Some(b)) => b.to_owned(),
            _ => format!("{prefill_host}:{port}"),
        };
        let timeout_ms = l.timeout.as_millis() as u64;
        let plan = |role: Role, bootstrap: String, host: String| AgentPlan {
            role,
            transport: l.transport,
            case: p.case,
            perturbation: p.perturbation,
            bootstrap,
            host,
            iterations: job.iterations.max(1) + 1,
            timeout_ms,
            memory: l.memory,
            gpu: l.gpus.map_or(0, |(p, d)| if role == Role::Prefill { p } else { d }),
            mooncake_python: l.mooncake_python.clone(),
            mooncake_protocol: l.mooncake_protocol.clone(),
        };
        let deadline = Instant::now() + l.timeout + Duration::from_secs(5);
        let mut prefill = self.spawn(&plan(Role::Prefill, bootstrap, prefill_host))?;
        let addr = match prefill.next(deadline)? {
            Report::Ready(a) => a,
            Report::Error { code, message } => {
                return Err(if code == 2 {
                    AgentError::Environment(format!("prefill agent: {message}"))
                } else {
                    AgentError::Transfer(format!("prefill agent: {message}{}", with_tail(&prefill.tail())))
                })
            }
            Report::Outcome(_) => {
                return Err(AgentError::Transfer("the prefill agent finished before listening".into()))
            }
        };
        (job.progress)(0, p.plan.pairs.len());
        let decode = self.spawn(&plan(Role::Decode, addr, decode_host))?;
        let d = decode.finish(deadline);
        let f = prefill.finish(deadline);
        let (d, f) = match (d, f) {
            // The side that failed first explains best; a decode error is usually the cause.
            (Err(e), _) => return Err(e),
            (_, Err(e)) => return Err(e),
            (Ok(d), Ok(f)) => (d, f),
        };
        (job.progress)(p.plan.pairs.len(), p.plan.pairs.len());
        match (f, d) {
            (Outcome::Prefill(f), Outcome::Decode(d)) => Ok((f, d)),
            _ => Err(AgentError::Transfer("the agents reported for the wrong sides".into())),
        }
    }
}

impl Engine for TransportEngine {
    fn variants(&self) -> Vec<String> {
        vec![self.launcher.transport.name().to_owned()]
    }

    fn run(&mut self, _variant: usize, job: &Job<'_>, _decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError> {
        let (f, d) = self.run_agents(job).map_err(|e| EngineError::Device(e.to_string()))?;
        let mut v = d.verification;
        v.classes = d.classes.chars().map(letter_class).collect();
        if v.classes.len() != job.prepared.expected.len() {
            return Err(EngineError::Device("the decode agent verified another number of slices than planned".into()));
        }
        self.verification = Some(v);
        Ok(agent_run(self.launcher.transport, &self.describe(), &f, job))
    }

    fn take_verification(&mut self) -> Option<Verification> {
        self.verification.take()
    }
}

/// The engine run of a transfer between agents, from the prefill's figures: the first repetition
/// carries the connection, the figures are the others'. `place` says where the agents ran.
pub fn agent_run(transport: Transport, place: &str, f: &super::PrefillOutcome, job: &Job<'_>) -> EngineRun {
    let first = f.totals.first().copied().unwrap_or(0.0);
    let totals: Vec<f64> = f.totals.iter().skip(1).copied().collect();
    let pair_times: Vec<Vec<f64>> = f.pair_times.iter().map(|t| t.iter().skip(1).copied().collect()).collect();
    let steady = median(totals.clone());
    let reference_first = f.reference.first().copied().unwrap_or(0.0);
    let reference = Reference {
        what: format!(
            "the same library moving the same {} bytes as one contiguous region ({} repetition(s))",
            f.reference_bytes,
            f.reference.len().saturating_sub(1)
        ),
        bytes: f.reference_bytes,
        seconds: median(f.reference.iter().skip(1).copied().collect()),
    };
    let detail = format!(
        "{}; {place}; {} call(s) per repetition; first transfer {:.3} s, of which connection {:.3} s (first reference copy {:.3} s)",
        f.library,
        f.calls,
        first,
        (first - steady).max(0.0),
        reference_first
    );
    let mut run =
        EngineRun::from_samples(transport.name().into(), detail, &job.prepared.plan, pair_times, totals, reference);
    run.first_seconds = Some(first);
    run
}
