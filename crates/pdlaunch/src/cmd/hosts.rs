//! `pdlaunch smoke --across hosts --render kubernetes|slurm|shell`: the agent pair that runs the
//! smoke test on the deployment's own nodes (pdlaunch_kv::agent::hosts resolves its plan, the
//! core renders it), and `pdlaunch smoke --report FILE...`, which reads the agents' reports back
//! into the verdict, table and bandwidth of a local run, with what each side saw of its network.

use std::path::{Path, PathBuf};

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::render::{bundle, render_agents, AgentFiles, AgentFormat};
use pdlaunch_kv::agent::hosts::{self, Context, PairReports, SideDevices};
use pdlaunch_kv::agent::{Memory, Transport};
use pdlaunch_kv::smoke::{self, transfer_from_name, Verdict};
use pdlaunch_kv::transfer::TransferBackend;

use crate::style::Style;

/// What `--across hosts` renders.
pub struct Render<'a> {
    /// The deployment.
    pub deployment: &'a Deployment,
    /// What the run is about.
    pub context: Context,
    /// `kubernetes`, `slurm` or `shell`.
    pub format: &'a str,
    /// One pair per instance.
    pub all: bool,
    /// Where to write the files (else printed).
    pub out: Option<&'a Path>,
    /// Seconds each agent may take.
    pub timeout: u64,
    /// Pool memory.
    pub memory: Memory,
}

/// The library on the deployment's nodes and the descriptors it writes: the flag, else the
/// deployment's backend (the library is in the nodes' image, not here, so nothing is looked for
/// on this machine).
pub fn transport(flag: Option<&str>, backend: &str) -> Result<(Transport, TransferBackend), String> {
    let name = flag.unwrap_or(backend);
    let whose = if flag.is_some() { "--transport is" } else { "the deployment's transfer backend is" };
    transfer_from_name(name).map(|m| (Transport::of_model(m), m)).ok_or_else(|| {
        format!("--across hosts runs NIXL or Mooncake agents, and {whose} {name}: give --transport nixl|mooncake")
    })
}

/// Each side's `ib_device` (its first instance's first node), as SGLang is given it.
pub fn ib_devices(d: &Deployment) -> SideDevices {
    let first =
        |s: &pdlaunch_core::deployment::Side| s.instances.first().and_then(|i| i.nodes.first()?.ib_device.clone());
    SideDevices { prefill: first(&d.prefill), decode: first(&d.decode) }
}

/// Renders the agent pair.
pub fn render(r: Render<'_>) -> super::Result<u8> {
    let format = match r.format {
        "kubernetes" => AgentFormat::Kubernetes,
        "slurm" => AgentFormat::Slurm,
        "shell" => AgentFormat::Shell,
        other => return Err(format!("--render {other}: give kubernetes, slurm or shell").into()),
    };
    let bootstrap = super::transport::deployment_bootstrap(r.deployment);
    let plan = hosts::plan(r.context, &bootstrap, r.timeout, r.memory)?;
    let plan = serde_json::to_string(&plan)?;
    let files = render_agents(r.deployment, format, &AgentFiles { script: hosts::SCRIPT, plan: &plan }, r.all)
        .map_err(|e| format!("--render {}: {}", r.format, e.message))?;
    match r.out {
        None => print!("{}", bundle(&files)),
        Some(dir) => super::render::write_all(dir, &files)?,
    }
    eprintln!(
        "smoke: start the agents on their nodes, then read both reports back with `pdlaunch smoke --report <prefill log> <decode log>`"
    );
    Ok(0)
}

/// `--report FILE...`: the agents' reports read back.
pub fn report(files: &[PathBuf], json: Option<&Path>, style: &Style) -> super::Result<u8> {
    let mut texts = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        texts.push((f.display().to_string(), text));
    }
    let pairs = match hosts::read_reports(&texts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}: {e}", style.error("error"));
            return Ok(crate::EXIT_BAD_INPUT);
        }
    };
    let mut code = 0;
    let mut all = Vec::new();
    for pair in pairs {
        let (c, r) = one_pair(pair, style)?;
        code = code.max(c);
        all.extend(r);
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&all)?;
        super::smoke::write_atomic(path, &(text + "\n"))?;
        eprintln!("smoke: report written to {}", path.display());
    }
    Ok(code)
}

fn one_pair(pair: PairReports, style: &Style) -> super::Result<(u8, Option<smoke::Report>)> {
    println!("agent pair {}", pair.pair);
    for r in [&pair.prefill, &pair.decode] {
        println!("  {}", hosts::network_line(r));
    }
    let ctx = match (&pair.prefill.context, &pair.decode.context) {
        (Some(p), Some(d)) if p == d && pair.prefill.plan == pair.decode.plan => p.clone(),
        (Some(_), Some(_)) => {
            println!("{}", style.error("verdict: FAIL"));
            println!("  the two reports come from different plans: give the logs of one agent pair");
            return Ok((crate::EXIT_FINDINGS, None));
        }
        (Some(c), None) | (None, Some(c)) => c.clone(),
        (None, None) => {
            println!("{}", style.error("verdict: FAIL"));
            for r in [&pair.prefill, &pair.decode] {
                if let Some(e) = &r.error {
                    println!("  cause: {}", failure_line(r, &e.message));
                }
            }
            return Ok((crate::EXIT_FINDINGS, None));
        }
    };
    for w in hosts::fallback_warnings(&ctx, &pair) {
        println!("  {}: {w}", style.warning("warning"));
    }
    let failures: Vec<String> = [&pair.prefill, &pair.decode]
        .into_iter()
        .filter_map(|r| r.error.as_ref().map(|e| failure_line(r, &e.message)))
        .collect();
    if !failures.is_empty() {
        println!("{}", style.error("verdict: FAIL"));
        for f in &failures {
            println!("  cause: {f}");
        }
        return Ok((crate::EXIT_FINDINGS, None));
    }
    let report = smoke::from_reports(&ctx, pair).map_err(|e| e.to_string())?;
    let verdict = match report.verdict {
        Verdict::Pass => style.ok("verdict: PASS"),
        Verdict::Fail => style.error("verdict: FAIL"),
    };
    let text = smoke::render_text(&report);
    print!("{}", text.replace("verdict: PASS", &verdict).replace("verdict: FAIL", &verdict));
    let code = if report.verdict == Verdict::Pass { 0 } else { crate::EXIT_FINDINGS };
    Ok((code, Some(report)))
}

fn failure_line(r: &hosts::HostReport, message: &str) -> String {
    let side = if r.role == pdlaunch_kv::agent::Role::Prefill { "prefill" } else { "decode" };
    let host = if r.network.hostname.is_empty() { "its node" } else { r.network.hostname.as_str() };
    format!("the {side} agent on {host} (bootstrap {}): {message}", r.bootstrap)
}
