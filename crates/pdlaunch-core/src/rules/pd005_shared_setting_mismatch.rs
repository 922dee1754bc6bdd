//! PD005: a setting that must be equal on both sides (per the flag table) differs.

use std::borrow::Cow;
use std::sync::OnceLock;

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;
use crate::fast_hash::NameIndex;
use crate::flags::{Flag, Kind, Relation, SERVER_FLAGS};

/// Every `MustMatch` flag of the table, compared between each prefill and decode pair.
///
/// A structured deployment renders these once from a shared field, so a difference comes from a
/// per-side `extra_args` override, or from hand-written command lines. SGLang compares none of
/// them; the transfer copies raw KV with the prefill's geometry.
pub static RULE: Rule = Rule {
    code: "PD005",
    name: "shared-setting-mismatch",
    severity: Severity::Error,
    summary: "a setting that must be identical on prefill and decode differs",
    explanation: "The model, tokenizer, dtype, quantization, transfer backend, attention and DSA backends, \
        speculative settings and KV layout switches decide what the KV bytes mean and how they travel. \
        SGLang checks only page size and KV dtype across servers; every other difference passes the \
        handshake and then corrupts KV silently or fails transfers later. Page size, \
        KV dtype, the speculative algorithm, the KV canary and the model path have their own rules (PD001, \
        PD002, PD022, PD023, PD056).",
    sglang_errors: &[
        "no error at startup: the prefill and decode disagree on a setting SGLang never compares; requests return garbage or the KV transfer fails",
        "Requested address not found",
        "NIXL_ERR_NOT_FOUND",
    ],
    fix: "Set the value once in its shared field (`model.*` or `shared.*`) and remove per-side overrides from \
        `prefill.extra_args`/`decode.extra_args`.",
    check: Check::Deployment(check),
};

/// Destinations a dedicated rule reports with more context (the model path: PD056, which knows
/// an alias from another checkpoint).
const DEDICATED: &[&str] = &["page_size", "kv_cache_dtype", "speculative_algorithm", "kv_canary", "model_path"];

fn check(ctx: &Context) -> Vec<Finding> {
    table_check(ctx, Relation::MustMatch, &RULE)
}

/// The value SGLang ends up with for `flag` on `s`, with synonyms folded so that equal settings
/// compare equal.
fn setting<'a>(s: &'a ServerView, flag: &Flag) -> Option<Cow<'a, str>> {
    let v = s.value_ref(flag.dest)?;
    Some(match (flag.dest, flag.kind, &*v) {
        ("dtype", _, "half") => "float16".into(),
        ("dtype", _, "float") => "float32".into(),
        // `128k` and `131072` are one context length.
        (_, Kind::Int, _) => match crate::spec::parse_human_int(&v) {
            // Already in canonical form: no need to write it again.
            Some(_) if is_canonical_int(&v) => v,
            Some(n) => Cow::Owned(n.to_string()),
            None => v,
        },
        _ => v,
    })
}

/// A value and where it came from, for a message.
/// True when `v` is an `i64` written exactly as `to_string` writes it.
fn is_canonical_int(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (if digits == "0" { digits.len() == v.len() } else { !digits.starts_with('0') })
        && v.parse::<i64>().is_ok()
}

fn shown(s: &ServerView, dest: &str, v: &Option<String>) -> String {
    let from = s.origin(dest).map_or_else(|| "SGLang's default".to_owned(), |o| format!("from `{o}`"));
    match v {
        Some(v) => format!("`{v}` ({from})"),
        None => format!("no value ({from})"),
    }
}

/// The deployment path of a flag-table field (`Model.path` is `model.path`).
fn field_path(field: &str) -> Option<String> {
    let (def, prop) = field.split_once('.')?;
    let prefix = match def {
        "Model" => "model",
        "Shared" => "shared",
        "Speculative" => "shared.speculative",
        _ => return None,
    };
    Some(format!("{prefix}.{prop}"))
}

