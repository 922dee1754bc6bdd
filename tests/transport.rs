//! `pdlaunch smoke --transport nixl|mooncake`: the KV of one request moved between two agent
//! processes through the real libraries, across two network namespaces (the bytes cross a veth
//! interface: UCX over TCP, Mooncake's TCP transport), for MHA, GQA and MLA, page sizes 1, 16
//! and 64, one pair with different TP, each negative control caught through the transport;
//! and a decode pointed at a closed port or an unreachable address failing in time, naming it.
//!
//! The libraries come from the environment: `PDLAUNCH_TEST_NIXL_LIB` (NIXL's
//! `libnixl_capi.so`) and `PDLAUNCH_TEST_MOONCAKE_PYTHON` (a Python that imports `mooncake`);
//! `scripts/test.sh` installs both and sets them. Without one, its tests print why and skip.
//! Namespaces need root; without it the tests run the agents on this machine instead.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pdlaunch");

fn out(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The flags naming the library, or `None` (after saying why) when the environment lacks it.
fn library(transport: &str) -> Option<Vec<String>> {
    let (var, flag) = match transport {
        "nixl" => ("PDLAUNCH_TEST_NIXL_LIB", "--nixl-lib"),
        _ => ("PDLAUNCH_TEST_MOONCAKE_PYTHON", "--mooncake-python"),
    };
    if transport == "nixl" && !cfg!(feature = "nixl") {
        eprintln!("skipped: built without feature nixl (scripts/test.sh builds with --features pdlaunch/nixl)");
        return None;
    }
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(vec!["--transport".into(), transport.into(), flag.into(), v]),
        _ => {
            eprintln!("skipped: {var} is not set (scripts/test.sh installs {transport} and sets it)");
            None
        }
    }
}

fn write(name: &str, yaml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pdlaunch-transport-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, yaml).unwrap();
    p
}

fn deployment(attention: &str, page: u32, ptp: u32, dtp: u32) -> String {
    let geometry = match attention {
        "mla" => "{attention: mla, layers: 2, kv_lora_rank: 128, qk_rope_head_dim: 64}".to_owned(),
        "mha" => "{attention: mha, layers: 2, kv_heads: 8, head_dim: 64}".to_owned(),
        _ => "{attention: gqa, layers: 3, kv_heads: 4, head_dim: 64}".to_owned(),
    };
    format!(
        "name: t\nmodel: {{path: x/y, geometry: {geometry}}}\nshared: {{page_size: {page}}}\n\
         prefill: {{tp: {ptp}, instances: [{{nodes: [{{host: 10.0.0.1}}]}}]}}\n\
         decode: {{tp: {dtp}, instances: [{{nodes: [{{host: 10.0.0.2}}]}}]}}\n"
    )
}

/// Runs the smoke test through `transport`; asserts a pass with the transport's own figures.
fn pass(transport: &str, attention: &str, page: u32, ptp: u32, dtp: u32, controls: bool) {
    let Some(lib) = library(transport) else { return };
    let name = format!("{transport}-{attention}-p{page}-{ptp}x{dtp}");
    let file = write(&name, &deployment(attention, page, ptp, dtp));
    let json = file.with_extension("json");
    let across = if is_root() { "netns" } else { "local" };
    if !is_root() {
        eprintln!("not root: the agents run on this machine, not across namespaces");
    }
    let mut args: Vec<String> = vec!["smoke".into(), file.display().to_string(), "--tokens".into(), "96".into()];
    args.extend(lib);
    args.extend(["--across".into(), across.into(), "--timeout".into(), "60".into(), "--iterations".into(), "1".into()]);
    args.extend(["--json".into(), json.display().to_string()]);
    if across == "local" {
        args.extend(["--bootstrap".into(), "127.0.0.1:0".into()]);
    }
    if controls {
        args.push("--negative-control".into());
    }
    let o = Command::new(BIN).args(&args).env("NO_COLOR", "1").stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{name}: expected a pass:\n{}", out(&o));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["verdict"], "pass", "{name}");
    assert_eq!(r["environment"]["backend"], transport, "{name}: no fallback to another engine");
    let d = &r["dynamic"];
    assert_eq!(d["clean"], true, "{name}");
    let e = &d["engines"][0];
    assert_eq!(e["engine"], transport);
    assert_eq!(e["verification"]["ok"], e["verification"]["slices"], "{name}");
    assert!(e["verification"]["slices"].as_u64().unwrap() > 0, "{name}");
    assert!(e["gbps"].as_f64().unwrap() > 0.0 && e["reference"]["gbps"].as_f64().unwrap() > 0.0, "{name}");
    assert!(e["connection_seconds"].as_f64().is_some(), "{name}: connection cost reported apart");
    if across == "netns" {
        assert!(out(&o).contains("network namespaces"), "{name}");
    }
    if controls {
        let cs = r["negative_controls"].as_array().unwrap();
        let applicable: Vec<_> = cs.iter().filter(|c| c["applicable"] == true).collect();
        assert!(applicable.len() >= 3, "{name}: {cs:?}");
        for c in applicable {
            assert_eq!(c["caught"], true, "{name}: control {} missed", c["name"]);
        }
    }
}

