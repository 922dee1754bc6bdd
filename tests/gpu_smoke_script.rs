//! `scripts/gpu-smoke.sh` on a machine without a GPU: its syntax, its stop at once (with `ldd`)
//! when the binary cannot start, its check of every report's page size against the one asked,
//! the guards of its NIXL and Mooncake steps, and Mooncake across two GPUs when `nvidia-smi`
//! lists two, driven by a stand-in binary
//! (`tests/fixtures/gpu-smoke/fake-pdlaunch`) that writes the reports.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script() -> PathBuf {
    root().join("scripts/gpu-smoke.sh")
}

/// `file` copied to `dir/name` with `mode`.
fn install(file: &Path, dir: &Path, name: &str, mode: u32) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(file, &to).unwrap();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode)).unwrap();
    to
}

/// Runs the script on `bin`, results in `dir/out`, with `env` added.
fn gpu_smoke(dir: &Path, bin: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.arg(script()).arg(bin).env("OUT", dir.join("out")).env("FAKE_LOG", dir.join("calls.log"));
    c.env_remove("PDLAUNCH_NIXL_LIB")
        .env_remove("PDLAUNCH_GPU_MOONCAKE_PYTHON")
        .env("LIMIT", "30")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("bash runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn summary(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("out/summary.txt")).unwrap()
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log")).unwrap_or_default().lines().map(str::to_owned).collect()
}

#[test]
fn the_script_parses() {
    let o = Command::new("bash").arg("-n").arg(script()).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

/// A binary without its execute bit (as a careless copy leaves it) and one that fails as the
/// loader fails on a missing library: the script stops before any run, exit 2, with `ldd`.
#[test]
fn a_binary_that_cannot_start_stops_the_script_with_ldd() {
    let dir = tempfile::tempdir().unwrap();
    let bin = install(Path::new(env!("CARGO_BIN_EXE_pdlaunch")), dir.path(), "pdlaunch", 0o644);
    let o = gpu_smoke(dir.path(), &bin, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("gpu-smoke: {} cannot start: it is not executable", bin.display())),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains(&format!("gpu-smoke: ldd {}:", bin.display())), "{}", text(&o));
    if Command::new("ldd").arg("--version").output().is_ok() {
        assert!(text(&o).contains("libc.so.6"), "ldd's listing is shown:\n{}", text(&o));
    }
    assert!(!dir.path().join("out/summary.txt").exists() && !dir.path().join("out/llama-p1.yaml").exists());

    let broken = dir.path().join("broken");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'pdlaunch: error while loading shared libraries: libfoo.so.1: cannot open shared object file' >&2\nexit 127\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = gpu_smoke(dir.path(), &broken, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "'{} --version' failed: pdlaunch: error while loading shared libraries: libfoo.so.1",
            broken.display()
        )),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains(&format!("gpu-smoke: ldd {}:", broken.display())), "{}", text(&o));
    assert!(!dir.path().join("out/summary.txt").exists());
}

/// Every run's report is read back: a page size as asked passes, one other than asked (here
/// the decode's) fails the script with exit 1 and names the run, the page asked and the one
/// found.
#[test]
fn each_report_must_hold_the_page_size_asked() {
    let dir = tempfile::tempdir().unwrap();
    let fake = install(&root().join("tests/fixtures/gpu-smoke/fake-pdlaunch"), dir.path(), "pdlaunch", 0o755);
    let o = gpu_smoke(dir.path(), &fake, &[]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), summary(dir.path()));
    let s = summary(dir.path());
    for (run, page) in
        [("llama-p1", 1), ("llama-p16", 16), ("llama-p64", 64), ("llama-tp2-tp4", 16), ("deepseek-p64", 64)]
            .into_iter()
            .chain([("bw-p1", 1), ("bw-p16", 16), ("bw-p64", 64)])
    {
        let at = s.find(&format!("== {run} (exit 0)\n")).unwrap_or_else(|| panic!("{run} ran:\n{s}"));
        let next = s[at..].lines().find(|l| l.starts_with("  page size:")).unwrap();
        assert_eq!(
            next,
            format!("  page size: {page} in sides.prefill, sides.decode, layout.prefill, layout.decode, as asked")
        );
    }
    let smoke_calls: Vec<String> =
        calls(dir.path()).into_iter().filter(|c| c.starts_with("smoke ") && !c.contains("--help")).collect();
    assert_eq!(smoke_calls.len(), 8, "{smoke_calls:?}");
    assert!(smoke_calls.iter().all(|c| c.contains("--backend cuda")), "{smoke_calls:?}");

    let dir = tempfile::tempdir().unwrap();
    let fake = install(&root().join("tests/fixtures/gpu-smoke/fake-pdlaunch"), dir.path(), "pdlaunch", 0o755);
    let o = gpu_smoke(dir.path(), &fake, &[("FAKE_DECODE_PAGE", "4")]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", text(&o), summary(dir.path()));
    let s = summary(dir.path());
    assert!(
        s.contains(
            "== llama-p16 (exit 0)\nverdict: PASS\n  page size: asked 16, but the report has sides.decode 4, layout.decode 4: the run did not test that page size\n"
        ),
        "{s}"
    );
    assert!(!s.contains("as asked"), "{s}");
}

