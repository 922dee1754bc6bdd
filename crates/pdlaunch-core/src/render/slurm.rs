//! One `sbatch` script for the whole deployment.
//!
//! The job asks for one node per distinct host of the deployment (`#SBATCH --nodes`) and, on
//! every node, the most GPUs any host uses (`#SBATCH --gpus-per-node`, or `--gres=gpu:<model>:N`
//! when the deployment names its GPU model). The deployment's literal hosts are replaced by the
//! allocation's: its distinct hosts, in the order the plan first meets them (prefill instances,
//! then decode, nodes in rank order), map onto the job's nodes in the order `scontrol show
//! hostnames "$SLURM_JOB_NODELIST"` lists them, and the script names them `node_0`, `node_1`....
//! So instances the deployment puts on one host share one node, and an instance's nodes are taken
//! in order. The command lines are the plan's for the deployment placed on those nodes: each
//! host, wherever the plan writes it (`--host`, `--dist-init-addr`, the router's URLs), becomes
//! `"$node_k"`, expanded at run time; everything else is shell-quoted as in the `shell` format.
//!
//! Every process (every node of every server, then the router) is one backgrounded step, `srun
//! --overlap --nodes=1 --ntasks=1 -w "$node_k"`, with its environment as `NAME=value` prefixes
//! (srun passes the environment on). A step asks for no GPUs of its own, so it sees its node's
//! whole allocation and the plan's `--base-gpu-id` picks its GPUs; setting
//! `CUDA_VISIBLE_DEVICES` as well would renumber the devices under `--base-gpu-id`. Each
//! multi-node server's `--dist-init-addr` is its first node's, and each step has its own
//! `--node-rank`. The router starts last, once every server instance answers `/health` (within
//! `PDLAUNCH_HEALTH_TIMEOUT` seconds, 1800 unless set), on the node of `router.host` when that is
//! one of the deployment's hosts, else on the first node. A `trap` stops every step when the
//! script exits: when one step ends (`wait -n`, with a check of every step first, since `wait -n`
//! misses a step that ended before it was called), a server is not ready in time, or the job is
//! cancelled (SIGTERM). The script exits with the status of the step that ended first.
//!
//! What SLURM cannot express is refused at its field: a job name `#SBATCH` cannot carry, two GPU
//! models in one job, a `bind_host` other than every interface (one host, or the loopback the
//! other nodes cannot reach), and a `router.host` that is neither every interface, the loopback,
//! nor a deployment host. `launcher.image` and the `kubernetes` section are not used, as in the `shell`
//! format.

use super::{header, quote, RenderError, RenderedFile};
use crate::deployment::{Deployment, Gpu, Role};
use crate::fast_hash::FastMap;
use crate::plan::{plan, Plan};

/// Marks a host in the placed deployment: `NODE<k>NODE` stands for node `k` of the allocation. A
/// control character no deployment field is expected to hold, so no user text is taken for it.
const NODE: char = '\u{1}';

/// The variable holding a timeout for every server's `/health` to answer, in seconds.
pub const HEALTH_TIMEOUT_VAR: &str = "PDLAUNCH_HEALTH_TIMEOUT";

/// How the deployment runs in one SLURM job.
pub(super) struct Layout {
    /// The plan of the deployment placed on the allocation's nodes.
    pub(super) plan: Plan,
    /// The deployment's distinct hosts, in allocation order.
    hosts: Vec<String>,
    /// GPUs each node needs.
    gpus_per_node: u32,
    /// The GPU model, when the deployment names one.
    gpu: Option<Gpu>,
    /// The node the router runs on.
    router_node: usize,
    /// Each server instance's `/health`, in plan order.
    health: Vec<String>,
}

/// Renders the deployment as one `sbatch` script (`<name>.sbatch`).
pub fn render_slurm(d: &Deployment) -> Result<RenderedFile, RenderError> {
    let layout = layout(d)?;
    Ok(RenderedFile { name: format!("{}.sbatch", d.name), contents: script(&layout), executable: true })
}

