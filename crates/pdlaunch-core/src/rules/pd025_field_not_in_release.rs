//! PD025: a deployment field that the target release cannot express.

use super::pd024_invalid_argument::{argparse_text, is_verbatim, problems};
use super::{Context, Finding, Rule, Severity};
use crate::deployment::{Deployment, Role, Side};
use crate::flags::{Relation, SERVER_FLAGS};
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
    check,
};

/// A set optional field: its schema key (as in `Flag::field`), its deployment path, the side it
/// renders on (`None`: both) and its value as written.
struct SetField {
    key: String,
    path: String,
    role: Option<Role>,
    value: String,
}

fn shared_fields(d: &Deployment) -> Vec<SetField> {
    let mut out = Vec::new();
    let mut add = |key: &str, path: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(SetField { key: key.into(), path: path.into(), role: None, value });
        }
    };
    let m = &d.model;
    add("Model.tokenizer", "model.tokenizer", m.tokenizer.clone());
    add("Model.tokenizer_mode", "model.tokenizer_mode", m.tokenizer_mode.map(|v| v.to_string()));
    add("Model.revision", "model.revision", m.revision.clone());
    add("Model.dtype", "model.dtype", m.dtype.map(|v| v.to_string()));
    add("Model.quantization", "model.quantization", m.quantization.map(|v| v.to_string()));
    add("Model.context_length", "model.context_length", m.context_length.map(|v| v.to_string()));
    add("Model.served_name", "model.served_name", m.served_name.clone());
    add("Model.chat_template", "model.chat_template", m.chat_template.clone());
    let sh = &d.shared;
    add("Shared.attention_backend", "shared.attention_backend", sh.attention_backend.map(|v| v.to_string()));
    add(
        "Shared.prefill_attention_backend",
        "shared.prefill_attention_backend",
        sh.prefill_attention_backend.map(|v| v.to_string()),
    );
    add(
        "Shared.decode_attention_backend",
        "shared.decode_attention_backend",
        sh.decode_attention_backend.map(|v| v.to_string()),
    );
    add("Shared.dsa_prefill_backend", "shared.dsa_prefill_backend", sh.dsa_prefill_backend.map(|v| v.to_string()));
    add("Shared.dsa_decode_backend", "shared.dsa_decode_backend", sh.dsa_decode_backend.map(|v| v.to_string()));
    add("Shared.kv_canary", "shared.kv_canary", sh.kv_canary.map(|v| v.to_string()));
    add("Shared.kv_canary_real_data", "shared.kv_canary_real_data", sh.kv_canary_real_data.map(|v| v.to_string()));
    add(
        "Shared.enable_unified_memory",
        "shared.enable_unified_memory",
        sh.enable_unified_memory.then(|| "true".into()),
    );
    add(
        "Shared.enable_page_major_kv_layout",
        "shared.enable_page_major_kv_layout",
        sh.enable_page_major_kv_layout.then(|| "true".into()),
    );
    if let Some(s) = &sh.speculative {
        add("Speculative.algorithm", "shared.speculative.algorithm", Some(s.algorithm.clone()));
        add("Speculative.draft_model_path", "shared.speculative.draft_model_path", s.draft_model_path.clone());
        add("Speculative.num_steps", "shared.speculative.num_steps", s.num_steps.map(|v| v.to_string()));
        add("Speculative.eagle_topk", "shared.speculative.eagle_topk", s.eagle_topk.map(|v| v.to_string()));
        add(
            "Speculative.num_draft_tokens",
            "shared.speculative.num_draft_tokens",
            s.num_draft_tokens.map(|v| v.to_string()),
        );
        add(
            "Speculative.draft_kv_cache_dtype",
            "shared.speculative.draft_kv_cache_dtype",
            s.draft_kv_cache_dtype.map(|v| v.to_string()),
        );
        add(
            "Speculative.draft_attention_backend",
            "shared.speculative.draft_attention_backend",
            s.draft_attention_backend.map(|v| v.to_string()),
        );
    }
    out
}

