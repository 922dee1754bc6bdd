//! KV element types as SGLang stores them, and their byte widths.

use serde::{Deserialize, Serialize};

/// The element type of the KV pools (after SGLang resolves `--kv-cache-dtype auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// bfloat16, 2 bytes.
    Bf16,
    /// float16, 2 bytes.
    Fp16,
    /// float32, 4 bytes (a model served in full precision with `auto`).
    Fp32,
    /// FP8 E4M3, stored by SGLang as `uint8`.
    Fp8E4m3,
    /// FP8 E5M2, stored by SGLang as `uint8`.
    Fp8E5m2,
}

/// A KV dtype string the smoke test cannot model (FP4 and MX formats keep separate scale buffers).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("KV cache dtype `{0}` is not covered by the smoke test (FP4/MX formats keep separate scale buffers); use bf16, fp16, fp8_e4m3 or fp8_e5m2")]
pub struct UnsupportedDtype(pub String);

impl KvDtype {
    /// Bytes per element.
    pub fn width(self) -> u32 {
        match self {
            KvDtype::Bf16 | KvDtype::Fp16 => 2,
            KvDtype::Fp32 => 4,
            KvDtype::Fp8E4m3 | KvDtype::Fp8E5m2 => 1,
        }
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp32 => "fp32",
            KvDtype::Fp8E4m3 => "fp8_e4m3",
            KvDtype::Fp8E5m2 => "fp8_e5m2",
        }
    }

    /// The pool element type for SGLang's `--kv-cache-dtype` string and `--dtype` value. `auto`
    /// follows the model dtype; an unknown checkpoint dtype is taken as bf16, which the returned
    /// note says.
    pub fn resolve(
        kv_cache_dtype: &str,
        model_dtype: Option<&str>,
    ) -> Result<(KvDtype, Option<String>), UnsupportedDtype> {
        match kv_cache_dtype {
            "auto" => match model_dtype.unwrap_or("auto") {
                "bfloat16" => Ok((KvDtype::Bf16, None)),
                "half" | "float16" => Ok((KvDtype::Fp16, None)),
                "float" | "float32" => Ok((KvDtype::Fp32, None)),
                other => Ok((
                    KvDtype::Bf16,
                    Some(format!(
                        "kv_cache_dtype auto with --dtype {other}: the checkpoint's dtype is taken as bfloat16"
                    )),
                )),
            },
            "bf16" | "bfloat16" => Ok((KvDtype::Bf16, None)),
            "fp16" | "float16" | "half" => Ok((KvDtype::Fp16, None)),
            "fp8_e4m3" => Ok((KvDtype::Fp8E4m3, None)),
            "fp8_e5m2" => Ok((KvDtype::Fp8E5m2, None)),
            other => Err(UnsupportedDtype(other.to_owned())),
        }
    }

    /// The code stored in canary headers.
    pub fn code(self) -> u8 {
        match self {
            KvDtype::Bf16 => 1,
            KvDtype::Fp16 => 2,
            KvDtype::Fp32 => 3,
            KvDtype::Fp8E4m3 => 4,
            KvDtype::Fp8E5m2 => 5,
        }
    }

    /// The dtype of a canary header code.
    pub fn from_code(c: u8) -> Option<KvDtype> {
        [KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp32, KvDtype::Fp8E4m3, KvDtype::Fp8E5m2]
            .into_iter()
            .find(|d| d.code() == c)
    }

    /// A dtype of another width, for the negative control (2-byte and 4-byte types become FP8,
    /// FP8 becomes bf16).
    pub fn other_width(self) -> KvDtype {
        match self {
            KvDtype::Bf16 | KvDtype::Fp16 | KvDtype::Fp32 => KvDtype::Fp8E4m3,
            KvDtype::Fp8E4m3 | KvDtype::Fp8E5m2 => KvDtype::Bf16,
        }
    }
}

impl std::fmt::Display for KvDtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(KvDtype::Bf16.width(), 2);
        assert_eq!(KvDtype::Fp16.width(), 2);
        assert_eq!(KvDtype::Fp8E4m3.width(), 1);
        assert_eq!(KvDtype::Fp8E5m2.width(), 1);
        for d in [KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp32, KvDtype::Fp8E4m3, KvDtype::Fp8E5m2] {
            assert_ne!(d.other_width().width(), d.width());
        }
    }

    #[test]
    fn resolve_strings() {
        assert_eq!(KvDtype::resolve("auto", Some("bfloat16")).unwrap(), (KvDtype::Bf16, None));
        assert_eq!(KvDtype::resolve("auto", Some("half")).unwrap().0, KvDtype::Fp16);
        let (d, note) = KvDtype::resolve("auto", None).unwrap();
        assert_eq!(d, KvDtype::Bf16);
        assert!(note.is_some());
        assert_eq!(KvDtype::resolve("bf16", None).unwrap().0, KvDtype::Bf16);
        assert_eq!(KvDtype::resolve("fp8_e5m2", None).unwrap().0, KvDtype::Fp8E5m2);
        assert!(KvDtype::resolve("fp4_e2m1", None).is_err());
    }
}