/// True for an address that binds every interface: the same on every node.
fn binds_everywhere(host: &str) -> bool {
    matches!(host, "0.0.0.0" | "::" | "[::]")
}

/// True for the loopback: the same on every node, reachable from that node only.
fn is_loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "::1" | "[::1]" | "localhost")
}

/// The placeholder of node `k`.
fn node_mark(k: usize) -> String {
    format!("{NODE}{k}{NODE}")
}

pub(super) fn layout(d: &Deployment) -> Result<Layout, RenderError> {
    check_name(&d.name)?;
    let gpu = gpu_model(d)?;
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
    let index: FastMap<&str, usize> = hosts.iter().enumerate().map(|(k, h)| (h.as_str(), k)).collect();
    for role in Role::BOTH {
        if let Some(bind) = d.side(role).bind_host.as_deref().filter(|b| !binds_everywhere(b)) {
            let why = if index.contains_key(bind) {
                format!("names one node, but every {role} server binds it and SLURM runs them on nodes of its choosing")
            } else if is_loopback(bind) {
                "is the loopback, which the router and the readiness wait reach from other nodes in vain".to_owned()
            } else {
                "is an address of no node of the job: SLURM picks the nodes".to_owned()
            };
            return Err(RenderError::at(
                format!("{role}.bind_host"),
                format_args!(
                    "({bind:?}) {why}; bind every interface (`0.0.0.0`), or leave `bind_host` unset so that each server \
                     binds its own node"
                ),
            ));
        }
    }
    let router_node = match index.get(d.router.host.as_str()) {
        Some(&k) => k,
        None if binds_everywhere(&d.router.host) || is_loopback(&d.router.host) => 0,
        None => {
            return Err(RenderError::at(
                "router.host",
                format_args!(
                    "({:?}) is an address of no node of the job: the router runs on a node SLURM picks, so it can \
                     listen on every interface (`0.0.0.0`), the loopback, or one of the deployment's hosts (it then \
                     runs on that host's node)",
                    d.router.host
                ),
            ))
        }
    };
    let mut placed = d.clone();
    for role in Role::BOTH {
        for inst in &mut placed.side_mut(role).instances {
            for node in &mut inst.nodes {
                node.host = node_mark(index[node.host.as_str()]);
            }
        }
    }
    if let Some(&k) = index.get(d.router.host.as_str()) {
        placed.router.host = node_mark(k);
    }
    let plan = plan(&placed);
    let addrs = crate::plan::instance_addrs(&placed);
    let mut health = Vec::new();
    for role in Role::BOTH {
        for i in 0..placed.side(role).instances.len() {
            let a = &addrs[&(role, i)];
            health.push(format!("http://{}/health", crate::plan::host_port(&a.host, a.port)));
        }
    }
    let mut used: FastMap<&str, u32> = FastMap::default();
    for p in &plan.servers {
        let end = p.gpus.0.saturating_add(p.gpus.1);
        let e = used.entry(p.host.as_str()).or_insert(0);
        *e = (*e).max(end);
    }
    let gpus_per_node = used.values().copied().max().unwrap_or(1).max(1);
    Ok(Layout { plan, hosts, gpus_per_node, gpu, router_node, health })
}

/// The job name goes on an `#SBATCH` line, which sbatch reads without a shell, and names the file.
pub(super) fn check_name(name: &str) -> Result<(), RenderError> {
    let ok = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.starts_with(['-', '.']);
    if ok {
        Ok(())
    } else {
        Err(RenderError::at(
            "name",
            format_args!(
                "({name:?}) is the SLURM job's name and the script's file name, which `#SBATCH --job-name` carries \
                 unquoted; use letters, digits, `-`, `_` and `.`, starting with a letter or digit"
            ),
        ))
    }
}

