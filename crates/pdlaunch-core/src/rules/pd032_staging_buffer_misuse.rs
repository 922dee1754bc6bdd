//! PD032: the staging buffer enabled where SGLang refuses it.

use super::pd033_env_contract_mismatch::{env_on, env_origin};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{AttentionKind, Role};
use crate::effective::ServerView;

/// `SGLANG_DISAGG_STAGING_BUFFER` gathers a non-MLA model's heads into a contiguous GPU buffer for
/// heterogeneous-TP transfers. SGLang accepts it only with Mooncake or NIXL, refuses it for MLA
/// models, and on a prefill needs a positive chunked-prefill size that is a multiple of the page
/// size (the staging grid is page-aligned).
pub static RULE: Rule = Rule {
    code: "PD032",
    name: "staging-buffer-misuse",
    severity: Severity::Error,
    summary: "`SGLANG_DISAGG_STAGING_BUFFER` is set where SGLang rejects it",
    explanation: "The staging buffer is the fast path for GQA/MHA models whose prefill and decode use different \
        attention TP sizes. SGLang checks three things when it is on: the transfer backend must be `mooncake` or \
        `nixl` (startup `ValueError`), the model must not be MLA (its KV is not split by head, so there is nothing \
        to stage: `RuntimeError` when the KV manager starts), and a prefill's `--chunked-prefill-size` (per DP rank \
        under DP attention) must be positive and a multiple of the effective page size, and a prefill with PP > 1 \
        must use Mooncake. The buffer lives on CUDA or XPU devices only (`--device`).",
    sglang_errors: &[
        "SGLANG_DISAGG_STAGING_BUFFER requires disaggregation_transfer_backend='mooncake' or 'nixl', got '{server_args.disaggregation_transfer_backend}'.",
        "SGLANG_DISAGG_STAGING_BUFFER is designed for non-MLA models (e.g. GQA, MHA). MLA models should not set this flag.",
        "SGLANG_DISAGG_STAGING_BUFFER requires a positive chunked_prefill_size that is a multiple of page_size ({page_size}); got {server_args.chunked_prefill_size}.",
        "SGLANG_DISAGG_STAGING_BUFFER with pp_size > 1 is only supported by Mooncake.",
        "Staging buffer is not supported on device type '{device.type}' (supported: {', '.join(_STAGING_SUPPORTED_DEVICE_TYPES)}). Unset SGLANG_DISAGG_STAGING_BUFFER to disable it.",
    ],
    fix: "Enable the staging buffer only for non-MLA models over Mooncake or NIXL, with a prefill \
        `chunked_prefill_size` that is a positive multiple of `shared.page_size`.",
    check: Check::Deployment(check),
};

const NAME: &str = "SGLANG_DISAGG_STAGING_BUFFER";

fn finding(ctx: &Context, servers: &[&ServerView], which: usize, message: String, fix: String, dest: &str) -> Finding {
    let mut f = Finding::new(&RULE, message, fix);
    f.sglang_error = RULE.sglang_errors.get(which).copied();
    servers.iter().fold(f, |f, s| f.at_origin(s.label.clone(), None, env_origin(ctx, s, NAME)).at(s, dest))
}

