//! The CUDA engine, through cudarc with the driver loaded at run time: the build needs no CUDA
//! toolkit and the binary starts on machines without a GPU.
//!
//! - [`probe`] finds the driver and the devices without ever panicking: it checks that
//!   `libcuda` can be opened before any driver call, and runs every call under `catch_unwind`
//!   (cudarc reports a missing library or symbol by panicking).
//! - Pools live on one GPU (prefill and decode side by side) or, when there are two GPUs, the
//!   prefill pools on GPU 0 and the decode pools on GPU 1, moved with peer copies over peer
//!   access enabled both ways (without it the driver stages peer copies through the host).
//!   Each side's memory is freed with its own context current.
//! - Variants: `cuda-dma`, one `cuMemcpy(Peer)Async` per descriptor (what Mooncake's NVLink
//!   transport and NIXL's `cuda_ipc` do); `cuda-kernel`, one launch of the gather kernel over the
//!   whole descriptor list (what SGLang's staging gather and sgl-kernel's `kvcacheio` do), from
//!   the embedded cubin made for the device's architecture (sm_90, sm_100), else from the
//!   embedded PTX, which the driver compiles; its grid is what the device holds at once
//!   (occupancy per SM times SMs).
//! - One untimed pass of the plan precedes the timed ones (lazy module loading, first-touch
//!   mappings); timing uses CUDA events; every wait polls with a limit instead of blocking.

use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use serde::Serialize;

use super::{median, Engine, EngineError, EngineRun, Job, Reference};
use crate::transfer::Descriptor;

/// The kernel source that the PTX and the cubins are made from.
pub const KERNEL_SOURCE: &str = include_str!("../../kernels/kv_gather.cu");
/// The kernel as PTX for compute_70 (ISA 7.8), for a GPU no embedded cubin runs on: the driver
/// compiles it for the device (`kernels/gen_ptx.py` makes it).
pub const KERNEL_PTX: &str = include_str!("../../kernels/kv_gather.ptx");
/// What `tools/gen_kernels.py` records of the cubins it made: NVRTC version, options, the
/// source's fingerprint and each cubin's.
pub const CUBIN_MANIFEST: &str = include_str!("../../kernels/kv_gather.cubins");
/// The kernel compiled ahead of time (NVRTC, by `tools/gen_kernels.py`) for the GPUs PD
/// deployments run on, so that no driver compiles it there.
pub const KERNEL_CUBINS: &[Cubin] = &[
    Cubin { arch: (9, 0), bytes: include_bytes!("../../kernels/kv_gather.sm_90.cubin") },
    Cubin { arch: (10, 0), bytes: include_bytes!("../../kernels/kv_gather.sm_100.cubin") },
];
/// Largest piece of a descriptor one warp copies.
pub const ITEM_BYTES: u64 = super::KERNEL_ITEM_BYTES;
/// Threads per block of the gather kernel (8 warps).
pub const BLOCK_THREADS: u32 = 256;

/// One embedded cubin.
#[derive(Debug)]
pub struct Cubin {
    /// The architecture it holds machine code for, `(9, 0)` for sm_90.
    pub arch: (i32, i32),
    /// The ELF image.
    pub bytes: &'static [u8],
}

impl Cubin {
    /// `sm_90`, `sm_100`.
    pub fn name(&self) -> String {
        format!("sm_{}{}", self.arch.0, self.arch.1)
    }
}

/// The embedded cubin that runs on a device of compute capability `cc`. Machine code for sm_X.y
/// runs on devices X.z with z >= y only, so: the same major version, the highest minor not
/// above the device's; `None` (use the PTX) when there is none.
pub fn cubin_for(cc: (i32, i32)) -> Option<&'static Cubin> {
    KERNEL_CUBINS.iter().filter(|c| c.arch.0 == cc.0 && c.arch.1 <= cc.1).max_by_key(|c| c.arch.1)
}

/// Blocks of [`BLOCK_THREADS`] for `items` work items of one warp each: one warp per item, but
/// no more blocks than the device keeps resident at once (`per_sm` on each of `sms`; the
/// kernel's grid-stride loop covers the rest), and at least one.
pub fn grid_blocks(items: u64, per_sm: u32, sms: u32) -> u32 {
    let warps_per_block = u64::from(BLOCK_THREADS / 32);
    let resident = u64::from(per_sm.max(1)) * u64::from(sms.max(1));
    items.div_ceil(warps_per_block).clamp(1, resident.min(u64::from(u32::MAX))) as u32
}

