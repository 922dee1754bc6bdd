//! PD045: the linted material holds only part of a PD deployment.

use super::{Check, Finding, Material, Rule, Severity};
use crate::deployment::Role;

/// Found in linted material: servers of one side only, a router without its servers, or servers
/// that show no sign of prefill-decode disaggregation.
pub static RULE: Rule = Rule {
    code: "PD045",
    name: "incomplete-deployment",
    severity: Severity::Note,
    summary: "only part of a prefill-decode deployment was found, so cross-side checks were skipped",
    explanation: "Most PD rules compare a prefill with a decode, or the router with both. When the files given \
        hold only one side (say `prefill.sh` without `decode.sh`), those comparisons cannot run; the per-server \
        checks still do.",
    sglang_errors: &[],
    fix: "Lint every file of the deployment in one run: `pdlaunch lint prefill.sh decode.sh router.sh`.",
    check: Check::Material(check),
};

/// A group of one side, a router alone, or servers without any prefill-decode evidence (no
/// mode, router or prefill/decode naming): these are no PD drift, so PD037 says nothing of them.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let pd_evidence = m.servers.iter().any(|s| s.view.role.is_some() || s.intended.is_some())
        || m.router.is_some_and(|r| !r.view.prefills.is_empty() || !r.view.decodes.is_empty());
    if !pd_evidence {
        found.retain(|f| f.code != "PD037");
        let labels: Vec<&str> = m.servers.iter().map(|s| s.view.label.as_str()).collect();
        if !labels.is_empty() {
            found.push(Finding::new(
                &RULE,
                format!(
                    "{}: no `--disaggregation-mode`, router or prefill/decode naming: not a PD deployment, cross-side \
                     checks skipped",
                    labels.join(", ")
                ),
                "add `--disaggregation-mode prefill|decode` to the servers meant for PD",
            ));
        }
        return;
    }
    let has = |r: Role| m.servers.iter().any(|s| s.view.role == Some(r));
    let missing: Vec<&str> = Role::BOTH.iter().filter(|r| !has(**r)).map(|r| r.as_str()).collect();
    if m.servers.is_empty() {
        found.push(Finding::new(
            &RULE,
            "router found without any of its servers: links to prefill and decode were not checked".to_owned(),
            "lint the router together with the servers' scripts or manifests",
        ));
    } else if !missing.is_empty() {
        let present: Vec<&str> = m.servers.iter().map(|s| s.view.label.as_str()).collect();
        found.push(Finding::new(
            &RULE,
            format!(
                "no {} server found next to {}: prefill/decode comparisons were skipped",
                missing.join(" or "),
                present.join(", ")
            ),
            "lint the files of both sides together (e.g. `pdlaunch lint prefill.sh decode.sh router.sh`)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::{linted, pd_script};

    #[test]
    fn one_side_breaks_and_both_pass() {
        let script = pd_script("", "");
        let prefill = script.lines().next().unwrap();
        let found = linted(&[("prefill.sh", prefill)], "PD045");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("no decode server found next to prefill[0] (prefill.sh:1)"), "{}", found[0]);
        assert!(linted(&[("pd.sh", &script)], "PD045").is_empty());
    }

    #[test]
    fn a_router_alone_breaks() {
        let router = pd_script("", "").lines().nth(2).unwrap().to_owned();
        let found = linted(&[("router.sh", &router)], "PD045");
        assert_eq!(found, ["router found without any of its servers: links to prefill and decode were not checked"]);
    }

    #[test]
    fn a_server_without_pd_evidence_is_noted_and_not_called_modeless() {
        let text = "python3 -m sglang.launch_server --model-path m --port 30000\n";
        let found = linted(&[("serve.sh", text)], "PD045");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("not a PD deployment"), "{}", found[0]);
        assert!(linted(&[("serve.sh", text)], "PD037").is_empty());
    }
}
