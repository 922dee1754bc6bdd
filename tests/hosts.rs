//! `pdlaunch smoke --across hosts --render shell`: the two rendered scripts run by real bash, each
//! in its own network namespace joined by a veth pair (two hosts on this machine: the CI path),
//! the agents in them driving the real NIXL and Mooncake Python bindings
//! (`PDLAUNCH_TEST_NIXL_PYTHON`, `PDLAUNCH_TEST_MOONCAKE_PYTHON`, which `scripts/test.sh`
//! installs); then `pdlaunch smoke --report` on their logs: a pass with every negative control
//! caught, a closed port named, and a run whose bytes went astray (a tampered plan) failing with
//! the misplaced slices. Namespaces need root; without it, or without the Pythons, the tests say
//! why and skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pdlaunch_kv::agent::netns::Netns;

const BIN: &str = env!("CARGO_BIN_EXE_pdlaunch");

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Two namespaces and the Python in `var`, or `None` after saying why.
fn setup(var: &str) -> Option<(Netns, String)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network namespaces need root");
        return None;
    }
    let py = match std::env::var(var) {
        Ok(p) if Path::new(&p).exists() => p,
        _ => {
            eprintln!("skipped: {var} is not set (scripts/test.sh installs it)");
            return None;
        }
    };
    match Netns::create() {
        Ok(ns) => Some((ns, py)),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn deployment(ns: &Netns, backend: &str, geometry: &str, page: u32, port: u16) -> String {
    format!(
        "name: t\nmodel: {{path: x/y, geometry: {geometry}}}\nshared: {{page_size: {page}, transfer_backend: {backend}}}\n\
         prefill: {{tp: 2, instances: [{{bootstrap_port: {port}, nodes: [{{host: {}}}]}}]}}\n\
         decode: {{tp: 1, instances: [{{nodes: [{{host: {}}}]}}]}}\n",
        ns.prefill_ip, ns.decode_ip
    )
}

/// Renders the shell pair of `yaml` into a new folder; its path.
fn render(yaml: &str, extra: &[&str]) -> PathBuf {
    let dir = tempfile::tempdir().unwrap().keep();
    let file = dir.join("t.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = dir.join("agents");
    let o = Command::new(BIN)
        .args(["smoke", file.to_str().unwrap(), "--across", "hosts", "--render", "shell", "--out"])
        .arg(&out)
        .args(["--tokens", "64", "--iterations", "1"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    out
}

/// Runs a rendered script with bash inside a namespace, in `dir`, with `env`; killed after `limit`.
fn start(ns: &str, script: &Path, dir: &Path, env: &[(&str, &str)], limit: Duration) -> Child {
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "bash"])
        .arg(script)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        // SAFETY: signals a child of this test.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    child
}

fn script(dir: &Path, side: &str) -> PathBuf {
    let p = dir.join(format!("t-smoke-{side}-0.sh"));
    assert!(p.is_file(), "no {} among {:?}", p.display(), std::fs::read_dir(dir).unwrap().collect::<Vec<_>>());
    p
}

fn log(dir: &Path, side: &str) -> PathBuf {
    dir.join(format!("t-smoke-{side}-0.log"))
}

fn report(logs: &[PathBuf]) -> Output {
    Command::new(BIN).args(["smoke", "--report"]).args(logs).output().unwrap()
}

/// Both scripts in their namespaces; their outputs.
fn run_pair(ns: &Netns, dir: &Path, env: &[(&str, &str)]) -> (Output, Output) {
    let limit = Duration::from_secs(120);
    let p = start(&ns.prefill, &script(dir, "prefill"), dir, env, limit);
    let d = start(&ns.decode, &script(dir, "decode"), dir, env, limit);
    (p.wait_with_output().unwrap(), d.wait_with_output().unwrap())
}

fn passes(var: &str, backend: &str, geometry: &str, page: u32, env: &[(&str, &str)]) {
    let Some((ns, py)) = setup(var) else { return };
    let t = Instant::now();
    let dir = render(&deployment(&ns, backend, geometry, page, 18_998), &["--negative-control"]);
    let mut env = env.to_vec();
    env.push(("PDLAUNCH_PYTHON", &py));
    let (p, d) = run_pair(&ns, &dir, &env);
    assert!(p.status.success() && d.status.success(), "prefill:\n{}\ndecode:\n{}", text(&p), text(&d));
    let r = report(&[log(&dir, "prefill"), log(&dir, "decode")]);
    let out = text(&r);
    assert_eq!(r.status.code(), Some(0), "{out}");
    assert!(out.contains("verdict: PASS"), "{out}");
    // What each side saw: its address on its own end of the veth pair.
    assert!(out.contains(&format!("address {} (v", ns.prefill_ip)), "{out}");
    assert!(out.contains(&format!("address {} (v", ns.decode_ip)), "{out}");
    assert!(out.contains("negative controls"), "{out}");
    assert!(!out.contains("NOT caught"), "{out}");
    eprintln!("{backend}: rendered, run across namespaces and read back in {:?}\n{out}", t.elapsed());
}

#[test]
fn nixl_shell_pair_passes_across_namespaces() {
    passes(
        "PDLAUNCH_TEST_NIXL_PYTHON",
        "nixl",
        "{attention: gqa, layers: 3, kv_heads: 4, head_dim: 64}",
        16,
        &[("UCX_TLS", "tcp")],
    );
}

#[test]
fn mooncake_shell_pair_passes_across_namespaces() {
    passes(
        "PDLAUNCH_TEST_MOONCAKE_PYTHON",
        "mooncake",
        "{attention: mla, layers: 2, kv_lora_rank: 128, qk_rope_head_dim: 64}",
        1,
        &[("MOONCAKE_PROTOCOL", "tcp")],
    );
}

/// The decode started alone meets a closed port: it fails within the timeout, and `--report`
/// on its log alone is a failing verdict that names the host:port.
#[test]
fn a_closed_bootstrap_port_is_named_by_the_report() {
    let Some((ns, py)) = setup("PDLAUNCH_TEST_NIXL_PYTHON") else { return };
    let dir = render(
        &deployment(&ns, "nixl", "{attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}", 16, 18_997),
        &["--timeout", "4"],
    );
    let t = Instant::now();
    let d = start(&ns.decode, &script(&dir, "decode"), &dir, &[("PDLAUNCH_PYTHON", &py)], Duration::from_secs(60));
    let d = d.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert_eq!(d.status.code(), Some(1), "{}", text(&d));
    let r = report(&[log(&dir, "decode")]);
    let out = text(&r);
    assert_eq!(r.status.code(), Some(1), "{out}");
    assert!(out.contains("verdict: FAIL"), "{out}");
    assert!(out.contains(&format!("{}:18997", ns.prefill_ip)) && out.contains("connection refused"), "{out}");
}

/// The plan's clean writes replaced, in both scripts, by those of the K/V-swapped control: the
/// bytes cross the veth pair into the wrong buffers, and `--report` fails naming them misplaced.
#[test]
fn writes_gone_astray_fail_the_report() {
    let Some((ns, py)) = setup("PDLAUNCH_TEST_NIXL_PYTHON") else { return };
    let dir = render(
        &deployment(&ns, "nixl", "{attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}", 16, 18_996),
        &["--negative-control"],
    );
    for side in ["prefill", "decode"] {
        let path = script(&dir, side);
        let s = std::fs::read_to_string(&path).unwrap();
        let plan_line =
            s.lines().find(|l| l.starts_with("{\"schema\":\"pdlaunch-smoke-plan/1\"")).expect("the plan's line");
        let mut plan: serde_json::Value = serde_json::from_str(plan_line).unwrap();
        let cases = plan["cases"].as_array_mut().unwrap();
        let swapped = cases.iter().find(|c| c["label"] == "K/V buffers swapped").unwrap()["pairs"].clone();
        cases[0]["pairs"] = swapped;
        cases.truncate(1);
        plan["context"]["negative_controls"] = false.into();
        let tampered = serde_json::to_string(&plan).unwrap();
        std::fs::write(&path, s.replace(plan_line, &tampered)).unwrap();
    }
    let (p, d) = run_pair(&ns, &dir, &[("PDLAUNCH_PYTHON", &py), ("UCX_TLS", "tcp")]);
    assert!(p.status.success() && d.status.success(), "prefill:\n{}\ndecode:\n{}", text(&p), text(&d));
    let r = report(&[log(&dir, "prefill"), log(&dir, "decode")]);
    let out = text(&r);
    assert_eq!(r.status.code(), Some(1), "{out}");
    assert!(out.contains("verdict: FAIL"), "{out}");
    assert!(out.contains("misplaced"), "{out}");
}

/// What a user sees for input `--across hosts` and `--report` cannot take: exit 2 and a line
/// that names what is wrong and what to give instead (no namespaces or Pythons needed).
#[test]
fn bad_input_is_named_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.yaml");
    let yaml = "name: t\nmodel: {path: x/y, geometry: {attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}}\n\
                shared: {page_size: 16, transfer_backend: nixl}\nprefill: {instances: [{nodes: [{host: a}]}]}\n\
                decode: {instances: [{nodes: [{host: b}]}]}\n";
    std::fs::write(&file, yaml).unwrap();
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "hello\n").unwrap();
    let f = file.to_str().unwrap();
    let j = junk.to_str().unwrap();
    for (args, says) in [
        (vec!["smoke", f, "--across", "hosts"], "--across hosts needs --render kubernetes|slurm|shell"),
        (vec!["smoke", f, "--render", "shell"], "--render and --all go with --across hosts"),
        (
            vec!["smoke", f, "--across", "hosts", "--render", "shell", "--transport", "memcpy"],
            "--transport is memcpy: give --transport nixl|mooncake",
        ),
        (vec!["smoke", "--report", j], "no agent report in it (a line starting `PDLAUNCH-SMOKE-REPORT `)"),
    ] {
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}
