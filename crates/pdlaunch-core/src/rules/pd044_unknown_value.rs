//! PD044: a value only known when the process starts keeps a check from running.

use super::{Check, Context, Finding, Rule, Severity};

/// Reported by the linter: `${VAR}` the script never sets, `$(command)`, a Kubernetes `$(VAR)`
/// from `valueFrom`, or a `--config` file that was not given. pdlaunch keeps such a value
/// symbolic instead of guessing, and says which checks it could not run.
pub static RULE: Rule = Rule {
    code: "PD044",
    name: "unknown-value",
    severity: Severity::Note,
    summary: "a value is only known at run time, so a check was skipped",
    explanation: "A variable set outside the file (the environment, a scheduler, a pod field), a command \
        substitution or a config file that was not linted can hold anything. Rather than assume a value and \
        report drift that may not exist (or miss drift that does), pdlaunch names the value and the rules it \
        could not run.",
    sglang_errors: &[],
    fix: "Write the value literally or define the variable in the same file, or lint the referenced files too.",
    check: Check::Commands(check),
};

/// The linter reports these while reading files.
fn check(_: &Context) -> Vec<Finding> {
    Vec::new()
}
