//! `pdlaunch probe`: ask running servers what they really use (`/server_info`, each prefill's
//! bootstrap `/route`, the router's `/workers`) and check the live fleet with the rule registry.
//!
//! The HTTP lives here; reading the answers and the findings are the core's `probe` module. Every
//! request has a connect and an overall timeout and a body cap, and the servers are asked
//! concurrently (a scoped pool of threads), so one hung server costs one timeout, not the probe.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pdlaunch_core::deployment::Role;
use pdlaunch_core::probe::{self, Info, Server, Worker, INFO_PATHS, WORKERS_PATH};
use pdlaunch_core::rules::{Finding, Report, Severity};

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// A router (sglang-router 0.3) whose prefill and decode workers to probe.
    #[arg(long, value_name = "URL")]
    pub router: Option<String>,
    /// A prefill server's URL (`http://host:port`); repeat or list several.
    #[arg(long, value_name = "URL", num_args = 1..)]
    pub prefill: Vec<String>,
    /// A decode server's URL; repeat or list several.
    #[arg(long, value_name = "URL", num_args = 1..)]
    pub decode: Vec<String>,
    /// The deployment the fleet should run: report each server's drift from it.
    #[arg(long, value_name = "FILE")]
    pub against: Option<String>,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json", "sarif"])]
    pub format: String,
    /// Seconds each request may take, connecting included.
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0)]
    pub timeout: f64,
    /// Probe again every SECONDS and print only what changed, until Ctrl-C.
    #[arg(long, value_name = "SECONDS")]
    pub watch: Option<f64>,
    /// Treat warnings as errors (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
}

/// The largest answer read: SGLang's server info is about 20 KiB.
const BODY_LIMIT: u64 = 4 << 20;
/// Requests in flight at once.
const POOL: usize = 64;

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    if args.router.is_none() && args.prefill.is_empty() && args.decode.is_empty() {
        return Err("nothing to probe: give --router URL, or --prefill URL... and --decode URL...".into());
    }
    let timeout = seconds("--timeout", args.timeout)?;
    for url in args.router.iter().chain(&args.prefill).chain(&args.decode) {
        check_url(url)?;
    }
    let against = args.against.as_deref().map(crate::input::load).transpose()?;
    let against = against.as_ref().map(|l| (l.file.as_str(), &l.deployment));
    let agent = agent(timeout);
    let Some(every) = args.watch else {
        let started = Instant::now();
        let (findings, probed) = probe_once(&agent, &args, against);
        let report = Report { findings };
        match args.format.as_str() {
            "json" => println!("{}", serde_json::to_string_pretty(&json(&report, &probed))?),
            "sarif" => println!("{}", serde_json::to_string_pretty(&sarif(&report))?),
            _ => print!("{}", human(&report, &probed, started.elapsed(), style)),
        }
        return Ok(exit(&report, args.deny_warnings));
    };
    if args.format == "sarif" {
        return Err("--watch prints what changes between probes: use --format human or json".into());
    }
    let every = seconds("--watch", every)?;
    watch(&agent, &args, against, every, style)
}

fn seconds(flag: &str, v: f64) -> super::Result<Duration> {
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        return Err(format!("{flag} {v}: give a number of seconds above 0 (at most a day)").into());
    }
    Ok(Duration::from_secs_f64(v))
}

fn check_url(url: &str) -> super::Result<()> {
    let ok = url.strip_prefix("http://").is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'));
    if !ok {
        let hint =
            if url.starts_with("https://") { " (HTTPS is not supported: probe the servers directly)" } else { "" };
        return Err(format!("`{url}` is no server URL: write http://host:port{hint}").into());
    }
    Ok(())
}

fn exit(report: &Report, deny_warnings: bool) -> u8 {
    let failed = !report.is_clean() || (deny_warnings && report.count(Severity::Warning) > 0);
    if failed {
        crate::EXIT_FINDINGS
    } else {
        0
    }
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(timeout))
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// An answer: its HTTP status and body.
fn get(agent: &ureq::Agent, url: &str) -> Result<(u16, String), String> {
    let mut response = agent.get(url).call().map_err(|e| describe(&e))?;
    let status = response.status().as_u16();
    let body = response.body_mut().with_config().limit(BODY_LIMIT).read_to_string().map_err(|e| match e {
        ureq::Error::BodyExceedsLimit(_) => format!("the answer is larger than {} MiB", BODY_LIMIT >> 20),
        other => describe(&other),
    })?;
    Ok((status, body))
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer within the timeout".to_owned(),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        other => other.to_string(),
    }
}

