//! PD069: a prefill chunk larger than the decode's whole staging ring.

use super::pd033_env_contract_mismatch::{env_on, env_origin};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::AttentionKind;
use crate::model::{kv_bytes_per_token, KvElement};

/// With the staging buffer on and different attention TP sizes, the prefill gathers a chunk's
/// head slices and writes them into a ring the decode allocates once, of
/// `SGLANG_DISAGG_STAGING_POOL_SIZE_MB` (default 4096) per GPU. A chunk of the prefill's
/// `--chunked-prefill-size` tokens, at the decode rank's KV bytes per token, that exceeds the
/// ring can never be staged: its allocation fails for good on the first long prompt.
pub static RULE: Rule = Rule {
    code: "PD069",
    name: "staging-pool-fit",
    severity: Severity::Error,
    summary: "a prefill chunk's KV, staged for a decode rank, is larger than the decode's staging ring",
    explanation: "A prefill chunk is staged whole into the decode's ring of `SGLANG_DISAGG_STAGING_POOL_SIZE_MB` \
        (4096) per GPU: tokens times the decode rank's KV bytes per token. A larger chunk fails for good.",
    sglang_errors: &[
        "[Staging] Chunk staging allocation permanently failed: chunk exceeds ring buffer total size (room={kv_chunk.room}). Increase SGLANG_DISAGG_STAGING_POOL_SIZE_MB.",
        "[Staging] Staged transfer cannot fit chunk (room={kv_chunk.room}, chunk_idx={chunk_idx}, pages={num_pages}). Increase SGLANG_DISAGG_STAGING_POOL_SIZE_MB or reduce chunked_prefill_size.",
        "SGLANG_DISAGG_STAGING_BUFFER is not supported with CP-TP group sharing.",
    ],
    fix: "Raise the decode's `SGLANG_DISAGG_STAGING_POOL_SIZE_MB`, or lower `chunked_prefill_size`.",
    check: Check::Deployment(check),
};

const POOL: &str = "SGLANG_DISAGG_STAGING_POOL_SIZE_MB";
const MIB: u64 = 1024 * 1024;

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(g) = ctx.model.geometry.as_ref().filter(|g| g.attention != AttentionKind::Mla) else {
        return out;
    };
    for (p, d) in ctx.pairs() {
        let staged = env_on(p, "SGLANG_DISAGG_STAGING_BUFFER") && env_on(d, "SGLANG_DISAGG_STAGING_BUFFER");
        if !staged || p.attn_tp() == d.attn_tp() {
            continue;
        }
        // SGLang's own default chunk depends on the GPU's memory: only a written one is compared.
        let Some(chunk) = p.int("chunked_prefill_size").filter(|_| p.explicit("chunked_prefill_size").is_some()) else {
            continue;
        };
        let Ok(chunk) = u64::try_from(chunk / i64::from(p.attn_dp().max(1))) else { continue };
        let pool_mb = d.env.get(POOL).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(4096);
        let kv_dtype = d.kv_cache_dtype(&ctx.model).value;
        let model_dtype = d.value("dtype").filter(|t| t != "auto").or_else(|| g.torch_dtype.clone());
        let Ok(element) = KvElement::resolve(&kv_dtype, model_dtype.as_deref(), ctx.model.kv_cache_quant_algo()) else {
            continue;
        };
        let Ok(kv) = kv_bytes_per_token(g, d.attn_tp(), d.size("pp_size"), element) else { continue };
        let bytes = chunk.saturating_mul(kv.per_token);
        if bytes <= pool_mb.saturating_mul(MIB) {
            continue;
        }
        let message = format!(
            "{} stages chunks of {chunk} tokens, {} MiB for a rank of {} ({} bytes per token), more than its \
             {POOL}={pool_mb}",
            p.label,
            bytes.div_ceil(MIB),
            d.label,
            kv.per_token
        );
        let fix = format!(
            "set `{POOL}` to at least {} on the decode, or lower the prefill's `chunked_prefill_size` to {}",
            bytes.div_ceil(MIB),
            (pool_mb.saturating_mul(MIB) / kv.per_token.max(1)).max(1)
        );
        let f = Finding::new(&RULE, message, fix).at(p, "chunked_prefill_size");
        out.push(f.at_origin(d.label.clone(), None, env_origin(ctx, d, POOL)));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn staged(chunk: i64, pool: Option<&str>) -> Vec<crate::rules::Finding> {
        let mut d = llama();
        d.shared.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "1".into());
        if let Some(pool) = pool {
            d.shared.env.insert("SGLANG_DISAGG_STAGING_POOL_SIZE_MB".into(), pool.into());
        }
        d.decode.tp = 2;
        d.prefill.chunked_prefill_size = Some(chunk);
        findings(&d, "PD069")
    }

    #[test]
    fn a_chunk_that_fits_the_ring_passes() {
        // Llama-3.1-8B at attention TP 2: 32 layers x 4 KV heads x 256 x 2 bytes = 64 KiB per token.
        assert!(staged(8192, None).is_empty(), "{:?}", staged(8192, None));
        assert!(staged(8192, Some("512")).is_empty());
        assert!(findings(&llama(), "PD069").is_empty());
    }

    #[test]
    fn a_chunk_larger_than_the_ring_is_caught() {
        let f = staged(8192, Some("256"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("chunks of 8192 tokens, 512 MiB"), "{}", f[0].message);
        assert!(f[0].fix.contains("at least 512") && f[0].fix.contains("to 4096"), "{}", f[0].fix);
        // The default ring holds 4096 MiB: 65536 tokens exactly, not one page more.
        assert!(staged(65536, None).is_empty());
        assert_eq!(staged(65536 + 64, None).len(), 1);
    }
}
