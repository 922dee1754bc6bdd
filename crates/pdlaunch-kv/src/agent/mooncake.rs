//! The Mooncake side of an agent. Mooncake 0.3.13 has no C API (`engine.so` is a Python
//! extension), so this drives `python/mooncake_agent.py` in the user's own Python (the
//! environment SGLang runs in) with one JSON request per line: `initialize(host,
//! "P2PHANDSHAKE", protocol, device)` as SGLang calls it, the pools mapped from shared memory
//! and registered with `batch_register_memory`, and the writes as `batch_transfer_sync_write`
//! calls of at most [`BATCH`] descriptors (4,096 in one batch are refused over TCP; 2,048 pass).

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::pools::SharedPool;
use super::{AgentError, AgentPlan, Link, WriteStats};

/// The agent script, run with `python -c`.
pub const SCRIPT: &str = include_str!("../../python/mooncake_agent.py");

/// Descriptors per `batch_transfer_sync_write` call.
pub const BATCH: usize = 2048;

/// The install line printed when `mooncake` cannot be imported.
pub const INSTALL: &str =
    "pip install mooncake-transfer-engine-non-cuda==0.3.13.post1 (and apt-get install libibverbs1)";

/// Why `--backend cuda` is refused with Mooncake. The pools of this process are device memory
/// of its own CUDA context; the Python agent that registers them with Mooncake is another
/// process, where those pointers mean nothing until they are exported and opened there as CUDA
/// IPC handles, and the wheel the tests install (`-non-cuda`) cannot register device memory at
/// all.
pub const VRAM_REFUSAL: &str = "--backend cuda with --transport mooncake: GPU pools are not available through the Mooncake agent (it registers memory in its own Python process, and GPU pools would need CUDA IPC handles opened there, with Mooncake's CUDA wheel: pip install mooncake-transfer-engine==0.3.13.post1); use --transport nixl --backend cuda, or --backend cpu";

/// The Python agent.
pub struct MooncakeLink {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    session: String,
    peer: Option<String>,
    protocol: String,
    python: String,
    limit: Duration,
}

impl MooncakeLink {
    /// Starts the agent and initializes the engine on `plan.host`.
    pub fn start(plan: &AgentPlan) -> Result<MooncakeLink, AgentError> {
        let python = plan.mooncake_python.clone();
        let mut child = Command::new(&python)
            .arg("-c")
            .arg(SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                AgentError::Environment(format!(
                    "cannot start {python} for Mooncake: {e}; give the Python that has mooncake with --mooncake-python ({INSTALL})"
                ))
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let (lines, stderr) = super::launch::watch(&mut child, 8192);
        let mut link = MooncakeLink {
            child,
            stdin,
            lines,
            stderr,
            session: String::new(),
            peer: None,
            protocol: plan.mooncake_protocol.clone(),
            python,
            limit: Duration::from_millis(plan.timeout_ms.max(1)),
        };
        let r =
            link.request(&json!({"op": "init", "host": plan.host, "protocol": plan.mooncake_protocol, "device": ""}))?;
        link.session = r["session"].as_str().unwrap_or_default().to_owned();
        Ok(link)
    }

    fn request(&mut self, req: &Value) -> Result<Value, AgentError> {
        let op = req["op"].as_str().unwrap_or("?").to_owned();
        let mut line = serde_json::to_vec(req).map_err(|e| AgentError::Transfer(e.to_string()))?;
        line.push(b'\n');
        let gone = |s: &MooncakeLink, why: String| {
            let tail = s.stderr.lock().map(|t| t.trim().to_owned()).unwrap_or_default();
            let tail: String =
                tail.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n    ");
            AgentError::Transfer(format!(
                "the Mooncake agent ({}) {why}{}",
                s.python,
                if tail.is_empty() { String::new() } else { format!(":\n    {tail}") }
            ))
        };
        if let Err(e) = self.stdin.write_all(&line).and_then(|()| self.stdin.flush()) {
            let err = gone(self, format!("stopped before `{op}`: {e}"));
            return Err(if op == "init" {
                AgentError::Environment(format!(
                    "{err}; install Mooncake in that Python ({INSTALL}) and give it with --mooncake-python"
                ))
            } else {
                err
            });
        }
        match self.lines.recv_timeout(self.limit) {
            Ok(l) => {
                let v: Value =
                    serde_json::from_str(&l).map_err(|_| gone(self, format!("answered `{op}` with `{l}`")))?;
                if v["ok"].as_bool() == Some(true) {
                    return Ok(v);
                }
                let msg = v["error"].as_str().unwrap_or("failed").to_owned();
                Err(if v["kind"] == "environment" {
                    AgentError::Environment(format!(
                        "Mooncake: {msg}; install: {INSTALL}, and give that Python with --mooncake-python"
                    ))
                } else {
                    AgentError::Transfer(format!("Mooncake {op}: {msg}"))
                })
            }
            Err(RecvTimeoutError::Timeout) => Err(gone(self, format!("did not answer `{op}` within the timeout"))),
            Err(RecvTimeoutError::Disconnected) if op == "init" => Err(AgentError::Environment(format!(
                "{}; install Mooncake in that Python ({INSTALL}) and give it with --mooncake-python",
                gone(self, "exited at start".into())
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(gone(self, format!("exited during `{op}`"))),
        }
    }
}

impl Link for MooncakeLink {
    fn describe(&self) -> String {
        format!("Mooncake transfer engine ({}, P2PHANDSHAKE), batches of at most {BATCH}", self.protocol)
    }

    fn attach(&mut self, pools: &[&SharedPool]) -> Result<Vec<u64>, AgentError> {
        let list: Vec<Value> = pools.iter().map(|p| json!([p.path().to_string_lossy(), p.len()])).collect();
        let r = self.request(&json!({"op": "map", "pools": list}))?;
        let bases: Vec<u64> =
            r["bases"].as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default();
        if bases.len() != pools.len() {
            return Err(AgentError::Transfer("the Mooncake agent mapped fewer pools than given".into()));
        }
        Ok(bases)
    }

    fn register(&mut self, regions: &[(u64, u64)]) -> Result<(), AgentError> {
        self.request(&json!({"op": "register", "regions": regions})).map(|_| ())
    }

    fn identity(&mut self) -> Result<(String, Vec<u8>), AgentError> {
        Ok((self.session.clone(), Vec::new()))
    }

    fn connect(&mut self, peer: &str, _metadata: &[u8], _peer_gpu: u32) -> Result<(), AgentError> {
        self.peer = Some(peer.to_owned());
        Ok(())
    }

    fn write(
        &mut self,
        descs: &[super::WriteDesc],
        _notify: &str,
        deadline: Instant,
    ) -> Result<WriteStats, AgentError> {
        let peer = self.peer.clone().ok_or_else(|| AgentError::Transfer("Mooncake write before connect".into()))?;
        self.limit = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let r = self.request(&json!({"op": "write", "session": peer, "descs": descs, "batch": BATCH}))?;
        Ok(WriteStats {
            seconds: r["seconds"].as_f64().unwrap_or(0.0),
            calls: r["batches"].as_u64().unwrap_or(0) as u32,
            notified: false,
        })
    }

    fn await_notifications(&mut self, _n: u32, _deadline: Instant) -> Result<u32, AgentError> {
        // batch_transfer_sync_write returns once the bytes are in the peer's memory.
        Ok(0)
    }
}

impl Drop for MooncakeLink {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"{\"op\": \"quit\"}\n");
        let _ = self.stdin.flush();
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
