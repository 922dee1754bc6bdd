//! PD083: an option SGLang refuses on a PD prefill or decode server.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{Gpu, Role};
use crate::effective::ServerView;

/// One refusal: the roles it concerns, the flag it is about, the condition on a server of those
/// roles, SGLang's text and what to do.
struct Refusal {
    roles: &'static [Role],
    dest: &'static str,
    refused: fn(&ServerView) -> Option<String>,
    error: &'static str,
    fix: &'static str,
}

const PD: &[Role] = &[Role::Prefill, Role::Decode];
const PREFILL: &[Role] = &[Role::Prefill];
const DECODE: &[Role] = &[Role::Decode];

/// A switch that is on, as its flag.
fn on(s: &ServerView, dest: &str, flag: &str) -> Option<String> {
    s.switch(dest).then(|| flag.to_owned())
}

/// SGLang's own checks of these options against `--disaggregation-mode` (`srt/arg_groups/`:
/// `validation_hook.py`, `pd_disaggregation_hook.py`, `kv_cache_hook.py`, `hicache_hook.py`,
/// `parallel_hook.py`, `attention_hook.py`, `speculative_hook.py`, `serving_hook.py`), in the
/// order of [`RULE`]'s `sglang_errors`.
static REFUSALS: &[Refusal] = &[
    Refusal {
        roles: PD,
        dest: "enable_watermark",
        refused: |s| on(s, "enable_watermark", "--enable-watermark"),
        error: "--enable-watermark is not supported with PD disaggregation",
        fix: "remove `--enable-watermark` (watermarking needs an aggregated server)",
    },
    Refusal {
        roles: PD,
        dest: "enable_response_store",
        refused: |s| on(s, "enable_response_store", "--enable-response-store"),
        error: "--enable-response-store is not supported with --disaggregation-mode=prefill or decode; response storage must remain disabled in PD mode.",
        fix: "remove `--enable-response-store`",
    },
    Refusal {
        roles: PD,
        dest: "enable_pdmux",
        refused: |s| on(s, "enable_pdmux", "--enable-pdmux"),
        error: "PD-Multiplexing is not compatible with disaggregation mode.",
        fix: "remove `--enable-pdmux`: PD multiplexing is the in-process alternative to disaggregation",
    },
    Refusal {
        roles: PD,
        dest: "encoder_only",
        refused: |s| on(s, "encoder_only", "--encoder-only"),
        error: "Cannot set --encoder-only and --disaggregation-mode prefill/decode together",
        fix: "run the encoder as its own server without `--disaggregation-mode`, or remove `--encoder-only`",
    },
    Refusal {
        roles: PD,
        dest: "enable_lmcache",
        refused: |s| on(s, "enable_lmcache", "--enable-lmcache"),
        error: "LMCacheUnifiedRadixCache currently supports colocated prefill/decode scheduling only",
        fix: "remove `--enable-lmcache` (use `--enable-hierarchical-cache` with a storage backend on a PD server)",
    },
    Refusal {
        roles: PD,
        dest: "enable_linear_replayssm",
        refused: |s| on(s, "enable_linear_replayssm", "--enable-linear-replayssm"),
        error: "--enable-linear-replayssm is not supported under PD disaggregation yet (follow-up). Got --disaggregation-mode={cfg.disaggregation_mode!r}.",
        fix: "remove `--enable-linear-replayssm`",
    },
    Refusal {
        roles: PREFILL,
        dest: "enable_linear_replayssm_spec",
        refused: |s| on(s, "enable_linear_replayssm_spec", "--enable-linear-replayssm-spec"),
        error: "--enable-linear-replayssm-spec is not supported on a PD prefill server: the ring is spec-verify-only scratch and the prefill server never runs spec verify.",
        fix: "remove `--enable-linear-replayssm-spec` from the prefill (keep it on the decode, which verifies)",
    },
    Refusal {
        roles: DECODE,
        dest: "dwdp_size",
        refused: |s| {
            let n = s.size("dwdp_size");
            (n > 1).then(|| format!("--dwdp-size {n}"))
        },
        error: "DWDP requires --disaggregation-mode null or prefill",
        fix: "remove `--dwdp-size` from the decode",
    },
    Refusal {
        roles: DECODE,
        dest: "hicache_host_memory_mode",
        // SGLang validates the host memory mode of every decode whose host pool may exist: with
        // HiCache, decode offload, or the default or host-pool retraction backup.
        refused: |s| {
            let backup = s.value("disaggregation_decode_retraction_backup");
            let pool = s.switch("enable_hierarchical_cache")
                || s.switch("disaggregation_decode_enable_offload_kvcache")
                || matches!(backup.as_deref(), None | Some("host_pool"));
            (pool && s.value("hicache_host_memory_mode").as_deref() == Some("buffer_only"))
                .then(|| "--hicache-host-memory-mode buffer_only".to_owned())
        },
        error: "--hicache-host-memory-mode buffer_only is not supported on decode instances: the decode-side prefetch and offload paths bypass the buffer-mode pipeline, fetching without its prefix context and never consuming its staged holds. Prefill instances share the standard scheduler path and are supported.",
        fix: "use `--hicache-host-memory-mode cache` on the decode (buffer_only is for prefills)",
    },
    Refusal {
        roles: DECODE,
        dest: "enable_hisparse",
        refused: |s| {
            (s.switch("disaggregation_decode_enable_radix_cache") && s.switch("enable_hisparse"))
                .then(|| "--disaggregation-decode-enable-radix-cache with --enable-hisparse".to_owned())
        },
        error: "--disaggregation-decode-enable-radix-cache is incompatible with --enable-hisparse",
        fix: "remove `--disaggregation-decode-enable-radix-cache` or `--enable-hisparse` from the decode",
    },
    Refusal {
        roles: DECODE,
        dest: "disaggregation_decode_enable_radix_cache",
        refused: |s| {
            (s.switch("disaggregation_decode_enable_radix_cache")
                && s.value("disaggregation_transfer_backend").as_deref() == Some("fake"))
            .then(|| "--disaggregation-decode-enable-radix-cache with the fake transfer backend".to_owned())
        },
        error: "--disaggregation-decode-enable-radix-cache is incompatible with --disaggregation-transfer-backend fake",
        fix: "remove `--disaggregation-decode-enable-radix-cache` for a synthetic (fake) benchmark",
    },
    Refusal {
        roles: DECODE,
        dest: "speculative_algorithm",
        refused: |s| {
            let alg = s.value("speculative_algorithm")?;
            // NEXTN is EAGLE under another name.
            let kept = ["DSPARK", "EAGLE", "EAGLE3", "NEXTN"].contains(&alg.to_ascii_uppercase().as_str());
            (s.switch("disaggregation_decode_enable_radix_cache") && !kept)
                .then(|| format!("--disaggregation-decode-enable-radix-cache with --speculative-algorithm {alg}"))
        },
        error: "--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm {cfg.speculative_algorithm})",
        fix: "use EAGLE, EAGLE3 or DSPARK with the decode radix cache, or remove `--disaggregation-decode-enable-radix-cache`",
    },
    Refusal {
        roles: PD,
        dest: "kv_cache_dtype",
        refused: |s| {
            let sm100 = s.gpu.and_then(Gpu::sm).is_some_and(|sm| (100..110).contains(&sm));
            (sm100 && s.value("kv_cache_dtype").as_deref() == Some("nvfp4"))
                .then(|| format!("--kv-cache-dtype nvfp4 on {}", s.gpu.map(Gpu::as_str).unwrap_or_default()))
        },
        error: "SM100 native NVFP4 with trtllm_mha does not yet support PD disaggregation because its physical block-scale layout is not implemented by the KV transfer path.",
        fix: "use `--kv-cache-dtype fp8_e4m3` on a PD server",
    },
    Refusal {
        roles: PREFILL,
        dest: "optimistic_prefill_attempts",
        refused: |s| {
            let n = s.int("optimistic_prefill_attempts")?;
            let policy = s.value("disaggregation_decode_allocation_policy");
            (policy.as_deref() == Some("prefill_complete") && n < 0)
                .then(|| format!("the prefill_complete allocation policy with --optimistic-prefill-attempts {n}"))
        },
        error: "prefill_complete requires optimistic prefill, but the resolved model/cache configuration disabled it.",
        fix: "leave `--optimistic-prefill-attempts` unset (SGLang makes it 1) or set it to 1 or more",
    },
    Refusal {
        roles: DECODE,
        dest: "enable_hisparse",
        refused: |s| {
            (s.switch("enable_hisparse") && s.value("disaggregation_transfer_backend").as_deref() == Some("ascend"))
                .then(|| "--enable-hisparse over the ascend transfer backend".to_owned())
        },
        error: "Ascend PD transfer does not support HiSparse destination device KV indices",
        fix: "remove `--enable-hisparse` from the decode, or use another transfer backend",
    },
];

