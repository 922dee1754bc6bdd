//! PD033: environment variables that are part of the PD contract differ between the sides.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::Origin;

/// Some SGLang environment variables change what is transferred (aux buffers, staging regions,
/// the KV layout) or how (NIXL plugin, Mooncake memory pool and transport). Every prefill pairs
/// with every decode, so all of them must agree; nothing in SGLang compares them.
///
/// `SGLANG_USE_HND_KVCACHE` switches the MHA pool to the HND layout, whose buffers the PD transfer
/// cannot describe; it must stay unset on PD servers.
pub static RULE: Rule = Rule {
    code: "PD033",
    name: "env-contract-mismatch",
    severity: Severity::Error,
    summary: "an environment variable of the PD contract differs between servers",
    explanation: "Both sides derive their transfer buffers from the environment too. \
        `SGLANG_DISAGGREGATION_SAMPLING_MASK_MAX_TOKENS > 0` adds three aux buffers, `SGLANG_DISAGG_STAGING_BUFFER` \
        adds staging regions that the decode must advertise and the prefill must use (the docs: set it on BOTH \
        prefill and decode), and `SGLANG_AITER_KV_CACHE_LAYOUT` changes the KV layout on ROCm: a difference \
        corrupts KV or the aux metadata silently, because the transfer uses the prefill's layout on both ends. The \
        NIXL backend and its parameters, Mooncake's custom memory pool and NVLink/TCP switches must agree for the \
        two engines to connect and move aux data the same way. `SGLANG_USE_HND_KVCACHE` gives the MHA pool an HND \
        layout that the PD transfer rejects. On DeepSeek-V4, `SGLANG_DSV4_KV_LAYOUT` and \
        `SGLANG_DSV4_UNIFIED_KV_FP8` choose the compressed KV layout each side registers; a staging buffer on one \
        side only sends staging requests to a decode that has no handler for them.",
    sglang_errors: &[
        "SGLANG_USE_HND_KVCACHE: the HND KV layout cannot describe its buffers to the PD transfer (get_contiguous_buf_infos raises NotImplementedError)",
        "Head-sliced PD transfer needs the NHD KV cache layout, got {self.kv_args.swa_kv_cache_layout}",
        "STAGING_REQ received before staging handler initialized",
        "PD peers disagree on the compressed-MLA KV layout: prefill registered {len(src_kv_ptrs)} regions, decode {len(dst_kv_ptrs)} ({single_pool_len} is one pool per layer, {two_pool_len} is the fp8 two-pool). SGLANG_DSV4_UNIFIED_KV_FP8 must be set the same on both sides.",
    ],
    fix: "Put PD-contract variables in `shared.env` (rendered on every server) rather than in one side's `env`, and \
        leave `SGLANG_USE_HND_KVCACHE` unset.",
    check: Check::Deployment(check),
};

/// PD-contract variables: name, SGLang's default (as the value is compared), whether a difference
/// changes the transferred layout (error) or the transport (warning).
const CONTRACT: &[(&str, &str, bool)] = &[
    ("SGLANG_DISAGGREGATION_SAMPLING_MASK_MAX_TOKENS", "0", true),
    ("SGLANG_DISAGG_STAGING_BUFFER", "false", true),
    ("SGLANG_AITER_KV_CACHE_LAYOUT", "", true),
    ("SGLANG_DISAGG_STAGING_POOL_SIZE_MB", "4096", false),
    ("SGLANG_MOONCAKE_CUSTOM_MEM_POOL", "", false),
    ("MC_FORCE_MNNVL", "false", false),
    ("MC_INTRANODE_NVLINK", "false", false),
    ("SGLANG_DISAGGREGATION_NIXL_BACKEND", "UCX", false),
    ("SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS", "{}", false),
    ("SGLANG_MOONCAKE_SEND_AUX_TCP", "false", false),
    ("MC_FORCE_TCP", "false", false),
    ("SGLANG_DSV4_KV_LAYOUT", "v4", true),
    ("SGLANG_DSV4_UNIFIED_KV_FP8", "false", true),
];

/// The SGLang text a difference of `name` shows, when SGLang checks it.
fn text_of(name: &str) -> Option<&'static str> {
    match name {
        "SGLANG_DISAGG_STAGING_BUFFER" => Some(RULE.sglang_errors[2]),
        "SGLANG_DSV4_UNIFIED_KV_FP8" => Some(RULE.sglang_errors[3]),
        _ => None,
    }
}

