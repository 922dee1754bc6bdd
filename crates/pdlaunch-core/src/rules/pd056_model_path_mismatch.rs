//! PD056: the prefill and the decode load different model paths.

use super::{Check, Context, Finding, Rule, Severity};

/// The decode continues from KV the prefill computed, so both must load one checkpoint. SGLang
/// compares no model across the transfer: two checkpoints, or two quantisations of one model,
/// hand over KV that the decode reads as garbage. Paths that name one model (a local copy named
/// like its Hugging Face id, or a Hugging Face cache folder) differ only
/// in where the files are, which this rule does not report.
pub static RULE: Rule = Rule {
    code: "PD056",
    name: "model-path-mismatch",
    severity: Severity::Warning,
    summary: "prefill and decode load different model paths",
    explanation: "The KV cache the prefill sends is computed by its weights and read by the decode's. SGLang \
        checks no model name across the transfer: with two different checkpoints (another fine-tune, another \
        size) or two quantisations of one model (FP8 against BF16 weights), the transfer succeeds and the decode \
        continues from KV its own weights did not produce, so the answers are garbage; two architectures register \
        different state entries, layer metadata and item sizes, which the transfer refuses when it pairs them. Two paths that name one \
        model (a local copy named like its Hugging Face id, or a Hugging Face cache folder `models--org--name`) \
        are not reported.",
    sglang_errors: &[
        "no error at startup: the prefill and decode load different weights; requests return garbage after the KV transfer",
        "Mamba state replication metadata differs between prefill and decode",
        "Layer metadata must be provided by both PD peers or neither",
        "Replicated {st.upper()} layout differs between mapped prefill and decode entries: {layout_mismatches}",
        "PD state transfer failed: state component count mismatch (local={len(self.state_mem_descs)}, remote={len(peer_info.dst_state_mem_descs)})",
        "NIXL prepared dlist transfer length exceeds item stride: xfer_len={xfer_len}, item_len={item_len}, mem_kind={mem_kind}",
    ],
    fix: "Load the same checkpoint on both sides: set `model.path` once, or give both commands the same \
        `--model-path`.",
    check: Check::Deployment(check),
};

/// The model a path names, for comparing: its last component (a Hugging Face cache folder's
/// repository name), lowercase.
fn model_name(path: &str) -> String {
    let p = path.trim_end_matches('/');
    // `.../models--org--name/snapshots/<hash>`: the repository's name.
    let cached = p.split('/').find_map(|c| c.strip_prefix("models--")).and_then(|r| r.rsplit("--").next());
    cached.unwrap_or_else(|| p.rsplit('/').next().unwrap_or(p)).to_ascii_lowercase()
}

/// True when two model paths name one model: the same text, or the same model name (a local copy
/// named like the Hugging Face repository, or its cache folder). Built-in models that share one
/// geometry (DeepSeek-V3 and R1) are still two checkpoints.
pub(crate) fn same_model(a: &str, b: &str) -> bool {
    a == b || (!model_name(a).is_empty() && model_name(a) == model_name(b))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pv, dv) = (p.value("model_path").unwrap_or_default(), d.value("model_path").unwrap_or_default());
        if same_model(&pv, &dv) || seen.contains(&(pv.clone(), dv.clone())) {
            continue;
        }
        let message = format!(
            "{} loads `{pv}` but {} loads `{dv}`: the decode continues from KV that other weights computed (two \
             checkpoints, or two quantisations of one model, give garbage after the transfer)",
            p.label, d.label
        );
        let fix = format!("load one checkpoint on both sides: `--model-path {pv}` (or `{dv}`) on both");
        out.push(Finding::new(&RULE, message, fix).at(p, "model_path").at(d, "model_path"));
        seen.push((pv, dv));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{findings, linted, llama};

    #[test]
    fn another_checkpoint_is_reported_with_both_paths() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--model".into(), "other/model".into()];
        let f = findings(&d, "PD056");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`other/model`") && f[0].message.contains("`meta-llama/Llama-3.1-8B-Instruct`"));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(findings(&llama(), "PD056").is_empty());
    }

    #[test]
    fn aliases_of_one_model_are_the_same_model() {
        for (a, b) in [
            ("meta-llama/Llama-3.1-8B-Instruct", "/models/Llama-3.1-8B-Instruct/"),
            (
                "Qwen/Qwen3-8B",
                "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/9c925d64d72725edaf899c6cb9c377fd0709d9c5",
            ),
            ("/mnt/a/Some-Model", "/data/some-model"),
        ] {
            assert!(same_model(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-FP8"),
            ("/models/a", "/models/b"),
            ("m", ""),
            ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1"),
        ] {
            assert!(!same_model(a, b), "{a} {b}");
        }
    }

    #[test]
    fn files_given_together_are_paired_and_compared() {
        let p = "python3 -m sglang.launch_server --model-path /models/Qwen3-8B --disaggregation-mode prefill --port 30000";
        let d = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --disaggregation-mode decode --port 30001";
        let f = linted(&[("prefill.sh", p), ("decode.sh", d)], "PD056");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("`/models/Qwen3-8B`") && f[0].contains("`Qwen/Qwen3-8B-FP8`"), "{}", f[0]);
        let d = d.replace("Qwen/Qwen3-8B-FP8", "Qwen/Qwen3-8B");
        assert!(linted(&[("prefill.sh", p), ("decode.sh", &d)], "PD056").is_empty());
    }
}
