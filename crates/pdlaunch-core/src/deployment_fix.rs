//! One-click fixes of a deployment (the web app's): a concrete edit of the `Deployment` that makes
//! a finding go away. The linter's fixes, which edit the linted files' text, are
//! [`crate::lint::edit`].
//!
//! A rule that knows the right value suggests it ([`Finding::suggest`]); that edit is tried
//! first. The other edits are generic and read only the places a finding points at (its
//! locations' field paths): remove an option (with its values) from a side's or the router's
//! `extra_args`, give a per-side field the other side's value, or reset a field to its default.
//! Each candidate is checked by running the validator again; the first one that removes the
//! finding without adding an error is the fix. Most rules need no code of their own for this,
//! and a fix never claims more than the validator confirms.

use serde_json::Value;

use crate::deployment::Deployment;
use crate::load::{parse_deployment, Syntax};
use crate::plan::Origin;
use crate::render::quote;
use crate::rules::{check, Finding, Report, Severity};
use crate::spec::parse_argv;

/// A verified fix for one finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// What the fix does, e.g. ``Remove `--page-size 1` from decode.extra_args``.
    pub title: String,
    /// The field path it edits.
    pub path: String,
    /// The deployment with the fix applied.
    pub deployment: Deployment,
}

/// The fix for `finding` (one of the findings of `check(d)`), if a generic edit removes it.
pub fn fix(d: &Deployment, finding: &Finding) -> Option<Fix> {
    fix_in(d, &check(d), finding)
}

/// [`fix`] when the caller already has `before = check(d)`.
pub fn fix_in(d: &Deployment, before: &Report, finding: &Finding) -> Option<Fix> {
    candidates(d, finding).into_iter().find(|c| {
        let after = check(&c.deployment);
        resolves(before, &after, finding)
    })
}

/// True when `after` has no more errors than `before` and fewer findings of the finding's rule;
/// or, for a note that suggested a value, no longer that note: the rule it stood for has run (a
/// rule skipped for want of the model's geometry may then find something).
fn resolves(before: &Report, after: &Report, finding: &Finding) -> bool {
    let n = |r: &Report| r.findings.iter().filter(|f| f.code == finding.code).count();
    let ran = finding.severity == Severity::Note
        && finding.suggestion.is_some()
        && !after.findings.iter().any(|f| f.code == finding.code && f.message == finding.message);
    (n(after) < n(before) || ran) && after.count(Severity::Error) <= before.count(Severity::Error)
}

/// Candidate edits, in order of preference, for the field paths the finding points at.
fn candidates(d: &Deployment, finding: &Finding) -> Vec<Fix> {
    let doc = crate::load::to_value(d);
    let mut paths: Vec<&str> = Vec::new();
    for loc in &finding.locations {
        if let Origin::Field { path } = &loc.origin {
            if !paths.contains(&path.as_str()) {
                paths.push(path);
            }
        }
    }
    let mut out = Vec::new();
    // A value the rule itself suggests comes first.
    if let Some(s) = &finding.suggestion {
        let mut v = doc.clone();
        if set(&mut v, &s.path, Some(s.value.clone())) {
            push(&mut out, format!("Set {} to {}", s.path, short(&s.value)), &s.path, v);
        }
    }
    // Removing an override is the most specific edit, so those come next.
    for path in &paths {
        if let Some(fix) = remove_extra_arg(d, &doc, path) {
            out.push(fix);
        }
    }
    for path in &paths {
        if path.contains(".extra_args[") {
            continue;
        }
        if let Some(other) = mirrored(path) {
            let theirs = get(&doc, &other).cloned();
            if theirs.as_ref() != get(&doc, path) {
                let mut v = doc.clone();
                let title = match &theirs {
                    Some(t) => format!("Set {path} to {} (as on {})", short(t), side_of(&other)),
                    None => format!("Unset {path} (as on {})", side_of(&other)),
                };
                if set(&mut v, path, theirs) {
                    push(&mut out, title, path, v);
                }
            }
        }
        if get(&doc, path).is_some() && !path.contains("instances") {
            let mut v = doc.clone();
            if set(&mut v, path, None) {
                push(&mut out, format!("Reset {path} to its default"), path, v);
            }
        }
    }
    out
}

fn push(out: &mut Vec<Fix>, title: String, path: &str, v: Value) {
    if let Some(deployment) = reread(&v) {
        out.push(Fix { title, path: path.to_owned(), deployment });
    }
}

