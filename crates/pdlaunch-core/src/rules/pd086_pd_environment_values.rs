//! PD086: an environment variable of a PD server set to a value SGLang's KV transfer refuses at
//! startup.

use super::pd033_env_contract_mismatch::{env_on, env_origin};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;

/// The transfer engines and the argument checks read these variables when a PD server starts
/// (`srt/disaggregation/mooncake/conn.py` and `utils.py`, `nixl/conn.py`,
/// `srt/arg_groups/validation_hook.py`, `pd_disaggregation_hook.py`).
pub static RULE: Rule = Rule {
    code: "PD086",
    name: "pd-environment-values",
    severity: Severity::Error,
    summary: "a PD server's environment sets a transfer or scheduling variable to a value SGLang refuses",
    explanation: "Mooncake's prefill splits its transfer threads over `SGLANG_DISAGGREGATION_QUEUE_SIZE` queues \
        (4 by default), so the thread pool must be at least that large; its failed-session probe needs \
        `0 < SGLANG_FAILED_SESSION_PROBE_INTERVAL_S <= SGLANG_FAILED_SESSION_PROBE_MAX_INTERVAL_S` and a positive \
        idle timeout; over AWS EFA (`MOONCAKE_PROTOCOL=efa`) it cannot send CUDA VMM memory, so neither an NVLINK or \
        BAREX custom pool nor PyTorch's expandable segments may be on. NIXL reads \
        `SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS` as a JSON object of strings whose `device_list` must agree \
        with `--disaggregation-ib-device`. `SGLANG_ENABLE_PP_SPEC` (speculative decoding across pipeline stages) \
        is for aggregated servers, and a prefill under `SGLANG_RUST_SERVER` serves its bootstrap on the API port, \
        so another `--disaggregation-bootstrap-port` conflicts.",
    sglang_errors: &[
        "The environment variable SGLANG_DISAGGREGATION_THREAD_POOL_SIZE={transfer_thread_pool_size} must be greater than or equal to SGLANG_DISAGGREGATION_QUEUE_SIZE={transfer_queue_size}.",
        "Need 0 < SGLANG_FAILED_SESSION_PROBE_INTERVAL_S <= SGLANG_FAILED_SESSION_PROBE_MAX_INTERVAL_S",
        "SGLANG_FAILED_SESSION_IDLE_TIMEOUT_S must be positive",
        "SGLANG_MOONCAKE_CUSTOM_MEM_POOL={custom_mem_pool_type} is incompatible with MOONCAKE_PROTOCOL=efa. Mooncake custom memory pools use CUDA VMM allocations, which the current libfabric EFA provider cannot transfer. Unset SGLANG_MOONCAKE_CUSTOM_MEM_POOL.",
        "{expandable_segments_var} enables expandable_segments, which is incompatible with MOONCAKE_PROTOCOL=efa because the current libfabric EFA provider cannot transfer CUDA VMM allocations. Disable expandable_segments.",
        "SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS must be a JSON object with string keys and string values",
        "Conflicting NIXL UCX device_list in SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS and --disaggregation-ib-device. Configure only one device selection or make them agree.",
        "SGLANG_ENABLE_PP_SPEC does not support DSPARK PD prefill",
        "SGLANG_ENABLE_PP_SPEC is not compatible with --disaggregation-mode",
        "SGLANG_RUST_SERVER serves the PD KV bootstrap registry on the api port itself; --disaggregation-bootstrap-port {cfg.disaggregation_bootstrap_port} conflicts with --port {cfg.port}. Drop --disaggregation-bootstrap-port (decode nodes and the PD router must then target the prefill api port).",
    ],
    fix: "Set the variable to a value SGLang accepts (the finding says which), or unset it to take SGLang's default.",
    check: Check::Deployment(check),
};

/// One refusal: the index of its text, the variable, what the server has, the fix.
type Violation = (usize, &'static str, String, String);

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.role.is_some() && s.node == 0) {
        for (which, name, why, fix) in violations(s) {
            let mut f = Finding::new(&RULE, format!("{} has {why}", s.label), fix)
                .at_origin(s.label.clone(), None, env_origin(ctx, s, name));
            f.sglang_error = RULE.sglang_errors.get(which).copied();
            out.push(f);
        }
    }
    out
}

/// A variable read as a number, when set.
fn number(s: &ServerView, name: &str) -> Option<f64> {
    s.env.get(name).and_then(|v| crate::float::parse(v.trim()))
}

