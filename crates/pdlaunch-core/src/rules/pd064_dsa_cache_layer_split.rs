//! PD064: `--enable-dsa-cache-layer-split` where SGLang refuses it.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;

/// The DSA cache layer split is a prefill context-parallel optimization for DSA models
/// (DeepSeek-V3.2, GLM-5): SGLang's model hook refuses it on a decode, and on a prefill without
/// interleaved prefill CP, with a transfer backend other than Mooncake, or with PP.
pub static RULE: Rule = Rule {
    code: "PD064",
    name: "dsa-cache-layer-split",
    severity: Severity::Error,
    summary: "`--enable-dsa-cache-layer-split` is set where SGLang refuses it",
    explanation: "A DSA prefill's layer split spreads its cache over its CP ranks and sends each share through \
        Mooncake. SGLang refuses it at startup on a decode, and on a prefill without interleaved prefill CP, \
        over another backend, or with PP.",
    sglang_errors: &[
        "--enable-dsa-cache-layer-split is not supported on decode workers. This flag is a prefill-CP optimization; decode receives full cache shards through PD transfer.",
        "--enable-dsa-cache-layer-split requires --enable-prefill-cp and --cp-strategy interleave.",
        "--enable-dsa-cache-layer-split currently only supports the mooncake transfer backend (mooncake / mooncake_tcp). Got --disaggregation-transfer-backend {cfg.disaggregation_transfer_backend}. mori/nixl support will be added later by the community.",
        "--enable-dsa-cache-layer-split is not supported with pipeline parallelism (pp_size > 1) yet. It requires prefill context parallelism, and CP + PP has not been validated for this feature.",
    ],
    fix: "Set it on the prefill only, with `--enable-prefill-cp --cp-strategy interleave`, mooncake and PP 1.",
    check: Check::Deployment(check),
};

fn finding(i: usize, s: &ServerView, why: String, fix: &str, dest: &str) -> Finding {
    let message = format!("{} has --enable-dsa-cache-layer-split {why}", s.label);
    let mut f = Finding::new(&RULE, message, fix).at(s, "enable_dsa_cache_layer_split").at(s, dest);
    f.sglang_error = Some(RULE.sglang_errors[i]);
    f
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let split: Vec<&ServerView> =
        ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some() && s.switch("enable_dsa_cache_layer_split")).collect();
    if split.is_empty() {
        return out;
    }
    // SGLang's DSA hook alone reads the flag: another model ignores it.
    match ctx.model.geometry.as_ref().map(|_| ctx.model.is_dsa()) {
        Some(true) => {}
        Some(false) => return out,
        None => {
            let message = format!(
                "{} set --enable-dsa-cache-layer-split; model geometry unknown, its DSA checks skipped",
                super::labels(&split)
            );
            let f = Finding::new(&RULE, message, "name the model so that pdlaunch knows whether it is a DSA model");
            out.push(f.severity(Severity::Note).or_preset(ctx));
            return out;
        }
    }
    for s in split {
        if s.role == Some(Role::Decode) {
            out.push(finding(0, s, "on a decode".into(), "remove it from the decode", "disaggregation_mode"));
            continue;
        }
        let strategy = s.value("cp_strategy").unwrap_or_else(|| "unset".into());
        if !s.switch("enable_prefill_cp") || strategy != "interleave" {
            let why = format!(
                "but {}--cp-strategy {strategy}",
                if s.switch("enable_prefill_cp") { "" } else { "no --enable-prefill-cp and " }
            );
            out.push(finding(1, s, why, "add `--enable-prefill-cp --cp-strategy interleave`", "cp_strategy"));
        }
        let backend = s.transfer_backend();
        if backend != "mooncake" {
            let why = format!("with transfer backend `{backend}`");
            out.push(finding(2, s, why, "use the mooncake transfer backend", "disaggregation_transfer_backend"));
        }
        let pp = s.size("pp_size");
        if pp > 1 {
            out.push(finding(3, s, format!("with --pp-size {pp}"), "set `--pp-size 1` on the prefill", "pp_size"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    fn dsa() -> crate::deployment::Deployment {
        let mut d = deepseek();
        d.model.preset = Some("deepseek-v3.2".into());
        d.model.geometry = None;
        d
    }

    #[test]
    fn a_prefill_with_interleaved_cp_on_mooncake_passes() {
        let mut d = dsa();
        d.prefill.extra_args =
            ["--enable-dsa-cache-layer-split", "--enable-prefill-cp", "--cp-strategy", "interleave"].map(Into::into).into();
        assert!(findings(&d, "PD064").is_empty(), "{:?}", findings(&d, "PD064"));
        // Another model ignores the flag.
        let mut l = llama();
        l.decode.extra_args = vec!["--enable-dsa-cache-layer-split".into()];
        assert!(findings(&l, "PD064").is_empty());
    }

    #[test]
    fn the_split_on_a_decode_or_without_its_prefill_setup_is_caught() {
        let mut d = dsa();
        d.decode.extra_args = vec!["--enable-dsa-cache-layer-split".into()];
        d.prefill.extra_args =
            ["--enable-dsa-cache-layer-split", "--disaggregation-transfer-backend", "nixl"].map(Into::into).into();
        let texts: Vec<&str> = findings(&d, "PD064").iter().filter_map(|f| f.sglang_error).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("not supported on decode workers")));
        assert!(texts.iter().any(|t| t.contains("requires --enable-prefill-cp")));
        assert!(texts.iter().any(|t| t.contains("only supports the mooncake transfer backend")));
        // Without the model's geometry the checks are skipped, with a note.
        d.model.preset = None;
        let f = findings(&d, "PD064");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Note), "{f:?}");
    }
}
