//! `pdlaunch smoke --transport nixl|mooncake --across local|netns`: the KV moves between two
//! agent processes through the library SGLang uses, instead of inside one process. Also the
//! hidden `smoke-agent` command (one agent, its plan on stdin, started by the smoke test
//! itself) and `--side prefill|decode` (one side only, here, meeting the other on the
//! bootstrap address, as on the deployment's own hosts).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pdlaunch_core::deployment::{Deployment, Role as CoreRole};
use pdlaunch_core::rules::Context;
use pdlaunch_kv::agent::launch::{self, Launcher};
use pdlaunch_kv::agent::{self, AgentPlan, Memory, Outcome, Placement, Role, Transport};
use pdlaunch_kv::case::Case;

/// Transport flags of `pdlaunch smoke`.
#[derive(clap::Args, Debug, Default)]
pub struct TransportArgs {
    /// How the KV moves: memcpy (in-process engines), nixl or mooncake (two agent processes,
    /// through the library). Default: the deployment's transfer backend when its library is
    /// available here, else memcpy.
    #[arg(long, value_parser = ["memcpy", "nixl", "mooncake"])]
    pub transport: Option<String>,
    /// Where the two agents run: local (this machine), netns (two network namespaces joined
    /// by a veth pair, so the bytes cross a network interface; needs root), or hosts (the
    /// deployment's own nodes: writes the agent pair for --render kubernetes|slurm|shell).
    #[arg(long, default_value = "local", value_parser = ["local", "netns", "hosts"])]
    pub across: String,
    /// With --across hosts: how the agent pair is started on the deployment's nodes.
    #[arg(long, value_parser = ["kubernetes", "slurm", "shell"])]
    pub render: Option<String>,
    /// With --across hosts: one agent pair per server instance, not only the first of each side.
    #[arg(long)]
    pub all: bool,
    /// With --across hosts: write the files into this folder instead of printing them.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The prefill's bootstrap HOST:PORT (default: the deployment's prefill host and bootstrap
    /// port; agents on this machine listen on 127.0.0.1 with that port, port 0 picks a free one).
    #[arg(long)]
    pub bootstrap: Option<String>,
    /// NIXL's libnixl_capi.so, e.g. …/site-packages/.nixl_cu12.mesonpy.libs/libnixl_capi.so
    /// (default: $PDLAUNCH_NIXL_LIB).
    #[arg(long)]
    pub nixl_lib: Option<PathBuf>,
    /// The Python that imports mooncake, SGLang's environment (default: $PDLAUNCH_MOONCAKE_PYTHON,
    /// else python3).
    #[arg(long)]
    pub mooncake_python: Option<String>,
    /// Run only this side's agent, here, meeting the other side on the bootstrap address.
    #[arg(long, value_parser = ["prefill", "decode"])]
    pub side: Option<String>,
    /// With --backend cuda: the GPUs of the prefill's and the decode's pools, PREFILL,DECODE
    /// (one number: both on it). Default: 0 and, when two or more GPUs are visible, 1.
    #[arg(long, value_name = "PREFILL,DECODE", value_parser = parse_gpus)]
    pub gpus: Option<(u32, u32)>,
}

