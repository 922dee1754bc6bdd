//! The example deployments shipped in `examples/`, embedded so that `pdlaunch init` and the web
//! app's presets work offline.

use crate::deployment::Deployment;
use crate::load::{parse_deployment, Syntax};

/// One embedded example.
#[derive(Debug)]
pub struct Example {
    /// Name (the file stem in `examples/`).
    pub name: &'static str,
    /// One line describing it.
    pub summary: &'static str,
    /// The YAML text, with its schema modeline.
    pub yaml: &'static str,
}

/// Every example.
pub static EXAMPLES: &[Example] = &[
    Example {
        name: "llama-1p1d",
        summary: "one machine, Llama 3.1 8B (GQA), Mooncake, prefill GPU 0 + decode GPU 1",
        yaml: include_str!("../../../examples/llama-1p1d.yaml"),
    },
    Example {
        name: "deepseek-v3-dp-deepep",
        summary: "DeepSeek-V3, 2 nodes per side, DP attention + DeepEP (prefill normal, decode low_latency)",
        yaml: include_str!("../../../examples/deepseek-v3-dp-deepep.yaml"),
    },
    Example {
        name: "qwen3-2p1d-nixl",
        summary: "Qwen3-32B, two TP2 prefills and one TP4 decode over NIXL with the staging buffer",
        yaml: include_str!("../../../examples/qwen3-2p1d-nixl.yaml"),
    },
    Example {
        name: "llama-eagle3-spec",
        summary: "Llama 3.1 8B with EAGLE-3 speculative decoding on both sides",
        yaml: include_str!("../../../examples/llama-eagle3-spec.yaml"),
    },
];

/// The parsed example with this name.
pub fn example(name: &str) -> Option<Deployment> {
    let e = EXAMPLES.iter().find(|e| e.name == name)?;
    Some(parse_deployment(e.yaml, e.name, Syntax::Yaml).expect("embedded examples parse"))
}
