//! Environment causes: SGLang errors of a PD deployment that no command line prevents (a missing
//! package, a NIC, a port, a driver, a timeout), grouped by what they share so that one cause
//! explains many messages. Each quotes SGLang's texts verbatim, as a rule does, says what to
//! change, and names the pdlaunch command that tells the cause apart where there is one.
//! [`crate::explain`] matches their texts as it matches the rules'.

/// One environment cause.
#[derive(Debug)]
pub struct Cause {
    /// Stable code, `ENV001`...
    pub code: &'static str,
    /// Kebab-case name.
    pub name: &'static str,
    /// One line: what went wrong.
    pub summary: &'static str,
    /// SGLang's own texts, verbatim, with `{...}` where SGLang interpolates a value.
    pub sglang_errors: &'static [&'static str],
    /// Why it happens.
    pub explanation: &'static str,
    /// What to change.
    pub fix: &'static str,
    /// The pdlaunch command that tells this cause apart, when there is one.
    pub command: Option<&'static str>,
}

/// The smoke test over NIXL between two network namespaces: it moves KV through the real NIC path.
const SMOKE_NIXL: &str = "pdlaunch smoke FILE --transport nixl --across netns";
/// The probe of a running deployment through its router.
const PROBE: &str = "pdlaunch probe --router URL";
/// The Mooncake smoke test across a real network interface.
const SMOKE_MOONCAKE: &str = "pdlaunch smoke FILE --transport mooncake --across netns";