/// Every text of [`REFUSALS`], in order (`sglang_errors` must be a literal list: checked by a test).
pub static RULE: Rule = Rule {
    code: "PD083",
    name: "refused-on-pd-server",
    severity: Severity::Error,
    summary: "an option that SGLang refuses with `--disaggregation-mode prefill` or `decode`",
    explanation: "Some features keep state that a disaggregated server does not have, or run a scheduling path the \
        PD schedulers replace: SGLang checks them against `--disaggregation-mode` at startup and exits. On either \
        side: watermarking, the response store, PD multiplexing, `--encoder-only`, LMCache, linear ReplaySSM and, on \
        SM100, a native NVFP4 KV cache. On the prefill: ReplaySSM speculative verify rings, and the \
        `prefill_complete` allocation policy with optimistic prefill turned off. On the decode: DWDP, a buffer-only \
        HiCache host tier, and the decode radix cache with HiSparse, the fake transfer backend or a speculative \
        algorithm other than EAGLE, EAGLE3 or DSPARK, and HiSparse over the Ascend transfer backend (the prefill \
        cannot send to its device-only destinations).",
    sglang_errors: &[
        "--enable-watermark is not supported with PD disaggregation",
        "--enable-response-store is not supported with --disaggregation-mode=prefill or decode; response storage must remain disabled in PD mode.",
        "PD-Multiplexing is not compatible with disaggregation mode.",
        "Cannot set --encoder-only and --disaggregation-mode prefill/decode together",
        "LMCacheUnifiedRadixCache currently supports colocated prefill/decode scheduling only",
        "--enable-linear-replayssm is not supported under PD disaggregation yet (follow-up). Got --disaggregation-mode={cfg.disaggregation_mode!r}.",
        "--enable-linear-replayssm-spec is not supported on a PD prefill server: the ring is spec-verify-only scratch and the prefill server never runs spec verify.",
        "DWDP requires --disaggregation-mode null or prefill",
        "--hicache-host-memory-mode buffer_only is not supported on decode instances: the decode-side prefetch and offload paths bypass the buffer-mode pipeline, fetching without its prefix context and never consuming its staged holds. Prefill instances share the standard scheduler path and are supported.",
        "--disaggregation-decode-enable-radix-cache is incompatible with --enable-hisparse",
        "--disaggregation-decode-enable-radix-cache is incompatible with --disaggregation-transfer-backend fake",
        "--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm {cfg.speculative_algorithm})",
        "SM100 native NVFP4 with trtllm_mha does not yet support PD disaggregation because its physical block-scale layout is not implemented by the KV transfer path.",
        "prefill_complete requires optimistic prefill, but the resolved model/cache configuration disabled it.",
        "Ascend PD transfer does not support HiSparse destination device KV indices",
    ],
    fix: "Remove the option from the PD server it is refused on (the finding names it and the side).",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.node == 0) {
        let Some(role) = s.role else { continue };
        for r in REFUSALS.iter().filter(|r| r.roles.contains(&role)) {
            let Some(what) = (r.refused)(s) else { continue };
            let message = format!("{} is a PD {role} server with {what}, which SGLang refuses there", s.label);
            let at = s.origin(r.dest).map_or_else(String::new, |o| format!(" (`{o}`)"));
            let mut f = Finding::new(&RULE, message, format!("{}{at}", r.fix)).at(s, r.dest);
            f.sglang_error = Some(r.error);
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{REFUSALS, RULE};
    use crate::rules::testing::*;

    fn found(p: &str, d: &str) -> Vec<crate::rules::Finding> {
        lint_findings(p, d, None).into_iter().filter(|f| f.code == "PD083").collect()
    }

    #[test]
    fn the_table_is_the_rules_texts() {
        let texts: Vec<&str> = REFUSALS.iter().map(|r| r.error).collect();
        assert_eq!(texts, RULE.sglang_errors);
    }

    #[test]
    fn options_sglang_keeps_on_a_pd_server_pass() {
        assert!(found("", "").is_empty());
        // Allowed on the other side, or in the allowed combination.
        assert!(found("", " --enable-linear-replayssm-spec").is_empty());
        assert!(found(" --dwdp-size 2 --tp 2", "").is_empty());
        let radix = " --disaggregation-decode-enable-radix-cache --speculative-algorithm EAGLE";
        assert!(found("", radix).is_empty());
        assert!(found(" --enable-hierarchical-cache --hicache-host-memory-mode buffer_only --hicache-storage-backend file", "").is_empty());
        let cpu = " --hicache-host-memory-mode buffer_only --disaggregation-decode-retraction-backup cpu_tensor";
        assert!(found("", cpu).is_empty());
        assert!(found(" --disaggregation-decode-allocation-policy prefill_complete", "").is_empty());
    }

    #[test]
    fn each_refusal_is_caught_on_its_side() {
        for (p, d, want) in [
            (" --enable-watermark", "", "prefill[0] (pd.sh:1) is a PD prefill server with --enable-watermark"),
            ("", " --enable-response-store", "decode[0] (pd.sh:2) is a PD decode server with --enable-response-store"),
            (" --enable-pdmux", "", "--enable-pdmux"),
            ("", " --encoder-only", "--encoder-only"),
            (" --enable-lmcache", "", "--enable-lmcache"),
            ("", " --enable-linear-replayssm", "--enable-linear-replayssm"),
            (" --enable-linear-replayssm-spec", "", "--enable-linear-replayssm-spec"),
            ("", " --dwdp-size 2 --tp 2", "--dwdp-size 2"),
            ("", " --enable-hierarchical-cache --hicache-host-memory-mode buffer_only --disaggregation-decode-enable-radix-cache", "buffer_only"),
            ("", " --hicache-host-memory-mode buffer_only --hicache-storage-backend file", "buffer_only"),
            ("", " --disaggregation-decode-enable-radix-cache --enable-hisparse", "with --enable-hisparse"),
            ("", " --disaggregation-decode-enable-radix-cache --disaggregation-transfer-backend fake", "fake transfer backend"),
            ("", " --disaggregation-decode-enable-radix-cache --speculative-algorithm NGRAM", "--speculative-algorithm NGRAM"),
            (" --disaggregation-decode-allocation-policy prefill_complete --optimistic-prefill-attempts -1", "", "prefill_complete"),
            ("", " --disaggregation-transfer-backend ascend --enable-hisparse", "--enable-hisparse over the ascend"),
        ] {
            let f = found(p, d);
            assert!(f.iter().any(|f| f.message.contains(want)), "{p} | {d}: {want} not in {f:?}");
        }
    }

    #[test]
    fn native_nvfp4_is_refused_on_sm100_only() {
        let mut d = llama();
        d.prefill.extra_args = vec!["--kv-cache-dtype".into(), "nvfp4".into()];
        assert!(findings(&d, "PD083").is_empty(), "{:?}", findings(&d, "PD083"));
        d.prefill.gpu = Some(crate::deployment::Gpu::B200);
        let f = findings(&d, "PD083");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("--kv-cache-dtype nvfp4 on b200"), "{}", f[0].message);
    }
}
