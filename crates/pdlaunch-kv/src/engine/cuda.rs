//! The CUDA engine, through cudarc with the driver and NVRTC loaded at run time: the build needs
//! no CUDA toolkit and the binary starts on machines without a GPU.
//!
//! - [`probe`] finds the driver and the devices without ever panicking: it checks that
//!   `libcuda` can be opened before any driver call, and runs every call under `catch_unwind`
//!   (cudarc reports a missing library or symbol by panicking).
//! - Pools live on one GPU (prefill and decode side by side) or, when there are two GPUs, the
//!   prefill pools on GPU 0 and the decode pools on GPU 1, moved with peer copies.
//! - Variants: `cuda-dma`, one `cuMemcpy(Peer)Async` per descriptor (what Mooncake's NVLink
//!   transport and NIXL's `cuda_ipc` do); `cuda-kernel`, one launch of the gather kernel over the
//!   whole descriptor list (what SGLang's staging gather and sgl-kernel's `kvcacheio` do),
//!   compiled with NVRTC when present, else loaded from the embedded PTX.
//! - Timing uses CUDA events; every wait polls with a limit instead of blocking.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use serde::Serialize;

use super::{median, Engine, EngineError, EngineRun, Job, Reference};
use crate::transfer::Descriptor;

/// The kernel source, compiled with NVRTC at run time.
pub const KERNEL_SOURCE: &str = include_str!("../../kernels/kv_gather.cu");
/// The same kernel as PTX for compute_70 (ISA 7.8), used when NVRTC is missing or fails.
pub const KERNEL_PTX: &str = include_str!("../../kernels/kv_gather.ptx");
/// Largest piece of a descriptor one warp copies.
pub const ITEM_BYTES: u64 = super::KERNEL_ITEM_BYTES;

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

