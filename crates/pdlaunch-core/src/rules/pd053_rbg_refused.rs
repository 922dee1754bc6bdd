//! PD053: the deployment's `kubernetes` section asks for a RoleBasedGroup that cannot be written.

use super::{Check, Context, Finding, Rule, Severity};

/// Checked only for a deployment whose `kubernetes` section is set and that the `kubernetes`
/// format renders (what it refuses, PD050 says, and the `rbg` format refuses it too): what
/// `render --format rbg` alone would refuse is then worth knowing beside the field. A note: the
/// section does not say which engine runs the pods, and the other formats still render.
pub static RULE: Rule = Rule {
    code: "PD053",
    name: "rbg-refused",
    severity: Severity::Note,
    summary: "the `rbg` format cannot render this deployment",
    explanation: "A RoleBasedGroup's exclusive-topology annotation keeps roles on topology domains of their \
        own, not the groups of one role, so `kubernetes.exclusive_topology` (the LeaderWorkerSet meaning: each \
        group of pods gets a domain of its own) has no RoleBasedGroup equivalent. Kubernetes' own rules (names, \
        labels, taints, Secrets, nodes of an instance that start alike) are PD050's: the `rbg` format refuses \
        what the `kubernetes` format refuses. A deployment that breaks one of these renders in every other \
        format, but not as a RoleBasedGroup.",
    sglang_errors: &[],
    fix: "Leave `kubernetes.exclusive_topology` unset for the `rbg` format, or render the `kubernetes` format.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(d) = ctx.deployment.filter(|d| !d.kubernetes.is_empty()) else { return Vec::new() };
    if crate::render::kubernetes_refusal(d).is_some() {
        return Vec::new();
    }
    let Some(why) = crate::render::rbg_refusal(d) else { return Vec::new() };
    vec![Finding::refusal(&RULE, "rbg", why)]
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::rules::check;

    fn codes(d: &crate::deployment::Deployment) -> Vec<(&'static str, String)> {
        let found = check(d).findings;
        found.iter().filter(|f| matches!(f.code, "PD050" | "PD053")).map(|f| (f.code, f.message.clone())).collect()
    }

    #[test]
    fn a_setting_only_a_role_based_group_refuses_is_found_beside_its_field() {
        let mut d = example("llama-1p1d").unwrap();
        d.kubernetes.exclusive_topology = Some("kubernetes.io/hostname".into());
        let found = check(&d);
        let f = found.findings.iter().find(|f| f.code == "PD053").expect("PD053");
        assert!(f.message.starts_with("`kubernetes.exclusive_topology`"), "{}", f.message);
        assert_eq!(f.locations[0].origin, crate::plan::Origin::Field { path: "kubernetes.exclusive_topology".into() });
        // A name both formats refuse is PD050's alone.
        d.name = "Llama".into();
        assert_eq!(codes(&d).iter().map(|(c, _)| *c).collect::<Vec<_>>(), ["PD050"]);
    }

    #[test]
    fn a_deployment_a_role_based_group_runs_passes() {
        for name in ["llama-1p1d", "deepseek-v3-dp-deepep", "qwen3-2p1d-nixl"] {
            let mut d = example(name).unwrap();
            d.kubernetes.namespace = Some("llm".into());
            assert!(codes(&d).is_empty(), "{name}: {:?}", codes(&d));
        }
    }
}
