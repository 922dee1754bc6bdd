//! PD023: the KV canary is enabled on only one side (or on a pool it cannot attach to).

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::AttentionKind;

/// `--kv-canary` splices extra canary buffers into the KV region list that the PD transfer walks,
/// so a one-sided canary shifts the region count and order between the two sides.
///
/// On an MLA pool (DeepSeek-V2/V3, Kimi-K2) the canary cannot attach at all and the server that
/// enables it fails at startup; that makes a one-sided canary an error for MLA models. Only
/// DeepSeek-V4's pool among the MLA-class ones is supported.
pub static RULE: Rule = Rule {
    code: "PD023",
    name: "kv-canary-one-side",
    severity: Severity::Warning,
    summary: "`--kv-canary` differs between prefill and decode",
    explanation: "The KV canary wraps the pool's buffer list and adds head/tail canary regions, which travel \
        through the PD transfer so that the decode can verify what it received. When only one side enables it, \
        the two sides register different region lists: NIXL rejects the decode's registration, Mooncake pairs \
        regions by position and writes canary bytes into KV (or KV into canaries). The CI runs it with identical \
        canary flags on both sides. On MLA models (other than DeepSeek-V4) the canary has no pool attacher and the \
        side that enables it fails at startup.",
    sglang_errors: &[
        "NIXL PD transfer: decode registered fewer KV regions ({n_dst}) than prefill ({n_src}); unexpected geometry",
        "kv-canary: no attacher registered for pool class {type(pool).__name__}; supported: {sorted(cls.__name__ for cls in _POOL_ATTACHERS)}",
    ],
    fix: "Set `shared.kv_canary` (it renders on both sides) and do not pass `--kv-canary` in one side's `extra_args`; \
        on MLA models leave it `none`.",
    check: Check::Deployment(check),
};

fn canary(s: &crate::effective::ServerView) -> String {
    s.value("kv_canary").unwrap_or_else(|| "none".into())
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mla_without_attacher =
        ctx.model.attention() == Some(AttentionKind::Mla) && ctx.model.architecture() != Some("DeepseekV4ForCausalLM");
    let mut out = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pc, dc) = (canary(p), canary(d));
        if pc == dc || seen.contains(&(pc.clone(), dc.clone())) {
            continue;
        }
        seen.push((pc.clone(), dc.clone()));
        let on = if pc != "none" { p } else { d };
        let mut message = format!(
            "{} runs --kv-canary {pc} but {} runs --kv-canary {dc}: the canary regions are spliced into one side's \
             KV region list only, so the transfer pairs different regions",
            p.label, d.label
        );
        if mla_without_attacher {
            message.push_str(&format!(
                "; on this MLA model {} also fails at startup because the canary cannot attach to an MLA pool",
                on.label
            ));
        }
        let origins: Vec<String> = [p, d]
            .iter()
            .filter_map(|s| s.origin("kv_canary").map(ToString::to_string))
            .filter(|o| o.contains("extra_args"))
            .collect();
        let fix = match (origins.is_empty(), mla_without_attacher) {
            (_, true) => format!(
                "remove the canary from {} (MLA pools are not supported){}",
                on.label,
                if origins.is_empty() { String::new() } else { format!(": delete it from `{}`", origins.join("`, `")) }
            ),
            (true, false) => "set the same `--kv-canary` on both sides (`shared.kv_canary`)".to_owned(),
            (false, false) => {
                format!("remove `--kv-canary` from `{}` and set `shared.kv_canary` instead", origins.join("`, `"))
            }
        };
        let mut f = Finding::new(&RULE, message, fix).at(p, "kv_canary").at(d, "kv_canary");
        if mla_without_attacher {
            f = f.severity(Severity::Error);
            f.sglang_error = RULE.sglang_errors.get(1).copied();
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::choices::KvCanary;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn shared_canary_passes() {
        assert!(!codes(&llama()).contains(&"PD023"));
        let mut d = llama();
        d.shared.kv_canary = Some(KvCanary::Log);
        assert!(!codes(&d).contains(&"PD023"));
    }

    #[test]
    fn decode_only_canary_warns() {
        let mut d = llama();
        d.decode.extra_args = vec!["--kv-canary".into(), "raise".into()];
        let f = findings(&d, "PD023");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("--kv-canary none") && f[0].message.contains("--kv-canary raise"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("decode.extra_args[0]"), "{}", f[0].fix);
    }

    #[test]
    fn one_sided_canary_on_mla_is_an_error() {
        let mut d = deepseek();
        d.prefill.extra_args = vec!["--kv-canary".into(), "log".into()];
        let f = findings(&d, "PD023");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("MLA"), "{}", f[0].message);
    }
}
