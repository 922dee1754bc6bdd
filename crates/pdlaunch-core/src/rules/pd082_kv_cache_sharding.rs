//! PD082: `--enable-kv-cache-sharding` where SGLang refuses it, on the prefill or across the pair.

use super::pd033_env_contract_mismatch::{env_on, env_origin};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{AttentionKind, Gpu, Role};
use crate::effective::ServerView;

/// SGLang's `handle_kv_cache_sharding` (`srt/arg_groups/kv_shard_hook.py`) validates a sharded
/// prefill at startup, in this order; the decode checks the pair when it first meets the
/// prefill (`srt/disaggregation/common/conn.py`).
pub static RULE: Rule = Rule {
    code: "PD082",
    name: "kv-cache-sharding",
    severity: Severity::Error,
    summary: "`--enable-kv-cache-sharding` on a server, model or transfer setup SGLang refuses it with",
    explanation: "KV-cache sharding keeps on each rank of a prefill only its stripe of every cached page (across \
        attention-CP ranks for GQA models, attention-TP ranks for MLA models) and gathers the pages for the \
        transfer. SGLang accepts it only on a PD prefill, with the fa3 prefill attention backend (trtllm_mla for \
        plain-TP MLA; for DSA models the dsa backend with TRTLLM kernels, fp8_e4m3 KV, page size 64, interleave \
        prefill CP and Mooncake), the mooncake or nixl transfer backend, a real page size, chunked prefill, and \
        without diffusion models, DCP, unified memory, HiSparse, LMCache, storage-backed HiCache, two-batch \
        overlap or the staging buffer. A chunk size that is not a page multiple is rounded up, which needs memory \
        SGLang takes from `--mem-fraction-static` when that is unset. Across the pair, an MLA prefill sharded \
        over attention TP needs a decode with the same attention TP size, and a DCP decode refuses a sharded \
        prefill.",
    sglang_errors: &[
        "--enable-kv-cache-sharding is only supported on PD prefill workers: a rank's pool holds only its stripe of every cached page, which is incompatible with local decode.",
        "--enable-kv-cache-sharding does not support diffusion language models: DLLM admission bypasses the shard-scratch budget and resolves out of PD-prefill mode.",
        "--enable-kv-cache-sharding and decode context parallelism (--dcp-size) are mutually exclusive users of the widened allocator index space.",
        "--enable-kv-cache-sharding currently requires the fa3 prefill attention backend, or trtllm_mla for plain-TP MLA; got {prefill_backend!r}.",
        "DSA KV sharding requires CUDA interleave prefill CP > 1 and PP1.",
        "DSA KV sharding requires TRTLLM prefill/decode with fp8_e4m3 KV and page size 64.",
        "--enable-kv-cache-sharding currently only supports the mooncake and nixl transfer backends: both route sends through CommonKVSender._prepare_send_indices and pair destinations by fancy index. Got --disaggregation-transfer-backend {cfg.disaggregation_transfer_backend!r}.",
        "--enable-kv-cache-sharding is incompatible with SGLANG_DISAGG_STAGING_BUFFER (the staging path assumes contiguous send slices).",
        "--enable-kv-cache-sharding for MLA models without prefill CP shards across attention-TP and requires plain TP attention; set --attn-dp-size=1.",
        "--enable-kv-cache-sharding for MLA models without prefill CP shards across attention-TP ranks and needs tp_size > 1.",
        "--enable-kv-cache-sharding for GQA models shards across attention-CP ranks and requires --enable-prefill-cp with attn_cp_size > 1.",
        "--enable-kv-cache-sharding requires a real page size (--page-size 64 recommended): the physical page is the P/D transfer descriptor and gather-copy unit; page_size=1 degenerates both into per-token operations.",
        "--enable-kv-cache-sharding requires chunked prefill (--chunked-prefill-size > 0).",
        "Cannot safely auto-round --chunked-prefill-size for KV sharding without a known device-memory capacity; pass a multiple of page_size ({page_size}).",
        "Auto-rounding --chunked-prefill-size for KV sharding would consume all automatically reserved GPU memory; pass a smaller multiple of {page_size}.",
        "MLA KV cache sharding requires equal prefill/decode attn TP sizes, got prefill={info.attn_tp_size} decode={self.attn_tp_size}",
        "PD decode DCP does not support a prefill with --enable-kv-cache-sharding.",
        "--enable-kv-cache-sharding does not support --enable-unified-memory: the unified pool uses a different virtual-id allocator and layout.",
        "--enable-kv-cache-sharding does not support --enable-hisparse: HiSparse selects a non-sharded allocator and assumes each rank owns complete KV pages.",
        "--enable-kv-cache-sharding does not support --enable-lmcache.",
        "--enable-kv-cache-sharding supports HiCache host offload but not --hicache-storage-backend yet: the storage path reads and writes whole pages per rank, not each rank's own stripe.",
        "--enable-kv-cache-sharding does not support --enable-two-batch-overlap: the sharded pool's per-batch gather plan is a process-wide singleton, but TBO rebuilds attention metadata multiple times per extend forward and clobbers the plan.",
        "DSA KV sharding requires the dsa attention backend.",
        "KV sharding with trtllm_mla requires an MLA model.",
        "KV sharding with trtllm_mla only supports plain-TP MLA (attn_cp_size must be 1).",
        "KV sharding with trtllm_mla requires chunked prefix caching.",
        "--enable-kv-cache-sharding does not support encoder-decoder models: cross-attention uses a separate encoder page table that is not part of the sharded gather plan.",
    ],
    fix: "Shard the KV cache only on the prefill, with fa3 (or trtllm_mla for MLA), mooncake or nixl, \
        `--page-size 64`, a chunked-prefill size that is a multiple of it, and prefill CP > 1 for GQA models \
        (attention TP > 1 for MLA ones); or remove `--enable-kv-cache-sharding`.",
    check: Check::Deployment(check),
};

