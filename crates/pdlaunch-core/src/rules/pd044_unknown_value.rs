//! PD044: a value only known when the process starts keeps a check from running.

use super::material::{ConfigProblem, Material};
use super::{Check, Finding, Rule, Severity};

/// Found in linted material: `${VAR}` the script never sets, `$(command)`, a Kubernetes `$(VAR)`
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
    check: Check::Material(check),
};

/// The values the linter kept symbolic, with the rules whose findings at them it withdrew (a
/// node rank that PD047 shows srun expanded too early is that rule's), the words that stand for
/// unknown arguments, and the `--config` files not given to the linter.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let early: Vec<(&str, &str)> = m
        .servers
        .iter()
        .filter_map(|s| super::pd047_srun_same_node_rank::expanded(s).map(|(var, _)| (s.view.label.as_str(), var)))
        .collect();
    let unchecked: Vec<_> =
        m.unknown.unchecked.iter().filter(|u| !early.contains(&(u.label.as_str(), u.raw.as_str()))).collect();
    for u in &unchecked {
        let names: Vec<String> =
            u.codes.iter().map(|c| format!("{c} ({})", super::rule(c).map_or("", |r| r.name))).collect();
        let message = format!(
            "{}: `{}` is only known when the process starts, so {} could not be checked",
            u.label,
            u.raw,
            names.join(", ")
        );
        let fix = format!(
            "write the value of `{}` literally (or define it in the same script) so that it can be checked",
            u.raw
        );
        let f = Finding::new(&RULE, message, fix);
        found.push(match m.words_of(&u.label).iter().find(|w| w.text == u.raw) {
            Some(w) => f.at_origin(u.label.clone(), None, m.origin(w)),
            None => f,
        });
    }
    for o in &m.unknown.opaque {
        if unchecked.iter().any(|u| u.label == o.label && u.raw == o.word.text) {
            continue;
        }
        let message = format!(
            "{}: `{}` stands for arguments only known when the process starts; settings it holds are not checked",
            o.label, o.word.text
        );
        let fix = "write the arguments out (or define the variable in the same script) so that they can be checked";
        found.push(Finding::new(&RULE, message, fix).at_origin(o.label.clone(), None, m.origin(&o.word)));
    }
    for s in &m.servers {
        for p in s.config_problems {
            let ConfigProblem::NotGiven { path, at } = p else { continue };
            let label = &s.view.label;
            let f = Finding::new(
                &RULE,
                format!("{label}: the --config file `{path}` was not given to the linter, so its settings are not checked"),
                format!("lint it together with its config file: `pdlaunch lint {} {path}`", m.files[at.file].name),
            );
            found.push(f.at_origin(label.clone(), Some("--config"), m.origin(at)));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::{linted, pd_script};

    #[test]
    fn a_value_set_outside_the_script_breaks_and_one_set_in_it_passes() {
        let script = pd_script(" --page-size ${PAGE_SIZE}", " --page-size 64");
        let found = linted(&[("pd.sh", &script)], "PD044");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`${PAGE_SIZE}` is only known when the process starts, so PD001"), "{}", found[0]);
        let set = format!("PAGE_SIZE=64\n{script}");
        assert!(linted(&[("pd.sh", &set)], "PD044").is_empty());
    }

    #[test]
    fn a_config_file_not_given_breaks_and_one_given_passes() {
        let script = pd_script(" --config p.yaml", "");
        let found = linted(&[("pd.sh", &script)], "PD044");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("the --config file `p.yaml` was not given to the linter"), "{}", found[0]);
        assert!(linted(&[("pd.sh", &script), ("config:p.yaml", "page-size: 1\n")], "PD044").is_empty());
    }
}