/// The one GPU model of the job: `#SBATCH --gres=gpu:<model>:N` names one for every node.
fn gpu_model(d: &Deployment) -> Result<Option<Gpu>, RenderError> {
    match (d.prefill.gpu, d.decode.gpu) {
        (Some(p), Some(dg)) if p != dg => Err(RenderError::at(
            "decode.gpu",
            format_args!(
                "is {}, but `prefill.gpu` is {}: one SLURM job asks for one GPU model on every node \
                 (`--gres=gpu:<model>:N`); give both sides the same model, or run each side as a job of its own",
                dg.as_str(),
                p.as_str()
            ),
        )),
        (p, dg) => Ok(p.or(dg)),
    }
}

/// One shell word for `token`: its literal parts quoted, each node placeholder `"$node_k"`.
pub(super) fn word(token: &str) -> String {
    if !token.contains(NODE) {
        return quote(token);
    }
    let mut out = String::new();
    for (i, part) in token.split(NODE).enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("\"$node_{part}\""));
        } else if !part.is_empty() {
            out.push_str(&quote(part));
        }
    }
    out
}

/// The node index of a placed host.
pub(super) fn node_of(host: &str) -> usize {
    host.trim_matches(NODE).parse().unwrap_or(0)
}

/// A backgrounded step on node `k` running `argv` with `env`.
fn step(s: &mut String, title: &str, k: usize, env: &std::collections::BTreeMap<String, String>, argv: &[String]) {
    let words: Vec<String> = argv.iter().map(|a| word(a)).collect();
    step_words(s, title, k, env, &words, "");
}

/// A backgrounded step on node `k` running the shell words `words` (each already quoted) with
/// `env`, `redirect` (such as `> "$dir"/x.log`) after them.
pub(super) fn step_words(
    s: &mut String,
    title: &str,
    k: usize,
    env: &std::collections::BTreeMap<String, String>,
    words: &[String],
    redirect: &str,
) {
    s.push_str(&format!("# {title}\n"));
    for (name, value) in env {
        s.push_str(&format!("{}={} ", quote(name), word(value)));
    }
    s.push_str(&format!("srun --overlap --nodes=1 --ntasks=1 --export=ALL -w \"$node_{k}\""));
    for (i, w) in words.iter().enumerate() {
        // Break before each flag so long command lines stay readable.
        if w.starts_with("--") && i > 2 {
            s.push_str(" \\\n    ");
        } else {
            s.push(' ');
        }
        s.push_str(w);
    }
    s.push_str(redirect);
    s.push_str(" &\nsteps+=(\"$!\")\n\n");
}

/// The script's head: the `#SBATCH` lines, the header, and the job's nodes as `node_0`,
/// `node_1`... (the job refused when it has too few).
pub(super) fn preamble(l: &Layout) -> String {
    let plan = &l.plan;
    let n = l.hosts.len();
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(&format!(
        "#SBATCH --job-name={}\n#SBATCH --nodes={n}\n#SBATCH --exclusive\n#SBATCH --mem=0\n",
        plan.name
    ));
    match l.gpu {
        Some(g) => s.push_str(&format!("#SBATCH --gres=gpu:{}:{}\n", g.as_str(), l.gpus_per_node)),
        None => s.push_str(&format!("#SBATCH --gpus-per-node={}\n", l.gpus_per_node)),
    }
    s.push_str(&header(plan));
    // The hosts themselves are left out: the script runs on whichever nodes SLURM gives it.
    s.push_str(
        "# Submit with `sbatch`. The deployment's distinct hosts, in the order it first names them (prefill \
         instances,\n# then decode, nodes in rank order), are the job's nodes in the order SLURM lists them: \
         node_0, node_1...\n",
    );
    s.push_str("set -euo pipefail\n\n");
    s.push_str("mapfile -t nodes < <(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n");
    s.push_str(&format!(
        "if ((${{#nodes[@]}} < {n})); then\n    echo \"pdlaunch: the job has ${{#nodes[@]}} node(s); this deployment needs {n}\" >&2\n    exit 1\nfi\n"
    ));
    for k in 0..n {
        s.push_str(&format!("node_{k}=${{nodes[{k}]}}\n"));
    }
    s
}

