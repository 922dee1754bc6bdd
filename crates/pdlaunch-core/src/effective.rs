//! What SGLang will actually use on each server: explicit values read through its argparse spec
//! (aliases, last-one-wins), its defaults, and the post-processing that rewrites them (attention
//! backend page-size snaps, model overrides, KV-dtype string rules). Rules compare these effective
//! values, never raw strings.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeMap;

use crate::deployment::{AttentionKind, Geometry, Gpu, Model, Role};
use crate::plan::Origin;
use crate::release::Release;
use crate::spec::{parse_argv, ArgValue, Parsed, Spec};

/// A value with the reasons it differs from what was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved<T> {
    /// The value SGLang uses.
    pub value: T,
    /// How it got there ("snapped from 16 to 64 by decode attention backend flashmla").
    pub why: Vec<String>,
    /// Set when the value depends on something pdlaunch was not told (GPU, architecture).
    pub assumption: Option<String>,
}

/// One server as SGLang sees it.
#[derive(Clone, Debug)]
pub struct ServerView {
    /// Prefill or decode (from `--disaggregation-mode`; `None` when missing or `null`).
    pub role: Option<Role>,
    /// Human label, e.g. `decode[0]` or `run-decode.sh:3`.
    pub label: String,
    /// Host the process runs on (the address peers use).
    pub host: String,
    /// The pod the process runs in, when the linter knows its name and `host` may name more than
    /// it (a Service that reaches the pods of several groups): see [`ServerView::machine`].
    pub pod: Option<String>,
    /// The machine a process whose host is a per-machine placeholder (`--host ${HOST_IP}`) runs
    /// on, as far as the material says: processes one script starts side by side share one; the
    /// nodes of one server, or commands written one per machine, do not.
    pub placeholder_machine: Option<String>,
    /// True when `placeholder_machine` is read from the order of a script's commands (one per
    /// machine, or side by side in the background), not named by the material (a pod, an `srun
    /// -w` node): what it keeps apart may still share one machine, and a note says what would
    /// collide if so.
    pub placeholder_assumed: bool,
    /// GPUs used on the host, as (first index, count), when known.
    pub gpus: Option<(u32, u32)>,
    /// Instance index and node rank within its side, when known.
    pub instance: usize,
    /// Node rank.
    pub node: usize,
    /// The argv after the module name.
    pub tokens: Vec<String>,
    /// Origin of each token.
    pub origins: Vec<Origin>,
    /// What argparse read.
    pub parsed: Parsed,
    /// Environment.
    pub env: BTreeMap<String, String>,
    /// GPU model, when known.
    pub gpu: Option<Gpu>,
    /// The target release.
    pub release: Release,
    /// The parallel sizes, read at the first question (rules ask for them again and again; the
    /// argv is not changed once the view is built).
    sizes: OnceCell<Sizes>,
}

/// The sizes of [`ServerView::size`] asked for most, and the DP-attention width.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    tp: u32,
    pp: u32,
    dp: u32,
    nnodes: u32,
    attn_cp: u32,
    attn_dp: u32,
}

/// Model facts rules may use.
#[derive(Clone, Debug, Default)]
pub struct ModelFacts {
    /// KV geometry, when known.
    pub geometry: Option<Geometry>,
}

impl ModelFacts {
    /// The facts of a deployment's model: its `geometry`, else the geometry of its `preset`.
    pub fn from_model(m: &Model) -> ModelFacts {
        let geometry =
            m.geometry.clone().or_else(|| m.preset.as_deref().and_then(crate::model::preset).map(|p| p.geometry()));
        ModelFacts { geometry }
    }
    /// The checkpoint's KV-cache quantization (`kv_cache_quant_algo`, e.g. `FP8`), if known.
    pub fn kv_cache_quant_algo(&self) -> Option<&str> {
        self.geometry.as_ref().and_then(|g| g.kv_cache_quant_algo.as_deref())
    }
    /// The architecture class, if known.
    pub fn architecture(&self) -> Option<&str> {
        self.geometry.as_ref().and_then(|g| g.architecture.as_deref())
    }
    /// The attention kind, from the geometry or the architecture name.
    pub fn attention(&self) -> Option<AttentionKind> {
        if let Some(g) = &self.geometry {
            return Some(g.attention);
        }
        None
    }
    /// The page size SGLang forces for the architecture whatever `--page-size` says (DSA 64,
    /// DeepSeek-V4 256), with the reason.
    pub fn forced_page_size(&self) -> Option<(u32, String)> {
        let arch = self.architecture()?;
        if self.is_dsa() {
            return Some((64, format!("the DSA architecture {arch}")));
        }
        (arch == "DeepseekV4ForCausalLM").then(|| (256, arch.to_owned()))
    }
    /// True for DeepSeek sparse-attention (DSA) architectures.
    pub fn is_dsa(&self) -> bool {
        self.architecture().is_some_and(|a| DSA_ARCHS.contains(&a))
    }
    /// True when the model is known to be a hybrid-Mamba (linear-attention state) one.
    pub fn is_mamba_hybrid(&self) -> bool {
        self.architecture().is_some_and(|a| MAMBA_HYBRID_ARCHS.contains(&a))
    }
    /// True for non-MLA hybrid sliding-window models (gpt-oss class).
    pub fn is_swa_hybrid(&self) -> Option<bool> {
        let g = self.geometry.as_ref()?;
        Some(
            g.attention != AttentionKind::Mla
                && (g.hybrid_swa || g.architecture.as_deref() == Some("GptOssForCausalLM")),
        )
    }
}

