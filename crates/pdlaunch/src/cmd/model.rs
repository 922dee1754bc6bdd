//! `pdlaunch model`: read a Hugging Face `config.json` (or a built-in preset) and print the
//! geometry pdlaunch derives from it and the KV bytes per token one GPU holds. Also the reading
//! of `--model-config` for `check` and `render`.

use std::path::{Path, PathBuf};

use pdlaunch_core::choices::KvCacheDtype;
use pdlaunch_core::deployment::{AttentionKind, Deployment, Geometry};
use pdlaunch_core::model::{
    apply_hf_quant_config, kv_bytes_per_token, preset, read_config_json, KvBytes, KvElement, ModelConfig, PRESETS,
};

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// The model's `config.json` (an `hf_quant_config.json` next to it is read too, as SGLang does).
    #[arg(required_unless_present_any = ["preset", "list"], conflicts_with_all = ["preset", "list"])]
    pub file: Option<PathBuf>,
    /// A built-in model instead of a file.
    #[arg(long, conflicts_with = "list")]
    pub preset: Option<String>,
    /// List the built-in models.
    #[arg(long)]
    pub list: bool,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
    /// Attention TP size of the server (`tp / attn_dp`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub tp: u32,
    /// Pipeline-parallel size.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub pp: u32,
    /// `--kv-cache-dtype` of the server.
    #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(KvCacheDtype::NAMES))]
    pub kv_cache_dtype: String,
}

/// The file SGLang reads next to `config.json` for ModelOpt quantization.
const HF_QUANT_CONFIG: &str = "hf_quant_config.json";

/// Reads a `config.json` (and the `hf_quant_config.json` beside it, when present). Errors name the
/// file and the field.
pub fn read_model_config(path: &Path) -> super::Result<(ModelConfig, Option<PathBuf>)> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let sidecar = path.parent().map(|d| d.join(HF_QUANT_CONFIG)).filter(|p| p.is_file() && p.as_path() != path);
    let config = match &sidecar {
        Some(q) => {
            let quant = std::fs::read_to_string(q).map_err(|e| format!("cannot read {}: {e}", q.display()))?;
            apply_hf_quant_config(&text, &quant)
        }
        None => read_config_json(&text),
    };
    let config = config.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((config, sidecar))
}

