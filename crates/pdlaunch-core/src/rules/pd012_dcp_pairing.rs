//! PD012: decode context parallelism (DCP) in a combination SGLang refuses.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{AttentionKind, Role};
use crate::effective::ServerView;

/// SGLang's DCP support in PD is narrow: equal DCP sizes (matching ranks), or a DCP-1 prefill
/// feeding a DCP>1 decode of an MLA model, which the prefill relayouts token by token.
///
/// The decode server refuses a wrong transfer backend or a radix/hierarchical cache at startup;
/// the decode's first request refuses a non-MLA pool or a prefill with attention CP; the prefill's
/// bootstrap thread refuses other size pairs when the decode registers. On the relayout path the
/// prefill pairs its KV entries one by one with the decode's (`prepare_dcp_token_item_lens`), so
/// a draft KV on one side only, or a different per-token KV size, fails every transfer.
pub static RULE: Rule = Rule {
    code: "PD012",
    name: "dcp-pairing",
    severity: Severity::Error,
    summary: "decode context parallelism (`--dcp-size`) is paired or configured in a way SGLang refuses",
    explanation: "Allowed: the same DCP size on both sides, or DCP 1 on the prefill and DCP > 1 on the decode \
        for an MLA model. A DCP > 1 decode also needs an MLA KV pool, a prefill with attention CP 1, the \
        Mooncake or NIXL transfer backend (or `fake` for synthetic benchmarks) and the chunk cache (no decode \
        radix cache, no hierarchical cache). Startup checks fail the decode immediately; the pairing checks \
        fail on the first request, in the decode scheduler or in the prefill's bootstrap thread (requests then \
        hang until the bootstrap timeout). On the 1 -> N relayout the prefill pairs its KV entries with the \
        decode's one by one: speculative decoding on one side only (the draft's KV entries on that side alone), \
        or a different KV element size or model, fails each transfer, and so do draft KV widths that differ \
        between the sides' ranks.",
    sglang_errors: &[
        "Unsupported PD DCP topology: {self.dcp_size} -> {dst_dcp_size}",
        "PD decode DCP requires an MLA or hybrid-MLA KV pool.",
        "PD decode DCP currently requires prefill attention CP=1, got {info.attn_cp_size}.",
        "PD decode DCP requires --disaggregation-transfer-backend mooncake, nixl, or fake for synthetic benchmarking, got {cfg.disaggregation_transfer_backend!r}.",
        "PD decode DCP currently requires chunk cache; --disaggregation-decode-enable-radix-cache is not supported.",
        "PD decode DCP currently requires chunk cache; --enable-hierarchical-cache is not supported.",
        "PD DCP requires the decode to register one KV entry per prefill entry: src={num_entries} (draft={num_draft}), dst={len(dst_page_item_lens)}",
        "PD DCP source/destination KV geometry differs at entry {i}: src token bytes={src_token_lens[i]}, dst token bytes={dst_item_len // dst_page_scale} (dst item_len={dst_item_len}, page scale={dst_page_scale})",
        "Ascend PD DCP destination geometry differs at entry {entry}: expected={expected_dst_bytes}, actual={dst_kv_item_lens[entry]}",
        "NPU DSA PD supports prefill DCP 1 -> decode DCP N only, got prefill={self.dcp_size}, decode={dst_dcp_size}",
        "PD DCP draft head slicing is unsupported for pure MLA: dummy prefill senders may omit draft head shards",
        "PD DCP draft KV head shards must divide evenly",
        "PD decode DCP requires --disaggregation-transfer-backend mooncake, nixl, mori, ascend, or fake for synthetic benchmarking, got {cfg.disaggregation_transfer_backend!r}.",
    ],
    fix: "Use equal `prefill.dcp`/`decode.dcp`, or `prefill.dcp: 1` with an MLA model; on a DCP decode keep \
        `shared.transfer_backend` mooncake or nixl and drop `decode.decode_radix_cache` and `decode.hicache`; \
        relayout to a DCP decode from a prefill of the same model, KV dtype and speculative settings.",
    check: Check::Deployment(check),
};

/// Transfer backends a DCP decode accepts (`mooncake_tcp` is rewritten to `mooncake` before the check).
const DCP_BACKENDS: &[&str] = &["mooncake", "mooncake_tcp", "nixl", "fake"];
/// Those that 0.5.23 added (every backend it offers).
const DCP_BACKENDS_0_5_23: &[&str] = &["mori", "ascend"];

