//! PD013: a prefill server with the `fake` transfer backend.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// `fake` lets a decode run synthetic benchmarks without any prefill; a prefill cannot use it and
/// SGLang asserts at startup.
pub static RULE: Rule = Rule {
    code: "PD013",
    name: "fake-backend-on-prefill",
    severity: Severity::Error,
    summary: "a prefill server uses the `fake` transfer backend",
    explanation: "The `fake` transfer backend moves no KV: it exists so that a decode server can be benchmarked \
        with synthetic requests and no prefill at all. A prefill server refuses it at startup.",
    sglang_errors: &["Prefill server does not support 'fake' as the transfer backend"],
    fix: "Set `shared.transfer_backend` to a real backend (mooncake or nixl) and remove `fake` from \
        `prefill.extra_args`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in ctx.heads(Role::Prefill) {
        if p.value("disaggregation_transfer_backend").as_deref() != Some("fake") {
            continue;
        }
        let decodes: Vec<String> = ctx
            .heads(Role::Decode)
            .map(|d| format!("{} uses `{}`", d.label, d.value("disaggregation_transfer_backend").unwrap_or_default()))
            .collect();
        let message = format!(
            "{} has --disaggregation-transfer-backend fake{}",
            p.label,
            if decodes.is_empty() { String::new() } else { format!(" ({})", decodes.join(", ")) }
        );
        let origin = p.origin("disaggregation_transfer_backend").map(ToString::to_string);
        let fix = match origin.as_deref() {
            Some("shared.transfer_backend") | None => {
                "set `shared.transfer_backend` to `mooncake` or `nixl`; `fake` is for decode-only synthetic \
                 benchmarks"
                    .to_owned()
            }
            Some(o) => format!("remove the override at `{o}`; `fake` is for decode-only synthetic benchmarks"),
        };
        out.push(Finding::new(&RULE, message, fix).at(p, "disaggregation_transfer_backend"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn real_backends_pass() {
        assert!(!codes(&llama()).contains(&"PD013"));
        assert!(!codes(&deepseek()).contains(&"PD013"));
        // `fake` on the decode alone is SGLang's synthetic benchmark mode.
        let mut d = llama();
        d.decode.extra_args = vec!["--disaggregation-transfer-backend".into(), "fake".into()];
        assert!(findings(&d, "PD013").is_empty());
    }

    #[test]
    fn prefill_fake_is_caught() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--disaggregation-transfer-backend".into(), "fake".into()];
        let f = findings(&d, "PD013");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("prefill[0] has --disaggregation-transfer-backend fake"), "{}", f[0].message);
        assert!(f[0].message.contains("decode[0] uses `mooncake`"), "{}", f[0].message);
        assert!(f[0].fix.contains("prefill.extra_args[0]"), "{}", f[0].fix);
    }
}
