//! PD031: pipeline parallelism combined with speculative decoding.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};

/// `--pp-size > 1` turns the overlap scheduler off and is incompatible with speculative decoding;
/// SGLang asserts both in `check_server_args`.
pub static RULE: Rule = Rule {
    code: "PD031",
    name: "pp-with-speculative",
    severity: Severity::Error,
    summary: "pipeline parallelism is combined with speculative decoding",
    explanation: "SGLang's pipeline-parallel scheduler has no speculative path: with `pp_size > 1` it asserts that \
        no `--speculative-algorithm` is set, and the server exits at startup. In PD the speculative settings must \
        match on both sides (PD022), so a side with PP cannot use speculative decoding at all; a decode may drop to \
        PP 1 while the prefill keeps PP.",
    sglang_errors: &["Pipeline parallelism is not compatible with overlap schedule, speculative decoding"],
    fix: "Set the side's `pp` to 1, or remove `shared.speculative`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let pp = s.size("pp_size");
        if pp <= 1 {
            return None;
        }
        let algo = s.value("speculative_algorithm").filter(|a| !a.eq_ignore_ascii_case("none"))?;
        Some((pp, algo, s.origin("pp_size").map(ToString::to_string).unwrap_or_default()))
    });
    groups
        .into_iter()
        .map(|((pp, algo, origin), servers)| {
            let message = format!(
                "{}: --pp-size {pp} with --speculative-algorithm {algo}: SGLang's pipeline-parallel scheduler cannot \
                 run speculative decoding",
                labels(&servers)
            );
            let spec_origin = servers[0]
                .origin("speculative_algorithm")
                .map_or_else(|| "shared.speculative".to_owned(), ToString::to_string);
            let fix = format!("set `{origin}` to 1 (spread the model with more TP instead), or remove `{spec_origin}`");
            servers
                .iter()
                .fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "pp_size").at(s, "speculative_algorithm"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::rules::testing::*;

    #[test]
    fn spec_without_pp_passes() {
        assert!(!codes(&example("llama-eagle3-spec").unwrap()).contains(&"PD031"));
        let mut d = llama();
        d.prefill.pp = 2;
        d.prefill.tp = 1;
        assert!(!codes(&d).contains(&"PD031"));
    }

    #[test]
    fn pp_with_eagle_fails() {
        let mut d = example("llama-eagle3-spec").unwrap();
        d.prefill.pp = 2;
        d.prefill.tp = 1;
        let f = findings(&d, "PD031");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("prefill[0]: --pp-size 2 with --speculative-algorithm EAGLE3"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("`prefill.pp`") && f[0].fix.contains("shared.speculative.algorithm"), "{}", f[0].fix);
    }
}
