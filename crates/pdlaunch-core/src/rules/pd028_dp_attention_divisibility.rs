//! PD028: DP attention whose width does not divide the TP size.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};

/// DP attention splits the `tp_size` GPUs of a server into `dp` attention groups of `tp / dp`
/// GPUs each; SGLang asserts the division is exact while it post-processes the arguments.
pub static RULE: Rule = Rule {
    code: "PD028",
    name: "dp-attention-divisibility",
    severity: Severity::Error,
    summary: "the DP-attention width does not divide the TP size",
    explanation: "With DP attention (`--attn-dp-size N`, or `--dp-size N --enable-dp-attention` before 0.5.23) each \
        of the N attention replicas runs on `tp_size / N` GPUs, and the MoE layers span all `tp_size` GPUs. SGLang \
        asserts `tp_size % dp_size == 0` when it reads the arguments, so the server exits before loading the model; \
        the peer side then waits on a bootstrap that never comes up.",
    sglang_errors: &["assert self.tp_size % self.dp_size == 0"],
    fix: "Choose a DP-attention width (`attn_dp`) that divides the side's `tp`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let (tp, dp) = (s.size("tp_size"), s.attn_dp());
        // The origin is formatted only for servers that break the rule.
        (dp > 1 && tp % dp != 0).then(|| (tp, dp, s.origin("tp_size").map(ToString::to_string).unwrap_or_default()))
    });
    groups
        .into_iter()
        .map(|((tp, dp, _), servers)| {
            let s = servers[0];
            let dp_dest = if s.explicit("attn_dp_size").is_some() { "attn_dp_size" } else { "dp_size" };
            let dp_at = s.origin(dp_dest).map_or_else(String::new, |o| format!(" (from `{o}`)"));
            let message =
                format!("{}: tp_size {tp} is not divisible by the DP-attention width {dp}{dp_at}", labels(&servers));
            let side = s.role.map_or("the side", |r| r.as_str());
            let options: Vec<String> = super::divisors(tp).iter().skip(1).map(u32::to_string).collect();
            let fix = if options.is_empty() {
                format!(
                    "DP attention needs tp_size > 1: raise `{side}.tp` to a multiple of {dp} or drop `{side}.attn_dp`"
                )
            } else {
                format!(
                    "set `{side}.attn_dp` to a divisor of {tp} ({}) or `{side}.tp` to a multiple of {dp}",
                    options.join(", ")
                )
            };
            servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "tp_size").at(s, dp_dest))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::release::Release;
    use crate::rules::testing::*;

    #[test]
    fn deepseek_dp_divides_tp() {
        assert!(!codes(&deepseek()).contains(&"PD028"));
        assert!(!codes(&llama()).contains(&"PD028"));
    }

    #[test]
    fn attn_dp_not_dividing_tp() {
        let mut d = deepseek();
        d.decode.attn_dp = 6;
        let f = findings(&d, "PD028");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("tp_size 16 is not divisible by the DP-attention width 6"), "{}", f[0].message);
        assert!(f[0].message.contains("decode[0] node 0, decode[0] node 1"), "{}", f[0].message);
        assert!(f[0].fix.contains("`decode.attn_dp`") && f[0].fix.contains("2, 4, 8, 16"), "{}", f[0].fix);
    }

    #[test]
    fn old_release_dp_size_form_is_checked_too() {
        let mut d = deepseek();
        d.sglang_version = Release::V0_5_10;
        d.prefill.attn_dp = 3;
        let f = findings(&d, "PD028");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("from `prefill.attn_dp`"), "{}", f[0].message);
    }
}