/// What an HTTP status that is not 200 says, with the start of its body.
fn status_error(status: u16, body: &str) -> String {
    let text: String = body.trim().chars().take(120).collect();
    if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    }
}

/// A server's info: `/server_info`, else (404 or 405: an older release) `/get_server_info`.
fn fetch_info(agent: &ureq::Agent, url: &str) -> Result<Info, String> {
    let mut last = String::new();
    for path in INFO_PATHS {
        match get(agent, &format!("{url}{path}"))? {
            (200, body) => return Info::read(&body),
            (status @ (404 | 405), body) => last = format!("{path}: {}", status_error(status, &body)),
            (status, body) => return Err(format!("{path}: {}", status_error(status, &body))),
        }
    }
    Err(last)
}

/// One server probed: its info, and a prefill's bootstrap info.
fn probe_server(agent: &ureq::Agent, url: &str, role: Option<Role>, worker: Option<&Worker>) -> Server {
    let info = fetch_info(agent, url);
    let route = info.as_ref().ok().and_then(|i| {
        let prefill = i.role().or(role) == Some(Role::Prefill);
        let route_url = probe::route_url(url, i, worker.and_then(|w| w.bootstrap_port))?;
        prefill.then(|| {
            let answer = match get(agent, &route_url) {
                Ok((200, body)) => probe::read_route(&body),
                Ok((status, body)) => Err(status_error(status, &body)),
                Err(e) => Err(e),
            };
            (route_url, answer)
        })
    });
    Server { url: url.to_owned(), role, worker: worker.map(|w| w.id.clone()), info, route }
}

/// A URL to probe, the role it was given, and the router's entry for it.
type Target = (String, Option<Role>, Option<Worker>);
/// The router asked, and whether it gave its workers.
type RouterAnswer = Option<(String, Result<(), String>)>;

/// The URLs probed: the router's workers, then those given.
fn targets(agent: &ureq::Agent, args: &Args) -> (Vec<Target>, RouterAnswer) {
    let mut out = Vec::new();
    let mut router = None;
    if let Some(r) = &args.router {
        let r = r.trim_end_matches('/').to_owned();
        let listed = match get(agent, &format!("{r}{WORKERS_PATH}")) {
            Ok((200, body)) => probe::read_workers(&body),
            Ok((status, body)) => Err(format!("{WORKERS_PATH}: {}", status_error(status, &body))),
            Err(e) => Err(e),
        };
        match listed {
            Ok(workers) => {
                out.extend(workers.into_iter().map(|w| (w.url.clone(), w.role, Some(w))));
                router = Some((r, Ok(())));
            }
            Err(e) => router = Some((r, Err(e))),
        }
    }
    for (urls, role) in [(&args.prefill, Role::Prefill), (&args.decode, Role::Decode)] {
        for u in urls {
            let u = u.trim_end_matches('/');
            if !out.iter().any(|(url, _, _)| url == u) {
                out.push((u.to_owned(), Some(role), None));
            }
        }
    }
    (out, router)
}

/// One probe of the fleet: its findings and the URLs probed, each with whether it answered.
fn probe_once(
    agent: &ureq::Agent,
    args: &Args,
    against: Option<(&str, &pdlaunch_core::deployment::Deployment)>,
) -> (Vec<Finding>, Vec<(String, bool)>) {
    let (targets, router) = targets(agent, args);
    let next = AtomicUsize::new(0);
    let mut found: Vec<(usize, Server)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..POOL.min(targets.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut got = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((url, role, worker)) = targets.get(i) else { break };
                        got.push((i, probe_server(agent, url, *role, worker.as_ref())));
                    }
                    got
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    found.sort_by_key(|(i, _)| *i);
    let servers: Vec<Server> = found.into_iter().map(|(_, s)| s).collect();
    let probed = servers.iter().map(|s| (s.url.clone(), s.info.is_ok())).collect();
    (probe::check(servers, router, against), probed)
}