/// The NIXL VRAM step runs only with PDLAUNCH_NIXL_LIB set and a binary whose parser takes
/// `--transport nixl`, and then as two runs on the CUDA backend; otherwise the summary says why
/// it was skipped.
#[test]
fn the_nixl_step_is_guarded() {
    for (lib, nixl, skipped) in [
        (None, true, Some("== nixl-vram: skipped: PDLAUNCH_NIXL_LIB is not set")),
        (Some("/opt/nixl/libnixl_capi.so"), false, Some("was built without NIXL (its smoke refuses --transport nixl)")),
        (Some("/opt/nixl/libnixl_capi.so"), true, None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fake = install(&root().join("tests/fixtures/gpu-smoke/fake-pdlaunch"), dir.path(), "pdlaunch", 0o755);
        let mut env = vec![];
        if let Some(l) = lib {
            env.push(("PDLAUNCH_NIXL_LIB", l));
        }
        if nixl {
            env.push(("FAKE_NIXL", "1"));
        }
        let o = gpu_smoke(dir.path(), &fake, &env);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let s = summary(dir.path());
        let nixl: Vec<String> =
            calls(dir.path()).into_iter().filter(|c| c.contains("--transport nixl") && !c.contains("--help")).collect();
        match skipped {
            Some(why) => {
                assert!(s.contains(why), "{s}");
                assert!(nixl.is_empty(), "{nixl:?}");
            }
            None => {
                assert!(!s.contains("== nixl-vram: skipped"), "{s}");
                assert_eq!(nixl.len(), 2, "{nixl:?}");
                for c in &nixl {
                    assert!(
                        c.contains("--backend cuda") && c.contains("--across local") && c.contains("--gpus 0"),
                        "{c}"
                    );
                }
                assert!(s.contains("== nixl-vram-p16 (exit 0)") && s.contains("== nixl-vram-bw-p64 (exit 0)"), "{s}");
                assert!(s.contains("  page size: 64 in sides.prefill"), "{s}");
            }
        }
    }
}

/// An `nvidia-smi` listing `gpus` GPUs for `-L`, in `dir/bin`; returns a PATH with it first.
fn nvidia_smi(dir: &Path, gpus: usize) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let list: String = (0..gpus).map(|i| format!("echo 'GPU {i}: NVIDIA H200 (UUID: GPU-{i})'\n")).collect();
    let smi = bin.join("nvidia-smi");
    std::fs::write(&smi, format!("#!/bin/sh\n[ \"$1\" = -L ] || exit 0\n{list}")).unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// The Mooncake VRAM step runs only with PDLAUNCH_GPU_MOONCAKE_PYTHON set to a Python that
/// imports mooncake.engine (here `true` stands in for one), then as two runs on one GPU on the
/// CUDA backend through that Python, and a third with the decode's pools on GPU 1 when
/// `nvidia-smi -L` lists two GPUs; otherwise the summary says why each part was skipped.
#[test]
fn the_mooncake_step_is_guarded_and_crosses_gpus_when_there_are_two() {
    for (python, gpus, skipped) in [
        (None, 2, Some("== mooncake-vram: skipped: PDLAUNCH_GPU_MOONCAKE_PYTHON is not set (a Python with Mooncake's CUDA wheel: pip install mooncake-transfer-engine==0.3.13.post1)")),
        (Some("false"), 2, Some("== mooncake-vram: skipped: false cannot import mooncake.engine (install Mooncake's CUDA wheel there")),
        (Some("true"), 1, Some("== mooncake-vram-2gpu: skipped: nvidia-smi -L lists 1 GPU(s), two are needed")),
        (Some("true"), 2, None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fake = install(&root().join("tests/fixtures/gpu-smoke/fake-pdlaunch"), dir.path(), "pdlaunch", 0o755);
        let path = nvidia_smi(dir.path(), gpus);
        let mut env = vec![("PATH", path.as_str())];
        if let Some(p) = python {
            env.push(("PDLAUNCH_GPU_MOONCAKE_PYTHON", p));
        }
        let o = gpu_smoke(dir.path(), &fake, &env);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let s = summary(dir.path());
        let runs: Vec<String> = calls(dir.path())
            .into_iter()
            .filter(|c| c.contains("--transport mooncake") && !c.contains("--help"))
            .collect();
        if let Some(why) = skipped {
            assert!(s.contains(why), "{s}");
        }
        let expected = match (python, gpus) {
            (Some("true"), 1) => 2,
            (Some("true"), _) => 3,
            _ => 0,
        };
        assert_eq!(runs.len(), expected, "{runs:?}");
        for (i, c) in runs.iter().enumerate() {
            assert!(
                c.contains("--backend cuda") && c.contains("--across local") && c.contains("--mooncake-python true"),
                "{c}"
            );
            assert!(c.contains(if i < 2 { "--gpus 0 " } else { "--gpus 0,1 " }), "{c}");
        }
        if expected > 0 {
            for run in ["mooncake-vram-p16", "mooncake-vram-bw-p64"] {
                let at = s.find(&format!("== {run} (exit 0)\n")).unwrap_or_else(|| panic!("{run} ran:\n{s}"));
                let page = s[at..].lines().find(|l| l.starts_with("  page size:")).unwrap();
                assert!(page.ends_with(", as asked"), "{page}");
            }
        }
        if expected == 3 {
            assert!(s.contains("== mooncake-vram-2gpu-p16 (exit 0)"), "{s}");
            assert!(!s.contains("skipped: nvidia-smi"), "{s}");
        }
    }
}
