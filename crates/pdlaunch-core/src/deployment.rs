//! The deployment schema: one description of a PD deployment, from which every command line is
//! rendered. Shared settings exist once; side-specific ones live on each side.
//!
//! Doc comments here become the JSON Schema's descriptions and the web form's help text; the
//! SGLang flag each field renders to is added from the flag table (`crate::flags`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::choices::*;
pub use crate::model::{AttentionKind, Geometry};
use crate::release::{Release, RouterRelease};

/// A prefill-decode disaggregated SGLang deployment: a prefill pool, a decode pool and a router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Short name, used in script names and comments (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// The SGLang release the commands are rendered for; every emitted flag must exist in it.
    #[serde(default)]
    pub sglang_version: Release,
    /// The sglang-router release the router command is rendered for.
    #[serde(default)]
    pub router_version: RouterRelease,
    /// How processes are started on each node.
    #[serde(default)]
    pub launcher: Launcher,
    /// The model both sides serve. Every field renders identically on both sides.
    pub model: Model,
    /// Settings that must be equal on both sides, written once.
    #[serde(default)]
    pub shared: Shared,
    /// The prefill pool.
    pub prefill: Side,
    /// The decode pool.
    pub decode: Side,
    /// The router in front of both pools.
    #[serde(default)]
    pub router: Router,
    /// Cluster settings of the `kubernetes` format's objects and pods.
    #[serde(default, skip_serializing_if = "Kubernetes::is_empty")]
    pub kubernetes: Kubernetes,
}

/// How a process is started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Launcher {
    /// The Python interpreter on the nodes.
    #[serde(default = "default_python")]
    pub python: String,
    /// Directory on each node where `sglang-config` YAML files are placed.
    #[serde(default = "default_config_dir")]
    pub config_dir: String,
    /// Container image of the `kubernetes` format's pods (default: SGLang's CUDA image of
    /// `sglang_version`, `lmsysorg/sglang:v<version>`; AMD GPUs need a ROCm image named here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

fn default_python() -> String {
    "python3".into()
}
fn default_config_dir() -> String {
    ".".into()
}

impl Default for Launcher {
    fn default() -> Self {
        Launcher { python: default_python(), config_dir: default_config_dir(), image: None }
    }
}

/// Cluster settings of the `kubernetes` format: where its objects go, which nodes the server pods
/// run on, and what they read from the cluster. Other formats ignore them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// Namespace of every object (default: the one `kubectl apply` is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Node labels the server pods require, such as GPU Feature Discovery's
    /// `nvidia.com/gpu.product: NVIDIA-H200`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Node taints the server pods tolerate, written as `kubectl taint` writes them:
    /// `key=value:Effect`, `key:Effect` (any value), or `key` (any value and effect).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<String>,
    /// The prefill pods' own node labels and taints, over the shared ones (for prefill and
    /// decode on different GPU models).
    #[serde(default, skip_serializing_if = "Placement::is_empty")]
    pub prefill: Placement,
    /// The decode pods' own node labels and taints, over the shared ones.
    #[serde(default, skip_serializing_if = "Placement::is_empty")]
    pub decode: Placement,
    /// Server environment variables read from Secrets, as `<secret>/<key>`: for a gated Hugging
    /// Face model, `HF_TOKEN: hf-token/token`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_env: BTreeMap<String, String>,
    /// Where the server pods keep downloaded weights, mounted as the Hugging Face cache
    /// (`/root/.cache/huggingface`) so that a restarted pod does not download them again: a
    /// PersistentVolumeClaim's name, or an absolute path on the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_cache: Option<String>,
    /// Secrets holding the credentials of a private image registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<String>,
    /// The router finds the servers' leader pods by their labels (`--service-discovery`)
    /// instead of a fixed list, so groups added by scaling a LeaderWorkerSet are served without
    /// a new router command. Every server then listens on one port, and the router gets a
    /// ServiceAccount allowed to watch the pods of `namespace`, which it needs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub service_discovery: bool,
    /// Labels added to every object and pod: a Kueue queue (`kueue.x-k8s.io/queue-name`), a
    /// team, a cost center. The `app.kubernetes.io/` labels pdlaunch writes stay its own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations of the server pods, such as `prometheus.io/scrape: "true"` for a metrics
    /// scraper (with `--enable-metrics` in `extra_args`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
    /// A node label whose values name topology domains (a rack, an NVLink or InfiniBand island;
    /// `cloud.google.com/gke-nodepool` on GKE): each group of pods, one instance, gets a domain
    /// of its own, shared with no other group (LeaderWorkerSet's exclusive topology).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_topology: Option<String>,
    /// Router pods behind the router's Service, for availability. Each routes on its own: the
    /// cache-aware policy's prefix tree is per router, so cache hits drop somewhat.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub router_replicas: u32,
}

