//! PD014: hierarchical cache on a decode server without the decode radix cache.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// A decode server forces the chunk cache (`disable_radix_cache = True`) unless the decode radix
/// cache is enabled, and the hierarchical cache cannot be combined with a disabled radix cache.
pub static RULE: Rule = Rule {
    code: "PD014",
    name: "decode-hicache-without-radix",
    severity: Severity::Error,
    summary: "`--enable-hierarchical-cache` on the decode without `--disaggregation-decode-enable-radix-cache`",
    explanation: "SGLang turns the radix cache off on every decode server (\"KV cache is forced as chunk cache \
        for decode server\") unless `--disaggregation-decode-enable-radix-cache` is given. The hierarchical \
        cache extends the radix cache, so the decode refuses to start with a message that names \
        `--disable-radix-cache`, a flag the user never passed. To write finished decode KV to a storage tier \
        without a decode radix cache, use `--disaggregation-decode-enable-offload-kvcache` instead.",
    sglang_errors: &[
        "The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be used at the same time. Please use only one of them.",
    ],
    fix: "On the decode, either set `decode.decode_radix_cache: true` next to `decode.hicache`, use \
        `decode.decode_offload_kvcache` with a storage backend instead, or remove `decode.hicache`.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in ctx.heads(Role::Decode) {
        if !d.switch("enable_hierarchical_cache") || d.switch("disaggregation_decode_enable_radix_cache") {
            continue;
        }
        let message = format!(
            "{} has --enable-hierarchical-cache but not --disaggregation-decode-enable-radix-cache, so SGLang \
             forces the chunk cache (disable_radix_cache=True) and rejects the combination",
            d.label
        );
        let at = d.origin("enable_hierarchical_cache").map_or_else(|| "decode.hicache".to_owned(), ToString::to_string);
        // Older releases have no decode radix cache: the only way out is to drop the hierarchical cache.
        let fix = if d.spec().by_dest("disaggregation_decode_enable_radix_cache").is_some() {
            format!(
                "set `decode.decode_radix_cache: true`, or remove the decode's hierarchical cache (`{at}`), or \
                 offload with `decode.decode_offload_kvcache` and a `decode.hicache.storage_backend`"
            )
        } else {
            format!(
                "remove the decode's hierarchical cache (`{at}`): SGLang {} has no decode radix cache",
                d.release.as_str()
            )
        };
        out.push(Finding::new(&RULE, message, fix).at(d, "enable_hierarchical_cache"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::deployment::HiCache;
    use crate::rules::testing::*;

    fn hicache() -> Option<HiCache> {
        Some(HiCache { ratio: Some(2.0), size: None, storage_backend: None, write_policy: None })
    }

    #[test]
    fn prefill_hicache_and_decode_with_radix_pass() {
        assert!(!codes(&llama()).contains(&"PD014"));
        let mut d = llama();
        d.prefill.hicache = hicache();
        assert!(findings(&d, "PD014").is_empty());
        d.decode.hicache = hicache();
        d.decode.decode_radix_cache = true;
        assert!(findings(&d, "PD014").is_empty());
    }

    #[test]
    fn decode_hicache_alone_is_caught() {
        let mut d = llama();
        d.decode.hicache = hicache();
        let f = findings(&d, "PD014");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.starts_with("decode[0] has --enable-hierarchical-cache"), "{}", f[0].message);
        assert!(
            f[0].fix.contains("decode.decode_radix_cache: true") && f[0].fix.contains("`decode.hicache`"),
            "{}",
            f[0].fix
        );
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "decode.hicache"));
    }
}