/// Architectures SGLang serves as encoder-decoder models (`is_encoder_decoder` in
/// `srt/configs/model_config.py`), whose cross-attention page table is not sharded.
const ENCODER_DECODER_ARCHS: &[&str] =
    &["WhisperForConditionalGeneration", "MllamaForConditionalGeneration", "MossVLForConditionalGeneration"];

/// One refusal: the index of its text in `sglang_errors`, the flag (or variable) concerned, what
/// the server has, and the fix.
type Violation = (usize, &'static str, String, String);

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let finding = |s: &ServerView, (which, dest, why, fix): Violation| {
        let message = format!("{} has --enable-kv-cache-sharding and {why}", s.label);
        let mut f = Finding::new(&RULE, message, fix).at(s, "enable_kv_cache_sharding");
        f = if dest.starts_with("SGLANG_") {
            f.at_origin(s.label.clone(), None, env_origin(ctx, s, dest))
        } else {
            f.at(s, dest)
        };
        // A text's index past 100 is a warning: SGLang may or may not raise it.
        let which = if which >= 100 {
            f = f.severity(Severity::Warning);
            which - 100
        } else {
            which
        };
        f.sglang_error = RULE.sglang_errors.get(which).copied();
        f
    };
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.switch("enable_kv_cache_sharding")) {
        out.extend(violations(ctx, s).into_iter().map(|v| finding(s, v)));
    }
    for (p, d) in ctx.pairs() {
        if !p.switch("enable_kv_cache_sharding") {
            continue;
        }
        let dcp = d.size("dcp_size");
        if dcp > 1 {
            let why = format!("{} has dcp_size={dcp}, and a DCP decode refuses a sharded prefill", d.label);
            let fix = "set the decode's `--dcp-size 1`, or stop sharding".to_owned();
            out.push(finding(p, (16, "dcp_size", why, fix)).at(d, "dcp_size"));
        }
        let (pt, dt) = (p.attn_tp(), d.attn_tp());
        if ctx.model.attention() == Some(AttentionKind::Mla) && p.size("attn_cp_size") == 1 && pt != dt {
            let why = format!(
                "attention TP {pt}, but {} has {dt}: an MLA prefill sharded over attention TP needs the same size on \
                 the decode",
                d.label
            );
            let fix = format!("give the decode attention TP {pt} (now {dt})");
            out.push(finding(p, (15, "tp_size", why, fix)).at(d, "tp_size"));
        }
    }
    out
}

