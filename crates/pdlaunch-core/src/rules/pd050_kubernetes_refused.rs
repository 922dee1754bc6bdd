//! PD050: the deployment's `kubernetes` section asks for manifests that cannot be written.

use super::{Check, Context, Finding, Rule, Severity};

/// Checked only for a deployment whose `kubernetes` section is set: the user means to run it on
/// Kubernetes, so what `render --format kubernetes` would refuse is worth knowing at `check`
/// time, beside the field, rather than at render time. A warning: the other formats still
/// render.
pub static RULE: Rule = Rule {
    code: "PD050",
    name: "kubernetes-refused",
    severity: Severity::Warning,
    summary: "the `kubernetes` format cannot render this deployment",
    explanation: "Kubernetes has rules of its own: object names and namespaces are DNS labels, label keys and \
        values, taints and Secret names have their own forms, and the pods of one LeaderWorkerSet group share a \
        template, so the nodes of an instance must start alike. With `kubernetes.service_discovery` the router \
        reaches every server at one port, in a namespace its RoleBinding names. A deployment that breaks one of \
        these renders in every other format, but not as Kubernetes manifests.",
    sglang_errors: &[],
    fix: "Change the field the finding names as it says, or leave the `kubernetes` section out when the \
        deployment does not run on Kubernetes.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(d) = ctx.deployment.filter(|d| !d.kubernetes.is_empty()) else { return Vec::new() };
    let Some(why) = crate::render::kubernetes_refusal(d) else { return Vec::new() };
    vec![Finding::refusal(&RULE, "kubernetes", why)]
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::rules::check;

    fn pd050(d: &crate::deployment::Deployment) -> Vec<String> {
        check(d).findings.iter().filter(|f| f.code == "PD050").map(|f| f.message.clone()).collect()
    }

    #[test]
    fn a_refused_setting_is_found_beside_its_field() {
        let mut d = example("llama-1p1d").unwrap();
        // Without the section, a name Kubernetes would refuse is no concern.
        d.name = "Llama_1p1d".into();
        assert!(pd050(&d).is_empty());
        d.kubernetes.tolerations = vec!["gpu:Sometimes".into()];
        let found = check(&d);
        let f = found.findings.iter().find(|f| f.code == "PD050").expect("PD050");
        assert!(f.message.starts_with("`name`"), "{}", f.message);
        assert_eq!(f.locations[0].origin, crate::plan::Origin::Field { path: "name".into() });
        d.name = "llama-1p1d".into();
        assert!(pd050(&d)[0].starts_with("`kubernetes.tolerations[0]`"));
        d.kubernetes.tolerations.clear();
        d.kubernetes.service_discovery = true;
        assert!(pd050(&d)[0].starts_with("`kubernetes.service_discovery` needs `kubernetes.namespace`"));
        d.kubernetes.namespace = Some("llm".into());
        assert!(pd050(&d).is_empty());
        assert!(pd050(&example("deepseek-v3-dp-deepep").unwrap()).is_empty());
    }
}
