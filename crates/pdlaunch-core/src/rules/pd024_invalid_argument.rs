//! PD024: an argument the target release's argparse rejects.

use super::{Check, Context, Finding, Material, Rule, Severity};
use crate::flags;
use crate::plan::Origin;
use crate::release::{Release, RouterRelease};
use crate::spec::{ArgProblem, ArgProblemKind, Spec};

/// argparse exits at startup on an unknown option, an ambiguous abbreviation (`--pp`), a value
/// outside the choices or of the wrong type, a missing value, or a stray positional.
///
/// This rule reports problems in what the user wrote verbatim (`extra_args`, lint input); problems
/// in tokens pdlaunch renders from deployment fields are PD025's, because there the fix is the
/// field or the target release.
pub static RULE: Rule = Rule {
    code: "PD024",
    name: "invalid-argument",
    severity: Severity::Error,
    summary: "an argument is rejected by the target release's argparse",
    explanation: "SGLang's server and the router parse their command lines with argparse (abbreviations allowed): an \
        unknown option (often a flag that was renamed or removed), an abbreviation that matches several options \
        (`--pp` matches `--pp-size` and the other `--pp-*` options), a value outside the option's choices or of the \
        wrong type, a missing value, or a stray word makes the process print its usage and exit before it loads \
        anything. In a PD deployment the other side then waits for a peer that never comes up.",
    sglang_errors: &[
        "{prog}: error: unrecognized arguments: {args}",
        "{prog}: error: ambiguous option: {option} could match {matches}",
        "{prog}: error: argument {argument}: invalid choice: {value} (choose from {choices})",
        "{prog}: error: argument {argument}: invalid {type} value: {value}",
        "{prog}: error: argument {argument}: expected one argument",
        "{prog}: error: argument {argument}: expected at least one argument",
        "{prog}: error: argument {argument}: ignored explicit argument {value}",
    ],
    fix: "Spell every option as the target release's spec does (`pdlaunch explain` lists them), use a value from its \
        choices, and prefer the deployment field over `extra_args` when the schema models the flag.",
    check: Check::DeploymentAndMaterial(check, check_version),
};

/// Linted material that names an SGLang version pdlaunch has no spec of is read with the newest
/// known release before it: a note says so, and an option unknown to that release that the next
/// known one has is only a note, as the version may well have it.
fn check_version(m: &Material, found: &mut Vec<Finding>) {
    let Some(v) = m.version else { return };
    if let Some(next) = m.release.next() {
        let maybe = |f: &Finding| {
            let token = f.locations.first().and_then(|l| l.flag.as_deref()).unwrap_or("");
            let name = token.split('=').next().unwrap_or("");
            m.release.spec().resolve(name).is_err() && next.spec().get(name).is_some()
        };
        for f in found.iter_mut().filter(|f| f.code == RULE.code && maybe(f)) {
            f.severity = Severity::Note;
            f.message.push_str(&format!("; {v} lies between {} and {next}, which has it", m.release));
        }
    }
    let message = format!(
        "the material names SGLang {v}, a release pdlaunch has no argparse spec of: arguments are read with {}, the \
         newest known release before it, so an option added since may be reported as unknown",
        m.release
    );
    let fix = "name the release to check against: `--sglang-version` on the command line (\"SGLang release\" in \
               the app), one of the known releases (`pdlaunch lint --help`)";
    found.push(Finding::new(&RULE, message, fix).severity(Severity::Note));
}

/// Which program a problem belongs to, for release-aware wording.
#[derive(Clone, Copy)]
pub(super) enum Program {
    Server(Release),
    Router(RouterRelease),
}

