//! PD041: one command line gives the same option more than once.

use super::{Context, Finding, Rule, Severity};
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
    check,
};

fn repeated<'a>(parsed: &'a Parsed, origins: &[Origin]) -> Vec<(String, Vec<&'a ArgUse>)> {
    let mut out: Vec<(String, Vec<&ArgUse>)> = Vec::new();
    for u in &parsed.uses {
        // Appending options (the router's `--prefill`/`--decode`) are meant to repeat.
        if matches!(&u.value, crate::spec::ArgValue::Many(_)) && matches!(u.dest.as_str(), "prefill" | "decode") {
            continue;
        }
        if !matches!(origins.get(u.index), Some(Origin::Source { .. })) {
            continue;
        }
        match out.iter_mut().find(|(d, _)| *d == u.dest) {
            Some((_, v)) => v.push(u),
            None => out.push((u.dest.clone(), vec![u])),
        }
    }
    out.retain(|(_, v)| v.len() > 1);
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