pub use crate::model::DSA_ARCHS;
/// Hugging Face architectures SGLang serves as hybrid-Mamba (linear-attention state) models
/// (`mambaish_config` in `srt/configs/hybrid_arch.py`).
pub const MAMBA_HYBRID_ARCHS: &[&str] = &[
    "Qwen3NextForCausalLM",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Mamba2ForCausalLM",
    "MambaForCausalLM",
    "FalconMambaForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "KimiLinearForCausalLM",
    "JetNemotronForCausalLM",
    "BailingMoeLinearV2ForCausalLM",
    "MiniCPMHybridForCausalLM",
];

/// MiniMax-M3 architectures (page size 128 when unset, with fa3 on Hopper or fa4/trtllm_mha on
/// Blackwell).
pub const MINIMAX_M3_ARCHS: &[&str] = &["MiniMaxM3ForCausalLM", "MiniMaxM3VLForConditionalGeneration"];
/// DeepSeek-V3-family architectures (MLA; `trtllm_mla` by default on SM100).
pub const DEEPSEEK_V3_ARCHS: &[&str] = &["DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", "KimiK2ForCausalLM"];

impl ServerView {
    /// Builds a view by reading `tokens` with the release's spec.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        label: String,
        host: String,
        tokens: Vec<String>,
        origins: Vec<Origin>,
        env: BTreeMap<String, String>,
        gpu: Option<Gpu>,
        release: Release,
    ) -> ServerView {
        let parsed = parse_argv(release.spec(), &tokens);
        let role = match parsed.get("disaggregation_mode") {
            Some(ArgValue::One(m)) if m == "prefill" => Some(Role::Prefill),
            Some(ArgValue::One(m)) if m == "decode" => Some(Role::Decode),
            _ => None,
        };
        ServerView {
            role,
            label,
            host,
            pod: None,
            placeholder_machine: None,
            placeholder_assumed: false,
            gpus: None,
            instance: 0,
            node: 0,
            tokens,
            origins,
            parsed,
            env,
            gpu,
            release,
            sizes: OnceCell::new(),
        }
    }

    /// The machine the process binds its ports and uses its GPUs on: its pod when known (pods
    /// have their own network and GPUs, whatever address reaches them), else its host.
    pub fn machine(&self) -> &str {
        self.pod.as_deref().or(self.placeholder_machine.as_deref()).unwrap_or(&self.host)
    }

    /// The GPUs the process uses on its machine, after `CUDA_VISIBLE_DEVICES` (as text: the
    /// variable may hold UUIDs): its schedulers take `tp × pp / nnodes` GPUs from `--base-gpu-id`
    /// upward, step `--gpu-id-step`, unless `gpus` says otherwise. An index past the visible
    /// list is `#<index>`.
    pub fn gpu_ids(&self) -> Vec<String> {
        // No machine holds more GPUs than this; a larger count is a typo, and listing it would
        // only exhaust memory. The first ones already decide overlaps and installed counts.
        const MAX_LISTED_GPUS: u32 = 4096;
        let (base, count) = self.gpus.unwrap_or_else(|| {
            let per_node =
                u64::from(self.size("tp_size")) * u64::from(self.size("pp_size")) / u64::from(self.size("nnodes"));
            (
                self.int("base_gpu_id").and_then(|v| u32::try_from(v).ok()).unwrap_or(0),
                u32::try_from(per_node).unwrap_or(u32::MAX).max(1),
            )
        });
        let step = u64::from(self.size("gpu_id_step"));
        let visible: Option<Vec<&str>> =
            self.env.get("CUDA_VISIBLE_DEVICES").map(|v| v.split(',').map(str::trim).collect());
        (0..count.min(MAX_LISTED_GPUS))
            .map(|i| {
                let idx = u64::from(base) + u64::from(i) * step;
                match &visible {
                    Some(list) => usize::try_from(idx)
                        .ok()
                        .and_then(|i| list.get(i))
                        .map_or_else(|| format!("#{idx}"), |g| (*g).to_owned()),
                    None => idx.to_string(),
                }
            })
            .collect()
    }

    fn sizes(&self) -> &Sizes {
        self.sizes.get_or_init(|| {
            let dp = self.read_size("dp_size");
            let attn_dp = if self.parsed.get("attn_dp_size").is_some() {
                self.read_size("attn_dp_size")
            } else if self.switch("enable_dp_attention") {
                dp
            } else {
                1
            };
            Sizes {
                tp: self.read_size("tp_size"),
                pp: self.read_size("pp_size"),
                dp,
                nnodes: self.read_size("nnodes"),
                attn_cp: self.read_size("attn_cp_size"),
                attn_dp,
            }
        })
    }

    /// The spec of the target release.
    pub fn spec(&self) -> &'static Spec {
        self.release.spec()
    }

    /// The explicit value of `dest`, as text.
    pub fn explicit(&self, dest: &str) -> Option<String> {
        self.parsed.get(dest).map(ArgValue::as_text)
    }

    /// The value of `dest` SGLang starts from: explicit, else the argparse default.
    pub fn value(&self, dest: &str) -> Option<String> {
        self.value_ref(dest).map(Cow::into_owned)
    }

    /// [`Self::value`], borrowed where it can be (rules read values often).
    pub fn value_ref(&self, dest: &str) -> Option<Cow<'_, str>> {
        match self.parsed.get(dest) {
            Some(v) => Some(v.text()),
            None => self.spec().default_text(dest).map(Cow::Borrowed),
        }
    }

    /// [`Self::value`] as an integer.
    pub fn int(&self, dest: &str) -> Option<i64> {
        self.value_ref(dest).and_then(|v| crate::spec::parse_human_int(&v))
    }

    /// A size that defaults to 1.
    pub fn size(&self, dest: &str) -> u32 {
        match dest {
            "tp_size" => self.sizes().tp,
            "pp_size" => self.sizes().pp,
            "dp_size" => self.sizes().dp,
            "nnodes" => self.sizes().nnodes,
            "attn_cp_size" => self.sizes().attn_cp,
            _ => self.read_size(dest),
        }
    }

    /// [`Self::size`], read from the argv and the defaults.
    fn read_size(&self, dest: &str) -> u32 {
        self.int(dest).and_then(|v| u32::try_from(v).ok()).unwrap_or(1).max(1)
    }

    /// The transfer backend SGLang uses: the flag, else `mooncake`, the default (`mooncake_tcp`
    /// is Mooncake with the TCP transport forced).
    pub fn transfer_backend(&self) -> String {
        match self.value("disaggregation_transfer_backend") {
            Some(b) if b == "mooncake_tcp" => "mooncake".into(),
            Some(b) => b,
            None => "mooncake".into(),
        }
    }

    /// True when the switch `dest` is on.
    pub fn switch(&self, dest: &str) -> bool {
        // A switch given on reads `true` too.
        self.value_ref(dest).as_deref() == Some("true")
    }

    /// Where the last occurrence of `dest` came from.
    pub fn origin(&self, dest: &str) -> Option<&Origin> {
        self.parsed.last_use(dest).and_then(|u| self.origins.get(u.index))
    }

    /// DP-attention width: `--attn-dp-size`, or `--dp-size` with `--enable-dp-attention`.
    pub fn attn_dp(&self) -> u32 {
        self.sizes().attn_dp
    }

    /// Attention TP size: `tp / attn_dp / attn_cp`, as SGLang computes it (integer division).
    pub fn attn_tp(&self) -> u32 {
        (self.size("tp_size") / self.attn_dp() / self.size("attn_cp_size")).max(1)
    }

    fn backend(&self, dest: &str) -> Option<String> {
        self.explicit(dest)
    }

    /// The attention backends after SGLang's defaulting: (attention, prefill, decode).
    pub fn attention_backends(&self, model: &ModelFacts) -> (Resolved<Option<String>>, Option<String>, Option<String>) {
        let attn = match self.backend("attention_backend") {
            Some(b) => Resolved { value: Some(b), why: vec![], assumption: None },
            None => default_attention_backend(self.gpu, model, self.speculative_topk()),
        };
        let prefill = self.backend("prefill_attention_backend").or_else(|| attn.value.clone());
        let decode = self.backend("decode_attention_backend").or_else(|| attn.value.clone());
        (attn, prefill, decode)
    }

    fn speculative_topk(&self) -> u32 {
        self.int("speculative_eagle_topk").and_then(|v| u32::try_from(v).ok()).unwrap_or(1)
    }

    /// A `--page-size` integer that is no page size: argparse takes any integer, but SGLang
    /// divides by the page size, so only a positive one (that fits `u32`) is one. The effective
    /// [`Self::page_size`] leaves it out of its arithmetic; PD016 reports it.
    pub fn invalid_page_size(&self) -> Option<i64> {
        self.int("page_size").filter(|&v| u32::try_from(v).map_or(true, |v| v == 0))
    }

    /// The page size the KV pool will use (SGLang's `token_to_kv_pool.page_size`).
    pub fn page_size(&self, model: &ModelFacts) -> Resolved<u32> {
        let given = self.int("page_size");
        let explicit = given.and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0);
        let mut why = Vec::new();
        if let Some(v) = self.invalid_page_size() {
            why.push(format!("`--page-size {v}` is not a positive integer"));
        }
        let mut page = explicit;
        let arch = model.architecture();
        let mut model_assumption = None;
        if let Some((forced, reason)) = model.forced_page_size() {
            if page != Some(forced) {
                why.push(format!("forced to {forced} for {reason}"));
            }
            page = Some(forced);
            if model.is_dsa() && self.gpu.is_some_and(Gpu::is_hip) {
                model_assumption = Some(
                    "on ROCm SGLang forces page size 1 for DSA models unless its aiter preshuffle path is active; 64 assumed"
                        .to_owned(),
                );
            }
        }
        let mut page = page.unwrap_or_else(|| {
            why.push(if given.is_some() { "1 assumed".into() } else { "unset: SGLang's default is 1".into() });
            1
        });
        let (attn, prefill, decode) = self.attention_backends(model);
        let mut assumption = model_assumption.or_else(|| attn.assumption.clone());
        let a = attn.value.as_deref();
        let p = prefill.as_deref();
        let d = decode.as_deref();
        // MiniMax-M3 sets 128 when the page size is unset and the backend is fa3 (Hopper) or
        // fa4/trtllm_mha (Blackwell).
        let sm = self.gpu.and_then(Gpu::sm);
        if given.is_none() && arch.is_some_and(|x| MINIMAX_M3_ARCHS.contains(&x)) {
            let hit = match sm {
                Some(90) => a == Some("fa3"),
                Some(v) if v >= 100 => matches!(a, Some("fa4") | Some("trtllm_mha")),
                _ => false,
            };
            if hit {
                why.retain(|w| !w.starts_with("unset"));
                why.push(format!(
                    "set to 128 for {} with attention backend {}",
                    arch.unwrap_or_default(),
                    a.unwrap_or_default()
                ));
                page = 128;
            }
        }
        let draft = self.backend("speculative_draft_attention_backend");
        let mla = model.attention().map(|k| k == AttentionKind::Mla);
        let snap = |name: &str, keep: &[u32], to: u32, page: &mut u32, why: &mut Vec<String>| {
            if !keep.contains(page) {
                why.push(format!("snapped from {} to {to} by attention backend {name}", *page));
                *page = to;
            }
        };
        let in_ad = |b: &str| a == Some(b) || d == Some(b);
        let in_any = |b: &str| a == Some(b) || d == Some(b) || p == Some(b);
        if in_ad("flashmla") {
            snap("flashmla", &[64], 64, &mut page, &mut why);
        }
        if in_ad("cutlass_mla") {
            snap("cutlass_mla", &[128], 128, &mut page, &mut why);
        }
        for b in ["trtllm_mla", "tokenspeed_mla"] {
            if in_ad(b) {
                snap(b, &[32, 64], 64, &mut page, &mut why);
            }
        }
        if in_any("cutedsl_mla") {
            snap("cutedsl_mla", &[32, 64], 64, &mut page, &mut why);
        }
        if in_any("trtllm_mha") || draft.as_deref() == Some("trtllm_mha") {
            snap("trtllm_mha", &[16, 32, 64, 128], 64, &mut page, &mut why);
        }
        if in_any("hpc_ops") {
            snap("hpc_ops", &[64], 64, &mut page, &mut why);
        }
        if in_any("fa4") && self.gpu.and_then(Gpu::sm).is_some_and(|sm| sm >= 100) && self.speculative_topk() <= 1 {
            match mla {
                Some(false) => snap("fa4", &[128], 128, &mut page, &mut why),
                None => {
                    assumption.get_or_insert_with(|| {
                        "fa4 forces page size 128 for non-MLA models; the model's attention kind is unknown".into()
                    });
                }
                Some(true) => {}
            }
        }
        if d == Some("intel_xpu") {
            let keep: &[u32] = if mla == Some(true) { &[16, 32, 64, 128] } else { &[64, 128] };
            snap("intel_xpu", keep, 128, &mut page, &mut why);
        }
        Resolved { value: page, why, assumption }
    }

    /// The KV-cache dtype *string* SGLang compares across sides (`kv_cache_dtype_str`).
    pub fn kv_cache_dtype(&self, model: &ModelFacts) -> Resolved<String> {
        let raw = self.value("kv_cache_dtype").unwrap_or_else(|| "auto".into());
        let mut why = Vec::new();
        let mut assumption = None;
        let mut value = raw.clone();
        if model.is_dsa() {
            if raw == "auto" {
                match self.gpu.map(|g| g.sm().is_some_and(|sm| sm >= 100)) {
                    Some(true) => value = "fp8_e4m3".into(),
                    Some(false) => value = "bfloat16".into(),
                    None => {
                        assumption = Some(
                            "for DSA models `auto` becomes fp8_e4m3 on SM100+ and bfloat16 below; the GPU is unknown"
                                .into(),
                        )
                    }
                }
            } else if raw == "bf16" {
                value = "bfloat16".into();
            }
        } else if model.architecture() == Some("DeepseekV4ForCausalLM") && raw == "auto" {
            value = "fp8_e4m3".into();
        }
        // `auto` on a checkpoint whose quantization asks for an FP8 KV cache (ModelOpt).
        if value == "auto" && model.kv_cache_quant_algo() == Some("FP8") {
            value = "fp8_e4m3".into();
        }
        if value != raw {
            why.push(format!("`{raw}` becomes `{value}` for this model"));
        }
        Resolved { value, why, assumption }
    }

    /// Bytes per KV element implied by the dtype string and the model dtype.
    pub fn kv_element_type(&self) -> String {
        match self.value("kv_cache_dtype").as_deref() {
            Some("bf16") | Some("bfloat16") => "bfloat16".into(),
            Some("auto") | None => match self.value("dtype").as_deref() {
                Some("half") | Some("float16") => "float16".into(),
                Some("float") | Some("float32") => "float32".into(),
                Some("bfloat16") => "bfloat16".into(),
                _ => "model default".into(),
            },
            Some(other) => other.into(),
        }
    }

    /// The `--disaggregation-bootstrap-port` (the prefill binds it; the decode falls back to it).
    pub fn bootstrap_port(&self) -> Option<u16> {
        self.int("disaggregation_bootstrap_port").and_then(|v| u16::try_from(v).ok())
    }

    /// The HTTP port.
    pub fn port(&self) -> Option<u16> {
        self.int("port").and_then(|v| u16::try_from(v).ok())
    }

    /// The bind address.
    pub fn bind_host(&self) -> String {
        self.value("host").unwrap_or_else(|| "127.0.0.1".into())
    }
}

