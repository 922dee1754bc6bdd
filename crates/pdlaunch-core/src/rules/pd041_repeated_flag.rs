//! PD041: one command line gives the same option more than once.

use super::{Check, Context, Finding, Rule, Severity};
use crate::plan::Origin;
use crate::spec::{ArgUse, Parsed};

/// argparse keeps the last occurrence of a plain option (aliases and abbreviations included), so
/// an earlier one is dead text that a reader takes for the setting. Copy-pasted command lines
/// collect these: a tuned value appended at the end silently overrides the one in the middle,
/// or a duplicated `--disaggregation-bootstrap-port` leaves two candidates for one port.
///
/// Only text written by the user is checked (linted files); in a deployment, `extra_args` that
/// override a field are PD027's.
pub static RULE: Rule = Rule {
    code: "PD041",
    name: "repeated-flag",
    severity: Severity::Warning,
    summary: "an option is given more than once on one command line; only the last one counts",
    explanation: "SGLang and the router read their command lines with argparse, which stores each option once: a \
        later occurrence (also through an alias such as `--tp` for `--tp-size`, or an SGLang `--config` file \
        overridden on the command line) replaces the earlier one without a word. The earlier value then misleads \
        whoever reads or edits the script, and edits to it have no effect.",
    sglang_errors: &["no error: argparse keeps the last occurrence of a repeated option"],
    fix: "Keep one occurrence of the option, with the value you mean.",
    check: Check::Commands(check),
};

fn repeated<'a>(parsed: &'a Parsed, origins: &[Origin]) -> Vec<(&'static str, Vec<&'a ArgUse>)> {
    // Appending options (the router's `--prefill`/`--decode`) are meant to repeat; options that
    // came from elsewhere than the source (a `--config` file) are reported by their own rule.
    let counted = |u: &ArgUse| {
        !(matches!(&u.value, crate::spec::ArgValue::Many(_)) && matches!(u.dest, "prefill" | "decode"))
            && matches!(origins.get(u.index), Some(Origin::Source { .. }))
    };
    let uses = &parsed.uses;
    let mut out = Vec::new();
    for (i, u) in uses.iter().enumerate() {
        // Each destination once, at its first counted use; most argvs repeat nothing.
        if !counted(u) || uses[..i].iter().any(|p| p.dest == u.dest && counted(p)) {
            continue;
        }
        if uses[i + 1..].iter().any(|l| l.dest == u.dest && counted(l)) {
            out.push((u.dest, uses[i..].iter().filter(|l| l.dest == u.dest && counted(l)).collect()));
        }
    }
    out
}

fn shown(u: &ArgUse) -> String {
    match &u.value {
        crate::spec::ArgValue::Switch(_) => format!("`{}`", u.spelling),
        v => format!("`{} {}`", u.spelling, v.as_text()),
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut each = |label: &str, parsed: &Parsed, origins: &[Origin]| {
        for (_, uses) in repeated(parsed, origins) {
            let last = uses[uses.len() - 1];
            let at = |u: &ArgUse| origins.get(u.index).map(ToString::to_string).unwrap_or_default();
            let earlier: Vec<String> =
                uses[..uses.len() - 1].iter().map(|u| format!("{} at {}", shown(u), at(u))).collect();
            let message = format!(
                "{label}: {} is given {} times; argparse keeps the last, {} at {}, and ignores {}",
                last.canonical,
                uses.len(),
                shown(last),
                at(last),
                earlier.join(", ")
            );
            let fix = format!("remove {} and keep {}", earlier.join(", "), shown(last));
            let f = uses.iter().fold(Finding::new(&RULE, message, fix), |f, u| {
                f.at_origin(label.to_owned(), Some(&u.spelling), origins[u.index].clone())
            });
            out.push(f);
        }
    };
    for s in &ctx.servers {
        each(&s.label, &s.parsed, &s.origins);
    }
    if let Some(r) = &ctx.router {
        each("router", &r.parsed, &r.origins);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn deployments_are_left_to_pd027() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size".into(), "16".into()];
        assert!(findings(&d, "PD041").is_empty());
    }
}
