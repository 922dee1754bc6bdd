//! The two sides of a deployment as the KV pools see them: effective page size (after
//! attention-backend snaps), KV dtype, attention TP and PP, and transfer backend, read from the
//! rendered command lines through pdlaunch-core's effective values.

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::rules::Context;
use serde::{Deserialize, Serialize};

use crate::dtype::{KvDtype, UnsupportedDtype};
use crate::layout::SideConfig;

/// One side, with where its values came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideFacts {
    /// Prefill or decode.
    pub role: Role,
    /// The server it was read from, e.g. `decode[0]`.
    pub server: String,
    /// What the pools use.
    pub config: SideConfig,
    /// Why the page size differs from what was written (backend snaps, defaults).
    pub page_size_why: Vec<String>,
    /// What the page size depends on that pdlaunch was not told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size_assumption: Option<String>,
    /// The `--kv-cache-dtype` string SGLang compares across sides.
    pub kv_cache_dtype: String,
    /// How `auto` was resolved, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype_note: Option<String>,
    /// `--tp-size`.
    pub tp: u32,
    /// DP-attention width.
    pub attn_dp: u32,
    /// `--disaggregation-transfer-backend`.
    pub transfer_backend: String,
    /// `SGLANG_DISAGG_STAGING_BUFFER` is on (head slices go through a staging buffer).
    pub staging_buffer: bool,
}

/// Both sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sides {
    /// Prefill.
    pub prefill: SideFacts,
    /// Decode.
    pub decode: SideFacts,
}

/// Why the sides cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SidesError {
    /// A side renders no server.
    #[error("the deployment renders no {0} server")]
    NoServer(Role),
    /// The KV dtype is not modelled.
    #[error("{role}: {source}")]
    Dtype {
        /// Side.
        role: Role,
        /// Why.
        source: UnsupportedDtype,
    },
}

/// Reads both sides of `d` (its `model.geometry` should already hold the geometry in use, so
/// that MLA-only backend rules apply).
pub fn from_deployment(d: &Deployment) -> Result<Sides, SidesError> {
    let plan = pdlaunch_core::plan::plan(d);
    let ctx = Context::from_deployment(d, &plan);
    // Checkpoint facts are read through serde, so that geometry fields added to the schema later
    // (dtype, KV quantization) are used when present and do not break this crate when absent.
    let geometry = serde_json::to_value(&d.model.geometry).unwrap_or_default();
    let torch_dtype = geometry.get("torch_dtype").and_then(|v| v.as_str()).map(str::to_owned);
    let fp8_checkpoint_kv =
        geometry.get("kv_cache_quant_algo").and_then(|v| v.as_str()).is_some_and(|a| a.eq_ignore_ascii_case("fp8"));
    let side = |role: Role| -> Result<SideFacts, SidesError> {
        let s = ctx.heads(role).next().ok_or(SidesError::NoServer(role))?;
        let page = s.page_size(&ctx.model);
        let kv = s.kv_cache_dtype(&ctx.model).value;
        let model_dtype = s.explicit("dtype").or_else(|| torch_dtype.clone());
        let (dtype, mut note) = if kv == "auto" && fp8_checkpoint_kv {
            (KvDtype::Fp8E4m3, Some("kv_cache_dtype auto with an FP8 KV checkpoint: fp8_e4m3".to_owned()))
        } else {
            KvDtype::resolve(&kv, model_dtype.as_deref()).map_err(|source| SidesError::Dtype { role, source })?
        };
        if note.is_none() && kv == "auto" {
            note = Some(format!("kv_cache_dtype auto follows the model dtype: {}", dtype.name()));
        }
        Ok(SideFacts {
            role,
            server: s.label.clone(),
            config: SideConfig { page_size: page.value.max(1), dtype, attn_tp: s.attn_tp(), pp: s.size("pp_size") },
            page_size_why: page.why,
            page_size_assumption: page.assumption,
            kv_cache_dtype: kv,
            dtype_note: note,
            tp: s.size("tp_size"),
            attn_dp: s.attn_dp(),
            transfer_backend: s.value("disaggregation_transfer_backend").unwrap_or_else(|| "mooncake".into()),
            staging_buffer: s
                .env
                .get("SGLANG_DISAGG_STAGING_BUFFER")
                .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True")),
        })
    };
    Ok(Sides { prefill: side(Role::Prefill)?, decode: side(Role::Decode)? })
}