/// The CUDA engine.
pub struct CudaEngine {
    contexts: Vec<Arc<CudaContext>>,
    variants: Vec<(String, Placement, bool)>,
    kernel: Option<(CudaFunction, &'static str)>,
    kernel_note: String,
    wait_limit: Duration,
}

fn dev(e: result::DriverError) -> EngineError {
    EngineError::Device(format!("CUDA: {e}"))
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

fn compile_kernel(ctx: &Arc<CudaContext>) -> (Option<(CudaFunction, &'static str)>, String) {
    let mut notes = Vec::new();
    let nvrtc = catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
    if nvrtc {
        let arch: &'static str = match ctx.compute_capability() {
            Ok((7, 0)) => "compute_70",
            Ok((7, 5)) => "compute_75",
            Ok((8, 0)) => "compute_80",
            Ok((8, 6)) => "compute_86",
            Ok((8, 9)) => "compute_89",
            Ok((9, 0)) => "compute_90",
            Ok((10, 0)) => "compute_100",
            _ => "compute_70",
        };
        let compiled = catch_unwind(|| {
            compile_ptx_with_opts(KERNEL_SOURCE, CompileOptions { arch: Some(arch), ..Default::default() })
        });
        match compiled {
            Ok(Ok(ptx)) => match ctx.load_module(ptx).and_then(|m| m.load_function("kv_gather")) {
                Ok(f) => return (Some((f, "nvrtc")), format!("compiled with NVRTC for {arch}")),
                Err(e) => notes.push(format!("NVRTC's PTX did not load ({e})")),
            },
            Ok(Err(e)) => notes.push(format!("NVRTC failed: {e:?}")),
            Err(p) => notes.push(format!("NVRTC unusable: {}", panic_text(p))),
        }
    } else {
        notes.push("libnvrtc not found".into());
    }
    match ctx.load_module(Ptx::from_src(KERNEL_PTX)).and_then(|m| m.load_function("kv_gather")) {
        Ok(f) => {
            notes.push("using the embedded PTX".into());
            (Some((f, "embedded_ptx")), notes.join("; "))
        }
        Err(e) => {
            notes.push(format!("the embedded PTX did not load ({e}); the kernel variant is skipped"));
            (None, notes.join("; "))
        }
    }
}

impl CudaEngine {
    /// An engine over the probed `devices`; every wait is limited to `wait_limit`.
    pub fn new(devices: &[DeviceInfo], wait_limit: Duration) -> Result<CudaEngine, EngineError> {
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
            let (kernel, kernel_note) = compile_kernel(&contexts[0]);
            let mut variants = Vec::new();
            let split = n == 2 && can_peer(&contexts[0], &contexts[1]);
            if split {
                variants.push(("cuda-dma-peer".to_owned(), Placement::Split(0, 1), false));
            }
            variants.push(("cuda-dma".to_owned(), Placement::Same(0), false));
            if kernel.is_some() {
                variants.push(("cuda-kernel".to_owned(), Placement::Same(0), true));
            }
            Ok(CudaEngine { contexts, variants, kernel, kernel_note, wait_limit })
        }));
        made.unwrap_or_else(|p| Err(EngineError::Device(format!("CUDA driver panicked: {}", panic_text(p)))))
    }

    /// Where the kernel came from (`nvrtc`, `embedded_ptx`), or `None` when it did not load.
    pub fn kernel_source(&self) -> Option<&'static str> {
        self.kernel.as_ref().map(|k| k.1)
    }

    /// How the kernel was obtained.
    pub fn kernel_note(&self) -> &str {
        &self.kernel_note
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

        let prefill: Vec<CudaSlice<u8>> =
            job.prefill.iter().map(|p| pstream.clone_htod(p)).collect::<Result<_, _>>().map_err(dev)?;
        drain(&pstream, limit, "uploading the prefill pools")?;
        let mut pools: Vec<CudaSlice<u8>> =
            decode.iter().map(|p| stream.clone_htod(p)).collect::<Result<_, _>>().map_err(dev)?;
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
        let sms = u64::from(
            dctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(dev)? as u32,
        );

        let iterations = job.iterations.max(1);
        let mut pair_times: Vec<Vec<f64>> = vec![Vec::new(); plan.pairs.len()];
        let mut totals = Vec::new();
        for it in 0..iterations {
            let marks: Vec<CudaEvent> = (0..=plan.pairs.len()).map(|_| timed_event(dctx)).collect::<Result<_, _>>()?;
            marks[0].record(&stream).map_err(dev)?;
            for (i, pair) in plan.pairs.iter().enumerate() {
                if let Some(d) = pair.decode {
                    if use_kernel {
                        if let Some((buf, n)) = &items[i] {
                            let f = &self.kernel.as_ref().expect("kernel variant has a kernel").0;
                            let blocks = (n * 32).div_ceil(256).clamp(1, sms.max(1) * 16) as u32;
                            let cfg =
                                LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                            let mut b = stream.launch_builder(f);
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
            let mut total = 0.0;
            for i in 0..plan.pairs.len() {
                let ms = marks[i].elapsed_ms(&marks[i + 1]).map_err(dev)?;
                pair_times[i].push(f64::from(ms) / 1e3);
                total += f64::from(ms) / 1e3;
                if it == 0 {
                    (job.progress)(i + 1, plan.pairs.len());
                }
            }
            totals.push(total);
        }

        for (host, dev_pool) in decode.iter_mut().zip(&mut pools) {
            stream.memcpy_dtoh(&*dev_pool, host).map_err(dev)?;
        }
        drain(&stream, limit, "reading the decode pools back")?;

        // The reference: one device-to-device copy of the same bytes on the decode GPU.
        let bytes = plan.bytes();
        let mut ref_times = Vec::new();
        if bytes > 0 {
            let a: CudaSlice<u8> = stream.alloc_zeros(bytes as usize).map_err(dev)?;
            let b: CudaSlice<u8> = stream.alloc_zeros(bytes as usize).map_err(dev)?;
            let (pa, pb) = (a.device_ptr(&stream).0, b.device_ptr(&stream).0);
            for _ in 0..iterations {
                let (s, e) = (timed_event(dctx)?, timed_event(dctx)?);
                s.record(&stream).map_err(dev)?;
                // SAFETY: both allocations hold `bytes` bytes.
                unsafe { result::memcpy_dtod_async(pb, pa, bytes as usize, stream.cu_stream()) }.map_err(dev)?;
                e.record(&stream).map_err(dev)?;
                wait(&e, limit, "the reference copy")?;
                ref_times.push(f64::from(s.elapsed_ms(&e).map_err(dev)?) / 1e3);
            }
            drain(&stream, limit, "freeing the reference buffers")?;
        }
        let where_ = match placement {
            Placement::Same(i) => format!("both sides on GPU {}", self.contexts[i].ordinal()),
            Placement::Split(a, b) => {
                format!(
                    "prefill on GPU {}, decode on GPU {} (peer copies)",
                    self.contexts[a].ordinal(),
                    self.contexts[b].ordinal()
                )
            }
        };
        let detail = if use_kernel {
            format!("{where_}; gather kernel ({})", self.kernel_note)
        } else {
            format!("{where_}; one async copy per descriptor")
        };
        let reference = Reference {
            what: format!("one device-to-device copy of {bytes} bytes on GPU {}", dctx.ordinal()),
            bytes,
            seconds: median(ref_times),
        };
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
