//! PD026: a deprecated spelling that the target release still accepts (or only accepts to fail).

use super::pd027_extra_arg_overrides_field::{field_path, role_of_path};
use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;
use crate::flags;
use crate::plan::Origin;
use crate::spec::ArgUse;

/// SGLang keeps renamed flags as deprecated aliases for a while: they print a warning and store
/// into the new field, until a later release removes them and argparse rejects them (PD024).
///
/// A plain `DeprecatedAction` is different: it only exists to raise `ValueError` with its help
/// text, so such a flag is an error already.
pub static RULE: Rule = Rule {
    code: "PD026",
    name: "deprecated-flag",
    severity: Severity::Warning,
    summary: "a deprecated flag spelling is used",
    explanation: "Deprecated spellings still work in the target release but print a warning and disappear in a later \
        one, where the same command line fails with \"unrecognized arguments\". Some of them also change meaning on \
        the way: `--disable-cuda-graph` now turns off both phases' graphs, `--cuda-graph-max-bs` moved to the \
        decode-only `--cuda-graph-max-bs-decode`, `--enable-dp-attention` gave way to `--attn-dp-size`. A flag \
        declared with SGLang's bare `DeprecatedAction` is kept only to fail: using it raises `ValueError` at startup.",
    sglang_errors: &[
        "'{option_string}' is deprecated and will be removed in a future release. Use '{new_flag}' instead.",
        "'{option_string}' is deprecated and will be removed in a future release.",
    ],
    fix:
        "Use the replacement flag, or better the deployment field that renders it, instead of the deprecated spelling.",
    check: Check::Deployment(check),
};

/// Replacements that are not another spelling of the same destination.
const REPLACEMENTS: &[(&str, &str)] = &[
    ("--enable-dp-attention", "`--attn-dp-size N` (the DP-attention width)"),
    ("--disable-cuda-graph", "`--disable-decode-cuda-graph` on decode / `--disable-prefill-cuda-graph` on prefill"),
];

/// What replaces a deprecated spelling: a hand-written note, a removal note, or the
/// non-deprecated option with the same destination.
fn replacement(s: &ServerView, u: &ArgUse) -> Option<String> {
    if let Some((_, r)) = REPLACEMENTS.iter().find(|(n, _)| *n == u.canonical) {
        return Some((*r).to_owned());
    }
    if let Some(r) = flags::removed_flag(u.canonical) {
        return Some(r.replacement.to_owned());
    }
    s.spec().flags.iter().find(|f| f.dest == u.dest && !f.is_deprecated()).map(|f| format!("`{}`", f.flags[0]))
}

/// The deployment field that renders the flag (or its replacement), for the fix.
fn field_for(s: &ServerView, u: &ArgUse, origin: &Origin) -> Option<String> {
    let flag = flags::server_flag(u.canonical)
        .or_else(|| flags::server_flags_for_dest(u.dest).next())
        .filter(|f| !f.field.is_empty())?;
    let role = s.role.or_else(|| match origin {
        Origin::Field { path } => role_of_path(path),
        _ => None,
    });
    field_path(flag.field, role, s.instance, s.node)
}

fn check(ctx: &Context) -> Vec<Finding> {
    // (origin, spelling, is error, servers)
    let mut groups: Vec<(Origin, &ArgUse, bool, Vec<&ServerView>)> = Vec::new();
    for s in &ctx.servers {
        for u in &s.parsed.uses {
            let Some(spec_flag) = s.spec().flags.get(u.flag) else {
                continue;
            };
            if !spec_flag.is_deprecated() {
                continue;
            }
            let origin = s.origins.get(u.index).cloned().unwrap_or(Origin::Derived);
            let fails = spec_flag.action == "DeprecatedAction";
            match groups.iter_mut().find(|g| g.0 == origin && g.1.spelling == u.spelling) {
                Some(g) => g.3.push(s),
                None => groups.push((origin, u, fails, vec![s])),
            }
        }
    }
    groups
        .into_iter()
        .map(|(origin, u, fails, servers)| {
            let s = servers[0];
            let labels = super::labels(&servers);
            let release = s.release.as_str();
            let spelled = if u.spelling == u.canonical {
                u.spelling.to_string()
            } else {
                format!("{} ({})", u.spelling, u.canonical)
            };
            let replaced = replacement(s, u);
            let message = if fails {
                format!(
                    "`{spelled}` in `{origin}` ({labels}) is a deprecated flag that SGLang {release} keeps only to \
                     raise ValueError at startup"
                )
            } else {
                let instead = replaced.as_ref().map(|r| format!("; use {r} instead")).unwrap_or_default();
                format!(
                    "`{spelled}` in `{origin}` ({labels}) is deprecated in SGLang {release}: it still works but prints \
                     a warning, and a later release rejects it{instead}"
                )
            };
            let fix = match (field_for(s, u, &origin), &replaced) {
                (Some(field), _) => format!("remove `{}` from `{origin}` and set `{field}` instead", u.spelling),
                (None, Some(r)) => format!("replace `{}` in `{origin}` with {r}", u.spelling),
                (None, None) => format!("remove `{}` from `{origin}`", u.spelling),
            };
            let mut f = Finding::new(&RULE, message, fix);
            if fails {
                f = f.severity(Severity::Error);
                f.sglang_error = None;
            } else if replaced.is_none() {
                f.sglang_error = RULE.sglang_errors.get(1).copied();
            }
            servers.iter().fold(f, |f, s| f.at_origin(s.label.clone(), Some(&u.spelling), origin.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::release::Release;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn examples_use_current_spellings() {
        assert!(!codes(&llama()).contains(&"PD026"));
        assert!(!codes(&deepseek()).contains(&"PD026"));
        let mut d = deepseek();
        d.sglang_version = Release::V0_5_19;
        assert!(!codes(&d).contains(&"PD026"), "{:?}", findings(&d, "PD026"));
    }

    #[test]
    fn enable_dp_attention_on_0_5_23_points_at_attn_dp() {
        let mut d = deepseek();
        d.decode.extra_args = vec!["--enable-dp-attention".into()];
        let f = findings(&d, "PD026");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("`--enable-dp-attention`") && f[0].message.contains("0.5.23"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("--attn-dp-size"), "{}", f[0].message);
        assert!(f[0].fix.contains("set `decode.attn_dp`"), "{}", f[0].fix);
    }

    #[test]
    fn cuda_graph_max_bs_on_0_5_19_points_at_the_field() {
        let mut d = llama();
        d.sglang_version = Release::V0_5_19;
        d.decode.extra_args = vec!["--cuda-graph-max-bs".into(), "32".into()];
        let f = findings(&d, "PD026");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`--cuda-graph-max-bs-decode`"), "{}", f[0].message);
        assert!(f[0].fix.contains("`decode.cuda_graph_max_bs`"), "{}", f[0].fix);
    }

    #[test]
    fn error_only_deprecated_action() {
        let mut d = deepseek();
        d.sglang_version = Release::V0_5_3;
        d.prefill.extra_args = vec!["--enable-deepep-moe".into()];
        let f = findings(&d, "PD026");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("ValueError"), "{}", f[0].message);
        assert!(f[0].fix.contains("--moe-a2a-backend deepep"), "{}", f[0].fix);
    }
}
