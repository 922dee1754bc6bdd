//! CPU engine throughput against one plain memcpy of the same total bytes, for page sizes 1, 16
//! and 64, with a Llama-3.1-8B-shaped pool (32 layers, 8 KV heads of 128, bf16, TP 1 -> 1).
//! The decode pages are fragmented (runs of 1 to 4 pages), so page size 1 means many small
//! descriptors. The reference is one memcpy of the same number of bytes between the same two
//! pools (prefill rank 0 to decode rank 0), so that both see the same pages and caches; engine
//! and memcpy are timed alternately and medians are printed.
//!
//! `cargo bench -p pdlaunch-kv --bench cpu_engine` (env `KV_BENCH_TOKENS`, default 2048;
//! `KV_BENCH_REPS`, default 9; `KV_BENCH_THREADS`, default the available parallelism).

use std::time::Instant;

use pdlaunch_core::deployment::AttentionKind;
use pdlaunch_kv::case::{prepare, Case};
use pdlaunch_kv::dtype::KvDtype;
use pdlaunch_kv::engine::cpu::{disjoint_dst, execute, CpuEngine};
use pdlaunch_kv::engine::{gbps, median};
use pdlaunch_kv::geometry::{KvAttention, KvGeometry};
use pdlaunch_kv::layout::SideConfig;
use pdlaunch_kv::transfer::TransferBackend;

fn env(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let tokens = env("KV_BENCH_TOKENS", 2048);
    let reps = env("KV_BENCH_REPS", 9).max(1);
    let threads = CpuEngine::new(std::env::var("KV_BENCH_THREADS").ok().and_then(|v| v.parse().ok())).threads();
    let geometry =
        KvGeometry { kind: AttentionKind::Gqa, layers: 32, attention: KvAttention::Mha { kv_heads: 8, head_dim: 128 } };
    println!(
        "CPU engine vs one memcpy of the same bytes: {}, {tokens} tokens, {threads} thread(s), median of {reps}",
        geometry.describe()
    );
    println!(
        "{:<9} {:>5} {:>12} {:>10} {:>12} {:>12} {:>7}",
        "transfer", "page", "descriptors", "MiB", "engine GB/s", "memcpy GB/s", "ratio"
    );
    for backend in [TransferBackend::Mooncake, TransferBackend::Nixl] {
        for page in [1u32, 16, 64] {
            let side = SideConfig { page_size: page, dtype: KvDtype::Bf16, attn_tp: 1, pp: 1 };
            let case = Case { geometry, prefill: side, decode: side, backend, tokens, seed: 1 };
            let p = prepare(&case, None).expect("the bench case prepares");
            let prefill = p.prefill_pools();
            let mut decode = p.decode_pools();
            let bytes = p.plan.bytes();
            let n = bytes as usize;
            assert!(prefill[0].len() >= n && decode[0].len() >= n, "TP 1 pools hold the whole payload");
            let parallel: Vec<bool> = p.plan.pairs.iter().map(|x| disjoint_dst(&x.descriptors)).collect();
            let run_engine = |decode: &mut [Vec<u8>]| {
                let t = Instant::now();
                for (i, pair) in p.plan.pairs.iter().enumerate() {
                    if let Some(d) = pair.decode {
                        execute(&prefill[pair.prefill], &mut decode[d], &pair.descriptors, threads, parallel[i]);
                    }
                }
                t.elapsed().as_secs_f64()
            };
            // Warm-up, and a check that the bench moves the right bytes (the reference copy
            // overwrites the decode pool afterwards, which no longer matters).
            run_engine(&mut decode);
            assert!(p.verify(&decode).is_clean(), "bench transfer misplaced data");
            let (mut te, mut tm) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                te.push(run_engine(&mut decode));
                let t = Instant::now();
                decode[0][..n].copy_from_slice(&prefill[0][..n]);
                std::hint::black_box(&mut decode[0]);
                tm.push(t.elapsed().as_secs_f64());
            }
            let (e, m) = (gbps(bytes, median(te)), gbps(bytes, median(tm)));
            println!(
                "{:<9} {:>5} {:>12} {:>10.1} {:>12.2} {:>12.2} {:>7.2}",
                backend.name(),
                page,
                p.plan.descriptors(),
                bytes as f64 / (1 << 20) as f64,
                e,
                m,
                e / m
            );
        }
    }
}