/// The deployment an edited document describes, read by the loader, so an edit that breaks the
/// structure is no fix. (The loader's JSON reader is the one the web app uses too, which keeps
/// the WebAssembly build to one deserializer of the deployment types.)
fn reread(v: &Value) -> Option<Deployment> {
    parse_deployment(&v.to_string(), "fix", Syntax::Json).ok()
}

/// Removes the option at `<owner>.extra_args[k]` with the values argparse reads after it.
fn remove_extra_arg(d: &Deployment, doc: &Value, path: &str) -> Option<Fix> {
    let (owner, rest) = path.split_once(".extra_args[")?;
    let k: usize = rest.strip_suffix(']')?.parse().ok()?;
    let args: Vec<String> = match owner {
        "prefill" => d.prefill.extra_args.clone(),
        "decode" => d.decode.extra_args.clone(),
        "router" => d.router.extra_args.clone(),
        _ => return None,
    };
    if k >= args.len() {
        return None;
    }
    let spec = if owner == "router" { d.router_version.spec() } else { d.sglang_version.spec() };
    let parsed = parse_argv(spec, &args);
    let end = parsed
        .uses
        .iter()
        .map(|u| u.index)
        .chain(parsed.problems.iter().map(|p| p.index))
        .filter(|&i| i > k)
        .min()
        .unwrap_or(args.len());
    let removed: Vec<String> = args[k..end].iter().map(|t| quote(t)).collect();
    let mut kept = args.clone();
    kept.drain(k..end);
    let list = format!("{owner}.extra_args");
    let mut v = doc.clone();
    let new = (!kept.is_empty()).then(|| Value::Array(kept.into_iter().map(Value::String).collect()));
    if !set(&mut v, &list, new) {
        return None;
    }
    let deployment = reread(&v)?;
    Some(Fix { title: format!("Remove `{}` from {list}", removed.join(" ")), path: list, deployment })
}

/// The same field on the other side: `decode.tp` for `prefill.tp`.
fn mirrored(path: &str) -> Option<String> {
    let (side, rest) = path.split_once('.')?;
    let other = match side {
        "prefill" => "decode",
        "decode" => "prefill",
        _ => return None,
    };
    // Instances and nodes are topology, not settings to copy.
    (!rest.starts_with("instances")).then(|| format!("{other}.{rest}"))
}

fn side_of(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One step of a field path: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `.key`
    Key(String),
    /// `[index]`
    Index(usize),
}

/// Splits a field path such as `decode.instances[0].nodes[1].host` into steps.
pub fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut idx) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Step::Key(key.to_owned()));
        }
        while let Some(rest) = idx.strip_prefix('[') {
            let Some(end) = rest.find(']') else { break };
            if let Ok(n) = rest[..end].parse() {
                out.push(Step::Index(n));
            }
            idx = &rest[end + 1..];
        }
    }
    out
}

/// The value at a field path of a deployment document.
pub fn get<'v>(doc: &'v Value, path: &str) -> Option<&'v Value> {
    let mut at = doc;
    for s in steps(path) {
        at = match s {
            Step::Key(k) => at.get(k)?,
            Step::Index(i) => at.get(i)?,
        };
    }
    (!at.is_null()).then_some(at)
}

