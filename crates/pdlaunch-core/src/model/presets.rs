//! Built-in models: the public `config.json` of widely deployed checkpoints, read by the same
//! reader as a user's file. The texts live in `tests/fixtures/models/` (see its README for where
//! each came from), so the presets and the reader's fixture tests share them.
//!
//! The rules need only each preset's geometry. It is read from the `config.json` once, by a test
//! that writes `geometries.txt`; the rules read that file. The `config.json` texts and their
//! reader stay out of the browser app, which only checks deployments (the CLI's `pdlaunch model
//! --preset` still reads the texts).

use super::Geometry;

use super::config::{read_config_json, ModelConfig};

/// One built-in model.
#[derive(Debug)]
pub struct Preset {
    /// The name used in `model.preset`.
    pub name: &'static str,
    /// The Hugging Face id of the checkpoint.
    pub hf_id: &'static str,
    /// Other checkpoints published with the same `config.json` values (revisions and fine-tunes
    /// of the same architecture), which a model path may name instead ([`preset_for_path`]).
    pub also: &'static [&'static str],
    /// One line describing it.
    pub summary: &'static str,
}

/// `name<TAB>geometry as JSON` per preset, in the order of [`PRESETS`]: what the reader makes of
/// each `config.json`, written by the `geometries_are_current` test (run it with
/// `PDLAUNCH_UPDATE_SPECS=1` after changing a preset or the reader).
const GEOMETRIES: &str = include_str!("geometries.txt");

impl Preset {
    /// The geometry the reader finds in the preset's `config.json`.
    pub fn geometry(&self) -> Geometry {
        let line = GEOMETRIES.lines().find_map(|l| l.strip_prefix(self.name)?.strip_prefix('\t'));
        serde_json::from_str(line.expect("every preset has a geometry (tested)"))
            .expect("geometries.txt is valid (tested)")
    }
    /// Its `config.json` text.
    pub fn config_json(&self) -> &'static str {
        config_json(self.name).expect("every preset has a config.json (tested)")
    }
    /// Everything the reader finds in its `config.json`, notes included.
    pub fn config(&self) -> ModelConfig {
        read_config_json(self.config_json()).expect("embedded presets are valid configs (tested)")
    }
}

/// The preset with this name.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The preset whose checkpoint a `--model-path` names: its Hugging Face id or one of its
/// [`Preset::also`] ids, or a path ending with one of them or with the id's repository name
/// (`/models/DeepSeek-V3`), ignoring ASCII case.
pub fn preset_for_path(path: &str) -> Option<&'static Preset> {
    let p = path.trim_end_matches('/');
    if p.is_empty() {
        return None;
    }
    // `p` is `tail`, or ends with `/` followed by `tail`.
    let names = |tail: &str| {
        let Some(head) = p.len().checked_sub(tail.len()) else { return false };
        p.is_char_boundary(head)
            && p[head..].eq_ignore_ascii_case(tail)
            && (head == 0 || p.as_bytes()[head - 1] == b'/')
    };
    PRESETS
        .iter()
        .find(|pr| std::iter::once(pr.hf_id).chain(pr.also.iter().copied()).any(|id| names(id) || names(repo_name(id))))
}

/// The repository name of a Hugging Face id (`DeepSeek-V3` of `deepseek-ai/DeepSeek-V3`).
fn repo_name(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// Declares the presets from one list: [`PRESETS`], [`PRESET_NAMES`] and their `config.json`
/// texts (kept apart from [`PRESETS`] so that code that never reads them leaves them out).
macro_rules! presets {
    ($($name:literal => $hf_id:literal $(| $also:literal)*, $summary:literal;)+) => {
        /// Every preset.
        pub static PRESETS: &[Preset] =
            &[$(Preset { name: $name, hf_id: $hf_id, also: &[$($also),*], summary: $summary },)+];
        /// Every preset name, in the order of [`PRESETS`] (serde's error lists them).
        pub const PRESET_NAMES: &[&str] = &[$($name),+];
        /// The `config.json` text of the preset with this name.
        fn config_json(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some(include_str!(concat!("../../../../tests/fixtures/models/", $name, "/config.json"))),)+
                _ => None,
            }
        }
    };
}