impl Default for Kubernetes {
    fn default() -> Self {
        Kubernetes {
            namespace: None,
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            prefill: Placement::default(),
            decode: Placement::default(),
            secret_env: BTreeMap::new(),
            model_cache: None,
            image_pull_secrets: Vec::new(),
            service_discovery: false,
            labels: BTreeMap::new(),
            pod_annotations: BTreeMap::new(),
            exclusive_topology: None,
            router_replicas: 1,
        }
    }
}

impl Kubernetes {
    /// True when nothing is set (the section is then left out when written).
    pub fn is_empty(&self) -> bool {
        *self == Kubernetes::default()
    }

    /// One side's own placement.
    pub fn side(&self, role: Role) -> &Placement {
        match role {
            Role::Prefill => &self.prefill,
            Role::Decode => &self.decode,
        }
    }

    /// One side's own placement, to change.
    pub fn side_mut(&mut self, role: Role) -> &mut Placement {
        match role {
            Role::Prefill => &mut self.prefill,
            Role::Decode => &mut self.decode,
        }
    }
}

/// The nodes one side's pods run on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Node labels these pods require too; a key also in the shared `node_selector` takes this
    /// value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Node taints these pods tolerate too (`key=value:Effect`, `key:Effect` or `key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<String>,
}

impl Placement {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.node_selector.is_empty() && self.tolerations.is_empty()
    }
}

/// The served model. Both sides tokenize each request independently and exchange raw KV bytes,
/// so every field here must be identical on both sides; pdlaunch renders it once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Local directory or Hugging Face id of the weights.
    pub path: String,
    /// Tokenizer directory or id, when it differs from the model path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Tokenizer mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_mode: Option<TokenizerMode>,
    /// Hugging Face revision (branch, tag or commit) of the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Allow the model's own Python code from the hub.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trust_remote_code: bool,
    /// Weight and activation dtype.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<ModelDtype>,
    /// Weight quantization method; unset reads it from the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<Quantization>,
    /// Maximum context length in tokens; unset reads it from config.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u64>,
    /// Model name clients use in requests (must not contain `:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_name: Option<String>,
    /// Chat template name or file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// KV geometry of the model, used by rules that depend on the attention kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geometry: Option<Geometry>,
    /// A built-in model whose public `config.json` fills `geometry` (`pdlaunch model --list`
    /// prints them); an explicit `geometry` takes precedence.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::model::deserialize_preset")]
    #[schemars(schema_with = "crate::model::preset_schema")]
    pub preset: Option<String>,
}

crate::choices::unit_enum_serde!(Gpu);
crate::choices::unit_enum_serde!(Role);

/// Settings that must be identical on prefill and decode. Each renders once, identically, on
/// every server command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shared {
    /// Tokens per KV page. Always rendered explicitly, because the attention backend and the GPU
    /// change SGLang's default on each side.
    #[serde(default = "default_page_size")]
    #[schemars(range(min = 1))]
    pub page_size: u32,
    /// KV-cache element type, always rendered explicitly.
    #[serde(default = "default_kv_cache_dtype")]
    pub kv_cache_dtype: KvCacheDtype,
    /// KV transfer engine.
    #[serde(default = "default_transfer_backend")]
    pub transfer_backend: TransferBackend,
    /// Attention backend for both phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_backend: Option<AttentionBackend>,
    /// Attention backend for prefill batches (rendered on both servers: SGLang's page-size snaps
    /// read it on either side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_attention_backend: Option<AttentionBackend>,
    /// Attention backend for decode batches (rendered on both servers, for the same reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_attention_backend: Option<AttentionBackend>,
    /// Sparse-attention prefill backend (DSA models); it decides the KV row size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_prefill_backend: Option<DsaBackend>,
    /// Sparse-attention decode backend (DSA models); it decides the KV row size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_decode_backend: Option<DsaBackend>,
    /// Speculative decoding; the prefill runs the draft and ships its state, so both sides need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Speculative>,
    /// KV canary mode (extra KV regions: must match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_canary: Option<KvCanary>,
    /// Real-KV canary checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_canary_real_data: Option<KvCanaryRealData>,
    /// Unified-memory KV envelope (implies the page-major layout).
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_unified_memory: bool,
    /// Page-major KV layout.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_page_major_kv_layout: bool,
    /// Environment variables set on every server process (both sides), e.g. the staging buffer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

