//! SGLang's KV pool layout on every rank of one side (`memory_pool.py`):
//!
//! - MHA/GQA: per layer a K buffer and a V buffer of `(pages + 1) * page_size` token rows; a row
//!   holds this rank's KV heads back to back (`heads * head_dim * width` bytes). Ranks hold
//!   `max(1, kv_heads / attn_tp)` heads; when `attn_tp > kv_heads` consecutive ranks share a head.
//! - MLA: per layer one latent buffer, rows of `kv_lora_rank + qk_rope_head_dim` elements, the
//!   same on every attention-TP rank (not sharded).
//! - Page 0 is padding ("dummy outputs from padded tokens"); requests get pages from 1 on.
//! - A PP stage holds only its layers ([`pp_layers`], SGLang's `get_pp_indices`).
//!
//! Buffers are registered with the transfer engine in SGLang's order, all K then all V
//! (`get_contiguous_buf_infos`); here they sit back to back in one allocation per rank, each
//! starting on a 256-byte boundary, so that every address is a `(rank, offset)` pair.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::dtype::KvDtype;
use crate::geometry::KvGeometry;

/// Alignment of each layer buffer inside a rank's allocation (torch allocations are at least
/// this aligned, and the GPU gather kernel's 16-byte path needs it).
pub const BUFFER_ALIGN: u64 = 256;

/// The settings of one side that decide its pool layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideConfig {
    /// Effective tokens per page.
    pub page_size: u32,
    /// Pool element type.
    pub dtype: KvDtype,
    /// Attention TP size (`tp / attn_dp / attn_cp`).
    pub attn_tp: u32,
    /// Pipeline stages.
    pub pp: u32,
}

/// Which buffer of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BufKind {
    /// Keys (MHA).
    K,
    /// Values (MHA).
    V,
    /// The MLA latent.
    Latent,
}

impl BufKind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            BufKind::K => "K",
            BufKind::V => "V",
            BufKind::Latent => "KV",
        }
    }
    /// The code stored in canary headers.
    pub fn code(self) -> u8 {
        match self {
            BufKind::K => 0,
            BufKind::V => 1,
            BufKind::Latent => 2,
        }
    }
    /// The kind for a canary header code.
    pub fn from_code(c: u8) -> Option<BufKind> {
        match c {
            0 => Some(BufKind::K),
            1 => Some(BufKind::V),
            2 => Some(BufKind::Latent),
            _ => None,
        }
    }
}

/// One layer buffer inside a rank's allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Buffer {
    /// K, V or latent.
    pub kind: BufKind,
    /// Global layer index.
    pub layer: u32,
    /// Byte offset in the rank's allocation.
    pub offset: u64,
    /// Bytes (`(pages + 1) * item_len`).
    pub len: u64,
}

impl Buffer {
    /// The byte range.
    pub fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.len
    }
}

/// The pool of one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankLayout {
    /// Pipeline stage.
    pub pp_rank: u32,
    /// Attention-TP rank within the stage.
    pub tp_rank: u32,
    /// Global layers this stage holds.
    pub layers: Range<u32>,
    /// Global KV heads this rank holds (`0..1` for MLA).
    pub heads: Range<u32>,
    /// Bytes of one head slice (one head of one token of one buffer; the latent row for MLA).
    pub head_bytes: u64,
    /// Bytes of one token row of one buffer.
    pub row_bytes: u64,
    /// Tokens per page.
    pub page_size: u32,
    /// Usable pages (page 0, the padding page, comes on top).
    pub pages: u32,
    /// Buffers in registration order.
    pub buffers: Vec<Buffer>,
    /// Bytes of the whole allocation.
    pub pool_bytes: u64,
}

/// Where a byte of a rank's allocation lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    /// Index into [`RankLayout::buffers`], `None` in alignment padding.
    pub buffer: Option<usize>,
    /// Page within the buffer.
    pub page: u32,
    /// Token slot within the page.
    pub slot: u32,
    /// Byte within the token row.
    pub byte: u64,
}

impl RankLayout {
    /// SGLang's `kv_item_len`: one page of one buffer.
    pub fn item_len(&self) -> u64 {
        self.row_bytes * u64::from(self.page_size)
    }

    /// The buffer of `kind` for global `layer`, as an index into [`Self::buffers`].
    pub fn buffer_index(&self, kind: BufKind, layer: u32) -> Option<usize> {
        if !self.layers.contains(&layer) {
            return None;
        }
        let l = (layer - self.layers.start) as usize;
        let n = self.layers.len();
        let i = match kind {
            BufKind::K | BufKind::Latent => l,
            BufKind::V => n + l,
        };
        self.buffers.get(i).filter(|b| b.kind == kind).map(|_| i)
    }

    /// Byte offset of token `slot` of `page` in buffer `index`.
    pub fn slot_offset(&self, index: usize, page: u32, slot: u32) -> u64 {
        self.buffers[index].offset + (u64::from(page) * u64::from(self.page_size) + u64::from(slot)) * self.row_bytes
    }