presets! {
    "llama-3.1-8b-instruct" => "meta-llama/Llama-3.1-8B-Instruct",
        "Llama 3.1 8B Instruct: GQA, 32 layers, 8 KV heads";
    "llama-3.1-70b-instruct" => "meta-llama/Llama-3.1-70B-Instruct",
        "Llama 3.1 70B Instruct: GQA, 80 layers, 8 KV heads";
    "qwen3-32b" => "Qwen/Qwen3-32B",
        "Qwen3 32B (dense): GQA, 64 layers, 8 KV heads";
    "qwen3-235b-a22b-instruct-2507" => "Qwen/Qwen3-235B-A22B-Instruct-2507",
        "Qwen3 235B-A22B (MoE, 128 experts): GQA, 94 layers, 4 KV heads";
    // DeepSeek-R1 and the later V3 revisions are trained from DeepSeek-V3-Base and keep its
    // `config.json` (DeepseekV3ForCausalLM, 61 layers, MLA rank 512, 256 experts, FP8 blocks).
    "deepseek-v3" => "deepseek-ai/DeepSeek-V3" | "deepseek-ai/DeepSeek-V3-Base" | "deepseek-ai/DeepSeek-V3-0324"
            | "deepseek-ai/DeepSeek-R1" | "deepseek-ai/DeepSeek-R1-Zero" | "deepseek-ai/DeepSeek-R1-0528",
        "DeepSeek-V3 (MoE, FP8 weights): MLA, 61 layers";
    "deepseek-v3.2" => "deepseek-ai/DeepSeek-V3.2",
        "DeepSeek-V3.2 (sparse attention, FP8 weights): MLA + DSA, 61 layers";
    "kimi-k2-instruct" => "moonshotai/Kimi-K2-Instruct",
        "Kimi K2 Instruct (MoE, 384 experts, FP8 weights): MLA, 61 layers";
    "kimi-k2.5" => "moonshotai/Kimi-K2.5",
        "Kimi K2.5 (multimodal; INT4 experts): MLA text model, 61 layers";
    "gpt-oss-20b" => "openai/gpt-oss-20b",
        "gpt-oss 20B (MoE, MXFP4): GQA hybrid sliding window, 24 layers";
    "gpt-oss-120b" => "openai/gpt-oss-120b",
        "gpt-oss 120B (MoE, MXFP4): GQA hybrid sliding window, 36 layers";
    "glm-4.7-flash" => "zai-org/GLM-4.7-Flash",
        "GLM-4.7-Flash (MoE): MLA, 47 layers";
    "glm-5.1" => "zai-org/GLM-5.1",
        "GLM-5.1 (MoE, sparse attention): MLA + DSA, 78 layers";
    "mixtral-8x7b-v0.1" => "mistralai/Mixtral-8x7B-v0.1",
        "Mixtral 8x7B (MoE, 8 experts): GQA, 32 layers";
    "mistral-7b-instruct-v0.3" => "mistralai/Mistral-7B-Instruct-v0.3",
        "Mistral 7B Instruct v0.3: GQA, 32 layers";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_reads() {
        assert!(PRESETS.len() >= 10);
        for p in PRESETS {
            let c = read_config_json(p.config_json()).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(p.geometry(), c.geometry, "{}: geometries.txt is stale", p.name);
            assert!(c.geometry.architecture.is_some(), "{}", p.name);
            assert!(c.geometry.parameters.is_some(), "{}: {:?}", p.name, c.notes);
        }
        assert_eq!(preset("qwen3-32b").unwrap().hf_id, "Qwen/Qwen3-32B");
        assert!(preset("llama-4").is_none());
    }

    #[test]
    fn model_paths_name_their_preset() {
        let name = |path: &str| preset_for_path(path).map(|p| p.name);
        assert_eq!(name("deepseek-ai/DeepSeek-V3"), Some("deepseek-v3"));
        assert_eq!(name("deepseek-ai/DeepSeek-R1-0528"), Some("deepseek-v3"));
        assert_eq!(name("/data/models/deepseek-r1/"), Some("deepseek-v3"));
        assert_eq!(name("DeepSeek-V3-0324"), Some("deepseek-v3"));
        assert_eq!(name("deepseek-ai/DeepSeek-V3.2"), Some("deepseek-v3.2"));
        assert_eq!(name("/hf/hub/Qwen/Qwen3-32B"), Some("qwen3-32b"));
        // Another model whose name merely starts or ends like a preset's.
        assert_eq!(name("deepseek-ai/DeepSeek-R1-Distill-Llama-8B"), None);
        assert_eq!(name("/models/MyDeepSeek-V3"), None);
        assert_eq!(name("nvidia/Qwen3-32B-NVFP4"), None);
        assert_eq!(name(""), None);
        assert_eq!(name("/"), None);
        assert_eq!(name("é/DeepSeek-V3é"), None);
        // Every id and repository name names its own preset, never another's.
        for p in PRESETS {
            for id in std::iter::once(p.hf_id).chain(p.also.iter().copied()) {
                assert_eq!(name(id), Some(p.name), "{id}");
                assert_eq!(name(repo_name(id)), Some(p.name), "{id}");
                assert_eq!(name(&id.to_uppercase()), Some(p.name), "{id}");
            }
        }
    }

    #[test]
    fn geometries_are_current() {
        let mut want = String::new();
        for p in PRESETS {
            let g = read_config_json(p.config_json()).unwrap_or_else(|e| panic!("{}: {e}", p.name)).geometry;
            want.push_str(&format!("{}\t{}\n", p.name, serde_json::to_string(&g).unwrap()));
        }
        if std::env::var_os("PDLAUNCH_UPDATE_SPECS").is_some() {
            // The embedded copy is the file as it was built; the file itself must now be current.
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model/geometries.txt");
            std::fs::write(&path, &want).expect("write geometries.txt");
            assert!(
                std::fs::read_to_string(&path).expect("read geometries.txt back") == want,
                "geometries.txt was not written"
            );
        } else {
            assert!(GEOMETRIES == want, "geometries.txt is stale: run this test with PDLAUNCH_UPDATE_SPECS=1");
        }
    }
}
