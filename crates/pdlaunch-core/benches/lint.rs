//! Lint throughput on a large generated corpus: shell scripts (docs style, with variables and
//! comments), SLURM jobs, Kubernetes manifests and compose files, each linted on its own as a CI
//! job linting many repositories would. Prints MB/s and files/s from a timed pass, then lets
//! criterion measure the same work (`cargo bench -p pdlaunch-core --bench lint`).

use std::time::Instant;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pdlaunch_core::lint::{lint, Input, Options};

/// The allocator the `pdlaunch` CLI uses, so the figures are what `pdlaunch lint` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DOCS: &str = include_str!("../../../tests/fixtures/lint/docs-1p1d.sh");
const SLURM: &str = include_str!("../../../tests/fixtures/lint/slurm-deepseek.sbatch");
const RBG: &str = include_str!("../../../tests/fixtures/lint/rbg-deepseek.yaml");
const COMPOSE: &str = include_str!("../../../tests/fixtures/lint/docker-compose.yaml");
const K8S_P: &str = include_str!("../../../tests/fixtures/lint/k8s-overlay/prefill.yaml");
const K8S_D: &str = include_str!("../../../tests/fixtures/lint/k8s-overlay/decode.yaml");

/// `n` files, each a fixture with its numbers varied (ports, page sizes) so that some drift and
/// some do not, padded with the comments and unrelated commands real scripts carry.
fn corpus(n: usize) -> Vec<Input> {
    let mut out = Vec::with_capacity(n);
    let pages = ["16", "32", "64", "1"];
    for i in 0..n {
        let page = pages[i % pages.len()];
        let port = 30000 + (i % 50) * 2;
        let (name, text) = match i % 5 {
            0 => {
                let mut t = format!("# job {i}: setup\nexport HF_HOME=/data/hf\nmkdir -p logs/{i}\n");
                t.push_str(
                    &DOCS
                        .replace("--port 30000", &format!("--port {port} --page-size {page}"))
                        .replace("127.0.0.1:30000", &format!("127.0.0.1:{port}")),
                );
                t.push_str(&"# health check loop\nfor i in $(seq 1 60); do curl -sf localhost:8000/health && break; sleep 5; done\n".repeat(4));
                (format!("job-{i}.sh"), t)
            }
            1 => (format!("slurm-{i}.sbatch"), SLURM.replace("--page-size 64", &format!("--page-size {page}"))),
            2 => (
                format!("rbg-{i}.yaml"),
                RBG.replace(
                    "--page-size 64 \\\n                    --mem",
                    &format!("--page-size {page} \\\n                    --mem"),
                ),
            ),
            3 => (format!("compose-{i}.yaml"), COMPOSE.replace("--page-size 16", &format!("--page-size {page}"))),
            _ => (
                format!("k8s-{i}.yaml"),
                format!("{K8S_P}---\n{}", K8S_D.replace("--page-size=64", &format!("--page-size={page}"))),
            ),
        };
        out.push(Input::new(name, text));
    }
    out
}

fn lint_each(files: &[Input]) -> usize {
    files.iter().map(|f| lint(std::slice::from_ref(f), &Options::default()).findings.len()).sum()
}

/// Seconds per pass of linting `files` one by one, and the findings of a pass.
fn timed(files: &[Input], passes: u32) -> (f64, usize) {
    let start = Instant::now();
    let mut findings = 0;
    for _ in 0..passes {
        findings = lint_each(black_box(files));
    }
    (start.elapsed().as_secs_f64() / f64::from(passes), findings)
}

fn bench(c: &mut Criterion) {
    let files = corpus(2000);
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    // Warm the lazily parsed SGLang specs.
    let _ = lint_each(&files[..10]);
    let passes = 3;
    let (secs, findings) = timed(&files, passes);
    println!(
        "lint corpus: {} files, {:.1} MB, {findings} findings per pass: {:.1} MB/s, {:.0} files/s (one core)",
        files.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs,
        files.len() as f64 / secs
    );
    // The readers alone (finding launches and their words), to show where the time goes.
    let start = Instant::now();
    for _ in 0..passes {
        for f in &files {
            black_box(pdlaunch_core::lint::config_paths(std::slice::from_ref(f)));
        }
    }
    let secs = start.elapsed().as_secs_f64() / passes as f64;
    println!("readers only: {:.1} MB/s, {:.0} files/s", bytes as f64 / 1e6 / secs, files.len() as f64 / secs);
    // Each kind of file alone (consecutive files of one kind are alike, which flatters branch
    // prediction: the mixed figure above is the one to quote).
    let kinds = ["shell scripts", "SLURM jobs", "RBG manifests", "compose files", "Kubernetes pairs"];
    for (k, kind) in kinds.iter().enumerate() {
        let some: Vec<Input> = files.iter().skip(k).step_by(kinds.len()).cloned().collect();
        let some_bytes: usize = some.iter().map(|f| f.text.len()).sum();
        let (secs, _) = timed(&some, passes);
        println!("  {kind} alone: {:.1} MB/s, {:.0} files/s", some_bytes as f64 / 1e6 / secs, some.len() as f64 / secs);
    }
    // One large deployment: LeaderWorkerSets of 64 pods each, every pod a process of one group.
    // The work per server and per finding must stay near linear as the group grows.
    let lws = "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  leaderWorkerTemplate:\n    \
        size: 64\n    workerTemplate:\n      spec:\n        containers:\n        - command: [python3, -m, \
        sglang.launch_server, --model-path, m, --disaggregation-mode, decode, --dist-init-addr, \
        $(LWS_LEADER_ADDRESS):5000, --nnodes, $(LWS_GROUP_SIZE), --node-rank, $(LWS_WORKER_INDEX)]\n";
    for docs in [25, 50, 100] {
        let input = Input::new("lws.yaml", vec![lws; docs].join("---\n"));
        let start = Instant::now();
        let launches = lint(std::slice::from_ref(&input), &Options::default()).launches.len();
        println!("  {docs} LeaderWorkerSets: {launches} launches in {:.3} s", start.elapsed().as_secs_f64());
    }
    let mut g = c.benchmark_group("lint");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    g.bench_function("corpus", |b| b.iter(|| lint_each(black_box(&files))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