/// SGLang's `EnvBool` reading of a value: `Some(true/false)` for its spellings, `None` otherwise.
pub(super) fn env_bool(v: &str) -> Option<bool> {
    // Only ASCII letters lowercase to these words, so an ASCII case-insensitive match is exact.
    let v = v.trim();
    let any = |words: &[&str]| words.iter().any(|w| v.eq_ignore_ascii_case(w));
    if any(&["true", "1", "yes", "y"]) {
        Some(true)
    } else if any(&["false", "0", "no", "n", ""]) {
        Some(false)
    } else {
        None
    }
}

/// True when `name` is set to a true value on `s`.
pub(super) fn env_on(s: &ServerView, name: &str) -> bool {
    s.env.get(name).and_then(|v| env_bool(v)) == Some(true)
}

/// Where `name` is (or would be) set for `s`: `<side>.env.NAME` when the side sets it (or nobody
/// does), `shared.env.NAME` when only the shared block does; `Derived` outside a deployment.
pub(super) fn env_origin(ctx: &Context, s: &ServerView, name: &str) -> Origin {
    let role = s.role.or_else(|| Role::BOTH.into_iter().find(|r| s.label.starts_with(r.as_str())));
    match (ctx.deployment, role) {
        (Some(d), Some(role)) => {
            let path = if !d.side(role).env.contains_key(name) && d.shared.env.contains_key(name) {
                format!("shared.env.{name}")
            } else {
                format!("{role}.env.{name}")
            };
            Origin::Field { path }
        }
        _ => Origin::Derived,
    }
}

/// The value compared: booleans normalized, unset replaced by SGLang's default.
fn normalized<'a>(raw: Option<&'a String>, default: &'a str) -> &'a str {
    let v = raw.map_or(default, String::as_str).trim();
    match (env_bool(v), env_bool(default)) {
        (Some(b), Some(_)) if !default.is_empty() && !default.chars().all(|c| c.is_ascii_digit()) => {
            if b {
                "true"
            } else {
                "false"
            }
        }
        _ if v.is_empty() => default,
        _ => v,
    }
}

