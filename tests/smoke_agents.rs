//! End-to-end: the smoke-test agent pair rendered for SLURM and by hand, run with real bash under
//! the stubs of `stubs.rs`. The `sbatch` script's agents must run on the nodes the deployment's
//! own `sbatch` script runs their instances' node 0 on, with the same environment, the agent's
//! argv, and the two files byte for byte where the argv says; the job's status is the first
//! failure's. The shell scripts must run the agent the same way on their hosts. (The Kubernetes
//! agent pods are compared with the server pods field by field in the core's unit tests, for
//! every example and random deployments.)

mod stubs;

use std::collections::BTreeMap;
use std::path::Path;

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::plan::{plan, Plan, ServerProcess};
use pdlaunch_core::render::{render_agents, render_slurm, AgentFiles, AgentFormat};
use stubs::{node_of, placed, write_executable, Run, Sandbox, Step};

/// An agent program and a plan that a careless here-document or quoting would change: quotes,
/// command substitutions, backslashes, the default delimiter as a line, no final newline.
const HOSTILE_PLAN: &str = "{\"a\": \"it's $(touch /tmp/pdlaunch-agents-pwned) `touch /tmp/pdlaunch-agents-pwned` \\\\ \\n\"}\nPDLAUNCH_EOF\n  $HOME ${X} !! # 模型 \t\r\n\n  trailing  ";
const HOSTILE_SCRIPT: &str = "#!/usr/bin/env python3\nprint('x')  # \"$(id)\" \\n\n\n";
const FILES: AgentFiles = AgentFiles { script: HOSTILE_SCRIPT, plan: HOSTILE_PLAN };
const MARK: &str = "/tmp/pdlaunch-agents-pwned";

/// The pairs the renderer is asked for: (pair, prefill instance, decode instance).
fn pairs(d: &Deployment, all: bool) -> Vec<(usize, usize, usize)> {
    let (p, n) = (d.prefill.instances.len(), d.decode.instances.len());
    (0..if all { p.max(n) } else { 1 }).map(|i| (i, i % p, i % n)).collect()
}

/// The value after `flag` in argv.
fn after<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().position(|w| w == flag).map(|k| argv[k + 1].as_str())
}

fn node0(plan: &Plan, role: Role, instance: usize) -> &ServerProcess {
    plan.servers.iter().find(|s| s.role == role && s.instance == instance && s.node == 0).unwrap()
}

/// The prefill's bootstrap port and a server's first GPU, as its argv says.
fn bootstrap_port(plan: &Plan, p: &ServerProcess) -> String {
    after(&plan.server_argv(p), "--disaggregation-bootstrap-port").unwrap_or("8998").to_owned()
}
fn first_gpu(plan: &Plan, p: &ServerProcess) -> String {
    after(&plan.server_argv(p), "--base-gpu-id").unwrap_or("0").to_owned()
}

/// The agent step of pair `i`'s `role`.
fn agent(run: &Run, role: Role, i: usize) -> &Step {
    let mut found = run.steps.iter().filter(|s| {
        s.args.get(1).map(String::as_str) == Some(role.as_str()) && after(&s.args, "--pair") == Some(&i.to_string())
    });
    let step = found.next().unwrap_or_else(|| panic!("no {role} agent of pair {i}: {:#?}", run.steps));
    assert!(found.next().is_none(), "two {role} agents of pair {i}");
    step
}

