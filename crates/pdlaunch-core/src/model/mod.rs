//! Model awareness: what SGLang's KV pools and parallel layout depend on, read from a Hugging Face
//! `config.json` ([`read_config_json`]), shipped for widely deployed models as presets
//! ([`PRESETS`]), and turned into KV bytes per token per rank ([`kv_bytes_per_token`]).
//!
//! Text in, values out: the caller reads the file.

mod config;
mod geometry;
mod kv;
mod presets;

pub use config::{apply_hf_quant_config, geometry_from_config_json, read_config_json, ModelConfig, ModelConfigError};
pub use geometry::{AttentionKind, Geometry};
pub use kv::{kv_bytes_per_token, layers_on_rank, KvBytes, KvElement};
pub use presets::{preset, preset_for_path, Preset, PRESETS, PRESET_NAMES};

use serde::{Deserialize, Deserializer};

/// DeepSeek sparse-attention architectures (page size forced to 64, KV dtype rules).
pub const DSA_ARCHS: &[&str] = &["DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"];

/// Reads `model.preset`, refusing names that are not built in (serde's "unknown variant" error,
/// so the loader's hint and field path apply).
pub fn deserialize_preset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name: Option<String> = Option::deserialize(d)?;
    if let Some(n) = &name {
        if preset(n).is_none() {
            return Err(serde::de::Error::unknown_variant(n, PRESET_NAMES));
        }
    }
    Ok(name)
}

/// The JSON Schema of `model.preset`: one of the built-in names.
pub fn preset_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": PRESET_NAMES,
    })
}

#[cfg(test)]
mod fixture_tests;
