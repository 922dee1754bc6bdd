//! The CPU engine: executes each pair's descriptors on host memory, spreading large,
//! non-overlapping descriptor sets over threads, and times one `memcpy` of the same total bytes.

use std::sync::Mutex;
use std::time::Instant;

use super::{median, Engine, EngineError, EngineRun, Job, Reference};
use crate::transfer::Descriptor;

/// Below this many bytes a pair runs on one thread (spawning costs more than it saves).
const PARALLEL_MIN_BYTES: u64 = 1 << 20;
/// Bytes a thread claims at a time.
const BATCH_BYTES: usize = 1 << 20;
/// From this many bytes per pair the copies stream (non-temporal stores): data this large
/// does not stay in the caches anyway, and skipping the read-for-ownership of every destination
/// line is what makes one large `memcpy` fast (glibc streams above a cache-sized threshold that a
/// single descriptor never reaches).
const STREAM_MIN_BYTES: u64 = 32 << 20;
/// Copies shorter than this never stream.
const STREAM_MIN_COPY: usize = 1024;

/// The CPU engine.
#[derive(Clone, Debug)]
pub struct CpuEngine {
    threads: usize,
}

impl CpuEngine {
    /// An engine with `threads` workers (default: the available parallelism, at most 8).
    pub fn new(threads: Option<usize>) -> CpuEngine {
        let avail = std::thread::available_parallelism().map_or(1, usize::from);
        CpuEngine { threads: threads.unwrap_or(avail.min(8)).max(1) }
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

/// True when no two descriptors write the same byte (then they may run in any order).
pub fn disjoint_dst(descs: &[Descriptor]) -> bool {
    let mut v: Vec<(u64, u64)> = descs.iter().map(|d| (d.dst, d.dst + d.len)).collect();
    v.sort_unstable();
    v.windows(2).all(|w| w[0].1 <= w[1].0)
}

/// Executes `descs` from `src` into `dst`. With `parallel`, the caller guarantees disjoint
/// destinations ([`disjoint_dst`]); the destination is then carved into separate slices,
/// grouped into batches of about 1 MiB, and copied by `threads` threads claiming batches (so a
/// thread slowed by other work on the machine does not hold the others back). Otherwise
/// descriptors run in order, so overlapping writes resolve as SGLang's would (last one wins).
pub fn execute(src: &[u8], dst: &mut [u8], descs: &[Descriptor], threads: usize, parallel: bool) {
    let bytes: u64 = descs.iter().map(|d| d.len).sum();
    let stream = bytes >= STREAM_MIN_BYTES;
    if !parallel || threads < 2 || bytes < PARALLEL_MIN_BYTES {
        for d in descs {
            let (s, t, n) = (d.src as usize, d.dst as usize, d.len as usize);
            copy(&mut dst[t..t + n], &src[s..s + n], stream);
        }
        nt::fence(stream);
        return;
    }
    let mut order: Vec<&Descriptor> = descs.iter().collect();
    order.sort_unstable_by_key(|d| d.dst);
    // Carve the destination into one slice per descriptor.
    let mut work: Vec<(&[u8], &mut [u8])> = Vec::with_capacity(order.len());
    let mut rest: &mut [u8] = dst;
    let mut at = 0u64;
    for d in order {
        let tail = std::mem::take(&mut rest);
        let (_, tail) = tail.split_at_mut((d.dst - at) as usize);
        let (piece, tail) = tail.split_at_mut(d.len as usize);
        rest = tail;
        at = d.dst + d.len;
        work.push((&src[d.src as usize..(d.src + d.len) as usize], piece));
    }
    // Batches of about BATCH_BYTES (long descriptors cut into pieces), claimed one at a time
    // by the threads, so that a thread slowed by other work on the machine does not hold the
    // others back.
    let mut batches: Vec<Vec<(&[u8], &mut [u8])>> = Vec::new();
    let mut batch = Vec::new();
    let mut in_batch = 0usize;
    for (from, to) in work {
        for (f, t) in from.chunks(BATCH_BYTES).zip(to.chunks_mut(BATCH_BYTES)) {
            in_batch += f.len();
            batch.push((f, t));
            if in_batch >= BATCH_BYTES {
                batches.push(std::mem::take(&mut batch));
                in_batch = 0;
            }
        }
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    let queue = Mutex::new(batches.into_iter());
    let worker = || loop {
        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
        match next {
            Some(b) => {
                for (from, to) in b {
                    copy(to, from, stream);
                }
            }
            None => {
                nt::fence(stream);
                break;
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
}

/// Copies `src` into `dst` (equal lengths), streaming when asked and long enough.
fn copy(dst: &mut [u8], src: &[u8], stream: bool) {
    if stream && dst.len() >= STREAM_MIN_COPY {
        nt::copy(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

/// Non-temporal copies. Four 4 KiB pages are copied interleaved, a cache line of each in turn,
/// as glibc's large `memcpy` does, which keeps more DRAM pages open at once.
#[cfg(target_arch = "x86_64")]
mod nt {
    use std::arch::x86_64::*;

    const PAGE: usize = 4096;

    /// Copies with streaming stores (AVX2 when the CPU has it, else SSE2).
    pub fn copy(dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len());
        let head = dst.as_ptr().align_offset(64).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let (d, s) = (&mut dst[head..], &src[head..]);
        let done = if is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; see `lines_avx2`.
            unsafe { lines_avx2(d, s) }
        } else {
            lines_sse2(d, s)
        };
        d[done..].copy_from_slice(&s[done..]);
    }

    /// Makes this thread's streaming stores visible before it reports completion.
    pub fn fence(streamed: bool) {
        if streamed {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            unsafe { _mm_sfence() };
        }
    }

    /// Copies whole 64-byte lines of 64-byte-aligned `d`; returns the bytes copied.
    #[target_feature(enable = "avx2")]
    unsafe fn lines_avx2(d: &mut [u8], s: &[u8]) -> usize {
        let n = d.len();
        let (dp, sp) = (d.as_mut_ptr(), s.as_ptr());
        let mut at = 0;
        // SAFETY (whole function): every access is below `n` in both slices of length `n`;
        // stores are 32-byte aligned because `d` starts 64-byte aligned and offsets are
        // multiples of 32.
        unsafe {
            while at + 4 * PAGE <= n {
                let mut off = 0;
                while off < PAGE {
                    for k in 0..4 {
                        let (ss, dd) = (sp.add(at + k * PAGE + off), dp.add(at + k * PAGE + off));
                        _mm_prefetch(ss.add(256) as *const i8, _MM_HINT_T0);
                        let a = _mm256_loadu_si256(ss as *const __m256i);
                        let b = _mm256_loadu_si256(ss.add(32) as *const __m256i);
                        _mm256_stream_si256(dd as *mut __m256i, a);
                        _mm256_stream_si256(dd.add(32) as *mut __m256i, b);
                    }
                    off += 64;
                }
                at += 4 * PAGE;
            }
            while at + 64 <= n {
                let a = _mm256_loadu_si256(sp.add(at) as *const __m256i);
                let b = _mm256_loadu_si256(sp.add(at + 32) as *const __m256i);
                _mm256_stream_si256(dp.add(at) as *mut __m256i, a);
                _mm256_stream_si256(dp.add(at + 32) as *mut __m256i, b);
                at += 64;
            }
        }
        at
    }

    /// As [`lines_avx2`], with 16-byte SSE2 operations.
    pub(super) fn lines_sse2(d: &mut [u8], s: &[u8]) -> usize {
        let n = d.len();
        let (dp, sp) = (d.as_mut_ptr(), s.as_ptr());
        let mut at = 0;
        let line = |off: usize| {
            // SAFETY: callers pass `off + 64 <= n`; `dp + off` is 16-byte aligned (64-byte
            // aligned start, offsets multiples of 64); SSE2 is part of the x86_64 baseline.
            unsafe {
                let (ss, dd) = (sp.add(off), dp.add(off));
                for k in 0..4 {
                    let v = _mm_loadu_si128(ss.add(16 * k) as *const __m128i);
                    _mm_stream_si128(dd.add(16 * k) as *mut __m128i, v);
                }
            }
        };
        while at + 4 * PAGE <= n {
            let mut off = 0;
            while off < PAGE {
                for k in 0..4 {
                    line(at + k * PAGE + off);
                }
                off += 64;
            }
            at += 4 * PAGE;
        }
        while at + 64 <= n {
            line(at);
            at += 64;
        }
        at
    }
}

/// Plain copies where non-temporal stores are not available.
#[cfg(not(target_arch = "x86_64"))]
mod nt {
    /// Copies.
    pub fn copy(dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
    }
    /// Nothing to make visible.
    pub fn fence(_streamed: bool) {}
}

/// Times `iterations` plain copies of `bytes` bytes and returns the median seconds.
pub fn reference_copy(bytes: u64, iterations: u32) -> f64 {
    let n = bytes as usize;
    let src = vec![0x5Au8; n];
    let mut dst = vec![0xA5u8; n];
    let times: Vec<f64> = (0..iterations.max(1))
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(times)
}

impl Engine for CpuEngine {
    fn variants(&self) -> Vec<String> {
        vec!["cpu".into()]
    }

    fn run(&mut self, _variant: usize, job: &Job<'_>, decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError> {
        let plan = &job.prepared.plan;
        let parallel: Vec<bool> = plan.pairs.iter().map(|p| disjoint_dst(&p.descriptors)).collect();
        let iterations = job.iterations.max(1);
        let mut pair_times: Vec<Vec<f64>> = vec![Vec::new(); plan.pairs.len()];
        let mut totals = Vec::new();
        for it in 0..iterations {
            let mut total = 0.0;
            for (i, pair) in plan.pairs.iter().enumerate() {
                let Some(d) = pair.decode else { continue };
                let t = Instant::now();
                execute(&job.prefill[pair.prefill], &mut decode[d], &pair.descriptors, self.threads, parallel[i]);
                let s = t.elapsed().as_secs_f64();
                pair_times[i].push(s);
                total += s;
                if it == 0 {
                    (job.progress)(i + 1, plan.pairs.len());
                }
            }
            totals.push(total);
        }
        let bytes = plan.bytes();
        let detail = format!(
            "{} thread(s), {} repetition(s){}",
            self.threads,
            iterations,
            if plan.pairs.iter().any(|p| p.bytes() >= STREAM_MIN_BYTES) { ", streaming stores" } else { "" }
        );
        let reference = Reference {
            what: format!("one memcpy of {bytes} bytes on the host (1 thread)"),
            bytes,
            seconds: reference_copy(bytes, iterations),
        };
        Ok(EngineRun::from_samples("cpu".into(), detail, plan, pair_times, totals, reference))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_and_serial_agree() {
        let src: Vec<u8> = (0..4 << 20).map(|i| (i * 7 % 251) as u8).collect();
        let descs: Vec<Descriptor> =
            (0..64u64).map(|i| Descriptor { src: i * 65536, dst: (63 - i) * 65536 + 8, len: 65000 }).collect();
        assert!(disjoint_dst(&descs));
        let mut a = vec![0u8; 5 << 20];
        let mut b = a.clone();
        execute(&src, &mut a, &descs, 1, false);
        execute(&src, &mut b, &descs, 4, true);
        assert_eq!(a, b);
        assert_eq!(&a[8..108], &src[63 * 65536..63 * 65536 + 100]);
    }

    #[test]
    fn streaming_copies_are_exact() {
        let src: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
        for (off, len) in [(0usize, 70_000usize), (3, 20_000), (17, 1024), (1, 16_389), (40, 65_537)] {
            let mut dst = vec![0u8; len + 80];
            copy(&mut dst[off..off + len], &src[..len], true);
            nt::fence(true);
            assert_eq!(&dst[off..off + len], &src[..len], "offset {off} length {len}");
            assert!(dst[..off].iter().all(|&b| b == 0) && dst[off + len..].iter().all(|&b| b == 0));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_lines_are_exact() {
        let src: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let mut buf = vec![0u8; 40_064];
        let at = buf.as_ptr().align_offset(64);
        let d = &mut buf[at..at + 39_000];
        let done = nt::lines_sse2(d, &src[..39_000]);
        nt::fence(true);
        assert_eq!(done, 39_000 / 64 * 64);
        assert_eq!(&d[..done], &src[..done]);
    }

    #[test]
    fn overlap_is_detected() {
        let d = [Descriptor { src: 0, dst: 0, len: 10 }, Descriptor { src: 0, dst: 9, len: 10 }];
        assert!(!disjoint_dst(&d));
    }
}
