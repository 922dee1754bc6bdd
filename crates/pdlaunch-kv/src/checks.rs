//! Static layout checks, run before anything is allocated: do the two sides' pools agree, can
//! SGLang pair their ranks, and can the canaries describe every slice.

use serde::Serialize;

use crate::canary::HEADER;
use crate::geometry::KvGeometry;
use crate::layout::{heads_split_ok, SideConfig};
use crate::sides::SideFacts;

/// Outcome of a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine.
    Pass,
    /// Works, with a caveat.
    Warn,
    /// Broken: KV would be corrupted or the transfer refused.
    Fail,
    /// For information.
    Info,
}

impl Status {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Info => "info",
        }
    }
}

/// One check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable id.
    pub id: &'static str,
    /// Outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
}

fn check(id: &'static str, status: Status, detail: impl Into<String>) -> Check {
    Check { id, status, detail: detail.into() }
}

fn why(s: &SideFacts) -> String {
    let mut parts = s.page_size_why.clone();
    parts.extend(s.page_size_assumption.clone());
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// The checks for `geometry` between `prefill` and `decode`, with the transfer backend named
/// `backend` (as given on the command line or rendered).
pub fn static_checks(geometry: &KvGeometry, prefill: &SideFacts, decode: &SideFacts, backend: &str) -> Vec<Check> {
    let (p, d): (SideConfig, SideConfig) = (prefill.config, decode.config);
    let mut out = Vec::new();

    out.push(if p.page_size == d.page_size {
        check("page_size", Status::Pass, format!("{} tokens per page on both sides", p.page_size))
    } else {
        check(
            "page_size",
            Status::Fail,
            format!(
                "prefill pages hold {} tokens{}, decode pages {}{}: SGLang addresses both sides with the prefill's item length, so tokens land in the wrong slots",
                p.page_size,
                why(prefill),
                d.page_size,
                why(decode)
            ),
        )
    });

    out.push(if p.dtype == d.dtype {
        let mut detail = format!("{} ({} byte(s) per element) on both sides", p.dtype, p.dtype.width());
        let status = if prefill.kv_cache_dtype != decode.kv_cache_dtype {
            detail.push_str(&format!(
                "; but the strings differ (`{}` vs `{}`) and SGLang compares strings when the first request arrives",
                prefill.kv_cache_dtype, decode.kv_cache_dtype
            ));
            Status::Warn
        } else {
            Status::Pass
        };
        check("kv_dtype", status, detail)
    } else if p.dtype.width() == d.dtype.width() {
        check(
            "kv_dtype",
            Status::Fail,
            format!("prefill stores {} and decode reads {}: same width, so bytes land in place but are decoded as another type", p.dtype, d.dtype),
        )
    } else {
        check(
            "kv_dtype",
            Status::Fail,
            format!("prefill stores {} ({} B), decode {} ({} B): rows differ in length", p.dtype, p.dtype.width(), d.dtype, d.dtype.width()),
        )
    });

    let modelled = matches!(backend, "mooncake" | "mooncake_tcp" | "nixl");
    out.push(if prefill.transfer_backend != decode.transfer_backend {
        check(
            "transfer_backend",
            Status::Fail,
            format!("prefill uses {}, decode {}", prefill.transfer_backend, decode.transfer_backend),
        )
    } else if !modelled {
        check("transfer_backend", Status::Fail, format!("{backend}: only mooncake and nixl are modelled (--transfer)"))
    } else {
        check("transfer_backend", Status::Pass, format!("{backend} on both sides"))
    });

    let (hi, lo) = (p.attn_tp.max(d.attn_tp), p.attn_tp.min(d.attn_tp));
    out.push(if p.attn_tp == d.attn_tp {
        check("attention_tp", Status::Pass, format!("attention TP {} on both sides: rank r sends whole pages to rank r", p.attn_tp))
    } else if hi % lo != 0 {
        check("attention_tp", Status::Fail, format!("attention TP {} (prefill) and {} (decode): the larger must be a multiple of the smaller", p.attn_tp, d.attn_tp))
    } else if geometry.is_mla() {
        check("attention_tp", Status::Pass, format!("attention TP {} -> {}: the MLA latent is replicated, one prefill rank feeds each decode rank", p.attn_tp, d.attn_tp))
    } else if prefill.staging_buffer && decode.staging_buffer {
        check(
            "attention_tp",
            Status::Info,
            format!(
                "attention TP {} -> {} through SGLang's staging buffer (gather, one bulk copy, scatter); the test reproduces the per-token head-slice path, which places the same bytes",
                p.attn_tp, d.attn_tp
            ),
        )
    } else {
        check(
            "attention_tp",
            Status::Warn,
            format!(
                "attention TP {} -> {}: SGLang sends head slices token by token (one descriptor per token slot, layer buffer and page), slow for long prompts",
                p.attn_tp, d.attn_tp
            ),
        )
    });

    if !geometry.is_mla() {
        let h = geometry.kv_heads();
        let bad: Vec<String> = [("prefill", p.attn_tp), ("decode", d.attn_tp)]
            .iter()
            .filter(|(_, tp)| !heads_split_ok(h, *tp))
            .map(|(s, tp)| format!("{s} TP {tp}"))
            .collect();
        out.push(if !bad.is_empty() {
            check("kv_heads", Status::Fail, format!("{h} KV heads cannot be split over {}", bad.join(" or ")))
        } else if p.attn_tp > h || d.attn_tp > h {
            check("kv_heads", Status::Warn, format!("{h} KV heads over attention TP {}/{}: heads are replicated across ranks (head mapping has had bugs in SGLang)", p.attn_tp, d.attn_tp))
        } else {
            check("kv_heads", Status::Pass, format!("{h} KV heads: {} per prefill rank, {} per decode rank", h / p.attn_tp, h / d.attn_tp))
        });
    }

    out.push(if d.pp != p.pp && d.pp != 1 {
        check("pp", Status::Fail, format!("decode pp {} must equal prefill pp {} or be 1", d.pp, p.pp))
    } else if p.pp > geometry.layers || d.pp > geometry.layers {
        check("pp", Status::Fail, format!("pp {} exceeds the model's {} layers", p.pp.max(d.pp), geometry.layers))
    } else if p.pp == d.pp {
        check("pp", Status::Pass, format!("pp {} on both sides: stage s sends to stage s", p.pp))
    } else {
        check("pp", Status::Pass, format!("prefill pp {} -> decode pp 1: every stage sends its layers", p.pp))
    });

    let slice = |c: SideConfig| u64::from(geometry.slice_elems()) * u64::from(c.dtype.width());
    let smallest = slice(p).min(slice(d));
    out.push(if smallest >= HEADER as u64 {
        check("canary_fit", Status::Pass, format!("head slices of {smallest}+ bytes hold the {HEADER}-byte canary header"))
    } else {
        check(
            "canary_fit",
            Status::Warn,
            format!("head slices of {smallest} bytes are shorter than the {HEADER}-byte header: placement is still compared byte for byte, but misplaced slices cannot be named"),
        )
    });
    out
}

/// True when the checks leave layouts that can be built and paired.
pub fn dynamic_possible(checks: &[Check]) -> Result<(), String> {
    for c in checks {
        if c.status == Status::Fail && matches!(c.id, "attention_tp" | "kv_heads" | "pp") {
            return Err(format!("{}: {}", c.id, c.detail));
        }
    }
    Ok(())
}