/// Every cause, in code order. Codes are stable: append, never renumber.
pub static CAUSES: &[Cause] = &[
    Cause {
        code: "ENV001",
        name: "nixl-not-installed",
        summary: "the NIXL package or the NIXL backend plugin SGLang asks for is not installed",
        sglang_errors: &[
            "Please install NIXL by following the instructions at https://github.com/ai-dynamo/nixl/blob/main/README.md to run SGLang with NixlTransferEngine.",
            "NIXL backend '{backend}' not found. Available: {available_plugins}. Please install the required NIXL plugin or choose from: {available_plugins}",
        ],
        explanation: "`--disaggregation-transfer-backend nixl` needs the `nixl` package and the plugin \
            `SGLANG_DISAGGREGATION_NIXL_BACKEND` names (UCX by default).",
        fix: "Install `nixl` in the servers' image, or set `SGLANG_DISAGGREGATION_NIXL_BACKEND` to a listed \
            plugin.",
        command: Some(SMOKE_NIXL),
    },
    Cause {
        code: "ENV002",
        name: "rdma-memory-registration",
        summary: "the transfer engine could not register GPU or host memory with the NIC",
        sglang_errors: &[
            "NIXL memory registration failed for {mem_kind} kv tensors",
            "NIXL memory registration failed for aux tensors",
            "NIXL memory registration failed for state tensors",
            "NIXL memory registration failed for staging buffer (ptr=0x{ptr}, size={size})",
        ],
        explanation: "Pinning memory for the NIC fails without GPUDirect RDMA (`nvidia_peermem`, dma-buf), under a low \
            memlock limit, or when UCX found no RDMA device.",
        fix: "Load `nvidia_peermem`, set `ulimit -l unlimited`, and name the NIC: `--disaggregation-ib-device \
            mlx5_0`, `UCX_NET_DEVICES=mlx5_0:1`.",
        command: Some(SMOKE_NIXL),
    },
    Cause {
        code: "ENV003",
        name: "nixl-transfer-not-created",
        summary: "NIXL returned no handle for a transfer to the decode's agent",
        sglang_errors: &[
            "KVSender failed to create transfer",
            "KVSender failed to create prepped transfer",
            "KVSender failed to create prepped slice transfer",
            "KVSender failed to create mixed prepped transfer",
            "KVSender failed to create dsa_tail transfer",
            "Failed to create prepared state transfer",
            "Failed to create Mamba state transfer",
            "Failed to create Mamba state slice transfer",
            "Failed to create SWA state slice transfer",
            "[Staging] Failed to create NIXL bulk transfer (src=0x{staging_buffer.get_ptr()}, dst=0x{dst_write_ptr}, size={per_rank_bytes})",
        ],
        explanation: "NIXL gives no handle when the decode's agent is unreachable (UCX on a NIC with no route to it) or \
            gone (the decode restarted).",
        fix: "Check the decode is up; pin UCX to a shared NIC on both sides (`UCX_NET_DEVICES=mlx5_0:1`); \
            `UCX_LOG_LEVEL=info` shows its choice.",
        command: Some(SMOKE_NIXL),
    },
    Cause {
        code: "ENV004",
        name: "nixl-transfer-error",
        summary: "a NIXL transfer failed on the wire (network or RDMA error, or the peer went away)",
        sglang_errors: &[
            "NIXL transfer encountered ERR room={room}",
            "NIXL transfer for room {room} left a handle running {NIXL_ERR_SETTLE_TIMEOUT_S}s after a peer handle failed",
            "NIXL staging transfer failed room={room}",
        ],
        explanation: "UCX reported an error on the wire: a link down, an unreachable NIC or GID, TCP fallback blocked, or \
            a decode that died.",
        fix: "Read the decode's log; check `ibstat`; give both sides one fabric (`UCX_NET_DEVICES`, \
            `--disaggregation-ib-device`).",
        command: Some(SMOKE_NIXL),
    },
    Cause {
        code: "ENV005",
        name: "mooncake-transfer-failed",
        summary: "the Mooncake transfer engine failed a KV write (RDMA error, unregistered buffer, dead peer)",
        sglang_errors: &[
            "Transfer thread failed because of {e}. Prefill instance with bootstrap_port={self.bootstrap_port} is dead.",
            "[Staging] Bulk RDMA transfer failed with ret={ret}. src_ptr=0x{staging_buffer.get_ptr()}, dst_ptr=0x{dst_staging_ptr + rank_offset}, size={local_bytes}. The decode staging buffer may not be properly registered.",
            "[Staging] KV transfer via staging buffer failed: {e}. session={session_id}",
            "Decode instance could be dead, remote mooncake session {req.mooncake_session_id} is not alive",
        ],
        explanation: "An RDMA write into the decode failed: the NIC of `--disaggregation-ib-device` cannot reach the \
            decode's, its buffers are unregistered (no GPUDirect), or the decode is gone.",
        fix: "Name the NIC next to each GPU (`--disaggregation-ib-device mlx5_0,mlx5_1`), check `ibstat` and \
            `nvidia_peermem`; `MC_FORCE_TCP=1` tells a fabric fault apart.",
        command: Some(SMOKE_MOONCAKE),
    },
    Cause {
        code: "ENV006",
        name: "foreign-bootstrap-traffic",
        summary: "the prefill's transfer socket got a message that is not SGLang's",
        sglang_errors: &["First message should be {GUARD}. Foreign traffic?"],
        explanation: "Something else connected to the NIXL prefill's ZMQ port (a health check, a scanner), or a decode of \
            another SGLang version.",
        fix: "Run one SGLang release on both sides; keep health checks on `--port`.",
        command: Some(PROBE),
    },
    Cause {
        code: "ENV007",
        name: "mori-engine",
        summary: "the Mori RDMA engine could not bind, submit, or find its peer",
        sglang_errors: &[
            "Failed to bind port for engine {engine_key}",
            "Transfer submission failed: {exc}",
            "Peer info missing for engine {info.engine_key}",
        ],
        explanation: "Mori binds an RDMA port per engine: none means no usable RDMA device; a missing peer means the decode \
            restarted.",
        fix: "Check `ibv_devices`, lower `SGLANG_MORI_QP_PER_TRANSFER` and `SGLANG_MORI_NUM_WORKERS`, restart \
            the prefill after its decode.",
        command: Some(PROBE),
    },
    Cause {
        code: "ENV008",
        name: "ascend-transfer-engine",
        summary: "the Ascend transfer engine did not start",
        sglang_errors: &["Ascend Transfer Engine initialization failed."],
        explanation: "The engine needs the memfabric store `ASCEND_MF_STORE_URL` names, and its NPUs.",
        fix: "Set `ASCEND_MF_STORE_URL` (`tcp://HOST:PORT`) to a store all servers reach.",
        command: None,
    },
    Cause {
        code: "ENV009",
        name: "bootstrap-unreachable",
        summary: "the decode cannot reach the prefill's bootstrap server",
        sglang_errors: &[
            "Could not fetch prefill parallel info from bootstrap_addr: {self.bootstrap_addr}",
            "Could not fetch prefill parallel info from {bootstrap_addr} after {count} attempts",
            "Error fetching prefill server info from bootstrap: {e}",
            "Failed to get prefill server info: {response.status_code}, {response.text}",
        ],
        explanation: "The decode asks the prefill's bootstrap server (`--disaggregation-bootstrap-port`, 8998) for its \
            layout: a wrong host, a closed port or a prefill not up fails it.",
        fix: "Open the bootstrap port between the hosts; give the router `--prefill http://HOST:PORT BOOTSTRAP`.",
        command: Some(PROBE),
    },
    Cause {
        code: "ENV010",
        name: "transfer-timeout",
        summary: "a request waited longer than SGLang's bootstrap or transfer timeout",
        sglang_errors: &[
            "Request {self.bootstrap_room} timed out after {elapsed:.1f}s in KVPoll.Bootstrapping",
            "Request {self.bootstrap_room} timed out after {elapsed:.1f}s in KVPoll.WaitingForInput",
            "Failed to get kvcache from prefill instance, it might be dead",
        ],
        explanation: "Bootstrap ends after `SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT` s, the KV wait after \
            `SGLANG_DISAGGREGATION_WAITING_TIMEOUT` s: a stuck transfer or a dead peer ends there.",
        fix: "Find the stuck side first; raise the timeouts (`SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600`) only \
            for long prompts.",
        command: Some(PROBE),
    },
];

