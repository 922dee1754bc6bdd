//! `pdlaunch probe` against stand-in SGLang servers: small HTTP servers on 127.0.0.1 that answer
//! with the payloads `tools/gen_probe_fixtures.py` made with SGLang 0.5.23's own code
//! (`tests/fixtures/probe/`), and SGLang's real router (sglang-router 0.3.2, from
//! `scripts/setup/router.sh`, named by `PDLAUNCH_TEST_ROUTER`) in PD mode in front of them.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

mod standin;
use standin::{fixture, Reply, Standin};

fn pdlaunch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pdlaunch")).args(args).output().expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The clean fleet's stand-ins: p0, p1, d0, d1.
fn clean() -> Vec<Standin> {
    vec![
        Standin::sglang(&fixture("clean/p0.server_info.json"), Some(&fixture("clean/p0.route.json"))),
        Standin::sglang(&fixture("clean/p1.server_info.json"), Some(&fixture("clean/p1.route.json"))),
        Standin::sglang(&fixture("clean/d0.server_info.json"), None),
        Standin::sglang(&fixture("clean/d1.server_info.json"), None),
    ]
}

/// `--prefill` and `--decode` arguments for the fleet (prefills first, as [`clean`] has them).
fn fleet_args(s: &[Standin], prefills: usize) -> Vec<String> {
    let mut a = vec!["probe".to_owned(), "--prefill".to_owned()];
    a.extend(s[..prefills].iter().map(Standin::url));
    a.push("--decode".into());
    a.extend(s[prefills..].iter().map(Standin::url));
    a
}

fn run(args: &[String], more: &[&str]) -> Output {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(more);
    pdlaunch(&all)
}

fn json_findings(o: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)));
    v["findings"].as_array().unwrap().clone()
}

fn with_code<'a>(f: &'a [Value], code: &str) -> Vec<&'a Value> {
    f.iter().filter(|f| f["code"] == code).collect()
}

