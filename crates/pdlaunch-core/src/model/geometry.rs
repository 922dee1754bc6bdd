//! The model's KV-relevant geometry, as a deployment states it (`model.geometry`) or a preset or
//! `config.json` gives it. It sits below the deployment schema, which embeds it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The attention kind, which decides the KV pool layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKind {
    /// Multi-head attention: K and V per head.
    Mha,
    /// Grouped-query attention: fewer KV heads than query heads.
    Gqa,
    /// Multi-head latent attention (DeepSeek-V2/V3 class): one compressed latent per token.
    Mla,
}

impl AttentionKind {
    /// Every kind, in declaration order.
    pub const ALL: [AttentionKind; 3] = [AttentionKind::Mha, AttentionKind::Gqa, AttentionKind::Mla];
    /// The lowercase names used in YAML, in the order of [`AttentionKind::ALL`].
    pub const NAMES: &'static [&'static str] = &["mha", "gqa", "mla"];
}

crate::choices::unit_enum_serde!(AttentionKind);

/// KV-relevant geometry of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    /// Hugging Face architecture class, e.g. `LlamaForCausalLM` or `DeepseekV3ForCausalLM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// Attention kind.
    pub attention: AttentionKind,
    /// Number of hidden layers.
    pub layers: u32,
    /// Number of query heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_heads: Option<u32>,
    /// Number of KV heads (MHA/GQA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u32>,
    /// Head dimension (MHA/GQA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u32>,
    /// MLA latent rank (`kv_lora_rank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_lora_rank: Option<u32>,
    /// MLA rotary dimension (`qk_rope_head_dim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qk_rope_head_dim: Option<u32>,
    /// Sliding-window size, for hybrid sliding-window models (e.g. gpt-oss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u32>,
    /// True when some layers use sliding-window attention and others full attention.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hybrid_swa: bool,
    /// Layers with full attention in a hybrid sliding-window model (the others slide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_attention_layers: Option<u32>,
    /// V head dimension when it differs from `head_dim` (MHA/GQA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v_head_dim: Option<u32>,
    /// Hidden size (`hidden_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_size: Option<u32>,
    /// Context length the model was built for (`max_position_embeddings`); SGLang's default
    /// `--context-length`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_position_embeddings: Option<u64>,
    /// Routed experts of a mixture-of-experts model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_experts: Option<u32>,
    /// Experts each token is routed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_experts_per_token: Option<u32>,
    /// Checkpoint dtype (`torch_dtype`): `bfloat16`, `float16` or `float32`; the KV element type
    /// when `kv_cache_dtype` is `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_dtype: Option<String>,
    /// Weight quantization of the checkpoint (`quantization_config.quant_method`, e.g. `fp8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant_method: Option<String>,
    /// KV-cache quantization the checkpoint asks for (`FP8` makes SGLang's `auto` KV dtype
    /// `fp8_e4m3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_quant_algo: Option<String>,
    /// Parameters of the language model (without speculative/MTP layers), as derived from
    /// `config.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<u64>,
    /// Estimated bytes of the weights as stored (quantization included), used for the per-GPU
    /// memory estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_bytes: Option<u64>,
}

impl Geometry {
    /// A geometry with only the attention kind and layer count known.
    pub fn new(attention: AttentionKind, layers: u32) -> Geometry {
        Geometry {
            architecture: None,
            attention,
            layers,
            attention_heads: None,
            kv_heads: None,
            head_dim: None,
            kv_lora_rank: None,
            qk_rope_head_dim: None,
            sliding_window: None,
            hybrid_swa: false,
            full_attention_layers: None,
            v_head_dim: None,
            hidden_size: None,
            max_position_embeddings: None,
            moe_experts: None,
            moe_experts_per_token: None,
            torch_dtype: None,
            quant_method: None,
            kv_cache_quant_algo: None,
            parameters: None,
            weight_bytes: None,
        }
    }
}

fn is_false(v: &bool) -> bool {
    !*v
}
