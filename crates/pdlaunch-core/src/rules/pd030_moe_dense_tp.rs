//! PD030: a dense-MLP TP size SGLang does not support.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::release::Release;

/// `--moe-dense-tp-size` sets the TP size of the dense MLP layers of a MoE model. SGLang accepts
/// only unset or 1, and from 0.5.19 also the full `tp_size`; anything else fails its argument check.
pub static RULE: Rule = Rule {
    code: "PD030",
    name: "moe-dense-tp",
    severity: Severity::Error,
    summary: "`--moe-dense-tp-size` is not unset, 1 or (0.5.19+) tp_size",
    explanation: "The dense MLP layers of MoE models run either fully replicated (1) or with the attention's TP; \
        other splits have no kernel path. `check_server_args` asserts the value, so the server exits at startup. \
        Releases before 0.5.19 accept only 1 (or unset).",
    sglang_errors: &[
        "moe_dense_tp_size only supports None, 1, or tp_size currently",
        "moe_dense_tp_size only support 1 and None currently",
    ],
    fix: "Set the side's `moe_dense_tp` to 1 (or to its `tp` on 0.5.19+), or leave it unset.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let groups = group(&ctx.servers, |s| {
        let v = s.explicit("moe_dense_tp_size").and_then(|v| v.parse::<i64>().ok())?;
        let tp = i64::from(s.size("tp_size"));
        let new = s.release >= Release::V0_5_19;
        let ok = v == 1 || (new && v == tp);
        (!ok).then(|| (v, tp, new, s.origin("moe_dense_tp_size").map(ToString::to_string).unwrap_or_default()))
    });
    groups
        .into_iter()
        .map(|((v, tp, new, origin), servers)| {
            let allowed = if new { format!("unset, 1 or tp_size ({tp})") } else { "unset or 1".to_owned() };
            let message = format!(
                "{}: --moe-dense-tp-size {v} is not supported by SGLang {}: it must be {allowed}",
                labels(&servers),
                servers[0].release.as_str()
            );
            let fix =
                format!("set `{origin}` to 1{}, or remove it", if new { format!(" or {tp}") } else { String::new() });
            let mut f = servers
                .iter()
                .fold(Finding::new(&RULE, message, fix), |f, s| f.at(s, "moe_dense_tp_size").at(s, "tp_size"));
            if !new {
                f.sglang_error = RULE.sglang_errors.get(1).copied();
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::release::Release;
    use crate::rules::testing::*;

    #[test]
    fn unset_or_one_passes() {
        assert!(!codes(&deepseek()).contains(&"PD030"));
        let mut d = deepseek();
        d.prefill.moe_dense_tp = Some(1);
        d.decode.moe_dense_tp = Some(16);
        assert!(!codes(&d).contains(&"PD030"));
    }

    #[test]
    fn other_values_fail() {
        let mut d = deepseek();
        d.decode.moe_dense_tp = Some(4);
        let f = findings(&d, "PD030");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("--moe-dense-tp-size 4") && f[0].message.contains("tp_size (16)"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("`decode.moe_dense_tp`"), "{}", f[0].fix);
    }

    #[test]
    fn tp_sized_dense_layers_need_0_5_19() {
        let mut d = deepseek();
        d.sglang_version = Release::V0_5_10;
        d.decode.moe_dense_tp = Some(16);
        let f = findings(&d, "PD030");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("unset or 1"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().contains("only support 1 and None"));
    }
}
