//! The regions each side registers with its transfer library, as SGLang's KV managers register
//! them (`get_contiguous_buf_infos`, `register_buffer_to_engine` in
//! `disaggregation/{nixl,mooncake}/conn.py`): every layer buffer of every rank on its own,
//! all K buffers then all V buffers (MHA), or one latent buffer per layer (MLA); plus the
//! contiguous reference region the benchmark copy uses. Addresses are those the library sees
//! (`bases`, one per rank's pool), since the Mooncake agent maps the pools at its own addresses.

use crate::layout::{RankLayout, SideLayout};

use super::wire::RankInfo;

/// One registered region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Rank index in the side's layout.
    pub rank: usize,
    /// Buffer index in the rank's registration order.
    pub buffer: usize,
    /// Address as the library sees it.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
}

/// The regions of `side` whose rank pools start at `bases`.
pub fn regions(side: &SideLayout, bases: &[u64]) -> Vec<Region> {
    side.ranks
        .iter()
        .zip(bases)
        .enumerate()
        .flat_map(|(rank, (r, &base))| {
            r.buffers.iter().enumerate().map(move |(buffer, b)| Region {
                rank,
                buffer,
                addr: base + b.offset,
                len: b.len,
            })
        })
        .collect()
}

/// What the decode sends about its ranks: each buffer's address and length.
pub fn rank_infos(side: &SideLayout, bases: &[u64]) -> Vec<RankInfo> {
    side.ranks
        .iter()
        .zip(bases)
        .map(|(r, &base)| RankInfo {
            label: r.label(),
            ptrs: r.buffers.iter().map(|b| base + b.offset).collect(),
            lens: r.buffers.iter().map(|b| b.len).collect(),
        })
        .collect()
}

/// The address of `len` bytes at `offset` of a rank laid out as `layout`, from the buffer
/// addresses the peer sent: the buffer holding `offset`, plus the offset within it (SGLang's
/// `dst_kv_ptrs[layer] + index * item_len`). `None` when the bytes are not inside one buffer.
pub fn resolve(layout: &RankLayout, info: &RankInfo, offset: u64, len: u64) -> Option<u64> {
    let b = layout.locate(offset).buffer?;
    let buf = &layout.buffers[b];
    let within = offset - buf.offset;
    (within + len <= *info.lens.get(b)?).then(|| info.ptrs[b] + within)
}

/// Checks that the peer's ranks have the layout this side planned against.
pub fn check_peer(side: &SideLayout, infos: &[RankInfo]) -> Result<(), String> {
    if side.ranks.len() != infos.len() {
        return Err(format!("the decode registered {} rank(s), the plan expects {}", infos.len(), side.ranks.len()));
    }
    for (r, i) in side.ranks.iter().zip(infos) {
        let lens: Vec<u64> = r.buffers.iter().map(|b| b.len).collect();
        if lens != i.lens || i.ptrs.len() != lens.len() {
            return Err(format!(
                "decode rank {} registered {} buffer(s) of other sizes than planned ({} of {} bytes)",
                i.label,
                i.lens.len(),
                lens.len(),
                lens.first().copied().unwrap_or(0)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::KvDtype;
    use crate::geometry::{KvAttention, KvGeometry};
    use crate::layout::SideConfig;
    use pdlaunch_core::deployment::AttentionKind;

    #[test]
    fn regions_follow_sglang_order_and_resolve() {
        let g = KvGeometry {
            kind: AttentionKind::Gqa,
            layers: 2,
            attention: KvAttention::Mha { kv_heads: 4, head_dim: 8 },
        };
        let cfg = SideConfig { page_size: 4, dtype: KvDtype::Bf16, attn_tp: 2, pp: 1 };
        let side = SideLayout::new(&g, cfg, 3).unwrap();
        let bases = [1 << 20, 1 << 30];
        let rs = regions(&side, &bases);
        // 2 ranks x (2 K + 2 V) buffers.
        assert_eq!(rs.len(), 8);
        assert_eq!(rs[4].rank, 1);
        assert_eq!(rs[4].addr, (1 << 30) + side.ranks[1].buffers[0].offset);
        let infos = rank_infos(&side, &bases);
        check_peer(&side, &infos).unwrap();
        let r = &side.ranks[0];
        let b1 = r.buffers[1];
        assert_eq!(resolve(r, &infos[0], b1.offset + 16, 32), Some(infos[0].ptrs[1] + 16));
        // Running past the buffer's end is refused.
        assert_eq!(resolve(r, &infos[0], b1.offset + b1.len - 8, 32), None);
    }
}