impl Program {
    pub(super) fn name(self) -> String {
        match self {
            Program::Server(r) => format!("SGLang {}", r.as_str()),
            Program::Router(r) => format!("sglang-router {}", r.as_str()),
        }
    }
    fn specs(self) -> Vec<(String, &'static Spec)> {
        match self {
            Program::Server(_) => Release::ALL.iter().map(|r| (r.as_str().to_owned(), r.spec())).collect(),
            Program::Router(_) => RouterRelease::ALL.iter().map(|r| (r.as_str().to_owned(), r.spec())).collect(),
        }
    }
    /// Releases (of the same program) whose spec has this spelling.
    pub(super) fn releases_with(self, spelling: &str) -> Vec<String> {
        self.specs().into_iter().filter(|(_, s)| s.get(spelling).is_some()).map(|(n, _)| n).collect()
    }
    /// Releases whose spec accepts `value` for the option spelled `spelling`.
    pub(super) fn releases_accepting(self, spelling: &str, value: &str) -> Vec<String> {
        self.specs()
            .into_iter()
            .filter(|(_, s)| {
                s.get(spelling).is_some_and(|f| f.choice_strings().is_none_or(|c| c.iter().any(|x| x == value)))
            })
            .map(|(n, _)| n)
            .collect()
    }
}

/// The SGLang (argparse) text for a problem, from [`RULE`]'s list.
pub(super) fn argparse_text(kind: &ArgProblemKind) -> &'static str {
    let i = match kind {
        ArgProblemKind::Unknown { .. } | ArgProblemKind::Positional => 0,
        ArgProblemKind::Ambiguous(_) => 1,
        ArgProblemKind::BadChoice { .. } => 2,
        ArgProblemKind::BadType { .. } => 3,
        ArgProblemKind::MissingValue => 4,
        ArgProblemKind::UnexpectedValue => 6,
    };
    RULE.sglang_errors[i]
}

/// True when PD024 (not PD025) reports a problem at this origin: text the user wrote verbatim.
pub(super) fn is_verbatim(origin: &Origin) -> bool {
    match origin {
        Origin::Field { path } => path.contains("extra_args"),
        Origin::Source { .. } | Origin::Derived | Origin::Default => true,
    }
}

/// What is wrong and how to fix it, for a problem in verbatim text.
fn describe(p: &ArgProblem, program: Program, origin: &Origin) -> (String, String) {
    let t = &p.token;
    let name = program.name();
    let at = format!("`{origin}`");
    match &p.kind {
        ArgProblemKind::Unknown { suggestion } => {
            if let (Program::Server(_), Some(r)) = (program, flags::removed_flag(t)) {
                return (
                    format!("`{t}` was removed in SGLang {} and {name} rejects it", r.removed_in),
                    format!("replace `{t}` in {at} with {}", r.replacement),
                );
            }
            let elsewhere = program.releases_with(t);
            let mut message = format!("{name} has no option `{t}`");
            if !elsewhere.is_empty() {
                message.push_str(&format!(" (it exists in {})", elsewhere.join(", ")));
            }
            let fix = match suggestion {
                Some(s) => {
                    message.push_str(&format!("; did you mean `{s}`?"));
                    let field = match program {
                        Program::Server(_) => flags::server_flag(s).filter(|f| !f.field.is_empty()),
                        Program::Router(_) => {
                            flags::ROUTER_FLAGS.iter().copied().find(|f| f.name == s && !f.field.is_empty())
                        }
                    };
                    match field {
                        Some(f) => format!(
                            "replace `{t}` with `{s}` in {at}, or better remove it and set the deployment field for \
                             `{s}` ({})",
                            super::pd027_extra_arg_overrides_field::schema_field_hint(f.field)
                        ),
                        None => format!("replace `{t}` with `{s}` in {at}"),
                    }
                }
                None if !elsewhere.is_empty() => {
                    format!("remove `{t}` from {at}, or target a release that has it ({})", elsewhere.join(", "))
                }
                None => format!("remove `{t}` from {at}"),
            };
            (message, fix)
        }
        ArgProblemKind::Ambiguous(candidates) => {
            let mut message =
                format!("`{t}` is an ambiguous abbreviation in {name}: it could match {}", candidates.join(", "));
            // An option of its own in other releases: split or renamed since (`--cuda-graph-bs`).
            let elsewhere = program.releases_with(t);
            if !elsewhere.is_empty() {
                message.push_str(&format!(" (`{t}` is an option of its own in {})", elsewhere.join(", ")));
            }
            let fix = format!(
                "spell the option in full in {at}, e.g. `{}`",
                candidates.iter().min_by_key(|c| c.len()).map_or("", String::as_str)
            );
            (message, fix)
        }
        ArgProblemKind::BadChoice { value, choices } => {
            let elsewhere = program.releases_accepting(t, value);
            let mut message = format!("{name} rejects `{t} {value}`: the choices are {}", choices.join(", "));
            if !elsewhere.is_empty() {
                message.push_str(&format!(" (`{value}` is accepted by {})", elsewhere.join(", ")));
            }
            (message, format!("use one of {} for `{t}` in {at}", choices.join(", ")))
        }
        // SGLang parses these with `json.loads` / `orjson.loads`.
        ArgProblemKind::BadType { value, ty } if matches!(ty.as_str(), "loads" | "json_list_type") => (
            format!("{name} rejects `{t} {value}`: `{value}` is not valid JSON (SGLang reads it with `json.loads`)"),
            format!("give `{t}` JSON in {at}: double-quoted keys and strings, `true`/`false`/`null`"),
        ),
        ArgProblemKind::BadType { value, ty } => (
            format!("{name} rejects `{t} {value}`: `{value}` is not a valid {ty}"),
            format!("give `{t}` a value of type {ty} in {at}"),
        ),
        ArgProblemKind::MissingValue => (
            format!("`{t}` expects a value but none follows it"),
            format!("add the value after `{t}` in {at} (each token of `extra_args` is one list item)"),
        ),
        ArgProblemKind::Positional => (
            format!("`{t}` is not an option and no option before it takes a value"),
            format!("remove `{t}` from {at}, or put the option it belongs to right before it"),
        ),
        ArgProblemKind::UnexpectedValue => {
            (format!("`{t}` takes no value, but one was given with `=`"), format!("write `{t}` alone in {at}"))
        }
    }
}

