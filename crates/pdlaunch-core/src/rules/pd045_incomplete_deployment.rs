//! PD045: the linted material holds only part of a PD deployment.

use super::{Check, Context, Finding, Rule, Severity};

/// Reported by the linter: servers of one side only, a router without its servers, or servers
/// that show no sign of prefill-decode disaggregation.
pub static RULE: Rule = Rule {
    code: "PD045",
    name: "incomplete-deployment",
    severity: Severity::Note,
    summary: "only part of a prefill-decode deployment was found, so cross-side checks were skipped",
    explanation: "Most PD rules compare a prefill with a decode, or the router with both. When the files given \
        hold only one side (say `prefill.sh` without `decode.sh`), those comparisons cannot run; the per-server \
        checks still do.",
    sglang_errors: &[],
    fix: "Lint every file of the deployment in one run: `pdlaunch lint prefill.sh decode.sh router.sh`.",
    check: Check::Commands(check),
};

/// The linter reports these while grouping launches.
fn check(_: &Context) -> Vec<Finding> {
    Vec::new()
}