fn script(l: &Layout) -> String {
    let plan = &l.plan;
    let mut s = preamble(l);
    s.push_str(&format!("health_timeout=${{{HEALTH_TIMEOUT_VAR}:-1800}}\n\n"));
    s.push_str(STEPS);
    for p in &plan.servers {
        let title = format!("{} instance {}, node {} of {}", p.role, p.instance, p.node, p.nnodes);
        step(&mut s, &title, node_of(&p.host), &p.env, &plan.server_argv(p));
    }
    s.push_str("# The router starts once every server instance answers.\n");
    for url in &l.health {
        s.push_str(&format!("wait_healthy {}\n", word(url)));
    }
    s.push('\n');
    step(&mut s, "router", l.router_node, &plan.router.env, &plan.router_argv());
    s.push_str(WATCH);
    s
}

/// Runs until the first step ends, then exits with its status (the trap stops the others). `wait
/// -n` alone misses a step that ended before it was called, so each round first looks at every
/// step, and a tick bounds the wait.
const WATCH: &str = r#"# Runs until the first step ends; the trap then stops the others.
while :; do
    for pid in "${steps[@]}"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            status=0
            wait "$pid" || status=$?
            echo "pdlaunch: a step ended with status $status; stopping the others" >&2
            exit "$status"
        fi
    done
    sleep 5 &
    tick=$!
    wait -n || true
    kill "$tick" 2>/dev/null || true
    tick=
done
"#;