/// Sets (or with `None` removes) the value at a field path, creating objects on the way. Returns
/// false when the path runs through something that is not an object or an existing array item.
pub fn set(doc: &mut Value, path: &str, value: Option<Value>) -> bool {
    let steps = steps(path);
    let Some((last, parents)) = steps.split_last() else { return false };
    let mut at = doc;
    for s in parents {
        at = match s {
            Step::Key(k) => {
                let Value::Object(map) = at else { return false };
                let slot = map.entry(k.clone()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = Value::Object(Default::default());
                }
                slot
            }
            Step::Index(i) => match at.get_mut(*i) {
                Some(v) => v,
                None => return false,
            },
        };
    }
    match (last, at) {
        (Step::Key(k), Value::Object(map)) => {
            match value {
                Some(v) => map.insert(k.clone(), v),
                None => map.remove(k),
            };
            true
        }
        (Step::Index(i), Value::Array(items)) if *i < items.len() => {
            match value {
                Some(v) => items[*i] = v,
                None => {
                    items.remove(*i);
                }
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::example;

    fn llama() -> Deployment {
        example("llama-1p1d").expect("example exists")
    }

    #[test]
    fn paths_split_into_keys_and_indices() {
        assert_eq!(
            steps("decode.instances[0].nodes[12].host"),
            vec![
                Step::Key("decode".into()),
                Step::Key("instances".into()),
                Step::Index(0),
                Step::Key("nodes".into()),
                Step::Index(12),
                Step::Key("host".into()),
            ]
        );
    }

    #[test]
    fn set_and_get_round_trip() {
        let mut v = serde_json::json!({"a": {"b": [1, {"c": 2}]}});
        assert!(set(&mut v, "a.b[1].c", Some(3.into())));
        assert_eq!(get(&v, "a.b[1].c"), Some(&Value::from(3)));
        assert!(set(&mut v, "x.y", Some("z".into())));
        assert_eq!(get(&v, "x.y"), Some(&Value::from("z")));
        assert!(set(&mut v, "a.b[1].c", None));
        assert_eq!(get(&v, "a.b[1].c"), None);
        assert!(!set(&mut v, "a.b[5].c", Some(1.into())));
    }

    #[test]
    fn a_decode_page_size_override_is_removed() {
        let mut d = llama();
        d.decode.extra_args = vec!["--watchdog-timeout".into(), "600".into(), "--page-size".into(), "1".into()];
        let report = check(&d);
        let f = report.findings.iter().find(|f| f.code == "PD001").expect("PD001 found");
        let fix = fix(&d, f).expect("a fix exists");
        assert_eq!(fix.title, "Remove `--page-size 1` from decode.extra_args");
        assert_eq!(fix.deployment.decode.extra_args, vec!["--watchdog-timeout", "600"]);
        assert!(!check(&fix.deployment).findings.iter().any(|f| f.code == "PD001"));
    }

    #[test]
    fn an_inline_value_override_is_removed_whole() {
        let mut d = llama();
        d.decode.extra_args = vec!["--page-size=1".into()];
        let f = check(&d).findings.into_iter().find(|f| f.code == "PD001").expect("PD001 found");
        let fix = fix(&d, &f).expect("a fix exists");
        assert!(fix.deployment.decode.extra_args.is_empty());
    }

    #[test]
    fn every_offered_fix_removes_its_finding() {
        for e in crate::examples::EXAMPLES {
            let mut d = example(e.name).expect("example exists");
            d.decode.extra_args = vec!["--page-size".into(), "1".into(), "--kv-cache-dtype".into(), "bf16".into()];
            d.decode.deepep_mode = Some(crate::choices::DeepepMode::Normal);
            let report = check(&d);
            for f in &report.findings {
                if let Some(fix) = fix(&d, f) {
                    let n = |r: &Report| r.findings.iter().filter(|g| g.code == f.code).count();
                    assert!(n(&check(&fix.deployment)) < n(&report), "{}: {}", e.name, fix.title);
                }
            }
        }
    }

    /// The notes of rules skipped for want of the geometry suggest the preset that `model.path`
    /// names, and one click sets it.
    #[test]
    fn a_model_path_naming_a_preset_is_offered_as_the_preset() {
        let mut d = example("deepseek-v3-dp-deepep").expect("example exists");
        d.model.geometry = None;
        d.model.path = "deepseek-ai/DeepSeek-R1".into();
        let report = check(&d);
        let skipped: Vec<&Finding> =
            report.findings.iter().filter(|f| f.message.contains("geometry unknown")).collect();
        assert!(skipped.len() >= 2, "{:#?}", report.findings);
        for f in &skipped {
            // Every one is offered, PD040's too, which runs and may then find something.
            assert_eq!(fix(&d, f).map(|x| x.title).as_deref(), Some("Set model.preset to deepseek-v3"), "{}", f.code);
            let s = f.suggestion.as_ref().expect("a suggestion");
            assert_eq!((s.path.as_str(), &s.value), ("model.preset", &Value::from("deepseek-v3")));
            assert_eq!(f.fix, "set `model.preset` to `deepseek-v3`, the built-in model that `model.path` names");
            assert!(f.locations.iter().any(|l| l.origin == Origin::Field { path: "model.preset".into() }));
        }
        let fixed = fix(&d, skipped[0]).expect("a fix");
        assert_eq!(fixed.title, "Set model.preset to deepseek-v3");
        assert_eq!(fixed.deployment.model.preset.as_deref(), Some("deepseek-v3"));
        assert!(!check(&fixed.deployment).findings.iter().any(|f| f.message.contains("geometry unknown")));

        // A path that names no built-in model keeps the general advice.
        d.model.path = "acme/house-model".into();
        let report = check(&d);
        let f = report.findings.iter().find(|f| f.message.contains("geometry unknown")).expect("a skipped rule");
        assert_eq!(f.suggestion, None);
        assert!(f.fix.contains("`model.geometry`"), "{}", f.fix);
    }
}
