//! The probe of a fleet of 64 stand-in servers (32 prefills with their bootstrap info, 32
//! decodes), the whole `pdlaunch probe` process timed: minimum, median and maximum of 20 runs
//! (goal: under 2 s). `cargo bench -p pdlaunch --bench probe`.

use std::process::Command;
use std::time::{Duration, Instant};

#[allow(dead_code)]
#[path = "../../../tests/standin.rs"]
mod standin;

use standin::{fixture, Standin};

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing to run for long.
    let runs = if std::env::args().any(|a| a == "--bench") { 20 } else { 1 };
    let (p, r, d) =
        (fixture("clean/p0.server_info.json"), fixture("clean/p0.route.json"), fixture("clean/d0.server_info.json"));
    let prefills: Vec<Standin> = (0..32).map(|_| Standin::sglang(&p, Some(&r))).collect();
    let decodes: Vec<Standin> = (0..32).map(|_| Standin::sglang(&d, None)).collect();
    let mut args = vec!["probe".to_owned(), "--prefill".into()];
    args.extend(prefills.iter().map(Standin::url));
    args.push("--decode".into());
    args.extend(decodes.iter().map(Standin::url));
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let o = Command::new(env!("CARGO_BIN_EXE_pdlaunch")).args(&args).output().expect("pdlaunch runs");
            let took = started.elapsed();
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success() && out.contains("probed 64 servers (64 answered)"), "{out}");
            took
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "pdlaunch probe of 64 servers, {runs} runs: min {:.1} ms, median {:.1} ms, max {:.1} ms (goal: 2000 ms)",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}