/// A finding quoting the `i`-th SGLang text.
fn finding(i: usize, message: String, fix: impl Into<String>) -> Finding {
    let mut f = Finding::new(&RULE, message, fix);
    f.sglang_error = Some(RULE.sglang_errors[i]);
    f
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pd, dd) = (p.size("dcp_size"), d.size("dcp_size"));
        // 1 -> N is the relayout path; its MLA requirement is the decode-side check below.
        if pd != dd && !(pd == 1 && dd > 1) {
            let message = format!("{} has dcp_size={pd} and {} has dcp_size={dd}", p.label, d.label);
            let fix = if dd == 1 {
                format!("set `prefill.dcp` to 1 (DCP rarely helps a prefill), or `decode.dcp` to {pd}")
            } else {
                format!("set `decode.dcp` to {pd} (equal sizes), or `prefill.dcp` to 1 (MLA models only)")
            };
            out.push(finding(0, message, fix).at(p, "dcp_size").at(d, "dcp_size"));
        }
        if pd == 1 && dd > 1 {
            relayout_checks(p, d, dd, &mut out);
        }
        let pcp = p.size("attn_cp_size");
        if dd > 1 && pcp != 1 {
            let message = format!("{} has dcp_size={dd} but {} has attn_cp_size={pcp}", d.label, p.label);
            let fix = "set `prefill.attn_cp` to 1 (and drop `prefill.enable_prefill_cp`), or `decode.dcp` to 1";
            out.push(finding(2, message, fix).at(d, "dcp_size").at(p, "attn_cp_size"));
        }
    }
    for d in ctx.heads(Role::Decode) {
        let dd = d.size("dcp_size");
        if dd > 1 {
            decode_checks(ctx, d, dd, &mut out);
        }
    }
    out
}

/// The entry-by-entry pairing of the 1 -> N relayout: the same entries (a draft's on both sides or
/// neither), of the same per-token size (one model, one KV element type).
fn relayout_checks(p: &ServerView, d: &ServerView, dd: u32, out: &mut Vec<Finding>) {
    let speculates = |s: &ServerView| {
        s.value("speculative_algorithm").filter(|a| !a.eq_ignore_ascii_case("none") && !a.eq_ignore_ascii_case("null"))
    };
    if let (Some(a), None) | (None, Some(a)) = (speculates(p), speculates(d)) {
        let (on, off) = if speculates(p).is_some() { (p, d) } else { (d, p) };
        let message = format!(
            "{} relayouts to {} (dcp_size={dd}) but only {} speculates ({a}): its draft KV entries have no \
             counterpart on {}",
            p.label, d.label, on.label, off.label
        );
        let fix = "speculate on both sides (`shared.speculative` without `decode_only`), or on neither, with a DCP decode";
        out.push(finding(6, message, fix).at(d, "dcp_size").at(on, "speculative_algorithm"));
    }
    let (pm, dm) = (p.value("model_path"), d.value("model_path"));
    let (pe, de) = (p.kv_element_type(), d.kv_element_type());
    let sizes = (nibbles(&pe), nibbles(&de));
    if pm != dm || matches!(sizes, (Some(a), Some(b)) if a != b) {
        let what = if pm != dm {
            format!("models {} and {}", pm.unwrap_or_default(), dm.unwrap_or_default())
        } else {
            format!("KV element types {pe} and {de}")
        };
        let message = format!(
            "{} relayouts to {} (dcp_size={dd}) with {what}: the per-token KV sizes of the paired entries differ",
            p.label, d.label
        );
        let fix = "give both sides the same model and `--kv-cache-dtype` (`model.path`, `shared.kv_cache_dtype`)";
        out.push(finding(7, message, fix).at(d, "dcp_size").at(p, "kv_cache_dtype").at(d, "kv_cache_dtype"));
    }
}

/// The size of a KV element type in half-bytes, when the type says it (`model default` does not).
fn nibbles(element: &str) -> Option<u32> {
    match element {
        "nvfp4" | "fp4_mx_block16" => Some(1),
        "fp8_e4m3" | "fp8_e5m2" | "mxfp8" => Some(2),
        "bfloat16" | "float16" => Some(4),
        "float32" => Some(8),
        _ => None,
    }
}

