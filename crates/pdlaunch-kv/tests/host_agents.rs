//! The agent for the deployment's own nodes (`python/host_agent.py`) run here, both sides on
//! loopback, through the real NIXL and Mooncake Python bindings (`PDLAUNCH_TEST_NIXL_PYTHON`,
//! `PDLAUNCH_TEST_MOONCAKE_PYTHON`, which `scripts/setup/transports.sh` installs; skipped
//! without them), and their reports read back into a smoke run: the verdict, the table and the
//! negative controls come out as a local run's. Also a closed port and a wrong IB device name.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::load::{parse_deployment, Syntax};
use pdlaunch_kv::agent::hosts::{self, Context, SideDevices};
use pdlaunch_kv::agent::{Memory, Transport};
use pdlaunch_kv::geometry::KvGeometry;
use pdlaunch_kv::sides::from_deployment;
use pdlaunch_kv::smoke::{from_reports, Verdict};

const HETERO: &str = r#"
name: hetero
model: {path: x/y, geometry: {attention: gqa, layers: 2, kv_heads: 4, head_dim: 64}}
shared: {page_size: 16, transfer_backend: nixl}
prefill: {tp: 4, instances: [{nodes: [{host: 10.0.0.1}]}]}
decode: {tp: 2, instances: [{nodes: [{host: 10.0.0.2}]}]}
"#;

const MLA: &str = r#"
name: mla
model: {path: x/y, geometry: {attention: mla, layers: 3, kv_lora_rank: 512, qk_rope_head_dim: 64}}
shared: {page_size: 1, transfer_backend: mooncake}
prefill: {tp: 2, instances: [{nodes: [{host: 10.0.0.1}]}]}
decode: {tp: 1, instances: [{nodes: [{host: 10.0.0.2}]}]}
"#;

fn python(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(p) if Path::new(&p).exists() => Some(p),
        _ => {
            eprintln!("skipped: {var} is not set (scripts/setup/transports.sh installs it)");
            None
        }
    }
}

fn context(text: &str, transport: Transport, controls: bool) -> Context {
    let d: Deployment = parse_deployment(text, "t.yaml", Syntax::Yaml).unwrap();
    Context {
        name: d.name.clone(),
        geometry: KvGeometry::from_core(d.model.geometry.as_ref().unwrap()).unwrap(),
        geometry_source: "model.geometry".into(),
        sides: from_deployment(&d).unwrap(),
        tokens: 40,
        seed: 7,
        transfer: transport.modelled().unwrap(),
        negative_controls: controls,
        iterations: 1,
        transport,
        ib_device: SideDevices::default(),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs one agent; its stdout (the report line) and exit status, within `limit`.
fn agent(py: &str, role: &str, plan: &Path, bootstrap: &str, limit: Duration) -> std::process::Child {
    let mut c = Command::new(py);
    c.arg(hosts_script()).args([role, plan.to_str().unwrap(), "--bootstrap", bootstrap]);
    c.env("MOONCAKE_PROTOCOL", "tcp").stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        // SAFETY: signals a child of this test only.
        unsafe { libc_kill(pid) };
    });
    child
}

unsafe fn libc_kill(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}

fn hosts_script() -> std::path::PathBuf {
    let dir = tempfile::tempdir().unwrap().keep();
    let p = dir.join("host_agent.py");
    std::fs::write(&p, hosts::SCRIPT).unwrap();
    p
}

fn finish(c: std::process::Child) -> (String, i32, String) {
    let out = c.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
        format!("{}\n{}", out.status, String::from_utf8_lossy(&out.stderr)),
    )
}

fn pair(py: &str, ctx: Context) -> ((String, i32, String), (String, i32, String)) {
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let plan = hosts::plan(ctx, &bootstrap, 60, Memory::Dram).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string(&plan).unwrap()).unwrap();
    let limit = Duration::from_secs(90);
    let p = agent(py, "prefill", &path, &bootstrap, limit);
    let d = agent(py, "decode", &path, &bootstrap, limit);
    let d = finish(d);
    (finish(p), d)
}

fn replayed(ctx: &Context, prefill: &str, decode: &str) -> pdlaunch_kv::smoke::Report {
    let files = vec![("prefill.log".to_owned(), prefill.to_owned()), ("decode.log".to_owned(), decode.to_owned())];
    let mut pairs = hosts::read_reports(&files).unwrap();
    from_reports(ctx, pairs.remove(0)).unwrap()
}