fn default_page_size() -> u32 {
    1
}
fn default_kv_cache_dtype() -> KvCacheDtype {
    KvCacheDtype::Auto
}
fn default_transfer_backend() -> TransferBackend {
    TransferBackend::Mooncake
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            page_size: default_page_size(),
            kv_cache_dtype: default_kv_cache_dtype(),
            transfer_backend: default_transfer_backend(),
            attention_backend: None,
            prefill_attention_backend: None,
            decode_attention_backend: None,
            dsa_prefill_backend: None,
            dsa_decode_backend: None,
            speculative: None,
            kv_canary: None,
            kv_canary_real_data: None,
            enable_unified_memory: false,
            enable_page_major_kv_layout: false,
            env: BTreeMap::new(),
        }
    }
}

/// Speculative decoding: identical on both sides, or on the decode only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Speculative {
    /// Algorithm: `EAGLE`, `EAGLE3`, `NEXTN`, `STANDALONE`, `NGRAM`, ...
    pub algorithm: String,
    /// Speculate on the decode only (SGLang's usual case): the prefill runs no draft model, and
    /// the decode drafts for itself.
    #[serde(default, skip_serializing_if = "is_false")]
    pub decode_only: bool,
    /// Draft model directory or id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_model_path: Option<String>,
    /// Draft steps per verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_steps: Option<u32>,
    /// Top-k branching of the draft tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eagle_topk: Option<u32>,
    /// Draft tokens verified per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_draft_tokens: Option<u32>,
    /// Draft KV-cache dtype.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_kv_cache_dtype: Option<KvCacheDtype>,
    /// Draft attention backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_attention_backend: Option<AttentionBackend>,
}

/// A GPU model; it decides SGLang's automatic attention backend, and with it the page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Gpu {
    A100,
    H100,
    H200,
    H20,
    H800,
    B200,
    B300,
    Gb200,
    Gb300,
    L40s,
    Mi300x,
    Mi325x,
    Mi355x,
}

impl Gpu {
    /// Compute capability major*10+minor for NVIDIA parts; `None` for AMD.
    pub fn sm(self) -> Option<u32> {
        match self {
            Gpu::A100 => Some(80),
            Gpu::L40s => Some(89),
            Gpu::H100 | Gpu::H200 | Gpu::H20 | Gpu::H800 => Some(90),
            Gpu::B200 | Gpu::Gb200 => Some(100),
            Gpu::B300 | Gpu::Gb300 => Some(103),
            Gpu::Mi300x | Gpu::Mi325x | Gpu::Mi355x => None,
        }
    }
    /// True for AMD Instinct parts (ROCm/HIP).
    pub fn is_hip(self) -> bool {
        self.sm().is_none()
    }
    /// Device memory in GiB.
    pub fn memory_gib(self) -> u32 {
        match self {
            Gpu::A100 | Gpu::H100 | Gpu::H800 => 80,
            Gpu::L40s => 48,
            Gpu::H20 => 96,
            Gpu::H200 => 141,
            Gpu::B200 | Gpu::Gb200 => 180,
            Gpu::B300 | Gpu::Gb300 => 270,
            Gpu::Mi300x => 192,
            Gpu::Mi325x | Gpu::Mi355x => 256,
        }
    }
    /// Every GPU model, in declaration order.
    pub const ALL: [Gpu; 13] = [
        Gpu::A100,
        Gpu::H100,
        Gpu::H200,
        Gpu::H20,
        Gpu::H800,
        Gpu::B200,
        Gpu::B300,
        Gpu::Gb200,
        Gpu::Gb300,
        Gpu::L40s,
        Gpu::Mi300x,
        Gpu::Mi325x,
        Gpu::Mi355x,
    ];
    /// The lowercase names used in YAML, in the order of [`Gpu::ALL`].
    pub const NAMES: &'static [&'static str] = &[
        "a100", "h100", "h200", "h20", "h800", "b200", "b300", "gb200", "gb300", "l40s", "mi300x", "mi325x", "mi355x",
    ];

    /// The lowercase name used in YAML.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    /// The GPU with this lowercase name.
    pub fn parse(name: &str) -> Option<Gpu> {
        Self::NAMES.iter().position(|n| *n == name).map(|i| Self::ALL[i])
    }
}