fn violations(s: &ServerView) -> Vec<Violation> {
    let mut v: Vec<Violation> = Vec::new();
    let backend = s.transfer_backend();
    if backend == "mooncake" {
        mooncake(s, &mut v);
    }
    if backend == "nixl" {
        nixl(s, &mut v);
    }
    let pp = s.size("pp_size");
    if env_on(s, "SGLANG_ENABLE_PP_SPEC") && pp > 1 {
        let alg = s.value("speculative_algorithm").unwrap_or_default().to_ascii_uppercase();
        let which = match alg.as_str() {
            "DSPARK" if s.role == Some(Role::Prefill) => Some(7),
            "EAGLE" | "NEXTN" => Some(8),
            _ => None,
        };
        if let Some(which) = which {
            v.push((
                which,
                "SGLANG_ENABLE_PP_SPEC",
                format!("SGLANG_ENABLE_PP_SPEC with pp_size={pp} and {alg} speculative decoding"),
                "unset SGLANG_ENABLE_PP_SPEC on PD servers".into(),
            ));
        }
    }
    if env_on(s, "SGLANG_RUST_SERVER") && s.role == Some(Role::Prefill) && backend != "fake" {
        let (bootstrap, port) = (s.bootstrap_port(), s.port());
        let default = s.spec().default_text("disaggregation_bootstrap_port").and_then(|d| d.parse::<u16>().ok());
        if s.explicit("disaggregation_bootstrap_port").is_some() && bootstrap != default && bootstrap != port {
            v.push((
                9,
                "SGLANG_RUST_SERVER",
                format!(
                    "SGLANG_RUST_SERVER with --disaggregation-bootstrap-port {} and --port {}",
                    bootstrap.map_or_else(String::new, |b| b.to_string()),
                    port.map_or_else(String::new, |p| p.to_string())
                ),
                "drop `--disaggregation-bootstrap-port` (decodes and the router then use the prefill's API port)".into(),
            ));
        }
    }
    v
}

fn mooncake(s: &ServerView, v: &mut Vec<Violation>) {
    if s.role == Some(Role::Prefill) {
        let queues = number(s, "SGLANG_DISAGGREGATION_QUEUE_SIZE").unwrap_or(4.0);
        // Left unset, the pool is sized from the CPU count, which only the machine knows.
        if let Some(threads) = number(s, "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE").filter(|&t| t < queues) {
            v.push((
                0,
                "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE",
                format!("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE={threads}, below the {queues} transfer queues"),
                format!("set SGLANG_DISAGGREGATION_THREAD_POOL_SIZE to {queues} or more, or lower the queue size"),
            ));
        }
    }
    // The probe is on unless the variable turns it off.
    const PROBE: &str = "SGLANG_ENABLE_FAILED_SESSION_PROBE";
    let probe = !s.env.contains_key(PROBE) || env_on(s, PROBE);
    if probe {
        let interval = number(s, "SGLANG_FAILED_SESSION_PROBE_INTERVAL_S").unwrap_or(30.0);
        let max = number(s, "SGLANG_FAILED_SESSION_PROBE_MAX_INTERVAL_S").unwrap_or(300.0);
        if !(interval > 0.0 && interval <= max) {
            v.push((
                1,
                "SGLANG_FAILED_SESSION_PROBE_INTERVAL_S",
                format!("a failed-session probe interval of {interval} s with a maximum of {max} s"),
                "set 0 < SGLANG_FAILED_SESSION_PROBE_INTERVAL_S <= SGLANG_FAILED_SESSION_PROBE_MAX_INTERVAL_S".into(),
            ));
        }
        if let Some(idle) = number(s, "SGLANG_FAILED_SESSION_IDLE_TIMEOUT_S").filter(|&t| t <= 0.0) {
            v.push((
                2,
                "SGLANG_FAILED_SESSION_IDLE_TIMEOUT_S",
                format!("SGLANG_FAILED_SESSION_IDLE_TIMEOUT_S={idle}"),
                "set a positive idle timeout (600 s by default), or unset it".into(),
            ));
        }
    }
    if s.env.get("MOONCAKE_PROTOCOL").is_some_and(|p| p.trim().eq_ignore_ascii_case("efa")) {
        let pool = s.env.get("SGLANG_MOONCAKE_CUSTOM_MEM_POOL").map(|p| p.trim().to_ascii_uppercase());
        if let Some(pool) = pool.filter(|p| p == "NVLINK" || p == "BAREX") {
            v.push((
                3,
                "SGLANG_MOONCAKE_CUSTOM_MEM_POOL",
                format!("SGLANG_MOONCAKE_CUSTOM_MEM_POOL={pool} with MOONCAKE_PROTOCOL=efa"),
                "unset SGLANG_MOONCAKE_CUSTOM_MEM_POOL over EFA".into(),
            ));
        }
        for var in ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"] {
            let on = s.env.get(var).is_some_and(|c| {
                c.split(',').any(|field| {
                    let (key, value) = field.split_once(':').unwrap_or((field, ""));
                    key.trim() == "expandable_segments" && value.trim().eq_ignore_ascii_case("true")
                })
            });
            if on {
                v.push((
                    4,
                    var,
                    format!("{var} with expandable_segments:True and MOONCAKE_PROTOCOL=efa"),
                    format!("remove expandable_segments from {var} over EFA"),
                ));
                break;
            }
        }
    }
}