fn round_trip(var: &str, text: &str, transport: Transport) {
    let Some(py) = python(var) else { return };
    let t = Instant::now();
    let ctx = context(text, transport, true);
    let ((pout, pcode, perr), (dout, dcode, derr)) = pair(&py, ctx.clone());
    assert_eq!((pcode, dcode), (0, 0), "prefill:\n{pout}\n{perr}\ndecode:\n{dout}\n{derr}");
    let r = replayed(&ctx, &pout, &dout);
    let text = pdlaunch_kv::smoke::render_text(&r);
    assert_eq!(r.verdict, Verdict::Pass, "{text}");
    assert!(r.dynamic.as_ref().unwrap().clean, "{text}");
    let applicable: Vec<_> = r.negative_controls.iter().filter(|c| c.applicable).collect();
    assert!(!applicable.is_empty());
    assert!(applicable.iter().all(|c| c.caught == Some(true)), "{text}");
    assert!(text.contains("deployment's nodes"), "{text}");
    let files = vec![("p".to_owned(), pout.clone()), ("d".to_owned(), dout.clone())];
    let pair = hosts::read_reports(&files).unwrap().remove(0);
    assert_eq!(pair.prefill.network.interface.as_deref(), Some("lo"), "{pout}");
    if transport == Transport::Nixl {
        // UCX's own choice for the writes, read from its protocol tables.
        assert!(!pair.prefill.network.lanes.is_empty(), "{pout}");
        assert!(
            hosts::network_line(&pair.prefill).contains("UCX wrote over"),
            "{}",
            hosts::network_line(&pair.prefill)
        );
    }
    eprintln!("{transport:?} pair and replay in {:?}; the agents said:\n{perr}\n{derr}", t.elapsed());
}

#[test]
fn nixl_agents_pass_and_catch_every_control() {
    round_trip("PDLAUNCH_TEST_NIXL_PYTHON", HETERO, Transport::Nixl);
}

#[test]
fn mooncake_agents_pass_and_catch_every_control() {
    round_trip("PDLAUNCH_TEST_MOONCAKE_PYTHON", MLA, Transport::Mooncake);
}

/// A decode pointed at a port nobody listens on fails within its timeout, naming host:port.
#[test]
fn a_closed_port_fails_in_time_naming_it() {
    let Some(py) = python("PDLAUNCH_TEST_NIXL_PYTHON") else { return };
    let ctx = context(HETERO, Transport::Nixl, false);
    let port = free_port();
    let bootstrap = format!("127.0.0.1:{port}");
    let plan = hosts::plan(ctx, &bootstrap, 3, Memory::Dram).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string(&plan).unwrap()).unwrap();
    let t = Instant::now();
    let (out, code, err) = finish(agent(&py, "decode", &path, &bootstrap, Duration::from_secs(30)));
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_eq!(code, 1, "{out}\n{err}");
    let files = vec![("decode.log".to_owned(), out.clone())];
    // A side that failed is a verdict alone: the prefill never ran.
    let pair = hosts::read_reports(&files).unwrap().remove(0);
    assert!(pair.decode.error.as_ref().unwrap().message.contains("connection refused"));
    assert!(pair.prefill.error.as_ref().unwrap().message.starts_with("no report"));
    assert!(out.contains(&format!("127.0.0.1:{port}")) && out.contains("connection refused"), "{out}");
}

/// A decode pointed at an address nothing answers (TEST-NET-1) fails within its timeout too,
/// naming host:port and what to check (a network that rejects the address at once reads as a
/// refusal, one that drops it as a time-out).
#[test]
fn an_unreachable_host_fails_in_time_naming_it() {
    let Some(py) = python("PDLAUNCH_TEST_NIXL_PYTHON") else { return };
    let ctx = context(HETERO, Transport::Nixl, false);
    let bootstrap = "192.0.2.1:8998";
    let plan = hosts::plan(ctx, bootstrap, 3, Memory::Dram).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string(&plan).unwrap()).unwrap();
    let t = Instant::now();
    let (out, code, err) = finish(agent(&py, "decode", &path, bootstrap, Duration::from_secs(30)));
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("cannot reach the prefill's bootstrap 192.0.2.1:8998 within the timeout"), "{out}");
    assert!(out.contains("firewall"), "{out}");
}

/// A deployment naming an IB device the node does not have fails before any library opens it.
#[test]
fn a_wrong_ib_device_is_named() {
    let Some(py) = python("PDLAUNCH_TEST_NIXL_PYTHON") else { return };
    let mut ctx = context(HETERO, Transport::Nixl, false);
    ctx.ib_device = SideDevices { prefill: Some("mlx5_42".into()), decode: None };
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let plan = hosts::plan(ctx, &bootstrap, 5, Memory::Dram).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string(&plan).unwrap()).unwrap();
    let (out, code, _) = finish(agent(&py, "prefill", &path, &bootstrap, Duration::from_secs(30)));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("IB device mlx5_42 is not on"), "{out}");
}
