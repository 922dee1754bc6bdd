//! Built-in models: the public `config.json` of widely deployed checkpoints, embedded as data and
//! read by the same reader as a user's file. The texts live in `tests/fixtures/models/` (see its
//! README for where each came from), so the presets and the reader's fixture tests share them.

use crate::deployment::Geometry;

use super::config::{read_config_json, ModelConfig};

/// One built-in model.
#[derive(Debug)]
pub struct Preset {
    /// The name used in `model.preset`.
    pub name: &'static str,
    /// The Hugging Face id of the checkpoint.
    pub hf_id: &'static str,
    /// One line describing it.
    pub summary: &'static str,
    /// Its `config.json` text.
    pub config_json: &'static str,
}

impl Preset {
    /// The geometry read from the embedded `config.json`.
    pub fn geometry(&self) -> Geometry {
        self.config().geometry
    }
    /// Everything the reader found, notes included.
    pub fn config(&self) -> ModelConfig {
        read_config_json(self.config_json).expect("embedded presets are valid configs (tested)")
    }
}

/// The preset with this name.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Every preset name, in the order of [`PRESETS`] (serde's error lists them).
pub const PRESET_NAMES: &[&str] = &[
    "llama-3.1-8b-instruct",
    "llama-3.1-70b-instruct",
    "qwen3-32b",
    "qwen3-235b-a22b-instruct-2507",
    "deepseek-v3",
    "deepseek-v3.2",
    "kimi-k2-instruct",
    "kimi-k2.5",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "glm-4.7-flash",
    "glm-5.1",
    "mixtral-8x7b-v0.1",
    "mistral-7b-instruct-v0.3",
];

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../../tests/fixtures/models/", $name, "/config.json"))
    };
}

/// Every preset.
pub static PRESETS: &[Preset] = &[
    Preset {
        name: "llama-3.1-8b-instruct",
        hf_id: "meta-llama/Llama-3.1-8B-Instruct",
        summary: "Llama 3.1 8B Instruct: GQA, 32 layers, 8 KV heads",
        config_json: fixture!("llama-3.1-8b-instruct"),
    },
    Preset {
        name: "llama-3.1-70b-instruct",
        hf_id: "meta-llama/Llama-3.1-70B-Instruct",
        summary: "Llama 3.1 70B Instruct: GQA, 80 layers, 8 KV heads",
        config_json: fixture!("llama-3.1-70b-instruct"),
    },
    Preset {
        name: "qwen3-32b",
        hf_id: "Qwen/Qwen3-32B",
        summary: "Qwen3 32B (dense): GQA, 64 layers, 8 KV heads",
        config_json: fixture!("qwen3-32b"),
    },
    Preset {
        name: "qwen3-235b-a22b-instruct-2507",
        hf_id: "Qwen/Qwen3-235B-A22B-Instruct-2507",
        summary: "Qwen3 235B-A22B (MoE, 128 experts): GQA, 94 layers, 4 KV heads",
        config_json: fixture!("qwen3-235b-a22b-instruct-2507"),
    },
    Preset {
        name: "deepseek-v3",
        hf_id: "deepseek-ai/DeepSeek-V3",
        summary: "DeepSeek-V3 (MoE, FP8 weights): MLA, 61 layers",
        config_json: fixture!("deepseek-v3"),
    },
    Preset {
        name: "deepseek-v3.2",
        hf_id: "deepseek-ai/DeepSeek-V3.2",
        summary: "DeepSeek-V3.2 (sparse attention, FP8 weights): MLA + DSA, 61 layers",
        config_json: fixture!("deepseek-v3.2"),
    },
    Preset {
        name: "kimi-k2-instruct",
        hf_id: "moonshotai/Kimi-K2-Instruct",
        summary: "Kimi K2 Instruct (MoE, 384 experts, FP8 weights): MLA, 61 layers",
        config_json: fixture!("kimi-k2-instruct"),
    },
    Preset {
        name: "kimi-k2.5",
        hf_id: "moonshotai/Kimi-K2.5",
        summary: "Kimi K2.5 (multimodal; INT4 experts): MLA text model, 61 layers",
        config_json: fixture!("kimi-k2.5"),
    },
    Preset {
        name: "gpt-oss-20b",
        hf_id: "openai/gpt-oss-20b",
        summary: "gpt-oss 20B (MoE, MXFP4): GQA hybrid sliding window, 24 layers",
        config_json: fixture!("gpt-oss-20b"),
    },
    Preset {
        name: "gpt-oss-120b",
        hf_id: "openai/gpt-oss-120b",
        summary: "gpt-oss 120B (MoE, MXFP4): GQA hybrid sliding window, 36 layers",
        config_json: fixture!("gpt-oss-120b"),
    },
    Preset {
        name: "glm-4.7-flash",
        hf_id: "zai-org/GLM-4.7-Flash",
        summary: "GLM-4.7-Flash (MoE): MLA, 47 layers",
        config_json: fixture!("glm-4.7-flash"),
    },
    Preset {
        name: "glm-5.1",
        hf_id: "zai-org/GLM-5.1",
        summary: "GLM-5.1 (MoE, sparse attention): MLA + DSA, 78 layers",
        config_json: fixture!("glm-5.1"),
    },
    Preset {
        name: "mixtral-8x7b-v0.1",
        hf_id: "mistralai/Mixtral-8x7B-v0.1",
        summary: "Mixtral 8x7B (MoE, 8 experts): GQA, 32 layers",
        config_json: fixture!("mixtral-8x7b-v0.1"),
    },
    Preset {
        name: "mistral-7b-instruct-v0.3",
        hf_id: "mistralai/Mistral-7B-Instruct-v0.3",
        summary: "Mistral 7B Instruct v0.3: GQA, 32 layers",
        config_json: fixture!("mistral-7b-instruct-v0.3"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_and_every_preset_reads() {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        assert_eq!(names, PRESET_NAMES);
        assert!(PRESETS.len() >= 10);
        for p in PRESETS {
            let c = read_config_json(p.config_json).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(c.geometry.architecture.is_some(), "{}", p.name);
            assert!(c.geometry.parameters.is_some(), "{}: {:?}", p.name, c.notes);
        }
        assert_eq!(preset("qwen3-32b").unwrap().hf_id, "Qwen/Qwen3-32B");
        assert!(preset("llama-4").is_none());
    }
}
