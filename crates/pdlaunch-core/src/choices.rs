//! Closed value sets of SGLang options, as Rust enums. Each enum is the single list of its
//! choices: serde reads and writes the SGLang spelling, the JSON Schema lists them, the flag table
//! (`crate::flags`) points at `NAMES`, and a test checks them against SGLang's own specs.

/// Declares a choice enum whose serde names are SGLang's spellings.
macro_rules! choice_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
                 serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $s)] $var,)+
        }
        impl $name {
            /// Every choice, in SGLang's spelling.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// Every variant, in the order of `NAMES`.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// SGLang's spelling of this choice.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s,)+ }
            }
            /// Parses SGLang's spelling.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$var),)+ _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

choice_enum! {
    /// Tokenizer mode (`--tokenizer-mode`).
    TokenizerMode {
        Auto = "auto",
        Slow = "slow",
    }
}

choice_enum! {
    /// Weight and activation dtype (`--dtype`).
    ModelDtype {
        Auto = "auto",
        Half = "half",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
        Float = "float",
        Float32 = "float32",
    }
}

choice_enum! {
    /// KV-cache element type (`--kv-cache-dtype`). SGLang compares the *string* across sides.
    KvCacheDtype {
        Auto = "auto",
        Fp8E5m2 = "fp8_e5m2",
        Fp8E4m3 = "fp8_e4m3",
        Mxfp8 = "mxfp8",
        Bf16 = "bf16",
        Bfloat16 = "bfloat16",
        Nvfp4 = "nvfp4",
        Fp4MxBlock16 = "fp4_mx_block16",
        Fp4E2m1 = "fp4_e2m1",
    }
}

choice_enum! {
    /// KV transfer engine (`--disaggregation-transfer-backend`).
    TransferBackend {
        Mooncake = "mooncake",
        Nixl = "nixl",
        Ascend = "ascend",
        Fake = "fake",
        Mori = "mori",
        MooncakeTcp = "mooncake_tcp",
    }
}

choice_enum! {
    /// Attention kernel backend (`--attention-backend` and its per-phase forms).
    AttentionBackend {
        Triton = "triton",
        TorchNative = "torch_native",
        FlexAttention = "flex_attention",
        Dsa = "dsa",
        Nsa = "nsa",
        Qsa = "qsa",
        Dsv4 = "dsv4",
        Compressed = "compressed",
        Fa3 = "fa3",
        Fa4 = "fa4",
        Flashinfer = "flashinfer",
        Llada2CfgFlashinfer = "llada2_cfg_flashinfer",
        Flashmla = "flashmla",
        TrtllmMla = "trtllm_mla",
        CutedslMla = "cutedsl_mla",
        TokenspeedMla = "tokenspeed_mla",
        TrtllmMha = "trtllm_mha",
        HpcOps = "hpc_ops",
        MinicpmFlashattn = "minicpm_flashattn",
        MinicpmFlashinfer = "minicpm_flashinfer",
        Aiter = "aiter",
        Wave = "wave",
        IntelAmx = "intel_amx",
        Ascend = "ascend",
        IntelXpu = "intel_xpu",
        CutlassMla = "cutlass_mla",
        DualChunkFlashAttn = "dual_chunk_flash_attn",
    }
}

choice_enum! {
    /// Sparse-attention (DSA) kernel backend for DeepSeek-V3.2-class models.
    DsaBackend {
        FlashmlaSparse = "flashmla_sparse",
        FlashmlaSparseQ8 = "flashmla_sparse_q8",
        FlashmlaKv = "flashmla_kv",
        FlashmlaAuto = "flashmla_auto",
        FlashinferSparseMla = "flashinfer_sparse_mla",
        TritonSparseMla = "triton_sparse_mla",
        Fa3 = "fa3",
        Tilelang = "tilelang",
        Triton = "triton",
        Aiter = "aiter",
        Trtllm = "trtllm",
        IntelXpu = "intel_xpu",
    }
}

choice_enum! {
    /// KV canary mode (`--kv-canary`).
    KvCanary {
        None = "none",
        Log = "log",
        Raise = "raise",
    }
}

choice_enum! {
    /// Real-KV canary checks (`--kv-canary-real-data`).
    KvCanaryRealData {
        None = "none",
        Partial = "partial",
        All = "all",
    }
}

