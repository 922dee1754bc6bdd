//! PD080: a server with `--enable-unified-memory` uses something its unified pool, or the
//! whole-envelope PD transfer, cannot carry.

use super::pd033_env_contract_mismatch::{env_on, env_origin};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{AttentionKind, Role};
use crate::effective::ServerView;

/// SGLang's `handle_unified_memory_pool` (`srt/arg_groups/kv_cache_hook.py`) refuses these at
/// startup. On a PD server the pool is shipped as whole page envelopes, which only Mooncake
/// sends, with no per-layer entries (so no PP), and not yet with speculative decoding.
pub static RULE: Rule = Rule {
    code: "PD080",
    name: "unified-memory-unsupported",
    severity: Severity::Error,
    summary: "`--enable-unified-memory` with a transfer backend, parallelism or feature its pool refuses",
    explanation: "With `--enable-unified-memory` SGLang keeps every layer's KV (and a hybrid model's state) in one \
        page-granular pool with virtual page ids, and a PD server transfers each page as one whole envelope. \
        SGLang refuses at startup what that layout cannot serve: on a PD server a transfer backend other than \
        Mooncake, pipeline parallelism (the envelope has no per-layer entries to subset), speculative decoding over \
        Mooncake, HiSparse, decode context parallelism, a disabled lazy compaction, decode KV offload to storage \
        other than `file` or for MLA, hybrid-Mamba or hybrid-SWA models, host-pool retraction for hybrid-Mamba \
        models; on any server an FP4 KV cache, two-batch overlap, LMCache and the unified-cache external linker.",
    sglang_errors: &[
        "--enable-unified-memory with PD disaggregation supports only these transfer backends: {', '.join(sorted(supported_backends))}; got {cfg.disaggregation_transfer_backend!r}.",
        "--enable-unified-memory with PD disaggregation does not support pipeline parallelism (whole-envelope transfer has no per-layer entries to subset).",
        "--enable-unified-memory with PD disaggregation does not support speculative decoding with the Mooncake transfer backend.",
        "--enable-unified-memory with PD disaggregation requires lazy compaction; unset SGLANG_DISABLE_LAZY_COMPACTION.",
        "--enable-unified-memory with PD disaggregation is not compatible with --enable-hisparse: the decode-side HiSparse prealloc path ships host/C4 rows straight from the allocator, bypassing the virtual->physical translation the unified pool needs.",
        "--enable-unified-memory with decode KV offload currently supports --hicache-storage-backend=file only.",
        "--enable-unified-memory decode KV offload does not support MLA models yet.",
        "--enable-unified-memory decode KV offload does not support hybrid-Mamba models.",
        "--enable-unified-memory decode KV offload does not support hybrid-SWA H2D/D2H transfers yet.",
        "--enable-unified-memory host-pool decode retraction does not support hybrid-Mamba models.",
        "--enable-unified-memory + EAGLE/EAGLE3 does not support --disaggregation-decode-retraction-backup=host_pool: the backup builds the draft's host pool off the draft's own device pool, which a fused EAGLE draft does not have.",
        "--enable-unified-memory with decode context parallelism (--dcp-size > 1) does not support PD disaggregation: the transfer ships whole page envelopes, which under DCP hold only this rank's shard of each widened page. Rejected here rather than at the first KV transfer, where translate_kv_indices_for_transfer would abort a server that had already booted.",
        "--enable-unified-memory with decode context parallelism (--dcp-size > 1) supports MLA models only (e.g. kimi-linear): the MHA unified pool has no DCP-aware masked write path (UnifiedMHATokenToKVPool.set_kv_buffer asserts dcp_kv_mask is None).",
        "--enable-unified-memory with decode context parallelism (--dcp-size > 1) does not support hybrid sliding-window models: UnifiedSWATokenToKVPoolAllocator does not widen its virtual id space, and the full->swa mapping is not DCP-sharded.",
        "FP4 KV cache does not yet support --enable-unified-memory: the unified MHA pool does not allocate FP4 block scales or the prefill dequant workspace.",
        "--enable-unified-memory does not support --enable-two-batch-overlap: the iteration's read tables are indexed by the whole batch's rows, and a TBO child's readers do not offset into them.",
        "--enable-unified-memory is not yet compatible with --enable-lmcache: the LMCache offload path indexes the device buffers with the ids it is handed, and under the unified pool those are VIRTUAL.",
        "--enable-unified-memory does not support --enable-unified-cache-external-linker: direct L3 transfers do not preserve unified page-envelope indices and compaction lifetimes. Use --enable-hierarchical-cache for supported L2/L3 transfers.",
    ],
    fix: "On a PD server with `--enable-unified-memory`, use the mooncake transfer backend with PP 1, no speculative \
        decoding, no HiSparse and no DCP; or drop `--enable-unified-memory` on both sides.",
    check: Check::Deployment(check),
};