/// The outcome of `cuCtxEnablePeerAccess`: "already enabled" is as good as enabled.
pub fn peer_enabled(r: sys::CUresult) -> Result<(), result::DriverError> {
    match r {
        sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        r => r.result(),
    }
}

/// One GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// Product name.
    pub name: String,
    /// Compute capability.
    pub compute_capability: (i32, i32),
    /// Total memory in bytes.
    pub total_bytes: u64,
    /// Free memory in bytes when probed.
    pub free_bytes: u64,
    /// Streaming multiprocessors.
    pub sms: u32,
}

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Probe {
    /// A driver and at least one device.
    Available {
        /// `cuDriverGetVersion`, e.g. 12080.
        driver_version: i32,
        /// The devices.
        devices: Vec<DeviceInfo>,
    },
    /// No usable GPU, and why.
    Unavailable {
        /// The reason.
        reason: String,
    },
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// Looks for the CUDA driver and GPUs. Never panics.
pub fn probe() -> Probe {
    let present = catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    if !present {
        return Probe::Unavailable { reason: "the CUDA driver library (libcuda.so) was not found".into() };
    }
    let found = catch_unwind(|| -> Result<(i32, Vec<DeviceInfo>), result::DriverError> {
        let n = CudaContext::device_count()?;
        let mut version = 0i32;
        unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
        let mut devices = Vec::new();
        for ordinal in 0..n.max(0) as usize {
            let ctx = CudaContext::new(ordinal)?;
            let (free, total) = ctx.mem_get_info()?;
            devices.push(DeviceInfo {
                ordinal,
                name: ctx.name()?,
                compute_capability: ctx.compute_capability()?,
                total_bytes: total as u64,
                free_bytes: free as u64,
                sms: ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            });
        }
        Ok((version, devices))
    });
    match found {
        Ok(Ok((_, devices))) if devices.is_empty() => {
            Probe::Unavailable { reason: "the CUDA driver reports 0 devices".into() }
        }
        Ok(Ok((driver_version, devices))) => Probe::Available { driver_version, devices },
        Ok(Err(e)) => Probe::Unavailable { reason: format!("CUDA initialisation failed: {e}") },
        Err(p) => Probe::Unavailable { reason: format!("the CUDA driver could not be used: {}", panic_text(p)) },
    }
}

/// A copy item as the kernel reads it (matches `KvCopy` in kv_gather.cu).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KvCopy {
    /// Source address.
    pub src: u64,
    /// Destination address.
    pub dst: u64,
    /// Bytes.
    pub len: u64,
    /// Padding to 32 bytes.
    pub pad: u64,
}

// SAFETY: `KvCopy` is `repr(C)` plain data, laid out like the kernel's struct.
unsafe impl DeviceRepr for KvCopy {}

/// Splits descriptors into kernel items of at most [`ITEM_BYTES`], with absolute addresses.
pub fn kernel_items(descs: &[Descriptor], src_base: u64, dst_base: u64) -> Vec<KvCopy> {
    let mut out = Vec::new();
    for d in descs {
        let mut at = 0;
        while at < d.len {
            let len = (d.len - at).min(ITEM_BYTES);
            out.push(KvCopy { src: src_base + d.src + at, dst: dst_base + d.dst + at, len, pad: 0 });
            at += len;
        }
    }
    out
}

/// Where the pools live for a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Prefill and decode pools on one device.
    Same(usize),
    /// Prefill on the first, decode on the second, peer copies between.
    Split(usize, usize),
}

/// The gather kernel, loaded on the first GPU.
struct Kernel {
    function: CudaFunction,
    /// `cubin` or `embedded_ptx`.
    source: &'static str,
    /// Blocks of [`BLOCK_THREADS`] one SM keeps resident (the driver's occupancy calculator).
    blocks_per_sm: u32,
}

/// The CUDA engine.
pub struct CudaEngine {
    contexts: Vec<Arc<CudaContext>>,
    variants: Vec<(String, Placement, bool)>,
    kernel: Option<Kernel>,
    kernel_note: String,
    notes: Vec<String>,
    wait_limit: Duration,
}

fn dev(e: result::DriverError) -> EngineError {
    EngineError::Device(format!("CUDA: {e}"))
}

/// Device memory freed with its owner's context current. cudarc frees a slice on the null
/// stream of whichever context is current, which for the other GPU's memory is the wrong one;
/// this holds on every way out of a run, errors included.
struct OnDevice<T> {
    ctx: Arc<CudaContext>,
    value: ManuallyDrop<T>,
}

