//! PD006: a setting that should be equal on both sides (per the flag table) differs.

use super::{Check, Context, Finding, Rule, Severity};
use crate::flags::Relation;

/// Every `ShouldMatch` flag of the table (context length, served model name), compared between
/// each prefill and decode pair with the same machinery as PD005.
///
/// These do not change the KV bytes, but they change which requests one side accepts or how
/// clients and the gateway name the model, so a difference shows up as aborted requests or a
/// confusing model list rather than as a crash.
pub static RULE: Rule = Rule {
    code: "PD006",
    name: "should-match-setting",
    severity: Severity::Warning,
    summary: "a setting that should be identical on prefill and decode differs",
    explanation: "Both sides tokenize every request. A prefill that accepts a longer context than the decode \
        can pre-allocate aborts those requests after the prefill work is done (the decode may then emit \
        garbage, sglang#30233). A different served model name makes the gateway group the two sides as \
        different models, and clients see the decode's name.",
    sglang_errors: &[
        "requests longer than the decode's context length are aborted after the prefill ran",
        "the gateway lists the prefill and the decode under different model names",
    ],
    fix: "Set the value once in its `model.*` field and remove per-side overrides from `extra_args`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    super::pd005_shared_setting_mismatch::table_check(ctx, Relation::ShouldMatch, &RULE)
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn examples_pass() {
        assert!(!codes(&llama()).contains(&"PD006"));
        assert!(!codes(&deepseek()).contains(&"PD006"));
    }

    #[test]
    fn context_length_override_is_a_warning_with_both_values() {
        let mut d = llama();
        d.model.context_length = Some(131072);
        d.decode.extra_args = vec!["--context-length".into(), "32k".into()];
        let f = findings(&d, "PD006");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        let m = &f[0].message;
        assert!(m.contains("prefill[0] has `131072` (from `model.context_length`)"), "{m}");
        assert!(m.contains("decode[0] has `32000`"), "{m}");
        assert!(f[0].fix.contains("model.context_length") && f[0].fix.contains("decode.extra_args[0]"));
        // SGLang reads `128Ki` as 131072: the same length, spelled differently.
        d.decode.extra_args = vec!["--context-length".into(), "128Ki".into()];
        assert!(findings(&d, "PD006").is_empty());
    }

    #[test]
    fn served_name_on_one_side_is_compared_with_the_model_path() {
        let mut d = llama();
        d.decode.extra_args = vec!["--served-model-name".into(), "llama".into()];
        let f = findings(&d, "PD006");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`meta-llama/Llama-3.1-8B-Instruct`") && f[0].message.contains("`llama`"));
        // The same name as the model path is no difference.
        d.decode.extra_args = vec!["--served-model-name".into(), "meta-llama/Llama-3.1-8B-Instruct".into()];
        assert!(findings(&d, "PD006").is_empty());
    }
}
