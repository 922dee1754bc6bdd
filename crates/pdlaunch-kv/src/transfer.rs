//! The transfer plan SGLang's KV senders execute for one request: which prefill rank writes to
//! which decode rank, and the `(source offset, destination offset, length)` descriptors, computed
//! with SGLang's own arithmetic (`disaggregation/{common,mooncake,nixl}/conn.py`):
//!
//! - rank mapping (`_resolve_rank_mapping`): equal attention TP pairs rank r with rank r; a
//!   larger decode TP has several decode ranks pull from one prefill rank; a smaller decode TP
//!   has each decode rank pull from `prefill_tp / decode_tp` prefill ranks (for MLA only the
//!   first sends, the others are dummies); a decode PP of 1 pulls every prefill stage;
//! - whole pages (equal TP, or MLA): source and destination both advance by the **prefill**
//!   `item_len`; Mooncake merges runs contiguous on both sides (`group_concurrent_contiguous`),
//!   NIXL's pre-registered descriptor lists move one page per descriptor;
//! - head slices (MHA with different TP, `send_kvcache_slice`): one descriptor per token slot,
//!   layer buffer and page, with the head offsets of SGLang's modulo mapping and GQA replication;
//! - PP: the decode pointer list is sliced at the prefill stage's first layer
//!   (`get_*_kv_ptrs_with_pp`).
//!
//! The plan is computed from the topology the deployment describes (`decode_view`), while the
//! addresses, item lengths and page indices come from the decode pools that actually exist, as
//! they do at run time through registration. When the two disagree (a negative control, or a
//! deployment whose sides drifted) the descriptors go where SGLang would send them. Descriptors
//! that leave the registered buffer they address are set aside, never executed.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::geometry::KvGeometry;
use crate::layout::{RankLayout, SideConfig, SideLayout};

/// The KV transfer engine whose descriptor shapes are reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransferBackend {
    /// Mooncake: merged contiguous runs, one batch (whole pages) or one batch per layer buffer
    /// (head slices).
    Mooncake,
    /// NIXL: one descriptor per page (pre-registered lists), one transfer per request.
    Nixl,
}

impl TransferBackend {
    /// The `--disaggregation-transfer-backend` value.
    pub fn name(self) -> &'static str {
        match self {
            TransferBackend::Mooncake => "mooncake",
            TransferBackend::Nixl => "nixl",
        }
    }
}

/// One copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Descriptor {
    /// Offset in the prefill rank's allocation.
    pub src: u64,
    /// Offset in the decode rank's allocation.
    pub dst: u64,
    /// Bytes.
    pub len: u64,
}

/// How a pair moves its KV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Path {
    /// Whole pages per layer buffer (`send_kvcache`).
    WholePages,
    /// Head slices per token slot (`send_kvcache_slice`).
    HeadSlices,
    /// A connection that sends nothing (MLA, smaller decode TP: one prefill rank is enough).
    Dummy,
}

impl Path {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Path::WholePages => "whole pages",
            Path::HeadSlices => "head slices",
            Path::Dummy => "dummy",
        }
    }
}

/// A descriptor that would leave the registered buffer it addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The descriptor.
    pub desc: Descriptor,
    /// Which side overflows, and by how much.
    pub reason: String,
}

/// Everything one prefill rank sends one decode rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairPlan {
    /// Prefill rank (index into the prefill [`SideLayout::ranks`]).
    pub prefill: usize,
    /// Decode rank in the decode pools, `None` when the rank the plan addresses does not exist.
    pub decode: Option<usize>,
    /// `pp0/tp1` of the prefill rank.
    pub prefill_label: String,
    /// `pp0/tp1` of the addressed decode rank.
    pub decode_label: String,
    /// Path taken.
    pub path: Path,
    /// Descriptors to execute, in SGLang's order.
    pub descriptors: Vec<Descriptor>,
    /// Descriptors set aside (out of the registered region).
    pub rejected: Vec<Rejected>,
    /// Calls into the transfer engine (batches).
    pub transfer_calls: u32,
    /// Prefill pages dropped because the decode sent fewer page indices (SGLang's workaround).
    pub truncated_pages: u32,
    /// Why SGLang would refuse to send at all, if it would.
    pub refused: Option<String>,
}

