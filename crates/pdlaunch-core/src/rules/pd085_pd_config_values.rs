//! PD085: a value a PD server's KV machinery reads at startup that SGLang cannot use: the KV-events
//! publisher config, the storage backend's extra config, NIXL's HCA names.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;

/// SGLang parses these when the scheduler builds its KV event publisher
/// (`srt/disaggregation/kv_events.py`), the decode its offload manager
/// (`decode_kvcache_offload_manager.py`) and NIXL its UCX device list (`nixl/conn.py`): argparse
/// takes any string, and the server stops at startup.
pub static RULE: Rule = Rule {
    code: "PD085",
    name: "pd-config-values",
    severity: Severity::Error,
    summary: "a KV-events config, storage extra config or NIXL HCA name that SGLang cannot read",
    explanation: "`--kv-events-config` is a JSON object whose `publisher` must be `null` or `zmq`; with DP \
        attention every rank past the first offsets its ZMQ `endpoint` (default `tcp://*:5557`), which works only \
        for `tcp` and `inproc` endpoints. `--hicache-storage-backend-extra-config` must be JSON where the decode \
        offloads its KV. With the NIXL transfer backend over UCX, `--disaggregation-ib-device` names HCAs without \
        a port suffix: NIXL appends port 1 itself.",
    sglang_errors: &[
        "Unknown event publisher '{kind}'",
        "Invalid endpoint: must contain 'inproc' or 'tcp'",
        "Invalid hicache storage backend extra config JSON: {e}",
        "NIXL UCX --disaggregation-ib-device requires HCA names without port suffixes (e.g. mlx5_0); NIXL appends port 1.",
    ],
    fix: "Write `--kv-events-config` as JSON with publisher `zmq` (or `null`) and a tcp:// endpoint, give \
        `--hicache-storage-backend-extra-config` valid JSON, and name HCAs as `mlx5_0` for NIXL.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.role.is_some()) {
        for (which, dest, why, fix) in violations(s) {
            let at = s.origin(dest).map_or_else(String::new, |o| format!(" (`{o}`)"));
            let mut f = Finding::new(&RULE, format!("{} has {why}", s.label), format!("{fix}{at}")).at(s, dest);
            f.sglang_error = RULE.sglang_errors.get(which).copied();
            out.push(f);
        }
    }
    out
}

fn violations(s: &ServerView) -> Vec<(usize, &'static str, String, &'static str)> {
    let mut v = Vec::new();
    if let Some(text) = s.value("kv_events_config").filter(|t| !t.trim().is_empty()) {
        if let Ok(serde_json::Value::Object(config)) = serde_json::from_str::<serde_json::Value>(&text) {
            let publisher = config.get("publisher").and_then(|p| p.as_str()).unwrap_or("null");
            if !matches!(publisher, "null" | "zmq") {
                let why = format!("a --kv-events-config publisher `{publisher}`");
                v.push((0, "kv_events_config", why, "use publisher `zmq` (or `null`)"));
            }
            let endpoint = config.get("endpoint").and_then(|e| e.as_str()).unwrap_or("tcp://*:5557");
            let dp = s.attn_dp();
            if publisher == "zmq" && dp > 1 && !endpoint.contains("inproc") && !endpoint.contains("tcp") {
                v.push((
                    1,
                    "kv_events_config",
                    format!("KV-events endpoint `{endpoint}` with {dp} DP-attention ranks (tcp or inproc offset)"),
                    "use a tcp:// (or inproc://) endpoint",
                ));
            }
        }
    }
    if s.role == Some(Role::Decode) && s.switch("disaggregation_decode_enable_offload_kvcache") {
        if let Some(text) = s.value("hicache_storage_backend_extra_config").filter(|t| !t.is_empty()) {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
                v.push((
                    2,
                    "hicache_storage_backend_extra_config",
                    format!("--hicache-storage-backend-extra-config that is not JSON ({e})"),
                    "write the extra config as a JSON object",
                ));
            }
        }
    }
    let nixl = s.value("disaggregation_transfer_backend").as_deref() == Some("nixl");
    if let Some(devices) = s.value("disaggregation_ib_device").filter(|_| nixl) {
        // A JSON map or a file of GPU-to-device lists is read at run time; a plain list is here.
        let plain = !devices.trim_start().starts_with('{') && !devices.ends_with(".json");
        let suffixed: Vec<&str> = devices.split(',').map(str::trim).filter(|n| n.contains(':')).collect();
        if plain && !suffixed.is_empty() {
            v.push((
                3,
                "disaggregation_ib_device",
                format!("--disaggregation-ib-device with port suffixes ({}) over NIXL", suffixed.join(", ")),
                "name the HCAs without the port, e.g. mlx5_0",
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn errors(p: &str, d: &str) -> Vec<&'static str> {
        lint_findings(p, d, None).into_iter().filter(|f| f.code == "PD085").filter_map(|f| f.sglang_error).collect()
    }

    #[test]
    fn readable_values_pass() {
        assert!(errors("", "").is_empty());
        let events = r#" --kv-events-config '{"publisher":"zmq","endpoint":"tcp://*:5557"}' --dp 2 --enable-dp-attention"#;
        assert!(errors(events, "").is_empty());
        let offload = r#" --disaggregation-decode-enable-offload-kvcache --hicache-storage-backend file --hicache-storage-backend-extra-config '{"a":1}'"#;
        assert!(errors("", offload).is_empty());
        assert!(errors(" --disaggregation-transfer-backend nixl", " --disaggregation-transfer-backend nixl").is_empty());
        // Mooncake takes the port suffix.
        assert!(errors(" --disaggregation-ib-device mlx5_0:1", "").is_empty());
    }

    #[test]
    fn unreadable_values_are_caught() {
        let e = errors(r#" --kv-events-config '{"publisher":"kafka"}'"#, "");
        assert_eq!(e, [super::RULE.sglang_errors[0]]);
        let e = errors(r#" --kv-events-config '{"publisher":"zmq","endpoint":"ipc:///tmp/kv"}' --dp 2 --enable-dp-attention"#, "");
        assert_eq!(e, [super::RULE.sglang_errors[1]]);
        let e = errors("", " --disaggregation-decode-enable-offload-kvcache --hicache-storage-backend file --hicache-storage-backend-extra-config '{a:1}'");
        assert_eq!(e, [super::RULE.sglang_errors[2]]);
        let e = errors(" --disaggregation-transfer-backend nixl --disaggregation-ib-device mlx5_0:1", " --disaggregation-transfer-backend nixl");
        assert_eq!(e, [super::RULE.sglang_errors[3]]);
    }
}
