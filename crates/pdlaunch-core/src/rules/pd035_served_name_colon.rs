//! PD035: a served model name with a colon.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::release::Release;

/// SGLang reserves `:` in the `model` field of OpenAI requests for `base:adapter` LoRA selection,
/// so since 0.5.6 it refuses a served model name that contains one (the name defaults to the model
/// path).
pub static RULE: Rule = Rule {
    code: "PD035",
    name: "served-name-colon",
    severity: Severity::Error,
    summary: "the served model name contains `:`",
    explanation: "OpenAI-compatible requests may select a LoRA adapter as `model: base:adapter`, so SGLang splits the \
        requested model name at the first colon. A served name such as `gpt-oss:120b` is then read as base \
        `gpt-oss` with adapter `120b`, and requests fail (\"The following requested LoRA adapters are not loaded\"). \
        Since 0.5.6 `check_server_args` rejects such a name at startup; the name defaults to `--model-path`, so a \
        path with a colon needs an explicit `--served-model-name`.",
    sglang_errors: &[
        "served_model_name cannot contain a colon (':') character. The colon is reserved for the 'model:adapter' syntax used in LoRA adapter specification. Invalid value: '{cfg.served_model_name}'",
        "The following requested LoRA adapters are not loaded: {adapter}",
    ],
    fix: "Set `model.served_name` to a name without `:` (e.g. replace it with `-`).",
    check: Check::Deployment(check),
};

/// Object-store URIs (Run:ai streamer) are exempt from the check.
fn is_object_uri(v: &str) -> bool {
    ["s3://", "gs://", "az://"].iter().any(|p| v.get(..p.len()).is_some_and(|head| head.eq_ignore_ascii_case(p)))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let (name, dest) = match s.explicit("served_model_name") {
            Some(n) => (n, "served_model_name"),
            None => (s.value("model_path")?, "model_path"),
        };
        let bad = name.contains(':') && !is_object_uri(&name);
        bad.then(|| (name, dest, s.origin(dest).map(ToString::to_string).unwrap_or_default(), s.release))
    });
    groups
        .into_iter()
        .map(|((name, dest, origin, release), servers)| {
            let rejected = release >= Release::V0_5_6;
            let implicit = if dest == "model_path" { " (the default served name is the model path)" } else { "" };
            let message = if rejected {
                format!(
                    "{}: the served model name `{name}`{implicit} contains ':', which SGLang {} rejects at startup",
                    labels(&servers),
                    release.as_str()
                )
            } else {
                format!(
                    "{}: the served model name `{name}`{implicit} contains ':'; SGLang {} accepts it, but requests \
                     naming it may be parsed as `model:adapter`, and newer releases reject it",
                    labels(&servers),
                    release.as_str()
                )
            };
            let clean = name.replace(':', "-");
            let fix = if dest == "model_path" {
                format!("set `model.served_name: {clean}`")
            } else {
                format!("set `{origin}` to `{clean}`")
            };
            let mut f = servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, dest));
            if !rejected {
                f = f.severity(Severity::Warning);
                f.sglang_error = RULE.sglang_errors.get(1).copied();
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::release::Release;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn plain_names_pass() {
        assert!(!codes(&example("qwen3-2p1d-nixl").unwrap()).contains(&"PD035"));
        assert!(!codes(&llama()).contains(&"PD035"));
    }

    #[test]
    fn colon_in_served_name_fails_on_both_sides() {
        let mut d = llama();
        d.model.served_name = Some("gpt-oss:120b".into());
        let f = findings(&d, "PD035");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("prefill[0], decode[0]") && f[0].message.contains("`gpt-oss:120b`"));
        assert!(f[0].fix.contains("`model.served_name`") && f[0].fix.contains("gpt-oss-120b"), "{}", f[0].fix);
    }

    #[test]
    fn colon_in_model_path_before_0_5_6_warns() {
        let mut d = llama();
        d.sglang_version = Release::V0_5_3;
        d.model.path = "/models/llama:8b".into();
        let f = findings(&d, "PD035");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("default served name is the model path"), "{}", f[0].message);
        assert!(f[0].fix.contains("model.served_name: /models/llama-8b"), "{}", f[0].fix);
    }
}