/// Replaces the deployment's model geometry with the one read from `--model-config`, if given.
pub fn apply_model_config(d: &mut Deployment, path: Option<&Path>) -> super::Result<()> {
    if let Some(p) = path {
        let (config, _) = read_model_config(p)?;
        d.model.geometry = Some(config.geometry);
    }
    Ok(())
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    if args.list {
        return list(&args.format);
    }
    let (source, config, sidecar) = match (&args.file, &args.preset) {
        (Some(f), _) => {
            let (c, s) = read_model_config(f)?;
            (f.display().to_string(), c, s)
        }
        (None, Some(name)) => {
            let p = preset(name).ok_or_else(|| {
                format!(
                    "unknown preset {name:?}; the presets are: {}",
                    PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                )
            })?;
            (format!("preset {} ({})", p.name, p.hf_id), p.config(), None)
        }
        (None, None) => unreachable!("clap requires a file, --preset or --list"),
    };
    let g = &config.geometry;
    let mut notes = config.notes.clone();
    if let Some(s) = &sidecar {
        notes.push(format!("quantization read from {}", s.display()));
    }
    if g.architecture.as_deref().is_some_and(|a| pdlaunch_core::effective::DSA_ARCHS.contains(&a))
        && args.kv_cache_dtype == "auto"
    {
        notes.push(
            "DSA model: SGLang stores `auto` as fp8_e4m3 on Blackwell and bfloat16 below; pass --kv-cache-dtype to \
             pick one"
                .into(),
        );
    }
    let kv = KvElement::resolve(&args.kv_cache_dtype, g.torch_dtype.as_deref(), g.kv_cache_quant_algo.as_deref())
        .and_then(|e| kv_bytes_per_token(g, args.tp, args.pp, e).map(|k| (e, k)));
    let (element, kv) = kv.map_err(|e| format!("{source}: KV size unknown: {e}"))?;
    if args.format == "json" {
        let v = serde_json::json!({
            "source": source,
            "geometry": g,
            "kv": {
                "attn_tp": args.tp,
                "pp": args.pp,
                "kv_cache_dtype": args.kv_cache_dtype,
                "element": element.name,
                "layers": kv.layers,
                "full_layers": kv.full_layers,
                "sliding_layers": kv.sliding_layers,
                "kv_heads_per_rank": kv.kv_heads_per_rank,
                "bytes_per_token_per_layer": kv.row_bytes,
                "bytes_per_token": kv.per_token,
            },
            "notes": notes,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", human(&source, g, &args, element, &kv, &notes, style));
    }
    Ok(0)
}

fn list(format: &str) -> super::Result<u8> {
    if format == "json" {
        let v: Vec<serde_json::Value> = PRESETS
            .iter()
            .map(|p| serde_json::json!({"name": p.name, "hf_id": p.hf_id, "also": p.also, "summary": p.summary}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let width = PRESETS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in PRESETS {
            println!("{:width$}  {}  ({})", p.name, p.summary, p.hf_id);
            if !p.also.is_empty() {
                println!("{:width$}  same config.json: {}", "", p.also.join(", "));
            }
        }
    }
    Ok(0)
}

fn human(
    source: &str,
    g: &Geometry,
    args: &Args,
    element: KvElement,
    kv: &KvBytes,
    notes: &[String],
    style: &Style,
) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut rows: Vec<(&str, String)> = vec![("architecture", opt(g.architecture.clone()))];
    let attention = match g.attention {
        AttentionKind::Mla => format!(
            "mla: {} heads, latent {} + rope {}",
            opt(g.attention_heads.map(|h| h.to_string())),
            opt(g.kv_lora_rank.map(|v| v.to_string())),
            opt(g.qk_rope_head_dim.map(|v| v.to_string()))
        ),
        kind => format!(
            "{}: {} heads, {} KV heads, head_dim {}{}",
            if kind == AttentionKind::Mha { "mha" } else { "gqa" },
            opt(g.attention_heads.map(|h| h.to_string())),
            opt(g.kv_heads.map(|h| h.to_string())),
            opt(g.head_dim.map(|h| h.to_string())),
            g.v_head_dim.map(|v| format!(", v_head_dim {v}")).unwrap_or_default()
        ),
    };
    rows.push(("attention", attention));
    let layers = match (g.hybrid_swa, g.full_attention_layers, g.sliding_window) {
        (true, Some(full), Some(w)) => {
            format!("{} ({full} full attention, {} sliding window of {w})", g.layers, g.layers - full)
        }
        (_, _, Some(w)) => format!("{} (sliding window of {w})", g.layers),
        _ => g.layers.to_string(),
    };
    rows.push(("layers", layers));
    rows.push(("hidden size", opt(g.hidden_size.map(|h| h.to_string()))));
    rows.push(("context", opt(g.max_position_embeddings.map(|c| format!("{c} tokens")))));
    rows.push((
        "experts",
        match (g.moe_experts, g.moe_experts_per_token) {
            (Some(e), Some(k)) => format!("{e} routed, {k} per token"),
            (Some(e), None) => format!("{e} routed"),
            _ => "- (dense)".into(),
        },
    ));
    rows.push(("dtype", opt(g.torch_dtype.clone())));
    let mut quant = opt(g.quant_method.clone());
    if let Some(k) = &g.kv_cache_quant_algo {
        quant.push_str(&format!(", KV cache {k}"));
    }
    rows.push(("quantization", quant));
    rows.push((
        "parameters",
        match g.parameters {
            Some(p) => format!(
                "{p} ({:.2} B){}",
                p as f64 / 1e9,
                g.weight_bytes
                    .map(|b| format!(", weights about {:.1} GiB", b as f64 / (1u64 << 30) as f64))
                    .unwrap_or_default()
            ),
            None => "-".into(),
        },
    ));
    let mut s = format!("{}\n", style.bold(source));
    for (k, v) in rows {
        s.push_str(&format!("  {k:<14} {v}\n"));
    }
    s.push_str(&format!(
        "{}\n",
        style.bold(&format!(
            "KV cache per GPU (attention TP {}, PP {}, --kv-cache-dtype {} -> {})",
            args.tp, args.pp, args.kv_cache_dtype, element.name
        ))
    ));
    let per_layer = match kv.kv_heads_per_rank {
        Some(h) => format!("{} B per layer (K and V of {h} KV head(s))", kv.row_bytes),
        None => format!("{} B per layer (one latent row, on every rank)", kv.row_bytes),
    };
    s.push_str(&format!("  {:<14} {}\n", "layers", kv.layers));
    s.push_str(&format!("  {:<14} {per_layer}\n", "row"));
    s.push_str(&format!("  {:<14} {} ({} layers x {} B)\n", "bytes/token", kv.per_token, kv.layers, kv.row_bytes));
    if kv.sliding_layers > 0 {
        s.push_str(&format!(
            "  {:<14} {} full-attention layers hold every token, {} sliding-window layers only the window\n",
            "", kv.full_layers, kv.sliding_layers
        ));
    }
    for n in notes {
        s.push_str(&format!("{} {n}\n", style.note("note:")));
    }
    s
}