fn violations(ctx: &Context, s: &ServerView) -> Vec<Violation> {
    let mut v: Vec<Violation> = Vec::new();
    let drop = "remove `--enable-kv-cache-sharding`";
    if s.role != Some(Role::Prefill) {
        let mode = s.value("disaggregation_mode").unwrap_or_else(|| "null".into());
        v.push((
            0,
            "disaggregation_mode",
            format!("--disaggregation-mode {mode}; only a PD prefill can shard its KV cache"),
            format!("{drop} from {}", s.label),
        ));
        return v;
    }
    if let Some(alg) = s.value("dllm_algorithm") {
        let fix = format!("{drop}, or serve an autoregressive model");
        v.push((1, "dllm_algorithm", format!("--dllm-algorithm {alg}"), fix));
    }
    for (which, dest, flag) in [
        (17, "enable_unified_memory", "--enable-unified-memory"),
        (18, "enable_hisparse", "--enable-hisparse"),
        (19, "enable_lmcache", "--enable-lmcache"),
        (21, "enable_two_batch_overlap", "--enable-two-batch-overlap"),
    ] {
        if s.switch(dest) {
            v.push((which, dest, format!("{flag}, which it does not support"), format!("remove `{flag}`, or {drop}")));
        }
    }
    let dcp = s.size("dcp_size");
    if dcp > 1 {
        v.push((2, "dcp_size", format!("dcp_size={dcp}"), format!("set `--dcp-size 1`, or {drop}")));
    }
    if s.switch("enable_hierarchical_cache") {
        if let Some(storage) = s.value("hicache_storage_backend") {
            v.push((
                20,
                "hicache_storage_backend",
                format!("--hicache-storage-backend {storage}; sharded pages are not stored per stripe"),
                format!("remove `--hicache-storage-backend` (host offload alone is supported), or {drop}"),
            ));
        }
    }
    if let Some(arch) = ctx.model.architecture().filter(|a| ENCODER_DECODER_ARCHS.contains(a)) {
        v.push((26, "model_path", format!("the encoder-decoder model {arch}"), drop.into()));
    }
    let mla = ctx.model.attention().map(|k| k == AttentionKind::Mla);
    let (attn, prefill, _) = s.attention_backends(&ctx.model);
    let explicit_prefill = s.explicit("prefill_attention_backend").or_else(|| s.explicit("attention_backend"));
    let sm = s.gpu.and_then(Gpu::sm);
    if ctx.model.is_dsa() {
        match explicit_prefill.as_deref() {
            None | Some("dsa") | Some("nsa") => v.extend(dsa_violations(ctx, s, sm)),
            Some(b) => v.push((
                22,
                "attention_backend",
                format!("prefill attention backend `{b}` for a DSA model"),
                "use the dsa attention backend (leave `--attention-backend` unset)".into(),
            )),
        }
    } else {
        match prefill.as_deref() {
            Some("fa3") | None => {}
            Some("trtllm_mla") => {
                if mla == Some(false) {
                    let why = "prefill attention backend trtllm_mla for a non-MLA model";
                    v.push((23, "attention_backend", why.into(), "use fa3".into()));
                }
                let cp = s.size("attn_cp_size");
                if cp > 1 {
                    let fix = "set `--attn-cp-size 1`, or use fa3";
                    v.push((24, "attn_cp_size", format!("trtllm_mla with attn_cp_size={cp}"), fix.into()));
                }
                if s.switch("disable_chunked_prefix_cache") {
                    v.push((
                        25,
                        "disable_chunked_prefix_cache",
                        "trtllm_mla with --disable-chunked-prefix-cache".into(),
                        "remove `--disable-chunked-prefix-cache`".into(),
                    ));
                }
            }
            Some(b) => {
                let how = if attn.why.is_empty() || s.explicit("prefill_attention_backend").is_some() {
                    String::new()
                } else {
                    format!(" ({})", attn.why.join("; "))
                };
                let dest = if s.explicit("prefill_attention_backend").is_some() {
                    "prefill_attention_backend"
                } else {
                    "attention_backend"
                };
                v.push((
                    3,
                    dest,
                    format!("prefill attention backend `{b}`{how}; sharding needs fa3 (trtllm_mla for MLA)"),
                    "set `--prefill-attention-backend fa3`".into(),
                ));
            }
        }
    }
    let backend = s.transfer_backend();
    if !matches!(backend.as_str(), "mooncake" | "nixl") {
        v.push((
            6,
            "disaggregation_transfer_backend",
            format!("transfer backend `{backend}`"),
            "use `--disaggregation-transfer-backend mooncake` or `nixl`".into(),
        ));
    }
    if env_on(s, "SGLANG_DISAGG_STAGING_BUFFER") {
        const STAGING: &str = "SGLANG_DISAGG_STAGING_BUFFER";
        v.push((7, STAGING, format!("{STAGING} set"), format!("unset {STAGING}")));
    }
    let (cp, tp, dp) = (s.size("attn_cp_size"), s.size("tp_size"), s.attn_dp());
    match mla {
        Some(true) if cp <= 1 && !ctx.model.is_dsa() => {
            if dp > 1 {
                v.push((
                    8,
                    "attn_dp_size",
                    format!("DP attention ({dp} ranks) for an MLA model without prefill CP"),
                    "set `--attn-dp-size 1` (no DP attention) on the prefill".into(),
                ));
            } else if tp <= 1 {
                let why = "tp_size=1 for an MLA model without prefill CP";
                v.push((9, "tp_size", why.into(), "use `--tp-size` 2 or more".into()));
            }
        }
        Some(false) if !s.switch("enable_prefill_cp") || cp <= 1 => v.push((
            10,
            "attn_cp_size",
            format!(
                "{} attn_cp_size={cp} for a GQA/MHA model, which is sharded across attention-CP ranks",
                if s.switch("enable_prefill_cp") { "--enable-prefill-cp with" } else { "no --enable-prefill-cp," }
            ),
            "add `--enable-prefill-cp --attn-cp-size 2` (or more)".into(),
        )),
        _ => {}
    }
    let page = s.page_size(&ctx.model).value;
    if page <= 1 {
        v.push((11, "page_size", format!("page_size={page}"), "set `--page-size 64`".into()));
    }
    let chunk = s.explicit("chunked_prefill_size").and_then(|c| crate::spec::parse_human_int(&c));
    match chunk {
        Some(c) if c <= 0 => {
            let fix = "set a positive chunked-prefill size, a multiple of the page size";
            v.push((12, "chunked_prefill_size", format!("chunked_prefill_size={c}"), fix.into()))
        }
        Some(c) if page > 1 && c % i64::from(page) != 0 && s.explicit("mem_fraction_static").is_none() => {
            let size = i64::from(page);
            let rounded = (c + size - 1) / size * size;
            // SGLang takes 1.5 MB per token of the larger chunk above 2048 from the automatic
            // memory fraction; none when both stay under 2048.
            let delta_mb = 1.5 * (rounded.max(2048) - c.max(2048)) as f64;
            if delta_mb > 0.0 {
                let gpu_mb = s.gpu.map(|g| f64::from(g.memory_gib()) * 1024.0);
                // The fraction is below 1, so a rounding that costs the whole GPU always fails.
                let (which, certain) = match gpu_mb {
                    None => (13, false),
                    Some(mb) => (14, delta_mb >= mb),
                };
                let cost = match gpu_mb {
                    Some(mb) => format!("{delta_mb:.0} MB of the GPU's {mb:.0} MB"),
                    None => format!("{delta_mb:.0} MB of a device memory pdlaunch does not know"),
                };
                v.push((
                    if certain { which } else { which + 100 },
                    "chunked_prefill_size",
                    format!(
                        "chunked_prefill_size={c}, not a multiple of page_size={page}: SGLang rounds it up to {rounded} \
                         and takes {cost} from the automatic --mem-fraction-static"
                    ),
                    format!("pass a multiple of {page} yourself, e.g. {}", (c / size).max(1) * size),
                ));
            }
        }
        _ => {}
    }
    v
}

