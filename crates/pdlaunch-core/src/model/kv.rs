//! KV bytes per token on one GPU, the way SGLang's pools lay them out: MHA/GQA pools hold a K and
//! a V row per layer with the rank's share of the KV heads (`max(1, kv_heads / attn_tp)`, heads
//! replicated when attention TP exceeds them); MLA pools hold one latent row
//! (`kv_lora_rank + qk_rope_head_dim`) per layer on every rank, not sharded by TP. Pipeline
//! parallelism gives each rank its stage's layers.

use super::DSA_ARCHS;
use super::{AttentionKind, Geometry};

/// How one KV element is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvElement {
    /// The element type, e.g. `bfloat16` or `fp8_e4m3`.
    pub name: &'static str,
    /// Storage bits per element times 32, so sub-byte formats with block scales stay exact.
    pub bits_x32: u64,
}

impl KvElement {
    /// 16-bit brain float.
    pub const BF16: KvElement = KvElement { name: "bfloat16", bits_x32: 16 * 32 };
    /// 16-bit float.
    pub const FP16: KvElement = KvElement { name: "float16", bits_x32: 16 * 32 };
    /// 32-bit float.
    pub const FP32: KvElement = KvElement { name: "float32", bits_x32: 32 * 32 };
    /// FP8 E4M3, stored as one byte.
    pub const FP8_E4M3: KvElement = KvElement { name: "fp8_e4m3", bits_x32: 8 * 32 };
    /// FP8 E5M2, stored as one byte.
    pub const FP8_E5M2: KvElement = KvElement { name: "fp8_e5m2", bits_x32: 8 * 32 };
    /// MXFP8: one byte plus a UE8M0 scale per 32 elements.
    pub const MXFP8: KvElement = KvElement { name: "mxfp8", bits_x32: 8 * 32 + 8 };
    /// FP4 (E2M1) with an 8-bit scale per 16 elements (`nvfp4`, `fp4_mx_block16`).
    pub const FP4: KvElement = KvElement { name: "fp4_e2m1", bits_x32: 4 * 32 + 16 };

    /// The element a `--kv-cache-dtype` value stores. `auto` follows the checkpoint: FP8 when its
    /// quantization asks for an FP8 KV cache, else the model dtype (`--dtype`, or the config's
    /// `torch_dtype`; float32 checkpoints, and configs without a dtype, are served in 16 bits).
    pub fn resolve(
        kv_cache_dtype: &str,
        model_dtype: Option<&str>,
        kv_cache_quant_algo: Option<&str>,
    ) -> Result<KvElement, String> {
        Ok(match kv_cache_dtype {
            "auto" => {
                if kv_cache_quant_algo == Some("FP8") {
                    return Ok(KvElement::FP8_E4M3);
                }
                match model_dtype {
                    Some("bfloat16") => KvElement::BF16,
                    Some("float16") | Some("half") | Some("float32") => KvElement::FP16,
                    Some("float") => KvElement::FP32,
                    Some(other) => return Err(format!("the model dtype {other:?} is not a KV element type")),
                    // No dtype in the config: SGLang treats it as float32 and serves it in 16 bits.
                    None => KvElement { name: "16-bit (model dtype)", bits_x32: 16 * 32 },
                }
            }
            "bf16" | "bfloat16" => KvElement::BF16,
            "fp8_e4m3" => KvElement::FP8_E4M3,
            "fp8_e5m2" => KvElement::FP8_E5M2,
            "mxfp8" => KvElement::MXFP8,
            "nvfp4" | "fp4_mx_block16" | "fp4_e2m1" => KvElement::FP4,
            other => return Err(format!("unknown KV cache dtype {other:?}")),
        })
    }

    /// Bytes of `n` elements (rounded down; exact for the row sizes models use).
    pub fn bytes(self, n: u64) -> u64 {
        n.saturating_mul(self.bits_x32) / 256
    }
}

/// KV bytes per token held by one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvBytes {
    /// Layers on the rank (its pipeline stage; the largest stage when they differ).
    pub layers: u32,
    /// Of which full-attention layers.
    pub full_layers: u32,
    /// Of which sliding-window layers (hybrid models; they keep only the window per request).
    pub sliding_layers: u32,
    /// KV heads on the rank (MHA/GQA).
    pub kv_heads_per_rank: Option<u32>,
    /// Bytes of one token in one layer on the rank (K and V together for MHA/GQA).
    pub row_bytes: u64,
    /// Bytes of one token over all the rank's layers: `row_bytes * layers`.
    pub per_token: u64,
}

