//! One smoke-test case: a geometry, the two sides' settings and a request, optionally with the
//! decode deliberately broken (a negative control), prepared into layouts, page indices, the
//! transfer plan, the ground truth and canary-filled pools.

use serde::{Deserialize, Serialize};

use crate::canary::{Canary, Fill};
use crate::geometry::KvGeometry;
use crate::layout::{heads_split_ok, LayoutError, SideConfig, SideLayout};
use crate::pages::{contiguous, fragmented, pages_for, pool_pages};
use crate::rng::mix64;
use crate::transfer::{plan, PlanError, PlanInput, TransferBackend, TransferPlan};
use crate::truth::{slices, Slice};
use crate::verify::{verify, Verification};

/// What to test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// Model geometry.
    pub geometry: KvGeometry,
    /// Prefill settings.
    pub prefill: SideConfig,
    /// Decode settings, as the deployment describes them.
    pub decode: SideConfig,
    /// Transfer engine modelled.
    pub backend: TransferBackend,
    /// Tokens in the request.
    pub tokens: u32,
    /// Seed for canary keys and page shuffling.
    pub seed: u64,
}

/// A deliberate break of the decode side; each must be caught by verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Perturbation {
    /// The decode runs with 4 times the page size.
    DecodePageX4,
    /// The decode runs with a quarter of the page size.
    DecodePageDiv4,
    /// The decode stores KV in a dtype of another width.
    DecodeDtypeWidth,
    /// The decode runs with twice the attention TP the deployment describes.
    DecodeTpX2,
    /// The decode registers its V buffers where K is expected.
    SwapKv,
}

impl Perturbation {
    /// Every negative control.
    pub const ALL: [Perturbation; 5] = [
        Perturbation::DecodePageX4,
        Perturbation::DecodePageDiv4,
        Perturbation::DecodeDtypeWidth,
        Perturbation::DecodeTpX2,
        Perturbation::SwapKv,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Perturbation::DecodePageX4 => "decode page size x4",
            Perturbation::DecodePageDiv4 => "decode page size /4",
            Perturbation::DecodeDtypeWidth => "decode KV dtype of another width",
            Perturbation::DecodeTpX2 => "decode attention TP x2",
            Perturbation::SwapKv => "K/V buffers swapped",
        }
    }

    /// The decode that actually runs, and whether K/V are swapped; `Err` says why the control
    /// does not apply to this case.
    pub fn apply(self, case: &Case) -> Result<(SideConfig, bool), String> {
        let mut d = case.decode;
        match self {
            Perturbation::DecodePageX4 => d.page_size = d.page_size.checked_mul(4).ok_or("page size overflows")?,
            Perturbation::DecodePageDiv4 => {
                if d.page_size < 4 {
                    return Err(format!("page size {} cannot be divided by 4", d.page_size));
                }
                d.page_size /= 4;
            }
            Perturbation::DecodeDtypeWidth => d.dtype = d.dtype.other_width(),
            Perturbation::DecodeTpX2 => {
                d.attn_tp *= 2;
                if !case.geometry.is_mla() && !heads_split_ok(case.geometry.kv_heads(), d.attn_tp) {
                    return Err(format!("{} KV heads cannot be split over TP {}", case.geometry.kv_heads(), d.attn_tp));
                }
            }
            Perturbation::SwapKv => {
                if case.geometry.is_mla() {
                    return Err("MLA has a single latent buffer per layer, no K/V order".into());
                }
                return Ok((d, true));
            }
        }
        Ok((d, false))
    }
}

/// Why a case cannot be prepared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// A side's layout is impossible.
    #[error("{side} layout: {source}")]
    Layout {
        /// `prefill` or `decode`.
        side: &'static str,
        /// Why.
        source: LayoutError,
    },
    /// The sides cannot be paired.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// No tokens.
    #[error("the request needs at least one token (--tokens)")]
    NoTokens,
}

/// A case ready to run.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The case.
    pub case: Case,
    /// The negative control applied, if any.
    pub perturbation: Option<Perturbation>,
    /// The decode that runs (differs from `case.decode` under a control).
    pub decode_actual: SideConfig,
    /// Prefill pools.
    pub prefill: SideLayout,
    /// Decode pools (as they run).
    pub decode: SideLayout,
    /// The request's prefill pages.
    pub prefill_pages: Vec<u32>,
    /// The request's decode pages.
    pub decode_pages: Vec<u32>,
    /// SGLang's plan.
    pub plan: TransferPlan,
    /// Ground truth on the decode.
    pub expected: Vec<Slice>,
    /// Canary generator.
    pub canary: Canary,
}