/// One finding per (origin, problem), naming every process that sees it.
pub(super) fn collect(
    out: &mut Vec<(Origin, ArgProblem, Program, Vec<String>)>,
    label: &str,
    origin: Origin,
    p: &ArgProblem,
    program: Program,
) {
    match out.iter_mut().find(|(o, q, ..)| *o == origin && q.token == p.token && q.kind == p.kind) {
        Some((.., labels)) => labels.push(label.to_owned()),
        None => out.push((origin, p.clone(), program, vec![label.to_owned()])),
    }
}

/// Every argparse problem on the servers and the router, with its origin, filtered by `keep`.
pub(super) fn problems(ctx: &Context, keep: fn(&Origin) -> bool) -> Vec<(Origin, ArgProblem, Program, Vec<String>)> {
    let mut out = Vec::new();
    for s in &ctx.servers {
        for p in &s.parsed.problems {
            let origin = s.origins.get(p.index).cloned().unwrap_or(Origin::Derived);
            if keep(&origin) {
                collect(&mut out, &s.label, origin, p, Program::Server(s.release));
            }
        }
    }
    if let Some(r) = &ctx.router {
        for p in &r.parsed.problems {
            let origin = r.origins.get(p.index).cloned().unwrap_or(Origin::Derived);
            if keep(&origin) {
                collect(&mut out, "router", origin, p, Program::Router(r.release));
            }
        }
    }
    out
}

