//! PD063: a setting that decides a hybrid model's state layout differs between prefill and decode.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

/// The Mamba state of a hybrid model is sized by `--mamba-ssm-dtype`, and DeepSeek-V4's KV byte
/// layout by `--dsv4-attn-backend`: each side registers its state buffers with its own value, and
/// the transfer pairs them entry by entry, so a difference fails every transfer (Mooncake, NIXL
/// and the common pairing code each have their check). The variables that change these layouts
/// (`SGLANG_DSV4_KV_LAYOUT`, `SGLANG_DSV4_UNIFIED_KV_FP8`) are PD033's.
pub static RULE: Rule = Rule {
    code: "PD063",
    name: "state-layout-mismatch",
    severity: Severity::Error,
    summary: "`--mamba-ssm-dtype` or `--dsv4-attn-backend`, which decide a state layout, differ between the sides",
    explanation: "Mamba state is sized by `--mamba-ssm-dtype` (unset: the model's), DeepSeek-V4's KV layout by \
        `--dsv4-attn-backend`. The transfer pairs each side's buffers entry by entry and refuses a difference. \
        Set on one side only is a warning.",
    sglang_errors: &[
        "Replicated Mamba state item lengths differ between prefill and decode: {src_item_len} != {dst_item_len}",
        "Prefill/Decode Mamba slot size mismatch (src={length}, dst={dst_state_item_lens[j]}). Configure matching persistent state layouts on both peers.",
        "NIXL state layout rejected for {peer_name}: {rejection}",
        "NIXL prepared state component {index} ({state_type}) stride mismatch for peer {peer_info.agent_name}: src[{s}]={src_strides[s]}, dst[{d}]={dst_strides[d]}",
        "{state_type} item length mismatch for paired entries src[{i}]={item_lens[i]} dst[{j}]={dst_item_lens[j]}",
        "KV layout mismatch: prefill server has kv_layout={info.kv_layout}, but decode server has kv_layout={self.kv_layout}. Both servers must use the same --dsv4-attn-backend and SGLANG_DSV4_KV_LAYOUT.",
    ],
    fix: "Pass the same `--mamba-ssm-dtype` and `--dsv4-attn-backend` to both sides.",
    check: Check::Deployment(check),
};

/// The flags compared, with SGLang's default (`None`: the model's own) and the text each quotes.
const COMPARED: &[(&str, Option<&str>, usize)] =
    &[("mamba_ssm_dtype", None, 0), ("dsv4_attn_backend", Some("auto"), 5)];

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        for &(dest, default, text) in COMPARED {
            let value = |s: &ServerView| s.value(dest).or_else(|| default.map(str::to_owned));
            let (pv, dv) = (value(p), value(d));
            if pv == dv {
                continue;
            }
            let flag = p.spec().by_dest(dest).map_or(dest, |f| f.flags[0].as_str());
            let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unset (the model's dtype)".into());
            let message = format!(
                "{flag} differs: {} has {} but {} has {}: the two sides lay out the state they transfer differently",
                p.label,
                shown(&pv),
                d.label,
                shown(&dv)
            );
            let fix = format!("pass the same `{flag}` to both servers");
            let mut f = Finding::new(&RULE, message, fix).at(p, dest).at(d, dest);
            f.sglang_error = Some(RULE.sglang_errors[text]);
            if pv.is_none() || dv.is_none() {
                f = f.severity(Severity::Warning);
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn equal_or_unset_state_settings_pass() {
        assert!(findings(&llama(), "PD063").is_empty());
        let mut d = llama();
        for side in [&mut d.prefill, &mut d.decode] {
            side.extra_args = ["--mamba-ssm-dtype", "float32", "--dsv4-attn-backend", "auto"].map(Into::into).into();
        }
        assert!(findings(&d, "PD063").is_empty(), "{:?}", findings(&d, "PD063"));
        // `auto` is the default backend.
        d.decode.extra_args.truncate(2);
        assert!(findings(&d, "PD063").is_empty(), "{:?}", findings(&d, "PD063"));
    }

    #[test]
    fn a_different_mamba_state_dtype_or_dsv4_backend_is_caught() {
        let mut d = llama();
        d.prefill.extra_args = ["--mamba-ssm-dtype", "float32", "--dsv4-attn-backend", "flashmla"].map(Into::into).into();
        d.decode.extra_args = ["--mamba-ssm-dtype", "bfloat16"].map(Into::into).into();
        let f = findings(&d, "PD063");
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].message.contains("--mamba-ssm-dtype differs: prefill[0] has float32 but decode[0] has bfloat16"));
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[1].sglang_error.unwrap().starts_with("KV layout mismatch"), "{:?}", f[1]);
        // Set on one side only: the model's own dtype may be that one.
        d.decode.extra_args.clear();
        d.prefill.extra_args.truncate(2);
        let f = findings(&d, "PD063");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Warning), "{f:?}");
    }
}