/// One pool (prefill or decode): identical instances, each spanning one or more nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// GPU model of this pool's nodes; it drives SGLang's automatic backend choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
    /// The server instances of this pool (xPyD: several prefill or decode instances).
    pub instances: Vec<Instance>,
    /// Tensor-parallel size of one instance (across all its nodes).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub tp: u32,
    /// Data-parallel replicas inside one instance, without DP attention.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub dp: u32,
    /// Attention data-parallel width (DP attention); 1 disables it.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub attn_dp: u32,
    /// Pipeline-parallel size.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub pp: u32,
    /// Expert-parallel size (forced to `tp` by SGLang when an all-to-all backend is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep: Option<u32>,
    /// Attention context-parallel size (prefill only).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub attn_cp: u32,
    /// Prefill context parallelism for MLA/DSA models (prefill only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_prefill_cp: bool,
    /// Decode context-parallel size.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1))]
    pub dcp: u32,
    /// MoE all-to-all backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_a2a_backend: Option<MoeA2aBackend>,
    /// DeepEP mode: `normal` suits prefill; decode wants `low_latency` (or `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deepep_mode: Option<DeepepMode>,
    /// TP size of the dense MLP layers in MoE models (1 or `tp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_dense_tp: Option<u32>,
    /// Data-parallel LM head (needs DP attention).
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_dp_lm_head: bool,
    /// Fraction of GPU memory for weights and KV cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_fraction_static: Option<f64>,
    /// Maximum concurrently running requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running_requests: Option<u32>,
    /// Chunked-prefill chunk size in tokens, -1 to disable (prefill only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunked_prefill_size: Option<i64>,
    /// Maximum tokens in one prefill batch (prefill only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prefill_tokens: Option<u64>,
    /// Largest batch captured in a CUDA graph for this side's phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_graph_max_bs: Option<u32>,
    /// Disable CUDA graphs for this side's phase.
    #[serde(default, skip_serializing_if = "is_false")]
    pub disable_cuda_graph: bool,
    /// DP load-balance method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balance_method: Option<LoadBalanceMethod>,
    /// Hierarchical (host-memory / storage) KV cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hicache: Option<HiCache>,
    /// Keep a radix cache on decode (decode only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub decode_radix_cache: bool,
    /// Offload finished decode KV to the hierarchical-cache storage (decode only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub decode_offload_kvcache: bool,
    /// Where retracted requests' KV is kept (decode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_retraction_backup: Option<RetractionBackup>,
    /// Tokens reserved per decode request (decode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_reserved_decode_tokens: Option<u32>,
    /// Extra pre-allocation slots (decode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_extra_slots: Option<u32>,
    /// Scheduler iterations between two polls of the requests whose KV is arriving (decode
    /// only); larger values poll less often. SGLang divides by it: 0 stops the decode at its
    /// first iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub decode_polling_interval: Option<u32>,
    /// Optimistic prefill attempts (prefill only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimistic_prefill_attempts: Option<u32>,
    /// Prometheus metrics.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_metrics: bool,
    /// Address the servers bind to; unset binds each node's own `host` (`0.0.0.0` binds all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_host: Option<String>,
    /// Environment variables for this side's processes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Flags pdlaunch does not model, appended verbatim after the rendered ones and checked
    /// against the target release's spec, e.g. `["--watchdog-timeout", "600"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
}