/// The checks a DCP > 1 decode makes on its own (startup) and against the KV pool kind.
fn decode_checks(ctx: &Context, d: &ServerView, dd: u32, out: &mut Vec<Finding>) {
    let mla = ctx.model.attention().map(|k| k == AttentionKind::Mla);
    let at = |dest: &str, fallback: &str| d.origin(dest).map_or_else(|| fallback.to_owned(), ToString::to_string);
    match mla {
        Some(true) => {}
        Some(false) => {
            let message = format!("{} has dcp_size={dd} but the model is not MLA (DCP shards the MLA latent)", d.label);
            let fix = format!("set the decode's DCP size to 1 (`{}`)", at("dcp_size", "decode.dcp"));
            out.push(finding(1, message, fix).at(d, "dcp_size"));
        }
        None => {
            let message = format!(
                "{} has dcp_size={dd}; model geometry unknown, MLA requirement not checked (DCP needs an MLA model)",
                d.label
            );
            let fix = "set `model.geometry.attention` so that pdlaunch can check the MLA requirement";
            out.push(finding(1, message, fix).severity(Severity::Note).at(d, "dcp_size").or_preset(ctx));
        }
    }
    let backend = d.value("disaggregation_transfer_backend").unwrap_or_default();
    let newer = d.release >= crate::release::Release::V0_5_23 && DCP_BACKENDS_0_5_23.contains(&backend.as_str());
    if !DCP_BACKENDS.contains(&backend.as_str()) && !newer {
        let message = format!("{} has dcp_size={dd} with transfer backend `{backend}`", d.label);
        let fix = match at("disaggregation_transfer_backend", "shared.transfer_backend") {
            o if o == "shared.transfer_backend" => format!("set `{o}` to `mooncake` or `nixl`"),
            o => format!("remove the override at `{o}` and keep `shared.transfer_backend` at `mooncake` or `nixl`"),
        };
        out.push(finding(3, message, fix).at(d, "dcp_size").at(d, "disaggregation_transfer_backend"));
    }
    for (i, dest, field) in [
        (4, "disaggregation_decode_enable_radix_cache", "decode.decode_radix_cache"),
        (5, "enable_hierarchical_cache", "decode.hicache"),
    ] {
        if d.switch(dest) {
            let flag = d.spec().by_dest(dest).map_or(dest, |f| f.flags[0].as_str());
            let message = format!("{} has dcp_size={dd} together with {flag}", d.label);
            let fix = format!("remove `{}` from the decode, or set `decode.dcp` to 1", at(dest, field));
            out.push(finding(i, message, fix).at(d, "dcp_size").at(d, dest));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::deployment::HiCache;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn no_dcp_and_mla_one_to_n_pass() {
        assert!(!codes(&llama()).contains(&"PD012"));
        assert!(!codes(&deepseek()).contains(&"PD012"));
        let mut d = deepseek();
        d.decode.dcp = 2;
        assert!(findings(&d, "PD012").is_empty(), "{:?}", findings(&d, "PD012"));
        d.prefill.dcp = 2;
        assert!(findings(&d, "PD012").is_empty(), "equal sizes are allowed");
    }

    #[test]
    fn unsupported_topology_is_caught_with_both_sizes() {
        let mut d = deepseek();
        d.prefill.dcp = 2;
        d.decode.dcp = 4;
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("prefill[0] node 0 has dcp_size=2 and decode[0] node 0 has dcp_size=4"),
            "{}",
            f[0].message
        );
        assert!(f[0].sglang_error.unwrap().starts_with("Unsupported PD DCP topology"));
    }

    #[test]
    fn dcp_on_a_gqa_model_is_caught() {
        let mut d = llama();
        d.decode.tp = 2;
        d.decode.dcp = 2;
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("not MLA"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().contains("MLA or hybrid-MLA"));
        d.model.geometry = None;
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Note);
    }

    #[test]
    fn dcp_decode_startup_checks() {
        let mut d = deepseek();
        d.decode.dcp = 2;
        d.decode.decode_radix_cache = true;
        d.decode.hicache = Some(HiCache { ratio: Some(2.0), size: None, storage_backend: None, write_policy: None });
        d.decode.extra_args = vec!["--disaggregation-transfer-backend".into(), "ascend".into()];
        // 0.5.23 accepts ascend (and mori) on a DCP decode.
        d.sglang_version = crate::release::Release::V0_5_19;
        let f = findings(&d, "PD012");
        let texts: Vec<&str> = f.iter().filter_map(|f| f.sglang_error).collect();
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(texts.iter().any(|t| t.contains("mooncake, nixl, or fake")));
        assert!(texts.iter().any(|t| t.contains("--disaggregation-decode-enable-radix-cache is not supported")));
        assert!(texts.iter().any(|t| t.contains("--enable-hierarchical-cache is not supported")));
        assert!(f.iter().any(|f| f.message.contains("transfer backend `ascend`")));
        assert!(f.iter().any(|f| f.fix.contains("decode.extra_args[0]")));
        d.sglang_version = crate::release::Release::V0_5_23;
        assert_eq!(findings(&d, "PD012").len(), 2, "{:?}", findings(&d, "PD012"));
    }

    #[test]
    fn the_relayout_pairs_entries_of_one_model_kv_type_and_draft() {
        let mut d = deepseek();
        d.decode.dcp = 2;
        d.decode.extra_args = vec!["--speculative-algorithm".into(), "NEXTN".into()];
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("only decode[0] node 0 speculates (NEXTN)"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().contains("one KV entry per prefill entry"));
        d.prefill.extra_args = d.decode.extra_args.clone();
        assert!(findings(&d, "PD012").is_empty(), "{:?}", findings(&d, "PD012"));
        d.prefill.extra_args = vec!["--kv-cache-dtype".into(), "fp8_e4m3".into()];
        d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bf16".into()];
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("KV element types"), "{}", f[0].message);
        assert!(f[0].sglang_error.unwrap().starts_with("PD DCP source/destination KV geometry differs"));
    }

    #[test]
    fn dcp_decode_needs_prefill_attn_cp_one() {
        let mut d = deepseek();
        d.decode.dcp = 2;
        d.prefill.attn_cp = 2;
        let f = findings(&d, "PD012");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("decode[0] node 0 has dcp_size=2 but prefill[0] node 0 has attn_cp_size=2"));
    }
}
