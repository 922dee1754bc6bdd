//! End-to-end: render the `slurm` format's `sbatch` script and run it with real bash under stub
//! `scontrol`, `srun`, `curl` and `python3` (a temp dir first on PATH) that record each step: the
//! node srun is asked for, and the argv and environment the interpreter receives. They must be
//! the plan's for the deployment placed on the job's nodes, the deployment's distinct hosts taken
//! in order onto the nodes `scontrol show hostnames` lists.
//!
//! Nothing here may hang: the stubs answer `/health` at once, a server stub sleeps (so that the
//! readiness wait sees it alive) until the script's trap stops it, and every run has a deadline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::plan::plan;
use pdlaunch_core::render::{render, render_slurm, Format};

/// `scontrol show hostnames LIST`: the comma-separated list, one name a line.
const SCONTROL: &str = r#"#!/usr/bin/env bash
[ "$1 $2" = "show hostnames" ] || { echo "stub scontrol: unexpected $*" >&2; exit 2; }
tr ',' '\n' <<<"$3"
"#;

/// `srun OPTIONS PROGRAM ARGS`: records its own arguments under its pid, then execs the program
/// (which keeps the pid, so the interpreter's record pairs with it).
const SRUN: &str = r#"#!/usr/bin/env bash
: > "$PDL_REC/srun.$$"
for a in "$@"; do printf '%s\0' "$a" >> "$PDL_REC/srun.$$"; done
while [ $# -gt 0 ]; do
    case "$1" in
        -w) shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
exec "$@"
"#;

/// `curl ... URL`: records the URL; answers at once (fails when `PDL_CURL_FAILS` is set).
const CURL: &str = r#"#!/usr/bin/env bash
for a in "$@"; do last=$a; done
printf '%s\n' "$last" >> "$PDL_REC/curl"
[ -z "${PDL_CURL_FAILS:-}" ]
"#;

/// The interpreter: records `$0`, its arguments and environment under its pid (the environment
/// last, renamed into place when whole). A server then runs until stopped (or exits 3 when it is
/// a decode and `PDL_DECODE_FAILS` is set). The router waits (at most 10 s) until every step has
/// recorded, since the stub `curl` answers before the servers do, then returns, which ends the
/// script (or, with `PDL_ROUTER_STAYS`, runs until stopped too).
const PYTHON: &str = r#"#!/usr/bin/env bash
printf '%s' "$0" > "$PDL_REC/argv0.$$"
: > "$PDL_REC/argv.$$"
for a in "$@"; do printf '%s\0' "$a" >> "$PDL_REC/argv.$$"; done
env -0 > "$PDL_REC/.env.$$" && mv "$PDL_REC/.env.$$" "$PDL_REC/env.$$"
case " $* " in
    *" sglang.launch_server "*)
        if [ -n "${PDL_DECODE_FAILS:-}" ] && [[ " $* " == *" --disaggregation-mode decode "* ]]; then exit 3; fi
        exec sleep 20 ;;
esac
[ -z "${PDL_ROUTER_STAYS:-}" ] || exec sleep 20
for _ in $(seq 100); do
    all=1
    for f in "$PDL_REC"/srun.*; do [ -e "$PDL_REC/env.${f##*.}" ] || all=0; done
    [ "$all" = 1 ] && break
    sleep 0.1
done
"#;

/// The nodes the stub allocation lists.
fn job_nodes(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("sn-{k}")).collect()
}

struct Sandbox {
    dir: tempfile::TempDir,
}