fn nixl(s: &ServerView, v: &mut Vec<Violation>) {
    const PARAMS: &str = "SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS";
    let Some(text) = s.env.get(PARAMS) else { return };
    let params = serde_json::from_str::<serde_json::Value>(text).ok();
    let strings = params.as_ref().and_then(|p| p.as_object()).filter(|o| o.values().all(serde_json::Value::is_string));
    let Some(params) = strings else {
        let fix = format!("write {PARAMS} as a JSON object with string values, e.g. {{\"device_list\": \"mlx5_0\"}}");
        v.push((5, PARAMS, format!("{PARAMS}={text}, not a JSON object of strings"), fix));
        return;
    };
    let ucx = s.env.get("SGLANG_DISAGGREGATION_NIXL_BACKEND").is_none_or(|b| b.trim() == "UCX");
    let existing = params.get("device_list").and_then(|d| d.as_str());
    let (Some(existing), Some(devices)) = (existing, s.value("disaggregation_ib_device")) else {
        return;
    };
    let plain = !devices.trim_start().starts_with('{') && !devices.ends_with(".json");
    if !ucx || s.env.contains_key("UCX_NET_DEVICES") || !plain {
        return;
    }
    let norm = |l: &str| l.split(',').map(str::trim).collect::<Vec<_>>().join(", ");
    if norm(existing) != norm(&devices) {
        v.push((
            6,
            PARAMS,
            format!("a NIXL device_list `{existing}` in {PARAMS} and --disaggregation-ib-device {devices}"),
            "give the devices once: drop device_list from the variable or the flag, or make them agree".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn errors(env: &[(&str, &str)], p: &[&str], backend: crate::choices::TransferBackend) -> Vec<&'static str> {
        let mut d = llama();
        d.shared.transfer_backend = backend;
        for (k, val) in env {
            d.prefill.env.insert((*k).into(), (*val).into());
        }
        d.prefill.extra_args = p.iter().map(|a| (*a).into()).collect();
        findings(&d, "PD086").iter().filter_map(|f| f.sglang_error).collect()
    }

    use crate::choices::TransferBackend::{Mooncake, Nixl};

    #[test]
    fn accepted_values_pass() {
        assert!(errors(&[], &[], Mooncake).is_empty());
        let good = [
            ("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE", "8"),
            ("SGLANG_FAILED_SESSION_PROBE_INTERVAL_S", "10"),
            ("MOONCAKE_PROTOCOL", "efa"),
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"),
            ("SGLANG_ENABLE_PP_SPEC", "1"),
        ];
        assert!(errors(&good, &[], Mooncake).is_empty());
        let params = [("SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS", r#"{"device_list": "mlx5_0"}"#)];
        assert!(errors(&params, &["--disaggregation-ib-device", "mlx5_0"], Nixl).is_empty());
    }

    #[test]
    fn refused_values_are_caught() {
        let one = |env: &[(&str, &str)], p: &[&str], backend, want: &str| {
            let e = errors(env, p, backend);
            assert!(e.iter().any(|e| e.contains(want)), "{env:?}: {want} not in {e:?}");
        };
        one(&[("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE", "2")], &[], Mooncake, "must be greater than or equal");
        one(&[("SGLANG_FAILED_SESSION_PROBE_INTERVAL_S", "0")], &[], Mooncake, "Need 0 <");
        one(&[("SGLANG_FAILED_SESSION_IDLE_TIMEOUT_S", "-1")], &[], Mooncake, "IDLE_TIMEOUT_S must be positive");
        let efa = ("MOONCAKE_PROTOCOL", "efa");
        one(&[efa, ("SGLANG_MOONCAKE_CUSTOM_MEM_POOL", "NVLINK")], &[], Mooncake, "is incompatible with MOONCAKE_PROTOCOL=efa");
        one(&[efa, ("PYTORCH_ALLOC_CONF", "expandable_segments:True")], &[], Mooncake, "enables expandable_segments");
        one(&[("SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS", "[1]")], &[], Nixl, "must be a JSON object");
        let params = [("SGLANG_DISAGGREGATION_NIXL_BACKEND_PARAMS", r#"{"device_list": "mlx5_1"}"#)];
        one(&params, &["--disaggregation-ib-device", "mlx5_0"], Nixl, "Conflicting NIXL UCX device_list");
        let pp = ["--pp-size", "2", "--speculative-algorithm", "EAGLE"];
        one(&[("SGLANG_ENABLE_PP_SPEC", "1")], &pp, Mooncake, "SGLANG_ENABLE_PP_SPEC is not compatible");
        let pp = ["--pp-size", "2", "--speculative-algorithm", "DSPARK"];
        one(&[("SGLANG_ENABLE_PP_SPEC", "1")], &pp, Mooncake, "does not support DSPARK PD prefill");
        let port = ["--disaggregation-bootstrap-port", "9000"];
        one(&[("SGLANG_RUST_SERVER", "1")], &port, Mooncake, "SGLANG_RUST_SERVER serves the PD KV bootstrap");
    }
}
