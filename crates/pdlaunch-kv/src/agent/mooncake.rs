//! The Mooncake side of an agent. Mooncake 0.3.13 has no C API (`engine.so` is a Python
//! extension), so this drives `python/mooncake_agent.py` in the user's own Python (the
//! environment SGLang runs in) with one JSON request per line: `initialize(host,
//! "P2PHANDSHAKE", protocol, device)` as SGLang calls it, the pools mapped from shared memory
//! and registered with `batch_register_memory`, and the writes as `batch_transfer_sync_write`
//! calls of at most [`BATCH`] descriptors (4,096 in one batch are refused over TCP; 2,048 pass).
//!
//! With `--backend cuda` the shared-memory pools are the staging copy (the same bytes as the host
//! path): the Python agent allocates each pool on the plan's GPU itself (the memory Mooncake
//! registers must belong to the process that registers it, as SGLang's KV tensors belong to the
//! process that calls `register_memory`), copies the staging bytes in and registers the device
//! addresses; before the decode verifies, `readback` copies its device pools into their staging
//! mappings. No driver or GPU there, or Mooncake's non-CUDA wheel (which registers device memory
//! but fails every write of it with "Bad address"), is an environment error naming the way out.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::pools::SharedPool;
use super::{AgentError, AgentPlan, Link, Memory, WriteStats};

/// The agent script, run with `python -c`.
pub const SCRIPT: &str = include_str!("../../python/mooncake_agent.py");

/// Descriptors per `batch_transfer_sync_write` call.
pub const BATCH: usize = 2048;

/// The install line printed when `mooncake` cannot be imported.
pub const INSTALL: &str =
    "pip install mooncake-transfer-engine-non-cuda==0.3.13.post1 (and apt-get install libibverbs1)";

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
    /// Where the Python agent puts the pools, and on which GPU.
    memory: Memory,
    gpu: u32,
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
            memory: plan.memory,
            gpu: plan.gpu,
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
                Err(if v["kind"] == "device" {
                    // The driver, the GPU or the wheel: the message names the way out.
                    AgentError::Environment(format!("the Mooncake agent ({}): {msg}", self.python))
                } else if v["kind"] == "environment" {
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
        let pools = match self.memory {
            Memory::Vram => format!(", pools allocated on GPU {} by the Mooncake agent", self.gpu),
            Memory::Dram => String::new(),
        };
        format!("Mooncake transfer engine ({}, P2PHANDSHAKE), batches of at most {BATCH}{pools}", self.protocol)
    }

    fn attach(&mut self, pools: &[&SharedPool]) -> Result<Vec<u64>, AgentError> {
        let list: Vec<Value> = pools.iter().map(|p| json!([p.path().to_string_lossy(), p.len()])).collect();
        let r = self.request(&json!({"op": "map", "pools": list, "memory": self.memory, "gpu": self.gpu}))?;
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

    fn readback(&mut self, lens: &[u64]) -> Result<(), AgentError> {
        match self.memory {
            Memory::Vram => self.request(&json!({"op": "readback", "lens": lens})).map(|_| ()),
            Memory::Dram => Ok(()),
        }
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