/// `--gpus 0,1` or `--gpus 0`.
pub fn parse_gpus(s: &str) -> Result<(u32, u32), String> {
    let id = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{t}` is not a GPU index: give PREFILL,DECODE, e.g. 0,1, or one index for both"))
    };
    match s.split_once(',') {
        Some((p, d)) => Ok((id(p)?, id(d)?)),
        None => id(s).map(|g| (g, g)),
    }
}

/// The hidden `smoke-agent` command.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {}

/// Runs one agent from the plan on stdin (see `pdlaunch_kv::agent::main_stdio`).
pub fn run_agent(_args: AgentArgs) -> super::Result<u8> {
    // A library's helper process that dies must show as a write error here, not end the agent
    // before it reports (the CLI otherwise ends quietly on a closed pipe).
    #[cfg(unix)]
    // SAFETY: sets a signal disposition before the agent starts any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    Ok(agent::main_stdio())
}

fn nixl_lib(args: &TransportArgs) -> Option<PathBuf> {
    args.nixl_lib.clone().or_else(|| std::env::var_os("PDLAUNCH_NIXL_LIB").map(PathBuf::from))
}

fn mooncake_python(args: &TransportArgs) -> String {
    args.mooncake_python
        .clone()
        .or_else(|| std::env::var("PDLAUNCH_MOONCAKE_PYTHON").ok())
        .unwrap_or_else(|| "python3".into())
}

/// Why NIXL cannot be used here, if it cannot.
fn nixl_missing(args: &TransportArgs) -> Option<String> {
    if !cfg!(feature = "nixl") {
        return Some("this pdlaunch was built without NIXL (rebuild with --features pdlaunch/nixl)".into());
    }
    match nixl_lib(args) {
        None => Some("no NIXL library given (--nixl-lib or PDLAUNCH_NIXL_LIB)".into()),
        Some(p) if !p.is_file() => Some(format!("{} does not exist", p.display())),
        Some(_) => None,
    }
}

/// Why Mooncake cannot be used here, if it cannot (imports it, with a time limit).
fn mooncake_missing(python: &str) -> Option<String> {
    let child = Command::new(python)
        .args(["-c", "import mooncake.engine"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return Some(format!("cannot run {python}")) };
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return None,
            Ok(Some(_)) => return Some(format!("{python} cannot import mooncake.engine")),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Some(format!("{python} did not import mooncake.engine within 30 s"));
            }
        }
    }
}

/// The transport to use: the flag, else the deployment's backend when available. The note
/// says why memcpy was chosen over the deployment's backend.
pub fn choose(args: &TransportArgs, backend: &str) -> (Transport, Option<String>) {
    match args.transport.as_deref() {
        Some("nixl") => return (Transport::Nixl, None),
        Some("mooncake") => return (Transport::Mooncake, None),
        Some(_) => return (Transport::Memcpy, None),
        None => {}
    }
    let (t, missing) = match Transport::of_backend(backend) {
        Some(Transport::Nixl) => (Transport::Nixl, nixl_missing(args)),
        Some(t) => (t, mooncake_missing(&mooncake_python(args))),
        None => {
            return (
                Transport::Memcpy,
                Some(format!("transport memcpy: the deployment's transfer backend {backend} has no agent here")),
            )
        }
    };
    match missing {
        None => (t, None),
        Some(why) => (
            Transport::Memcpy,
            Some(format!(
                "transport memcpy (in-process): the deployment uses {}, which is not available here: {why}",
                t.name()
            )),
        ),
    }
}

/// The deployment's prefill bootstrap `host:port` (SGLang's default port 8998).
pub fn deployment_bootstrap(d: &Deployment) -> String {
    let plan = pdlaunch_core::plan::plan(d);
    let ctx = Context::from_deployment(d, &plan);
    let found =
        ctx.heads(CoreRole::Prefill).next().map(|s| format!("{}:{}", s.host, s.bootstrap_port().unwrap_or(8998)));
    found.unwrap_or_else(|| "127.0.0.1:8998".into())
}

fn environment(args: &TransportArgs, transport: Transport, placement: Placement) -> Vec<(String, String)> {
    launch::library_env(transport, placement, nixl_lib(args).as_deref())
}

/// The launcher for `--transport nixl|mooncake` (the CLI re-executes itself as the agents).
pub fn launcher(
    args: &TransportArgs,
    transport: Transport,
    bootstrap: &str,
    timeout: Duration,
) -> Result<Launcher, String> {
    let placement = if args.across == "netns" { Placement::Netns } else { Placement::Local };
    if let (Transport::Nixl, Some(why)) = (transport, nixl_missing(args)) {
        return Err(format!(
            "--transport nixl: {why}; install NIXL with `pip install --no-deps nixl==1.5.1 nixl-cu12==1.5.1` and give --nixl-lib …/site-packages/.nixl_cu12.mesonpy.libs/libnixl_capi.so"
        ));
    }
    let program = std::env::current_exe().map_err(|e| format!("cannot find this program to start the agents: {e}"))?;
    // Agents on this machine meet on loopback at the deployment's port (or the one given).
    let bootstrap = match (&args.bootstrap, placement) {
        (Some(b), _) => b.clone(),
        (None, _) => format!("127.0.0.1:{}", bootstrap.rsplit_once(':').map_or("0", |(_, p)| p)),
    };
    Ok(Launcher {
        transport,
        placement,
        program,
        args: vec!["smoke-agent".into()],
        env: environment(args, transport, placement),
        bootstrap: Some(bootstrap),
        timeout,
        mooncake_python: mooncake_python(args),
        mooncake_protocol: "tcp".into(),
        memory: Memory::Dram,
        gpus: args.gpus,
    })
}

/// How a side started alone runs.
pub struct SideRun {
    /// Limit for the whole side.
    pub timeout: Duration,
    /// Repetitions of the plan.
    pub iterations: u32,
    /// Pool memory (`--backend cuda`: GPU).
    pub memory: Memory,
}

/// `--side prefill|decode`: runs one side here. Exit 0 when it completed (the decode prints
/// its verification), 1 when the sides did not meet or the transfer failed, 2 on bad input.
pub fn run_side(
    args: &TransportArgs,
    side: &str,
    transport: Transport,
    case: Case,
    bootstrap: &str,
    run: SideRun,
) -> u8 {
    let SideRun { timeout, iterations, memory } = run;
    if transport == Transport::Memcpy {
        eprintln!("error: --side needs --transport nixl or mooncake");
        return crate::EXIT_BAD_INPUT;
    }
    let role = if side == "prefill" { Role::Prefill } else { Role::Decode };
    let bootstrap = args.bootstrap.clone().unwrap_or_else(|| bootstrap.to_owned());
    let host = match role {
        Role::Prefill => bootstrap.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h).to_owned(),
        Role::Decode => String::new(),
    };
    let plan = AgentPlan {
        role,
        transport,
        case,
        perturbation: None,
        bootstrap,
        host,
        iterations: iterations.max(1) + 1,
        timeout_ms: timeout.as_millis() as u64,
        memory,
        // A side started alone: its own index of --gpus, else this host's first GPU.
        gpu: args.gpus.map_or(0, |(p, d)| if role == Role::Prefill { p } else { d }),
        mooncake_python: mooncake_python(args),
        mooncake_protocol: "tcp".into(),
    };
    if transport == Transport::Nixl {
        if let Some(why) = nixl_missing(args) {
            eprintln!("error: --transport nixl: {why}");
            return crate::EXIT_BAD_INPUT;
        }
    }
    // The agent runs as a child so that the library paths apply from its start.
    let Ok(program) = std::env::current_exe() else {
        eprintln!("error: cannot find this program to start the agent");
        return crate::EXIT_BAD_INPUT;
    };
    let placement = Placement::Local;
    let child = Command::new(program)
        .arg("smoke-agent")
        .envs(environment(args, transport, placement))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot start the {side} agent: {e}");
            return crate::EXIT_BAD_INPUT;
        }
    };
    let json = serde_json::to_string(&plan).unwrap_or_default();
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(json.as_bytes()).and_then(|()| stdin.write_all(b"\n"));
    }
    let stdout = child.stdout.take().expect("piped stdout");
    // The agent keeps its own deadline; this one stops an agent stuck inside a library.
    let pid = child.id();
    let limit = timeout + Duration::from_secs(10);
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("error: the {role:?} agent (pid {pid}) gave no result within {} s; stopping it", limit.as_secs());
        // SAFETY: signalling the child this process started.
        #[cfg(unix)]
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    });
    let mut code = crate::EXIT_FINDINGS;
    use std::io::BufRead;
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<agent::Report>(&line) {
            Ok(agent::Report::Ready(addr)) => eprintln!("smoke: prefill listening on {addr}"),
            Ok(agent::Report::Outcome(o)) => match *o {
                Outcome::Decode(d) => {
                    println!("decode: {}", d.verification.summary());
                    code = if d.verification.is_clean() { 0 } else { crate::EXIT_FINDINGS };
                }
                Outcome::Prefill(p) => {
                    println!("prefill: wrote the plan {} time(s) through {}", p.totals.len(), p.library);
                    code = 0;
                }
            },
            Ok(agent::Report::Error { code: c, message }) => {
                eprintln!("error: {side} side: {message}");
                code = c;
            }
            Err(_) => {}
        }
    }
    let _ = child.wait();
    code
}
