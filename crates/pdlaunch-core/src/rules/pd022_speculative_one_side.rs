//! PD022: speculative decoding is configured on only one side (or differently on each).

use super::{Context, Finding, Rule, Severity};

/// With EAGLE-family algorithms the prefill runs the draft model and ships its top-k, hidden states
/// and draft KV with every request; the decode sizes its receive buffers from its own algorithm.
///
/// A one-sided or mismatched setting changes the aux-buffer stride and the KV region list. Nothing
/// checks it: Mooncake writes with the prefill's strides (silent corruption), NIXL refuses when the
/// decode registered fewer regions. Other algorithms (NGRAM, STANDALONE, ...) are a warning: they
/// ship less, but predictable behaviour still wants both sides equal.
pub static RULE: Rule = Rule {
    code: "PD022",
    name: "speculative-one-side",
    severity: Severity::Error,
    summary: "the speculative algorithm differs between prefill and decode",
    explanation: "For EAGLE, EAGLE3 and NEXTN (which SGLang maps to EAGLE) the prefill runs the draft and transfers \
        `topk_p`, `topk_index`, the draft hidden states and the draft KV alongside the target KV. The decode sizes \
        its aux buffers and KV regions from its own `--speculative-algorithm`. When only one side sets it (or the \
        sides disagree), the aux stride and the region list differ: Mooncake writes with the prefill's item \
        lengths and corrupts what the decode reads, and NIXL rejects the decode's registration. No SGLang check \
        compares the algorithm.",
    sglang_errors: &[
        "NIXL PD transfer: decode registered fewer KV regions ({n_dst}) than prefill ({n_src}); unexpected geometry",
    ],
    fix: "Configure speculative decoding once in `shared.speculative` and do not set `--speculative-*` flags in one \
        side's `extra_args`.",
    lint_only: false,
    check,
};

/// Algorithms whose state travels with the KV (NEXTN and FROZEN_KV_MTP run as EAGLE).
const EAGLE_FAMILY: &[&str] = &["EAGLE", "EAGLE3", "NEXTN", "FROZEN_KV_MTP"];

fn algorithm(s: &crate::effective::ServerView) -> Option<String> {
    s.value("speculative_algorithm").filter(|v| !v.eq_ignore_ascii_case("none") && !v.eq_ignore_ascii_case("null"))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<(Option<String>, Option<String>, String, String)> = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pa, da) = (algorithm(p), algorithm(d));
        if pa.as_deref().map(str::to_ascii_uppercase) == da.as_deref().map(str::to_ascii_uppercase) {
            continue;
        }
        let origin = |s: &crate::effective::ServerView| {
            s.origin("speculative_algorithm").map(ToString::to_string).unwrap_or_default()
        };
        let key = (pa.clone(), da.clone(), origin(p), origin(d));
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let eagle = [&pa, &da]
            .iter()
            .any(|a| a.as_deref().is_some_and(|a| EAGLE_FAMILY.contains(&a.to_ascii_uppercase().as_str())));
        let shown = |a: &Option<String>| a.clone().unwrap_or_else(|| "none".into());
        let message = format!(
            "{} runs speculative algorithm {} but {} runs {}: {}",
            p.label,
            shown(&pa),
            d.label,
            shown(&da),
            if eagle {
                "the draft hidden states, top-k and draft KV are laid out differently on the two sides"
            } else {
                "the two sides schedule and account for draft tokens differently"
            }
        );
        let extra: Vec<String> = [origin(p), origin(d)].into_iter().filter(|o| o.contains("extra_args")).collect();
        let fix = if extra.is_empty() {
            format!(
                "set the same `--speculative-algorithm` on both servers (in a deployment: `shared.speculative.algorithm: {}`)",
                shown(&pa.clone().or(da.clone()))
            )
        } else {
            format!(
                "remove `--speculative-algorithm` from `{}` and configure it once in `shared.speculative`",
                extra.join("`, `")
            )
        };
        let mut f = Finding::new(&RULE, message, fix).at(p, "speculative_algorithm").at(d, "speculative_algorithm");
        if !eagle {
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
    fn decode_only_eagle3_is_an_error() {
        let mut d = llama();
        d.decode.extra_args = vec!["--speculative-algorithm".into(), "EAGLE3".into()];
        let f = findings(&d, "PD022");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("prefill[0] runs speculative algorithm none") && f[0].message.contains("EAGLE3"));
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
    }

    #[test]
    fn one_sided_ngram_is_a_warning() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--speculative-algorithm".into(), "NGRAM".into()];
        let f = findings(&d, "PD022");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("NGRAM"), "{}", f[0].message);
    }
}
