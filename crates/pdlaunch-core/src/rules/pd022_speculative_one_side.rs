//! PD022: speculative decoding is configured differently on the two sides, or on the prefill only.

use super::{Check, Context, Finding, Rule, Severity};

/// With EAGLE-family algorithms a prefill that speculates runs the draft and ships its top-k and
/// hidden states in the aux buffers, sized from its own algorithm; the decode reads them with
/// its own sizes. Two different algorithms give different aux layouts (EAGLE3 carries three
/// hidden states), and nothing compares them.
///
/// A decode that speculates behind a prefill that does not is SGLang's usual case (its NIXL
/// connector says so: the decode registers its extra draft KV regions, the prefill never has
/// more), so it is not reported. The reverse is wasted work: the prefill drafts for a decode that
/// does not verify.
pub static RULE: Rule = Rule {
    code: "PD022",
    name: "speculative-one-side",
    severity: Severity::Error,
    summary: "the speculative algorithm differs between prefill and decode, or only the prefill speculates",
    explanation: "For EAGLE, EAGLE3 and NEXTN (which SGLang runs as EAGLE) a prefill that speculates runs the draft \
        and sends `topk_p`, `topk_index` and the draft hidden states with the KV; the decode reads them with the \
        sizes of its own `--speculative-algorithm`. When both sides speculate with different algorithms (EAGLE \
        and EAGLE3 differ in the hidden states they carry), the aux layouts differ and the decode starts from \
        wrong draft inputs; no SGLang check compares them. A decode that speculates behind a prefill that does \
        not is supported (SGLang's usual case: the decode drafts for itself and registers its extra draft KV \
        regions). A prefill that speculates for a decode that does not wastes the draft work, and over NIXL \
        fails: the prefill has draft KV regions the decode never registered.",
    sglang_errors: &[
        "no error: the decode reads the prefill's draft top-k and hidden states with its own layout",
        "NIXL PD transfer: decode registered fewer KV regions ({n_dst}) than prefill ({n_src}); unexpected geometry",
    ],
    fix: "Configure speculative decoding once in `shared.speculative` (with `decode_only: true` for a decode \
        that speculates alone) and do not set `--speculative-*` flags in one side's `extra_args`.",
    check: Check::Deployment(check),
};

/// Algorithms whose state travels with the KV, by the name SGLang runs them under (NEXTN and
/// FROZEN_KV_MTP run as EAGLE).
fn family(algorithm: &str) -> Option<&'static str> {
    match algorithm.to_ascii_uppercase().as_str() {
        "EAGLE" | "NEXTN" | "FROZEN_KV_MTP" => Some("EAGLE"),
        "EAGLE3" => Some("EAGLE3"),
        _ => None,
    }
}