fn check(ctx: &Context) -> Vec<Finding> {
    use super::{group, labels};
    let on: Vec<&ServerView> = ctx.servers.iter().filter(|s| s.role.is_some() && env_on(s, NAME)).collect();
    let mut out = Vec::new();

    for (backend, servers) in group(on.iter().copied(), |s| {
        let b = s.transfer_backend();
        (!matches!(b.as_str(), "mooncake" | "nixl")).then_some(b)
    }) {
        let message = format!(
            "{}: {NAME} is on with transfer backend `{backend}`, but the staging buffer only works with mooncake or nixl",
            labels(&servers)
        );
        let fix = "use `shared.transfer_backend: mooncake` or `nixl`, or unset the staging buffer".to_owned();
        out.push(finding(ctx, &servers, 0, message, fix, "disaggregation_transfer_backend"));
    }

    if ctx.model.attention() == Some(AttentionKind::Mla) && !on.is_empty() {
        let message = format!(
            "{}: {NAME} is on for an MLA model ({}); MLA KV is not split by head, SGLang refuses the staging buffer",
            labels(&on),
            ctx.model.architecture().unwrap_or("attention: mla")
        );
        let fix = match env_origin(ctx, on[0], NAME) {
            crate::plan::Origin::Field { path } => {
                format!("remove `{path}` (MLA models transfer heterogeneous TP without it)")
            }
            _ => format!("unset {NAME} (MLA models transfer heterogeneous TP without it)"),
        };
        out.push(finding(ctx, &on, 1, message, fix, "model_path"));
    }

    let prefills = on.iter().copied().filter(|s| s.role == Some(Role::Prefill));
    for ((size, dp, page), servers) in group(prefills, |s| {
        let size = s.int("chunked_prefill_size").filter(|_| s.explicit("chunked_prefill_size").is_some())?;
        let dp = i64::from(s.attn_dp());
        let page = i64::from(s.page_size(&ctx.model).value.max(1));
        let per_rank = size / dp;
        (per_rank <= 0 || per_rank % page != 0).then_some((size, dp, page))
    }) {
        let per_rank = size / dp;
        let per = if dp > 1 { format!(" ({per_rank} per DP-attention rank)") } else { String::new() };
        let message = format!(
            "{}: {NAME} needs a positive chunked_prefill_size that is a multiple of the page size {page}, got \
             {size}{per}",
            labels(&servers)
        );
        let side = servers[0]
            .origin("chunked_prefill_size")
            .map_or_else(|| "prefill.chunked_prefill_size".into(), ToString::to_string);
        let suggestion = (per_rank / page).max(1) * page * dp;
        let fix = format!("set `{side}` to a positive multiple of {} (e.g. {suggestion})", page * dp);
        out.push(finding(ctx, &servers, 2, message, fix, "chunked_prefill_size"));
    }

    let staged_pp = on.iter().copied().filter(|s| s.role == Some(Role::Prefill) && s.size("pp_size") > 1);
    for (backend, servers) in group(staged_pp, |s| {
        let b = s.transfer_backend();
        (b == "nixl").then_some(b)
    }) {
        let message = format!(
            "{}: {NAME} is on with pp_size={} over `{backend}`; only Mooncake stages a pipelined prefill",
            labels(&servers),
            servers[0].size("pp_size")
        );
        let fix = "use `shared.transfer_backend: mooncake`, set the prefill's `pp` to 1, or unset the staging buffer";
        out.push(finding(ctx, &servers, 3, message, fix.to_owned(), "pp_size"));
    }

    for (device, servers) in group(on.iter().copied(), |s| {
        s.explicit("device").filter(|d| !matches!(d.as_str(), "cuda" | "xpu"))
    }) {
        let message = format!(
            "{}: {NAME} is on with --device {device}; the staging buffer lives on CUDA or XPU devices only",
            labels(&servers)
        );
        out.push(finding(ctx, &servers, 4, message, format!("unset {NAME} on {device} servers"), "device"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::choices::TransferBackend;
    use crate::examples::example;
    use crate::rules::testing::*;

    fn qwen() -> crate::deployment::Deployment {
        example("qwen3-2p1d-nixl").unwrap()
    }

    #[test]
    fn qwen_example_uses_it_correctly() {
        assert!(!codes(&qwen()).contains(&"PD032"));
        assert!(!codes(&llama()).contains(&"PD032"));
    }

    #[test]
    fn wrong_backend() {
        let mut d = qwen();
        d.shared.transfer_backend = TransferBackend::Mori;
        let f = findings(&d, "PD032");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("transfer backend `mori`") && f[0].message.contains("decode[0]"),
            "{}",
            f[0].message
        );
        assert!(f[0].sglang_error.unwrap().contains("requires disaggregation_transfer_backend"));
    }

    #[test]
    fn mla_model() {
        let mut d = deepseek();
        d.shared.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "true".into());
        let f = findings(&d, "PD032");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("MLA") && f[0].message.contains("DeepseekV3ForCausalLM"), "{}", f[0].message);
        assert!(f[0].fix.contains("shared.env.SGLANG_DISAGG_STAGING_BUFFER"), "{}", f[0].fix);
    }

    #[test]
    fn chunk_not_a_page_multiple() {
        let mut d = qwen();
        d.prefill.chunked_prefill_size = Some(8200);
        let f = findings(&d, "PD032");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("page size 32, got 8200") && f[0].message.contains("prefill[0], prefill[1]"),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("prefill.chunked_prefill_size") && f[0].fix.contains("8192"), "{}", f[0].fix);
        d.prefill.chunked_prefill_size = Some(-1);
        assert_eq!(findings(&d, "PD032").len(), 1);
    }

    #[test]
    fn a_pipelined_prefill_over_nixl_and_a_device_without_it() {
        let mut d = qwen();
        d.prefill.pp = 2;
        let f = findings(&d, "PD032");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("pp_size=2 over `nixl`"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().contains("pp_size > 1 is only supported by Mooncake"));
        let mut d = qwen();
        d.decode.extra_args = vec!["--device".into(), "npu".into()];
        let f = findings(&d, "PD032");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("decode[0]: SGLANG_DISAGG_STAGING_BUFFER is on with --device npu"), "{}", f[0].message);
        d.decode.extra_args = vec!["--device".into(), "cuda".into()];
        assert!(findings(&d, "PD032").is_empty());
    }
}
