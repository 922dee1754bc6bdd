//! PD040: the decode GPUs cannot hold the KV cache of `max_running_requests` at full context.

use super::{group, labels};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::model::{kv_bytes_per_token, KvElement};

/// The decode pre-allocates the whole KV of every request it admits from a prefill. Its pool is
/// what `--mem-fraction-static` of the GPU leaves after the weights; this rule estimates it from
/// the model geometry and compares it with `max_running_requests` requests at the context length.
pub static RULE: Rule = Rule {
    code: "PD040",
    name: "decode-kv-capacity",
    severity: Severity::Warning,
    summary: "the decode's KV pool cannot hold max_running_requests requests at the context length",
    explanation: "KV bytes per token per GPU follow from the model: MHA/GQA layers store K and V for the rank's \
        share of the KV heads (`layers x 2 x kv_heads/attn_tp x head_dim x bytes`), MLA layers one latent row \
        (`layers x (kv_lora_rank + qk_rope_head_dim) x bytes`) on every rank; sliding-window layers keep only \
        the window. The pool is about `mem_fraction_static x GPU memory` minus the weights. When it cannot hold \
        `max_running_requests` requests at the full context, the decode admits fewer: transfers wait for free \
        pages, long requests are retracted, and throughput falls short of the configured concurrency. \
        This is an estimate (activations, CUDA graphs and the DSA indexer cache are not counted).",
    sglang_errors: &[
        "no error: the decode KV pool is smaller than max_running_requests x context_length, so requests queue or are retracted",
        "KV cache pool is full. Retract requests.",
    ],
    fix: "Lower `decode.max_running_requests` or `model.context_length`, give the decode more GPUs (`decode.tp`), \
        or store the KV cache in FP8 (`shared.kv_cache_dtype: fp8_e4m3`).",
    check: Check::Deployment(check),
};

/// SGLang derives `--mem-fraction-static` from the GPU when it is unset; this is the value assumed.
const ASSUMED_MEM_FRACTION: f64 = 0.85;

const GIB: f64 = (1u64 << 30) as f64;

/// What the estimate found for one decode server.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// Something the estimate needs is unknown.
    Skipped(String),
    /// The pool is too small: message and fix.
    Short(String, String),
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / GIB)
}