fn places(f: &Value) -> Vec<String> {
    f["locations"].as_array().unwrap().iter().map(|l| l["process"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_clean_fleet_is_clean() {
    let s = clean();
    let o = run(&fleet_args(&s, 2), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("probed 4 servers (4 answered)") && out.contains(": 0 error(s), 0 warning(s)"), "{out}");
}

#[test]
fn a_decode_restarted_with_page_size_1_is_pd001_at_its_url() {
    let mut s = clean();
    s[3] = Standin::sglang(&fixture("page-size/d1.server_info.json"), None);
    let o = run(&fleet_args(&s, 2), &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let f = json_findings(&o);
    let pd001 = with_code(&f, "PD001");
    assert!(!pd001.is_empty(), "{f:#?}");
    assert!(pd001.iter().all(|f| places(f).contains(&s[3].url())), "{pd001:#?}");
    let loc = &pd001[0]["locations"].as_array().unwrap().iter().find(|l| l["process"] == s[3].url()).unwrap().clone();
    assert_eq!(loc["flag"], "--page-size");
    assert_eq!(loc["origin"]["path"], "server_info.page_size", "{loc}");
}

#[test]
fn a_dtype_mismatch_only_resolution_shows_is_pd002() {
    let s = vec![
        Standin::sglang(&fixture("dtype/p0.server_info.json"), Some(&fixture("dtype/p0.route.json"))),
        Standin::sglang(&fixture("dtype/d0.server_info.json"), None),
    ];
    let o = run(&fleet_args(&s, 1), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("error[PD002]") && out.contains("fp8_e4m3") && out.contains("bfloat16"), "{out}");
    assert!(out.contains(&s[1].url()), "{out}");
}

#[test]
fn a_replica_on_an_older_release_answers_the_old_path_and_is_pd057() {
    let s = clean();
    // Only `/get_server_info`, as releases before 0.5.23 answer.
    s[3].serve(&fixture("release/d1.server_info.json"), None, false);
    let o = run(&fleet_args(&s, 2), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "a warning: {out}");
    let want = format!("the server at {} runs SGLang 0.5.19 where 3 of the 4 servers run 0.5.23", s[3].url());
    assert!(out.contains("warning[PD057]") && out.contains(&want), "{out}");
    assert_eq!(run(&fleet_args(&s, 2), &["--deny-warnings"]).status.code(), Some(1));
}

#[test]
fn a_server_that_does_not_answer_is_pd059_and_the_others_are_checked() {
    let mut s = clean();
    s[3] = Standin::sglang(&fixture("page-size/d1.server_info.json"), None);
    let gone = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let mut args = fleet_args(&s, 2);
    args.push(gone.clone());
    let o = run(&args, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let f = json_findings(&o);
    let pd059 = with_code(&f, "PD059");
    assert_eq!(pd059.len(), 1, "{f:#?}");
    assert_eq!(places(pd059[0]), [gone.as_str()]);
    assert!(pd059[0]["message"].as_str().unwrap().contains("connection refused"), "{}", pd059[0]["message"]);
    assert!(!with_code(&f, "PD001").is_empty(), "the others are still checked: {f:#?}");
}

#[test]
fn hostile_answers_are_findings_and_never_hang() {
    let s = clean();
    let wrong = Standin::sglang(&fixture("hostile/wrong-types.server_info.json"), None);
    let array = Standin::sglang(&fixture("hostile/not-an-object.server_info.json"), None);
    let truncated = Standin::start(vec![("/server_info", Reply::Json(fixture("hostile/truncated.server_info.json")))]);
    let huge = Standin::start(vec![("/server_info", Reply::Json(format!("[{}]", "1,".repeat(3 << 20) + "1")))]);
    let slow = Standin::start(vec![("/server_info", Reply::Slow(Duration::from_secs(20), "{}".into()))]);
    let garbage = Standin::start(vec![("/", Reply::Garbage)]);
    let error = Standin::start(vec![("/server_info", Reply::Status(500, "<html>Internal Server Error</html>".into()))]);
    let bad_route =
        Standin::sglang(&fixture("clean/p0.server_info.json"), Some(&fixture("hostile/route-wrong-types.route.json")));
    let mut args = vec!["probe".to_owned(), "--timeout".into(), "1".into(), "--prefill".into(), bad_route.url()];
    args.push("--decode".into());
    args.extend(s[2..].iter().map(Standin::url));
    for h in [&wrong, &array, &truncated, &huge, &slow, &garbage, &error] {
        args.push(h.url());
    }
    let started = Instant::now();
    let o = run(&args, &["--format", "json"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(took < Duration::from_secs(5), "one slow server costs one timeout: {took:?}");
    let f = json_findings(&o);
    let said = |url: String| -> String {
        with_code(&f, "PD059")
            .iter()
            .find(|f| places(f) == [url.as_str()])
            .map(|f| f["message"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("no PD059 for {url}: {f:#?}"))
    };
    assert!(said(wrong.url()).contains("`page_size` is \"sixteen\" where SGLang reports an integer"));
    assert!(said(array.url()).contains("the answer is an array"));
    assert!(said(truncated.url()).contains("not JSON"));
    assert!(said(huge.url()).contains("larger than 4 MiB"), "{}", said(huge.url()));
    assert!(said(slow.url()).contains("no answer within the timeout"), "{}", said(slow.url()));
    assert!(!said(garbage.url()).is_empty());
    assert!(said(error.url()).contains("HTTP 500"), "{}", said(error.url()));
    let pd058 = with_code(&f, "PD058");
    assert!(pd058.iter().any(|f| f["message"].as_str().unwrap().contains("`attn_tp_size` is \"one\"")), "{pd058:#?}");
}

const DEPLOYMENT: &str = "name: llama\nmodel: {path: meta-llama/Llama-3.1-8B-Instruct}\n\
    shared: {page_size: 16, transfer_backend: mooncake}\n\
    prefill: {gpu: h200, instances: [{nodes: [{host: 127.0.0.1}]}]}\n\
    decode: {gpu: h200, instances: [{nodes: [{host: 127.0.0.1}]}]}\n";

#[test]
fn against_a_deployment_drift_names_the_field_and_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pd.yaml");
    std::fs::write(&file, DEPLOYMENT).unwrap();
    let file = file.to_str().unwrap();
    let mut s = clean();
    assert_eq!(run(&fleet_args(&s, 2), &["--against", file]).status.code(), Some(0));
    s[3] = Standin::sglang(&fixture("page-size/d1.server_info.json"), None);
    let o = run(&fleet_args(&s, 2), &["--against", file]);
    let out = stdout(&o);
    let want =
        format!("the decode at {} runs --page-size `1` where {file} renders `16` (`shared.page_size`)", s[3].url());
    assert!(out.contains(&want), "{out}");
    assert!(out.contains(&format!("restart {} with the command `pdlaunch render {file}` writes", s[3].url())), "{out}");
    let bad = run(&fleet_args(&s, 2), &["--against", "/nonexistent/pd.yaml"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn sarif_names_each_server_url_as_the_place() {
    let mut s = clean();
    s[3] = Standin::sglang(&fixture("page-size/d1.server_info.json"), None);
    let o = run(&fleet_args(&s, 2), &["--format", "sarif"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    let r = results.iter().find(|r| r["ruleId"] == "PD001").expect("PD001");
    let uris: Vec<&str> = r["locations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    assert!(uris.contains(&s[3].url().as_str()), "{r:#}");
    assert!(v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap().iter().any(|r| r["id"] == "PD060"));
}

#[test]
fn bad_arguments_are_exit_2() {
    assert_eq!(pdlaunch(&["probe"]).status.code(), Some(2));
    let o = pdlaunch(&["probe", "--prefill", "https://h:1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("HTTPS is not supported"));
    assert_eq!(pdlaunch(&["probe", "--decode", "http://h:1", "--watch", "0"]).status.code(), Some(2));
    assert_eq!(
        pdlaunch(&["probe", "--decode", "http://h:1", "--watch", "1", "--format", "sarif"]).status.code(),
        Some(2)
    );
}

#[cfg(unix)]
#[test]
fn watch_prints_only_changes_and_stops_on_ctrl_c() {
    let s = clean();
    let mut args = fleet_args(&s, 2);
    args.extend(["--watch".into(), "0.2".into(), "--color".into(), "never".into()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pdlaunch")).args(&args).stdout(Stdio::piped()).spawn().unwrap();
    thread::sleep(Duration::from_millis(1200));
    s[3].serve(&fixture("page-size/d1.server_info.json"), None, true);
    thread::sleep(Duration::from_millis(1200));
    s[3].serve(&fixture("clean/d1.server_info.json"), None, true);
    thread::sleep(Duration::from_millis(1200));
    let stopped = Instant::now();
    // SAFETY: signals the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = wait(&mut child, Duration::from_secs(5));
    assert!(stopped.elapsed() < Duration::from_secs(3), "stops at once: {:?}", stopped.elapsed());
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(status, Some(0), "the last probe was clean: {out}");
    // The first round, the page-size drift coming and going: three summaries among many rounds.
    assert_eq!(out.matches("probed 4 servers").count(), 3, "{out}");
    // Each PD001 printed once when it came, and once when it went.
    let resolved = out.matches("resolved error[PD001]").count();
    assert!(resolved > 0, "{out}");
    assert_eq!(out.matches("error[PD001]").count(), 2 * resolved, "{out}");
}

fn wait(child: &mut Child, within: Duration) -> Option<i32> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("did not stop within {within:?}");
}

/// The probe of 64 servers (32 prefills with their bootstrap info, 32 decodes), timed.
#[test]
fn a_probe_of_64_servers_takes_under_two_seconds() {
    let p = fixture("clean/p0.server_info.json");
    let r = fixture("clean/p0.route.json");
    let d = fixture("clean/d0.server_info.json");
    let mut s: Vec<Standin> = (0..32).map(|_| Standin::sglang(&p, Some(&r))).collect();
    s.extend((0..32).map(|_| Standin::sglang(&d, None)));
    let started = Instant::now();
    let o = run(&fleet_args(&s, 32), &[]);
    let took = started.elapsed();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("probed 64 servers (64 answered)"), "{out}");
    eprintln!("probe of 64 stand-in servers: {} ms (the CLI's own count: {})", took.as_millis(), {
        let line = out.lines().last().unwrap_or_default();
        line.split(" in ").nth(1).and_then(|t| t.split(':').next()).unwrap_or("?").to_owned()
    });
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// The real router's launcher: `PDLAUNCH_TEST_ROUTER`, else where `scripts/setup/router.sh` puts it.
fn router_launcher() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PDLAUNCH_TEST_ROUTER") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("PDLAUNCH_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pdlaunch")))?;
    Some(cache.join("router-venv/bin/pdlaunch-router")).filter(|p| p.exists())
}

struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn through_the_real_router_a_worker_that_is_gone_is_pd060() {
    let Some(launcher) = router_launcher() else {
        eprintln!("SKIPPED: no sglang-router (run scripts/setup/router.sh, or set PDLAUNCH_TEST_ROUTER)");
        return;
    };
    let mut s = clean();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = Command::new(&launcher);
    cmd.args(["--pd-disaggregation", "--host", "127.0.0.1", "--port", &port.to_string()]);
    for p in &s[..2] {
        cmd.args(["--prefill", &p.url(), &p.port.to_string()]);
    }
    for d in &s[2..] {
        cmd.args(["--decode", &d.url()]);
    }
    let _router = Router(cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("the router starts"));
    let router = format!("http://127.0.0.1:{port}");
    // Wait until it lists every worker.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let o = pdlaunch(&["probe", "--router", &router, "--format", "json"]);
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
        if v["servers"].as_array().is_some_and(|a| a.len() == 4) {
            assert_eq!(o.status.code(), Some(0), "the clean fleet through the router: {}", stdout(&o));
            break;
        }
        assert!(Instant::now() < until, "the router did not list its 4 workers: {}", stdout(&o));
        thread::sleep(Duration::from_millis(300));
    }
    let gone = s.pop().unwrap().url();
    thread::sleep(Duration::from_millis(50));
    let o = pdlaunch(&["probe", "--router", &router, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let f = json_findings(&o);
    let pd060 = with_code(&f, "PD060");
    assert_eq!(pd060.len(), 1, "{f:#?}");
    assert_eq!(places(pd060[0]), [gone.as_str()]);
    assert!(
        pd060[0]["fix"].as_str().unwrap().contains(&format!("curl -X DELETE {router}/workers/")),
        "{}",
        pd060[0]["fix"]
    );
    // A drifted worker is found through the router too, at its URL.
    s[2].serve(&fixture("page-size/d1.server_info.json"), None, true);
    let f = json_findings(&pdlaunch(&["probe", "--router", &router, "--format", "json"]));
    let pd001 = with_code(&f, "PD001");
    assert!(!pd001.is_empty() && pd001.iter().all(|f| places(f).contains(&s[2].url())), "{f:#?}");
}
