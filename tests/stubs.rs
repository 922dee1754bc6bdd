//! Stub programs for running rendered scripts with real bash (`scontrol`, `srun`, `curl` and the
//! interpreter, in a temp dir first on PATH) and the records they leave: the node srun is asked
//! for, and each interpreter's `$0`, argv and environment. The `sbatch` tests of the servers
//! (`e2e_slurm.rs`) and of the smoke-test agents (`smoke_agents.rs`) share them.
//!
//! Nothing here may hang: the stubs answer `/health` at once, a server stub sleeps (so that the
//! readiness wait sees it alive) until the script's trap stops it, and every run has a deadline.

// Each test crate that includes this module uses a part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pdlaunch_core::deployment::{Deployment, Role};

/// `scontrol show hostnames LIST`: the comma-separated list, one name a line.
pub const SCONTROL: &str = r#"#!/usr/bin/env bash
[ "$1 $2" = "show hostnames" ] || { echo "stub scontrol: unexpected $*" >&2; exit 2; }
tr ',' '\n' <<<"$3"
"#;

/// `srun OPTIONS PROGRAM ARGS`: records its own arguments under its pid, then execs the program
/// (which keeps the pid, so the interpreter's record pairs with it).
pub const SRUN: &str = r#"#!/usr/bin/env bash
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
pub const CURL: &str = r#"#!/usr/bin/env bash
for a in "$@"; do last=$a; done
printf '%s\n' "$last" >> "$PDL_REC/curl"
[ -z "${PDL_CURL_FAILS:-}" ]
"#;

/// The interpreter: records `$0`, its arguments and environment under its pid (the environment
/// last, renamed into place when whole). The smoke-test agent (`.../host_agent.py SIDE PLAN ...`)
/// first keeps a copy of the two files its argv names (`script.<pid>`, `plan.<pid>`), then prints
/// a report line and exits with `PDL_PREFILL_STATUS` or `PDL_DECODE_STATUS` (0 unless set). A
/// server then runs until stopped (or exits 3 when it is a decode and `PDL_DECODE_FAILS` is set).
/// The router waits (at most 10 s) until every step has recorded, since the stub `curl` answers
/// before the servers do, then returns, which ends the script (or, with `PDL_ROUTER_STAYS`, runs
/// until stopped too).
pub const PYTHON: &str = r#"#!/usr/bin/env bash
printf '%s' "$0" > "$PDL_REC/argv0.$$"
: > "$PDL_REC/argv.$$"
for a in "$@"; do printf '%s\0' "$a" >> "$PDL_REC/argv.$$"; done
agent=
case "${1:-}" in
    */host_agent.py)
        agent=$2
        cp "$1" "$PDL_REC/script.$$"
        cp "$3" "$PDL_REC/plan.$$" ;;
esac
env -0 > "$PDL_REC/.env.$$" && mv "$PDL_REC/.env.$$" "$PDL_REC/env.$$"
case "$agent" in
    prefill) echo "PDLAUNCH-SMOKE-REPORT {\"side\": \"prefill\", \"pid\": $$}"; exit "${PDL_PREFILL_STATUS:-0}" ;;
    decode) echo "PDLAUNCH-SMOKE-REPORT {\"side\": \"decode\", \"pid\": $$}"; exit "${PDL_DECODE_STATUS:-0}" ;;
esac
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
pub fn job_nodes(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("sn-{k}")).collect()
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

/// What one process recorded.
#[derive(Clone, Debug)]
pub struct Step {
    /// srun's own arguments (none for a process srun did not start).
    pub srun: Vec<String>,
    pub argv0: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The pid, which names the step's other records.
    pub pid: String,
}

/// What one run of the script recorded.
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub steps: Vec<Step>,
    pub health: Vec<String>,
    pub took: Duration,
}

pub fn write_executable(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn split_nul(bytes: &[u8]) -> Vec<String> {
    if bytes.is_empty() {
        return Vec::new();
    }
    assert_eq!(bytes.last(), Some(&0), "records are NUL-terminated");
    bytes[..bytes.len() - 1].split(|&b| b == 0).map(|r| String::from_utf8(r.to_vec()).expect("UTF-8")).collect()
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        for (name, text) in [("scontrol", SCONTROL), ("srun", SRUN), ("curl", CURL), ("python3", PYTHON)] {
            write_executable(&bin.join(name), text);
        }
        Sandbox { dir }
    }

    pub fn rec(&self) -> PathBuf {
        self.dir.path().join("rec")
    }

    /// Runs the script with bash in a clean environment, `extra` set, killing it after 60 s.
    pub fn run(&self, script: &str, nodes: usize, extra: &[(&str, &str)]) -> Run {
        self.run_cancelled(script, nodes, extra, None)
    }

    /// [`Sandbox::run`], sending the script SIGTERM (as `scancel` does) once `cancel_after` steps
    /// have started, when given.
    pub fn run_cancelled(
        &self,
        script: &str,
        nodes: usize,
        extra: &[(&str, &str)],
        cancel_after: Option<usize>,
    ) -> Run {
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
            .stdout(Stdio::piped())
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
        let (mut stdout, mut stderr) = (String::new(), String::new());
        use std::io::Read;
        child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let health = std::fs::read_to_string(self.rec().join("curl")).unwrap_or_default();
        let steps = steps(&self.rec());
        Run { status: status.code(), stdout, stderr, steps, health: health.lines().map(str::to_owned).collect(), took }
    }
}

/// The deployment placed on the stub job's nodes: its distinct hosts, in the order the plan first
/// meets them, become `sn-0`, `sn-1`...; a router host that is one of them too.
pub fn placed(d: &Deployment) -> (Deployment, usize) {
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
pub fn node_of(srun: &[String]) -> &str {
    let i = srun.iter().position(|a| a == "-w").expect("each step names its node");
    &srun[i + 1]
}

/// What each interpreter the stubs started recorded in `rec`, with the srun step that started it.
pub fn steps(rec: &Path) -> Vec<Step> {
    let mut steps = Vec::new();
    for entry in std::fs::read_dir(rec).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("argv.") else { continue };
        let read = |what: &str| std::fs::read(rec.join(format!("{what}.{pid}"))).unwrap_or_default();
        steps.push(Step {
            srun: split_nul(&read("srun")),
            argv0: String::from_utf8(read("argv0")).unwrap(),
            args: split_nul(&read("argv")),
            env: split_nul(&read("env"))
                .into_iter()
                .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                .collect(),
            pid: pid.to_owned(),
        });
    }
    steps
}