impl<T> OnDevice<T> {
    fn new(ctx: &Arc<CudaContext>, value: T) -> OnDevice<T> {
        OnDevice { ctx: ctx.clone(), value: ManuallyDrop::new(value) }
    }
}

impl<T> Deref for OnDevice<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Drop for OnDevice<T> {
    fn drop(&mut self) {
        // Not `bind_to_thread`: it refuses once the context holds an error, and the memory must
        // be freed all the same. A failure to switch leaves the free to report it.
        // SAFETY: the context is alive (held here).
        let _ = unsafe { result::ctx::set_current(self.ctx.cu_ctx()) };
        // SAFETY: `value` is dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.value) };
    }
}

/// Polls `event` until its work is done, at most `limit`.
fn wait(event: &CudaEvent, limit: Duration, what: &str) -> Result<(), EngineError> {
    let start = Instant::now();
    loop {
        if event.try_is_complete().map_err(dev)? {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(EngineError::Timeout { what: what.into(), seconds: limit.as_secs() });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Records an event on `stream` and waits for it.
fn drain(stream: &Arc<CudaStream>, limit: Duration, what: &str) -> Result<(), EngineError> {
    let e = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev)?;
    wait(&e, limit, what)
}

fn timed_event(ctx: &Arc<CudaContext>) -> Result<CudaEvent, EngineError> {
    ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev)
}

/// Loads the gather kernel on `ctx`: the embedded cubin for its architecture, else the embedded
/// PTX; and asks how many blocks one SM holds. `None` (the kernel variant is skipped) with the
/// reason in the note when neither loads.
fn load_kernel(ctx: &Arc<CudaContext>) -> (Option<Kernel>, String) {
    let mut notes = Vec::new();
    let cc = match ctx.compute_capability() {
        Ok(cc) => Some(cc),
        Err(e) => {
            notes.push(format!("compute capability unknown ({e})"));
            None
        }
    };
    let load = |ptx: Ptx| ctx.load_module(ptx).and_then(|m| m.load_function("kv_gather"));
    let mut loaded = None;
    match cc.map(|cc| (cc, cubin_for(cc))) {
        Some((_, Some(c))) => match load(Ptx::from_binary(c.bytes.to_vec())) {
            Ok(f) => loaded = Some((f, "cubin", format!("the embedded {} cubin", c.name()))),
            Err(e) => notes.push(format!("the embedded {} cubin did not load ({e})", c.name())),
        },
        Some(((major, minor), None)) => notes.push(format!("no embedded cubin for compute capability {major}.{minor}")),
        None => {}
    }
    let (function, source, what) = match loaded {
        Some(l) => l,
        None => match load(Ptx::from_src(KERNEL_PTX)) {
            Ok(f) => (f, "embedded_ptx", "the embedded PTX (compute_70), compiled by the driver".to_owned()),
            Err(e) => {
                notes.push(format!("the embedded PTX did not load ({e}); the kernel variant is skipped"));
                return (None, notes.join("; "));
            }
        },
    };
    let blocks_per_sm = match function.occupancy_max_active_blocks_per_multiprocessor(BLOCK_THREADS, 0, None) {
        Ok(n) if n > 0 => n,
        Ok(_) => {
            notes.push(format!(
                "{what} fits no block of {BLOCK_THREADS} threads on an SM; the kernel variant is skipped"
            ));
            return (None, notes.join("; "));
        }
        Err(e) => {
            notes.push(format!("{what}: occupancy unknown ({e}); the kernel variant is skipped"));
            return (None, notes.join("; "));
        }
    };
    notes.insert(0, format!("{what}, {blocks_per_sm} block(s) of {BLOCK_THREADS} threads resident per SM"));
    (Some(Kernel { function, source, blocks_per_sm }), notes.join("; "))
}

/// Lets each of two contexts access the other's memory, so that peer copies go over the GPUs'
/// link instead of through the host.
fn enable_peer_access(a: &Arc<CudaContext>, b: &Arc<CudaContext>) -> Result<(), result::DriverError> {
    for (from, to) in [(a, b), (b, a)] {
        from.bind_to_thread()?;
        // SAFETY: both contexts are alive; the call affects the current one (`from`).
        peer_enabled(unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) })?;
    }
    Ok(())
}

