//! PD027: `extra_args` set a flag that the deployment schema models.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::flags::{self, Flag, Relation};
use crate::plan::Origin;
use crate::spec::{ArgUse, ArgValue};

/// `extra_args` are appended after the rendered flags, so with argparse's last-one-wins they
/// silently override the field the flag is rendered from.
///
/// The deployment then no longer says what runs, and a `MustMatch` flag overridden on one side only
/// breaks the prefill/decode pairing (PD001, PD002 or PD005 report the mismatch itself).
pub static RULE: Rule = Rule {
    code: "PD027",
    name: "extra-arg-overrides-field",
    severity: Severity::Warning,
    summary: "`extra_args` set a flag that a deployment field renders",
    explanation: "pdlaunch renders every modeled flag from one field (shared settings once, on both sides) and \
        appends `extra_args` verbatim at the end. argparse keeps the last occurrence, so an extra argument for a \
        modeled flag silently wins over its field: the deployment file stops describing what runs, other tools \
        reading the field see the wrong value, and a flag that must match across sides, overridden on one side \
        only, desynchronizes the pair (KV layout, page size, dtype).",
    sglang_errors: &[],
    fix: "Remove the flag from `extra_args` and set the deployment field it renders from.",
    check: Check::Deployment(check),
};

/// The deployment path of a schema field (`Definition.property`, as in [`Flag::field`]) for one
/// process; `None` for an unknown definition.
pub(super) fn field_path(field: &str, role: Option<Role>, instance: usize, node: usize) -> Option<String> {
    crate::flags::field_path(field, role.map_or("<side>", Role::as_str), instance, node)
}

/// The deployment field(s) of a schema field, when no process is at hand: `shared.page_size`, or
/// `prefill.tp` / `decode.tp` for per-side fields.
pub(super) fn schema_field_hint(field: &str) -> String {
    match field.split_once('.') {
        Some(("Side" | "HiCache" | "Instance" | "Node", _)) => Role::BOTH
            .iter()
            .filter_map(|r| field_path(field, Some(*r), 0, 0))
            .map(|p| format!("`{}`", p.replace("[0]", "[i]")))
            .collect::<Vec<_>>()
            .join(" / "),
        _ => field_path(field, None, 0, 0).map_or_else(|| format!("`{field}`"), |p| format!("`{p}`")),
    }
}

/// The side an origin path belongs to (`decode.extra_args[0]` → decode).
pub(super) fn role_of_path(path: &str) -> Option<Role> {
    Role::BOTH.into_iter().find(|r| path.split('.').next() == Some(r.as_str()))
}

fn shown(u: &ArgUse) -> String {
    match &u.value {
        ArgValue::Switch(_) => u.spelling.to_string(),
        v => format!("{} {}", u.spelling, v.as_text()),
    }
}

/// The rule that reports a one-sided override of a matching flag.
fn pairing_rule(dest: &str, relation: Relation) -> &'static str {
    match (dest, relation) {
        ("page_size" | "attention_backend" | "decode_attention_backend" | "prefill_attention_backend", _) => "PD001",
        ("kv_cache_dtype", _) => "PD002",
        ("speculative_algorithm", _) => "PD022",
        ("kv_canary", _) => "PD023",
        (_, Relation::ShouldMatch) => "PD006",
        _ => "PD005",
    }
}

/// The modeled flag an argument stores into, and the field it comes from for this process.
fn modeled(s: &ServerView, u: &ArgUse, role: Option<Role>) -> Option<(&'static Flag, Option<String>)> {
    if u.dest == "config" {
        return None;
    }
    let flag = flags::server_flag(&u.spelling)
        .or_else(|| flags::server_flag(u.canonical))
        .or_else(|| flags::server_flags_for_dest(u.dest).next())?;
    // Before `--attn-dp-size` existed, `--dp-size` carried the DP-attention width.
    let field =
        if flag.dest == "dp_size" && s.switch("enable_dp_attention") && !flags::ATTN_DP_SIZE.in_release(s.release) {
            "Side.attn_dp"
        } else {
            flag.field
        };
    Some((flag, field_path(field, role, s.instance, s.node)))
}

