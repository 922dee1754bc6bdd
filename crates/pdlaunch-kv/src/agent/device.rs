//! GPU pool memory for `--backend cuda` through the agents: one device allocation per rank (and
//! one for the contiguous reference region), as the host path maps one shared-memory file per
//! buffer. The prefill's canaries and guards go in by a host→device copy of the same bytes the
//! host path writes; the decode copies its pools back to the host to verify them. cudarc opens
//! the CUDA driver at run time, so a machine without one gets a clear refusal, not a crash.

use std::panic::catch_unwind;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};

use super::AgentError;
use crate::engine::cuda::{probe, Probe};

/// The refusal when there is no driver or no GPU.
pub fn no_gpu(reason: &str) -> AgentError {
    AgentError::Environment(format!("no CUDA driver / no GPU: --backend cuda needs one; use --backend cpu ({reason})"))
}

/// The GPUs the prefill and the decode pools go on when both agents run on this machine:
/// `asked` (`--gpus`), else GPU 0 for the prefill and GPU 1 for the decode when the driver shows
/// two or more (so the bytes cross between devices), else GPU 0 too. `Environment` when there
/// is no GPU or an asked one is not there.
pub fn local_gpus(asked: Option<(u32, u32)>) -> Result<(u32, u32), AgentError> {
    match probe() {
        Probe::Available { devices, .. } => pick_gpus(devices.len(), asked),
        Probe::Unavailable { reason } => Err(no_gpu(&reason)),
    }
}

/// [`local_gpus`] for `count` visible devices (at least one).
pub fn pick_gpus(count: usize, asked: Option<(u32, u32)>) -> Result<(u32, u32), AgentError> {
    let Some((p, d)) = asked else { return Ok((0, u32::from(count >= 2))) };
    match [p, d].into_iter().find(|&g| g as usize >= count) {
        Some(g) => Err(AgentError::Environment(format!(
            "--gpus {p},{d}: GPU {g} is not there, the driver shows {count} (0..={}); give indices below {count}",
            count.saturating_sub(1)
        ))),
        None => Ok((p, d)),
    }
}

/// One GPU, opened for this agent's pools.
pub struct Gpu {
    ordinal: u32,
    stream: Arc<CudaStream>,
}

impl Gpu {
    /// Opens GPU `ordinal`; `Environment` when there is no driver, no such device, or it cannot
    /// be initialised.
    pub fn open(ordinal: u32) -> Result<Gpu, AgentError> {
        let count = match probe() {
            Probe::Available { devices, .. } => devices.len(),
            Probe::Unavailable { reason } => return Err(no_gpu(&reason)),
        };
        if ordinal as usize >= count {
            return Err(AgentError::Environment(format!(
                "--backend cuda: GPU {ordinal} was asked for, the driver shows {count} (0..{})",
                count - 1
            )));
        }
        let ctx = catch_unwind(|| CudaContext::new(ordinal as usize))
            .map_err(|_| no_gpu("the CUDA driver could not be used"))?
            .map_err(|e| AgentError::Environment(format!("CUDA: cannot open GPU {ordinal}: {e}")))?;
        Ok(Gpu { ordinal, stream: ctx.default_stream() })
    }

    /// The device id NIXL registers the pools with.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// A pool of `len` bytes (at least one page, as [`super::pools::SharedPool`]) holding
    /// `bytes` and zeros after them.
    pub fn pool(&self, bytes: &[u8], len: usize) -> Result<DevicePool, AgentError> {
        let len = len.max(bytes.len()).max(4096);
        let s = &self.stream;
        let mut slice = s.alloc_zeros::<u8>(len).map_err(cuda("allocating a pool"))?;
        if !bytes.is_empty() {
            let mut head = slice.slice_mut(0..bytes.len());
            s.memcpy_htod(bytes, &mut head).map_err(cuda("copying the pool's contents to the GPU"))?;
        }
        s.synchronize().map_err(cuda("copying the pool's contents to the GPU"))?;
        let addr = {
            let (addr, _sync) = slice.device_ptr(s);
            addr
        };
        Ok(DevicePool { addr, len, slice, stream: s.clone() })
    }
}

fn cuda(what: &str) -> impl Fn(cudarc::driver::DriverError) -> AgentError + '_ {
    move |e| AgentError::Environment(format!("CUDA: {what}: {e}"))
}

/// One device allocation.
pub struct DevicePool {
    addr: u64,
    len: usize,
    slice: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

impl DevicePool {
    /// The device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// Bytes allocated.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never empty (at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The first `n` bytes, copied to the host once every transfer into them completed.
    pub fn read(&self, n: usize) -> Result<Vec<u8>, AgentError> {
        let n = n.min(self.len);
        let mut host = vec![0u8; n];
        let view = self.slice.slice(0..n);
        self.stream.memcpy_dtoh(&view, &mut host).map_err(cuda("copying the pool back to the host"))?;
        self.stream.synchronize().map_err(cuda("copying the pool back to the host"))?;
        Ok(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decode_goes_on_a_second_gpu_when_there_is_one() {
        assert_eq!(pick_gpus(1, None).unwrap(), (0, 0));
        assert_eq!(pick_gpus(2, None).unwrap(), (0, 1));
        assert_eq!(pick_gpus(8, None).unwrap(), (0, 1));
        assert_eq!(pick_gpus(8, Some((3, 3))).unwrap(), (3, 3));
        let e = pick_gpus(1, Some((0, 1))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.to_string(), "--gpus 0,1: GPU 1 is not there, the driver shows 1 (0..=0); give indices below 1");
    }

    /// Without a driver or a GPU, opening one is an environment error (exit 2) naming the way
    /// out; with one, a pool round-trips its bytes.
    #[test]
    fn a_gpu_pool_round_trips_or_is_refused() {
        match Gpu::open(0) {
            Err(e) => {
                assert_eq!(e.exit_code(), 2);
                assert!(matches!(probe(), Probe::Unavailable { .. }), "{e}");
                assert!(
                    e.to_string().starts_with("no CUDA driver / no GPU: --backend cuda needs one; use --backend cpu"),
                    "{e}"
                );
            }
            Ok(g) => {
                let p = g.pool(b"canary", 6).unwrap();
                assert!(p.len() >= 4096);
                assert_eq!(p.read(8).unwrap(), b"canary\0\0");
            }
        }
    }
}