/// The environment without what bash sets per command.
fn stable(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter().filter(|(k, _)| k.as_str() != "_").map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The copies the stub agent kept of the files its argv named.
fn kept(sb: &Sandbox, step: &Step) -> (Vec<u8>, Vec<u8>) {
    let read = |what: &str| std::fs::read(sb.rec().join(format!("{what}.{}", step.pid))).unwrap();
    (read("script"), read("plan"))
}

/// Runs `d`'s own sbatch script and its agents' in one sandbox and checks each agent against
/// the server step of its instance's node 0.
fn assert_agents_run_where_the_servers_do(d: &Deployment, all: bool) {
    let what = format!("{} (all: {all})", d.name);
    let (p, nodes) = placed(d);
    let plan = plan(&p);
    let sb = Sandbox::new();
    let job = [("SLURM_JOB_ID", "77")];
    let servers = sb.run(&render_slurm(d).unwrap().contents, nodes, &job);
    assert_eq!(servers.status, Some(0), "{what}: {}", servers.stderr);
    let server_step = |role: Role, instance: usize| -> Step {
        let argv = plan.server_argv(node0(&plan, role, instance));
        servers.steps.iter().find(|s| s.args == argv[1..]).unwrap_or_else(|| panic!("{what}: no {argv:?}")).clone()
    };
    let files = render_agents(d, AgentFormat::Slurm, &FILES, all).unwrap();
    let [file] = &files[..] else { panic!("{what}: one file") };
    assert_eq!(file.name, format!("{}-smoke.sbatch", d.name));
    assert!(file.executable);
    let run = sb.run(&file.contents, nodes, &job);
    assert_eq!(run.status, Some(0), "{what}: {}\n{}", run.stderr, file.contents);
    let pairs = pairs(d, all);
    assert_eq!(run.steps.len(), 2 * pairs.len(), "{what}: one step per agent");
    let dir = sb.dir.path().join("work/pdlaunch-smoke-77");
    let dir_s = dir.to_str().unwrap();
    for &(i, pi, di) in &pairs {
        let prefill = server_step(Role::Prefill, pi);
        let bootstrap =
            format!("{}:{}", node_of(&prefill.srun), bootstrap_port(&plan, node0(&plan, Role::Prefill, pi)));
        for (role, instance) in [(Role::Prefill, pi), (Role::Decode, di)] {
            let at = format!("{what}: pair {i} {role}");
            let (a, s) = (agent(&run, role, i), server_step(role, instance));
            assert_eq!(&a.srun[..4], ["--overlap", "--nodes=1", "--ntasks=1", "--export=ALL"], "{at}");
            assert_eq!(node_of(&a.srun), node_of(&s.srun), "{at}: the node of its server");
            assert_eq!(stable(&a.env), stable(&s.env), "{at}: the environment of its server");
            assert_eq!(a.argv0, s.argv0, "{at}: the servers' interpreter");
            let gpu = first_gpu(&plan, node0(&plan, role, instance));
            let want = [
                format!("{dir_s}/host_agent.py"),
                role.as_str().into(),
                format!("{dir_s}/plan.json"),
                "--bootstrap".into(),
                bootstrap.clone(),
                "--gpu".into(),
                gpu,
                "--pair".into(),
                i.to_string(),
            ];
            assert_eq!(a.args, want, "{at}: argv");
            assert_eq!(kept(&sb, a), (HOSTILE_SCRIPT.as_bytes().to_vec(), HOSTILE_PLAN.as_bytes().to_vec()), "{at}");
            let log = std::fs::read_to_string(dir.join(format!("{role}-{i}.log"))).unwrap();
            assert!(
                log.starts_with(&format!("PDLAUNCH-SMOKE-REPORT {{\"side\": \"{role}\", \"pid\": {}}}", a.pid)),
                "{at}: {log}"
            );
        }
        let report = format!("pdlaunch smoke --report {dir_s}/prefill-{i}.log {dir_s}/decode-{i}.log");
        assert!(run.stdout.contains(&report), "{what}: {}", run.stdout);
    }
    assert_eq!(std::fs::read(dir.join("plan.json")).unwrap(), HOSTILE_PLAN.as_bytes());
    assert_eq!(std::fs::read(dir.join("host_agent.py")).unwrap(), HOSTILE_SCRIPT.as_bytes());
    assert!(!Path::new(MARK).exists(), "a command substitution ran");
}

#[test]
fn sbatch_agents_run_on_their_servers_nodes() {
    for e in EXAMPLES {
        for all in [false, true] {
            assert_agents_run_where_the_servers_do(&example(e.name).unwrap(), all);
        }
    }
    // Hostile environment values; a decode on a prefill's host.
    let mut d = example("qwen3-2p1d-nixl").unwrap();
    d.shared.env.insert("PDL_SHARED".into(), "a 'b' \"c\" $(touch /tmp/pdlaunch-agents-pwned) \\ \n".into());
    d.decode.env.insert("UCX_NET_DEVICES".into(), "mlx5_0:1".into());
    d.decode.instances[0].nodes[0].host = d.prefill.instances[1].nodes[0].host.clone();
    assert_agents_run_where_the_servers_do(&d, true);
}

#[test]
fn the_sbatch_job_exits_with_the_first_failure() {
    let d = example("qwen3-2p1d-nixl").unwrap();
    let file = render_agents(&d, AgentFormat::Slurm, &FILES, true).unwrap().remove(0);
    let sb = Sandbox::new();
    let shared = sb.dir.path().join("shared dir/$x");
    let shared = shared.to_str().unwrap();
    for (env, want) in [
        (vec![], 0),
        (vec![("PDL_DECODE_STATUS", "2")], 2),
        (vec![("PDL_PREFILL_STATUS", "1"), ("PDL_DECODE_STATUS", "2")], 1),
    ] {
        let mut env = env;
        env.push(("PDLAUNCH_SMOKE_DIR", shared));
        let run = sb.run(&file.contents, 3, &env);
        assert_eq!(run.status, Some(want), "{env:?}: {}", run.stderr);
        assert_eq!(run.steps.len(), 4, "every agent ran: {env:?}");
        for s in &run.steps {
            assert!(s.args[0].starts_with(shared), "{:?}", s.args);
        }
        // The report line, as a command the shell reads back whole.
        let line = run.stdout.lines().find(|l| l.contains("decode-1.log")).unwrap();
        let words =
            std::process::Command::new("bash").args(["-c", &format!("printf '%s\\n' {line}")]).output().unwrap();
        let words = String::from_utf8(words.stdout).unwrap();
        let words: Vec<&str> = words.lines().collect();
        assert_eq!(
            words,
            ["pdlaunch", "smoke", "--report", &format!("{shared}/prefill-1.log"), &format!("{shared}/decode-1.log")]
        );
        assert!(Path::new(shared).join("decode-1.log").exists());
    }
}

/// Runs a shell agent script in the sandbox and returns its one agent step.
fn run_shell(sb: &Sandbox, text: &str, env: &[(&str, &str)]) -> (Run, Step) {
    let mut run = sb.run(text, 1, env);
    assert_eq!(run.steps.len(), 1, "{}", run.stderr);
    let step = run.steps.remove(0);
    (run, step)
}

/// Runs every shell agent script of `d` (one pair per instance), the interpreter named by
/// `PDLAUNCH_PYTHON` when `named`, else the deployment's, and checks each against its server.
fn assert_shell_agents_run_as_their_servers(d: &Deployment, named: bool) {
    let plan = plan(d);
    let sb = Sandbox::new();
    let stub = sb.dir.path().join("bin/python3");
    let stub = stub.to_str().unwrap();
    let files = render_agents(d, AgentFormat::Shell, &FILES, true).unwrap();
    let pairs = pairs(d, true);
    assert_eq!(files.len(), 2 * pairs.len());
    for (k, f) in files.iter().enumerate() {
        let (i, pi, di) = pairs[k / 2];
        let (role, instance) = if k % 2 == 0 { (Role::Prefill, pi) } else { (Role::Decode, di) };
        let at = format!("{} {}", d.name, f.name);
        assert_eq!(f.name, format!("{}-smoke-{role}-{i}.sh", d.name));
        assert!(f.executable);
        let server = node0(&plan, role, instance);
        let prefill = node0(&plan, Role::Prefill, pi);
        assert!(f.contents.contains(&format!("run it by hand on {} (GPU", server.host)), "{at}: the host");
        assert!(f.contents.contains(&format!("where {role} instance\n# {instance} (node 0) runs")), "{at}");
        let status = if role == Role::Decode { "3" } else { "0" };
        let env = [("PDL_DECODE_STATUS", status), ("PDLAUNCH_PYTHON", stub)];
        let (run, step) = run_shell(&sb, &f.contents, if named { &env } else { &env[..1] });
        assert_eq!(run.status, Some(status.parse().unwrap()), "{at}: the agent's status: {}", run.stderr);
        if named {
            assert_eq!(step.argv0, stub, "{at}: interpreter");
        } else {
            assert_eq!(Path::new(&step.argv0).file_name().unwrap().to_str(), Some(plan.python.as_str()), "{at}");
        }
        let dir = step.args[0].strip_suffix("/host_agent.py").unwrap_or_else(|| panic!("{at}: {:?}", step.args));
        let bootstrap = pdlaunch_core::plan::host_port(&prefill.host, bootstrap_port(&plan, prefill).parse().unwrap());
        let want = [
            format!("{dir}/host_agent.py"),
            role.as_str().into(),
            format!("{dir}/plan.json"),
            "--bootstrap".into(),
            bootstrap,
            "--gpu".into(),
            first_gpu(&plan, server),
            "--pair".into(),
            i.to_string(),
        ];
        assert_eq!(step.args, want, "{at}: argv");
        for (k, v) in &server.env {
            assert_eq!(step.env.get(k), Some(v), "{at}: env {k}");
        }
        assert_eq!(kept(&sb, &step), (HOSTILE_SCRIPT.as_bytes().to_vec(), HOSTILE_PLAN.as_bytes().to_vec()), "{at}");
        assert!(!Path::new(dir).exists(), "{at}: the temp folder is left behind");
        let log = sb.dir.path().join(format!("work/{}-smoke-{role}-{i}.log", d.name));
        let log = std::fs::read_to_string(log).unwrap();
        assert!(log.starts_with(&format!("PDLAUNCH-SMOKE-REPORT {{\"side\": \"{role}\"")), "{at}: {log}");
        assert!(run.stdout.starts_with("PDLAUNCH-SMOKE-REPORT "), "{at}: teed to the terminal");
        let report = format!("pdlaunch smoke --report ./{0}-smoke-prefill-{i}.log ./{0}-smoke-decode-{i}.log", d.name);
        assert!(run.stderr.contains(&report), "{at}: {}", run.stderr);
    }
    assert!(!Path::new(MARK).exists(), "a command substitution ran");
}

#[test]
fn shell_agents_run_as_their_servers() {
    for e in EXAMPLES {
        assert_shell_agents_run_as_their_servers(&example(e.name).unwrap(), true);
    }
}

/// Without `PDLAUNCH_PYTHON` the scripts run the deployment's interpreter, whatever its path holds.
#[test]
fn the_shell_agents_default_to_the_servers_interpreter() {
    let mut d = example("qwen3-2p1d-nixl").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("my \"py\" $HOME `x` \\ 'q'");
    std::fs::create_dir_all(&odd).unwrap();
    let python = odd.join("python3");
    write_executable(&python, stubs::PYTHON);
    d.launcher.python = python.to_str().unwrap().to_owned();
    d.prefill.env.insert("PDL_PREFILL".into(), "it's $(touch /tmp/pdlaunch-agents-pwned)".into());
    let sb = Sandbox::new();
    let f = &render_agents(&d, AgentFormat::Shell, &FILES, false).unwrap()[0];
    let (run, step) = run_shell(&sb, &f.contents, &[]);
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(step.argv0, d.launcher.python);
    assert_eq!(step.env.get("PDL_PREFILL").map(String::as_str), Some("it's $(touch /tmp/pdlaunch-agents-pwned)"));
    assert!(!Path::new(MARK).exists(), "a command substitution ran");
    // The plain default.
    let d = example("llama-1p1d").unwrap();
    assert_shell_agents_run_as_their_servers(&d, false);
}

/// A plan near the ConfigMap's limit arrives intact, and soon, in both shell formats.
#[test]
fn a_large_plan_arrives_intact() {
    let line = "{\"layer\": 1, \"bytes\": [1, 2, 3], \"note\": \"$(x) \\\\ 'q'\"}\n";
    let plan_text = line.repeat(900_000 / line.len());
    let files = AgentFiles { script: HOSTILE_SCRIPT, plan: &plan_text };
    let d = example("llama-1p1d").unwrap();
    let sb = Sandbox::new();
    let start = std::time::Instant::now();
    let f = &render_agents(&d, AgentFormat::Shell, &files, false).unwrap()[0];
    let (run, step) = run_shell(&sb, &f.contents, &[]);
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(kept(&sb, &step).1, plan_text.as_bytes());
    let f = &render_agents(&d, AgentFormat::Slurm, &files, false).unwrap()[0];
    let run = sb.run(&f.contents, 1, &[]);
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    for s in &run.steps {
        assert_eq!(kept(&sb, s).1, plan_text.as_bytes());
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
}
