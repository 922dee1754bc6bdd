//! PD015: decode KV offload without a storage backend, or on a prefill server.

use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;

const OFFLOAD: &str = "disaggregation_decode_enable_offload_kvcache";

/// `--disaggregation-decode-enable-offload-kvcache` writes finished decode KV to the hierarchical
/// cache's storage tier; SGLang refuses it at startup without `--hicache-storage-backend`, and on
/// any server that is not a decode.
pub static RULE: Rule = Rule {
    code: "PD015",
    name: "decode-offload-without-storage",
    severity: Severity::Error,
    summary: "decode KV offload without `--hicache-storage-backend`, or offload on a prefill",
    explanation: "Decode offload pushes the KV a decode produced into the HiCache storage tier (file, Mooncake \
        store, ...) so that the next turn's prefill finds it. Without a storage backend there is nowhere to \
        write, and on a prefill the option makes no sense; SGLang rejects both at startup.",
    sglang_errors: &[
        "The argument disaggregation-decode-enable-offload-kvcache is only supported when hicache-storage-backend is provided.",
        "The argument disaggregation-decode-enable-offload-kvcache is only supported for decode side.",
    ],
    fix: "Give the decode a `decode.hicache.storage_backend` (the prefill usually uses the same one), and do not \
        set `prefill.decode_offload_kvcache`.",
    check: Check::Deployment(check),
};

/// Where `dest` was set on `s`, or `fallback`.
fn origin(s: &ServerView, dest: &str, fallback: &str) -> String {
    s.origin(dest).map_or_else(|| fallback.to_owned(), ToString::to_string)
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.switch(OFFLOAD)) {
        if s.role != Some(crate::deployment::Role::Decode) {
            let message = format!(
                "{} has --disaggregation-decode-enable-offload-kvcache but is a {} server",
                s.label,
                s.role.map_or("non-PD", |r| r.as_str())
            );
            let fix =
                format!("remove it from this server (`{}`)", origin(s, OFFLOAD, "prefill.decode_offload_kvcache"));
            let mut f = Finding::new(&RULE, message, fix).at(s, OFFLOAD);
            f.sglang_error = Some(RULE.sglang_errors[1]);
            out.push(f);
            continue;
        }
        if s.value("hicache_storage_backend").is_some() {
            continue;
        }
        let storage: Vec<String> = ctx
            .heads(crate::deployment::Role::Prefill)
            .filter_map(|p| p.value("hicache_storage_backend").map(|b| format!("{} uses `{b}`", p.label)))
            .collect();
        let message = format!(
            "{} has --disaggregation-decode-enable-offload-kvcache but no --hicache-storage-backend{}",
            s.label,
            if storage.is_empty() { String::new() } else { format!(" ({})", storage.join(", ")) }
        );
        let fix = "set `decode.hicache.storage_backend` (e.g. `file` or `mooncake`, usually the prefill's), or \
            remove `decode.decode_offload_kvcache`";
        out.push(Finding::new(&RULE, message, fix).at(s, OFFLOAD));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::choices::HicacheStorageBackend;
    use crate::deployment::HiCache;
    use crate::rules::testing::*;

    fn storage() -> Option<HiCache> {
        Some(HiCache {
            ratio: Some(2.0),
            size: None,
            storage_backend: Some(HicacheStorageBackend::File),
            write_policy: None,
        })
    }

    #[test]
    fn offload_with_storage_passes() {
        assert!(!codes(&llama()).contains(&"PD015"));
        // SGLang's CI pattern: prefill HiCache with a file tier, decode offload to the same tier.
        let mut d = llama();
        d.prefill.hicache = storage();
        d.decode.hicache = storage();
        d.decode.decode_offload_kvcache = true;
        assert!(findings(&d, "PD015").is_empty(), "{:?}", findings(&d, "PD015"));
    }

    #[test]
    fn offload_without_storage_is_caught() {
        let mut d = llama();
        d.prefill.hicache = storage();
        d.decode.decode_offload_kvcache = true;
        let f = findings(&d, "PD015");
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("decode[0] has --disaggregation-decode-enable-offload-kvcache but no"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("prefill[0] uses `file`"), "{}", f[0].message);
        assert!(f[0].fix.contains("decode.hicache.storage_backend"));
    }

    #[test]
    fn offload_on_prefill_is_caught() {
        let mut d = llama();
        d.prefill.decode_offload_kvcache = true;
        let f = findings(&d, "PD015");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("prefill[0]") && f[0].message.contains("prefill server"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().ends_with("only supported for decode side."));
        assert!(f[0].fix.contains("prefill.decode_offload_kvcache"), "{}", f[0].fix);
    }
}