fn check(ctx: &Context) -> Vec<Finding> {
    problems(ctx, is_verbatim)
        .into_iter()
        .map(|(origin, p, program, labels)| {
            let (what, fix) = describe(&p, program, &origin);
            let message = format!("{}: {what}", labels.join(", "));
            let mut f = Finding::new(&RULE, message, fix);
            f.sglang_error = Some(argparse_text(&p.kind));
            labels.iter().fold(f, |f, l| f.at_origin(l.clone(), Some(&p.token), origin.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::release::Release;
    use crate::rules::testing::*;

    #[test]
    fn values_parsed_as_json_must_be_json() {
        // Single quotes are Python's, not JSON's: `json.loads` rejects them.
        for (flag, bad, good) in [
            ("--default-chat-template-kwargs", "{'enable_thinking': false}", "{\"enable_thinking\": false}"),
            ("--mm-process-config", "{video: {fps: 2}}", "{\"video\": {\"fps\": 2}}"),
            ("--forward-hooks", "[{name: h}]", "[{\"name\": \"h\"}]"),
            ("--sidecar-args", "[1, 2", "[1, 2]"),
        ] {
            let mut d = llama();
            d.decode.extra_args = vec![flag.into(), bad.into()];
            let f = findings(&d, "PD024");
            assert!(f.len() == 1 && f[0].message.contains("is not valid JSON"), "{flag} {bad}: {f:?}");
            d.decode.extra_args = vec![flag.into(), good.into()];
            assert!(findings(&d, "PD024").is_empty(), "{flag} {good}");
        }
    }

    #[test]
    fn examples_parse() {
        assert!(!codes(&llama()).contains(&"PD024"));
        assert!(!codes(&deepseek()).contains(&"PD024"));
    }

    #[test]
    fn misspelled_extra_arg_gets_a_suggestion_and_its_origin() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-sise".into(), "16".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("decode[0]") && f[0].message.contains("did you mean `--page-size`"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("decode.extra_args[0]") && f[0].fix.contains("shared.page_size"), "{}", f[0].fix);
        assert!(f[0].sglang_error.unwrap().contains("unrecognized arguments"));
    }

    #[test]
    fn removed_flag_names_its_replacement() {
        let mut d = deepseek();
        d.prefill.extra_args = vec!["--enable-deepep-moe".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("removed in SGLang 0.5.6"), "{}", f[0].message);
        assert!(f[0].message.contains("prefill[0] node 0, prefill[0] node 1"), "{}", f[0].message);
        assert!(f[0].fix.contains("--moe-a2a-backend deepep"), "{}", f[0].fix);
    }

    #[test]
    fn ambiguous_pp_and_bad_choice() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--pp".into(), "2".into(), "--kv-cache-dtype".into(), "fp9".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f.iter().any(|f| f.message.contains("`--pp` is an ambiguous")
                && f.message.contains("--pp-size")
                && f.fix.contains("e.g. `--pp-size`")),
            "{f:?}"
        );
        assert!(
            f.iter().any(|f| f.message.contains("`--kv-cache-dtype fp9`") && f.fix.contains("prefill.extra_args[2]")),
            "{f:?}"
        );
    }

    /// An option later split in two reads as an ambiguous abbreviation; the message says where it
    /// was an option of its own.
    #[test]
    fn ambiguous_spelling_that_was_an_option_names_its_releases() {
        let mut d = llama();
        d.sglang_version = crate::release::Release::V0_5_23;
        d.decode.extra_args = vec!["--cuda-graph-bs".into(), "256".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("it could match --cuda-graph-bs-decode, --cuda-graph-bs-prefill"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.ends_with(
                "(`--cuda-graph-bs` is an option of its own in 0.4.10.post2, 0.5.1.post3, \
            0.5.3.post3, 0.5.6.post2, 0.5.10.post1, 0.5.19)"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn flag_of_a_newer_release_names_it() {
        let mut d = llama();
        d.sglang_version = Release::V0_5_19;
        d.decode.extra_args = vec!["--attn-dp-size".into(), "1".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("SGLang 0.5.19 has no option `--attn-dp-size` (it exists in 0.5.23)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn router_extra_args_are_checked() {
        let mut d = llama();
        d.router.extra_args = vec!["--polcy".into(), "random".into()];
        let f = findings(&d, "PD024");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.starts_with("router:") && f[0].message.contains("sglang-router 0.3.2"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("router.extra_args[0]"), "{}", f[0].fix);
    }
}