fn human(report: &Report, probed: &[(String, bool)], took: Duration, style: &Style) -> String {
    let mut s = String::new();
    for f in &report.findings {
        s.push_str(&super::check::finding_text(f, None, style));
        s.push('\n');
    }
    s.push_str(&summary(report, probed, took, style));
    s
}

/// The last line: what was probed, how long it took, what was found.
fn summary(report: &Report, probed: &[(String, bool)], took: Duration, style: &Style) -> String {
    let mut s = String::new();
    let answered = probed.iter().filter(|(_, ok)| *ok).count();
    let (e, w, n) = (report.count(Severity::Error), report.count(Severity::Warning), report.count(Severity::Note));
    let summary = format!(
        "probed {} servers ({answered} answered) in {} ms: {e} error(s), {w} warning(s), {n} note(s)",
        probed.len(),
        took.as_millis()
    );
    s.push_str(&style.summary(&summary, e, w));
    s.push('\n');
    s
}

fn json(report: &Report, probed: &[(String, bool)]) -> serde_json::Value {
    serde_json::json!({
        "servers": probed.iter().map(|(u, ok)| serde_json::json!({"url": u, "answered": ok})).collect::<Vec<_>>(),
        "clean": report.is_clean(),
        "errors": report.count(Severity::Error),
        "warnings": report.count(Severity::Warning),
        "notes": report.count(Severity::Note),
        "findings": report.findings,
    })
}

fn sarif(report: &Report) -> serde_json::Value {
    let results: Vec<serde_json::Value> = report
        .findings
        .iter()
        .map(|f| {
            let locations: Vec<serde_json::Value> = f
                .locations
                .iter()
                .map(|l| {
                    serde_json::json!({
                        "physicalLocation": {"artifactLocation": {"uri": l.process}},
                        "message": {"text": match &l.flag {
                            Some(flag) => format!("{}: `{flag}` ({})", l.process, l.origin),
                            None => l.process.clone(),
                        }},
                    })
                })
                .collect();
            serde_json::json!({
                "ruleId": f.code,
                "ruleIndex": pdlaunch_core::rules::RULES.iter().position(|r| r.code == f.code),
                "level": f.severity.as_str(),
                "message": {"text": format!("{} Fix: {}", f.message, f.fix)},
                "locations": locations,
            })
        })
        .collect();
    super::lint::sarif_log(results)
}

/// Set by SIGINT: the watch loop stops at its next look.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn watch(
    agent: &ureq::Agent,
    args: &Args,
    against: Option<(&str, &pdlaunch_core::deployment::Deployment)>,
    every: Duration,
    style: &Style,
) -> super::Result<u8> {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_interrupt as *const () as libc::sighandler_t);
    }
    let key = |f: &Finding| (f.code, f.message.clone());
    let mut shown: Vec<Finding> = Vec::new();
    let mut last = 0;
    let mut round = 0u64;
    while !STOP.load(Ordering::SeqCst) {
        let started = Instant::now();
        let (findings, probed) = probe_once(agent, args, against);
        let report = Report { findings };
        last = exit(&report, args.deny_warnings);
        let new: Vec<&Finding> = report.findings.iter().filter(|f| !shown.iter().any(|s| key(s) == key(f))).collect();
        let gone: Vec<&Finding> = shown.iter().filter(|s| !report.findings.iter().any(|f| key(f) == key(s))).collect();
        round += 1;
        if round == 1 || !new.is_empty() || !gone.is_empty() {
            if args.format == "json" {
                let v = serde_json::json!({
                    "round": round, "new": new, "resolved": gone,
                    "errors": report.count(Severity::Error), "warnings": report.count(Severity::Warning),
                });
                println!("{v}");
            } else {
                for f in &new {
                    print!("{}", super::check::finding_text(f, None, style));
                }
                for f in &gone {
                    println!("{} {}[{}]: {}", style.dim("resolved"), f.severity.as_str(), f.code, f.message);
                }
                print!("{}", summary(&report, &probed, started.elapsed(), style));
            }
        }
        shown = report.findings;
        // Sleep in short steps, so that Ctrl-C stops the wait at once.
        let until = Instant::now() + every;
        while !STOP.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())));
        }
    }
    if args.format != "json" {
        eprintln!("stopped after {round} probe(s)");
    }
    Ok(last)
}
