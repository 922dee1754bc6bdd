//! The linter on fixtures written in the style of public PD deployments (`tests/fixtures/lint/`):
//! each clean fixture lints clean; each mutant (page size, KV dtype, transfer backend, bootstrap
//! port, DeepEP mode, missing `--disaggregation-mode`, TP pairing) gives exactly the expected
//! findings at the expected `file:line` of both sides (`!` marks a place where the flag is
//! missing: the command that lacks it); `--fix` then removes what it can fix. Then the CLI: exit
//! codes, human output with snippets, JSON, SARIF, `--fix`, `--write` and `--to-deployment`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pdlaunch_core::lint::{self, Input, Options};
use pdlaunch_core::rules::Severity;

const BIN: &str = env!("CARGO_BIN_EXE_pdlaunch");

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/lint")
}

/// The files of each fixture.
const FIXTURES: &[(&str, &[&str])] = &[
    ("docs", &["docs-1p1d.sh"]),
    ("k8s", &["k8s-overlay/prefill.yaml", "k8s-overlay/decode.yaml"]),
    ("rbg", &["rbg-deepseek.yaml"]),
    ("rbg-lwp", &["rbg-leader-worker.yaml"]),
    ("ome", &["ome-llama-runtime.yaml"]),
    ("slurm", &["slurm-deepseek.sbatch"]),
    ("compose", &["docker-compose.yaml"]),
    ("srtctl", &["srtctl-qwen3-2p2d.yaml"]),
];

fn files_of(fixture: &str) -> &'static [&'static str] {
    FIXTURES.iter().find(|(n, _)| *n == fixture).map(|(_, f)| *f).expect("known fixture")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

struct Mutant {
    fixture: &'static str,
    name: &'static str,
    /// (file, text, replacement, expected number of occurrences).
    edits: &'static [(&'static str, &'static str, &'static str, usize)],
    /// Errors and warnings: (code, places as `file:line`, `!` when the flag is missing there).
    expect: &'static [(&'static str, &'static [&'static str])],
    /// Errors and warnings left after `--fix` (those without an automatic fix).
    after_fix: &'static [&'static str],
}