/// SGLang's automatic attention backend (`_get_default_attn_backend`).
pub fn default_attention_backend(gpu: Option<Gpu>, model: &ModelFacts, topk: u32) -> Resolved<Option<String>> {
    let unknown = |what: &str| Resolved {
        value: None,
        why: vec![],
        assumption: Some(format!(
            "SGLang picks the attention backend from the GPU and the model; the {what} is unknown"
        )),
    };
    let Some(gpu) = gpu else { return unknown("GPU") };
    let Some(kind) = model.attention() else { return unknown("model's attention kind") };
    let arch = model.architecture().unwrap_or_default();
    let b = match (kind, gpu.sm()) {
        (_, None) => "aiter",
        (AttentionKind::Mla, Some(90)) => "fa3",
        (AttentionKind::Mla, Some(sm)) if sm >= 100 && DEEPSEEK_V3_ARCHS.contains(&arch) => "trtllm_mla",
        (AttentionKind::Mla, Some(sm)) if sm >= 100 => "flashinfer",
        (AttentionKind::Mla, Some(_)) => "triton",
        (_, Some(90)) if topk <= 1 => "fa3",
        (_, Some(sm)) if sm >= 100 && topk <= 1 => "trtllm_mha",
        _ => "flashinfer",
    };
    Resolved {
        value: Some(b.into()),
        why: vec![format!("SGLang's default on {} for {:?} models", gpu.as_str(), kind)],
        assumption: None,
    }
}