impl PairPlan {
    /// Payload bytes of the executed descriptors.
    pub fn bytes(&self) -> u64 {
        self.descriptors.iter().map(|d| d.len).sum()
    }
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TransferPlan {
    /// Engine modelled.
    pub backend: TransferBackend,
    /// One entry per connection, decode-rank-major as SGLang's decode ranks pull.
    pub pairs: Vec<PairPlan>,
}

impl TransferPlan {
    /// Executed descriptors.
    pub fn descriptors(&self) -> usize {
        self.pairs.iter().map(|p| p.descriptors.len()).sum()
    }
    /// Executed payload bytes.
    pub fn bytes(&self) -> u64 {
        self.pairs.iter().map(PairPlan::bytes).sum()
    }
    /// Descriptors set aside.
    pub fn rejected(&self) -> usize {
        self.pairs.iter().map(|p| p.rejected.len()).sum()
    }
    /// Bytes the set-aside descriptors would have written.
    pub fn rejected_bytes(&self) -> u64 {
        self.pairs.iter().flat_map(|p| &p.rejected).map(|r| r.desc.len).sum()
    }
}

/// What the planner reads.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// Model geometry.
    pub geometry: &'a KvGeometry,
    /// Engine modelled.
    pub backend: TransferBackend,
    /// Prefill pools.
    pub prefill: &'a SideLayout,
    /// The decode as the deployment describes it (rank mapping and head slicing follow it).
    pub decode_view: SideConfig,
    /// The decode pools that exist (addresses, item lengths).
    pub decode: &'a SideLayout,
    /// The request's prefill pages.
    pub prefill_pages: &'a [u32],
    /// The request's decode pages (allocated by the decode with its own page size).
    pub decode_pages: &'a [u32],
    /// The decode registers its V buffers before its K buffers (negative control).
    pub swap_kv: bool,
}

/// The planner cannot pair the sides at all (SGLang asserts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Decode PP must equal prefill PP or be 1.
    #[error("decode pp size ({decode}) should be equal to prefill pp size ({prefill}) or 1")]
    Pp {
        /// Prefill PP.
        prefill: u32,
        /// Decode PP.
        decode: u32,
    },
    /// The larger attention TP must be a multiple of the smaller.
    #[error("attention TP {prefill} (prefill) and {decode} (decode): the larger must be a multiple of the smaller")]
    Tp {
        /// Prefill attention TP.
        prefill: u32,
        /// Decode attention TP.
        decode: u32,
    },
}

/// SGLang's `group_concurrent_contiguous`: runs contiguous on both sides, as
/// `(first source page, first destination page, pages)`.
pub fn group_contiguous(src: &[u32], dst: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    for (&s, &d) in src.iter().zip(dst) {
        match out.last_mut() {
            Some((s0, d0, n)) if *s0 + *n == s && *d0 + *n == d => *n += 1,
            _ => out.push((s, d, 1)),
        }
    }
    out
}

/// Prefill TP ranks a decode TP rank pulls from, with whether each really sends.
pub fn target_tp_ranks(prefill_tp: u32, decode_tp: u32, decode_rank: u32, mla: bool) -> Vec<(u32, bool)> {
    if prefill_tp == decode_tp {
        vec![(decode_rank, true)]
    } else if decode_tp > prefill_tp {
        vec![(decode_rank / (decode_tp / prefill_tp), true)]
    } else {
        let ratio = prefill_tp / decode_tp;
        (decode_rank * ratio..(decode_rank + 1) * ratio).map(|r| (r, !mla || r == decode_rank * ratio)).collect()
    }
}

