//! PD067: a model-specific setting that SGLang refuses on a PD server, or for the model's KV kind.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// Settings whose PD support depends on the model: `--language-model-only` (DeepSeek-V4.1 only),
/// DeepSeek-V4's `trtllm` attention backend, the hybrid-Mamba `extra_buffer_lazy` cache strategy
/// (refused by the model hooks at startup), and the decode's `prefill_complete` allocation and
/// host receive, which support only some KV state kinds (refused when the KV manager starts).
pub static RULE: Rule = Rule {
    code: "PD067",
    name: "model-setting-refused-in-pd",
    severity: Severity::Error,
    summary: "a model-specific setting is one SGLang refuses on a PD server, or for this model's KV kind",
    explanation: "SGLang refuses on PD servers `--language-model-only` (but for DeepSeek-V4.1), \
        `--dsv4-attn-backend trtllm` and `--mamba-radix-cache-strategy extra_buffer_lazy`; the `prefill_complete` \
        allocation with SWA state, and host receive (threshold below 1) with DSA state. Models pdlaunch has no \
        geometry for add more (MiniMax, Mamba, DeepSeek-V4 drafts).",
    sglang_errors: &[
        "--language-model-only is incompatible with --disaggregation-mode prefill/decode",
        "--dsv4-attn-backend trtllm does not support PD disaggregation yet (untested; see https://github.com/sgl-project/sglang/issues/37838).",
        "extra_buffer_lazy unsupported under PD disaggregation; use --mamba-radix-cache-strategy extra_buffer.",
        "prefill_complete currently supports full-attention and DSA KV pools only",
        "Host receive supports full KV and separate paged SWA pools",
        "Unsupported KV cache type for decode offload",
        "Host receive buffers must match the KV transfer layout",
        "Host receive buffers must match the SWA transfer layout",
        "PD disaggregation for MiniMax sparse layers with index value (index_kv_pool) is not yet supported; only K-only sparse layers are.",
        "PD disagg: PP>1 not supported for MiniMax state yet.",
        "MORI PD disaggregation requires PP=1 for {state_type}; PP>1 needs peer state_layer_ids for global-layer descriptor pairing.",
        "DSV4 draft state transfer expects SWA-only NextN layers",
        "DSV4 target and draft pools must share SWA ring geometry: target={target_geometry}, draft={draft_geometry}",
        "DSV4 target and draft pools must share SWA geometry: target={target_geometry}, draft={draft_geometry}",
    ],
    fix: "Remove the setting from the PD servers, or use the alternative its message names.",
    check: Check::Deployment(check),
};

fn finding(i: usize, s: &ServerView, why: String, fix: &str, dest: &str) -> Finding {
    let mut f = Finding::new(&RULE, format!("{} {why}", s.label), fix).at(s, dest);
    f.sglang_error = Some(RULE.sglang_errors[i]);
    f
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let arch = ctx.model.architecture();
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some()) {
        // V4.1 text-only workers use the standard transfer; V4 and V4.1 share their architecture.
        if s.switch("language_model_only") && arch != Some("DeepseekV4ForCausalLM") {
            let why = "has --language-model-only, which SGLang refuses on a PD server for this model".to_owned();
            out.push(finding(0, s, why, "remove `--language-model-only`", "language_model_only"));
        }
        if s.value("dsv4_attn_backend").as_deref() == Some("trtllm") {
            let why = "has --dsv4-attn-backend trtllm, which SGLang does not run in PD yet".to_owned();
            out.push(finding(1, s, why, "use `--dsv4-attn-backend auto` (or flashmla)", "dsv4_attn_backend"));
        }
        if s.value("mamba_radix_cache_strategy").as_deref() == Some("extra_buffer_lazy") {
            let why = "has --mamba-radix-cache-strategy extra_buffer_lazy, which PD does not support".to_owned();
            let fix = "use `--mamba-radix-cache-strategy extra_buffer`";
            out.push(finding(2, s, why, fix, "mamba_radix_cache_strategy"));
        }
        if s.value("disaggregation_decode_allocation_policy").as_deref() == Some("prefill_complete") {
            match ctx.model.is_swa_hybrid() {
                Some(true) => {
                    let why = "allocates prefill_complete, but the model's sliding-window layers add SWA state".into();
                    let fix = "use `--disaggregation-decode-allocation-policy early`";
                    out.push(finding(3, s, why, fix, "disaggregation_decode_allocation_policy"));
                }
                Some(false) => {}
                None => out.push(skipped(ctx, s, "--disaggregation-decode-allocation-policy prefill_complete")),
            }
        }
        let threshold = s.value("disaggregation_decode_host_receive_threshold").and_then(|v| crate::float::parse(v.trim()));
        if threshold.is_some_and(|t| t < 1.0) {
            match ctx.model.geometry.as_ref().map(|_| ctx.model.is_dsa()) {
                Some(true) => {
                    let why = "receives into host memory, but the model's DSA indexer state has no host pool".into();
                    let fix = "set `--disaggregation-decode-host-receive-threshold 1` (off)";
                    out.push(finding(4, s, why, fix, "disaggregation_decode_host_receive_threshold"));
                }
                Some(false) => {}
                None => out.push(skipped(ctx, s, "--disaggregation-decode-host-receive-threshold below 1")),
            }
        }
    }
    out
}

/// The note that a check of the model's KV kind was skipped.
fn skipped(ctx: &Context, s: &ServerView, what: &str) -> Finding {
    let message = format!("{} has {what}; model geometry unknown, the model's KV kind not checked", s.label);
    Finding::new(&RULE, message, "name the model so that pdlaunch knows its KV state").severity(Severity::Note).or_preset(ctx)
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    fn with(preset: &str, decode: &[&str]) -> Vec<crate::rules::Finding> {
        let mut d = llama();
        d.model.preset = Some(preset.into());
        d.model.geometry = None;
        d.decode.extra_args = decode.iter().map(|a| (*a).into()).collect();
        findings(&d, "PD067")
    }

    #[test]
    fn settings_the_model_supports_pass() {
        assert!(findings(&llama(), "PD067").is_empty());
        let policy = ["--disaggregation-decode-allocation-policy", "prefill_complete"];
        assert!(with("llama-3.1-8b-instruct", &policy).is_empty());
        assert!(with("deepseek-v3.2", &policy).is_empty());
        let receive = ["--disaggregation-decode-host-receive-threshold", "0.5"];
        assert!(with("gpt-oss-20b", &receive).is_empty());
        assert!(with("llama-3.1-8b-instruct", &["--mamba-radix-cache-strategy", "extra_buffer"]).is_empty());
    }

    #[test]
    fn refused_settings_are_caught_with_the_model_kind() {
        let f = with("gpt-oss-20b", &["--disaggregation-decode-allocation-policy", "prefill_complete"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("SWA state"), "{}", f[0].message);
        let f = with("deepseek-v3.2", &["--disaggregation-decode-host-receive-threshold", "0.5"]);
        assert!(f[0].sglang_error.unwrap().starts_with("Host receive supports"), "{f:?}");
        let f = with("llama-3.1-8b-instruct", &["--language-model-only", "--dsv4-attn-backend", "trtllm"]);
        assert_eq!(f.len(), 2, "{f:?}");
    }

    #[test]
    fn without_the_models_geometry_the_kind_checks_are_skipped() {
        let mut d = llama();
        d.model.geometry = None;
        d.model.path = "/models/unknown".into();
        d.decode.extra_args = ["--disaggregation-decode-allocation-policy", "prefill_complete"].map(Into::into).into();
        let f = findings(&d, "PD067");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Note), "{f:?}");
    }
}