/// The DSA branch of SGLang's attention-backend gate.
fn dsa_violations(ctx: &Context, s: &ServerView, sm: Option<u32>) -> Vec<Violation> {
    let mut v: Vec<Violation> = Vec::new();
    let cp = s.size("attn_cp_size");
    let strategy = s.value("cp_strategy");
    let pp = s.size("pp_size");
    let cuda = s.gpu.is_none_or(|g| !g.is_hip()) && s.value("device").is_none_or(|d| d == "cuda");
    if !cuda || !s.switch("enable_prefill_cp") || cp <= 1 || strategy.as_deref() != Some("interleave") || pp != 1 {
        let why = format!(
            "a DSA model with prefill CP {} (attn_cp_size={cp}, cp_strategy {}), pp_size={pp}",
            if s.switch("enable_prefill_cp") { "on" } else { "off" },
            strategy.as_deref().unwrap_or("unset")
        );
        let fix = "add `--enable-prefill-cp --attn-cp-size 2 --cp-strategy interleave` with `--pp-size 1` on CUDA";
        v.push((4, "attn_cp_size", why, fix.into()));
    }
    // Left unset, the DSA kernels are TRTLLM only where SGLang picks them (Blackwell).
    let trtllm = |dest: &str| match s.explicit(dest) {
        Some(b) => Some(b == "trtllm"),
        None => sm.map(|sm| sm >= 100).filter(|&b| !b),
    };
    let dtype = s.kv_cache_dtype(&ctx.model).value;
    let page = s.page_size(&ctx.model).value;
    let kernels = [trtllm("dsa_prefill_backend"), trtllm("dsa_decode_backend")];
    if kernels.contains(&Some(false)) || (dtype != "fp8_e4m3" && dtype != "auto") || page != 64 {
        let why = format!(
            "a DSA model with DSA kernels {}/{}, KV dtype {dtype} and page size {page}",
            s.value("dsa_prefill_backend").unwrap_or_else(|| "default".into()),
            s.value("dsa_decode_backend").unwrap_or_else(|| "default".into())
        );
        let fix = "use `--dsa-prefill-backend trtllm --dsa-decode-backend trtllm`, `--kv-cache-dtype fp8_e4m3` and \
                   `--page-size 64`";
        v.push((5, "dsa_prefill_backend", why, fix.into()));
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn found(p: &str, d: &str, preset: Option<&str>) -> Vec<crate::rules::Finding> {
        lint_findings(p, d, preset).into_iter().filter(|f| f.code == "PD082").collect()
    }

    const GQA_OK: &str = " --enable-kv-cache-sharding --enable-prefill-cp --attn-cp-size 2 --tp 2 --page-size 64";

    #[test]
    fn a_sharded_prefill_that_sglang_accepts_passes() {
        assert!(found(GQA_OK, "", None).is_empty(), "{:?}", found(GQA_OK, "", None));
        assert!(found(&format!("{GQA_OK} --chunked-prefill-size 8192"), "", None).is_empty());
        let mla = " --enable-kv-cache-sharding --tp 2 --page-size 64";
        assert!(found(mla, " --tp 2", Some("deepseek-v3")).is_empty(), "{:?}", found(mla, " --tp 2", Some("deepseek-v3")));
        assert!(found("", "", None).is_empty());
    }

    #[test]
    fn each_refusal_is_caught() {
        let one = |p: &str, d: &str, preset: Option<&str>, want: &str| {
            let f = found(p, d, preset);
            assert!(
                f.iter().any(|f| f.sglang_error.is_some_and(|e| e.starts_with(want))),
                "{p} | {d}: {want} not in {f:?}"
            );
        };
        one("", " --enable-kv-cache-sharding", None, "--enable-kv-cache-sharding is only supported on PD prefill");
        one(&format!("{GQA_OK} --dllm-algorithm LowConfidence"), "", None, "--enable-kv-cache-sharding does not support diffusion");
        one(&format!("{GQA_OK} --dcp-size 2"), "", None, "--enable-kv-cache-sharding and decode context parallelism");
        one(&format!("{GQA_OK} --attention-backend flashinfer"), "", None, "--enable-kv-cache-sharding currently requires the fa3");
        one(&format!("{GQA_OK} --disaggregation-transfer-backend mori"), "", None, "--enable-kv-cache-sharding currently only supports the mooncake");
        one(" --enable-kv-cache-sharding --page-size 64", "", None, "--enable-kv-cache-sharding for GQA models");
        one(" --enable-kv-cache-sharding --enable-prefill-cp --attn-cp-size 2 --tp 2", "", None, "--enable-kv-cache-sharding requires a real page size");
        one(&format!("{GQA_OK} --chunked-prefill-size -1"), "", None, "--enable-kv-cache-sharding requires chunked prefill");
        one(&format!("{GQA_OK} --chunked-prefill-size 4000"), "", None, "Auto-rounding --chunked-prefill-size");
        let f = found(" --enable-kv-cache-sharding --enable-prefill-cp --attn-cp-size 2 --tp 2 --page-size 65536 --chunked-prefill-size 65537", "", None);
        let e: Vec<_> = f.iter().filter(|f| f.severity == crate::rules::Severity::Error).filter_map(|f| f.sglang_error).collect();
        assert!(e.iter().any(|e| e.starts_with("Auto-rounding")), "{f:?}");
        // Under 2048 tokens the rounding costs nothing.
        assert!(found(&format!("{GQA_OK} --chunked-prefill-size 1000"), "", None).is_empty());
        one(" --enable-kv-cache-sharding --page-size 64", "", Some("deepseek-v3"), "--enable-kv-cache-sharding for MLA models without prefill CP shards across attention-TP ranks and needs");
        one(" --enable-kv-cache-sharding --page-size 64 --tp 2 --dp 2 --enable-dp-attention", "", Some("deepseek-v3"), "--enable-kv-cache-sharding for MLA models without prefill CP shards across attention-TP and requires");
        one(" --enable-kv-cache-sharding", "", Some("deepseek-v3.2"), "DSA KV sharding requires CUDA");
        one(" --enable-kv-cache-sharding --enable-prefill-cp --attn-cp-size 2 --tp 2 --cp-strategy interleave", "", Some("deepseek-v3.2"), "DSA KV sharding requires TRTLLM");
        one(" --enable-kv-cache-sharding --tp 2 --page-size 64", " --tp 4", Some("deepseek-v3"), "MLA KV cache sharding requires equal");
        one(GQA_OK, " --dcp-size 2", None, "PD decode DCP does not support a prefill with --enable-kv-cache-sharding");
        // A chunk to round with --mem-fraction-static pinned is SGLang's business alone.
        assert!(found(&format!("{GQA_OK} --chunked-prefill-size 1000 --mem-fraction-static 0.8"), "", None).is_empty());
    }

    #[test]
    fn an_encoder_decoder_model_is_refused() {
        let mut d = llama();
        d.model.geometry.as_mut().unwrap().architecture = Some("MllamaForConditionalGeneration".into());
        d.prefill.extra_args = vec!["--enable-kv-cache-sharding".into()];
        let f = findings(&d, "PD082");
        assert!(f.iter().any(|f| f.message.contains("the encoder-decoder model MllamaForConditionalGeneration")), "{f:?}");
    }

    #[test]
    fn the_staging_buffer_is_read_from_the_environment() {
        let mut d = llama();
        d.prefill.extra_args = vec![
            "--enable-kv-cache-sharding".into(),
            "--enable-prefill-cp".into(),
            "--attn-cp-size".into(),
            "2".into(),
            "--page-size".into(),
            "64".into(),
        ];
        d.prefill.tp = 2;
        let before = findings(&d, "PD082");
        d.prefill.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "1".into());
        let after = findings(&d, "PD082");
        assert_eq!(after.len(), before.len() + 1, "{before:?} -> {after:?}");
        assert!(after.iter().any(|f| f.message.contains("SGLANG_DISAGG_STAGING_BUFFER set")), "{after:?}");
    }
}