const MUTANTS: &[Mutant] = &[
    Mutant { fixture: "docs", name: "page", edits: &[("docs-1p1d.sh", "--port 30000 \\", "--port 30000 --page-size 64 \\", 1)], expect: &[("PD001", &["docs-1p1d.sh:12", "docs-1p1d.sh:15!"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "kv", edits: &[("docs-1p1d.sh", "--port 30001 \\", "--port 30001 --kv-cache-dtype fp8_e4m3 \\", 1)], expect: &[("PD002", &["docs-1p1d.sh:9!", "docs-1p1d.sh:18"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "transfer", edits: &[("docs-1p1d.sh", "--port 30001 \\", "--port 30001 --disaggregation-transfer-backend nixl \\", 1)], expect: &[("PD005", &["docs-1p1d.sh:9!", "docs-1p1d.sh:18"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "bootstrap", edits: &[("docs-1p1d.sh", "--port 30000 \\", "--port 30000 --disaggregation-bootstrap-port 9000 \\", 1)], expect: &[("PD017", &["docs-1p1d.sh:24", "docs-1p1d.sh:15!", "docs-1p1d.sh:12"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "deepep", edits: &[("docs-1p1d.sh", "--port 30001 \\", "--port 30001 --moe-a2a-backend deepep --deepep-mode normal \\", 1)], expect: &[("PD021", &["docs-1p1d.sh:18", "docs-1p1d.sh:18"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "nomode", edits: &[("docs-1p1d.sh", "  --disaggregation-mode decode \\\n", "", 1)], expect: &[("PD037", &["docs-1p1d.sh:15!"])], after_fix: &[] },
    Mutant { fixture: "docs", name: "tp", edits: &[("docs-1p1d.sh", "--port 30001 \\", "--port 30001 --tp-size 2 \\", 1)], expect: &[("PD009", &["docs-1p1d.sh:9!", "docs-1p1d.sh:18"])], after_fix: &["PD009"] },
    Mutant { fixture: "k8s", name: "page", edits: &[("k8s-overlay/decode.yaml", "\"--page-size=64\"", "\"--page-size=16\"", 1)], expect: &[("PD001", &["k8s-overlay/prefill.yaml:28", "k8s-overlay/decode.yaml:28"])], after_fix: &[] },
    Mutant { fixture: "k8s", name: "kv", edits: &[("k8s-overlay/decode.yaml", "            - \"--tp-size=1\"\n", "            - \"--tp-size=1\"\n            - \"--kv-cache-dtype=fp8_e4m3\"\n", 1)], expect: &[("PD002", &["k8s-overlay/prefill.yaml:23!", "k8s-overlay/decode.yaml:30"])], after_fix: &[] },
    Mutant { fixture: "k8s", name: "transfer", edits: &[("k8s-overlay/decode.yaml", "transfer-backend=nixl", "transfer-backend=mooncake", 1)], expect: &[("PD005", &["k8s-overlay/prefill.yaml:27", "k8s-overlay/decode.yaml:27"])], after_fix: &[] },
    // The fix gives the router entry the prefill's port, which the prefill's Service does not expose.
    Mutant { fixture: "k8s", name: "bootstrap", edits: &[("k8s-overlay/prefill.yaml", "bootstrap-port=8998", "bootstrap-port=9000", 1)], expect: &[("PD017", &["k8s-overlay/decode.yaml:63", "k8s-overlay/prefill.yaml:32"])], after_fix: &["PD017"] },
    Mutant { fixture: "k8s", name: "deepep", edits: &[("k8s-overlay/decode.yaml", "            - \"--tp-size=1\"\n", "            - \"--tp-size=1\"\n            - \"--moe-a2a-backend=deepep\"\n            - \"--deepep-mode=normal\"\n", 1)], expect: &[("PD021", &["k8s-overlay/decode.yaml:31", "k8s-overlay/decode.yaml:30"])], after_fix: &[] },
    Mutant { fixture: "k8s", name: "nomode", edits: &[("k8s-overlay/decode.yaml", "            - \"--disaggregation-mode=decode\"\n", "", 1)], expect: &[("PD037", &["k8s-overlay/decode.yaml:23!"])], after_fix: &[] },
    Mutant { fixture: "k8s", name: "service", edits: &[("k8s-overlay/prefill.yaml", "    - {name: bootstrap, port: 8998}\n", "", 1)], expect: &[("PD017", &["k8s-overlay/decode.yaml:63", "k8s-overlay/prefill.yaml:54"])], after_fix: &["PD017"] },
    Mutant { fixture: "k8s", name: "replicas", edits: &[("k8s-overlay/prefill.yaml", "  replicas: 1 ", "  replicas: 3 ", 1)], expect: &[("PD051", &["k8s-overlay/decode.yaml:63", "k8s-overlay/prefill.yaml:31"])], after_fix: &["PD051"] },
    Mutant { fixture: "k8s", name: "tp", edits: &[("k8s-overlay/decode.yaml", "\"--tp-size=1\"", "\"--tp-size=3\"", 1)], expect: &[("PD038", &["k8s-overlay/decode.yaml:29"])], after_fix: &["PD038"] },
    Mutant { fixture: "rbg", name: "page", edits: &[("rbg-deepseek.yaml", "--page-size 64 \\\n                    --mem-fraction-static 0.8 --max", "--page-size 32 \\\n                    --mem-fraction-static 0.8 --max", 1)], expect: &[("PD001", &["rbg-deepseek.yaml:47", "rbg-deepseek.yaml:73"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "kv", edits: &[("rbg-deepseek.yaml", "--deepep-mode normal \\", "--deepep-mode normal --kv-cache-dtype fp8_e4m3 \\", 1)], expect: &[("PD002", &["rbg-deepseek.yaml:46", "rbg-deepseek.yaml:65!"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "transfer", edits: &[("rbg-deepseek.yaml", "--disaggregation-mode decode \\\n                    --disaggregation-transfer-backend mooncake", "--disaggregation-mode decode \\\n                    --disaggregation-transfer-backend nixl", 1)], expect: &[("PD005", &["rbg-deepseek.yaml:43", "rbg-deepseek.yaml:69"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "bootstrap", edits: &[("rbg-deepseek.yaml", ":8000 8998", ":8000 9000", 1)], expect: &[("PD017", &["rbg-deepseek.yaml:22", "rbg-deepseek.yaml:39!"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "deepep", edits: &[("rbg-deepseek.yaml", "--deepep-mode low_latency", "--deepep-mode normal", 1)], expect: &[("PD021", &["rbg-deepseek.yaml:72", "rbg-deepseek.yaml:72"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "nomode", edits: &[("rbg-deepseek.yaml", "                    --disaggregation-mode decode \\\n", "", 1)], expect: &[("PD037", &["rbg-deepseek.yaml:65!"])], after_fix: &[] },
    Mutant { fixture: "rbg", name: "tp", edits: &[("rbg-deepseek.yaml", "--tp 8 --dp 8 --enable-dp-attention \\\n                    --moe-a2a-backend deepep --deepep-mode normal", "--tp 8 --dp 4 --enable-dp-attention \\\n                    --moe-a2a-backend deepep --deepep-mode normal", 1), ("rbg-deepseek.yaml", "--tp 8 --dp 8 --enable-dp-attention \\\n                    --moe-a2a-backend deepep --deepep-mode low_latency", "--tp 6 --dp 2 --enable-dp-attention \\\n                    --moe-a2a-backend deepep --deepep-mode low_latency", 1)], expect: &[("PD007", &["rbg-deepseek.yaml:45", "rbg-deepseek.yaml:71"]), ("PD038", &["rbg-deepseek.yaml:71"])], after_fix: &["PD007", "PD038"] },
    Mutant { fixture: "rbg-lwp", name: "page", edits: &[("rbg-leader-worker.yaml", "--page-size 64 --mem-fraction-static 0.8 --max", "--page-size 32 --mem-fraction-static 0.8 --max", 1)], expect: &[("PD001", &["rbg-leader-worker.yaml:57", "rbg-leader-worker.yaml:94"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "kv", edits: &[("rbg-leader-worker.yaml", "--deepep-mode normal \\", "--deepep-mode normal --kv-cache-dtype fp8_e4m3 \\", 1)], expect: &[("PD002", &["rbg-leader-worker.yaml:56", "rbg-leader-worker.yaml:85!"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "transfer", edits: &[("rbg-leader-worker.yaml", "--disaggregation-mode decode \\\n                      --disaggregation-transfer-backend mooncake", "--disaggregation-mode decode \\\n                      --disaggregation-transfer-backend nixl", 1)], expect: &[("PD005", &["rbg-leader-worker.yaml:51", "rbg-leader-worker.yaml:88"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "bootstrap", edits: &[("rbg-leader-worker.yaml", "- \"8998\"", "- \"9000\"", 1)], expect: &[("PD017", &["rbg-leader-worker.yaml:23", "rbg-leader-worker.yaml:48!"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "deepep", edits: &[("rbg-leader-worker.yaml", "--deepep-mode low_latency", "--deepep-mode normal", 1)], expect: &[("PD021", &["rbg-leader-worker.yaml:93", "rbg-leader-worker.yaml:93", "rbg-leader-worker.yaml:93", "rbg-leader-worker.yaml:93"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "nomode", edits: &[("rbg-leader-worker.yaml", "                      --disaggregation-mode decode \\\n", "", 1)], expect: &[("PD037", &["rbg-leader-worker.yaml:85!", "rbg-leader-worker.yaml:85!"])], after_fix: &[] },
    Mutant { fixture: "rbg-lwp", name: "tp", edits: &[("rbg-leader-worker.yaml", "--tp 16 --dp 16 --enable-dp-attention \\\n                      --moe-a2a-backend deepep --deepep-mode low_latency", "--tp 16 --dp 6 --enable-dp-attention \\\n                      --moe-a2a-backend deepep --deepep-mode low_latency", 1)], expect: &[("PD028", &["rbg-leader-worker.yaml:92", "rbg-leader-worker.yaml:92", "rbg-leader-worker.yaml:92", "rbg-leader-worker.yaml:92"]), ("PD040", &["rbg-leader-worker.yaml:94"])], after_fix: &["PD028", "PD040"] },
    Mutant { fixture: "ome", name: "page", edits: &[("ome-llama-runtime.yaml", "\"--disaggregation-mode=decode\", \"--disaggregation-ib-device=mlx5_0\",\n             \"--page-size=32\"", "\"--disaggregation-mode=decode\", \"--disaggregation-ib-device=mlx5_0\",\n             \"--page-size=64\"", 1)], expect: &[("PD001", &["ome-llama-runtime.yaml:26", "ome-llama-runtime.yaml:38"])], after_fix: &[] },
    Mutant { fixture: "ome", name: "kv", edits: &[("ome-llama-runtime.yaml", "\"--page-size=32\", \"--kv-cache-dtype=fp8_e4m3\"]\n      env:\n        - {name: MODEL_PATH, value: /mnt/models/llama-3-3-70b-instruct}\n      resources:\n        limits: {nvidia.com/gpu: 4}\n  routerConfig", "\"--page-size=32\"]\n      env:\n        - {name: MODEL_PATH, value: /mnt/models/llama-3-3-70b-instruct}\n      resources:\n        limits: {nvidia.com/gpu: 4}\n  routerConfig", 1)], expect: &[("PD002", &["ome-llama-runtime.yaml:26", "ome-llama-runtime.yaml:35!"])], after_fix: &[] },
    Mutant { fixture: "ome", name: "nomode", edits: &[("ome-llama-runtime.yaml", "\"--disaggregation-mode=decode\", ", "", 1)], expect: &[("PD037", &["ome-llama-runtime.yaml:35!"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "page", edits: &[("slurm-deepseek.sbatch", "--disaggregation-mode decode --host", "--disaggregation-mode decode --page-size 32 --host", 2)], expect: &[("PD001", &["slurm-deepseek.sbatch:15", "slurm-deepseek.sbatch:27"]), ("PD041", &["slurm-deepseek.sbatch:15", "slurm-deepseek.sbatch:27"]), ("PD041", &["slurm-deepseek.sbatch:15", "slurm-deepseek.sbatch:32"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "kv", edits: &[("slurm-deepseek.sbatch", "--disaggregation-mode decode --host", "--disaggregation-mode decode --kv-cache-dtype fp8_e4m3 --host", 2)], expect: &[("PD002", &["slurm-deepseek.sbatch:17!", "slurm-deepseek.sbatch:27"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "transfer", edits: &[("slurm-deepseek.sbatch", "--disaggregation-mode prefill --host", "--disaggregation-mode prefill --disaggregation-transfer-backend nixl --host", 2)], expect: &[("PD005", &["slurm-deepseek.sbatch:18", "slurm-deepseek.sbatch:15"]), ("PD041", &["slurm-deepseek.sbatch:15", "slurm-deepseek.sbatch:18"]), ("PD041", &["slurm-deepseek.sbatch:15", "slurm-deepseek.sbatch:22"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "bootstrap", edits: &[("slurm-deepseek.sbatch", ":30000 8998", ":30000 9000", 1)], expect: &[("PD017", &["slurm-deepseek.sbatch:40", "slurm-deepseek.sbatch:17!"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "deepep", edits: &[("slurm-deepseek.sbatch", "--deepep-mode low_latency", "--deepep-mode normal", 2)], expect: &[("PD021", &["slurm-deepseek.sbatch:29", "slurm-deepseek.sbatch:29"]), ("PD021", &["slurm-deepseek.sbatch:34", "slurm-deepseek.sbatch:34"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "nomode", edits: &[("slurm-deepseek.sbatch", "--disaggregation-mode decode ", "", 2)], expect: &[("PD037", &["slurm-deepseek.sbatch:26!", "slurm-deepseek.sbatch:31!"])], after_fix: &[] },
    Mutant { fixture: "slurm", name: "tp", edits: &[("slurm-deepseek.sbatch", "--tp-size 16 --attn-dp-size 8 --moe-a2a-backend deepep --deepep-mode low_latency", "--tp-size 12 --attn-dp-size 4 --moe-a2a-backend deepep --deepep-mode low_latency", 2)], expect: &[("PD007", &["slurm-deepseek.sbatch:20", "slurm-deepseek.sbatch:29"]), ("PD038", &["slurm-deepseek.sbatch:29", "slurm-deepseek.sbatch:34"]), ("PD040", &["slurm-deepseek.sbatch:30"])], after_fix: &["PD007", "PD038", "PD040"] },
    Mutant { fixture: "compose", name: "page", edits: &[("docker-compose.yaml", "      --page-size 16\n", "      --page-size 64\n", 1)], expect: &[("PD001", &["docker-compose.yaml:23", "docker-compose.yaml:42"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "kv", edits: &[("docker-compose.yaml", "      - \"16\"\n", "      - \"16\"\n      - --kv-cache-dtype\n      - fp8_e5m2\n", 1)], expect: &[("PD002", &["docker-compose.yaml:25", "docker-compose.yaml:40!"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "transfer", edits: &[("docker-compose.yaml", "      --disaggregation-transfer-backend nixl\n", "      --disaggregation-transfer-backend mooncake\n", 1)], expect: &[("PD005", &["docker-compose.yaml:21", "docker-compose.yaml:41"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "bootstrap", edits: &[("docker-compose.yaml", "\"http://127.0.0.1:30000\", \"8998\"", "\"http://127.0.0.1:30000\", \"8999\"", 1)], expect: &[("PD017", &["docker-compose.yaml:56", "docker-compose.yaml:27"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "deepep", edits: &[("docker-compose.yaml", "      --port 30001\n", "      --port 30001\n      --moe-a2a-backend deepep --deepep-mode normal\n", 1)], expect: &[("PD021", &["docker-compose.yaml:44", "docker-compose.yaml:44"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "nomode", edits: &[("docker-compose.yaml", "      --disaggregation-mode decode\n", "", 1)], expect: &[("PD037", &["docker-compose.yaml:38!"])], after_fix: &[] },
    Mutant { fixture: "compose", name: "tp", edits: &[("docker-compose.yaml", "      --port 30001\n", "      --port 30001\n      --tp-size 2\n", 1)], expect: &[("PD009", &["docker-compose.yaml:14!", "docker-compose.yaml:44"])], after_fix: &["PD009"] },

    Mutant { fixture: "srtctl", name: "page", edits: &[("srtctl-qwen3-2p2d.yaml", "dp-size: 2\n      page-size: 32", "dp-size: 2\n      page-size: 64", 1)], expect: &[("PD001", &["srtctl-qwen3-2p2d.yaml:32", "srtctl-qwen3-2p2d.yaml:47"])], after_fix: &[] },
    Mutant { fixture: "srtctl", name: "kv", edits: &[("srtctl-qwen3-2p2d.yaml", "      kv-cache-dtype: \"fp8_e4m3\"\n      disaggregation-mode: \"decode\"", "      disaggregation-mode: \"decode\"", 1)], expect: &[("PD002", &["srtctl-qwen3-2p2d.yaml:33", "srtctl-qwen3-2p2d.yaml:41!"])], after_fix: &[] },
    Mutant { fixture: "srtctl", name: "transfer", edits: &[("srtctl-qwen3-2p2d.yaml", "disaggregation-mode: \"decode\"\n      disaggregation-transfer-backend: nixl", "disaggregation-mode: \"decode\"\n      disaggregation-transfer-backend: mooncake", 1)], expect: &[("PD005", &["srtctl-qwen3-2p2d.yaml:35", "srtctl-qwen3-2p2d.yaml:50"])], after_fix: &[] },
    Mutant { fixture: "srtctl", name: "bootstrap", edits: &[("srtctl-qwen3-2p2d.yaml", "      disaggregation-mode: \"prefill\"\n", "      disaggregation-mode: \"prefill\"\n      disaggregation-bootstrap-port: 30001\n", 1)], expect: &[("PD019", &["srtctl-qwen3-2p2d.yaml:35", "srtctl-qwen3-2p2d.yaml:35"])], after_fix: &["PD019"] },
    Mutant { fixture: "srtctl", name: "deepep", edits: &[("srtctl-qwen3-2p2d.yaml", "      max-running-requests: 256\n", "      max-running-requests: 256\n      moe-a2a-backend: deepep\n      deepep-mode: normal\n", 1)], expect: &[("PD021", &["srtctl-qwen3-2p2d.yaml:55", "srtctl-qwen3-2p2d.yaml:54", "srtctl-qwen3-2p2d.yaml:55", "srtctl-qwen3-2p2d.yaml:54"])], after_fix: &[] },
    Mutant { fixture: "srtctl", name: "tp", edits: &[("srtctl-qwen3-2p2d.yaml", "      tp-size: 4\n      dp-size: 2", "      tp-size: 3\n      dp-size: 2", 1)], expect: &[("PD007", &["srtctl-qwen3-2p2d.yaml:31", "srtctl-qwen3-2p2d.yaml:45"]), ("PD038", &["srtctl-qwen3-2p2d.yaml:45", "srtctl-qwen3-2p2d.yaml:45"]), ("PD009", &["srtctl-qwen3-2p2d.yaml:31", "srtctl-qwen3-2p2d.yaml:45"])], after_fix: &["PD007", "PD038", "PD009"] },
];

fn inputs(fixture: &str, edits: &[(&str, &str, &str, usize)]) -> Vec<Input> {
    files_of(fixture)
        .iter()
        .map(|f| {
            let mut text = read(f);
            for (file, from, to, n) in edits {
                if file == f {
                    assert_eq!(text.matches(from).count(), *n, "{fixture}: `{from}` in {f}");
                    text = text.replace(from, to);
                }
            }
            Input::new(*f, text)
        })
        .collect()
}

/// Errors and warnings as (code, places).
fn summary(l: &lint::Linted) -> Vec<(String, Vec<String>)> {
    l.findings
        .iter()
        .filter(|f| f.finding.severity != Severity::Note)
        .map(|f| {
            let places =
                f.places.iter().map(|p| format!("{}:{}{}", p.file, p.line, if p.missing { "!" } else { "" })).collect();
            (f.finding.code.to_owned(), places)
        })
        .collect()
}

#[test]
fn clean_fixtures_lint_clean() {
    for (name, _) in FIXTURES {
        let l = lint::lint(&inputs(name, &[]), &Options::default());
        assert!(l.unread.is_empty(), "{name}: {:?}", l.unread);
        assert!(l.launches.len() >= 3, "{name}: {} launches", l.launches.len());
        assert_eq!(summary(&l), Vec::<(String, Vec<String>)>::new(), "{name} is not clean");
    }
}

#[test]
fn every_mutant_gives_exactly_its_findings_at_both_places() {
    let mut failures = Vec::new();
    for m in MUTANTS {
        let l = lint::lint(&inputs(m.fixture, m.edits), &Options::default());
        let got = summary(&l);
        let want: Vec<(String, Vec<String>)> =
            m.expect.iter().map(|(c, p)| ((*c).to_owned(), p.iter().map(|s| (*s).to_owned()).collect())).collect();
        if got != want {
            failures.push(format!("{} / {}:\n  want {want:?}\n  got  {got:?}", m.fixture, m.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_has_every_mutant_kind() {
    for (name, _) in FIXTURES {
        let kinds: Vec<&str> = MUTANTS.iter().filter(|m| m.fixture == *name).map(|m| m.name).collect();
        let wanted: &[&str] = if *name == "ome" {
            &["page", "kv", "nomode"]
        } else if *name == "srtctl" {
            // srtctl passes `--disaggregation-mode` itself.
            &["page", "kv", "transfer", "bootstrap", "deepep", "tp"]
        } else {
            &["page", "kv", "transfer", "bootstrap", "deepep", "nomode", "tp"]
        };
        for k in wanted {
            assert!(kinds.contains(k), "{name} lacks a `{k}` mutant");
        }
    }
}

#[test]
fn fixes_remove_what_they_can() {
    let mut failures = Vec::new();
    for m in MUTANTS {
        let inputs = inputs(m.fixture, m.edits);
        let fixed = lint::edit::fix_all(&inputs, &Options::default());
        let after: Vec<Input> = inputs
            .iter()
            .map(|i| {
                fixed
                    .iter()
                    .find(|f| f.name == i.name)
                    .map_or_else(|| i.clone(), |f| Input::new(i.name.clone(), f.after.clone()))
            })
            .collect();
        let l = lint::lint(&after, &Options::default());
        let mut got: Vec<String> = summary(&l).into_iter().map(|(c, _)| c).collect();
        got.dedup();
        if got != m.after_fix {
            failures.push(format!("{} / {}: after --fix {got:?}, want {:?}", m.fixture, m.name, m.after_fix));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clean_fixtures_reconstruct_to_clean_deployments() {
    for (name, _) in FIXTURES {
        let l = lint::lint(&inputs(name, &[]), &Options::default());
        let Some(g) = (0..l.groups.len()).find(|&g| lint::reconstruct::deployment(&l, g).is_ok()) else {
            panic!("{name}: nothing reconstructed");
        };
        let r = lint::reconstruct::deployment(&l, g).unwrap();
        let report = pdlaunch_core::rules::check(&r.deployment);
        let errors: Vec<_> = report.findings.iter().filter(|f| f.severity == Severity::Error).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}\n{:#?}", r.deployment);
    }
}

// ---- the CLI ----

fn pdl(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN).args(args).current_dir(cwd).env("NO_COLOR", "1").stdin(Stdio::null()).output().expect("runs")
}

fn out(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn mutant_dir(fixture: &str, name: &str) -> tempfile::TempDir {
    let m = MUTANTS.iter().find(|m| m.fixture == fixture && m.name == name).expect("mutant");
    let tmp = tempfile::tempdir().unwrap();
    for i in inputs(m.fixture, m.edits) {
        let p = tmp.path().join(&i.name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, i.text).unwrap();
    }
    tmp
}

#[test]
fn cli_exit_codes() {
    let o = pdl(&["lint", "docs-1p1d.sh"], &dir());
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("1 file(s), 3 launch(es) in 1 deployment(s): 0 error(s), 0 warning(s)"), "{}", out(&o));
    let tmp = mutant_dir("docs", "page");
    let o = pdl(&["lint", "docs-1p1d.sh"], tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = pdl(&["lint", "no-such-file.sh"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    std::fs::write(tmp.path().join("empty.sh"), "echo hello\n").unwrap();
    let o = pdl(&["lint", "empty.sh"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("no SGLang launch"), "{}", out(&o));
    std::fs::write(tmp.path().join("bad.yaml"), "a: [b\n").unwrap();
    let o = pdl(&["lint", "bad.yaml", "docs-1p1d.sh"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("bad.yaml:"), "{}", out(&o));
}

#[test]
fn cli_human_output_shows_both_places_with_snippets() {
    let tmp = mutant_dir("docs", "page");
    let o = pdl(&["lint", "docs-1p1d.sh"], tmp.path());
    let s = out(&o);
    assert!(s.contains("error[PD001] page-size-mismatch"), "{s}");
    assert!(s.contains("--> docs-1p1d.sh:12:16 prefill[0] (docs-1p1d.sh:9) `--page-size`"), "{s}");
    assert!(s.contains("12 |   --port 30000 --page-size 64 \\"), "{s}");
    assert!(s.contains("--> docs-1p1d.sh:15:1 decode[0] (docs-1p1d.sh:15) `--page-size` not set here"), "{s}");
    assert!(s.contains("SGLang: Page size mismatch"), "{s}");
    assert!(s.contains("`--fix` would: docs-1p1d.sh:20:"), "{s}");
}

#[test]
fn cli_stdin_pasted_commands() {
    use std::io::Write;
    let text = "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --port 30000 --page-size 64\n\
                python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --port 30001 --page-size 1\n";
    let mut child = Command::new(BIN)
        .args(["lint", "-", "--format", "json"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["errors"], 1);
    let f = &v["findings"].as_array().unwrap().iter().find(|f| f["code"] == "PD001").unwrap()["places"];
    assert_eq!(f[0]["file"], "<stdin>");
    assert_eq!((f[0]["line"].as_u64(), f[1]["line"].as_u64()), (Some(1), Some(2)));
}

#[test]
fn cli_sarif() {
    let tmp = mutant_dir("k8s", "page");
    let o = pdl(&["lint", "--format", "sarif", "k8s-overlay/prefill.yaml", "k8s-overlay/decode.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "pdlaunch");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let r = run["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "PD001").unwrap();
    assert_eq!(r["level"], "error");
    assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], "PD001");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "k8s-overlay/prefill.yaml");
    assert_eq!(loc["region"]["startLine"], 28);
    assert_eq!(r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 28);
    assert_eq!(r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"], "k8s-overlay/decode.yaml");
}

#[test]
fn cli_fix_diff_then_write_with_backup() {
    let tmp = mutant_dir("compose", "page");
    let original = std::fs::read_to_string(tmp.path().join("docker-compose.yaml")).unwrap();
    let o = pdl(&["lint", "--fix", "docker-compose.yaml"], tmp.path());
    let s = String::from_utf8_lossy(&o.stdout).into_owned();
    // The prefill's list item keeps its quoting (Kubernetes and compose want strings).
    assert!(s.contains("--- a/docker-compose.yaml") && s.contains("-      - \"16\"\n+      - \"64\""), "{s}");
    // --fix alone changes nothing on disk.
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml")).unwrap(), original);
    // --write reports the findings it started from (exit 1), says what it fixed and wrote, and
    // writes the diff's text: the one list item changed.
    let o = pdl(&["lint", "--write", "docker-compose.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("fixed docker-compose.yaml: PD001: "), "{err}");
    assert!(err.contains("wrote docker-compose.yaml"), "{err}");
    assert_eq!(original.matches("      - \"16\"\n").count(), 1);
    let fixed = original.replacen("      - \"16\"\n", "      - \"64\"\n", 1);
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml")).unwrap(), fixed);
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml.bak")).unwrap(), original);
    let o = pdl(&["lint", "docker-compose.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // A second --write keeps the first backup and backs up the text it replaces next to it.
    std::fs::write(tmp.path().join("docker-compose.yaml"), &original).unwrap();
    let o = pdl(&["lint", "--write", "docker-compose.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml")).unwrap(), fixed);
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml.bak")).unwrap(), original);
    assert_eq!(std::fs::read_to_string(tmp.path().join("docker-compose.yaml.bak.1")).unwrap(), original);
}

#[test]
fn cli_to_deployment_never_overwrites() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("run.sh"), read("slurm-deepseek.sbatch")).unwrap();
    let o = pdl(&["lint", "run.sh", "--to-deployment", "dep.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let text = std::fs::read_to_string(tmp.path().join("dep.yaml")).unwrap();
    assert!(text.contains("tp: 16") && text.contains("attn_dp: 8") && text.contains("page_size: 64"), "{text}");
    let o = pdl(&["check", "dep.yaml"], tmp.path());
    assert!(o.status.code() == Some(0), "{}\n{text}", out(&o));
    let o = pdl(&["lint", "run.sh", "--to-deployment", "dep.yaml"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("never overwritten"), "{}", out(&o));
}

/// The formats that run the servers on an engine's pods.
const ENGINES: &[&str] = &["kubernetes", "rbg", "dynamo"];

/// For every example and engine format: `lint` of the rendered file finds no error or warning,
/// and `lint --to-deployment` of it gives a deployment that renders the same text again. The
/// `dynamo` format renders an example at SGLang 0.5.10 (which Dynamo 1.1.1's runtime ships; no
/// Dynamo release ships the examples' 0.5.23), and refuses, at its field, an example whose
/// multi-node instances rendezvous at a port of their own (the operator's is 29500).
#[test]
fn every_example_on_every_engine_lints_clean_and_comes_back() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = std::fs::read_dir(&examples).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    assert!(files.len() >= 4);
    let mut rendered = 0;
    for file in &files {
        for format in ENGINES {
            let tmp = tempfile::tempdir().unwrap();
            let mut source = std::fs::read_to_string(file).unwrap();
            if *format == "dynamo" {
                source = source.replace("sglang_version: \"0.5.23\"", "sglang_version: \"0.5.10.post1\"");
            }
            std::fs::write(tmp.path().join("in.yaml"), &source).unwrap();
            let example = file.display();
            let o = pdl(&["render", "--format", format, "in.yaml"], tmp.path());
            if *format == "dynamo" && o.status.code() == Some(2) {
                assert!(
                    out(&o).contains("in.yaml:") && out(&o).contains("dist_init_port` is 5000"),
                    "{example} {format}: {}",
                    out(&o)
                );
                continue;
            }
            assert_eq!(o.status.code(), Some(0), "{example} {format}: {}", out(&o));
            rendered += 1;
            let text = String::from_utf8(o.stdout).unwrap();
            std::fs::write(tmp.path().join("out.yaml"), &text).unwrap();
            let o = pdl(&["lint", "out.yaml"], tmp.path());
            assert_eq!(o.status.code(), Some(0), "{example} {format}: {}", out(&o));
            assert!(out(&o).contains(" 0 error(s), 0 warning(s)"), "{example} {format}: {}", out(&o));
            let o = pdl(&["lint", "out.yaml", "--to-deployment", "dep.yaml"], tmp.path());
            assert_eq!(o.status.code(), Some(0), "{example} {format}: {}", out(&o));
            let o = pdl(&["render", "--format", format, "dep.yaml"], tmp.path());
            assert_eq!(o.status.code(), Some(0), "{example} {format}: {}", out(&o));
            assert!(
                String::from_utf8(o.stdout).unwrap() == text,
                "{example} {format}: rendered again, the text differs"
            );
        }
    }
    assert_eq!(
        rendered,
        files.len() * ENGINES.len() - 1,
        "only the example with a rendezvous port of its own is refused, by dynamo"
    );
}

// ---- material as it is pasted from docs, job scripts and manifests ----

/// A piece of pasted material: fixture files (under `tests/fixtures/lint/`), edits made to them,
/// the errors and warnings it gives at `file:line:column`, and the files `--fix` must turn it
/// into (each clean twin: `(fixture, twin)`), when there are such.
struct Pasted {
    name: &'static str,
    files: &'static [&'static str],
    edits: &'static [(&'static str, &'static str, &'static str, usize)],
    expect: &'static [(&'static str, &'static [&'static str])],
    fixed: &'static [(&'static str, &'static str)],
}

const PASTED: &[Pasted] = &[
    // A comment after a `\` in the prefill; a blank line inside the decode: the decode loses its
    // page size, so the sides compare as they run.
    Pasted {
        name: "continuation-docs",
        files: &["pasted/continuation-docs.sh"],
        edits: &[],
        expect: &[
            ("PD001", &["continuation-docs.sh:8:3", "continuation-docs.sh:12:1!"]),
            ("PD024", &["continuation-docs.sh:9:16"]),
            ("PD055", &["continuation-docs.sh:9:16", "continuation-docs.sh:10:3"]),
            ("PD055", &["continuation-docs.sh:17:1", "continuation-docs.sh:18:3"]),
        ],
        fixed: &[("pasted/continuation-docs.sh", "pasted/continuation-docs-clean.sh")],
    },
    Pasted { name: "continuation-docs-clean", files: &["pasted/continuation-docs-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // A line without its `\` in a compose service's `bash -c` block.
    Pasted {
        name: "continuation-compose",
        files: &["pasted/continuation-compose.yaml"],
        edits: &[],
        expect: &[
            ("PD005", &["continuation-compose.yaml:19:11", "continuation-compose.yaml:27:9!"]),
            ("PD055", &["continuation-compose.yaml:31:26", "continuation-compose.yaml:32:11"]),
        ],
        fixed: &[("pasted/continuation-compose.yaml", "pasted/continuation-compose-clean.yaml")],
    },
    Pasted { name: "continuation-compose-clean", files: &["pasted/continuation-compose-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
    // Blanks after the `\` on a SLURM job's srun line of the second prefill node.
    Pasted {
        name: "continuation-slurm",
        files: &["slurm-deepseek.sbatch"],
        edits: &[("slurm-deepseek.sbatch", "--nnodes 2 --node-rank 1 \\\n    --tp-size 16 --attn-dp-size 8 --moe-a2a-backend deepep --deepep-mode normal", "--nnodes 2 --node-rank 1 \\  \n    --tp-size 16 --attn-dp-size 8 --moe-a2a-backend deepep --deepep-mode normal", 1)],
        // The node loses its TP and DeepEP settings: PD046 compares it with node 0 as it runs.
        expect: &[
            ("PD024", &["slurm-deepseek.sbatch:23:68"]),
            ("PD055", &["slurm-deepseek.sbatch:23:68", "slurm-deepseek.sbatch:24:5"]),
            ("PD046", &["slurm-deepseek.sbatch:20:5", "slurm-deepseek.sbatch:21:42!", "slurm-deepseek.sbatch:21:42!", "slurm-deepseek.sbatch:21:42!", "slurm-deepseek.sbatch:21:42!"]),
        ],
        fixed: &[("slurm-deepseek.sbatch", "slurm-deepseek.sbatch")],
    },
    // A comment line inside a RoleBasedGroup's `sh -c` block.
    Pasted {
        name: "continuation-k8s",
        files: &["rbg-deepseek.yaml"],
        edits: &[("rbg-deepseek.yaml", "                    --page-size 64 \\\n                    --mem-fraction-static 0.8 --max", "                    --page-size 64 \\\n                    # as the prefill\n                    --mem-fraction-static 0.8 --max", 1)],
        expect: &[("PD055", &["rbg-deepseek.yaml:74:21", "rbg-deepseek.yaml:75:21"])],
        fixed: &[],
    },
    // Files given together, one side each and no router: one deployment, the model paths compared
    // (an FP8 checkpoint against BF16 weights), and the cross-side checks run.
    Pasted {
        name: "pair-docs",
        files: &["pasted/pair-prefill.sh", "pasted/pair-decode.sh"],
        edits: &[],
        expect: &[
            ("PD001", &["pair-prefill.sh:7:3", "pair-decode.sh:3:1!"]),
            ("PD056", &["pair-prefill.sh:4:3", "pair-decode.sh:4:3"]),
        ],
        fixed: &[],
    },
    // The decode's path is the Hugging Face cache folder of the prefill's model: one model.
    Pasted { name: "pair-docs-clean", files: &["pasted/pair-prefill.sh", "pasted/pair-decode-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // Two SLURM jobs: another checkpoint of one geometry, and another transfer backend.
    Pasted {
        name: "pair-slurm",
        files: &["pasted/pair-prefill.sbatch", "pasted/pair-decode.sbatch"],
        edits: &[],
        expect: &[
            ("PD005", &["pair-prefill.sbatch:7:35", "pair-decode.sbatch:6:34"]),
            ("PD056", &["pair-prefill.sbatch:6:38", "pair-decode.sbatch:5:38"]),
        ],
        fixed: &[],
    },
    Pasted { name: "pair-slurm-clean", files: &["pasted/pair-prefill.sbatch", "pasted/pair-decode-clean.sbatch"], edits: &[], expect: &[], fixed: &[] },
    // Two Kubernetes Deployments: a local copy and its Hugging Face id are one model; the KV dtype
    // is compared across the files.
    Pasted {
        name: "pair-k8s",
        files: &["pasted/pair-prefill.yaml", "pasted/pair-decode.yaml"],
        edits: &[],
        expect: &[("PD002", &["pair-prefill.yaml:22:15", "pair-decode.yaml:17:21!"])],
        fixed: &[],
    },
    Pasted { name: "pair-k8s-clean", files: &["pasted/pair-prefill.yaml", "pasted/pair-decode-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
    // One command per machine with `--host ${local_ip}`, as the PD guide writes a 2P2D DeepSeek:
    // the four nodes share no GPU (a note says what sharing one would break); the guide's
    // deprecated DP-attention switch is all there is to warn about.
    Pasted {
        name: "per-node-docs",
        files: &["pasted/per-node-docs.sh"],
        edits: &[],
        expect: &[
            ("PD026", &["per-node-docs.sh:5:291"]),
            ("PD026", &["per-node-docs.sh:7:291"]),
            ("PD026", &["per-node-docs.sh:9:289"]),
            ("PD026", &["per-node-docs.sh:11:289"]),
        ],
        fixed: &[],
    },
    // One script that starts both in the background on its machine: they share GPUs 0-1.
    Pasted {
        name: "per-node-one-machine",
        files: &["pasted/per-node-one-machine.sh"],
        edits: &[],
        expect: &[("PD020", &["per-node-one-machine.sh:4:1", "per-node-one-machine.sh:5:1"])],
        fixed: &[],
    },
    // A cookbook's per-node blocks: a prefill over two nodes (`--node-rank 0/1`, one
    // `--dist-init-addr`) binding `$NODE_ADDR`, and a decode binding `$(hostname -i)`: three
    // machines, nothing to report.
    Pasted { name: "per-node-hostname", files: &["pasted/per-node-hostname.sh"], edits: &[], expect: &[], fixed: &[] },
    // One 8-GPU node split with CUDA_VISIBLE_DEVICES (0-3 and 4-7), the two commands run in two
    // terminals: one machine, so one port for both is an error, not a note.
    Pasted {
        name: "per-node-cvd-split",
        files: &["pasted/per-node-cvd-split.sh"],
        edits: &[],
        expect: &[("PD019", &["per-node-cvd-split.sh:8:61", "per-node-cvd-split.sh:12:60"])],
        fixed: &[],
    },
    Pasted { name: "per-node-cvd-split-clean", files: &["pasted/per-node-cvd-split-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // The same split with `--base-gpu-id 0` and `4`, the ports apart.
    Pasted { name: "per-node-base-gpu", files: &["pasted/per-node-base-gpu.sh"], edits: &[], expect: &[], fixed: &[] },
    // The same GPU set in both commands is each node's own: one port for both is a note only.
    Pasted { name: "per-node-overlap", files: &["pasted/per-node-overlap.sh"], edits: &[], expect: &[], fixed: &[] },
    // A SLURM job whose steps bind `$(hostname -i)` on the node `-w ${nodes[k]}` names: the two
    // decodes on one node share its port and GPUs; the clean twin gives each its own node.
    Pasted {
        name: "per-node-slurm",
        files: &["pasted/per-node-slurm.sbatch"],
        edits: &[],
        expect: &[
            ("PD019", &["per-node-slurm.sbatch:12:66", "per-node-slurm.sbatch:14:66"]),
            ("PD020", &["per-node-slurm.sbatch:11:38", "per-node-slurm.sbatch:13:38"]),
        ],
        fixed: &[],
    },
    Pasted { name: "per-node-slurm-clean", files: &["pasted/per-node-slurm-clean.sbatch"], edits: &[], expect: &[], fixed: &[] },
    // A LeaderWorkerSet prefill (`$(LWS_LEADER_ADDRESS)`) and a decode Deployment, each pod
    // binding `$(POD_IP)`: pods are machines of their own.
    Pasted { name: "per-node-k8s", files: &["pasted/per-node-k8s.yaml"], edits: &[], expect: &[], fixed: &[] },
    // An operator's prefill and decode Deployments, each pod binding `$(POD_IP)` on port 8000:
    // two pods, two machines.
    Pasted { name: "per-node-pods", files: &["pasted/per-node-pods.yaml"], edits: &[], expect: &[], fixed: &[] },
    // One pod whose container starts both servers, split over the GPUs: one machine, one port.
    Pasted {
        name: "per-node-k8s-pod",
        files: &["pasted/per-node-k8s-pod.yaml"],
        edits: &[],
        expect: &[("PD019", &["per-node-k8s-pod.yaml:18:70", "per-node-k8s-pod.yaml:20:69"])],
        fixed: &[],
    },
    Pasted { name: "per-node-k8s-pod-clean", files: &["pasted/per-node-k8s-pod-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
    // Compose services run side by side on one Docker host: `--base-gpu-id 0` twice shares GPUs.
    Pasted {
        name: "per-node-compose",
        files: &["pasted/per-node-compose.yaml"],
        edits: &[],
        expect: &[("PD020", &["per-node-compose.yaml:10:49", "per-node-compose.yaml:23:48"])],
        fixed: &[],
    },
    Pasted { name: "per-node-compose-clean", files: &["pasted/per-node-compose-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
    // A value SGLang reads with `json.loads`, written with Python's quotes, and as JSON.
    Pasted {
        name: "json-value",
        files: &["pasted/continuation-docs-clean.sh"],
        edits: &[("pasted/continuation-docs-clean.sh", "  --base-gpu-id 4 \\\n", "  --base-gpu-id 4 \\\n  --default-chat-template-kwargs \"{'enable_thinking': False}\" \\\n", 1)],
        expect: &[("PD024", &["continuation-docs-clean.sh:18:3"])],
        fixed: &[],
    },
    Pasted {
        name: "json-value-clean",
        files: &["pasted/continuation-docs-clean.sh"],
        edits: &[("pasted/continuation-docs-clean.sh", "  --base-gpu-id 4 \\\n", "  --base-gpu-id 4 \\\n  --default-chat-template-kwargs '{\"enable_thinking\": false}' \\\n", 1)],
        expect: &[],
        fixed: &[],
    },
    // Every launcher our users have: Dynamo's SGLang worker modules of its 0.4 releases, ...
    Pasted {
        name: "launchers-dynamo-modules",
        files: &["launchers/dynamo-modules.sh"],
        edits: &[],
        expect: &[("PD001", &["dynamo-modules.sh:12:3", "dynamo-modules.sh:22:3"])],
        fixed: &[],
    },
    Pasted { name: "launchers-dynamo-modules-clean", files: &["launchers/dynamo-modules-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // ... the example scripts they were before (`python3 components/worker.py`), ...
    Pasted {
        name: "launchers-dynamo-components",
        files: &["launchers/dynamo-components.sh"],
        edits: &[],
        expect: &[("PD005", &["dynamo-components.sh:16:3", "dynamo-components.sh:26:3"])],
        fixed: &[],
    },
    Pasted { name: "launchers-dynamo-components-clean", files: &["launchers/dynamo-components-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // ... `docker run --entrypoint python3 IMAGE -m ...` beside `docker run IMAGE python3 -m ...`,
    // each container given its own GPU, ...
    Pasted {
        name: "launchers-docker",
        files: &["launchers/docker-entrypoint.sh"],
        edits: &[],
        expect: &[("PD002", &["docker-entrypoint.sh:9:16!", "docker-entrypoint.sh:23:3"])],
        fixed: &[],
    },
    Pasted { name: "launchers-docker-clean", files: &["launchers/docker-entrypoint-clean.sh"], edits: &[], expect: &[], fixed: &[] },
    // ... `sglang serve` behind srun, env, numactl, nsys, timeout and nohup in a SLURM job, ...
    Pasted {
        name: "launchers-slurm",
        files: &["launchers/slurm-wrappers.sbatch"],
        edits: &[],
        expect: &[("PD001", &["slurm-wrappers.sbatch:15:46", "slurm-wrappers.sbatch:21:45"])],
        fixed: &[],
    },
    Pasted { name: "launchers-slurm-clean", files: &["launchers/slurm-wrappers-clean.sbatch"], edits: &[], expect: &[], fixed: &[] },
    // ... the interpreter as a Kubernetes container's command and the module in its args, ...
    Pasted {
        name: "launchers-k8s",
        files: &["launchers/k8s-entrypoint.yaml"],
        edits: &[],
        expect: &[("PD002", &["k8s-entrypoint.yaml:18:21!", "k8s-entrypoint.yaml:54:15"])],
        fixed: &[],
    },
    Pasted { name: "launchers-k8s-clean", files: &["launchers/k8s-entrypoint-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
    // ... and a compose service's entrypoint with the module in its command.
    Pasted {
        name: "launchers-compose",
        files: &["launchers/compose-entrypoint.yaml"],
        edits: &[],
        expect: &[("PD005", &["compose-entrypoint.yaml:14:7", "compose-entrypoint.yaml:23:17!"])],
        fixed: &[("launchers/compose-entrypoint.yaml", "launchers/compose-entrypoint-clean.yaml")],
    },
    Pasted { name: "launchers-compose-clean", files: &["launchers/compose-entrypoint-clean.yaml"], edits: &[], expect: &[], fixed: &[] },
];

#[test]
fn every_launcher_fixture_is_one_deployment_of_two_servers_and_a_router_or_two_workers() {
    for p in PASTED.iter().filter(|p| p.name.starts_with("launchers-")) {
        let l = lint::lint(&pasted_inputs(p), &Options::default());
        assert_eq!(l.groups.len(), 1, "{}", p.name);
        assert_eq!(l.groups[0].servers.len(), 2, "{}", p.name);
        assert!(l.seen.is_empty(), "{}", p.name);
    }
}

#[test]
fn cli_says_which_commands_were_read_when_none_starts_sglang() {
    let o = pdl(&["lint", "launchers/none-qualify.sh"], &dir());
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let text = out(&o);
    for want in [
        "none-qualify.sh:5:1: `python3 serve.py --model Qwen/Qwen3-8B ...`: `serve.py` is a script of its own",
        "none-qualify.sh:6:1: `python3 -m dynamo.frontend --http-port ...`: module `dynamo.frontend` starts no SGLang server",
        "none-qualify.sh:7:1: `dynamo-run in=http out=sglang --model-path ...`: `dynamo-run out=sglang` takes Dynamo's own options",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // `pip install "sglang[all]"` names SGLang but starts nothing.
    assert!(!text.contains("pip"), "{text}");
}

/// The placeholder notes of per-node material, and the machines `--to-deployment` gives its
/// nodes: the deployment it reconstructs checks with no error or warning.
#[test]
fn per_node_scripts_reconstruct_to_a_clean_deployment() {
    // (fixture, PD019/PD020 notes, the nodes' hosts in the deployment)
    let cases: &[(&str, usize, &[&str])] = &[
        // Prefill against decode only: the two nodes of one server never share a machine.
        ("per-node-docs", 2, &["machine-1", "machine-2", "machine-3", "machine-4"]),
        ("per-node-hostname", 0, &["machine-1", "machine-2", "$(hostname -i)"]),
        ("per-node-cvd-split-clean", 0, &["$HOST_IP", "$HOST_IP"]),
        ("per-node-base-gpu", 0, &["${HOST_IP}", "${HOST_IP}"]),
        ("per-node-overlap", 2, &["machine-1", "machine-2"]),
        ("per-node-slurm-clean", 0, &["machine-1", "machine-2", "machine-3"]),
        ("per-node-k8s", 0, &["qwen3-prefill-0.qwen3-prefill", "qwen3-prefill-0-1.qwen3-prefill", "machine-1"]),
        ("per-node-compose-clean", 0, &["${HOST_IP}", "${HOST_IP}"]),
        // The router the deployment adds takes a port neither server binds (8001).
        ("per-node-pods", 0, &["machine-1", "machine-2"]),
    ];
    for (name, notes, hosts) in cases {
        let p = PASTED.iter().find(|p| p.name == *name).unwrap();
        let l = lint::lint(&pasted_inputs(p), &Options::default());
        let said: Vec<&str> = l
            .findings
            .iter()
            .filter(|f| matches!(f.finding.code, "PD019" | "PD020"))
            .map(|f| f.finding.message.as_str())
            .collect();
        assert!(
            said.len() == *notes && said.iter().all(|m| m.starts_with("if these run on one machine")),
            "{name}: {said:?}"
        );
        let r = lint::reconstruct::deployment(&l, 0).unwrap();
        let got: Vec<&str> = r
            .deployment
            .prefill
            .instances
            .iter()
            .chain(&r.deployment.decode.instances)
            .flat_map(|i| &i.nodes)
            .map(|n| n.host.as_str())
            .collect();
        assert_eq!(got, *hosts, "{name}");
        let report = pdlaunch_core::rules::check(&r.deployment);
        let errors: Vec<_> = report.findings.iter().filter(|f| f.severity != Severity::Note).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn files_given_together_are_one_deployment() {
    for p in PASTED.iter().filter(|p| p.name.starts_with("pair-")) {
        let l = lint::lint(&pasted_inputs(p), &Options::default());
        assert_eq!(l.groups.len(), 1, "{}: {:?}", p.name, l.groups.iter().map(|g| &g.name).collect::<Vec<_>>());
        assert_eq!(l.groups[0].servers.len(), 2, "{}", p.name);
    }
}

/// Errors and warnings as (code, places as `file:line:column`, `!` where the flag is missing).
fn summary_at_columns(l: &lint::Linted) -> Vec<(String, Vec<String>)> {
    l.findings
        .iter()
        .filter(|f| f.finding.severity != Severity::Note)
        .map(|f| {
            let places = f
                .places
                .iter()
                .map(|p| {
                    let base = p.file.rsplit('/').next().unwrap_or(&p.file);
                    format!("{base}:{}:{}{}", p.line, p.column, if p.missing { "!" } else { "" })
                })
                .collect();
            (f.finding.code.to_owned(), places)
        })
        .collect()
}

fn pasted_inputs(p: &Pasted) -> Vec<Input> {
    p.files
        .iter()
        .map(|f| {
            let mut text = read(f);
            for (file, from, to, n) in p.edits {
                if file == f {
                    assert_eq!(text.matches(from).count(), *n, "{}: `{from}` in {f}", p.name);
                    text = text.replace(from, to);
                }
            }
            Input::new(*f, text)
        })
        .collect()
}

#[test]
fn pasted_material_gives_exactly_its_findings_and_fixes_to_its_clean_twin() {
    let mut failures = Vec::new();
    for p in PASTED {
        let inputs = pasted_inputs(p);
        let l = lint::lint(&inputs, &Options::default());
        let got = summary_at_columns(&l);
        let want: Vec<(String, Vec<String>)> =
            p.expect.iter().map(|(c, s)| ((*c).to_owned(), s.iter().map(|s| (*s).to_owned()).collect())).collect();
        if got != want {
            failures.push(format!("{}:\n  want {want:?}\n  got  {got:?}", p.name));
        }
        let fixed = lint::edit::fix_all(&inputs, &Options::default());
        let after: Vec<Input> = inputs
            .iter()
            .map(|i| {
                fixed.iter().find(|f| f.name == i.name).map_or_else(|| i.clone(), |f| Input::new(&i.name, &f.after))
            })
            .collect();
        let left = lint::lint(&after, &Options::default());
        if let Some(f) = left.findings.iter().find(|f| f.finding.code == "PD055") {
            failures.push(format!("{}: --fix leaves {}", p.name, f.finding.message));
        }
        for (file, twin) in p.fixed {
            let after = fixed.iter().find(|f| f.name == *file).map(|f| f.after.clone());
            if after.as_deref() != Some(read(twin).as_str()) {
                failures.push(format!("{}: --fix of {file} is not {twin}:\n{}", p.name, after.unwrap_or_default()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