impl CudaEngine {
    /// An engine over the probed `devices`; every wait is limited to `wait_limit`.
    pub fn new(devices: &[DeviceInfo], wait_limit: Duration) -> Result<CudaEngine, EngineError> {
        if devices.is_empty() {
            return Err(EngineError::Device("no GPU was given to the CUDA engine".into()));
        }
        if !catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false) {
            return Err(EngineError::Device("the CUDA driver library (libcuda.so) was not found".into()));
        }
        let made = catch_unwind(AssertUnwindSafe(|| -> Result<CudaEngine, EngineError> {
            let n = devices.len().min(2);
            let mut contexts = Vec::new();
            for d in &devices[..n] {
                let ctx = CudaContext::new(d.ordinal).map_err(dev)?;
                // Raw device pointers are used below; cudarc's per-slice event bookkeeping would
                // only add work to the timed loops.
                unsafe { ctx.disable_event_tracking() };
                contexts.push(ctx);
            }
            let (kernel, kernel_note) = load_kernel(&contexts[0]);
            let mut notes = Vec::new();
            let mut variants = Vec::new();
            if n == 2 {
                let (a, b) = (contexts[0].ordinal(), contexts[1].ordinal());
                if !can_peer(&contexts[0], &contexts[1]) {
                    notes.push(format!("GPU {a} and GPU {b} cannot access each other's memory; no two-GPU variant"));
                } else if let Err(e) = enable_peer_access(&contexts[0], &contexts[1]) {
                    notes.push(format!(
                        "peer access between GPU {a} and GPU {b} could not be enabled ({e}); no two-GPU variant, \
                         its copies would go through the host"
                    ));
                } else {
                    variants.push(("cuda-dma-peer".to_owned(), Placement::Split(0, 1), false));
                }
            }
            variants.push(("cuda-dma".to_owned(), Placement::Same(0), false));
            if kernel.is_some() {
                variants.push(("cuda-kernel".to_owned(), Placement::Same(0), true));
            }
            Ok(CudaEngine { contexts, variants, kernel, kernel_note, notes, wait_limit })
        }));
        made.unwrap_or_else(|p| Err(EngineError::Device(format!("CUDA driver panicked: {}", panic_text(p)))))
    }

    /// Where the kernel came from (`cubin`, `embedded_ptx`), or `None` when it did not load.
    pub fn kernel_source(&self) -> Option<&'static str> {
        self.kernel.as_ref().map(|k| k.source)
    }

    /// How the kernel was obtained.
    pub fn kernel_note(&self) -> &str {
        &self.kernel_note
    }

    /// What the engine left out and why (a two-GPU variant without peer access), if anything.
    pub fn note(&self) -> Option<String> {
        (!self.notes.is_empty()).then(|| self.notes.join("; "))
    }

    fn run_inner(&self, variant: usize, job: &Job<'_>, decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError> {
        let (name, placement, use_kernel) = self.variants[variant].clone();
        let (pi, di) = match placement {
            Placement::Same(i) => (i, i),
            Placement::Split(a, b) => (a, b),
        };
        let (pctx, dctx) = (&self.contexts[pi], &self.contexts[di]);
        let pstream = pctx.default_stream();
        let stream = dctx.default_stream();
        let limit = self.wait_limit;
        let plan = &job.prepared.plan;

        let prefill = OnDevice::new(
            pctx,
            job.prefill
                .iter()
                .map(|p| pstream.clone_htod(p))
                .collect::<Result<Vec<CudaSlice<u8>>, _>>()
                .map_err(dev)?,
        );
        drain(&pstream, limit, "uploading the prefill pools")?;
        let pools = OnDevice::new(
            dctx,
            decode.iter().map(|p| stream.clone_htod(p)).collect::<Result<Vec<CudaSlice<u8>>, _>>().map_err(dev)?,
        );
        drain(&stream, limit, "uploading the decode pools")?;
        let src_base: Vec<u64> = prefill.iter().map(|s| s.device_ptr(&pstream).0).collect();
        let dst_base: Vec<u64> = pools.iter().map(|s| s.device_ptr(&stream).0).collect();

        // Kernel items per pair, uploaded before timing.
        let mut items: Vec<Option<(CudaSlice<KvCopy>, u64)>> = Vec::new();
        if use_kernel {
            for pair in &plan.pairs {
                let Some(d) = pair.decode else {
                    items.push(None);
                    continue;
                };
                let v = kernel_items(&pair.descriptors, src_base[pair.prefill], dst_base[d]);
                if v.is_empty() {
                    items.push(None);
                    continue;
                }
                let n = v.len() as u64;
                items.push(Some((stream.clone_htod(&v).map_err(dev)?, n)));
            }
            drain(&stream, limit, "uploading descriptors")?;
        }
        let items = OnDevice::new(dctx, items);
        let sms =
            dctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(dev)? as u32;
        // The copies below go to the null stream, which is the current context's.
        dctx.bind_to_thread().map_err(dev)?;

        let iterations = job.iterations.max(1);
        let mut pair_times: Vec<Vec<f64>> = vec![Vec::new(); plan.pairs.len()];
        let mut totals = Vec::new();
        // Pass 0 warms up and is not timed into the result: the first launch loads the lazily
        // loaded module, and the first copies set up mappings.
        for pass in 0..=iterations {
            let marks: Vec<CudaEvent> = (0..=plan.pairs.len()).map(|_| timed_event(dctx)).collect::<Result<_, _>>()?;
            marks[0].record(&stream).map_err(dev)?;
            for (i, pair) in plan.pairs.iter().enumerate() {
                if let Some(d) = pair.decode {
                    if use_kernel {
                        if let Some((buf, n)) = &items[i] {
                            let k = self.kernel.as_ref().expect("kernel variant has a kernel");
                            let cfg = LaunchConfig {
                                grid_dim: (grid_blocks(*n, k.blocks_per_sm, sms), 1, 1),
                                block_dim: (BLOCK_THREADS, 1, 1),
                                shared_mem_bytes: 0,
                            };
                            let mut b = stream.launch_builder(&k.function);
                            b.arg(buf).arg(n);
                            // SAFETY: every item lies inside the uploaded pools (the plan set aside
                            // descriptors that leave their buffers), and the pools outlive the wait.
                            unsafe { b.launch(cfg) }.map_err(dev)?;
                        }
                    } else {
                        for desc in &pair.descriptors {
                            let (s, t) = (src_base[pair.prefill] + desc.src, dst_base[d] + desc.dst);
                            // SAFETY: as above, both ranges are inside live allocations.
                            unsafe {
                                if pi == di {
                                    result::memcpy_dtod_async(t, s, desc.len as usize, stream.cu_stream())
                                } else {
                                    result::memcpy_peer_async(
                                        dctx.cu_ctx(),
                                        t,
                                        pctx.cu_ctx(),
                                        s,
                                        desc.len as usize,
                                        stream.cu_stream(),
                                    )
                                }
                            }
                            .map_err(dev)?;
                        }
                    }
                }
                marks[i + 1].record(&stream).map_err(dev)?;
            }
            wait(&marks[plan.pairs.len()], limit, &format!("{name} to execute the plan"))?;
            if pass == 0 {
                for i in 0..plan.pairs.len() {
                    (job.progress)(i + 1, plan.pairs.len());
                }
                continue;
            }
            let mut total = 0.0;
            for i in 0..plan.pairs.len() {
                let ms = marks[i].elapsed_ms(&marks[i + 1]).map_err(dev)?;
                pair_times[i].push(f64::from(ms) / 1e3);
                total += f64::from(ms) / 1e3;
            }
            totals.push(total);
        }

        for (host, dev_pool) in decode.iter_mut().zip(pools.iter()) {
            stream.memcpy_dtoh(dev_pool, host).map_err(dev)?;
        }
        drain(&stream, limit, "reading the decode pools back")?;

        // The reference: one device-to-device copy of the same bytes on the decode GPU, with an
        // untimed first copy as above.
        let bytes = plan.bytes();
        let mut ref_times = Vec::new();
        if bytes > 0 {
            let bufs = OnDevice::new(
                dctx,
                (
                    stream.alloc_zeros::<u8>(bytes as usize).map_err(dev)?,
                    stream.alloc_zeros::<u8>(bytes as usize).map_err(dev)?,
                ),
            );
            let (pa, pb) = (bufs.0.device_ptr(&stream).0, bufs.1.device_ptr(&stream).0);
            for pass in 0..=iterations {
                let (s, e) = (timed_event(dctx)?, timed_event(dctx)?);
                s.record(&stream).map_err(dev)?;
                // SAFETY: both allocations hold `bytes` bytes.
                unsafe { result::memcpy_dtod_async(pb, pa, bytes as usize, stream.cu_stream()) }.map_err(dev)?;
                e.record(&stream).map_err(dev)?;
                wait(&e, limit, "the reference copy")?;
                if pass > 0 {
                    ref_times.push(f64::from(s.elapsed_ms(&e).map_err(dev)?) / 1e3);
                }
            }
            drop(bufs);
            drain(&stream, limit, "freeing the reference buffers")?;
        }
        let where_ = match placement {
            Placement::Same(i) => format!("both sides on GPU {}", self.contexts[i].ordinal()),
            Placement::Split(a, b) => {
                format!(
                    "prefill on GPU {}, decode on GPU {} (peer copies, peer access enabled)",
                    self.contexts[a].ordinal(),
                    self.contexts[b].ordinal()
                )
            }
        };
        let detail = if use_kernel {
            format!("{where_}; gather kernel: {}", self.kernel_note)
        } else {
            format!("{where_}; one async copy per descriptor")
        };
        let reference = Reference {
            what: format!("one device-to-device copy of {bytes} bytes on GPU {}", dctx.ordinal()),
            bytes,
            seconds: median(ref_times),
        };
        drop(items);
        drop(pools);
        drop(prefill);
        drain(&pstream, limit, "freeing the prefill pools")?;
        Ok(EngineRun::from_samples(name, detail, plan, pair_times, totals, reference))
    }
}