/// Compares every flag of `relation` between each (prefill, decode) pair, reporting as `rule`.
/// Shared with PD006, which runs the same comparison for `ShouldMatch` flags.
pub(super) fn table_check(ctx: &Context, relation: Relation, rule: &'static Rule) -> Vec<Finding> {
    let mut out = Vec::new();
    let table = compared(relation);
    let pairs = ctx.pairs();
    // Two servers of one release that both leave a flag unset both get its default, so only the
    // flags set on either side of a pair need comparing.
    let set: Vec<Vec<bool>> = pairs
        .iter()
        .map(|(p, d)| {
            let mut set = vec![p.release != d.release; table.flags.len()];
            for u in p.parsed.uses.iter().chain(&d.parsed.uses) {
                if let Some(&k) = table.by_dest.get(u.dest) {
                    set[k] = true;
                }
            }
            set
        })
        .collect();
    for (k, &flag) in table.flags.iter().enumerate() {
        for (&(p, d), set) in pairs.iter().zip(&set) {
            if !set[k] {
                continue;
            }
            // With speculative decoding on one side only, every draft setting differs; PD022 reports
            // the cause once.
            if flag.dest.starts_with("speculative_")
                && p.value_ref("speculative_algorithm") != d.value_ref("speculative_algorithm")
            {
                continue;
            }
            let (mut pv, mut dv) = (setting(p, flag), setting(d, flag));
            // These default to the model path: written on one side only, they are compared with the
            // other side's model path (a model-path difference is reported once, by its own flag).
            if matches!(flag.dest, "tokenizer_path" | "served_model_name") && pv.is_some() != dv.is_some() {
                pv = pv.or_else(|| p.value_ref("model_path"));
                dv = dv.or_else(|| d.value_ref("model_path"));
            }
            if pv == dv {
                continue;
            }
            let (pv, dv) = (pv.map(Cow::into_owned), dv.map(Cow::into_owned));
            let spelling = p.spec().by_dest(flag.dest).map_or(flag.name, |f| f.flags[0].as_str());
            let message = format!(
                "{spelling} differs: {} has {} but {} has {}",
                p.label,
                shown(p, flag.dest, &pv),
                d.label,
                shown(d, flag.dest, &dv)
            );
            let field = field_path(flag.field);
            let overrides = super::overrides(p, d, flag.dest, field.as_deref());
            let fix = match (&field, overrides.is_empty()) {
                (Some(field), false) => format!(
                    "set `{field}` once (it renders on both sides) and remove the per-side `{spelling}` at `{}`",
                    overrides.join("`, `")
                ),
                (Some(field), true) => format!("set `{field}` once so that both sides render the same `{spelling}`"),
                (None, _) => format!("pass the same `{spelling}` to both sides"),
            };
            out.push(Finding::new(rule, message, fix).at(p, flag.dest).at(d, flag.dest));
        }
    }
    out
}

/// The flags one relation compares: in table order, each destination once (several spellings
/// across releases share one, `--nsa-*`/`--dsa-*`), without those a dedicated rule reports.
struct Compared {
    flags: Vec<&'static Flag>,
    by_dest: NameIndex<usize>,
}

impl Compared {
    fn new(flags: Vec<&'static Flag>) -> Compared {
        let by_dest = NameIndex::new(flags.iter().enumerate().map(|(k, f)| (f.dest.to_owned(), k)).collect());
        Compared { flags, by_dest }
    }
}

fn compared(relation: Relation) -> &'static Compared {
    // Every relation's table, built in one pass over the flag table.
    static TABLES: OnceLock<Vec<(Relation, Compared)>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let mut lists: Vec<(Relation, Vec<&'static Flag>)> = Vec::new();
        for f in SERVER_FLAGS.iter().copied().filter(|f| !DEDICATED.contains(&f.dest)) {
            let k = match lists.iter().position(|(r, _)| *r == f.relation) {
                Some(k) => k,
                None => {
                    lists.push((f.relation, Vec::new()));
                    lists.len() - 1
                }
            };
            let list = &mut lists[k].1;
            if !list.iter().any(|g| g.dest == f.dest) {
                list.push(f);
            }
        }
        lists.into_iter().map(|(r, flags)| (r, Compared::new(flags))).collect()
    });
    // A relation no flag has compares nothing.
    static EMPTY: OnceLock<Compared> = OnceLock::new();
    tables
        .iter()
        .find(|(r, _)| *r == relation)
        .map(|(_, c)| c)
        .unwrap_or_else(|| EMPTY.get_or_init(|| Compared::new(Vec::new())))
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn examples_pass() {
        assert!(!codes(&llama()).contains(&"PD005"));
        assert!(!codes(&deepseek()).contains(&"PD005"));
    }

    #[test]
    fn decode_transfer_backend_override_is_caught() {
        let mut d = llama();
        d.decode.extra_args = vec!["--disaggregation-transfer-backend".into(), "nixl".into()];
        let f = findings(&d, "PD005");
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(m.starts_with("--disaggregation-transfer-backend differs"), "{m}");
        assert!(m.contains("prefill[0] has `mooncake` (from `shared.transfer_backend`)"), "{m}");
        assert!(m.contains("decode[0] has `nixl` (from `decode.extra_args[0]`)"), "{m}");
        assert!(
            f[0].fix.contains("shared.transfer_backend") && f[0].fix.contains("decode.extra_args[0]"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn a_switch_on_one_side_is_compared_with_the_default() {
        let mut d = llama();
        d.decode.extra_args = vec!["--trust-remote-code".into()];
        let f = findings(&d, "PD005");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`false` (SGLang's default)"), "{}", f[0].message);
        // The model path is PD056's.
        let mut d = llama();
        d.prefill.extra_args = vec!["--model".into(), "other/model".into()];
        assert!(findings(&d, "PD005").is_empty());
    }

    #[test]
    fn dedicated_rules_and_synonyms_are_not_reported_here() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size".into(), "32".into(), "--kv-cache-dtype".into(), "bf16".into()];
        assert!(findings(&d, "PD005").is_empty());
        let mut d = llama();
        d.model.dtype = Some(crate::choices::ModelDtype::Float16);
        d.decode.extra_args = vec!["--dtype".into(), "half".into()];
        assert!(findings(&d, "PD005").is_empty());
    }
}