/// Lays out, allocates pages, plans and computes the truth for `case` under `perturbation`
/// (which must apply; see [`Perturbation::apply`]).
pub fn prepare(case: &Case, perturbation: Option<Perturbation>) -> Result<Prepared, CaseError> {
    if case.tokens == 0 {
        return Err(CaseError::NoTokens);
    }
    let (decode_actual, swap_kv) = match perturbation {
        Some(p) => p.apply(case).unwrap_or((case.decode, false)),
        None => (case.decode, false),
    };
    let np = pages_for(case.tokens, case.prefill.page_size);
    let nd = pages_for(case.tokens, decode_actual.page_size);
    let prefill = SideLayout::new(&case.geometry, case.prefill, np + 2)
        .map_err(|source| CaseError::Layout { side: "prefill", source })?;
    let decode_cap = pool_pages(nd);
    let decode = SideLayout::new(&case.geometry, decode_actual, decode_cap)
        .map_err(|source| CaseError::Layout { side: "decode", source })?;
    let prefill_pages = contiguous(np);
    let decode_pages = fragmented(nd, decode_cap, case.seed);
    let transfer = plan(&PlanInput {
        geometry: &case.geometry,
        backend: case.backend,
        prefill: &prefill,
        decode_view: case.decode,
        decode: &decode,
        prefill_pages: &prefill_pages,
        decode_pages: &decode_pages,
        swap_kv,
    })?;
    let expected = slices(&decode, &decode_pages, case.tokens);
    Ok(Prepared {
        case: *case,
        perturbation,
        decode_actual,
        prefill,
        decode,
        prefill_pages,
        decode_pages,
        plan: transfer,
        expected,
        canary: Canary::new(mix64(case.seed ^ 0x4B56_5F43_414E_4152)),
    })
}

impl Prepared {
    /// The prefill pools: canaries on the request's slices, the source pattern elsewhere.
    pub fn prefill_pools(&self) -> Vec<Vec<u8>> {
        let mut pools: Vec<Vec<u8>> = self
            .prefill
            .ranks
            .iter()
            .map(|r| {
                let mut v = vec![0u8; r.pool_bytes as usize];
                Fill::Source.fill(&mut v, 0);
                v
            })
            .collect();
        for s in slices(&self.prefill, &self.prefill_pages, self.case.tokens) {
            let at = s.offset as usize;
            self.canary.write(
                &s.coord,
                self.prefill.config.dtype,
                &mut pools[s.rank as usize][at..at + s.len as usize],
            );
        }
        pools
    }

    /// The decode pools before the transfer: the stale pattern on the request's pages, the
    /// guard pattern everywhere else.
    pub fn decode_pools(&self) -> Vec<Vec<u8>> {
        self.decode
            .ranks
            .iter()
            .map(|r| {
                let mut v = vec![0u8; r.pool_bytes as usize];
                Fill::Guard.fill(&mut v, 0);
                let item = r.item_len();
                for b in &r.buffers {
                    for &p in &self.decode_pages {
                        let start = b.offset + u64::from(p) * item;
                        Fill::Stale.fill(&mut v[start as usize..(start + item) as usize], start);
                    }
                }
                v
            })
            .collect()
    }

    /// Verifies decode pools after a transfer.
    pub fn verify(&self, pools: &[Vec<u8>]) -> Verification {
        verify(&self.canary, &self.decode, &self.decode_pages, &self.expected, pools)
    }

    /// Host bytes a run needs: both sides' pools, the truth, the plan, and a reference copy of
    /// the payload (source and destination).
    pub fn host_bytes(&self) -> u64 {
        let prefill_slices = self
            .prefill
            .ranks
            .iter()
            .map(|r| r.buffers.len() as u64 * u64::from(r.heads.end - r.heads.start))
            .sum::<u64>()
            * u64::from(self.case.tokens);
        self.prefill.total_bytes()
            + self.decode.total_bytes()
            + (self.expected.len() as u64 + prefill_slices) * std::mem::size_of::<Slice>() as u64
            + self.plan.descriptors() as u64 * std::mem::size_of::<crate::transfer::Descriptor>() as u64
            + 2 * self.plan.bytes()
    }

    /// A label for reports, e.g. `clean` or `decode page size x4`.
    pub fn label(&self) -> &'static str {
        self.perturbation.map_or("clean", Perturbation::name)
    }
}
