//! PD039: the rendered `--page-size` is replaced by the one SGLang forces for the architecture.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};

/// SGLang overrides the page size for some architectures after reading the arguments (DSA models
/// 64, DeepSeek-V4 256). Both sides get the same override, so PD001 stays quiet, but the value in
/// the deployment is not the one in use.
pub static RULE: Rule = Rule {
    code: "PD039",
    name: "page-size-set-by-model",
    severity: Severity::Warning,
    summary: "the architecture forces a page size other than the one rendered",
    explanation: "For DeepSeek sparse-attention models (DeepSeek-V3.2, GLM-5) SGLang sets the page size to 64, and \
        for DeepSeek-V4 to 256, whatever `--page-size` says. Everything sized in pages then uses the forced \
        value: the KV layout both sides transfer, the chunked-prefill multiple, the staging buffer. A deployment \
        that says 16 while SGLang uses 64 is misleading to read and to check against.",
    sglang_errors: &["no error: SGLang replaces --page-size for this architecture (DSA 64, DeepSeek-V4 256)"],
    fix: "Set `shared.page_size` to the value the architecture forces.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(arch) = ctx.model.architecture() else {
        if ctx.servers.is_empty() {
            return Vec::new();
        }
        let message = "model geometry unknown, rule skipped (SGLang forces the page size for DSA models to 64 and \
            for DeepSeek-V4 to 256)";
        let fix = "set `model.preset`, `model.geometry.architecture`, or pass `--model-config config.json`";
        return vec![Finding::new(&RULE, message, fix).severity(Severity::Note).or_preset(ctx)];
    };
    let Some((forced, reason)) = ctx.model.forced_page_size() else { return Vec::new() };
    let groups = group(&ctx.servers, |s| {
        let explicit = s.int("page_size").and_then(|v| u32::try_from(v).ok())?;
        (explicit != forced).then_some(explicit)
    });
    groups
        .into_iter()
        .map(|(explicit, servers)| {
            let message =
                format!("{} render --page-size {explicit}, but SGLang forces {forced} for {reason}", labels(&servers));
            let fix = format!("set `shared.page_size` to {forced} (the value {arch} runs with)");
            let f = servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "page_size"));
            f.suggest(ctx, "shared.page_size", forced)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn matching_or_plain_architectures_pass() {
        assert!(!codes(&llama()).contains(&"PD039"));
        let mut d = deepseek();
        d.model.geometry.as_mut().unwrap().architecture = Some("DeepseekV32ForCausalLM".into());
        // The example already pins 64.
        assert!(findings(&d, "PD039").is_empty());
    }

    #[test]
    fn dsa_override_is_reported_once_for_all_servers() {
        let mut d = deepseek();
        d.model.geometry = None;
        d.model.preset = Some("glm-5.1".into());
        d.shared.page_size = 16;
        let f = findings(&d, "PD039");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .ends_with("render --page-size 16, but SGLang forces 64 for the DSA architecture GlmMoeDsaForCausalLM"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.starts_with("prefill[0] node 0, prefill[0] node 1, decode[0] node 0"), "{}", f[0].message);
        assert_eq!(f[0].fix, "set `shared.page_size` to 64 (the value GlmMoeDsaForCausalLM runs with)");
        let fixed = crate::deployment_fix::fix(&d, &f[0]).expect("a one-click fix");
        assert_eq!(fixed.title, "Set shared.page_size to 64");
        assert!(findings(&fixed.deployment, "PD039").is_empty());
        // Both sides agree on the forced value: no mismatch.
        assert!(findings(&d, "PD001").is_empty());
    }

    #[test]
    fn unknown_architecture_is_a_note() {
        let mut d = llama();
        d.model.geometry.as_mut().unwrap().architecture = None;
        let f = findings(&d, "PD039");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Note);
        assert!(f[0].message.starts_with("model geometry unknown, rule skipped"));
    }
}