/// Builds the plan.
pub fn plan(input: &PlanInput<'_>) -> Result<TransferPlan, PlanError> {
    let p = input.prefill.config;
    let v = input.decode_view;
    if v.pp != p.pp && v.pp != 1 {
        return Err(PlanError::Pp { prefill: p.pp, decode: v.pp });
    }
    let (hi, lo) = (p.attn_tp.max(v.attn_tp), p.attn_tp.min(v.attn_tp));
    if lo == 0 || hi % lo != 0 {
        return Err(PlanError::Tp { prefill: p.attn_tp, decode: v.attn_tp });
    }
    let mla = input.geometry.is_mla();
    let mut pairs = Vec::new();
    for dpp in 0..v.pp {
        for dtp in 0..v.attn_tp {
            let stages: Vec<u32> = if p.pp == v.pp { vec![dpp] } else { (0..p.pp).collect() };
            for &ppp in &stages {
                for (ptp, real) in target_tp_ranks(p.attn_tp, v.attn_tp, dtp, mla) {
                    let src = input.prefill.rank_index(ppp, ptp).expect("prefill rank in range");
                    pairs.push(pair(input, src, dpp, dtp, real));
                }
            }
        }
    }
    Ok(TransferPlan { backend: input.backend, pairs })
}

/// Collects descriptors, setting aside those that leave their buffers.
struct Sink<'a> {
    src: &'a RankLayout,
    dst: &'a RankLayout,
    out: Vec<Descriptor>,
    rejected: Vec<Rejected>,
}

impl Sink<'_> {
    fn push(&mut self, src_buf: usize, dst_buf: usize, desc: Descriptor) {
        let check = |r: Range<u64>, at: u64, side: &str| -> Option<String> {
            let end = at.checked_add(desc.len)?;
            (at < r.start || end > r.end).then(|| {
                format!(
                    "{side} [{at}, {end}) leaves its registered buffer [{}, {}) by {} bytes",
                    r.start,
                    r.end,
                    end.saturating_sub(r.end).max(r.start.saturating_sub(at))
                )
            })
        };
        let bad = check(self.src.buffers[src_buf].range(), desc.src, "source")
            .or_else(|| check(self.dst.buffers[dst_buf].range(), desc.dst, "destination"));
        match bad {
            Some(reason) => self.rejected.push(Rejected { desc, reason }),
            None => self.out.push(desc),
        }
    }
}