    /// Which buffer, page, slot and row byte `offset` falls in.
    pub fn locate(&self, offset: u64) -> Place {
        let i = self.buffers.partition_point(|b| b.offset <= offset);
        if i > 0 {
            let b = &self.buffers[i - 1];
            if offset < b.offset + b.len {
                let rel = offset - b.offset;
                let row = rel / self.row_bytes;
                let ps = u64::from(self.page_size);
                return Place {
                    buffer: Some(i - 1),
                    page: (row / ps) as u32,
                    slot: (row % ps) as u32,
                    byte: rel % self.row_bytes,
                };
            }
        }
        Place { buffer: None, page: 0, slot: 0, byte: 0 }
    }

    /// A label such as `pp0/tp1`.
    pub fn label(&self) -> String {
        format!("pp{}/tp{}", self.pp_rank, self.tp_rank)
    }
}

/// Why a side's layout cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A size is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// More pipeline stages than layers.
    #[error("pp size {pp} exceeds the model's {layers} layers")]
    PpTooLarge {
        /// PP size.
        pp: u32,
        /// Layers.
        layers: u32,
    },
    /// KV heads cannot be spread over the ranks.
    #[error("{kv_heads} KV heads cannot be split over attention TP {attn_tp}: SGLang needs one to divide the other")]
    HeadSplit {
        /// KV heads.
        kv_heads: u32,
        /// Attention TP.
        attn_tp: u32,
    },
    /// Sizes overflow.
    #[error("the pool size overflows 64 bits")]
    Overflow,
}

/// All ranks of one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SideLayout {
    /// The configuration the layout follows.
    pub config: SideConfig,
    /// Ranks, stage-major: index `pp_rank * attn_tp + tp_rank`.
    pub ranks: Vec<RankLayout>,
}

/// SGLang's PP layer split (`get_pp_indices`): `layers / pp` each, the remainder going one
/// layer each to the last stages.
pub fn pp_layers(layers: u32, pp_rank: u32, pp: u32) -> Range<u32> {
    let base = layers / pp;
    let rem = layers % pp;
    if pp_rank >= pp - rem {
        let start = pp_rank * (base + 1) - (pp - rem);
        start..start + base + 1
    } else {
        let start = pp_rank * base;
        start..start + base
    }
}

/// The global KV heads attention-TP rank `rank` holds: a contiguous share when there are at
/// least as many heads as ranks, else one head shared by `attn_tp / kv_heads` consecutive ranks.
pub fn heads_of_rank(kv_heads: u32, attn_tp: u32, rank: u32) -> Range<u32> {
    if attn_tp <= kv_heads {
        let per = kv_heads / attn_tp;
        rank * per..(rank + 1) * per
    } else {
        let h = rank / (attn_tp / kv_heads);
        h..h + 1
    }
}

/// True when SGLang can spread `kv_heads` over `attn_tp` ranks.
pub fn heads_split_ok(kv_heads: u32, attn_tp: u32) -> bool {
    kv_heads > 0 && attn_tp > 0 && (kv_heads.is_multiple_of(attn_tp) || attn_tp.is_multiple_of(kv_heads))
}

fn align(x: u64) -> u64 {
    x.div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN
}

impl SideLayout {
    /// The layout of every rank, with `pages` usable pages per buffer (plus the padding page).
    pub fn new(geometry: &KvGeometry, config: SideConfig, pages: u32) -> Result<SideLayout, LayoutError> {
        if config.page_size == 0 {
            return Err(LayoutError::Zero("page size"));
        }
        if config.attn_tp == 0 {
            return Err(LayoutError::Zero("attention TP"));
        }
        if config.pp == 0 {
            return Err(LayoutError::Zero("pp size"));
        }
        if config.pp > geometry.layers {
            return Err(LayoutError::PpTooLarge { pp: config.pp, layers: geometry.layers });
        }
        let mla = geometry.is_mla();
        if !mla && !heads_split_ok(geometry.kv_heads(), config.attn_tp) {
            return Err(LayoutError::HeadSplit { kv_heads: geometry.kv_heads(), attn_tp: config.attn_tp });
        }
        let head_bytes = u64::from(geometry.slice_elems()) * u64::from(config.dtype.width());
        let mut ranks = Vec::new();
        for pp_rank in 0..config.pp {
            let layers = pp_layers(geometry.layers, pp_rank, config.pp);
            for tp_rank in 0..config.attn_tp {
                let heads = if mla { 0..1 } else { heads_of_rank(geometry.kv_heads(), config.attn_tp, tp_rank) };
                let row_bytes = head_bytes * u64::from(heads.end - heads.start);
                let len = (u64::from(pages) + 1)
                    .checked_mul(u64::from(config.page_size))
                    .and_then(|rows| rows.checked_mul(row_bytes))
                    .ok_or(LayoutError::Overflow)?;
                let kinds: &[BufKind] = if mla { &[BufKind::Latent] } else { &[BufKind::K, BufKind::V] };
                let mut buffers = Vec::new();
                let mut offset = 0u64;
                for &kind in kinds {
                    for layer in layers.clone() {
                        buffers.push(Buffer { kind, layer, offset, len });
                        offset = offset.checked_add(align(len)).ok_or(LayoutError::Overflow)?;
                    }
                }
                ranks.push(RankLayout {
                    pp_rank,
                    tp_rank,
                    layers: layers.clone(),
                    heads,
                    head_bytes,
                    row_bytes,
                    page_size: config.page_size,
                    pages,
                    buffers,
                    pool_bytes: offset,
                });
            }
        }
        Ok(SideLayout { config, ranks })
    }

