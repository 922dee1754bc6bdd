//! The transports between two agent processes: for NIXL and Mooncake and page sizes 1, 16 and
//! 64, the GB/s of SGLang's descriptors for one request and the ratio to the same library moving
//! the same bytes as one contiguous region in the same run, with the first transfer's
//! connection cost apart. Across two network namespaces when run as root, else on this machine.
//!
//! `PDLAUNCH_NIXL_LIB=…/libnixl_capi.so PDLAUNCH_MOONCAKE_PYTHON=…/bin/python \
//!  cargo bench -p pdlaunch-kv --features nixl --bench transport`
//! (a transport whose library is not given is skipped with the reason). The bench binary is
//! also the agent: it re-executes itself with `smoke-agent`.

use std::path::PathBuf;
use std::time::Duration;

use pdlaunch_core::deployment::AttentionKind;
use pdlaunch_kv::agent::launch::{library_env, Launcher, TransportEngine};
use pdlaunch_kv::agent::{main_stdio, Memory, Placement, Transport};
use pdlaunch_kv::case::{prepare, Case};
use pdlaunch_kv::dtype::KvDtype;
use pdlaunch_kv::engine::{Engine, Job};
use pdlaunch_kv::geometry::{KvAttention, KvGeometry};
use pdlaunch_kv::layout::SideConfig;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("smoke-agent") {
        std::process::exit(i32::from(main_stdio()));
    }
    let tokens: u32 = std::env::var("PDLAUNCH_BENCH_TOKENS").ok().and_then(|v| v.parse().ok()).unwrap_or(2048);
    // SAFETY: geteuid has no preconditions.
    let placement = if unsafe { libc::geteuid() } == 0 { Placement::Netns } else { Placement::Local };
    let geometry =
        KvGeometry { kind: AttentionKind::Gqa, layers: 8, attention: KvAttention::Mha { kv_heads: 8, head_dim: 128 } };
    println!("GQA 8 layers x 8 KV heads x 128, bf16, TP1 -> TP1, {tokens} tokens, placement {}", placement.name());
    println!(
        "{:<9} {:>4} {:>11} {:>10} {:>9} {:>14} {:>6} {:>13} {:>13}",
        "transport", "page", "descriptors", "bytes", "GB/s", "contiguous GB/s", "ratio", "first xfer s", "connection s"
    );
    let nixl_lib = std::env::var_os("PDLAUNCH_NIXL_LIB").map(PathBuf::from);
    let python = std::env::var("PDLAUNCH_MOONCAKE_PYTHON").ok();
    for transport in [Transport::Nixl, Transport::Mooncake] {
        let skip = match transport {
            Transport::Nixl if !cfg!(feature = "nixl") => Some("built without feature nixl"),
            Transport::Nixl if nixl_lib.is_none() => Some("PDLAUNCH_NIXL_LIB is not set"),
            Transport::Mooncake if python.is_none() => Some("PDLAUNCH_MOONCAKE_PYTHON is not set"),
            _ => None,
        };
        if let Some(why) = skip {
            println!("{:<9} skipped: {why}", transport.name());
            continue;
        }
        let launcher = Launcher {
            transport,
            placement,
            program: std::env::current_exe().expect("the bench binary"),
            args: vec!["smoke-agent".into()],
            env: library_env(transport, placement, nixl_lib.as_deref()),
            bootstrap: Some(if placement == Placement::Local { "127.0.0.1:0".into() } else { "0.0.0.0:8998".into() }),
            timeout: Duration::from_secs(300),
            mooncake_python: python.clone().unwrap_or_default(),
            mooncake_protocol: "tcp".into(),
            memory: Memory::Dram,
            gpus: None,
        };
        let mut engine = match TransportEngine::new(launcher) {
            Ok(e) => e,
            Err(e) => {
                println!("{:<9} skipped: {e}", transport.name());
                continue;
            }
        };
        for page in [1u32, 16, 64] {
            let side = SideConfig { page_size: page, dtype: KvDtype::Bf16, attn_tp: 1, pp: 1 };
            let Some(backend) = transport.modelled() else { continue };
            let case = Case { geometry, prefill: side, decode: side, backend, tokens, seed: 7 };
            let p = prepare(&case, None).expect("a valid case");
            let job = Job { prepared: &p, prefill: &[], iterations: 5, progress: &|_, _| {} };
            match engine.run(0, &job, &mut []) {
                Ok(r) => {
                    let v = engine.take_verification().expect("the decode verified");
                    assert!(v.is_clean(), "{} page {page}: {}", transport.name(), v.summary());
                    let first = r.first_seconds.unwrap_or(0.0);
                    println!(
                        "{:<9} {:>4} {:>11} {:>10} {:>9.3} {:>14.3} {:>6.2} {:>13.3} {:>13.3}",
                        transport.name(),
                        page,
                        r.descriptors,
                        r.bytes,
                        r.gbps(),
                        r.reference_gbps(),
                        r.ratio(),
                        first,
                        (first - r.seconds).max(0.0)
                    );
                }
                Err(e) => println!("{:<9} {:>4} failed: {e}", transport.name(), page),
            }
        }
    }
}
