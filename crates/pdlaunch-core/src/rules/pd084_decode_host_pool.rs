//! PD084: the decode's host-pool retraction backup or host KV receive set where SGLang refuses it.

use super::pd080_unified_memory_unsupported::{host_receive_threshold, retraction_backup};
use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;

/// `--disaggregation-decode-retraction-backup host_pool` keeps retracted requests' KV in a host
/// pool of the decode, and `--disaggregation-decode-host-receive-threshold` below 1 receives KV
/// into it (and implies it). SGLang checks both at startup (`handle_pd_disaggregation`,
/// `handle_cache_compatibility`), and the decode's KV manager refuses host destinations when it
/// starts: no transfer backend of the release can write to them.
pub static RULE: Rule = Rule {
    code: "PD084",
    name: "decode-host-pool",
    severity: Severity::Error,
    summary: "host-pool retraction or decode host KV receive where SGLang refuses it",
    explanation: "A host-receive threshold below 1 makes the decode receive KV into its host pool and resolves \
        the retraction backup to `host_pool`; the threshold must lie in [0, 1], and cannot be combined with \
        HiSparse or an explicit `cpu_tensor` backup. The host pool exists only on a PD decode, and SGLang refuses \
        it with decode context parallelism, with priority scheduling that may preempt, and next to decode KV \
        offload (both would build a decode host pool). Even where the flags pass, the decode's KV manager stops \
        at startup: no built-in transfer backend of SGLang 0.5.23 can write to host destinations. The host pool \
        (`--hicache-size`, or `--hicache-ratio` times the device pool, which SGLang sizes from free GPU memory at \
        startup) must also hold one retracted request and one received page, which only the running server \
        knows.",
    sglang_errors: &[
        "--disaggregation-decode-retraction-backup=host_pool is only supported on a PD decode server.",
        "--disaggregation-decode-retraction-backup=host_pool does not support --dcp-size > 1.",
        "--disaggregation-decode-retraction-backup=host_pool requires --disable-priority-preemption when priority scheduling is enabled.",
        "The arguments disaggregation-decode-enable-offload-kvcache and disaggregation-decode-retraction-backup=host_pool are mutually exclusive: both build a decode host pool.",
        "--disaggregation-decode-host-receive-threshold must be between 0 and 1",
        "Decode host receive does not yet support HiSparse or role switching",
        "Decode host KV buffering requires host_pool retraction",
        "Transfer backend does not support decode host KV destinations",
        "Host pool must hold a retraction and a receive page; increase --hicache-size or --hicache-ratio",
        "SWA host pool must hold a retraction and a receive page; increase --hicache-size or --hicache-ratio",
    ],
    fix: "Keep `--disaggregation-decode-host-receive-threshold` at 1 (the default) and use the `cpu_tensor` \
        retraction backup, or `host_pool` on a decode alone, without DCP, decode KV offload or preempting \
        priority scheduling.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in ctx.servers.iter().filter(|s| s.node == 0 && s.role.is_some()) {
        for (which, dest, why, fix) in violations(s) {
            let message = format!("{} has {why}", s.label);
            let at = s.origin(dest).map_or_else(String::new, |o| format!(" (`{o}`)"));
            let mut f = Finding::new(&RULE, message, format!("{fix}{at}")).at(s, dest);
            f.sglang_error = RULE.sglang_errors.get(which).copied();
            out.push(f);
        }
    }
    out
}

const THRESHOLD: &str = "disaggregation_decode_host_receive_threshold";
const BACKUP: &str = "disaggregation_decode_retraction_backup";