#[test]
fn nixl_mha_page16_with_controls() {
    pass("nixl", "mha", 16, 2, 2, true);
}

#[test]
fn nixl_gqa_pages_1_and_64() {
    pass("nixl", "gqa", 1, 1, 1, false);
    pass("nixl", "gqa", 64, 2, 2, false);
}

#[test]
fn nixl_mla_page64_with_controls() {
    pass("nixl", "mla", 64, 2, 2, true);
}

#[test]
fn nixl_hetero_tp_with_controls() {
    pass("nixl", "gqa", 16, 4, 2, true);
}

#[test]
fn mooncake_mha_page16_with_controls() {
    pass("mooncake", "mha", 16, 2, 2, true);
}

#[test]
fn mooncake_gqa_pages_1_and_64() {
    pass("mooncake", "gqa", 1, 1, 1, false);
    pass("mooncake", "gqa", 64, 2, 2, false);
}

#[test]
fn mooncake_mla_page64_with_controls() {
    pass("mooncake", "mla", 64, 2, 2, true);
}

#[test]
fn mooncake_hetero_tp_with_controls() {
    pass("mooncake", "gqa", 16, 4, 2, true);
}

/// The decode side alone, pointed at `bootstrap`: exit 1 within the timeout, naming it.
fn unreachable(transport: &str, bootstrap: &str) {
    let Some(lib) = library(transport) else { return };
    let file = write(&format!("unreachable-{transport}"), &deployment("gqa", 16, 1, 1));
    let t = Instant::now();
    let mut args: Vec<String> = vec!["smoke".into(), file.display().to_string()];
    args.extend(lib);
    args.extend([
        "--side".into(),
        "decode".into(),
        "--bootstrap".into(),
        bootstrap.into(),
        "--timeout".into(),
        "3".into(),
    ]);
    let o = Command::new(BIN).args(&args).stdin(Stdio::null()).output().unwrap();
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains(bootstrap), "the error names {bootstrap}:\n{}", out(&o));
    assert!(!out(&o).contains("panicked"), "{}", out(&o));
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    drop(l);
    a
}

#[test]
fn a_closed_port_fails_in_time_naming_it() {
    unreachable("nixl", &closed_port());
    unreachable("mooncake", &closed_port());
}

#[test]
fn an_unreachable_address_fails_in_time_naming_it() {
    // TEST-NET-1 (RFC 5737): routed nowhere.
    unreachable("mooncake", "192.0.2.1:8998");
    unreachable("nixl", "192.0.2.1:8998");
}

