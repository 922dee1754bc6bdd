//! End-to-end: render the `slurm` format's `sbatch` script and run it with real bash under stub
//! `scontrol`, `srun`, `curl` and `python3` (`stubs.rs`) that record each step: the node srun is
//! asked for, and the argv and environment the interpreter receives. They must be the plan's for
//! the deployment placed on the job's nodes, the deployment's distinct hosts taken in order onto
//! the nodes `scontrol show hostnames` lists.

mod stubs;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::plan::plan;
use pdlaunch_core::render::{render, render_slurm, Format};
use stubs::{job_nodes, node_of, placed, Sandbox};

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