fn violations(s: &ServerView) -> Vec<(usize, &'static str, String, &'static str)> {
    let mut v = Vec::new();
    let threshold = host_receive_threshold(s);
    let receive = threshold.is_some_and(|t| (0.0..1.0).contains(&t));
    if let Some(t) = threshold.filter(|t| !(0.0..=1.0).contains(t)) {
        let why = format!("a decode host-receive threshold of {t}, outside [0, 1]");
        v.push((4, THRESHOLD, why, "set a threshold between 0 and 1"));
    }
    if receive {
        let t = threshold.unwrap_or_default();
        if s.switch("enable_hisparse") {
            let why = format!("decode host receive (threshold {t}) with --enable-hisparse");
            v.push((5, "enable_hisparse", why, "remove `--enable-hisparse`, or keep the threshold at 1"));
        }
        if s.explicit(BACKUP).as_deref() == Some("cpu_tensor") {
            let why = format!("decode host receive (threshold {t}) with the cpu_tensor retraction backup");
            let fix = "use `--disaggregation-decode-retraction-backup host_pool`, or keep the threshold at 1";
            v.push((6, BACKUP, why, fix));
        }
    }
    if retraction_backup(s).as_deref() != Some("host_pool") {
        return v;
    }
    let why = if receive {
        "host-pool retraction (implied by a host-receive threshold below 1)"
    } else {
        "host-pool retraction"
    };
    let dest = if s.explicit(BACKUP).is_some() { BACKUP } else { THRESHOLD };
    if s.role != Some(Role::Decode) {
        v.push((0, dest, format!("{why}, which only a PD decode has"), "remove it from the prefill"));
        return v;
    }
    let dcp = s.size("dcp_size");
    if dcp > 1 {
        let fix = "set `--dcp-size 1`, or use the cpu_tensor backup";
        v.push((1, "dcp_size", format!("{why} with dcp_size={dcp}"), fix));
    }
    if s.switch("enable_priority_scheduling") && !s.switch("disable_priority_preemption") {
        v.push((
            2,
            "enable_priority_scheduling",
            format!("{why} with priority scheduling that may preempt"),
            "add `--disable-priority-preemption`",
        ));
    }
    if s.switch("disaggregation_decode_enable_offload_kvcache") {
        v.push((
            3,
            "disaggregation_decode_enable_offload_kvcache",
            format!("{why} and decode KV offload, which both build a decode host pool"),
            "keep one of them: remove `--disaggregation-decode-enable-offload-kvcache` or the host-pool backup",
        ));
    }
    if receive {
        let backend = s.transfer_backend();
        v.push((
            7,
            THRESHOLD,
            format!(
                "a decode host-receive threshold of {}, but transfer backend `{backend}` cannot write KV to host destinations",
                threshold.unwrap_or_default()
            ),
            "keep the threshold at 1 (the default)",
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    fn found(p: &str, d: &str) -> Vec<crate::rules::Finding> {
        lint_findings(p, d, None).into_iter().filter(|f| f.code == "PD084").collect()
    }

    fn errors(p: &str, d: &str) -> Vec<&'static str> {
        found(p, d).iter().filter_map(|f| f.sglang_error).collect()
    }

    #[test]
    fn a_plain_decode_and_a_lone_host_pool_pass() {
        assert!(found("", "").is_empty());
        assert!(found("", " --disaggregation-decode-retraction-backup host_pool").is_empty());
        assert!(found("", " --disaggregation-decode-host-receive-threshold 1.0").is_empty());
        assert!(found("", " --disaggregation-decode-retraction-backup cpu_tensor --dcp-size 2").is_empty());
        let priority = " --disaggregation-decode-retraction-backup host_pool --enable-priority-scheduling --disable-priority-preemption";
        assert!(found("", priority).is_empty());
    }

    #[test]
    fn each_refusal_is_caught() {
        let backup = " --disaggregation-decode-retraction-backup host_pool";
        for (p, d, want) in [
            (backup, "", "is only supported on a PD decode server"),
            ("", &format!("{backup} --dcp-size 2") as &str, "does not support --dcp-size > 1"),
            ("", &format!("{backup} --enable-priority-scheduling"), "requires --disable-priority-preemption"),
            ("", " --disaggregation-decode-enable-offload-kvcache --hicache-storage-backend file --disaggregation-decode-host-receive-threshold 0.5", "are mutually exclusive"),
            ("", " --disaggregation-decode-host-receive-threshold 1.5", "must be between 0 and 1"),
            ("", " --disaggregation-decode-host-receive-threshold 0.5 --enable-hisparse", "Decode host receive does not yet support"),
            ("", " --disaggregation-decode-host-receive-threshold 0.5 --disaggregation-decode-retraction-backup cpu_tensor", "requires host_pool retraction"),
            ("", " --disaggregation-decode-host-receive-threshold 0.5", "Transfer backend does not support decode host KV destinations"),
        ] {
            let e = errors(p, d);
            assert!(e.iter().any(|e| e.contains(want)), "{p} | {d}: {want} not in {e:?}");
        }
    }
}
