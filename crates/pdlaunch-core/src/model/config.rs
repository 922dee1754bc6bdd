//! The Hugging Face `config.json` reader: the facts SGLang's KV pools and parallel layout depend
//! on, read from the text, checked for consistency, and refused with a field path when they are
//! missing or cannot be interpreted (rather than guessed).

use serde_json::{Map, Value};

use super::{AttentionKind, Geometry};

/// What the reader found in a `config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// The geometry, ready for `model.geometry`.
    pub geometry: Geometry,
    /// What the reader assumed, or could not derive, in words (shown to the user).
    pub notes: Vec<String>,
}

/// A `config.json` that cannot be read as a model SGLang serves.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ModelConfigError {
    /// JSON path of the offending field, e.g. `text_config.num_hidden_layers`.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ModelConfigError {
    fn render(&self) -> String {
        match &self.field {
            Some(f) => format!("field `{f}`: {}", self.message),
            None => self.message.clone(),
        }
    }
}

type Result<T> = std::result::Result<T, ModelConfigError>;

fn fail<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T> {
    Err(ModelConfigError { field: Some(field.into()), message: message.into() })
}

/// Reads a `config.json` text into a geometry (the function other front ends call).
pub fn geometry_from_config_json(text: &str) -> Result<Geometry> {
    read_config_json(text).map(|c| c.geometry)
}

/// Reads a `config.json` text.
pub fn read_config_json(text: &str) -> Result<ModelConfig> {
    read(text, None)
}

/// Reads a `config.json` text together with the ModelOpt `hf_quant_config.json` that sits next to
/// it in some checkpoints (SGLang reads that file for the quantization, including
/// `kv_cache_quant_algo`, when `config.json` carries no `quantization_config`).
pub fn apply_hf_quant_config(config_json: &str, hf_quant_config_json: &str) -> Result<ModelConfig> {
    read(config_json, Some(hf_quant_config_json))
}

/// One JSON object of the config, with the path prefix used in errors.
struct Scope<'a> {
    obj: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Scope<'a> {
    fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
    /// The value of `key`; JSON `null` counts as absent, as in transformers.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }
    fn uint(&self, key: &str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(v) => fail(self.path(key), format!("expected a non-negative integer, found {v}")),
        }
    }
    fn u32(&self, key: &str) -> Result<Option<u32>> {
        match self.uint(key)? {
            None => Ok(None),
            Some(v) => u32::try_from(v).map(Some).or_else(|_| fail(self.path(key), format!("{v} is too large"))),
        }
    }
    fn positive(&self, key: &str) -> Result<Option<u32>> {
        match self.u32(key)? {
            Some(0) => fail(self.path(key), "must be positive, found 0"),
            v => Ok(v),
        }
    }
    /// The first of several spellings that is present; spellings that disagree are an error.
    fn one_of(&self, keys: &[&str], positive: bool) -> Result<Option<(String, u32)>> {
        let mut found: Option<(String, u32)> = None;
        for k in keys {
            let v = if positive { self.positive(k)? } else { self.u32(k)? };
            if let Some(v) = v {
                match &found {
                    Some((first, fv)) if *fv != v => {
                        return fail(self.path(k), format!("{v} disagrees with `{first}` = {fv}"));
                    }
                    Some(_) => {}
                    None => found = Some((self.path(k), v)),
                }
            }
        }
        Ok(found)
    }
    fn string(&self, key: &str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => fail(self.path(key), format!("expected a string, found {v}")),
        }
    }
    fn boolean(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => fail(self.path(key), format!("expected true or false, found {v}")),
        }
    }
    fn object(&self, key: &str) -> Result<Option<Scope<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(Scope { obj: o, prefix: format!("{}.", self.path(key)) })),
            Some(v) => fail(self.path(key), format!("expected an object, found {v}")),
        }
    }
}

/// Config keys of models whose per-layer state is not a per-token KV cache (linear attention,
/// state-space layers): their pools are not modelled, so reading on would give wrong numbers.
const LINEAR_HYBRID_KEYS: &[&str] = &[
    "linear_attn_config",
    "full_attention_interval",
    "hybrid_override_pattern",
    "attn_type_list",
    "layers_block_type",
];

/// Nested language-model configs of multimodal checkpoints.
const TEXT_CONFIG_KEYS: &[&str] = &["text_config", "llm_config", "language_config"];