choice_enum! {
    /// MoE all-to-all backend (`--moe-a2a-backend`).
    MoeA2aBackend {
        None = "none",
        Deepep = "deepep",
        Mooncake = "mooncake",
        Nixl = "nixl",
        Mori = "mori",
        AscendFuseep = "ascend_fuseep",
        Flashinfer = "flashinfer",
        Megamoe = "megamoe",
        DeepepV2 = "deepep_v2",
        Pplx = "pplx",
        AscendTp = "ascend_tp",
        FlashinferMegamoe = "flashinfer_megamoe",
    }
}

choice_enum! {
    /// DeepEP dispatch mode (`--deepep-mode`).
    DeepepMode {
        Auto = "auto",
        Normal = "normal",
        LowLatency = "low_latency",
    }
}

choice_enum! {
    /// How a DP server spreads requests over its DP ranks (`--load-balance-method`).
    LoadBalanceMethod {
        Auto = "auto",
        RoundRobin = "round_robin",
        FollowBootstrapRoom = "follow_bootstrap_room",
        TotalRequests = "total_requests",
        TotalTokens = "total_tokens",
        ShortestQueue = "shortest_queue",
        MinimumTokens = "minimum_tokens",
    }
}

choice_enum! {
    /// Storage tier behind the hierarchical cache (`--hicache-storage-backend`).
    HicacheStorageBackend {
        File = "file",
        Sim = "sim",
        Mooncake = "mooncake",
        NpuMemcache = "npu_memcache",
        Hf3fs = "hf3fs",
        Nixl = "nixl",
        Aibrix = "aibrix",
        Dynamic = "dynamic",
        Eic = "eic",
        Simm = "simm",
        Mori = "mori",
        Shm = "shm",
        Tensorcast = "tensorcast",
        Seaweedfs = "seaweedfs",
    }
}

choice_enum! {
    /// Hierarchical-cache write policy (`--hicache-write-policy`).
    HicacheWritePolicy {
        WriteBack = "write_back",
        WriteThrough = "write_through",
        WriteThroughSelective = "write_through_selective",
    }
}

choice_enum! {
    /// Where a decode server keeps KV of retracted requests.
    RetractionBackup {
        CpuTensor = "cpu_tensor",
        HostPool = "host_pool",
        None = "none",
    }
}

choice_enum! {
    /// Weight quantization method (`--quantization`).
    Quantization {
        Awq = "awq",
        Fp8 = "fp8",
        Mxfp8 = "mxfp8",
        Gptq = "gptq",
        GptqMarlin = "gptq_marlin",
        AwqMarlin = "awq_marlin",
        Bitsandbytes = "bitsandbytes",
        Gguf = "gguf",
        Modelopt = "modelopt",
        ModeloptFp8 = "modelopt_fp8",
        ModeloptFp4 = "modelopt_fp4",
        Nvfp4Online = "nvfp4_online",
        ModeloptMixed = "modelopt_mixed",
        PetitNvfp4 = "petit_nvfp4",
        W8a8Int8 = "w8a8_int8",
        W8a8Fp8 = "w8a8_fp8",
        MoeWna16 = "moe_wna16",
        W4afp8 = "w4afp8",
        Mxfp4 = "mxfp4",
        AutoRound = "auto-round",
        AutoRoundInt8 = "auto-round-int8",
        CompressedTensors = "compressed-tensors",
        Modelslim = "modelslim",
        MxfpW4a8 = "mxfp_w4a8",
        Quark = "quark",
        QuarkInt4fp8Moe = "quark_int4fp8_moe",
        QuarkMxfp4 = "quark_mxfp4",
        MlxQ4 = "mlx_q4",
        MlxQ8 = "mlx_q8",
        Unquant = "unquant",
        Humming = "humming",
        Marlin = "marlin",
        Qoq = "qoq",
    }
}

choice_enum! {
    /// Router load-balancing policy.
    RouterPolicy {
        Random = "random",
        RoundRobin = "round_robin",
        CacheAware = "cache_aware",
        PowerOfTwo = "power_of_two",
        Manual = "manual",
        Bucket = "bucket",
        ConsistentHashing = "consistent_hashing",
        PrefixHash = "prefix_hash",
    }
}