fn side_fields(role: Role, s: &Side) -> Vec<SetField> {
    let mut out = Vec::new();
    let mut add = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            let (def, prop) = key.split_once('.').unwrap_or(("Side", key));
            let path = if def == "HiCache" { format!("{role}.hicache.{prop}") } else { format!("{role}.{prop}") };
            out.push(SetField { key: key.into(), path, role: Some(role), value });
        }
    };
    let above_one = |v: u32| (v > 1).then(|| v.to_string());
    let on = |b: bool| b.then(|| "true".to_owned());
    add("Side.dp", above_one(s.dp));
    add("Side.attn_dp", above_one(s.attn_dp));
    add("Side.pp", above_one(s.pp));
    add("Side.ep", s.ep.map(|v| v.to_string()));
    add("Side.attn_cp", above_one(s.attn_cp));
    add("Side.enable_prefill_cp", on(s.enable_prefill_cp));
    add("Side.dcp", above_one(s.dcp));
    add("Side.moe_a2a_backend", s.moe_a2a_backend.map(|v| v.to_string()));
    add("Side.deepep_mode", s.deepep_mode.map(|v| v.to_string()));
    add("Side.moe_dense_tp", s.moe_dense_tp.map(|v| v.to_string()));
    add("Side.enable_dp_lm_head", on(s.enable_dp_lm_head));
    add("Side.mem_fraction_static", s.mem_fraction_static.map(|v| v.to_string()));
    add("Side.max_running_requests", s.max_running_requests.map(|v| v.to_string()));
    add("Side.chunked_prefill_size", s.chunked_prefill_size.map(|v| v.to_string()));
    add("Side.max_prefill_tokens", s.max_prefill_tokens.map(|v| v.to_string()));
    add("Side.cuda_graph_max_bs", s.cuda_graph_max_bs.map(|v| v.to_string()));
    add("Side.disable_cuda_graph", on(s.disable_cuda_graph));
    add("Side.load_balance_method", s.load_balance_method.map(|v| v.to_string()));
    if let Some(h) = &s.hicache {
        // On decode with offload, the hierarchical cache switch is left out by design.
        if !(role == Role::Decode && s.decode_offload_kvcache) {
            add("Side.hicache", Some("set".into()));
        }
        add("HiCache.ratio", h.ratio.map(|v| v.to_string()));
        add("HiCache.size", h.size.map(|v| v.to_string()));
        add("HiCache.storage_backend", h.storage_backend.map(|v| v.to_string()));
        add("HiCache.write_policy", h.write_policy.map(|v| v.to_string()));
    }
    add("Side.decode_radix_cache", on(s.decode_radix_cache));
    add("Side.decode_offload_kvcache", on(s.decode_offload_kvcache));
    add("Side.decode_retraction_backup", s.decode_retraction_backup.map(|v| v.to_string()));
    add("Side.num_reserved_decode_tokens", s.num_reserved_decode_tokens.map(|v| v.to_string()));
    add("Side.decode_extra_slots", s.decode_extra_slots.map(|v| v.to_string()));
    add("Side.optimistic_prefill_attempts", s.optimistic_prefill_attempts.map(|v| v.to_string()));
    add("Side.enable_metrics", on(s.enable_metrics));
    out
}

/// Releases (as text) in which any of the flags of a field exists, for one side.
fn releases_for(key: &str, role: Option<Role>) -> (Vec<&'static str>, Vec<Release>) {
    let all: Vec<_> = SERVER_FLAGS.iter().copied().filter(|f| f.field == key).collect();
    let fitting: Vec<_> = all
        .iter()
        .copied()
        .filter(|f| match role {
            Some(Role::Prefill) => f.relation != Relation::DecodeOnly,
            Some(Role::Decode) => f.relation != Relation::PrefillOnly,
            None => true,
        })
        .collect();
    let flags = if fitting.is_empty() { all } else { fitting };
    let releases = Release::ALL.into_iter().filter(|r| flags.iter().any(|f| f.in_release(*r))).collect();
    (flags.iter().map(|f| f.name).collect(), releases)
}

fn dropped_fields(ctx: &Context, d: &Deployment) -> Vec<Finding> {
    let mut fields = shared_fields(d);
    for role in Role::BOTH {
        fields.extend(side_fields(role, d.side(role)));
    }
    let mut out = Vec::new();
    for f in fields {
        let servers: Vec<_> =
            ctx.servers.iter().filter(|s| f.role.is_none_or(|r| s.label.starts_with(r.as_str()))).collect();
        let rendered =
            servers.iter().any(|s| s.origins.iter().any(|o| matches!(o, Origin::Field { path } if *path == f.path)));
        if servers.is_empty() || rendered {
            continue;
        }
        let (names, releases) = releases_for(&f.key, f.role);
        let spelled = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ");
        let have: Vec<&str> = releases.iter().map(|r| r.as_str()).collect();
        let release = ctx.release.as_str();
        let (message, fix) = if releases.contains(&ctx.release) {
            // The flag exists; the renderer leaves the field out in this combination.
            let why = if f.key == "Side.dp" {
                format!(
                    " (before 0.5.23 `--dp-size` carries the DP-attention width `{}.attn_dp`, so a separate replica \
                     count cannot be expressed)",
                    f.role.map_or("", Role::as_str)
                )
            } else {
                String::new()
            };
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
        let process = f.role.map_or_else(|| "prefill, decode".to_owned(), |r| r.as_str().to_owned());
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
    let mut out = match ctx.deployment {
        Some(d) => dropped_fields(ctx, d),
        None => Vec::new(),
    };
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