/// The steps' bookkeeping: the trap that stops them, and the readiness wait.
const STEPS: &str = r#"steps=()
tick=
stop_steps() {
    trap - EXIT INT TERM
    if ((${#steps[@]})); then
        kill "${steps[@]}" 2>/dev/null || true
    fi
    if [ -n "$tick" ]; then
        kill "$tick" 2>/dev/null || true
    fi
    wait || true
}
trap stop_steps EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_healthy() {
    local url=$1 pid
    local deadline=$((SECONDS + health_timeout))
    until curl -sf -o /dev/null --max-time 10 "$url"; do
        for pid in "${steps[@]}"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "pdlaunch: a step ended before $url answered" >&2
                exit 1
            fi
        done
        if ((SECONDS >= deadline)); then
            echo "pdlaunch: $url did not answer within ${health_timeout}s" >&2
            exit 1
        fi
        sleep 5
    done
}

"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};

    fn refused(d: &Deployment) -> RenderError {
        render_slurm(d).expect_err("refused")
    }

    #[test]
    fn hosts_become_the_jobs_nodes_in_order() {
        let d = example("qwen3-2p1d-nixl").unwrap();
        let f = render_slurm(&d).unwrap();
        assert_eq!(f.name, "qwen3-2p1d-nixl.sbatch");
        let s = &f.contents;
        assert!(s.contains("#SBATCH --nodes=3\n"), "{s}");
        assert!(s.contains("#SBATCH --gres=gpu:h100:4\n"), "{s}");
        assert!(s.contains("--host \"$node_1\""), "{s}");
        assert!(s.contains("--prefill http://\"$node_1\":30000 8998"), "{s}");
        assert!(s.contains("wait_healthy http://\"$node_2\":30001/health"), "{s}");
        assert!(!s.contains("10.0.3."), "{s}");
        // The router is last, after every readiness wait.
        assert!(s.rfind("wait_healthy").unwrap() < s.find("sglang_router").unwrap());
    }

    #[test]
    fn multi_node_servers_take_their_first_nodes_address_and_a_rank_each() {
        let d = example("deepseek-v3-dp-deepep").unwrap();
        let s = render_slurm(&d).unwrap().contents;
        assert!(s.contains("#SBATCH --nodes=4\n") && s.contains("#SBATCH --gres=gpu:h200:8\n"), "{s}");
        assert_eq!(s.matches("--dist-init-addr \"$node_0\":5000").count(), 2, "{s}");
        assert_eq!(s.matches("--dist-init-addr \"$node_2\":5000").count(), 2, "{s}");
        assert_eq!(s.matches("--node-rank 1").count(), 2, "{s}");
        assert!(s.contains("-w \"$node_3\""), "{s}");
    }

    #[test]
    fn colocated_instances_share_a_node() {
        let d = example("llama-1p1d").unwrap();
        let s = render_slurm(&d).unwrap().contents;
        assert!(
            s.contains("#SBATCH --nodes=1\n#SBATCH --exclusive\n#SBATCH --mem=0\n#SBATCH --gres=gpu:h200:2\n"),
            "{s}"
        );
    }

    #[test]
    fn values_are_quoted_and_hosts_inside_them_expanded() {
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word(&format!("http://{}:80", node_mark(3))), "http://\"$node_3\":80");
        assert_eq!(word(&format!("{}:80", node_mark(0))), "\"$node_0\":80");
        assert_eq!(word(&format!("it's {}", node_mark(1))), "'it'\\''s '\"$node_1\"");
    }

    #[test]
    fn what_slurm_cannot_express_is_refused_at_its_field() {
        let base = example("qwen3-2p1d-nixl").unwrap();
        let mut d = base.clone();
        d.name = "my job".into();
        assert_eq!(refused(&d).field.as_deref(), Some("name"));
        let mut d = base.clone();
        d.decode.gpu = Some(Gpu::H200);
        let e = refused(&d);
        assert_eq!(e.field.as_deref(), Some("decode.gpu"));
        assert!(e.message.starts_with("`decode.gpu` is h200"), "{}", e.message);
        let mut d = base.clone();
        d.prefill.bind_host = Some("10.9.9.9".into());
        assert_eq!(refused(&d).field.as_deref(), Some("prefill.bind_host"));
        d.prefill.bind_host = Some("10.0.3.1".into());
        assert_eq!(refused(&d).field.as_deref(), Some("prefill.bind_host"));
        d.prefill.bind_host = Some("127.0.0.1".into());
        assert!(refused(&d).message.contains("loopback"));
        d.prefill.bind_host = Some("0.0.0.0".into());
        assert!(render_slurm(&d).is_ok());
        let mut d = base.clone();
        d.router.host = "10.9.9.9".into();
        assert_eq!(refused(&d).field.as_deref(), Some("router.host"));
        // A deployment host: the router runs on its node and listens on it.
        d.router.host = "10.0.3.3".into();
        let s = render_slurm(&d).unwrap().contents;
        assert!(s.contains("-w \"$node_2\" python3 -m sglang_router.launch_router"), "{s}");
        assert!(s.contains("--host \"$node_2\""), "{s}");
        assert!(render_slurm(&base).is_ok());
    }

    /// The script is a fixed point of linting: the linter finds no error in it, and the
    /// deployment it reconstructs renders the very same script. The reconstructed deployment is
    /// named after the file, `<name>.sbatch`; its hosts are the script's `$node_k`, which map
    /// onto the nodes in the same order.
    #[test]
    fn the_reconstructed_deployment_renders_the_same_script() {
        let mut deployments: Vec<Deployment> = EXAMPLES.iter().map(|e| example(e.name).unwrap()).collect();
        let mut own = example("qwen3-2p1d-nixl").unwrap();
        own.prefill.instances[1].port = Some(31000);
        own.router.host = "10.0.3.3".into();
        own.decode.bind_host = Some("0.0.0.0".into());
        deployments.push(own);
        for d in deployments {
            let f = render_slurm(&d).unwrap();
            let linted = lint(&[Input::new(f.name.clone(), f.contents.as_str())], &Options::default());
            let errors: Vec<&str> = linted
                .findings
                .iter()
                .filter(|x| x.finding.severity == crate::rules::Severity::Error)
                .map(|x| x.finding.message.as_str())
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", d.name);
            assert_eq!(linted.groups.len(), 1, "{}", d.name);
            let back = crate::lint::reconstruct::deployment(&linted, 0).unwrap().deployment;
            assert_eq!(render_slurm(&back).unwrap(), f, "{}", d.name);
        }
    }
}
