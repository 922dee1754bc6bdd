//! PD034: an explicit `--ep-size` that SGLang overwrites with the TP size.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::release::Release;

/// Every MoE all-to-all backend spans expert parallelism over the whole TP group, so SGLang sets
/// `ep_size = tp_size` whatever `--ep-size` says (with only an info/warning line in the log).
pub static RULE: Rule = Rule {
    code: "PD034",
    name: "ep-size-overridden",
    severity: Severity::Warning,
    summary: "an explicit `--ep-size` differs from tp while an all-to-all backend overwrites it",
    explanation: "With `--moe-a2a-backend` set to DeepEP, Mooncake, NIXL, MoRI, pplx, FlashInfer, MegaMoE or Ascend \
        FuseEP, SGLang's post-processing forces `ep_size = tp_size`. An explicit `--ep-size` that differs is \
        silently replaced, so the deployment says one expert layout and the servers run another (memory per GPU, \
        expert placement, EPLB files).",
    sglang_errors: &[
        "{view.moe_a2a_backend} MoE is enabled. The expert parallel size is adjusted from {view.ep_size} to the tensor parallel size [{view.tp_size}].",
        "DeepEP MoE is enabled. The expert parallel size is adjusted to be the same as the tensor parallel size[{self.tp_size}].",
    ],
    fix: "Leave `ep` unset (or equal to `tp`) on a side that uses an all-to-all MoE backend.",
    check: Check::Deployment(check),
};

/// Backends that force `ep_size = tp_size`.
const EP_SPANNING: &[&str] =
    &["deepep", "deepep_v2", "mooncake", "nixl", "mori", "pplx", "flashinfer", "megamoe", "ascend_fuseep"];

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let ep: u32 = s.explicit("ep_size")?.parse().ok()?;
        let backend = s.value("moe_a2a_backend").filter(|b| EP_SPANNING.contains(&b.as_str()))?;
        let tp = s.size("tp_size");
        (ep != tp).then(|| (ep, tp, backend, s.origin("ep_size").map(ToString::to_string).unwrap_or_default()))
    });
    groups
        .into_iter()
        .map(|((ep, tp, backend, origin), servers)| {
            let message = format!(
                "{}: --ep-size {ep} is overwritten with tp_size {tp} because --moe-a2a-backend {backend} spans the \
                 experts over the whole TP group",
                labels(&servers)
            );
            let fix = format!("remove `{origin}` (SGLang runs EP {tp}) or set it to {tp}");
            let mut f = servers
                .iter()
                .fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "ep_size").at(s, "moe_a2a_backend"));
            if servers[0].release < Release::V0_5_19 && backend == "deepep" {
                f.sglang_error = RULE.sglang_errors.get(1).copied();
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn unset_or_equal_ep_passes() {
        assert!(!codes(&deepseek()).contains(&"PD034"));
        let mut d = deepseek();
        d.decode.ep = Some(16);
        assert!(!codes(&d).contains(&"PD034"));
        // Without an all-to-all backend the value is honoured.
        let mut d = deepseek();
        d.decode.ep = Some(8);
        d.decode.moe_a2a_backend = None;
        assert!(!codes(&d).contains(&"PD034"));
    }

    #[test]
    fn ep_below_tp_with_deepep_warns() {
        let mut d = deepseek();
        d.prefill.ep = Some(8);
        let f = findings(&d, "PD034");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("--ep-size 8 is overwritten with tp_size 16") && f[0].message.contains("deepep"));
        assert!(f[0].fix.contains("`prefill.ep`"), "{}", f[0].fix);
    }
}
