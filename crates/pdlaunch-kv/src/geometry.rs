//! The model facts the KV pools depend on, checked complete.

use pdlaunch_core::deployment::{AttentionKind, Geometry};
use serde::{Deserialize, Serialize};

/// What one token of one layer stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum KvAttention {
    /// MHA or GQA: a K and a V vector per KV head (`v_head_dim` = `head_dim`).
    Mha {
        /// KV heads of the whole model.
        kv_heads: u32,
        /// Elements per head.
        head_dim: u32,
    },
    /// MLA: one latent row (`kv_lora_rank + qk_rope_head_dim` elements), replicated on every
    /// attention-TP rank.
    Mla {
        /// `kv_lora_rank`.
        kv_lora_rank: u32,
        /// `qk_rope_head_dim`.
        qk_rope_head_dim: u32,
    },
}

/// KV geometry of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvGeometry {
    /// Attention kind as the user named it (GQA is MHA with fewer KV heads).
    pub kind: AttentionKind,
    /// Hidden layers.
    pub layers: u32,
    /// Per-layer content.
    pub attention: KvAttention,
}

/// A geometry field the smoke test needs is missing or zero.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model geometry: {0}")]
pub struct GeometryError(pub String);

impl KvGeometry {
    /// Checks the deployment schema's geometry for what the pools need; errors name the flag
    /// that supplies the missing value.
    pub fn from_core(g: &Geometry) -> Result<KvGeometry, GeometryError> {
        let need = |v: Option<u32>, what: &str, flag: &str| -> Result<u32, GeometryError> {
            match v {
                Some(x) if x > 0 => Ok(x),
                Some(_) => Err(GeometryError(format!("{what} must be positive ({flag})"))),
                None => Err(GeometryError(format!("{what} is missing (give {flag} or set model.geometry.{what})"))),
            }
        };
        let layers = need(Some(g.layers), "layers", "--layers")?;
        let attention = match g.attention {
            AttentionKind::Mha | AttentionKind::Gqa => KvAttention::Mha {
                kv_heads: need(g.kv_heads, "kv_heads", "--kv-heads")?,
                head_dim: need(g.head_dim, "head_dim", "--head-dim")?,
            },
            AttentionKind::Mla => KvAttention::Mla {
                kv_lora_rank: need(g.kv_lora_rank, "kv_lora_rank", "--kv-lora-rank")?,
                qk_rope_head_dim: need(g.qk_rope_head_dim, "qk_rope_head_dim", "--qk-rope-head-dim")?,
            },
        };
        // Read through serde so that fields added to the schema later do not break this crate.
        let extra = serde_json::to_value(g).unwrap_or_default();
        if let (KvAttention::Mha { head_dim, .. }, Some(v)) =
            (attention, extra.get("v_head_dim").and_then(|v| v.as_u64()))
        {
            if v != u64::from(head_dim) {
                return Err(GeometryError(format!(
                    "v_head_dim {v} differs from head_dim {head_dim}: pools with different K and V rows are not covered by the smoke test"
                )));
            }
        }
        if layers > u32::from(u16::MAX) {
            return Err(GeometryError(format!("{layers} layers is more than the canary header holds (65535)")));
        }
        if let KvAttention::Mha { kv_heads, .. } = attention {
            if kv_heads > u32::from(u16::MAX) {
                return Err(GeometryError(format!("{kv_heads} KV heads is more than the canary header holds (65535)")));
            }
        }
        Ok(KvGeometry { kind: g.attention, layers, attention })
    }

    /// True for MLA.
    pub fn is_mla(&self) -> bool {
        matches!(self.attention, KvAttention::Mla { .. })
    }

    /// KV heads of the model (1 for MLA's single latent).
    pub fn kv_heads(&self) -> u32 {
        match self.attention {
            KvAttention::Mha { kv_heads, .. } => kv_heads,
            KvAttention::Mla { .. } => 1,
        }
    }

    /// Elements in one head slice (a head's K or V vector, or the whole MLA latent).
    pub fn slice_elems(&self) -> u32 {
        match self.attention {
            KvAttention::Mha { head_dim, .. } => head_dim,
            KvAttention::Mla { kv_lora_rank, qk_rope_head_dim } => kv_lora_rank + qk_rope_head_dim,
        }
    }

    /// Layer buffers per layer: K and V for MHA, one latent for MLA.
    pub fn buffers_per_layer(&self) -> u32 {
        if self.is_mla() {
            1
        } else {
            2
        }
    }

    /// A short description, e.g. `gqa 32 layers x 8 KV heads x 128`.
    pub fn describe(&self) -> String {
        match self.attention {
            KvAttention::Mha { kv_heads, head_dim } => {
                let kind = if self.kind == AttentionKind::Gqa { "gqa" } else { "mha" };
                format!("{kind}, {} layers x {kv_heads} KV heads x {head_dim}", self.layers)
            }
            KvAttention::Mla { kv_lora_rank, qk_rope_head_dim } => {
                format!("mla, {} layers x latent {kv_lora_rank}+{qk_rope_head_dim}", self.layers)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(kind: AttentionKind) -> Geometry {
        serde_json::from_value(serde_json::json!({
            "attention": kind, "layers": 4, "kv_heads": 8, "head_dim": 128,
            "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        }))
        .unwrap()
    }

    #[test]
    fn mla_latent_is_rank_plus_rope() {
        let g = KvGeometry::from_core(&core(AttentionKind::Mla)).unwrap();
        assert_eq!(g.slice_elems(), 576);
        assert_eq!(g.kv_heads(), 1);
        assert_eq!(g.buffers_per_layer(), 1);
    }

    #[test]
    fn missing_fields_name_the_flag() {
        let mut c = core(AttentionKind::Gqa);
        c.kv_heads = None;
        let e = KvGeometry::from_core(&c).unwrap_err().to_string();
        assert!(e.contains("--kv-heads"), "{e}");
        let mut c = core(AttentionKind::Mla);
        c.qk_rope_head_dim = None;
        assert!(KvGeometry::from_core(&c).unwrap_err().to_string().contains("--qk-rope-head-dim"));
    }
}