/// What one process recorded.
#[derive(Debug)]
struct Step {
    srun: Vec<String>,
    argv0: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

/// What one run of the script recorded.
struct Run {
    status: Option<i32>,
    stderr: String,
    steps: Vec<Step>,
    health: Vec<String>,
    took: Duration,
}

fn write_executable(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn split_nul(bytes: &[u8]) -> Vec<String> {
    if bytes.is_empty() {
        return Vec::new();
    }
    assert_eq!(bytes.last(), Some(&0), "records are NUL-terminated");
    bytes[..bytes.len() - 1].split(|&b| b == 0).map(|r| String::from_utf8(r.to_vec()).expect("UTF-8")).collect()
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        for (name, text) in [("scontrol", SCONTROL), ("srun", SRUN), ("curl", CURL), ("python3", PYTHON)] {
            write_executable(&bin.join(name), text);
        }
        Sandbox { dir }
    }

    fn rec(&self) -> PathBuf {
        self.dir.path().join("rec")
    }

    /// Runs the script with bash in a clean environment, `extra` set, killing it after 60 s.
    fn run(&self, script: &str, nodes: usize, extra: &[(&str, &str)]) -> Run {
        self.run_cancelled(script, nodes, extra, None)
    }

    /// [`Sandbox::run`], sending the script SIGTERM (as `scancel` does) once `cancel_after` steps
    /// have started, when given.
    fn run_cancelled(&self, script: &str, nodes: usize, extra: &[(&str, &str)], cancel_after: Option<usize>) -> Run {
        let path = self.dir.path().join("job.sbatch");
        std::fs::write(&path, script).unwrap();
        let _ = std::fs::remove_dir_all(self.rec());
        std::fs::create_dir_all(self.rec()).unwrap();
        let bin = self.dir.path().join("bin");
        let mut cmd = Command::new("bash");
        cmd.arg(&path)
            .current_dir(self.dir.path().join("work"))
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", self.dir.path().join("work"))
            .env("SLURM_JOB_NODELIST", job_nodes(nodes).join(","))
            .env("PDLAUNCH_HEALTH_TIMEOUT", "20")
            .env("PDL_REC", self.rec())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let mut child = cmd.spawn().expect("bash runs");
        let mut cancel_after = cancel_after;
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            let started = || {
                let entries = std::fs::read_dir(self.rec()).unwrap();
                entries.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("env.")).count()
            };
            if cancel_after.is_some_and(|n| started() >= n) {
                let pid = child.id().to_string();
                assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
                cancel_after = None;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("the script ran past 60 s:\n{script}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = start.elapsed();
        let mut stderr = String::new();
        use std::io::Read;
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let mut steps = Vec::new();
        for entry in std::fs::read_dir(self.rec()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("srun.") else { continue };
            let read = |what: &str| std::fs::read(self.rec().join(format!("{what}.{pid}"))).unwrap_or_default();
            steps.push(Step {
                srun: split_nul(&read("srun")),
                argv0: String::from_utf8(read("argv0")).unwrap(),
                args: split_nul(&read("argv")),
                env: split_nul(&read("env"))
                    .into_iter()
                    .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                    .collect(),
            });
        }
        let health = std::fs::read_to_string(self.rec().join("curl")).unwrap_or_default();
        Run { status: status.code(), stderr, steps, health: health.lines().map(str::to_owned).collect(), took }
    }
}

/// The deployment placed on the stub job's nodes: its distinct hosts, in the order the plan first
/// meets them, become `sn-0`, `sn-1`...; a router host that is one of them too.
fn placed(d: &Deployment) -> (Deployment, usize) {
    let mut hosts: Vec<String> = Vec::new();
    for role in Role::BOTH {
        for inst in &d.side(role).instances {
            for node in &inst.nodes {
                if !hosts.contains(&node.host) {
                    hosts.push(node.host.clone());
                }
            }
        }
    }
    let names = job_nodes(hosts.len());
    let at = |h: &str| hosts.iter().position(|x| x == h);
    let mut p = d.clone();
    for role in Role::BOTH {
        for inst in &mut p.side_mut(role).instances {
            for node in &mut inst.nodes {
                node.host = names[at(&node.host).unwrap()].clone();
            }
        }
    }
    if let Some(k) = at(&d.router.host) {
        p.router.host = names[k].clone();
    }
    (p, hosts.len())
}

/// The value of `-w` among srun's arguments.
fn node_of(srun: &[String]) -> &str {
    let i = srun.iter().position(|a| a == "-w").expect("each step names its node");
    &srun[i + 1]
}

/// Runs `d`'s script and checks every step against the plan of the placed deployment.
fn assert_steps_match_plan(d: &Deployment) {
    let file = render_slurm(d).unwrap_or_else(|e| panic!("{}: {e}", d.name));
    let (p, nodes) = placed(d);
    let plan = plan(&p);
    let sb = Sandbox::new();
    let run = sb.run(&file.contents, nodes, &[]);
    let what = &d.name;
    assert_eq!(run.status, Some(0), "{what}: the script failed:\n{}\n{}", run.stderr, file.contents);
    assert_eq!(run.steps.len(), plan.servers.len() + 1, "{what}: one step per process: {:?}", run.steps);
    for s in &run.steps {
        assert_eq!(&s.srun[..4], ["--overlap", "--nodes=1", "--ntasks=1", "--export=ALL"], "{what}: {:?}", s.srun);
        assert_eq!(Path::new(&s.argv0).file_name().unwrap().to_str().unwrap(), plan.python, "{what}: interpreter");
        assert!(!s.env.contains_key("CUDA_VISIBLE_DEVICES"), "{what}: --base-gpu-id picks the GPUs");
    }
    for server in &plan.servers {
        let argv = plan.server_argv(server);
        let label = format!("{what}: {}", server.label());
        let step = run.steps.iter().find(|s| s.args == argv[1..]).unwrap_or_else(|| {
            panic!(
                "{label}: no step ran {argv:?}; the steps ran {:#?}",
                run.steps.iter().map(|s| &s.args).collect::<Vec<_>>()
            )
        });
        assert_eq!(node_of(&step.srun), server.host, "{label}: node");
        for (k, v) in &server.env {
            assert_eq!(step.env.get(k), Some(v), "{label}: env {k}");
        }
    }
    let argv = plan.router_argv();
    let router = run.steps.iter().find(|s| s.args == argv[1..]).unwrap_or_else(|| {
        panic!(
            "{what}: no step ran the router {argv:?}; the steps ran {:#?}",
            run.steps.iter().map(|s| &s.args).collect::<Vec<_>>()
        )
    });
    let router_node = job_nodes(nodes).into_iter().find(|n| *n == p.router.host).unwrap_or_else(|| "sn-0".into());
    assert_eq!(node_of(&router.srun), router_node, "{what}: router node");
    for (k, v) in &plan.router.env {
        assert_eq!(router.env.get(k), Some(v), "{what}: router env {k}");
    }
    let addrs = pdlaunch_core::plan::instance_addrs(&p);
    let mut want = Vec::new();
    for role in Role::BOTH {
        for i in 0..p.side(role).instances.len() {
            let a = &addrs[&(role, i)];
            want.push(format!("http://{}:{}/health", a.host, a.port));
        }
    }
    assert_eq!(run.health, want, "{what}: the readiness waits");
}

#[test]
fn every_example_script_passes_bash_n() {
    for e in EXAMPLES {
        let d = example(e.name).unwrap();
        let text = render(&d, Format::Slurm).unwrap().remove(0).contents;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.sbatch");
        std::fs::write(&path, &text).unwrap();
        let out = Command::new("bash").arg("-n").arg(&path).output().expect("bash runs");
        assert!(out.status.success(), "{}: bash -n: {}", e.name, String::from_utf8_lossy(&out.stderr));
        assert!(text.starts_with("#!/usr/bin/env bash\n#SBATCH "), "{}", e.name);
    }
}

#[test]
fn every_example_runs_each_process_as_its_plan_says() {
    for e in EXAMPLES {
        assert_steps_match_plan(&example(e.name).unwrap());
    }
}

/// Hostile text reaches argv and the environment intact, and no command substitution runs.
#[test]
fn hostile_values_reach_argv_intact() {
    let mut d = example("deepseek-v3-dp-deepep").unwrap();
    let mark = "/tmp/pdlaunch-slurm-pwned";
    let nasty = format!("my model 'sq' \"dq\" $(touch {mark}) `touch {mark}` ; | * ~ \\ \n\tü 模型 $HOME ${{X}} !! #");
    d.model.path = nasty.clone();
    d.prefill.extra_args = vec!["--log-level".into(), "info".into(), "--".into(), nasty.clone()];
    d.shared.env.insert("PDL_SHARED".into(), nasty.clone());
    d.decode.env.insert("PDL_DECODE".into(), "$(touch value) 'x'".into());
    d.router.env.insert("PDL_ROUTER".into(), nasty);
    d.router.extra_args = vec!["--log-level".into(), "debug $(touch value)".into()];
    assert_steps_match_plan(&d);
    assert!(!Path::new(mark).exists(), "a command substitution ran");
}

/// A router that listens on one of the deployment's hosts runs on that host's node.
#[test]
fn a_router_on_a_deployment_host_runs_on_its_node() {
    let mut d = example("qwen3-2p1d-nixl").unwrap();
    d.router.host = d.decode.instances[0].nodes[0].host.clone();
    assert_steps_match_plan(&d);
}

/// When a step fails the trap stops the others at once: the script neither hangs nor waits for
/// the sleeping servers.
#[test]
fn a_failed_step_stops_the_others() {
    let d = example("qwen3-2p1d-nixl").unwrap();
    let file = render_slurm(&d).unwrap();
    let run = Sandbox::new().run(&file.contents, 3, &[("PDL_DECODE_FAILS", "1")]);
    assert_ne!(run.status, Some(0), "{}", run.stderr);
    assert!(run.took < Duration::from_secs(15), "the servers were not stopped: {:?}", run.took);
}

/// A server that never answers ends the job once the readiness timeout passes, before the router.
#[test]
fn an_unready_server_ends_the_job_after_the_timeout() {
    let d = example("llama-1p1d").unwrap();
    let file = render_slurm(&d).unwrap();
    let run = Sandbox::new().run(&file.contents, 1, &[("PDL_CURL_FAILS", "1"), ("PDLAUNCH_HEALTH_TIMEOUT", "0")]);
    assert_eq!(run.status, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("did not answer within 0s"), "{}", run.stderr);
    assert!(run.steps.iter().all(|s| !s.args.iter().any(|a| a == "sglang_router.launch_router")), "router started");
    assert!(run.took < Duration::from_secs(15), "{:?}", run.took);
}

/// Too small an allocation is refused before any step starts.
#[test]
fn too_few_nodes_start_nothing() {
    let d = example("deepseek-v3-dp-deepep").unwrap();
    let file = render_slurm(&d).unwrap();
    let run = Sandbox::new().run(&file.contents, 2, &[]);
    assert_eq!(run.status, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("the job has 2 node(s); this deployment needs 4"), "{}", run.stderr);
    assert!(run.steps.is_empty());
}

/// Cancelling the job (SIGTERM to the batch script) stops every step at once.
#[test]
fn a_cancelled_job_stops_every_step() {
    let d = example("qwen3-2p1d-nixl").unwrap();
    let file = render_slurm(&d).unwrap();
    let sb = Sandbox::new();
    let run = sb.run_cancelled(&file.contents, 3, &[("PDL_ROUTER_STAYS", "1")], Some(4));
    assert_eq!(run.status, Some(143), "{}", run.stderr);
    assert_eq!(run.steps.len(), 4, "every step had started");
    // Well under the 5 s tick of the watch loop, which the trap stops too.
    assert!(run.took < Duration::from_secs(4), "the steps were not stopped: {:?}", run.took);
}
