//! PD054: the deployment asks for a DynamoGraphDeployment that cannot be written.

use super::{Check, Context, Finding, Rule, Severity};

/// Checked only for a deployment whose `kubernetes` section is set and that the `kubernetes`
/// format renders (what it refuses, PD050 says, and the `dynamo` format refuses it too): what
/// `render --format dynamo` alone would refuse is then worth knowing beside the field. A note:
/// the section does not say which engine runs the pods, and the other formats still render.
pub static RULE: Rule = Rule {
    code: "PD054",
    name: "dynamo-refused",
    severity: Severity::Note,
    summary: "the `dynamo` format cannot render this deployment",
    explanation: "Dynamo's workers run in the SGLang of a Dynamo release's runtime image, so the target \
        SGLang release must be one a Dynamo release ships (or `launcher.image` must name a runtime built on it). \
        Dynamo's operator gives a multi-node worker's `--dist-init-addr` the port 29500 itself, so an instance's \
        own `dist_init_port` cannot be kept, and Dynamo's Frontend takes the place of SGLang's router, so the router's Kubernetes settings \
        (`service_discovery`, `router_replicas`) do not apply; `exclusive_topology`, `labels` and \
        `pod_annotations` are not written to a DynamoGraphDeployment yet. A deployment that breaks one of these \
        renders in every other format, but not as a DynamoGraphDeployment.",
    sglang_errors: &[],
    fix: "Change the field the finding names as it says, or render the `kubernetes` or `rbg` format.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(d) = ctx.deployment.filter(|d| !d.kubernetes.is_empty()) else { return Vec::new() };
    if crate::render::kubernetes_refusal(d).is_some() {
        return Vec::new();
    }
    let Some(why) = crate::render::dynamo_refusal(d) else { return Vec::new() };
    vec![Finding::refusal(&RULE, "dynamo", why)]
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::release::Release;
    use crate::rules::check;

    fn found(d: &crate::deployment::Deployment) -> Vec<(&'static str, String)> {
        let found = check(d).findings;
        found.iter().filter(|f| matches!(f.code, "PD050" | "PD054")).map(|f| (f.code, f.message.clone())).collect()
    }

    #[test]
    fn a_setting_only_a_dynamo_graph_refuses_is_found_beside_its_field() {
        let mut d = example("llama-1p1d").unwrap();
        d.kubernetes.namespace = Some("llm".into());
        let report = check(&d);
        let f = report.findings.iter().find(|f| f.code == "PD054").expect("PD054");
        assert!(f.message.starts_with("`sglang_version`"), "{}", f.message);
        assert_eq!(f.locations[0].origin, crate::plan::Origin::Field { path: "sglang_version".into() });
        d.sglang_version = Release::V0_5_10;
        d.kubernetes.router_replicas = 2;
        assert!(found(&d)[0].1.starts_with("`kubernetes.router_replicas`"), "{:?}", found(&d));
        // A name both formats refuse is PD050's alone.
        d.name = "Llama".into();
        assert_eq!(found(&d).iter().map(|(c, _)| *c).collect::<Vec<_>>(), ["PD050"]);
    }

    #[test]
    fn a_deployment_a_dynamo_graph_runs_passes() {
        for name in ["llama-1p1d", "qwen3-2p1d-nixl", "llama-eagle3-spec"] {
            let mut d = example(name).unwrap();
            d.sglang_version = Release::V0_5_10;
            d.kubernetes.namespace = Some("llm".into());
            assert!(found(&d).is_empty(), "{name}: {:?}", found(&d));
        }
    }
}