/// One extra argument and the processes it reaches.
struct Override<'a> {
    origin: Origin,
    /// The option as written, with its value.
    what: String,
    /// The deployment field that renders it (`None`: derived from the topology).
    field: Option<String>,
    /// How it breaks the prefill/decode pairing, when it does.
    pairing: Option<String>,
    servers: Vec<&'a ServerView>,
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut groups: Vec<Override> = Vec::new();
    for s in &ctx.servers {
        for u in &s.parsed.uses {
            let Some(origin) = s.origins.get(u.index) else {
                continue;
            };
            let Origin::Field { path } = origin else {
                continue;
            };
            if !path.contains("extra_args") {
                continue;
            }
            let role = s.role.or_else(|| role_of_path(path));
            let Some((flag, field)) = modeled(s, u, role) else {
                continue;
            };
            let mut pairing = None;
            if matches!(flag.relation, Relation::MustMatch | Relation::ShouldMatch) {
                let other = role.map(Role::other);
                let mine = s.value(u.dest);
                let differs: Vec<&ServerView> = ctx
                    .servers
                    .iter()
                    .filter(|o| o.node == 0 && other.is_some() && o.role == other && o.value(u.dest) != mine)
                    .collect();
                if let Some(o) = differs.first() {
                    pairing = Some(format!(
                        "; it also breaks the pairing: {} keeps {} (`{}`), which {} reports",
                        o.label,
                        o.value(u.dest).unwrap_or_else(|| "the default".into()),
                        flag.name,
                        pairing_rule(u.dest, flag.relation)
                    ));
                }
            }
            let what = shown(u);
            match groups.iter_mut().find(|g| g.origin == *origin && g.what == what) {
                Some(g) => g.servers.push(s),
                None => groups.push(Override { origin: origin.clone(), what, field, pairing, servers: vec![s] }),
            }
        }
    }
    let mut out: Vec<Finding> = groups
        .into_iter()
        .map(|Override { origin, what, field, pairing, servers }| {
            let labels = super::labels(&servers);
            let (message, fix) = match &field {
                Some(field) => (
                    format!(
                        "`{origin}` sets `{what}` on {labels}, a flag the schema models as `{field}`: extra_args are \
                         appended last and silently win over the field, which defeats the single source of truth{}",
                        pairing.clone().unwrap_or_default()
                    ),
                    format!("remove `{what}` from `{origin}` and set `{field}` instead"),
                ),
                None => (
                    format!(
                        "`{origin}` sets `{what}` on {labels}, which pdlaunch derives from the deployment's topology \
                         (side, instances, nodes); the override makes the rendered wiring wrong{}",
                        pairing.clone().unwrap_or_default()
                    ),
                    format!("remove `{what}` from `{origin}`; change the topology instead"),
                ),
            };
            let spelling = what.split(' ').next().unwrap_or_default();
            servers.iter().fold(Finding::new(&RULE, message, fix), |f, s| {
                f.at_origin(s.label.clone(), Some(spelling), origin.clone())
            })
        })
        .collect();

    if let Some(r) = &ctx.router {
        for u in &r.parsed.uses {
            let Some(origin @ Origin::Field { path }) = r.origins.get(u.index) else {
                continue;
            };
            if !path.contains("extra_args") {
                continue;
            }
            let Some(flag) = flags::ROUTER_FLAGS.iter().copied().find(|f| f.dest == u.dest) else {
                continue;
            };
            let what = shown(u);
            let (message, fix) = if flag.field.is_empty() {
                (
                    format!(
                        "`{origin}` sets `{what}` on the router, which pdlaunch renders from the prefill and decode \
                         instances"
                    ),
                    format!("remove `{what}` from `{origin}`; the instances define the router's workers"),
                )
            } else {
                let field = field_path(flag.field, None, 0, 0).unwrap_or_else(|| flag.field.to_owned());
                (
                    format!(
                        "`{origin}` sets `{what}` on the router, a flag the schema models as `{field}`: extra_args are \
                         appended last and silently win over the field"
                    ),
                    format!("remove `{what}` from `{origin}` and set `{field}` instead"),
                )
            };
            out.push(Finding::new(&RULE, message, fix).at_origin("router", Some(&u.spelling), origin.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn examples_have_no_extra_args() {
        assert!(!codes(&llama()).contains(&"PD027"));
        assert!(!codes(&deepseek()).contains(&"PD027"));
    }

    #[test]
    fn unmodeled_extra_args_are_fine() {
        let mut d = llama();
        d.decode.extra_args = vec!["--watchdog-timeout".into(), "600".into()];
        assert!(findings(&d, "PD027").is_empty());
    }

    #[test]
    fn one_sided_page_size_names_field_and_pairing() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size".into(), "64".into()];
        let f = findings(&d, "PD027");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        let m = &f[0].message;
        assert!(m.contains("`decode.extra_args[0]` sets `--page-size 64`") && m.contains("`shared.page_size`"), "{m}");
        assert!(m.contains("breaks the pairing") && m.contains("prefill[0] keeps 16") && m.contains("PD001"), "{m}");
        assert!(f[0].fix.contains("set `shared.page_size`"), "{}", f[0].fix);
    }

    #[test]
    fn side_field_override_on_every_node() {
        let mut d = deepseek();
        d.decode.extra_args = vec!["--max-running-requests".into(), "64".into()];
        let f = findings(&d, "PD027");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("decode[0] node 0, decode[0] node 1"), "{}", f[0].message);
        assert!(f[0].message.contains("`decode.max_running_requests`"), "{}", f[0].message);
        assert!(!f[0].message.contains("pairing"), "{}", f[0].message);
    }

    #[test]
    fn router_extra_policy() {
        let mut d = llama();
        d.router.extra_args = vec!["--policy".into(), "random".into()];
        let f = findings(&d, "PD027");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`router.policy`"), "{}", f[0].message);
    }
}