/// The decode host-receive threshold, when it reads as a number.
pub(crate) fn host_receive_threshold(s: &ServerView) -> Option<f64> {
    s.value("disaggregation_decode_host_receive_threshold").and_then(|v| crate::float::parse(v.trim()))
}

/// The decode retraction backup SGLang resolves: `host_pool` when the host-receive threshold is
/// below 1 (on any server: the decode alone accepts it), else the flag.
pub(crate) fn retraction_backup(s: &ServerView) -> Option<String> {
    if host_receive_threshold(s).is_some_and(|t| (0.0..1.0).contains(&t)) {
        return Some("host_pool".into());
    }
    s.value("disaggregation_decode_retraction_backup")
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.switch("enable_unified_memory")) {
        for (which, dest, why) in violations(ctx, s) {
            let message = format!("{} has --enable-unified-memory and {why}", s.label);
            let fix = format!(
                "{}, or drop `--enable-unified-memory` ({}){}",
                fix_for(which),
                s.origin("enable_unified_memory").map_or_else(|| "its flag".to_owned(), ToString::to_string),
                if s.role.is_some() { " on both sides" } else { "" }
            );
            let mut f = Finding::new(&RULE, message, fix).at(s, "enable_unified_memory");
            f.sglang_error = RULE.sglang_errors.get(which).copied();
            f = match dest {
                Some(d) if d.starts_with("SGLANG_") => f.at_origin(s.label.clone(), None, env_origin(ctx, s, d)),
                Some(d) => f.at(s, d),
                None => f,
            };
            out.push(f);
        }
    }
    out
}

/// The fix of the violation quoted by `sglang_errors[which]`.
fn fix_for(which: usize) -> &'static str {
    match which {
        0 => "use `--disaggregation-transfer-backend mooncake` (or `mooncake_tcp`)",
        1 => "set `--pp-size 1`",
        2 | 10 => "remove the speculative decoding flags",
        3 => "unset SGLANG_DISABLE_LAZY_COMPACTION",
        4 => "remove `--enable-hisparse`",
        5 => "use `--hicache-storage-backend file` for the decode KV offload",
        6..=8 => "remove `--disaggregation-decode-enable-offload-kvcache` (this model's offload is not supported)",
        9 => "use `--disaggregation-decode-retraction-backup cpu_tensor` (and a host-receive threshold of 1)",
        11..=13 => "set `--dcp-size 1`",
        14 => "use a non-FP4 `--kv-cache-dtype` (auto, bf16 or fp8_e4m3)",
        15 => "remove `--enable-two-batch-overlap`",
        16 => "remove `--enable-lmcache`",
        _ => "remove `--enable-unified-cache-external-linker` (use `--enable-hierarchical-cache`)",
    }
}

