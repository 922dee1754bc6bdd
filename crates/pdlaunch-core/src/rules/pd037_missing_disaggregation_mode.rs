//! PD037: a server without `--disaggregation-mode prefill|decode`.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// Without a disaggregation mode (absent, or `null`) SGLang starts a normal, colocated server: a
/// would-be prefill starts no bootstrap server, a would-be decode never asks a prefill for KV.
pub static RULE: Rule = Rule {
    code: "PD037",
    name: "missing-disaggregation-mode",
    severity: Severity::Error,
    summary: "a server runs without `--disaggregation-mode prefill` or `decode`",
    explanation: "`--disaggregation-mode` defaults to `null`, a normal server. Such a process registers no KV with a \
        peer: as a prefill it starts no bootstrap server, so decodes fail to fetch its parallel info and requests \
        routed through it hang until the bootstrap timeout; as a decode it ignores the router's bootstrap fields \
        and recomputes the prompt itself. In a deployment the mode is rendered from the side, so only an \
        `extra_args` override can remove it.",
    sglang_errors: &["Error fetching prefill parallel info from bootstrap: {e}"],
    fix: "Start every PD server with `--disaggregation-mode prefill` or `--disaggregation-mode decode`; do not \
        override it in `extra_args`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(ctx.servers.iter().filter(|s| s.role.is_none()), |s| {
        let value = s.explicit("disaggregation_mode");
        let origin = s.origin("disaggregation_mode").map(ToString::to_string);
        Some((value, origin))
    });
    groups
        .into_iter()
        .map(|((value, origin), servers)| {
            let intended = Role::BOTH.into_iter().find(|r| servers[0].label.starts_with(r.as_str()));
            let how = match &value {
                Some(v) => format!("runs with `--disaggregation-mode {v}`"),
                None => "has no `--disaggregation-mode`".to_owned(),
            };
            let message = format!(
                "{} {how}: SGLang starts a normal server that takes no part in the KV transfer{}",
                labels(&servers),
                match intended {
                    Some(Role::Prefill) => " (no bootstrap server starts, so decodes cannot reach it)",
                    Some(Role::Decode) => " (it never receives KV from a prefill)",
                    None => "",
                }
            );
            let fix = match (origin.as_deref(), intended) {
                (Some(o), Some(r)) if o.contains("extra_args") => {
                    format!(
                        "remove `--disaggregation-mode {}` from `{o}`; pdlaunch renders `{r}`",
                        value.unwrap_or_default()
                    )
                }
                (_, Some(r)) => format!("add `--disaggregation-mode {r}`"),
                (_, None) => "add `--disaggregation-mode prefill` or `--disaggregation-mode decode`".to_owned(),
            };
            servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "disaggregation_mode"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn rendered_modes_pass() {
        assert!(!codes(&llama()).contains(&"PD037"));
        assert!(!codes(&deepseek()).contains(&"PD037"));
    }

    #[test]
    fn null_mode_in_extra_args() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--disaggregation-mode".into(), "null".into()];
        let f = findings(&d, "PD037");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("prefill[0] runs with `--disaggregation-mode null`"), "{}", f[0].message);
        assert!(f[0].message.contains("no bootstrap server"), "{}", f[0].message);
        assert!(f[0].fix.contains("`prefill.extra_args[0]`"), "{}", f[0].fix);
    }
}
