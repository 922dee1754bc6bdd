//! The NIXL side of an agent, through `nixl-sys` (stub API: the user's `libnixl_capi.so` is
//! opened at run time). As SGLang's NIXL KV manager: one agent with the UCX backend, every KV
//! region registered as `DRAM_SEG` (host pools) or `VRAM_SEG` with its GPU's id (`--backend
//! cuda`), the peer's metadata loaded from the bootstrap exchange, and
//! per pair one `WRITE` transfer of the descriptor lists with a notification, polled to
//! completion.

use std::time::Instant;

use nixl_sys::{
    Agent, AgentConfig, Backend, MemType, MemoryRegion, NixlDescriptor, NixlError, NotificationMap, OptArgs,
    RegistrationHandle, XferDescList, XferOp, XferStatus,
};

use super::pools::SharedPool;
use super::{AgentError, AgentPlan, Link, Memory, Role, WriteStats};

/// The install line printed when NIXL's library cannot be loaded.
pub const INSTALL: &str = "pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1";

#[derive(Debug)]
struct Mem {
    addr: usize,
    len: usize,
    kind: MemType,
    device: u64,
}

impl MemoryRegion for Mem {
    unsafe fn as_ptr(&self) -> *const u8 {
        self.addr as *const u8
    }
    fn size(&self) -> usize {
        self.len
    }
}

impl NixlDescriptor for Mem {
    fn mem_type(&self) -> MemType {
        self.kind
    }
    fn device_id(&self) -> u64 {
        self.device
    }
}

/// One NIXL agent with the UCX backend.
pub struct NixlLink {
    agent: Agent,
    backend: Backend,
    regs: Vec<RegistrationHandle>,
    peer: Option<String>,
    seen: u32,
    /// `DRAM_SEG` or `VRAM_SEG`, and this side's GPU.
    kind: MemType,
    device: u64,
    peer_device: u64,
}

fn fail(what: &str) -> impl Fn(NixlError) -> AgentError + '_ {
    move |e| AgentError::Transfer(format!("NIXL {what}: {e}"))
}

impl NixlLink {
    /// Creates the agent; `Environment` when the library is missing (checked before any other
    /// call, which would abort the process).
    pub fn new(plan: &AgentPlan) -> Result<NixlLink, AgentError> {
        if nixl_sys::is_stub() {
            return Err(AgentError::Environment(format!(
                "NIXL's library libnixl_capi.so cannot be loaded: install it with `{INSTALL}` and give its path with --nixl-lib (or PDLAUNCH_NIXL_LIB), e.g. …/site-packages/.nixl_cu12.mesonpy.libs/libnixl_capi.so"
            )));
        }
        let role = match plan.role {
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        };
        let name = format!("pdlaunch-{role}-{}", std::process::id());
        // As SGLang's `nixl_agent_config()`: NIXL's progress thread on, so that the target side
        // progresses while it waits on the bootstrap connection.
        let agent = Agent::new_configured(&name, &AgentConfig::default()).map_err(fail("agent creation"))?;
        let (_mems, params) = agent.get_plugin_params("UCX").map_err(|e| {
            AgentError::Environment(format!(
                "NIXL has no UCX plugin ({e}): set NIXL_PLUGIN_DIR to the wheel's plugins folder"
            ))
        })?;
        let backend = agent.create_backend("UCX", &params).map_err(fail("UCX backend creation"))?;
        let (kind, device) = match plan.memory {
            Memory::Dram => (MemType::Dram, 0),
            Memory::Vram => (MemType::Vram, u64::from(plan.gpu)),
        };
        Ok(NixlLink { agent, backend, regs: Vec::new(), peer: None, seen: 0, kind, device, peer_device: 0 })
    }
}

impl Link for NixlLink {
    fn describe(&self) -> String {
        let tls = std::env::var("UCX_TLS").unwrap_or_else(|_| "UCX default".into());
        let seg = match self.kind {
            MemType::Vram => format!("VRAM_SEG regions on GPU {}", self.device),
            _ => "DRAM_SEG regions".into(),
        };
        format!("NIXL agent, UCX backend ({tls}), {seg}")
    }