/// Layers of the largest pipeline stage.
pub fn layers_on_rank(layers: u32, pp: u32) -> u32 {
    layers.div_ceil(pp.max(1))
}

/// The DSA (DeepSeek sparse attention) FP8 row: 512 FP8 latent values, a 4-byte scale per 128 of
/// them, and the 64 rope values in 16 bits (SGLang's scaled layout; the `trtllm` DSA backend
/// keeps 576).
const DSA_FP8_ROW: u64 = 512 + 512 / 128 * 4 + 64 * 2;

/// KV bytes per token on one GPU of a server with attention TP `attn_tp` and pipeline size `pp`.
pub fn kv_bytes_per_token(g: &Geometry, attn_tp: u32, pp: u32, e: KvElement) -> Result<KvBytes, String> {
    let layers = layers_on_rank(g.layers, pp);
    let full = match (g.hybrid_swa, g.full_attention_layers) {
        (true, Some(f)) => layers_on_rank(f, pp).min(layers),
        _ => layers,
    };
    let (kv_heads_per_rank, row_bytes) = match g.attention {
        AttentionKind::Mla => {
            let (Some(rank), Some(rope)) = (g.kv_lora_rank, g.qk_rope_head_dim) else {
                return Err("the geometry lacks kv_lora_rank or qk_rope_head_dim".into());
            };
            let dsa = g.architecture.as_deref().is_some_and(|a| DSA_ARCHS.contains(&a));
            let row = if dsa && e.bits_x32 == 8 * 32 && rank == 512 && rope == 64 {
                DSA_FP8_ROW
            } else {
                e.bytes(u64::from(rank) + u64::from(rope))
            };
            (None, row)
        }
        AttentionKind::Mha | AttentionKind::Gqa => {
            let (Some(kv), Some(d)) = (g.kv_heads, g.head_dim) else {
                return Err("the geometry lacks kv_heads or head_dim".into());
            };
            let local = (kv / attn_tp.max(1)).max(1);
            let v = g.v_head_dim.unwrap_or(d);
            (Some(local), e.bytes(u64::from(local).saturating_mul(u64::from(d) + u64::from(v))))
        }
    };
    Ok(KvBytes {
        layers,
        full_layers: full,
        sliding_layers: layers - full,
        kv_heads_per_rank,
        row_bytes,
        per_token: row_bytes.saturating_mul(u64::from(layers)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gqa(layers: u32, kv: u32, d: u32) -> Geometry {
        let mut g = Geometry::new(AttentionKind::Gqa, layers);
        g.kv_heads = Some(kv);
        g.head_dim = Some(d);
        g
    }

    #[test]
    fn gqa_shards_heads_and_replicates_past_them() {
        let g = gqa(32, 8, 128);
        // 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes.
        assert_eq!(kv_bytes_per_token(&g, 1, 1, KvElement::BF16).unwrap().per_token, 131_072);
        assert_eq!(kv_bytes_per_token(&g, 8, 1, KvElement::BF16).unwrap().per_token, 16_384);
        // TP 16 > 8 heads: each rank keeps one (replicated) head.
        let r = kv_bytes_per_token(&g, 16, 1, KvElement::BF16).unwrap();
        assert_eq!((r.kv_heads_per_rank, r.per_token), (Some(1), 16_384));
        // PP 3 over 32 layers: the largest stage has 11.
        let r = kv_bytes_per_token(&g, 1, 3, KvElement::FP8_E4M3).unwrap();
        assert_eq!((r.layers, r.per_token), (11, 11 * 2 * 8 * 128));
    }

    #[test]
    fn element_types_follow_sglang() {
        assert_eq!(KvElement::resolve("auto", Some("bfloat16"), None).unwrap(), KvElement::BF16);
        assert_eq!(KvElement::resolve("auto", Some("bfloat16"), Some("FP8")).unwrap(), KvElement::FP8_E4M3);
        assert_eq!(KvElement::resolve("auto", Some("float32"), None).unwrap().bits_x32, 512);
        assert_eq!(KvElement::resolve("auto", None, None).unwrap().bits_x32, 512);
        assert!(KvElement::resolve("auto", Some("int8"), None).unwrap_err().contains("not a KV element type"));
        assert_eq!(KvElement::resolve("bf16", None, None).unwrap(), KvElement::BF16);
        assert_eq!(KvElement::MXFP8.bytes(576), 594);
        assert_eq!(KvElement::FP4.bytes(128), 72);
        assert!(KvElement::resolve("int8", None, None).is_err());
    }
}