fn check<'a>(ctx: &'a Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let heads: Vec<&'a ServerView> = ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some()).collect();
    for (name, default, layout) in CONTRACT {
        // Unset everywhere: every server reads the default.
        if heads.iter().all(|s| !s.env.contains_key(*name)) {
            continue;
        }
        let value = |s: &'a ServerView| normalized(s.env.get(*name), default);
        // Most deployments agree on every variable: compare before collecting anything.
        let Some(first) = heads.first().map(|s| value(s)) else {
            continue;
        };
        if heads.iter().all(|s| value(s) == first) {
            continue;
        }
        let values: Vec<(&str, &ServerView)> = heads.iter().map(|s| (value(s), *s)).collect();
        let shown: Vec<String> = values
            .iter()
            .map(|(_, s)| {
                format!("{} {}", s.label, s.env.get(*name).map_or_else(|| "unset".to_owned(), |v| format!("`{v}`")))
            })
            .collect();
        let consequence = if *layout {
            "it changes the buffers each side registers for the transfer, so KV or aux data is written with the \
             wrong layout"
        } else {
            "the two transfer engines are set up differently and may fail to connect or move aux data differently"
        };
        let message = format!("{name} differs between servers ({}): {consequence}", shown.join(", "));
        let wanted = values.iter().map(|(_, s)| s).find(|s| s.env.contains_key(*name)).and_then(|s| s.env.get(*name));
        let fix = match (ctx.deployment, wanted) {
            (Some(_), Some(v)) => {
                format!("set `shared.env.{name}: \"{v}\"` and remove it from the side `env` blocks")
            }
            (Some(_), None) => format!("set `shared.env.{name}` once for every server"),
            (None, _) => format!("export the same {name} for every prefill and decode server"),
        };
        let mut f = Finding::new(&RULE, message, fix);
        f.sglang_error = text_of(name);
        if !layout {
            f = f.severity(Severity::Warning);
        }
        out.push(values.iter().fold(f, |f, (_, s)| f.at_origin(s.label.clone(), None, env_origin(ctx, s, name))));
    }
    let hnd: Vec<&ServerView> = ctx.servers.iter().filter(|s| env_on(s, "SGLANG_USE_HND_KVCACHE")).collect();
    if !hnd.is_empty() {
        let labels = super::labels(&hnd);
        let message =
            format!("SGLANG_USE_HND_KVCACHE is on for {labels}: the HND KV layout is not supported by the PD transfer");
        let origin = env_origin(ctx, hnd[0], "SGLANG_USE_HND_KVCACHE");
        let fix = match origin {
            Origin::Field { path } => format!("remove `{path}`"),
            _ => "unset SGLANG_USE_HND_KVCACHE on PD servers".to_owned(),
        };
        let mut f = Finding::new(&RULE, message, fix);
        // Every PD transfer of an HND pool fails; a head-sliced one (TP sizes differ) says so.
        if ctx.pairs().iter().any(|(p, d)| p.attn_tp() != d.attn_tp()) {
            f.sglang_error = Some(RULE.sglang_errors[1]);
        }
        out.push(
            hnd.iter().fold(f, |f, s| f.at_origin(s.label.clone(), None, env_origin(ctx, s, "SGLANG_USE_HND_KVCACHE"))),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::examples::example;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn the_dsv4_layout_variables_are_part_of_the_contract() {
        let mut d = llama();
        d.prefill.env.insert("SGLANG_DSV4_UNIFIED_KV_FP8".into(), "1".into());
        let f = findings(&d, "PD033");
        assert_eq!((f.len(), f[0].severity), (1, Severity::Error), "{f:?}");
        assert!(f[0].sglang_error.unwrap().contains("SGLANG_DSV4_UNIFIED_KV_FP8 must be set the same"));
        d.decode.env.insert("SGLANG_DSV4_UNIFIED_KV_FP8".into(), "true".into());
        assert!(findings(&d, "PD033").is_empty(), "{:?}", findings(&d, "PD033"));
    }

    #[test]
    fn shared_env_passes() {
        assert!(!codes(&example("qwen3-2p1d-nixl").unwrap()).contains(&"PD033"));
        assert!(!codes(&llama()).contains(&"PD033"));
        // Spelling variants of the same boolean and explicit defaults are equal.
        let mut d = llama();
        d.prefill.env.insert("MC_FORCE_TCP".into(), "0".into());
        d.decode.env.insert("SGLANG_DISAGG_STAGING_POOL_SIZE_MB".into(), "4096".into());
        assert!(!codes(&d).contains(&"PD033"), "{:?}", findings(&d, "PD033"));
    }

    #[test]
    fn staging_buffer_on_one_side_is_an_error() {
        let mut d = example("qwen3-2p1d-nixl").unwrap();
        d.shared.env.clear();
        d.prefill.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "1".into());
        let f = findings(&d, "PD033");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        let m = &f[0].message;
        assert!(m.contains("prefill[0] `1`") && m.contains("prefill[1] `1`") && m.contains("decode[0] unset"), "{m}");
        assert!(f[0].fix.contains("shared.env.SGLANG_DISAGG_STAGING_BUFFER"), "{}", f[0].fix);
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "decode.env.SGLANG_DISAGG_STAGING_BUFFER"));
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "prefill.env.SGLANG_DISAGG_STAGING_BUFFER"));
    }

    #[test]
    fn nixl_backend_difference_is_a_warning() {
        let mut d = example("qwen3-2p1d-nixl").unwrap();
        d.decode.env.insert("SGLANG_DISAGGREGATION_NIXL_BACKEND".into(), "LIBFABRIC".into());
        let f = findings(&d, "PD033");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("decode[0] `LIBFABRIC`"), "{}", f[0].message);
    }

    #[test]
    fn hnd_layout_anywhere_is_an_error() {
        let mut d = llama();
        d.shared.env.insert("SGLANG_USE_HND_KVCACHE".into(), "1".into());
        let f = findings(&d, "PD033");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].fix.contains("shared.env.SGLANG_USE_HND_KVCACHE"), "{}", f[0].fix);
        let mut d = llama();
        d.shared.env.insert("SGLANG_USE_HND_KVCACHE".into(), "0".into());
        assert!(findings(&d, "PD033").is_empty());
    }
}
