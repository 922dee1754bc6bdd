//! Closed value sets of SGLang options, as Rust enums. Each enum is the single list of its
//! choices: serde reads and writes the SGLang spelling, the JSON Schema lists them, the flag table
//! (`crate::flags`) points at `NAMES`, and a test checks them against SGLang's own specs.

use std::fmt;

use serde::de::{self, DeserializeSeed, EnumAccess, Unexpected, VariantAccess, Visitor};

/// Reads an enum of unit variants named `names` as serde's derive reads one (a name, or a map of
/// one name to nothing) and gives the variant's index, with the derive's errors. Every choice enum
/// reads through this one visitor: derived, each would carry its own copy of the reader, which
/// adds up in the browser app.
pub(crate) fn deserialize_unit_enum<'de, D: serde::Deserializer<'de>>(
    d: D,
    name: &'static str,
    names: &'static [&'static str],
) -> Result<usize, D::Error> {
    d.deserialize_enum(name, names, UnitEnum { name, names })
}

struct UnitEnum {
    name: &'static str,
    names: &'static [&'static str],
}

impl<'de> Visitor<'de> for UnitEnum {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "enum {}", self.name)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<usize, A::Error> {
        let (i, variant) = data.variant_seed(VariantName(self.names))?;
        variant.unit_variant()?;
        Ok(i)
    }
}

/// A variant's name (or index), as the derive's field visitor reads it.
struct VariantName(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for VariantName {
    type Value = usize;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for VariantName {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
        match usize::try_from(v) {
            Ok(i) if i < self.0.len() => Ok(i),
            _ => Err(E::invalid_value(Unexpected::Unsigned(v), &IndexBound(self.0.len()))),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        self.0.iter().position(|n| *n == v).ok_or_else(|| E::unknown_variant(v, self.0))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<usize, E> {
        self.0
            .iter()
            .position(|n| n.as_bytes() == v)
            .ok_or_else(|| E::unknown_variant(&String::from_utf8_lossy(v), self.0))
    }
}

/// "variant index 0 <= i < N", the derive's words for an index out of range.
struct IndexBound(usize);

impl de::Expected for IndexBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "variant index 0 <= i < {}", self.0)
    }
}

/// Serde for an enum of unit variants: `Self::NAMES[i]` names `Self::ALL[i]`, the variant whose
/// discriminant is `i`. It reads and writes what serde's derive would with those names as
/// `rename`s (the `rename`s stay for the JSON Schema; a test checks the two agree).
macro_rules! unit_enum_serde {
    ($name:ident) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::choices::deserialize_unit_enum(d, stringify!($name), Self::NAMES).map(|i| Self::ALL[i])
            }
        }
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_unit_variant(stringify!($name), *self as u32, Self::NAMES[*self as usize])
            }
        }
    };
}
pub(crate) use unit_enum_serde;

/// Declares a choice enum whose serde names are SGLang's spellings.
macro_rules! choice_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, schemars::JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $s)] $var,)+
        }
        unit_enum_serde!($name);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// [`KvCacheDtype`] as serde's derive would read it.
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    enum Derived {
        #[serde(rename = "auto")]
        Auto,
        #[serde(rename = "fp8_e5m2")]
        Fp8E5m2,
        #[serde(rename = "fp8_e4m3")]
        Fp8E4m3,
        #[serde(rename = "mxfp8")]
        Mxfp8,
        #[serde(rename = "bf16")]
        Bf16,
        #[serde(rename = "bfloat16")]
        Bfloat16,
        #[serde(rename = "nvfp4")]
        Nvfp4,
        #[serde(rename = "fp4_mx_block16")]
        Fp4MxBlock16,
        #[serde(rename = "fp4_e2m1")]
        Fp4E2m1,
    }

    /// The shared reader answers every input as the derive does: the same variant, or the same
    /// error at the same place.
    #[test]
    fn choice_enums_read_as_derived() {
        assert_eq!(KvCacheDtype::NAMES.len(), 9, "the twin above lists every variant");
        for text in [
            r#""auto""#,
            r#""fp4_e2m1""#,
            r#""fp8""#,
            r#""""#,
            r#"{"nvfp4": null}"#,
            r#"{"nvfp4": 1}"#,
            r#"{"x": null}"#,
            r#"{"auto": null, "bf16": null}"#,
            r#"{}"#,
            "3",
            "99",
            "-1",
            "1.5",
            "null",
            "true",
            "[]",
            r#"["auto"]"#,
            "",
            r#""auto"#,
            r#"  "bf16"  "#,
        ] {
            let ours =
                serde_json::from_str::<KvCacheDtype>(text).map(|v| v.as_str().to_owned()).map_err(|e| e.to_string());
            let derived = serde_json::from_str::<Derived>(text).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
            match (&ours, &derived) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(KvCacheDtype::parse(a).map(|v| format!("{v:?}")), Some(b.clone()), "{text}")
                }
                _ => assert_eq!(ours.err(), derived.err(), "{text}"),
            }
        }
    }

    /// `ALL[i]` reads and writes as `NAMES[i]`, and the JSON Schema (made from the `rename`s)
    /// lists exactly `NAMES`.
    fn names_agree<E>(all: &[E], names: &[&str])
    where
        E: schemars::JsonSchema + serde::Serialize + serde::de::DeserializeOwned + PartialEq + fmt::Debug,
    {
        assert_eq!(all.len(), names.len());
        for (v, name) in all.iter().zip(names) {
            assert_eq!(serde_json::to_value(v).unwrap(), *name, "{v:?}");
            assert_eq!(&serde_json::from_value::<E>(serde_json::json!(name)).unwrap(), v);
        }
        fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(o) => {
                    for (k, x) in o {
                        match (k.as_str(), x) {
                            ("const", serde_json::Value::String(s)) => out.push(s.clone()),
                            ("enum", serde_json::Value::Array(a)) => {
                                out.extend(a.iter().filter_map(|s| s.as_str().map(str::to_owned)))
                            }
                            _ => strings(x, out),
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
                _ => {}
            }
        }
        let mut listed = Vec::new();
        strings(&serde_json::to_value(schemars::schema_for!(E)).unwrap(), &mut listed);
        assert_eq!(listed, names, "{}", std::any::type_name::<E>());
    }

    #[test]
    fn unit_enums_name_their_variants_once() {
        macro_rules! check {
            ($($t:ty),+) => { $(names_agree(&<$t>::ALL, <$t>::NAMES);)+ };
        }
        check!(
            TokenizerMode,
            ModelDtype,
            KvCacheDtype,
            TransferBackend,
            AttentionBackend,
            DsaBackend,
            KvCanary,
            KvCanaryRealData,
            MoeA2aBackend,
            DeepepMode,
            LoadBalanceMethod,
            HicacheStorageBackend,
            HicacheWritePolicy,
            RetractionBackup,
            Quantization,
            RouterPolicy
        );
        use crate::deployment::{AttentionKind, Gpu, Role};
        use crate::release::{Release, RouterRelease};
        check!(AttentionKind, Gpu, Role, Release, RouterRelease);
    }
}