/// What SGLang refuses on `s`: the index of its text in `sglang_errors`, the flag (or variable)
/// concerned, and what the server has.
fn violations(ctx: &Context, s: &ServerView) -> Vec<(usize, Option<&'static str>, String)> {
    let mut v = Vec::new();
    let pd = s.role.is_some();
    let backend = s.transfer_backend();
    let spec = s.value("speculative_algorithm");
    let mla = ctx.model.attention() == Some(AttentionKind::Mla);
    let mamba = ctx.model.is_mamba_hybrid();
    let swa = ctx.model.is_swa_hybrid() == Some(true);
    if pd {
        if backend != "mooncake" {
            v.push((
                0,
                Some("disaggregation_transfer_backend"),
                format!("transfer backend `{backend}`; the whole-envelope PD transfer is only sent by mooncake"),
            ));
        }
        let pp = s.size("pp_size");
        if pp > 1 {
            v.push((1, Some("pp_size"), format!("pp_size={pp}; the whole-envelope transfer cannot be split by layer")));
        }
        if let Some(alg) = spec.as_deref().filter(|_| backend == "mooncake") {
            let which = if matches!(alg, "EAGLE" | "EAGLE3")
                && s.role == Some(Role::Decode)
                && retraction_backup(s).as_deref() == Some("host_pool")
            {
                10
            } else {
                2
            };
            v.push((
                which,
                Some("speculative_algorithm"),
                format!("--speculative-algorithm {alg} over mooncake, which unified memory's PD transfer refuses"),
            ));
        }
        if env_on(s, "SGLANG_DISABLE_LAZY_COMPACTION") {
            v.push((
                3,
                Some("SGLANG_DISABLE_LAZY_COMPACTION"),
                "SGLANG_DISABLE_LAZY_COMPACTION set; unified memory's PD transfer needs lazy compaction".into(),
            ));
        }
        if s.switch("enable_hisparse") {
            let why = "--enable-hisparse, which bypasses the unified pool's translation";
            v.push((4, Some("enable_hisparse"), why.into()));
        }
        if s.switch("disaggregation_decode_enable_offload_kvcache") {
            let storage = s.value("hicache_storage_backend");
            if storage.as_deref().is_some_and(|b| b != "file") {
                v.push((
                    5,
                    Some("hicache_storage_backend"),
                    format!(
                        "decode KV offload to `{}`; only the `file` storage backend is supported",
                        storage.unwrap_or_default()
                    ),
                ));
            }
            let model = ctx.model.architecture().unwrap_or("this model");
            let kind = if mla {
                Some((6, "MLA"))
            } else if mamba {
                Some((7, "hybrid-Mamba"))
            } else if swa {
                Some((8, "hybrid sliding-window"))
            } else {
                None
            };
            if let Some((which, kind)) = kind {
                let why = format!("decode KV offload for the {kind} model {model}");
                v.push((which, Some("disaggregation_decode_enable_offload_kvcache"), why));
            }
        }
        if mamba && retraction_backup(s).as_deref() == Some("host_pool") {
            v.push((
                9,
                Some("disaggregation_decode_retraction_backup"),
                format!(
                    "host-pool retraction for the hybrid-Mamba model {}",
                    ctx.model.architecture().unwrap_or_default()
                ),
            ));
        }
    }
    let dcp = s.size("dcp_size");
    if dcp > 1 {
        // SGLang's order: the model kind first, then the PD refusal.
        let which = match ctx.model.attention() {
            Some(k) if k != AttentionKind::Mla => 12,
            _ if swa => 13,
            _ if pd => 11,
            _ => usize::MAX,
        };
        if which != usize::MAX {
            v.push((which, Some("dcp_size"), format!("dcp_size={dcp}, which the unified pool cannot shard here")));
        }
    }
    let dtype = s.value("kv_cache_dtype").unwrap_or_default();
    if matches!(dtype.as_str(), "nvfp4" | "fp4_mx_block16") && !s.gpu.is_some_and(crate::deployment::Gpu::is_hip) {
        v.push((14, Some("kv_cache_dtype"), format!("--kv-cache-dtype {dtype}, which the unified pool cannot hold")));
    }
    for (which, dest, flag) in [
        (15, "enable_two_batch_overlap", "--enable-two-batch-overlap"),
        (16, "enable_lmcache", "--enable-lmcache"),
        (17, "enable_unified_cache_external_linker", "--enable-unified-cache-external-linker"),
    ] {
        if s.switch(dest) {
            v.push((which, Some(dest), format!("{flag}, which the unified pool does not support")));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn messages(p: &str, d: &str, preset: Option<&str>) -> Vec<String> {
        lint_findings(p, d, preset).into_iter().filter(|f| f.code == "PD080").map(|f| f.message).collect()
    }

    #[test]
    fn unified_memory_over_mooncake_passes() {
        assert!(messages(" --enable-unified-memory", " --enable-unified-memory", None).is_empty());
        // mooncake_tcp is mooncake over TCP.
        let tcp = " --enable-unified-memory --disaggregation-transfer-backend mooncake_tcp";
        assert!(messages(tcp, tcp, None).is_empty());
        // Without unified memory, the same flags are someone else's business.
        assert!(messages(" --disaggregation-transfer-backend nixl --pp-size 2", "", None).is_empty());
    }

    #[test]
    fn what_the_envelope_transfer_cannot_carry_is_caught() {
        let m = messages(" --enable-unified-memory --disaggregation-transfer-backend nixl", "", None);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("transfer backend `nixl`"), "{}", m[0]);
        let m = messages("", " --enable-unified-memory --pp-size 2 --speculative-algorithm EAGLE", None);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m.iter().any(|m| m.contains("pp_size=2")), "{m:?}");
        assert!(m.iter().any(|m| m.contains("--speculative-algorithm EAGLE over mooncake")), "{m:?}");
        let m = messages("", " --enable-unified-memory --enable-hisparse", None);
        assert_eq!(m.len(), 1, "{m:?}");
    }

    #[test]
    fn decode_offload_is_checked_against_storage_and_model() {
        let offload = " --enable-unified-memory --disaggregation-decode-enable-offload-kvcache --hicache-storage-backend";
        assert!(messages("", &format!("{offload} file"), None).is_empty());
        let m = messages("", &format!("{offload} mooncake"), None);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("only the `file` storage backend"), "{}", m[0]);
        let m = messages("", &format!("{offload} file"), Some("deepseek-v3"));
        assert!(m.iter().any(|m| m.contains("decode KV offload for the MLA model DeepseekV3ForCausalLM")), "{m:?}");
        let m = messages("", &format!("{offload} file"), Some("gpt-oss-20b"));
        assert!(m.iter().any(|m| m.contains("hybrid sliding-window model GptOssForCausalLM")), "{m:?}");
    }

    #[test]
    fn dcp_fp4_and_the_other_pool_refusals_are_caught() {
        let m = messages("", " --enable-unified-memory --dcp-size 2", Some("deepseek-v3"));
        assert!(m.iter().any(|m| m.contains("dcp_size=2")), "{m:?}");
        let m = messages(" --enable-unified-memory --kv-cache-dtype nvfp4 --enable-lmcache", "", None);
        assert_eq!(m.len(), 2, "{m:?}");
    }

    #[test]
    fn the_environment_and_a_deployment_are_read() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--enable-unified-memory".into()];
        d.decode.extra_args = vec!["--enable-unified-memory".into()];
        assert!(findings(&d, "PD080").is_empty());
        d.shared.env.insert("SGLANG_DISABLE_LAZY_COMPACTION".into(), "1".into());
        let f = findings(&d, "PD080");
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].message.contains("SGLANG_DISABLE_LAZY_COMPACTION set"), "{}", f[0].message);
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "shared.env.SGLANG_DISABLE_LAZY_COMPACTION"));
    }
}