fn algorithm(s: &crate::effective::ServerView) -> Option<String> {
    s.value("speculative_algorithm").filter(|v| !v.eq_ignore_ascii_case("none") && !v.eq_ignore_ascii_case("null"))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<(Option<String>, Option<String>, String, String)> = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pa, da) = (algorithm(p), algorithm(d));
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b) || family(a).is_some_and(|f| family(b) == Some(f));
        let kind = match (&pa, &da) {
            (None, _) => continue,
            (Some(a), Some(b)) if same(a, b) => continue,
            (Some(_), Some(_)) => "differ",
            (Some(_), None) => "prefill only",
        };
        let origin = |s: &crate::effective::ServerView| {
            s.origin("speculative_algorithm").map(ToString::to_string).unwrap_or_default()
        };
        let key = (pa.clone(), da.clone(), origin(p), origin(d));
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let eagle = [&pa, &da].iter().any(|a| a.as_deref().and_then(family).is_some());
        let shown = |a: &Option<String>| a.clone().unwrap_or_else(|| "none".into());
        let why = match (kind, eagle) {
            ("prefill only", _) => "the prefill drafts for a decode that does not verify: the draft work is wasted",
            (_, true) => "the decode reads the prefill's draft top-k and hidden states with a different layout",
            (_, false) => "the two sides schedule and account for draft tokens differently",
        };
        let message =
            format!("{} runs speculative algorithm {} but {} runs {}: {why}", p.label, shown(&pa), d.label, shown(&da));
        let extra: Vec<String> = [origin(p), origin(d)].into_iter().filter(|o| o.contains("extra_args")).collect();
        let fix = match (kind, extra.is_empty()) {
            ("prefill only", _) => "set the prefill's `--speculative-algorithm` on the decode too, or remove it from \
                 the prefill (in a deployment: `shared.speculative`, with `decode_only: true` for a decode that \
                 speculates alone)"
                .to_owned(),
            (_, true) => format!(
                "set the same `--speculative-algorithm` on both servers (in a deployment: `shared.speculative.algorithm: {}`)",
                shown(&da)
            ),
            (_, false) => format!(
                "remove `--speculative-algorithm` from `{}` and configure it once in `shared.speculative`",
                extra.join("`, `")
            ),
        };
        let mut f = Finding::new(&RULE, message, fix).at(p, "speculative_algorithm").at(d, "speculative_algorithm");
        let nixl = [p, d].iter().any(|s| s.value("disaggregation_transfer_backend").as_deref() == Some("nixl"));
        if kind == "prefill only" && nixl {
            f.message.push_str("; over nixl the prefill's draft KV regions have no counterpart on the decode");
            f.sglang_error = Some(RULE.sglang_errors[1]);
        } else if kind == "prefill only" || !eagle {
            f = f.severity(Severity::Warning);
            f.sglang_error = None;
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn matched_speculative_settings_pass() {
        assert!(!codes(&example("llama-eagle3-spec").unwrap()).contains(&"PD022"));
        assert!(!codes(&llama()).contains(&"PD022"));
    }

    #[test]
    fn a_decode_that_speculates_alone_is_supported() {
        for algorithm in ["EAGLE3", "EAGLE", "NEXTN", "NGRAM"] {
            let mut d = llama();
            d.decode.extra_args = vec!["--speculative-algorithm".into(), algorithm.into()];
            assert!(findings(&d, "PD022").is_empty(), "{algorithm}");
        }
    }

    #[test]
    fn a_deployment_can_speculate_on_the_decode_only() {
        let mut d = example("llama-eagle3-spec").unwrap();
        d.shared.speculative.as_mut().unwrap().decode_only = true;
        assert!(!codes(&d).contains(&"PD022"));
        let plan = crate::plan::plan(&d);
        for s in &plan.servers {
            let argv = s.arg_tokens();
            let speculates = argv.iter().any(|a| a == "--speculative-algorithm");
            assert_eq!(speculates, s.role == crate::deployment::Role::Decode, "{argv:?}");
        }
    }

    #[test]
    fn different_algorithms_on_both_sides_are_an_error() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--speculative-algorithm".into(), "EAGLE".into()];
        d.decode.extra_args = vec!["--speculative-algorithm".into(), "EAGLE3".into()];
        let f = findings(&d, "PD022");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message.contains("prefill[0] runs speculative algorithm EAGLE") && f[0].message.contains("EAGLE3")
        );
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
        // NEXTN runs as EAGLE.
        d.decode.extra_args[1] = "NEXTN".into();
        assert!(findings(&d, "PD022").is_empty());
    }

    #[test]
    fn a_prefill_that_speculates_alone_over_nixl_is_an_error() {
        let mut d = llama();
        d.shared.transfer_backend = crate::choices::TransferBackend::Nixl;
        d.prefill.extra_args = vec!["--speculative-algorithm".into(), "EAGLE".into()];
        let f = findings(&d, "PD022");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Error), "{f:?}");
        assert!(f[0].sglang_error.unwrap().contains("decode registered fewer KV regions"));
    }

    #[test]
    fn a_prefill_that_speculates_alone_is_a_warning() {
        for algorithm in ["NGRAM", "EAGLE"] {
            let mut d = llama();
            d.prefill.extra_args = vec!["--speculative-algorithm".into(), algorithm.into()];
            let f = findings(&d, "PD022");
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].severity, Severity::Warning);
            assert!(f[0].message.contains(algorithm) && f[0].message.contains("wasted"), "{}", f[0].message);
        }
    }
}
