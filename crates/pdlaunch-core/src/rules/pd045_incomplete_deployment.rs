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
