//! PD021: `--deepep-mode normal` on a decode server turns its CUDA graphs off.

use super::{group, labels, Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// With `--moe-a2a-backend deepep`, the `normal` dispatch mode disables CUDA graphs for both
/// phases. That suits a prefill (it runs no decode graphs anyway) but costs a decode server most of
/// its per-token speed. `auto` picks low-latency dispatch for decode batches and normal for
/// prefill batches.
pub static RULE: Rule = Rule {
    code: "PD021",
    name: "deepep-normal-on-decode",
    severity: Severity::Warning,
    summary: "a decode server uses DeepEP `normal` mode, which disables its CUDA graphs",
    explanation: "SGLang turns CUDA graphs off whenever `--moe-a2a-backend deepep` runs with `--deepep-mode normal`, \
        because the normal (high-throughput) dispatch kernels cannot be captured. On a prefill server that is the \
        intended pattern; on a decode server every step then runs eagerly, which multiplies the time per output \
        token. Decode servers should use `low_latency` (or `auto`, which picks low-latency for decode batches).",
    sglang_errors: &["Cuda graph is disabled because deepep_mode=`normal`"],
    fix: "Set the decode side's `deepep_mode` to `low_latency` (or `auto`); keep `normal` on the prefill side only.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(ctx.role(Role::Decode), |s| {
        let on = s.value("moe_a2a_backend").as_deref() == Some("deepep")
            && s.value("deepep_mode").as_deref() == Some("normal");
        on.then(|| s.origin("deepep_mode").map(ToString::to_string).unwrap_or_default())
    });
    groups
        .into_iter()
        .map(|(origin, servers)| {
            let message = format!(
                "{} run{} DeepEP with --deepep-mode normal: SGLang disables CUDA graphs there, so every decode step \
                 runs eagerly",
                labels(&servers),
                if servers.len() == 1 { "s" } else { "" }
            );
            let fix = if origin.contains("extra_args") {
                format!("remove `--deepep-mode normal` from `{origin}` and set `decode.deepep_mode: low_latency`")
            } else if origin.is_empty() || origin == "(derived)" {
                "pass `--deepep-mode low_latency` (or `auto`) to the decode servers".to_owned()
            } else {
                format!("set `{origin}` to `low_latency` (or `auto`)")
            };
            servers
                .iter()
                .fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "deepep_mode").at(s, "moe_a2a_backend"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::choices::DeepepMode;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn deepseek_example_uses_low_latency_on_decode() {
        assert!(!codes(&deepseek()).contains(&"PD021"));
        assert!(!codes(&llama()).contains(&"PD021"));
    }

    #[test]
    fn normal_on_decode_warns_once_per_side() {
        let mut d = deepseek();
        d.decode.deepep_mode = Some(DeepepMode::Normal);
        let f = findings(&d, "PD021");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("decode[0] node 0, decode[0] node 1"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode.deepep_mode") && f[0].fix.contains("low_latency"), "{}", f[0].fix);
    }

    #[test]
    fn normal_without_deepep_is_ignored() {
        let mut d = deepseek();
        d.decode.deepep_mode = Some(DeepepMode::Normal);
        d.decode.moe_a2a_backend = None;
        assert!(findings(&d, "PD021").is_empty());
    }
}