/// Checkpoint dtypes SGLang loads (`--dtype auto` follows them; float32 is served as 16-bit).
const DTYPES: &[&str] = &["bfloat16", "float16", "float32"];

fn read(text: &str, hf_quant: Option<&str>) -> Result<ModelConfig> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ModelConfigError { field: None, message: format!("not valid JSON: {e}") })?;
    let Value::Object(root) = &root else {
        return Err(ModelConfigError { field: None, message: "config.json must be a JSON object".into() });
    };
    let top = Scope { obj: root, prefix: String::new() };
    let mut notes = Vec::new();

    let architecture = match top.get("architectures") {
        None => {
            notes.push(
                "no `architectures`: rules that depend on the architecture (page size, KV dtype) are skipped".into(),
            );
            None
        }
        Some(Value::Array(a)) => match a.first() {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => return fail("architectures[0]", format!("expected a class name, found {v}")),
        },
        Some(v) => return fail("architectures", format!("expected a list of class names, found {v}")),
    };

    // The language model of a multimodal checkpoint sits in a nested config.
    let mut lm = None;
    for key in TEXT_CONFIG_KEYS {
        if let Some(s) = top.object(key)? {
            lm = Some(s);
            break;
        }
    }
    let s = match lm {
        Some(nested) if nested.get("num_hidden_layers").is_some() || top.get("num_hidden_layers").is_none() => {
            notes.push(format!(
                "multimodal checkpoint: geometry and parameters are those of the language model in `{}` (the \
                 vision encoder is not counted)",
                nested.prefix.trim_end_matches('.')
            ));
            nested
        }
        _ => Scope { obj: root, prefix: String::new() },
    };

    for key in LINEAR_HYBRID_KEYS {
        if s.get(key).is_some() {
            return fail(
                s.path(key),
                "hybrid linear-attention / state-space models are not supported: their layer state is not a \
                 per-token KV cache, so pdlaunch cannot size or check it",
            );
        }
    }
    if s.get("attention_chunk_size").is_some() {
        return fail(
            s.path("attention_chunk_size"),
            "chunked local attention (Llama 4 class) is not supported: its KV pools are not modelled",
        );
    }

    let Some(layers) = s.positive("num_hidden_layers")? else {
        return fail(s.path("num_hidden_layers"), "missing: the number of transformer layers is required");
    };
    let Some((_, heads)) = s.one_of(&["num_attention_heads", "n_head"], true)? else {
        return fail(s.path("num_attention_heads"), "missing: the number of attention heads is required");
    };
    let hidden = s.positive("hidden_size")?;

    let mut g = Geometry::new(AttentionKind::Mha, layers);
    g.architecture = architecture;
    g.attention_heads = Some(heads);
    g.hidden_size = hidden;

    if let Some(rank) = s.u32("kv_lora_rank")? {
        if rank == 0 {
            return fail(s.path("kv_lora_rank"), "must be positive, found 0");
        }
        let Some(rope) = s.u32("qk_rope_head_dim")? else {
            return fail(
                s.path("qk_rope_head_dim"),
                "missing: an MLA model (it has `kv_lora_rank`) needs it for the KV row",
            );
        };
        g.attention = AttentionKind::Mla;
        g.kv_lora_rank = Some(rank);
        g.qk_rope_head_dim = Some(rope);
    } else {
        let kv_heads = match s.one_of(&["num_key_value_heads", "multi_query_group_num"], true)? {
            Some((_, k)) => k,
            None => {
                notes.push(format!(
                    "no `num_key_value_heads`: {heads} KV heads (one per attention head), as transformers assumes"
                ));
                heads
            }
        };
        if kv_heads > heads {
            return fail(
                s.path("num_key_value_heads"),
                format!("{kv_heads} KV heads is more than the {heads} attention heads"),
            );
        }
        if !heads.is_multiple_of(kv_heads) {
            return fail(
                s.path("num_key_value_heads"),
                format!("{heads} attention heads cannot be grouped evenly over {kv_heads} KV heads"),
            );
        }
        let head_dim = match s.positive("head_dim")? {
            Some(d) => d,
            None => match hidden {
                Some(h) if h.is_multiple_of(heads) => h / heads,
                Some(h) => {
                    return fail(
                        s.path("head_dim"),
                        format!("missing, and hidden_size {h} is not a multiple of num_attention_heads {heads}"),
                    )
                }
                None => return fail(s.path("head_dim"), "missing, and so is hidden_size: the head size is unknown"),
            },
        };
        if let Some(v) = s.positive("v_head_dim")? {
            if v != head_dim {
                g.v_head_dim = Some(v);
            }
        }
        g.attention = if kv_heads == heads { AttentionKind::Mha } else { AttentionKind::Gqa };
        g.kv_heads = Some(kv_heads);
        g.head_dim = Some(head_dim);
        read_sliding_window(&s, &mut g, &mut notes)?;
    }

    let experts = s.one_of(&["num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"], false)?;
    g.moe_experts = experts.map(|e| e.1).filter(|e| *e > 0);
    if g.moe_experts.is_some() {
        g.moe_experts_per_token =
            s.one_of(&["num_experts_per_tok", "experts_per_token", "num_experts_per_token"], true)?.map(|e| e.1);
    }
    g.max_position_embeddings = s.uint("max_position_embeddings")?;
    g.torch_dtype = read_dtype(&s, &top)?;
    if g.torch_dtype.is_none() {
        notes.push("no `torch_dtype`: SGLang serves the checkpoint in 16 bits (KV too, with `auto`)".into());
    }

    let sidecar: Option<Value> = match hf_quant {
        None => None,
        Some(t) => Some(serde_json::from_str(t).map_err(|e| ModelConfigError {
            field: None,
            message: format!("hf_quant_config.json is not valid JSON: {e}"),
        })?),
    };
    let quant = read_quantization(&s, &top, sidecar.as_ref(), &mut g, &mut notes)?;

    match count_parameters(&s, &g)? {
        Some(p) => {
            g.parameters = Some(p.embed + p.experts + p.other);
            match weight_bits(&quant) {
                Some(bits) => g.weight_bytes = Some(p.bytes(bits)),
                None => notes.push(format!(
                    "weight memory not estimated: quantization `{}` is not modelled",
                    g.quant_method.as_deref().unwrap_or("?")
                )),
            }
        }
        None => notes.push(
            "parameter count not derived (vocab_size, hidden_size or the MLP sizes are missing): the per-GPU \
             memory estimate leaves the weights out"
                .into(),
        ),
    }
    Ok(ModelConfig { geometry: g, notes })
}