fn can_peer(a: &Arc<CudaContext>, b: &Arc<CudaContext>) -> bool {
    let mut can = 0i32;
    let ok = unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.cu_device(), b.cu_device()) }.result().is_ok();
    ok && can == 1
}

impl Engine for CudaEngine {
    fn variants(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.0.clone()).collect()
    }

    fn run(&mut self, variant: usize, job: &Job<'_>, decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError> {
        catch_unwind(AssertUnwindSafe(|| self.run_inner(variant, job, decode)))
            .unwrap_or_else(|p| Err(EngineError::Device(format!("CUDA driver panicked: {}", panic_text(p)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU (CI) the probe says why in one of its own words; with one it describes every
    /// device as the driver reports it. Either way it returns instead of panicking.
    #[test]
    fn probe_never_panics() {
        match probe() {
            Probe::Available { driver_version, devices } => {
                assert!(driver_version >= 1000, "{driver_version}");
                assert!(!devices.is_empty());
                for (i, d) in devices.iter().enumerate() {
                    assert_eq!(d.ordinal, i, "{d:?}");
                    assert!(!d.name.trim().is_empty() && d.compute_capability.0 >= 1 && d.sms > 0, "{d:?}");
                    assert!(d.total_bytes > 0 && d.free_bytes <= d.total_bytes, "{d:?}");
                }
            }
            Probe::Unavailable { reason } => {
                let known = [
                    "the CUDA driver library (libcuda.so) was not found",
                    "the CUDA driver reports 0 devices",
                    "CUDA initialisation failed: ",
                    "the CUDA driver could not be used: ",
                ];
                let k = known.iter().position(|k| reason.starts_with(k)).unwrap_or_else(|| panic!("{reason}"));
                // The last two name the driver's own error after the colon.
                assert!(k < 2 && reason == known[k] || reason.len() > known[k].len(), "{reason}");
            }
        }
    }

    /// FNV-1a, 64 bits, as `gen_ptx.py` fingerprints the source it compiled.
    fn fnv1a64(data: &[u8]) -> u64 {
        data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    }

    /// The embedded PTX was generated from this very source (its header carries the source's
    /// fingerprint; regenerate with `kernels/gen_ptx.py` after editing `kv_gather.cu`), and is
    /// whole: the entry takes the kernel's two 64-bit parameters, reads the items at the
    /// layout of [`KvCopy`], and every label it branches to is defined.
    #[test]
    fn embedded_ptx_matches_the_source() {
        let fingerprint = KERNEL_PTX
            .lines()
            .find_map(|l| l.strip_prefix("// Source fingerprint (FNV-1a 64 of kv_gather.cu): "))
            .expect("the PTX header names the source's fingerprint");
        assert_eq!(fingerprint, format!("{:016x}", fnv1a64(KERNEL_SOURCE.as_bytes())), "kv_gather.ptx is stale");
        assert!(KERNEL_SOURCE.contains("void kv_gather(const KvCopy* __restrict__ items, unsigned long long count)"));

        let lines: Vec<&str> = KERNEL_PTX.lines().map(str::trim).collect();
        assert!(lines.contains(&".target sm_70"));
        let entry = lines.iter().position(|l| *l == ".visible .entry kv_gather(").expect("the kv_gather entry");
        assert_eq!(
            lines[entry + 1..entry + 4],
            [".param .u64 kv_gather_param_0,", ".param .u64 kv_gather_param_1", ")"]
        );

        // One item is 32 bytes (`shl 5`), its fields read at their offsets in `KvCopy`.
        assert_eq!(std::mem::size_of::<KvCopy>(), 32);
        assert!(lines.iter().any(|l| l.starts_with("shl.b64") && l.ends_with(", 5;")));
        for offset in
            [std::mem::offset_of!(KvCopy, src), std::mem::offset_of!(KvCopy, dst), std::mem::offset_of!(KvCopy, len)]
        {
            let at = if offset == 0 { "]".to_owned() } else { format!("+{offset}]") };
            assert!(
                lines.iter().any(|l| l.starts_with("ld.global.nc.u64") && l.ends_with(&format!("{at};"))),
                "{offset}"
            );
        }

        let defined: Vec<&str> = lines.iter().filter_map(|l| l.strip_suffix(':')).collect();
        let targets: Vec<&str> = lines
            .iter()
            .filter(|l| l.contains("bra"))
            .filter_map(|l| l.rsplit(char::is_whitespace).next()?.strip_suffix(';'))
            .collect();
        assert!(!targets.is_empty());
        for t in &targets {
            assert!(defined.contains(t), "{t} is branched to but not defined");
        }
        assert_eq!(KERNEL_PTX.matches('{').count(), KERNEL_PTX.matches('}').count());
        assert_eq!(lines.iter().rev().find(|l| !l.is_empty()), Some(&"}"));
    }

    /// The SM version an EM_CUDA ELF (a cubin) is for: ELF ABI 8 on (CUDA 12.8, sm_100 and later
    /// targets) keeps it in bits 8..16 of `e_flags`, the earlier ABIs in the low byte.
    fn cubin_arch(elf: &[u8]) -> Option<u32> {
        if elf.len() < 52 || elf[..4] != *b"\x7fELF" || elf[4] != 2 || u16::from_le_bytes([elf[18], elf[19]]) != 190 {
            return None;
        }
        let flags = u32::from_le_bytes(elf[48..52].try_into().unwrap());
        Some(if elf[8] >= 8 { (flags >> 8) & 0xff } else { flags & 0xff })
    }

    /// The embedded cubins are what `tools/gen_kernels.py` made from this very source: the
    /// manifest names the source's fingerprint and each cubin's size and fingerprint, and each
    /// cubin is machine code for the architecture it is filed under. (`gen_kernels.py --check`
    /// proves, with NVRTC, that the manifest is what the source compiles to.)
    #[test]
    fn embedded_cubins_match_the_manifest() {
        let field = |key: &str| {
            CUBIN_MANIFEST
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("the manifest has no {key} line"))
        };
        assert_eq!(field("source"), format!("{:016x}", fnv1a64(KERNEL_SOURCE.as_bytes())), "the cubins are stale");
        let listed: Vec<Vec<&str>> =
            CUBIN_MANIFEST.lines().filter_map(|l| l.strip_prefix("cubin ")).map(|l| l.split(' ').collect()).collect();
        assert_eq!(listed.len(), KERNEL_CUBINS.len());
        for (c, line) in KERNEL_CUBINS.iter().zip(&listed) {
            assert_eq!(line[..], [c.name(), c.bytes.len().to_string(), format!("{:016x}", fnv1a64(c.bytes))][..]);
            let arch = cubin_arch(c.bytes).unwrap_or_else(|| panic!("{} is not a cubin", c.name()));
            assert_eq!(arch as i32, c.arch.0 * 10 + c.arch.1, "{}", c.name());
        }
    }

    #[test]
    fn the_cubin_is_chosen_by_compute_capability() {
        let chosen = |cc| cubin_for(cc).map(Cubin::name);
        assert_eq!(chosen((9, 0)).as_deref(), Some("sm_90"));
        assert_eq!(chosen((10, 0)).as_deref(), Some("sm_100"));
        // Machine code runs on later minors of its major version (B300 is 10.3), never across
        // majors (sm_120 is another family), nor on earlier GPUs: those get the PTX.
        assert_eq!(chosen((10, 3)).as_deref(), Some("sm_100"));
        for cc in [(7, 0), (8, 0), (8, 6), (8, 9), (11, 0), (12, 0), (12, 1)] {
            assert_eq!(chosen(cc), None, "{cc:?}");
        }
    }

    #[test]
    fn the_grid_is_what_the_device_holds_at_once() {
        // 132 SMs (H100/H200), 5 resident blocks of 256 threads each (48 registers a thread).
        let resident = 132 * 5;
        // One warp per item, 8 warps a block, rounded up.
        assert_eq!(grid_blocks(1, 5, 132), 1);
        assert_eq!(grid_blocks(8, 5, 132), 1);
        assert_eq!(grid_blocks(9, 5, 132), 2);
        assert_eq!(grid_blocks(8 * 100, 5, 132), 100);
        // Beyond what is resident the grid stops growing; the kernel's loop strides over the rest.
        assert_eq!(grid_blocks(8 * resident as u64, 5, 132), resident);
        assert_eq!(grid_blocks(8 * resident as u64 + 1, 5, 132), resident);
        assert_eq!(grid_blocks(655_360, 5, 132), resident);
        assert_eq!(grid_blocks(655_360, 2, 148), 296);
        // Never an empty grid, and no overflow on absurd inputs.
        assert_eq!(grid_blocks(0, 5, 132), 1);
        assert_eq!(grid_blocks(u64::MAX, u32::MAX, u32::MAX), u32::MAX);
        assert_eq!(grid_blocks(100, 0, 0), 1);
    }

    #[test]
    fn peer_access_already_enabled_counts_as_enabled() {
        use sys::CUresult as R;
        assert!(peer_enabled(R::CUDA_SUCCESS).is_ok());
        assert!(peer_enabled(R::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED).is_ok());
        for r in [R::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, R::CUDA_ERROR_TOO_MANY_PEERS, R::CUDA_ERROR_INVALID_CONTEXT] {
            // Compared by code: formatting a driver error asks the driver for its text.
            assert_eq!(peer_enabled(r).err().map(|e| e.0), Some(r));
        }
    }

    /// Without a driver the engine refuses with the reason, not a panic; with no device it
    /// refuses on any machine.
    #[test]
    fn the_engine_refuses_without_a_driver_or_a_device() {
        let err = |r: Result<CudaEngine, EngineError>| r.err().map(|e| e.to_string());
        assert_eq!(
            err(CudaEngine::new(&[], Duration::from_secs(1))).as_deref(),
            Some("no GPU was given to the CUDA engine")
        );
        if let Probe::Unavailable { reason } = probe() {
            if reason.contains("libcuda.so") {
                let d = DeviceInfo {
                    ordinal: 0,
                    name: "none".into(),
                    compute_capability: (9, 0),
                    total_bytes: 1 << 30,
                    free_bytes: 1 << 30,
                    sms: 132,
                };
                assert_eq!(
                    err(CudaEngine::new(&[d], Duration::from_secs(1))).as_deref(),
                    Some("the CUDA driver library (libcuda.so) was not found")
                );
            }
        }
    }

    /// `ptxas` (CUDA 12.9, from PyPI's nvidia-cuda-nvcc-cu12; `scripts/setup/cuda-tools.sh`
    /// installs it and sets PDLAUNCH_PTXAS) assembles the embedded PTX for sm_90 and sm_100,
    /// as the driver does on those GPUs when their cubin cannot be used, without spilling.
    /// Skipped, saying so, when PDLAUNCH_PTXAS is not set.
    #[test]
    fn ptxas_assembles_the_embedded_ptx() {
        let Some(ptxas) = std::env::var_os("PDLAUNCH_PTXAS") else {
            eprintln!("skipped: PDLAUNCH_PTXAS is not set (eval \"$(scripts/setup/cuda-tools.sh)\")");
            return;
        };
        let dir = std::env::temp_dir().join(format!("pdlaunch-ptxas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx = dir.join("kv_gather.ptx");
        std::fs::write(&ptx, KERNEL_PTX).unwrap();
        for (arch, sm) in [("sm_90", 90), ("sm_100", 100)] {
            let cubin = dir.join(format!("{arch}.cubin"));
            let out = std::process::Command::new(&ptxas)
                .arg("-v")
                .arg(format!("-arch={arch}"))
                .arg(&ptx)
                .arg("-o")
                .arg(&cubin)
                .output()
                .unwrap_or_else(|e| panic!("PDLAUNCH_PTXAS={}: {e}", ptxas.to_string_lossy()));
            let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "ptxas -arch={arch} failed:\n{log}");
            assert!(log.contains(&format!("Compiling entry function 'kv_gather' for '{arch}'")), "{log}");
            assert!(log.contains("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), "{arch}:\n{log}");
            assert_eq!(cubin_arch(&std::fs::read(&cubin).unwrap()), Some(sm), "{arch}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_descriptors_are_split() {
        let d = [Descriptor { src: 0, dst: 100, len: ITEM_BYTES * 2 + 5 }];
        let v = kernel_items(&d, 1000, 5000);
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].len, 5);
        assert_eq!(v[1].src, 1000 + ITEM_BYTES);
        assert_eq!(v[1].dst, 5100 + ITEM_BYTES);
    }
}