fn estimate(ctx: &Context, s: &ServerView) -> Option<Outcome> {
    let running = u64::try_from(s.int("max_running_requests")?).ok().filter(|r| *r > 0)?;
    let skip = |why: &str| Some(Outcome::Skipped(format!("{why}, rule skipped")));
    let Some(g) = ctx.model.geometry.as_ref() else { return skip("model geometry unknown") };
    let Some(gpu) = s.gpu else { return skip("GPU model unknown (set `decode.gpu`)") };
    let context = match s.int("context_length").and_then(|c| u64::try_from(c).ok()) {
        Some(c) => c,
        None => match g.max_position_embeddings {
            Some(c) => c,
            None => return skip("context length unknown (set `model.context_length` or use a preset or config.json)"),
        },
    };
    let kv_dtype = s.kv_cache_dtype(&ctx.model).value;
    let model_dtype = s.value("dtype").filter(|d| d != "auto").or_else(|| g.torch_dtype.clone());
    let element = match KvElement::resolve(&kv_dtype, model_dtype.as_deref(), ctx.model.kv_cache_quant_algo()) {
        Ok(e) => e,
        Err(e) => return skip(&format!("KV element type unknown ({e})")),
    };
    let (tp, pp) = (s.size("tp_size"), s.size("pp_size"));
    let kv = match kv_bytes_per_token(g, s.attn_tp(), pp, element) {
        Ok(kv) => kv,
        Err(e) => return skip(&format!("model geometry incomplete ({e})")),
    };
    // Requests are spread over the data-parallel ranks (DP attention or DP replicas).
    let dp = u64::from(s.attn_dp().max(s.size("dp_size")));
    let per_gpu = running.div_ceil(dp);
    let window = g.sliding_window.map_or(context, |w| u64::from(w).min(context));
    // Saturating: a geometry or context far past any real model must not overflow.
    let tokens = context
        .saturating_mul(u64::from(kv.full_layers))
        .saturating_add(window.saturating_mul(u64::from(kv.sliding_layers)));
    let per_request = kv.row_bytes.saturating_mul(tokens);
    let need = per_gpu as f64 * per_request as f64;

    let mut assumptions = Vec::new();
    let fraction = match s.value("mem_fraction_static").and_then(|v| crate::float::parse(&v)) {
        Some(f) => f,
        None => {
            assumptions.push(format!("mem_fraction_static {ASSUMED_MEM_FRACTION} assumed (unset)"));
            ASSUMED_MEM_FRACTION
        }
    };
    let shards = f64::from(tp) * f64::from(pp);
    let weights = match (g.weight_bytes, g.parameters) {
        (Some(b), _) => b as f64 / shards,
        (None, Some(p)) => {
            assumptions.push("16-bit weights assumed".into());
            p as f64 * 2.0 / shards
        }
        (None, None) => {
            assumptions.push("weights not counted (size unknown)".into());
            0.0
        }
    };
    let memory = f64::from(gpu.memory_gib()) * GIB;
    let budget = memory * fraction - weights;
    if need <= budget {
        return None;
    }
    let fits = if budget > 0.0 { ((budget / per_request as f64).floor() as u64).saturating_mul(dp) } else { 0 };
    let layout = match kv.kv_heads_per_rank {
        Some(h) => format!("{} layers x {h} KV heads (K and V) x {} B", kv.layers, kv.row_bytes / u64::from(h)),
        None => format!("{} layers x {} B latent", kv.layers, kv.row_bytes),
    };
    let sliding = if kv.sliding_layers > 0 {
        format!(", {} sliding-window layers keep {window} tokens", kv.sliding_layers)
    } else {
        String::new()
    };
    let notes = if assumptions.is_empty() { String::new() } else { format!("; {}", assumptions.join(", ")) };
    let message = format!(
        "{running} running requests ({per_gpu} per GPU) at {context} tokens need {} of KV per GPU ({} B/token: {layout}, \
         {}{sliding}), but about {} is left ({} {} x {fraction} - {} weights per GPU{notes}): {fits} requests fit at full \
         context",
        gib(need),
        kv.per_token,
        element.name,
        gib(budget.max(0.0)),
        gpu.as_str(),
        gib(memory),
        gib(weights),
    );
    let fix = format!(
        "lower `decode.max_running_requests` to {} or `model.context_length`, give the decode more GPUs \
         (`decode.tp`), or store the KV cache in FP8 (`shared.kv_cache_dtype: fp8_e4m3`)",
        fits.max(1)
    );
    Some(Outcome::Short(message, fix))
}