/// The cause with this code (case-insensitive), or with this name.
pub fn cause(code_or_name: &str) -> Option<&'static Cause> {
    CAUSES.iter().find(|c| c.code.eq_ignore_ascii_case(code_or_name) || c.name == code_or_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_one_another_and_names_are_unique() {
        for (i, c) in CAUSES.iter().enumerate() {
            assert_eq!(c.code, format!("ENV{:03}", i + 1));
            assert!(c.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{}", c.name);
            assert!(!c.sglang_errors.is_empty() && !c.fix.is_empty(), "{}", c.code);
            assert!(CAUSES.iter().filter(|o| o.name == c.name).count() == 1, "{}", c.name);
        }
        assert_eq!(cause("env003").map(|c| c.name), Some("nixl-transfer-not-created"));
        assert_eq!(cause("bootstrap-unreachable").map(|c| c.code), Some("ENV009"));
        assert!(cause("PD001").is_none());
    }

    /// A message that a configuration can cause too (a bootstrap port the router does not give)
    /// names those rules first, and the environment cause after them.
    #[test]
    fn a_rule_that_quotes_the_same_text_comes_before_the_cause() {
        let found =
            crate::explain::explain("Could not fetch prefill parallel info from 10.0.0.7:8998 after 3 attempts");
        let codes: Vec<&str> = found.iter().map(|e| e.known.code()).collect();
        let cause = codes.iter().position(|c| *c == "ENV009").expect("ENV009 matches");
        assert!(cause > 0 && codes[..cause].iter().all(|c| c.starts_with("PD")), "{codes:?}");
    }
}