fn pair(input: &PlanInput<'_>, src_index: usize, dpp: u32, dtp: u32, real: bool) -> PairPlan {
    let src = &input.prefill.ranks[src_index];
    let decode_label = format!("pp{dpp}/tp{dtp}");
    let dst_index = input.decode.rank_index(dpp, dtp);
    let mut plan = PairPlan {
        prefill: src_index,
        decode: dst_index,
        prefill_label: src.label(),
        decode_label,
        path: Path::Dummy,
        descriptors: Vec::new(),
        rejected: Vec::new(),
        transfer_calls: 0,
        truncated_pages: 0,
        refused: None,
    };
    if !real {
        return plan;
    }
    let mla = input.geometry.is_mla();
    plan.path = if mla || input.prefill.config.attn_tp == input.decode_view.attn_tp {
        Path::WholePages
    } else {
        Path::HeadSlices
    };
    let Some(dst_index) = dst_index else {
        plan.refused = Some(format!("decode rank {} does not exist in the decode pools", plan.decode_label));
        return plan;
    };
    let dst = &input.decode.ranks[dst_index];

    // Registered pointer lists (indices into each rank's buffers), in registration order.
    let n_src = src.layers.len();
    let src_list: Vec<usize> = (0..src.buffers.len()).collect();
    let mut dst_list: Vec<usize> = (0..dst.buffers.len()).collect();
    if input.swap_kv && !mla {
        let n = dst.layers.len();
        dst_list.rotate_left(n);
    }
    // get_mha_kv_ptrs_with_pp / get_mla_kv_ptrs_with_pp.
    let per = input.geometry.buffers_per_layer() as usize;
    let n_dst = dst_list.len() / per;
    let start = src.layers.start as usize;
    let mut params: Vec<(usize, usize)> = Vec::new();
    for part in 0..per {
        for l in 0..n_src {
            let s = src_list[part * n_src + l];
            let d_pos = if n_src == n_dst { part * n_dst + l } else { part * n_dst + start + l };
            let in_range = if n_src == n_dst { true } else { start + l < n_dst };
            match dst_list.get(d_pos).filter(|_| in_range) {
                Some(&d) => params.push((s, d)),
                None => {
                    plan.refused = Some(format!(
                        "layers of prefill stage {} ({}..{}) are out of range of the decode's {} registered layers",
                        src.pp_rank, src.layers.start, src.layers.end, n_dst
                    ));
                    return plan;
                }
            }
        }
    }

    // Page indices: the decode's list is sliced to the prefill's; a shorter one truncates it.
    let n = input.prefill_pages.len().min(input.decode_pages.len());
    plan.truncated_pages = (input.prefill_pages.len() - n) as u32;
    let (ppages, dpages) = (&input.prefill_pages[..n], &input.decode_pages[..n]);
    let mut sink = Sink { src, dst, out: Vec::new(), rejected: Vec::new() };
    let src_item = src.item_len();
    match plan.path {
        Path::WholePages => {
            plan.transfer_calls = 1;
            let runs = group_contiguous(ppages, dpages);
            for &(s, d) in &params {
                let (sb, db) = (src.buffers[s].offset, dst.buffers[d].offset);
                match input.backend {
                    TransferBackend::Mooncake => {
                        for &(p0, d0, len) in &runs {
                            let desc = Descriptor {
                                src: sb + u64::from(p0) * src_item,
                                dst: db + u64::from(d0) * src_item,
                                len: u64::from(len) * src_item,
                            };
                            sink.push(s, d, desc);
                        }
                    }
                    TransferBackend::Nixl => {
                        for (&pp, &dp) in ppages.iter().zip(dpages) {
                            let desc = Descriptor {
                                src: sb + u64::from(pp) * src_item,
                                dst: db + u64::from(dp) * src_item,
                                len: src_item,
                            };
                            sink.push(s, d, desc);
                        }
                    }
                }
            }
        }
        Path::HeadSlices => {
            let page_size = u64::from(src.page_size);
            let heads = u64::from(input.geometry.kv_heads());
            let ptp = u64::from(input.prefill.config.attn_tp);
            let vtp = u64::from(input.decode_view.attn_tp);
            let dst_item = dst.item_len();
            let src_hpr = (heads / ptp).max(1);
            let dst_hpr = (heads / vtp).max(1);
            let slice = dst_item / page_size / dst_hpr;
            let local = u64::from(src.tp_rank);
            let (src_head, count, dst_head) = if ptp > vtp {
                let unique = local / (ptp / heads).max(1);
                (0, src_hpr, (unique * src_hpr) % dst_hpr)
            } else {
                let unique = u64::from(dtp) / (vtp / heads).max(1);
                ((unique * dst_hpr) % src_hpr, dst_hpr, 0)
            };
            let len = count * slice;
            if len > dst_item / page_size {
                plan.refused =
                    Some(format!("slice size ({len}) exceeds target token slot size ({})", dst_item / page_size));
                return plan;
            }
            plan.transfer_calls = match input.backend {
                TransferBackend::Mooncake => params.len() as u32,
                TransferBackend::Nixl => 1,
            };
            let (src_tok, dst_tok) = (src_item / page_size, dst_item / page_size);
            for &(s, d) in &params {
                let (sb, db) = (src.buffers[s].offset, dst.buffers[d].offset);
                for (&pp, &dp) in ppages.iter().zip(dpages) {
                    for k in 0..page_size {
                        let desc = Descriptor {
                            src: sb + u64::from(pp) * src_item + k * src_tok + src_head * slice,
                            dst: db + u64::from(dp) * dst_item + k * dst_tok + dst_head * slice,
                            len,
                        };
                        sink.push(s, d, desc);
                    }
                }
            }
        }
        Path::Dummy => {}
    }
    plan.descriptors = sink.out;
    plan.rejected = sink.rejected;
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::KvDtype;
    use crate::geometry::KvAttention;
    use pdlaunch_core::deployment::AttentionKind;

    fn gqa(kv_heads: u32) -> KvGeometry {
        KvGeometry { kind: AttentionKind::Gqa, layers: 2, attention: KvAttention::Mha { kv_heads, head_dim: 8 } }
    }

    fn cfg(page_size: u32, attn_tp: u32) -> SideConfig {
        SideConfig { page_size, dtype: KvDtype::Bf16, attn_tp, pp: 1 }
    }

    #[test]
    fn runs_must_be_contiguous_on_both_sides() {
        assert_eq!(group_contiguous(&[1, 2, 3, 4], &[5, 6, 9, 10]), vec![(1, 5, 2), (3, 9, 2)]);
        assert_eq!(group_contiguous(&[1, 2, 4], &[7, 8, 9]), vec![(1, 7, 2), (4, 9, 1)]);
    }

    #[test]
    fn rank_mapping_follows_sglang() {
        assert_eq!(target_tp_ranks(2, 2, 1, false), vec![(1, true)]);
        // Decode TP 4 from prefill TP 2: decode ranks 2 and 3 pull from prefill rank 1.
        assert_eq!(target_tp_ranks(2, 4, 3, false), vec![(1, true)]);
        // Decode TP 2 from prefill TP 4: decode rank 1 pulls from prefill ranks 2 and 3.
        assert_eq!(target_tp_ranks(4, 2, 1, false), vec![(2, true), (3, true)]);
        // MLA: only the first of them really sends.
        assert_eq!(target_tp_ranks(4, 2, 1, true), vec![(2, true), (3, false)]);
    }

    fn plan_for(
        g: &KvGeometry,
        p: SideConfig,
        d: SideConfig,
        pp: &[u32],
        dp: &[u32],
        backend: TransferBackend,
    ) -> TransferPlan {
        let pl = SideLayout::new(g, p, 8).unwrap();
        let dl = SideLayout::new(g, d, 12).unwrap();
        plan(&PlanInput {
            geometry: g,
            backend,
            prefill: &pl,
            decode_view: d,
            decode: &dl,
            prefill_pages: pp,
            decode_pages: dp,
            swap_kv: false,
        })
        .unwrap()
    }

    #[test]
    fn equal_tp_uses_item_len_and_merges_runs() {
        let g = gqa(2);
        let t = plan_for(&g, cfg(4, 1), cfg(4, 1), &[1, 2, 3, 4], &[5, 6, 9, 10], TransferBackend::Mooncake);
        let p = &t.pairs[0];
        assert_eq!(p.path, Path::WholePages);
        // Row = 2 heads x 8 x 2 B = 32 B; item = 4 x 32 = 128 B; buffer = 9 pages (prefill) or
        // 13 pages (decode) of 128 B, each on a 256 B boundary.
        let item = 128u64;
        let (pbuf, dbuf) = (9 * item, 13 * item);
        let (pbuf, dbuf) = (pbuf.div_ceil(256) * 256, dbuf.div_ceil(256) * 256);
        assert_eq!(p.descriptors[0], Descriptor { src: item, dst: 5 * item, len: 2 * item });
        assert_eq!(p.descriptors[1], Descriptor { src: 3 * item, dst: 9 * item, len: 2 * item });
        // Layer 1 K, then layer 0 V (all K before all V).
        assert_eq!(p.descriptors[2].src, pbuf + item);
        assert_eq!(p.descriptors[4].dst, 2 * dbuf + 5 * item);
        assert_eq!(p.descriptors.len(), 2 * 4);
        assert_eq!(p.transfer_calls, 1);
        // NIXL's pre-registered lists move one page per descriptor.
        let n = plan_for(&g, cfg(4, 1), cfg(4, 1), &[1, 2, 3, 4], &[5, 6, 9, 10], TransferBackend::Nixl);
        assert_eq!(n.pairs[0].descriptors.len(), 4 * 4);
        assert!(n.pairs[0].descriptors.iter().all(|d| d.len == item));
    }

    #[test]
    fn hetero_tp_head_offsets_use_the_modulo_mapping() {
        // 8 KV heads, prefill TP 4 (2 heads per rank) -> decode TP 2 (4 heads per rank).
        let g = gqa(8);
        let t = plan_for(&g, cfg(1, 4), cfg(1, 2), &[1], &[3], TransferBackend::Mooncake);
        let head = 8 * 2u64; // head_dim x bf16
        let find = |prefill: usize| t.pairs.iter().find(|p| p.prefill == prefill).unwrap();
        // Prefill rank 2 feeds decode rank 1 at head offset (2 * 2) % 4 = 0, rank 3 at 2.
        let (r2, r3) = (find(2), find(3));
        assert_eq!(r2.decode_label, "pp0/tp1");
        assert_eq!(r2.path, Path::HeadSlices);
        let decode_row = 4 * head;
        assert_eq!(r2.descriptors[0].dst, 3 * decode_row);
        assert_eq!(r3.descriptors[0].dst, 3 * decode_row + 2 * head);
        assert_eq!(r2.descriptors[0].len, 2 * head);
        // One descriptor per token slot, layer buffer and page; one batch per layer buffer.
        assert_eq!(r2.descriptors.len(), 4);
        assert_eq!(r2.transfer_calls, 4);
    }

    #[test]
    fn hetero_tp_with_replicated_decode_heads() {
        // 2 KV heads, prefill TP 1 -> decode TP 4: decode ranks 0,1 hold head 0; 2,3 head 1.
        let g = gqa(2);
        let t = plan_for(&g, cfg(1, 1), cfg(1, 4), &[1], &[2], TransferBackend::Nixl);
        let head = 16u64;
        let src_head = |d: &str| t.pairs.iter().find(|p| p.decode_label == d).unwrap().descriptors[0].src % (2 * head);
        assert_eq!(src_head("pp0/tp0"), 0);
        assert_eq!(src_head("pp0/tp1"), 0);
        assert_eq!(src_head("pp0/tp2"), head);
        assert_eq!(src_head("pp0/tp3"), head);
    }

    #[test]
    fn page_size_mismatch_writes_with_the_prefill_item_len() {
        // Prefill pages of 16, decode pages of 4: the decode sends 4x more page indices; SGLang
        // slices them to the prefill's count and addresses them with the prefill's item length.
        let g = gqa(2);
        let t = plan_for(&g, cfg(16, 1), cfg(4, 1), &[1], &[7, 8, 9, 10], TransferBackend::Mooncake);
        let p = &t.pairs[0];
        let prefill_item = 16 * 32u64;
        assert!(p.descriptors.iter().chain(p.rejected.iter().map(|r| &r.desc)).all(|d| d.len == prefill_item));
        // Page 7 at the prefill's item length is byte 7*512 = decode page 28: past the decode
        // buffer's 13 pages, so set aside rather than executed.
        assert_eq!(p.descriptors.len(), 0);
        assert_eq!(p.rejected.len(), 4);
    }

    #[test]
    fn unpairable_sides_are_errors() {
        let g = gqa(8);
        let pl = SideLayout::new(&g, cfg(1, 4), 2).unwrap();
        let dl = SideLayout::new(&g, cfg(1, 8), 2).unwrap();
        let mut input = PlanInput {
            geometry: &g,
            backend: TransferBackend::Mooncake,
            prefill: &pl,
            decode_view: SideConfig { attn_tp: 3, ..cfg(1, 3) },
            decode: &dl,
            prefill_pages: &[1],
            decode_pages: &[1],
            swap_kv: false,
        };
        assert!(matches!(plan(&input), Err(PlanError::Tp { .. })));
        input.decode_view = SideConfig { pp: 3, ..cfg(1, 8) };
        assert!(matches!(plan(&input), Err(PlanError::Pp { .. })));
    }
}