/// Hierarchical cache settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HiCache {
    /// Host-to-device cache size ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Host cache size in GB (overrides `ratio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Storage tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_backend: Option<HicacheStorageBackend>,
    /// Write policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_policy: Option<HicacheWritePolicy>,
}

/// One server instance: its ports and the nodes it spans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// The nodes of this instance; the first is node rank 0 and hosts the HTTP server.
    pub nodes: Vec<Node>,
    /// HTTP port (default 30000 on prefill, 30001 on decode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// KV bootstrap port of a prefill instance (default 8998, then 8999, ... per instance). The
    /// router and the decode side are rendered from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_port: Option<u16>,
    /// First port of the block `--dist-init-addr` reserves on node 0 (multi-node; default 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist_init_port: Option<u16>,
    /// NCCL port; set distinct values for instances that share a host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_port: Option<u16>,
}

/// One node of an instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Address other nodes, the router and the peer pool use to reach this node.
    pub host: String,
    /// GPUs this node contributes (default: tp x pp / nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub gpus: Option<u32>,
    /// GPUs installed on the machine, when known; lets pdlaunch check the GPU ranges fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_installed: Option<u32>,
    /// First GPU index used on this node (default: after the GPUs of processes rendered earlier
    /// on the same host, so a 1P1D on one machine gets distinct GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_gpu_id: Option<u32>,
    /// RDMA device(s) for KV transfer, e.g. `mlx5_0` or `mlx5_0,mlx5_1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_device: Option<String>,
}

/// The router (sglang-router / SGLang Model Gateway) in PD mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Router {
    /// Address the router listens on.
    #[serde(default = "default_router_host")]
    pub host: String,
    /// Port the router listens on (its own default, 30000, collides with SGLang's).
    #[serde(default = "default_router_port")]
    pub port: u16,
    /// Load-balancing policy for both pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RouterPolicy>,
    /// Policy for the prefill pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_policy: Option<RouterPolicy>,
    /// Policy for the decode pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_policy: Option<RouterPolicy>,
    /// Use the Python mini load balancer (debugging only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub mini_lb: bool,
    /// Environment variables for the router.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Router flags pdlaunch does not model, checked against the router release's spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Container image of the router in the `kubernetes` format (default: the router's image of
    /// `router_version`, `lmsysorg/sglang-router:v<version>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

fn default_router_host() -> String {
    "0.0.0.0".into()
}
fn default_router_port() -> u16 {
    8000
}

impl Default for Router {
    fn default() -> Self {
        Router {
            host: default_router_host(),
            port: default_router_port(),
            policy: None,
            prefill_policy: None,
            decode_policy: None,
            mini_lb: false,
            env: BTreeMap::new(),
            extra_args: Vec::new(),
            image: None,
        }
    }
}

fn one() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_false(v: &bool) -> bool {
    !*v
}

/// The two server roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Prefill,
    Decode,
}

impl Role {
    /// Both roles, prefill first.
    pub const BOTH: [Role; 2] = [Role::Prefill, Role::Decode];
    /// [`Role::BOTH`], under the name the serde impls read.
    pub const ALL: [Role; 2] = Role::BOTH;
    /// The `--disaggregation-mode` values, in the order of [`Role::BOTH`].
    pub const NAMES: &'static [&'static str] = &["prefill", "decode"];
    /// The `--disaggregation-mode` value.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    /// The other role.
    pub fn other(self) -> Role {
        match self {
            Role::Prefill => Role::Decode,
            Role::Decode => Role::Prefill,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Deployment {
    /// The side of `role`.
    pub fn side(&self, role: Role) -> &Side {
        match role {
            Role::Prefill => &self.prefill,
            Role::Decode => &self.decode,
        }
    }
    /// The side of `role`, mutably.
    pub fn side_mut(&mut self, role: Role) -> &mut Side {
        match role {
            Role::Prefill => &mut self.prefill,
            Role::Decode => &mut self.decode,
        }
    }
}

impl Side {
    /// GPUs one instance uses in all (`tp x pp`).
    pub fn gpus_per_instance(&self) -> u32 {
        self.tp.saturating_mul(self.pp)
    }
}