/// `layer_types` (gpt-oss, newer Gemma), `sliding_window_pattern` (Gemma 3) or a plain
/// `sliding_window` (Mistral v0.1 class, unless `use_sliding_window` is false as in Qwen).
fn read_sliding_window(s: &Scope, g: &mut Geometry, notes: &mut Vec<String>) -> Result<()> {
    let window = s.positive("sliding_window")?;
    let layers = g.layers as usize;
    let pattern: Option<Vec<bool>> = match s.get("layer_types") {
        Some(Value::Array(types)) => {
            if types.len() != layers {
                return fail(
                    s.path("layer_types"),
                    format!("lists {} layers but num_hidden_layers is {layers}", types.len()),
                );
            }
            let mut sliding = Vec::with_capacity(layers);
            for (i, t) in types.iter().enumerate() {
                match t.as_str() {
                    Some("full_attention") => sliding.push(false),
                    Some("sliding_attention") => sliding.push(true),
                    _ => {
                        return fail(
                            format!("{}[{i}]", s.path("layer_types")),
                            format!(
                                "layer type {t} is not supported (only full_attention and sliding_attention are \
                                 modelled)"
                            ),
                        )
                    }
                }
            }
            Some(sliding)
        }
        Some(v) => return fail(s.path("layer_types"), format!("expected a list of layer types, found {v}")),
        // Gemma 3: every N-th layer is global.
        None => s
            .positive("sliding_window_pattern")?
            .map(|n| (0..layers).map(|i| !(i + 1).is_multiple_of(n as usize)).collect()),
    };
    match pattern {
        Some(sliding) => {
            let swa = sliding.iter().filter(|s| **s).count() as u32;
            if swa == 0 {
                return Ok(());
            }
            let Some(w) = window else {
                return fail(s.path("sliding_window"), "missing: some layers use sliding-window attention");
            };
            g.sliding_window = Some(w);
            if swa < g.layers {
                g.hybrid_swa = true;
                g.full_attention_layers = Some(g.layers - swa);
            }
        }
        None => {
            if let Some(w) = window {
                if s.boolean("use_sliding_window")? != Some(false) {
                    g.sliding_window = Some(w);
                    notes.push(format!(
                        "`sliding_window` {w} applies to every layer; the KV estimate still counts the full context, \
                         as SGLang's pool holds it"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn read_dtype(s: &Scope, top: &Scope) -> Result<Option<String>> {
    let mut found: Option<(String, &str)> = None;
    for scope in [s, top] {
        for key in ["torch_dtype", "dtype"] {
            let Some(v) = scope.string(key)? else { continue };
            if !DTYPES.contains(&v) {
                return fail(
                    scope.path(key),
                    format!("unsupported dtype {v:?} (expected one of {})", DTYPES.join(", ")),
                );
            }
            match &found {
                Some((first, fv)) if *fv != v => {
                    return fail(scope.path(key), format!("{v:?} disagrees with `{first}` = {fv:?}"));
                }
                Some(_) => {}
                None => found = Some((scope.path(key), v)),
            }
        }
    }
    Ok(found.map(|f| f.1.to_owned()))
}

/// What the weights are stored as.
#[derive(Clone, Debug, Default)]
struct Quant {
    /// `quant_method`, lowercase.
    method: Option<String>,
    /// `quant_algo` (ModelOpt), uppercase.
    algo: Option<String>,
    /// Weight bits and group size of integer/float group formats (compressed-tensors, AWQ, GPTQ).
    bits: Option<(u64, Option<u64>)>,
    /// The quantization leaves attention (and other dense layers) in the checkpoint dtype.
    dense_unquantized: bool,
}

fn read_quantization(
    s: &Scope,
    top: &Scope,
    sidecar: Option<&Value>,
    g: &mut Geometry,
    notes: &mut Vec<String>,
) -> Result<Quant> {
    let q = match s.object("quantization_config")? {
        Some(q) => Some(q),
        None => top.object("quantization_config")?,
    };
    let side_obj;
    let q = match (q, sidecar) {
        (Some(q), _) => q,
        (None, Some(Value::Object(o))) => {
            side_obj = o;
            Scope { obj: side_obj, prefix: "hf_quant_config.json: ".into() }
        }
        (None, Some(_)) => {
            return Err(ModelConfigError { field: None, message: "hf_quant_config.json must be a JSON object".into() })
        }
        (None, None) => return Ok(Quant::default()),
    };
    let mut quant = Quant::default();
    // The legacy ModelOpt layout nests everything under `quantization`.
    let nested = q.object("quantization")?;
    let body = nested.as_ref().unwrap_or(&q);
    quant.method = match q.string("quant_method")? {
        Some(m) => Some(m.to_ascii_lowercase()),
        None if nested.is_some() || q.get("quant_algo").is_some() => Some("modelopt".into()),
        None => return fail(q.path("quant_method"), "missing: the quantization method is required"),
    };
    quant.algo = body.string("quant_algo")?.map(str::to_ascii_uppercase);
    let mut kv = body.string("kv_cache_quant_algo")?.map(str::to_ascii_uppercase);
    if let Some(scheme) = body.object("kv_cache_scheme")? {
        let float = scheme.string("type")? == Some("float");
        let bits = scheme.uint("num_bits")?;
        if quant.method.as_deref() == Some("modelopt") {
            // SGLang's ModelOpt configs: an 8-bit float scheme is FP8, a 4-bit one NVFP4.
            kv = kv.or(match (float, bits) {
                (true, Some(8)) => Some("FP8".into()),
                (true, Some(4)) => Some("NVFP4".into()),
                _ => None,
            });
        } else {
            notes.push(format!(
                "`{}` asks for a {}-bit KV cache; pdlaunch does not assume SGLang applies it to `--kv-cache-dtype auto`",
                scheme.prefix.trim_end_matches('.'),
                bits.map_or("?".to_owned(), |b| b.to_string())
            ));
        }
    }
    g.quant_method = quant.method.clone();
    g.kv_cache_quant_algo = kv;

    // Group formats: weight bits and group size.
    let groups = body.object("config_groups")?;
    if let Some(groups) = groups {
        let first = groups.obj.iter().find_map(|(k, v)| v.is_object().then_some(k.clone()));
        if let Some(name) = first {
            let group = groups.object(&name)?.expect("checked to be an object");
            if let Some(w) = group.object("weights")? {
                if let Some(b) = w.uint("num_bits")? {
                    quant.bits = Some((b, w.uint("group_size")?));
                }
            }
        }
    } else if let Some(b) = body.uint("bits")? {
        quant.bits = Some((b, body.uint("group_size")?));
    }
    // Which modules stay unquantized: attention left alone means all dense layers are.
    let mut skipped = Vec::new();
    for key in ["ignore", "modules_to_not_convert", "exclude_modules"] {
        if let Some(Value::Array(a)) = body.get(key) {
            skipped.extend(a.iter().filter_map(Value::as_str).map(str::to_owned));
        }
    }
    quant.dense_unquantized = skipped.iter().any(|m| m.contains("self_attn"));
    Ok(quant)
}

/// Parameters by how they are stored: embeddings stay in the checkpoint dtype, routed experts
/// and the other linear layers follow the quantization.
struct Params {
    embed: u64,
    experts: u64,
    other: u64,
}

/// Bits per parameter, times 32 so that 4.25-bit formats stay exact.
struct Bits {
    embed: u64,
    experts: u64,
    other: u64,
}

impl Params {
    fn bytes(&self, b: Bits) -> u64 {
        (self.embed * b.embed + self.experts * b.experts + self.other * b.other) / 256
    }
}

/// SGLang serves 16-bit weights (float32 checkpoints are cast down by `--dtype auto`).
const BF16: u64 = 16 * 32;

fn weight_bits(q: &Quant) -> Option<Bits> {
    let same = |b: u64| Some(Bits { embed: BF16, experts: b, other: if q.dense_unquantized { BF16 } else { b } });
    // Group formats: data bits plus a 16-bit scale per group.
    let group = |(bits, size): (u64, Option<u64>)| bits * 32 + size.filter(|s| *s > 0).map_or(0, |s| 512 / s);
    match q.method.as_deref() {
        None => Some(Bits { embed: BF16, experts: BF16, other: BF16 }),
        Some("fp8") | Some("fbgemm_fp8") | Some("w8a8_fp8") => same(8 * 32),
        // MXFP4: 4-bit values with an 8-bit scale per 32.
        Some("mxfp4") => same(4 * 32 + 8),
        Some("modelopt") => match q.algo.as_deref() {
            Some("FP8") | Some("FP8_BLOCK_SCALES") => same(8 * 32),
            // NVFP4: 4-bit values with an 8-bit scale per 16.
            Some("NVFP4") | Some("W4A16_NVFP4") => same(4 * 32 + 16),
            _ => None,
        },
        Some("compressed-tensors") | Some("awq") | Some("gptq") | Some("awq_marlin") | Some("gptq_marlin") => {
            q.bits.and_then(|b| same(group(b)))
        }
        _ => None,
    }
}

/// Counts the language model's parameters from the config (main model only: multi-token
/// prediction layers load only with speculative decoding). `None` when a size is missing.
fn count_parameters(s: &Scope, g: &Geometry) -> Result<Option<Params>> {
    let (Some(vocab), Some(h), Some(heads)) = (s.uint("vocab_size")?, g.hidden_size, g.attention_heads) else {
        return Ok(None);
    };
    let (h, heads, layers) = (u64::from(h), u64::from(heads), u64::from(g.layers));
    let tied = s.boolean("tie_word_embeddings")?.unwrap_or(false);
    let embed = vocab * h * if tied { 1 } else { 2 };
    let attention = match g.attention {
        AttentionKind::Mla => {
            let (Some(nope), Some(v), Some(rank), Some(rope)) =
                (s.uint("qk_nope_head_dim")?, s.uint("v_head_dim")?, g.kv_lora_rank, g.qk_rope_head_dim)
            else {
                return Ok(None);
            };
            let (rank, rope) = (u64::from(rank), u64::from(rope));
            let q_rank = s.uint("q_lora_rank")?;
            let q = match q_rank {
                Some(r) => h * r + r + r * heads * (nope + rope),
                None => h * heads * (nope + rope),
            };
            let kv = h * (rank + rope) + rank + rank * heads * (nope + v);
            // DeepSeek sparse attention adds an indexer per layer.
            let indexer = match (s.uint("index_n_heads")?, s.uint("index_head_dim")?) {
                (Some(n), Some(d)) => q_rank.unwrap_or(h) * n * d + h * d + h * n,
                _ => 0,
            };
            q + kv + heads * v * h + indexer
        }
        _ => {
            let (Some(kv), Some(d)) = (g.kv_heads, g.head_dim) else { return Ok(None) };
            let (kv, d) = (u64::from(kv), u64::from(d));
            let v = g.v_head_dim.map_or(d, u64::from);
            h * heads * d + h * kv * (d + v) + heads * v * h
        }
    };
    let intermediate = s.uint("intermediate_size")?;
    let (dense_layers, moe_layers, per_moe_layer, routed) = match g.moe_experts {
        None => (layers, 0, 0, 0),
        Some(e) => {
            let e = u64::from(e);
            let Some(expert_size) = s.uint("moe_intermediate_size")?.or(intermediate) else { return Ok(None) };
            let first_dense = s.uint("first_k_dense_replace")?.unwrap_or(0);
            // Only the integer forms are modelled; other layouts leave the count out.
            let freq = match s.get("moe_layer_freq") {
                None => 1,
                Some(Value::Number(n)) => n.as_u64().unwrap_or(1).max(1),
                Some(_) => return Ok(None),
            };
            let step = s.uint("decoder_sparse_step")?.unwrap_or(1).max(1);
            let mlp_only: Vec<u64> = match s.get("mlp_only_layers") {
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_u64).collect(),
                _ => Vec::new(),
            };
            let moe = (0..layers)
                .filter(|i| {
                    *i >= first_dense && i.is_multiple_of(freq) && (i + 1).is_multiple_of(step) && !mlp_only.contains(i)
                })
                .count() as u64;
            let shared = s.uint("n_shared_experts")?.unwrap_or(0) * 3 * h * expert_size
                + s.uint("shared_expert_intermediate_size")?.map_or(0, |i| 3 * h * i);
            (layers - moe, moe, shared + h * e, e * 3 * h * expert_size)
        }
    };
    let dense_mlp = match intermediate {
        Some(i) => 3 * h * i,
        None if dense_layers > 0 => return Ok(None),
        None => 0,
    };
    let other = layers * (attention + 2 * h) + h + dense_layers * dense_mlp + moe_layers * per_moe_layer;
    Ok(Some(Params { embed, experts: moe_layers * routed, other }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ModelConfigError {
        read_config_json(text).expect_err("should be refused")
    }

    #[test]
    fn malformed_texts_are_refused_with_the_field() {
        assert!(err("{").message.starts_with("not valid JSON"));
        assert_eq!(err("[1]").message, "config.json must be a JSON object");
        let e = err(r#"{"num_attention_heads": 8}"#);
        assert_eq!(e.to_string(), "field `num_hidden_layers`: missing: the number of transformer layers is required");
        let e = err(r#"{"num_hidden_layers": "32", "num_attention_heads": 8}"#);
        assert_eq!(e.to_string(), "field `num_hidden_layers`: expected a non-negative integer, found \"32\"");
        let e = err(r#"{"num_hidden_layers": 0, "num_attention_heads": 8}"#);
        assert_eq!(e.field.as_deref(), Some("num_hidden_layers"));
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 16, "head_dim": 64}"#);
        assert_eq!(e.to_string(), "field `num_key_value_heads`: 16 KV heads is more than the 8 attention heads");
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "head_dim": 64}"#);
        assert!(e.message.contains("cannot be grouped evenly"), "{e}");
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 6, "hidden_size": 1000}"#);
        assert_eq!(
            e.to_string(),
            "field `head_dim`: missing, and hidden_size 1000 is not a multiple of num_attention_heads 6"
        );
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "kv_lora_rank": 512}"#);
        assert_eq!(e.field.as_deref(), Some("qk_rope_head_dim"));
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64, "torch_dtype": "int8"}"#);
        assert!(e.to_string().starts_with("field `torch_dtype`: unsupported dtype \"int8\""), "{e}");
        let e = err(
            r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64, "torch_dtype": "bfloat16", "dtype": "float16"}"#,
        );
        assert!(e.message.contains("disagrees with `torch_dtype`"), "{e}");
        let e = err(
            r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64, "num_local_experts": 8, "num_experts": 16}"#,
        );
        assert_eq!(e.to_string(), "field `num_experts`: 16 disagrees with `num_local_experts` = 8");
    }

    #[test]
    fn layer_patterns_are_checked() {
        let e = err(r#"{"num_hidden_layers": 3, "num_attention_heads": 8, "head_dim": 64, "sliding_window": 128,
                "layer_types": ["sliding_attention", "full_attention"]}"#);
        assert_eq!(e.to_string(), "field `layer_types`: lists 2 layers but num_hidden_layers is 3");
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64,
                "layer_types": ["linear_attention", "full_attention"]}"#);
        assert_eq!(e.field.as_deref(), Some("layer_types[0]"));
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64,
                "layer_types": ["sliding_attention", "full_attention"]}"#);
        assert_eq!(e.to_string(), "field `sliding_window`: missing: some layers use sliding-window attention");
        let e = err(r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "linear_attn_config": {}}"#);
        assert!(e.message.contains("linear-attention"), "{e}");
        let e =
            err(r#"{"text_config": {"num_hidden_layers": 2, "num_attention_heads": 8, "attention_chunk_size": 8192}}"#);
        assert_eq!(e.field.as_deref(), Some("text_config.attention_chunk_size"));
        // Gemma 3 style: every 6th layer global.
        let c = read_config_json(
            r#"{"num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
                "sliding_window": 1024, "sliding_window_pattern": 6}"#,
        )
        .unwrap();
        assert!(c.geometry.hybrid_swa);
        assert_eq!(c.geometry.full_attention_layers, Some(2));
        assert_eq!(c.geometry.sliding_window, Some(1024));
        // Qwen keeps `sliding_window` with `use_sliding_window: false`: no sliding window.
        let c = read_config_json(
            r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64, "sliding_window": 4096,
                "use_sliding_window": false}"#,
        )
        .unwrap();
        assert_eq!(c.geometry.sliding_window, None);
    }

    #[test]
    fn missing_kv_heads_means_one_per_head_and_says_so() {
        let c =
            read_config_json(r#"{"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 2048}"#).unwrap();
        assert_eq!(c.geometry.attention, AttentionKind::Mha);
        assert_eq!((c.geometry.kv_heads, c.geometry.head_dim), (Some(16), Some(128)));
        assert!(c.notes.iter().any(|n| n.contains("no `num_key_value_heads`")), "{:?}", c.notes);
        assert!(c.notes.iter().any(|n| n.contains("parameter count not derived")), "{:?}", c.notes);
    }

    #[test]
    fn modelopt_kv_cache_scheme_is_fp8_and_other_schemes_are_only_noted() {
        let base = r#""num_hidden_layers": 2, "num_attention_heads": 8, "head_dim": 64"#;
        let c = read_config_json(&format!(
            r#"{{{base}, "quantization_config": {{"quant_method": "modelopt", "quant_algo": "FP8",
                "kv_cache_scheme": {{"dynamic": false, "num_bits": 8, "type": "float"}}}}}}"#
        ))
        .unwrap();
        assert_eq!(c.geometry.quant_method.as_deref(), Some("modelopt"));
        assert_eq!(c.geometry.kv_cache_quant_algo.as_deref(), Some("FP8"));
        let c = read_config_json(&format!(
            r#"{{{base}, "quantization_config": {{"quant_method": "modelopt", "kv_cache_quant_algo": "fp8"}}}}"#
        ))
        .unwrap();
        assert_eq!(c.geometry.kv_cache_quant_algo.as_deref(), Some("FP8"));
        let c = read_config_json(&format!(
            r#"{{{base}, "quantization_config": {{"quant_method": "compressed-tensors",
                "kv_cache_scheme": {{"num_bits": 8, "type": "float"}}}}}}"#
        ))
        .unwrap();
        assert_eq!(c.geometry.kv_cache_quant_algo, None);
        assert!(c.notes.iter().any(|n| n.contains("asks for a 8-bit KV cache")), "{:?}", c.notes);
        let e = err(&format!(r#"{{{base}, "quantization_config": {{"bits": 4}}}}"#));
        assert_eq!(e.field.as_deref(), Some("quantization_config.quant_method"));
    }
}
