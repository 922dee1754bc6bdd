//! PD043: an SGLang `--config` file that SGLang rejects or misreads.

use super::material::{ConfigProblem, Material};
use super::{Check, Finding, Rule, Severity};
use crate::plan::Origin;

/// Read in the `--config` files that linted commands refer to (a deployment renders its config
/// files without these traps, see `render::config`).
pub static RULE: Rule = Rule {
    code: "PD043",
    name: "config-file-key",
    severity: Severity::Error,
    summary: "an SGLang `--config` file has a key or shape SGLang rejects",
    explanation: "SGLang's config loader turns each key into `--key` verbatim, so `page_size:` becomes the unknown \
        `--page_size` and the server exits with \"unrecognized arguments\"; it refuses keys whose option is not a \
        plain store or store_true option (deprecated aliases, `--no-x` forms, LoRA paths) with a ValueError; it \
        wants a `.yaml`/`.yml` file whose root is a mapping, and a single `--config` followed by its path.",
    sglang_errors: &[
        "Unsupported config option '{key}' with action '{ActionClass}'",
        "Config file must be YAML format, got: {suffix}",
        "Config file must contain a dictionary at root level",
        "Multiple config files specified! Only one allowed.",
        "No config file specified after --config flag!",
    ],
    fix: "Write keys as option names without `--` in the dash form (`page-size: 64`), use only plain options in the \
        file, and pass one `--config FILE.yaml`.",
    check: Check::Material(check),
};

/// The problems the linter met in each server's `--config` file (a file not given to it is
/// PD044's), and, for a key with underscores, no PD024 too: SGLang's "unrecognized arguments"
/// for it is this rule's.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let mut keys: Vec<Origin> = Vec::new();
    for s in &m.servers {
        let label = &s.view.label;
        for p in s.config_problems {
            let (message, fix, error, at, flag) = match p {
                ConfigProblem::NotGiven { .. } => continue,
                ConfigProblem::Multiple { at } => (
                    format!("{label}: `--config` is given more than once"),
                    "pass a single `--config FILE`",
                    Some("Multiple config files specified! Only one allowed."),
                    at,
                    "--config",
                ),
                ConfigProblem::NoPath { at } => (
                    format!("{label}: `--config` is not followed by a path"),
                    "write the YAML file's path after `--config`",
                    Some("No config file specified after --config flag!"),
                    at,
                    "--config",
                ),
                ConfigProblem::NotYaml { path, at } => (
                    format!("{label}: the --config file `{path}` is not a `.yaml`/`.yml` file, which SGLang refuses"),
                    "rename the file to `.yaml` (YAML also reads JSON)",
                    Some("Config file must be YAML format, got: {suffix}"),
                    at,
                    "--config",
                ),
                ConfigProblem::Unreadable { path, message, at } => (
                    format!("{label}: the --config file `{path}` cannot be read: {message}"),
                    "make the file a YAML mapping of option names (without `--`) to values",
                    None,
                    at,
                    "--config",
                ),
                ConfigProblem::Underscore { key, dashed } => {
                    keys.push(m.origin(key));
                    let f = Finding::new(
                        &RULE,
                        format!(
                            "{label}: the --config key `{}` has underscores: SGLang passes it as `{}`, which argparse \
                             rejects",
                            key.text.trim_start_matches("--"),
                            key.text
                        ),
                        format!("write the key as `{}`", dashed.trim_start_matches("--")),
                    );
                    let f = Finding { sglang_error: Some("{prog}: error: unrecognized arguments: {args}"), ..f };
                    found.push(f.at_origin(label.clone(), Some(&key.text), m.origin(key)));
                    continue;
                }
                ConfigProblem::Unsupported { key, action } => (
                    format!(
                        "{label}: the --config key `{}` is a `{action}` option, which SGLang's config loader refuses",
                        key.text.trim_start_matches("--")
                    ),
                    "pass this option on the command line instead, or use its non-deprecated replacement in the file",
                    Some("Unsupported config option '{key}' with action '{ActionClass}'"),
                    key,
                    key.text.as_str(),
                ),
            };
            let mut f = Finding::new(&RULE, message, fix);
            if let Some(error) = error {
                f.sglang_error = Some(error);
            }
            found.push(f.at_origin(label.clone(), Some(flag), m.origin(at)));
        }
    }
    // An underscore key is this rule's; it is not reported again as an unknown option.
    let at_key = |o: &Origin| matches!(o, Origin::Source { .. }) && keys.contains(o);
    found.retain(|f| !(f.code == "PD024" && f.locations.iter().any(|l| at_key(&l.origin))));
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::{linted, pd_script};

    #[test]
    fn an_underscore_key_breaks_and_its_dashed_form_passes() {
        let script = pd_script(" --config p.yaml", "");
        let files = |config| [("pd.sh", script.as_str()), ("config:p.yaml", config)];
        let found = linted(&files("chunked_prefill_size: 4096\n"), "PD043");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("the --config key `chunked_prefill_size` has underscores"), "{}", found[0]);
        // SGLang's "unrecognized arguments" for it is this rule's, not PD024's too.
        assert!(linted(&files("chunked_prefill_size: 4096\n"), "PD024").is_empty());
        assert!(linted(&files("chunked-prefill-size: 4096\n"), "PD043").is_empty());
    }
}
