//! PD025: a deployment field that the target release cannot express.

use super::pd024_invalid_argument::{argparse_text, is_verbatim, problems};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::plan::Origin;
use crate::release::Release;
use crate::spec::ArgProblemKind;

/// The renderer picks, per field, the first spelling the target release accepts and drops the
/// field when there is none, so a setting can vanish from the commands without a trace. A value
/// outside the release's choices is rendered and then rejected by argparse at startup.
pub static RULE: Rule = Rule {
    code: "PD025",
    name: "field-not-in-release",
    severity: Severity::Error,
    summary: "a deployment field is set that the target SGLang release cannot express",
    explanation: "Flags come and go between SGLang releases (`--kv-canary`, `--dcp-size`, the DSA backends, the \
        per-phase CUDA-graph flags...). pdlaunch renders each field with the spelling the target `sglang_version` \
        accepts; when the release has none, the field is left out and the servers run with SGLang's default \
        instead of what the deployment says, with nothing in the commands to show it. When the release knows the \
        flag but not the value (e.g. `--kv-cache-dtype mxfp8` before 0.5.19), argparse rejects the command line \
        and the server exits at startup.",
    sglang_errors: &[
        "{prog}: error: argument {argument}: invalid choice: {value} (choose from {choices})",
        "{prog}: error: argument {argument}: invalid {type} value: {value}",
    ],
    fix: "Target a release that has the flag or value (`sglang_version`), or remove the field.",
    check: Check::Deployment(check),
};

