//! The independent ground truth: where every (layer, K/V, token, head) slice of the request
//! lives in a side's pools, computed token by token from that side's own layout (its page
//! size, dtype, head ownership and page indices), with none of SGLang's transfer arithmetic.
//! Applied to the prefill it says where to write canaries; applied to the decode it says
//! where the decode's attention kernels will read them.

use serde::{Deserialize, Serialize};

use crate::layout::{BufKind, SideLayout};

/// What a slice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Coord {
    /// Global layer.
    pub layer: u32,
    /// K, V or latent.
    pub kind: BufKind,
    /// Token index within the request.
    pub token: u32,
    /// Global KV head (0 for MLA).
    pub head: u32,
}

impl std::fmt::Display for Coord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.kind == BufKind::Latent {
            write!(f, "layer {} {} token {}", self.layer, self.kind.name(), self.token)
        } else {
            write!(f, "layer {} {} token {} head {}", self.layer, self.kind.name(), self.token, self.head)
        }
    }
}

/// One slice at its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slice {
    /// Rank index in the side's layout.
    pub rank: u32,
    /// Byte offset in the rank's allocation.
    pub offset: u64,
    /// Bytes.
    pub len: u32,
    /// What it holds.
    pub coord: Coord,
}

/// Every slice of a request of `tokens` tokens on pages `pages` of `side`. Replicated heads
/// appear once per rank holding them.
pub fn slices(side: &SideLayout, pages: &[u32], tokens: u32) -> Vec<Slice> {
    let mut out = Vec::new();
    for (r, rank) in side.ranks.iter().enumerate() {
        let ps = rank.page_size;
        for (i, buf) in rank.buffers.iter().enumerate() {
            for token in 0..tokens {
                let page = pages[(token / ps) as usize];
                let row = rank.slot_offset(i, page, token % ps);
                for (k, head) in rank.heads.clone().enumerate() {
                    out.push(Slice {
                        rank: r as u32,
                        offset: row + k as u64 * rank.head_bytes,
                        len: rank.head_bytes as u32,
                        coord: Coord { layer: buf.layer, kind: buf.kind, token, head },
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::KvDtype;
    use crate::geometry::{KvAttention, KvGeometry};
    use crate::layout::SideConfig;
    use pdlaunch_core::deployment::AttentionKind;

    #[test]
    fn replicated_heads_appear_on_each_rank() {
        let g = KvGeometry {
            kind: AttentionKind::Gqa,
            layers: 1,
            attention: KvAttention::Mha { kv_heads: 2, head_dim: 8 },
        };
        let side =
            SideLayout::new(&g, SideConfig { page_size: 4, dtype: KvDtype::Bf16, attn_tp: 4, pp: 1 }, 2).unwrap();
        let s = slices(&side, &[2], 3);
        // 4 ranks x 2 buffers x 3 tokens x 1 head.
        assert_eq!(s.len(), 24);
        let heads: Vec<u32> =
            s.iter().filter(|x| x.coord.token == 0 && x.coord.kind == BufKind::K).map(|x| x.coord.head).collect();
        assert_eq!(heads, vec![0, 0, 1, 1]);
        // Token 1 of page 2: row (2*4+1) of a 16-byte row.
        let t1 = s.iter().find(|x| x.rank == 0 && x.coord.token == 1 && x.coord.kind == BufKind::K).unwrap();
        assert_eq!(t1.offset, 9 * 16);
    }
}
