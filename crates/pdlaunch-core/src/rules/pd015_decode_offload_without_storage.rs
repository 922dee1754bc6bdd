//! PD015: TODO (placeholder being written).

use super::{Context, Finding, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PD015",
    name: "decode-offload-without-storage",
    severity: Severity::Error,
    summary: "TODO",
    explanation: "TODO",
    sglang_errors: &[],
    fix: "TODO",
    check,
};

fn check(_ctx: &Context) -> Vec<Finding> {
    Vec::new()
}