#[test]
fn a_missing_library_is_an_environment_error_with_the_install_line() {
    let file = write("missing", &deployment("gqa", 16, 1, 1));
    let o = Command::new(BIN)
        .args(["smoke", file.to_str().unwrap(), "--transport", "nixl", "--nixl-lib", "/nonexistent/libnixl_capi.so"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("nixl"), "{}", out(&o));
    if cfg!(feature = "nixl") {
        assert!(out(&o).contains("pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1"), "{}", out(&o));
        // A file that is not the library: the agents find no libnixl_capi.so (is_stub) and stop
        // with the install line rather than aborting.
        let o = Command::new(BIN)
            .args(["smoke", file.to_str().unwrap(), "--transport", "nixl", "--nixl-lib", "/etc/hostname"])
            .args(["--bootstrap", "127.0.0.1:0", "--timeout", "20"])
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", out(&o));
        assert!(out(&o).contains("libnixl_capi.so cannot be loaded"), "{}", out(&o));
    }
    let o = Command::new(BIN)
        .args(["smoke", file.to_str().unwrap(), "--transport", "mooncake", "--mooncake-python", "/bin/false"])
        .args(["--bootstrap", "127.0.0.1:0", "--timeout", "20"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
}

/// `--backend cuda` with a transport puts the pools in GPU memory (NIXL `VRAM_SEG`). Without a
/// driver or a GPU it is refused before any library is looked for, exit 2, saying to use the
/// CPU; with one (and NIXL) it runs and passes, through two agents on this machine. The probe
/// decides which is expected.
#[test]
fn gpu_pools_need_a_gpu() {
    use pdlaunch_kv::engine::cuda::{probe, Probe};
    let file = write("vram", &deployment("gqa", 16, 1, 1));
    let mut args: Vec<String> = vec!["smoke".into(), file.display().to_string(), "--backend".into(), "cuda".into()];
    let gpu = matches!(probe(), Probe::Available { .. });
    match (gpu, library("nixl")) {
        (false, lib) => {
            // The refusal comes first whether or not NIXL is there.
            args.extend(lib.unwrap_or_else(|| vec!["--transport".into(), "nixl".into()]));
            for side in [None, Some("decode")] {
                let mut a = args.clone();
                if let Some(s) = side {
                    a.extend(["--side".into(), s.into(), "--bootstrap".into(), closed_port()]);
                }
                let o = Command::new(BIN).args(&a).args(["--timeout", "20"]).stdin(Stdio::null()).output().unwrap();
                assert_eq!(o.status.code(), Some(2), "{a:?}: {}", out(&o));
                assert!(
                    out(&o).contains("no CUDA driver / no GPU: --backend cuda needs one; use --backend cpu"),
                    "{a:?}: {}",
                    out(&o)
                );
            }
        }
        (true, None) => eprintln!("skipped: a GPU is here but NIXL is not"),
        (true, Some(lib)) => {
            args.extend(lib);
            args.extend(
                ["--across", "local", "--tokens", "96", "--timeout", "60", "--negative-control"].map(String::from),
            );
            let o = Command::new(BIN).args(&args).stdin(Stdio::null()).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", out(&o));
            assert!(out(&o).contains("VRAM_SEG regions on GPU 0"), "{}", out(&o));
            assert!(out(&o).contains("pools in GPU memory (prefill GPU 0, decode GPU "), "{}", out(&o));
        }
    }
}

/// `python` started with a stand-in CUDA driver (host memory as device memory, one GPU; built
/// from `crates/pdlaunch-kv/tests/fixtures/fake_libcuda.c`) on its loader path, as a program to
/// give `--mooncake-python`: only the Mooncake agent sees it, not pdlaunch. `from_source`: its
/// Mooncake shows no wheel name, as a build from source does (Python's list of installed
/// distributions comes back empty).
fn python_with_stand_in_driver(python: &str, from_source: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pdlaunch-transport-{}", std::process::id())).join("driver");
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pdlaunch-kv/tests/fixtures/fake_libcuda.c");
    let o = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(dir.join("libcuda.so.1")).arg(&src).output();
    let o = o.expect("a C compiler (cc) builds the stand-in driver");
    assert!(o.status.success(), "cc: {}", String::from_utf8_lossy(&o.stderr));
    let (wrapper, args) = if from_source {
        // The agent is started as `python -c SCRIPT`: run SCRIPT after the prelude.
        let prelude = "import sys, importlib.metadata as m; m.packages_distributions = lambda: {}; \
                       exec(compile(sys.argv[1], 'mooncake_agent', 'exec'), {'__name__': '__main__'})";
        (dir.join("python-from-source"), format!("-c \"{prelude}\" \"$2\""))
    } else {
        (dir.join("python"), "\"$@\"".to_owned())
    };
    let text = format!("#!/bin/sh\nLD_LIBRARY_PATH='{}' exec '{python}' {args}\n", dir.display());
    std::fs::write(&wrapper, text).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// `--backend cuda --transport mooncake`: Mooncake's Python agent allocates the GPU pools itself
/// (the memory it registers is its own, as SGLang's KV tensors are), so the refusals come from
/// it, through the real agent and wheel, exit 2. Without a driver: "cannot load libcuda.so.1",
/// use the CPU, for both sides together and a decode started alone. With a driver (the stand-in)
/// and the non-CUDA wheel that `scripts/test.sh` installs: the CUDA wheel's install line, since
/// that wheel fails every write of device memory; and `--gpus` reaches each side's agent (the
/// decode's GPU 1 is not on the stand-in's one GPU). On a GPU machine, the run passes with the
/// CUDA wheel, or names it.
#[test]
fn gpu_pools_through_mooncake_come_from_its_agent() {
    use pdlaunch_kv::engine::cuda::{probe, Probe};
    let Some(lib) = library("mooncake") else { return };
    let python = lib[3].clone();
    let file = write("vram-mooncake", &deployment("gqa", 16, 1, 1));
    let smoke = |python: &str, extra: &[&str]| {
        Command::new(BIN)
            .args(["smoke", file.to_str().unwrap(), "--transport", "mooncake", "--mooncake-python", python])
            .args(["--backend", "cuda", "--timeout", "30"])
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let both = ["--across", "local", "--bootstrap", "127.0.0.1:0"];
    let Probe::Unavailable { reason } = probe() else {
        let o = smoke(&python, &both);
        let text = out(&o);
        match o.status.code() {
            Some(0) => assert!(text.contains("pools allocated on GPU 0 by the Mooncake agent"), "{text}"),
            _ => assert!(text.contains("pip install mooncake-transfer-engine==0.3.13.post1"), "{text}"),
        }
        return;
    };
    let closed = closed_port();
    let decode = ["--side", "decode", "--bootstrap", closed.as_str()];
    for extra in [&both[..], &decode[..]] {
        let o = smoke(&python, extra);
        let text = out(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {text}");
        assert!(text.contains(&format!("the Mooncake agent ({python}): ")), "{extra:?}: {text}");
        assert!(text.contains("use --backend cpu"), "{extra:?}: {text}");
        assert!(!text.contains("VRAM_SEG") && !text.contains("panicked"), "{text}");
        if reason.contains("libcuda.so) was not found") {
            assert!(text.contains("cannot load libcuda.so.1 ("), "{extra:?}: {text}");
        }
    }
    let driver = python_with_stand_in_driver(&python, false);
    let driver = driver.to_str().unwrap();
    let o = smoke(driver, &[&both[..], &["--gpus", "0,1"]].concat());
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("has Mooncake's non-CUDA wheel (mooncake-transfer-engine-non-cuda)"), "{text}");
    assert!(
        text.contains("install the CUDA wheel there, pip install mooncake-transfer-engine==0.3.13.post1"),
        "{text}"
    );
    let o = smoke(driver, &[&decode[..], &["--gpus", "0,1"]].concat());
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("GPU 1 was asked for, the driver shows 1: give --gpus indices below 1, or use --backend cpu"),
        "{text}"
    );
    // A Mooncake without a wheel name is let through; with the stand-in's device memory being
    // host memory, the non-CUDA engine moves it, so the whole GPU path runs: staged in, device
    // addresses registered and written, read back, verified, every control caught.
    let from_source = python_with_stand_in_driver(&python, true);
    let json = file.with_extension("json");
    let extra = ["--gpus", "0", "--tokens", "96", "--negative-control", "--json", json.to_str().unwrap()];
    let o = smoke(from_source.to_str().unwrap(), &[&both[..], &extra[..]].concat());
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("pools allocated on GPU 0 by the Mooncake agent"), "{text}");
    assert!(text.contains("pools in GPU memory (prefill GPU 0, decode GPU 0)"), "{text}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let e = &r["dynamic"]["engines"][0];
    assert_eq!(e["verification"]["ok"], e["verification"]["slices"], "{text}");
    let controls: Vec<_> =
        r["negative_controls"].as_array().unwrap().iter().filter(|c| c["applicable"] == true).collect();
    assert!(controls.len() >= 3 && controls.iter().all(|c| c["caught"] == true), "{controls:?}");
}

/// `--gpus PREFILL,DECODE` places the GPU pools; it is refused without `--backend cuda` and a
/// transport, and a value that is not GPU indices is refused by the parser.
#[test]
fn gpu_placement_needs_gpu_pools() {
    let file = write("gpus", &deployment("gqa", 16, 1, 1));
    let smoke =
        |extra: &[&str]| Command::new(BIN).arg("smoke").arg(&file).args(extra).stdin(Stdio::null()).output().unwrap();
    for extra in [
        &["--transport", "nixl", "--backend", "cpu", "--gpus", "0,1"][..],
        &["--transport", "memcpy", "--backend", "cuda", "--gpus", "0"][..],
    ] {
        let o = smoke(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", out(&o));
        assert!(
            out(&o).contains(
                "--gpus places the agents' GPU pools: it needs --backend cuda and --transport nixl or mooncake"
            ),
            "{}",
            out(&o)
        );
    }
    let o = smoke(&["--transport", "nixl", "--backend", "cuda", "--gpus", "0,x"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("`x` is not a GPU index"), "{}", out(&o));
}