    fn attach(&mut self, pools: &[&SharedPool]) -> Result<Vec<u64>, AgentError> {
        Ok(pools.iter().map(|p| p.addr()).collect())
    }

    fn register(&mut self, regions: &[(u64, u64)]) -> Result<(), AgentError> {
        for &(a, l) in regions {
            let h = self
                .agent
                .register_memory(&Mem { addr: a as usize, len: l as usize, kind: self.kind, device: self.device }, None)
                .map_err(fail("memory registration"))?;
            self.regs.push(h);
        }
        Ok(())
    }

    fn identity(&mut self) -> Result<(String, Vec<u8>), AgentError> {
        Ok((self.agent.name(), self.agent.get_local_md().map_err(fail("local metadata"))?))
    }

    fn connect(&mut self, peer: &str, metadata: &[u8], peer_gpu: u32) -> Result<(), AgentError> {
        let name = self.agent.load_remote_md(metadata).map_err(fail("loading the decode's metadata"))?;
        if name != peer {
            return Err(AgentError::Transfer(format!("the decode's metadata names agent {name}, it said {peer}")));
        }
        self.peer = Some(name);
        self.peer_device = if self.kind == MemType::Vram { u64::from(peer_gpu) } else { 0 };
        Ok(())
    }

    fn write(&mut self, descs: &[super::WriteDesc], notify: &str, deadline: Instant) -> Result<WriteStats, AgentError> {
        let peer = self.peer.clone().ok_or_else(|| AgentError::Transfer("NIXL write before connect".into()))?;
        let mut local = XferDescList::new(self.kind).map_err(fail("descriptor list"))?;
        let mut remote = XferDescList::new(self.kind).map_err(fail("descriptor list"))?;
        for &(s, d, l) in descs {
            local.add_desc(s as usize, l as usize, self.device);
            remote.add_desc(d as usize, l as usize, self.peer_device);
        }
        let mut args = OptArgs::new().map_err(fail("options"))?;
        args.add_backend(&self.backend).map_err(fail("options"))?;
        args.set_notification_message(notify.as_bytes()).map_err(fail("options"))?;
        args.set_has_notification(true).map_err(fail("options"))?;
        let t = Instant::now();
        let req = self
            .agent
            .create_xfer_req(XferOp::Write, &local, &remote, &peer, Some(&args))
            .map_err(fail("WRITE request creation"))?;
        let mut running = self.agent.post_xfer_req(&req, Some(&args)).map_err(fail("posting the WRITE"))?;
        while running {
            match self.agent.get_xfer_status(&req).map_err(fail("WRITE"))? {
                XferStatus::Success => running = false,
                XferStatus::InProgress => {
                    if Instant::now() > deadline {
                        return Err(AgentError::Transfer(format!(
                            "NIXL WRITE of {} descriptor(s) to {peer} did not complete within the timeout",
                            descs.len()
                        )));
                    }
                    std::hint::spin_loop();
                }
            }
        }
        Ok(WriteStats { seconds: t.elapsed().as_secs_f64(), calls: 1, notified: true })
    }

    fn await_notifications(&mut self, n: u32, deadline: Instant) -> Result<u32, AgentError> {
        let mut map = NotificationMap::new().map_err(fail("notifications"))?;
        while self.seen < n {
            self.agent.get_notifications(&mut map, None).map_err(fail("notifications"))?;
            let got: usize = map.take_notifs().map_err(fail("notifications"))?.values().map(Vec::len).sum();
            self.seen += got as u32;
            if self.seen >= n {
                break;
            }
            if Instant::now() > deadline {
                return Err(AgentError::Transfer(format!(
                    "NIXL: {} of {n} notification(s) from the prefill arrived within the timeout",
                    self.seen
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(self.seen)
    }
}

impl Drop for NixlLink {
    fn drop(&mut self) {
        if let Some(p) = &self.peer {
            let _ = self.agent.invalidate_remote_md(p);
        }
        self.regs.clear();
    }
}
