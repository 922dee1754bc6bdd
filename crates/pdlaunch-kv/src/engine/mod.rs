//! Engines that execute a transfer plan on real memory: the CPU engine (always available) and
//! the CUDA engine (feature `cuda`, driver loaded at run time). Each also times one plain copy
//! of the same number of bytes, so its throughput is reported against the machine's own copy
//! rate measured in the same run.

use serde::Serialize;

use crate::case::Prepared;
use crate::verify::Verification;

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

/// Largest piece of a descriptor one warp of the GPU gather kernel copies.
pub const KERNEL_ITEM_BYTES: u64 = 16 << 10;

/// A transfer to run.
pub struct Job<'a> {
    /// The prepared case.
    pub prepared: &'a Prepared,
    /// Prefill pools (host images).
    pub prefill: &'a [Vec<u8>],
    /// Timed repetitions of the whole plan (at least 1); the result is the median.
    pub iterations: u32,
    /// Called with (pairs done, pairs) during the first repetition.
    pub progress: &'a dyn Fn(usize, usize),
}

/// Timing of one pair (median over repetitions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairTiming {
    /// Index into the plan's pairs.
    pub pair: usize,
    /// Seconds.
    pub seconds: f64,
}

/// The plain copy measured next to the engine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reference {
    /// What was copied, e.g. `one memcpy of 268435456 bytes (host)`.
    pub what: String,
    /// Bytes.
    pub bytes: u64,
    /// Seconds (median).
    pub seconds: f64,
}

/// The result of running a plan with one engine variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineRun {
    /// Engine name, e.g. `cpu` or `cuda-kernel`.
    pub engine: String,
    /// Details: threads, devices, kernel source.
    pub detail: String,
    /// Per pair.
    pub pairs: Vec<PairTiming>,
    /// Seconds for the whole plan (median).
    pub seconds: f64,
    /// Payload bytes moved.
    pub bytes: u64,
    /// Descriptors executed.
    pub descriptors: usize,
    /// The reference copy.
    pub reference: Reference,
    /// Seconds of the first repetition, when it carries a connection's set-up (transports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seconds: Option<f64>,
}

impl EngineRun {
    /// A run from its timing samples: per pair, and of the whole plan, over the repetitions; the
    /// figures are their medians.
    pub fn from_samples(
        engine: String,
        detail: String,
        plan: &crate::transfer::TransferPlan,
        pair_times: Vec<Vec<f64>>,
        totals: Vec<f64>,
        reference: Reference,
    ) -> EngineRun {
        EngineRun {
            engine,
            detail,
            pairs: pair_times
                .into_iter()
                .enumerate()
                .map(|(pair, t)| PairTiming { pair, seconds: median(t) })
                .collect(),
            seconds: median(totals),
            bytes: plan.bytes(),
            descriptors: plan.descriptors(),
            reference,
            first_seconds: None,
        }
    }

    /// Payload GB/s (10^9 bytes per second).
    pub fn gbps(&self) -> f64 {
        gbps(self.bytes, self.seconds)
    }
    /// The reference copy's GB/s.
    pub fn reference_gbps(&self) -> f64 {
        gbps(self.reference.bytes, self.reference.seconds)
    }
    /// Engine throughput over reference throughput.
    pub fn ratio(&self) -> f64 {
        let r = self.reference_gbps();
        if r > 0.0 {
            self.gbps() / r
        } else {
            0.0
        }
    }
}

/// GB/s of `bytes` in `seconds` (0 when nothing was timed).
pub fn gbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / seconds / 1e9
    } else {
        0.0
    }
}

/// The median of `v` (0 for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// An engine failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The device or driver reported an error.
    #[error("{0}")]
    Device(String),
    /// A wait exceeded its limit.
    #[error("timed out after {seconds} s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        seconds: u64,
    },
}

/// Something that executes plans.
pub trait Engine {
    /// The variants it runs, e.g. `["cpu"]` or `["cuda-dma", "cuda-kernel"]`.
    fn variants(&self) -> Vec<String>;
    /// Runs variant `variant` of `job`; `decode` holds the decode pools before the transfer and
    /// receives them after it.
    fn run(&mut self, variant: usize, job: &Job<'_>, decode: &mut [Vec<u8>]) -> Result<EngineRun, EngineError>;
    /// The verification of the last run when the engine verified it itself (the transports'
    /// decode agents verify their own pools); `None`: verify the `decode` pools `run` filled.
    fn take_verification(&mut self) -> Option<Verification> {
        None
    }
}