/// The fields the renderer left out (it records them as it renders, so no field can be
/// forgotten here).
fn dropped_fields(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in &ctx.dropped {
        let role = Role::BOTH.into_iter().find(|r| f.path.starts_with(&format!("{r}.")));
        let names: Vec<&str> = f.flags.iter().map(|flag| flag.name).collect();
        let releases: Vec<Release> =
            Release::ALL.into_iter().filter(|r| f.flags.iter().any(|flag| flag.in_release(*r))).collect();
        let spelled = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ");
        let have: Vec<&str> = releases.iter().map(|r| r.as_str()).collect();
        let release = ctx.release.as_str();
        let (message, fix) = if releases.contains(&ctx.release) {
            // The flag exists; the renderer leaves the field out in this combination.
            let why = f.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
            (
                format!("`{}: {}` is not rendered for SGLang {release}{why}", f.path, f.value),
                format!("remove `{}`, or target 0.5.23 (`sglang_version`)", f.path),
            )
        } else if have.is_empty() {
            (
                format!("`{}: {}` is not rendered: no known SGLang release has {spelled}", f.path, f.value),
                format!("remove `{}`", f.path),
            )
        } else {
            (
                format!(
                    "`{}: {}` is not rendered: SGLang {release} has no {spelled} (it exists in {}), so the servers \
                     silently run without it",
                    f.path,
                    f.value,
                    have.join(", ")
                ),
                format!("set `sglang_version` to one of {}, or remove `{}`", have.join(", "), f.path),
            )
        };
        let process = role.map_or_else(|| "prefill, decode".to_owned(), |r| r.as_str().to_owned());
        let mut finding = Finding::new(&RULE, message, fix).at_origin(
            process,
            names.first().copied(),
            Origin::Field { path: f.path.clone() },
        );
        finding.sglang_error = None;
        out.push(finding);
    }
    out
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = dropped_fields(ctx);
    // Values the release's argparse rejects, on tokens rendered from deployment fields.
    for (origin, p, program, labels) in problems(ctx, |o| !is_verbatim(o)) {
        let name = program.name();
        let t = &p.token;
        let (message, fix) = match &p.kind {
            ArgProblemKind::BadChoice { value, choices } => {
                let elsewhere = program.releases_accepting(t, value);
                let mut m = format!(
                    "`{origin}: {value}` renders `{t} {value}`, which {name} rejects (choices: {})",
                    choices.join(", ")
                );
                if !elsewhere.is_empty() {
                    m.push_str(&format!("; `{value}` is accepted by {}", elsewhere.join(", ")));
                }
                let target = if elsewhere.is_empty() {
                    String::new()
                } else {
                    format!(", or target {} (`sglang_version`)", elsewhere.join(", "))
                };
                (m, format!("set `{origin}` to one of {}{target}", choices.join(", ")))
            }
            ArgProblemKind::BadType { value, ty } => (
                format!("`{origin}: {value}` renders `{t} {value}`, which {name} rejects: not a valid {ty}"),
                format!("give `{origin}` a value of type {ty}"),
            ),
            _ => (
                format!("`{origin}` renders `{t}`, which {name} rejects: {p}"),
                format!("change `{origin}` or target a release that accepts it"),
            ),
        };
        let mut f = Finding::new(&RULE, format!("{} ({})", message, labels.join(", ")), fix);
        f.sglang_error = Some(argparse_text(&p.kind));
        out.push(labels.iter().fold(f, |f, l| f.at_origin(l.clone(), Some(t), origin.clone())));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::choices::{KvCacheDtype, KvCanary};
    use crate::release::Release;
    use crate::rules::testing::*;

    #[test]
    fn examples_render_every_field_in_every_release() {
        for ex in crate::examples::EXAMPLES {
            for release in Release::ALL {
                let mut d = crate::examples::example(ex.name).unwrap();
                d.sglang_version = release;
                assert!(!codes(&d).contains(&"PD025"), "{} {release}: {:?}", ex.name, findings(&d, "PD025"));
            }
        }
    }

    #[test]
    fn every_optional_field_renders_on_the_latest_release() {
        use crate::choices::*;
        use crate::deployment::{HiCache, Speculative};
        let mut d = deepseek();
        d.model.tokenizer = Some("tok".into());
        d.model.tokenizer_mode = Some(TokenizerMode::Slow);
        d.model.revision = Some("main".into());
        d.model.dtype = Some(ModelDtype::Bfloat16);
        d.model.quantization = Some(Quantization::Fp8);
        d.model.context_length = Some(32768);
        d.model.served_name = Some("ds".into());
        d.model.chat_template = Some("t.jinja".into());
        d.shared.attention_backend = Some(AttentionBackend::Flashinfer);
        d.shared.prefill_attention_backend = Some(AttentionBackend::Flashinfer);
        d.shared.decode_attention_backend = Some(AttentionBackend::Flashinfer);
        d.shared.dsa_prefill_backend = Some(DsaBackend::FlashmlaSparse);
        d.shared.dsa_decode_backend = Some(DsaBackend::FlashmlaKv);
        d.shared.kv_canary = Some(KvCanary::Log);
        d.shared.kv_canary_real_data = Some(KvCanaryRealData::Partial);
        d.shared.enable_unified_memory = true;
        d.shared.enable_page_major_kv_layout = true;
        d.shared.speculative = Some(Speculative {
            algorithm: "EAGLE".into(),
            decode_only: false,
            draft_model_path: Some("draft".into()),
            num_steps: Some(3),
            eagle_topk: Some(1),
            num_draft_tokens: Some(4),
            draft_kv_cache_dtype: Some(KvCacheDtype::Auto),
            draft_attention_backend: Some(AttentionBackend::Flashinfer),
        });
        for side in [&mut d.prefill, &mut d.decode] {
            side.dp = 2;
            side.pp = 2;
            side.ep = Some(16);
            side.dcp = 2;
            side.moe_dense_tp = Some(1);
            side.enable_dp_lm_head = true;
            side.max_running_requests = Some(8);
            side.max_prefill_tokens = Some(8192);
            side.cuda_graph_max_bs = Some(8);
            side.disable_cuda_graph = true;
            side.load_balance_method = Some(LoadBalanceMethod::RoundRobin);
            side.hicache = Some(HiCache {
                ratio: Some(2.0),
                size: Some(10),
                storage_backend: Some(HicacheStorageBackend::File),
                write_policy: Some(HicacheWritePolicy::WriteThrough),
            });
            side.enable_metrics = true;
        }
        d.prefill.attn_cp = 2;
        d.prefill.enable_prefill_cp = true;
        d.prefill.optimistic_prefill_attempts = Some(2);
        d.decode.decode_radix_cache = true;
        d.decode.decode_offload_kvcache = true;
        d.decode.decode_retraction_backup = Some(RetractionBackup::CpuTensor);
        d.decode.num_reserved_decode_tokens = Some(256);
        d.decode.decode_extra_slots = Some(4);
        assert!(findings(&d, "PD025").is_empty(), "{:?}", findings(&d, "PD025"));
    }

    #[test]
    fn kv_canary_on_0_4_10_is_dropped() {
        let mut d = llama();
        d.sglang_version = Release::V0_4_10;
        d.shared.kv_canary = Some(KvCanary::Log);
        let f = findings(&d, "PD025");
        let hit = f.iter().find(|f| f.message.contains("shared.kv_canary")).expect("reported");
        assert!(hit.message.contains("0.4.10.post2") && hit.message.contains("0.5.19, 0.5.23"), "{}", hit.message);
        assert!(hit.fix.contains("sglang_version"), "{}", hit.fix);
    }

    #[test]
    fn prefill_cuda_graph_max_bs_before_0_5_19() {
        let mut d = llama();
        d.sglang_version = Release::V0_5_10;
        d.prefill.cuda_graph_max_bs = Some(8);
        d.decode.cuda_graph_max_bs = Some(64);
        let f = findings(&d, "PD025");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("prefill.cuda_graph_max_bs") && f[0].message.contains("--cuda-graph-max-bs-prefill")
        );
    }

    #[test]
    fn replica_dp_with_dp_attention_before_0_5_23() {
        let mut d = deepseek();
        d.sglang_version = Release::V0_5_19;
        d.decode.dp = 2;
        let f = findings(&d, "PD025");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`decode.dp: 2` is not rendered for SGLang 0.5.19"), "{}", f[0].message);
        assert!(f[0].message.contains("`decode.attn_dp`"), "{}", f[0].message);
    }

    #[test]
    fn mxfp8_on_0_5_3_is_rejected() {
        let mut d = llama();
        d.sglang_version = Release::V0_5_3;
        d.shared.kv_cache_dtype = KvCacheDtype::Mxfp8;
        let f = findings(&d, "PD025");
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(m.contains("`shared.kv_cache_dtype: mxfp8`") && m.contains("SGLang 0.5.3.post3 rejects"), "{m}");
        assert!(m.contains("accepted by 0.5.19, 0.5.23") && m.contains("prefill[0], decode[0]"), "{m}");
        assert!(f[0].sglang_error.unwrap().contains("invalid choice"));
        // Rendered tokens are PD025's, not PD024's.
        assert!(!codes(&d).contains(&"PD024"));
    }
}