fn check(ctx: &Context) -> Vec<Finding> {
    group(ctx.heads(Role::Decode), |s| estimate(ctx, s))
        .into_iter()
        .map(|(outcome, servers)| match outcome {
            Outcome::Skipped(why) => {
                let message = format!("{}: {why} (decode KV capacity estimate)", labels(&servers));
                let fix = if ctx.deployment.is_some() {
                    "give the model (`model.preset`, `model.geometry` or `--model-config config.json`), the decode \
                     GPU and the context length"
                } else {
                    "name the model and the decode GPU to the linter (`--model NAME` and `--decode-gpu` on the \
                     command line, \"Model\" and \"Decode GPU\" in the app), and pass `--context-length` where the \
                     model does not give one"
                };
                // Without a geometry, the first reason to skip is that one.
                Finding::new(&RULE, message, fix).severity(Severity::Note).or_preset(ctx)
            }
            Outcome::Short(message, fix) => {
                servers.iter().fold(Finding::new(&RULE, format!("{}: {message}", labels(&servers)), fix), |f, s| {
                    f.at(s, "max_running_requests")
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::deployment::Gpu;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    fn llama_preset() -> crate::deployment::Deployment {
        let mut d = llama();
        d.model.geometry = None;
        d.model.preset = Some("llama-3.1-8b-instruct".into());
        d
    }

    #[test]
    fn a_pool_that_holds_the_requests_passes() {
        let mut d = llama_preset();
        d.model.context_length = Some(8192);
        // 128 x 8192 tokens x 128 KiB = 128 GiB: too much for one H200 ...
        assert_eq!(findings(&d, "PD040").len(), 1);
        // ... but 64 requests (64 GiB) fit.
        d.decode.max_running_requests = Some(64);
        assert!(findings(&d, "PD040").is_empty(), "{:?}", findings(&d, "PD040"));
    }

    #[test]
    fn llama_at_full_context_is_short_with_the_numbers() {
        let mut d = llama_preset();
        d.decode.mem_fraction_static = Some(0.9);
        let f = findings(&d, "PD040");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        // 131072 B/token x 131072 tokens = 16 GiB per request; 128 requests = 2048 GiB.
        // Budget: 141 GiB x 0.9 - 16,060,522,496 B of bf16 weights (14.96 GiB) = 111.9 GiB -> 6 requests.
        assert!(
            f[0].message.starts_with(
                "decode[0]: 128 running requests (128 per GPU) at 131072 tokens need 2048.0 GiB of KV per GPU \
                 (131072 B/token: 32 layers x 8 KV heads (K and V) x 512 B, bfloat16), but about 111.9 GiB is left \
                 (h200 141.0 GiB x 0.9 - 15.0 GiB weights per GPU): 6 requests fit at full context"
            ),
            "{}",
            f[0].message
        );
        assert!(f[0].fix.contains("`decode.max_running_requests` to 6"), "{}", f[0].fix);
    }

    #[test]
    fn fp8_kv_and_more_gpus_halve_and_shard_the_need() {
        let mut d = llama_preset();
        d.model.context_length = Some(16384);
        d.decode.max_running_requests = Some(64);
        // 64 x 16384 x 128 KiB = 128 GiB: too much for one GPU in bf16.
        assert_eq!(findings(&d, "PD040").len(), 1);
        d.shared.kv_cache_dtype = crate::choices::KvCacheDtype::Fp8E4m3;
        assert!(findings(&d, "PD040").is_empty());
        d.shared.kv_cache_dtype = crate::choices::KvCacheDtype::Auto;
        d.decode.tp = 2;
        assert!(findings(&d, "PD040").is_empty());
    }

    #[test]
    fn sliding_window_layers_keep_only_the_window() {
        let mut d = llama();
        d.model.geometry = None;
        d.model.preset = Some("gpt-oss-120b".into());
        d.decode.max_running_requests = Some(64);
        let f = findings(&d, "PD040");
        assert_eq!(f.len(), 1, "{f:?}");
        // 18 full layers x 131072 tokens + 18 sliding layers x 128 tokens, 2048 B each, x 64 requests.
        let need = 64.0 * 2048.0 * (18.0 * 131072.0 + 18.0 * 128.0) / (1u64 << 30) as f64;
        assert!(f[0].message.contains(&format!("need {need:.1} GiB")), "{} vs {need}", f[0].message);
        assert!(f[0].message.contains("18 sliding-window layers keep 128 tokens"), "{}", f[0].message);
    }

    #[test]
    fn unknowns_are_notes() {
        let f = findings(&llama(), "PD040");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Note);
        assert!(f[0].message.contains("context length unknown"), "{}", f[0].message);
        let mut d = llama();
        d.model.geometry = None;
        assert!(findings(&d, "PD040")[0].message.contains("model geometry unknown, rule skipped"));
        let mut d = llama_preset();
        d.decode.gpu = None;
        assert!(findings(&d, "PD040")[0].message.contains("GPU model unknown"));
        d.decode.gpu = Some(Gpu::H200);
        d.decode.max_running_requests = None;
        assert!(findings(&d, "PD040").is_empty());
    }
}