    /// Index of (stage, TP rank) in [`Self::ranks`], when it exists.
    pub fn rank_index(&self, pp_rank: u32, tp_rank: u32) -> Option<usize> {
        (pp_rank < self.config.pp && tp_rank < self.config.attn_tp)
            .then(|| (pp_rank * self.config.attn_tp + tp_rank) as usize)
    }

    /// Bytes of all ranks' allocations.
    pub fn total_bytes(&self) -> u64 {
        self.ranks.iter().map(|r| r.pool_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::KvAttention;
    use pdlaunch_core::deployment::AttentionKind;

    fn gqa(layers: u32, kv_heads: u32, head_dim: u32) -> KvGeometry {
        KvGeometry { kind: AttentionKind::Gqa, layers, attention: KvAttention::Mha { kv_heads, head_dim } }
    }

    fn cfg(page_size: u32, attn_tp: u32, pp: u32) -> SideConfig {
        SideConfig { page_size, dtype: KvDtype::Bf16, attn_tp, pp }
    }

    #[test]
    fn pp_split_matches_sglang() {
        // 5 layers over 2 stages: the extra layer goes to the last stage.
        assert_eq!(pp_layers(5, 0, 2), 0..2);
        assert_eq!(pp_layers(5, 1, 2), 2..5);
        // 10 over 4: 2, 2, 3, 3.
        let r: Vec<_> = (0..4).map(|i| pp_layers(10, i, 4)).collect();
        assert_eq!(r, vec![0..2, 2..4, 4..7, 7..10]);
        assert_eq!(pp_layers(8, 1, 2), 4..8);
    }

    #[test]
    fn heads_shard_and_replicate() {
        assert_eq!(heads_of_rank(8, 2, 1), 4..8);
        assert_eq!(heads_of_rank(2, 8, 3), 0..1);
        assert_eq!(heads_of_rank(2, 8, 4), 1..2);
        assert!(heads_split_ok(8, 4) && heads_split_ok(2, 8) && !heads_split_ok(6, 4));
    }

    #[test]
    fn llama_8b_item_len() {
        // Llama-3.1-8B at TP 1: 8 heads x 128 x 2 B = 2 KiB rows, 16-token pages = 32 KiB items.
        let l = SideLayout::new(&gqa(32, 8, 128), cfg(16, 1, 1), 10).unwrap();
        let r = &l.ranks[0];
        assert_eq!(r.row_bytes, 2048);
        assert_eq!(r.item_len(), 32768);
        assert_eq!(r.buffers.len(), 64);
        assert_eq!(r.buffers[32].kind, BufKind::V);
        assert_eq!(r.buffers[32].layer, 0);
        assert_eq!(r.buffers[0].len, 11 * 32768);
    }

    #[test]
    fn deepseek_mla_row_is_not_sharded() {
        let g = KvGeometry {
            kind: AttentionKind::Mla,
            layers: 61,
            attention: KvAttention::Mla { kv_lora_rank: 512, qk_rope_head_dim: 64 },
        };
        let l = SideLayout::new(&g, cfg(64, 8, 1), 2).unwrap();
        assert_eq!(l.ranks.len(), 8);
        assert!(l.ranks.iter().all(|r| r.row_bytes == 1152 && r.buffers.len() == 61));
    }

    #[test]
    fn locate_round_trips() {
        let l = SideLayout::new(&gqa(2, 4, 16), cfg(4, 2, 1), 3).unwrap();
        let r = &l.ranks[1];
        let i = r.buffer_index(BufKind::V, 1).unwrap();
        let off = r.slot_offset(i, 2, 3) + 5;
        let p = r.locate(off);
        assert_eq!((p.buffer, p.page, p.slot, p.byte), (Some(i), 2, 3, 5));
        assert!(r.buffer_index(BufKind::Latent, 0).is_none());
    }

    #[test]
    fn pp_stage_holds_its_layers_only() {
        let l = SideLayout::new(&gqa(4, 2, 16), cfg(1, 1, 2), 1).unwrap();
        assert_eq!(l.ranks[1].layers, 2..4);
        assert!(l.ranks[1].buffer_index(BufKind::K, 1).is_none());
        assert_eq!(l.rank_index(1, 0), Some(1));
    }

    #[test]
    fn bad_splits_are_errors() {
        assert!(matches!(SideLayout::new(&gqa(4, 6, 16), cfg(1, 4, 1), 1), Err(LayoutError::HeadSplit { .. })));
        assert!(matches!(SideLayout::new(&gqa(2, 2, 16), cfg(1, 1, 3), 1), Err(LayoutError::PpTooLarge { .. })));
    }
}
