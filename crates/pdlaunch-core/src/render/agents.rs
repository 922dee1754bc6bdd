//! The smoke-test agent pair, rendered to run where the deployment's servers will run: a pair is
//! a prefill agent standing in for a prefill instance and a decode agent standing in for a
//! decode instance, each on the node of its instance's node 0, in the deployment's own image or
//! environment (whose NIXL or Mooncake Python bindings the agent program uses). The program and
//! the plan it reads are opaque text here ([`AgentFiles`]). Every format runs
//!
//! `<python> <dir>/host_agent.py prefill|decode <dir>/plan.json --bootstrap HOST:PORT --gpu N --pair I`
//!
//! where HOST:PORT is the prefill instance's bootstrap address as the router and the decode reach
//! it in that format (its node-0 host and its `--disaggregation-bootstrap-port`), the same on both
//! agents of a pair (the prefill listens on that port on every interface, the decode connects),
//! and N the server's first GPU on its node (`--base-gpu-id`, 0 when none). Each agent gets the
//! environment its server gets, so the deployment's UCX, NCCL and Mooncake settings apply. The
//! agent prints its report as one stdout line (`PDLAUNCH-SMOKE-REPORT {json}`); each format says
//! how to read both reports back (`pdlaunch smoke --report <prefill log> <decode log>`).
//!
//! - `kubernetes` (`<name>-smoke-agents.yaml`): a ConfigMap `<name>-smoke-agent` holding both files
//!   (refused over 1,000,000 bytes), mounted read-only at `/pdlaunch-smoke`; a headless Service
//!   `<name>-smoke`; per pair the Pods `<name>-smoke-prefill-<i>` and `<name>-smoke-decode-<i>`
//!   (`restartPolicy: Never`), whose spec `pods::pod_spec` writes as it writes the leader pod of the
//!   instance's set: the same node selector, tolerations, pull secrets, host network, image,
//!   environment, GPU limits, privileges and volumes, and the pod annotations. The decode reaches
//!   the prefill agent as the router reaches a server pod, by its pod name in a headless Service
//!   (`<prefill pod>.<name>-smoke`). LeaderWorkerSet's exclusive topology (each group alone in a
//!   domain of `kubernetes.exclusive_topology`) becomes what LeaderWorkerSet itself writes on its
//!   pods: an affinity to the agents of the same instance and an anti-affinity to those of any
//!   other, by the label `pdlaunch/smoke-group` (`prefill-0`).
//! - `slurm` (`<name>-smoke.sbatch`): the `slurm` format's `#SBATCH` lines and node mapping, the
//!   files written into `$PDLAUNCH_SMOKE_DIR` (default `$PWD/pdlaunch-smoke-$SLURM_JOB_ID`, a shared
//!   folder the nodes all see, like the logs), then one backgrounded `srun` step per agent on the
//!   node the deployment's own script runs that instance's node 0 on, with the step's environment
//!   prefixes and its stdout in `<dir>/prefill-<i>.log` / `decode-<i>.log`. The script waits for
//!   every step (each agent has its own timeout) and exits with the status of the first that
//!   failed, in step order.
//! - `shell` (`<name>-smoke-prefill-<i>.sh`, `<name>-smoke-decode-<i>.sh`): self-contained scripts
//!   to run by hand on the named hosts, writing the files into a `mktemp -d` folder and the agent's
//!   output to `./<name>-smoke-<side>-<i>.log`; `PDLAUNCH_PYTHON` overrides the interpreter.
//!
//! The shell formats write each file with a quoted here-document read whole (`read -d ''`), less
//! the newline the here-document ends with, so any text arrives byte for byte; the delimiter is
//! one that occurs as no line of the text.

use super::pods::{self, escape, pod_annotations, pod_spec, Container, Engine, Source, Yaml};
use super::{header, quote, slurm, RenderError, RenderedFile};
use crate::deployment::{Deployment, Role};
use crate::effective::ServerView;
use crate::plan::{host_port, plan, Plan, ServerProcess, DEFAULT_BOOTSTRAP_PORT};

/// The formats the agent pair renders to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentFormat {
    /// Pods placed as the server pods, a ConfigMap and a headless Service.
    Kubernetes,
    /// One `sbatch` script with an `srun` step per agent.
    Slurm,
    /// Two bash scripts per pair, to run by hand.
    Shell,
}

/// What the agents run: the agent program's text and the plan's text (both opaque here).
#[derive(Clone, Copy, Debug)]
pub struct AgentFiles<'a> {
    /// The agent program (`host_agent.py`).
    pub script: &'a str,
    /// The plan it reads (`plan.json`).
    pub plan: &'a str,
}

/// The agent program's file name.
const SCRIPT: &str = "host_agent.py";
/// The plan's file name.
const PLAN: &str = "plan.json";
/// Where the agent pods mount the ConfigMap.
const MOUNT: &str = "/pdlaunch-smoke";
/// The most bytes the ConfigMap's two files may hold (Kubernetes stores at most 1 MiB per object).
const CONFIG_MAP_LIMIT: usize = 1_000_000;
/// The label naming the instance an agent pod stands in for (`prefill-0`).
const GROUP_LABEL: &str = "pdlaunch/smoke-group";
/// The component label of the agent pods (not a server's: the router's selectors skip them).
const COMPONENT: &str = "smoke-agent";

/// Renders the agent pair for the deployment's first prefill and first decode instance, or with `all`
/// one pair per instance (pair i = prefill instance i % P with decode instance i % D, i < max(P, D)).
pub fn render_agents(
    d: &Deployment,
    format: AgentFormat,
    files: &AgentFiles,
    all: bool,
) -> Result<Vec<RenderedFile>, RenderError> {
    let pairs = pairs(d, all)?;
    if let Some(what) = [(SCRIPT, files.script), (PLAN, files.plan)].iter().find(|(_, t)| t.contains('\0')) {
        return Err(RenderError::general(format!(
            "the smoke-test agent's {} holds a NUL byte, which neither a shell variable nor YAML carries; \
             write it without one",
            what.0
        )));
    }
    match format {
        AgentFormat::Kubernetes => Ok(vec![kubernetes(d, files, &pairs)?]),
        AgentFormat::Slurm => Ok(vec![sbatch(d, files, &pairs)?]),
        AgentFormat::Shell => shell(d, files, &pairs),
    }
}

/// The pairs: (pair, prefill instance, decode instance).
fn pairs(d: &Deployment, all: bool) -> Result<Vec<(usize, usize, usize)>, RenderError> {
    let (p, n) = (d.prefill.instances.len(), d.decode.instances.len());
    if p == 0 || n == 0 {
        let side = if p == 0 { "prefill" } else { "decode" };
        return Err(RenderError::at(
            format!("{side}.instances"),
            format_args!("is empty: the smoke test pairs a prefill with a decode instance; add one"),
        ));
    }
    let count = if all { p.max(n) } else { 1 };
    Ok((0..count).map(|i| (i, i % p, i % n)).collect())
}

/// The node-0 process of an instance in a plan.
fn node0(plan: &Plan, role: Role, instance: usize) -> Result<&ServerProcess, RenderError> {
    plan.servers.iter().find(|s| s.role == role && s.instance == instance && s.node == 0).ok_or_else(|| {
        RenderError::at(
            format!("{role}.instances[{instance}].nodes"),
            format_args!("is empty: the agent runs on the instance's first node; add one"),
        )
    })
}

/// What SGLang reads from a server's arguments, extra ones included, through the release's
/// argparse spec (the last value wins; aliases and `--flag=value` count).
fn view(d: &Deployment, p: &ServerProcess) -> ServerView {
    let origins = p.token_origins().into_iter().cloned().collect();
    ServerView::new(
        p.label(),
        p.host.clone(),
        p.arg_tokens(),
        origins,
        p.env.clone(),
        d.side(p.role).gpu,
        d.sglang_version,
    )
}

/// The prefill server's bootstrap port.
fn bootstrap_port(d: &Deployment, p: &ServerProcess) -> u16 {
    view(d, p).bootstrap_port().unwrap_or(DEFAULT_BOOTSTRAP_PORT)
}

/// The server's first GPU on its node.
fn first_gpu(d: &Deployment, p: &ServerProcess) -> u32 {
    view(d, p).int("base_gpu_id").and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
}

/// The agent's argv: `python` and `bootstrap` as given, `file` making each file's path.
fn agent_argv(
    python: String,
    file: impl Fn(&str) -> String,
    role: Role,
    bootstrap: String,
    gpu: u32,
    pair: usize,
) -> Vec<String> {
    vec![
        python,
        file(SCRIPT),
        role.as_str().to_owned(),
        file(PLAN),
        "--bootstrap".into(),
        bootstrap,
        "--gpu".into(),
        gpu.to_string(),
        "--pair".into(),
        pair.to_string(),
    ]
}

/// The line that reads a pair's reports back.
fn report_command(prefill_log: &str, decode_log: &str) -> String {
    format!("pdlaunch smoke --report {prefill_log} {decode_log}")
}

/// Both agents of each pair: (pair, role, instance).
fn agents(pairs: &[(usize, usize, usize)]) -> impl Iterator<Item = (usize, Role, usize)> + '_ {
    pairs.iter().flat_map(|&(i, p, n)| [(i, Role::Prefill, p), (i, Role::Decode, n)])
}

fn kubernetes(
    d: &Deployment,
    files: &AgentFiles,
    pairs: &[(usize, usize, usize)],
) -> Result<RenderedFile, RenderError> {
    let size = files.script.len() + files.plan.len();
    if size > CONFIG_MAP_LIMIT {
        return Err(RenderError::general(format!(
            "the smoke-test ConfigMap would hold {size} bytes (the agent program and its plan), over the \
             {CONFIG_MAP_LIMIT} a Kubernetes object may; lower --tokens, or render the slurm or shell format"
        )));
    }
    let layout = pods::layout(d, Engine::Lws)?;
    let service = format!("{}-smoke", d.name);
    let pod_name = |role: Role, i: usize| format!("{}-smoke-{role}-{i}", d.name);
    let longest = pod_name(Role::Prefill, pairs.len() - 1);
    if longest.len() > 63 {
        return Err(RenderError::at(
            "name",
            format_args!(
                "({:?}) gives the smoke-test agent pods names up to {} characters (`{longest}`), over the 63 a \
                 pod's host name may have; shorten the deployment's name",
                d.name,
                longest.len()
            ),
        ));
    }
    if pods::pod_volumes(d, &layout, 0, true).iter().any(|v| v.1 == MOUNT || v.1.starts_with(&format!("{MOUNT}/"))) {
        return Err(RenderError::at(
            "model.path",
            format_args!("is mounted at {MOUNT}, where the smoke-test agent pods mount their files; move the model"),
        ));
    }
    let plan = &layout.plan;
    let namespace = d.kubernetes.namespace.as_deref().map(|ns| format!(" -n {}", quote(ns))).unwrap_or_default();
    let mut y = Yaml(header(plan));
    y.0.push_str(&format!(
        "# The smoke-test agents: each pod is placed as the server pod of the instance it stands in for and\n\
         # runs {SCRIPT} from the ConfigMap in the servers' image. `kubectl create{namespace} -f` this file\n\
         # (`apply` would copy the ConfigMap into an annotation, which holds at most 256 KiB); once both pods\n\
         # of a pair have ended, read their reports back:\n"
    ));
    for &(i, ..) in pairs {
        let (p, n) = (pod_name(Role::Prefill, i), pod_name(Role::Decode, i));
        y.0.push_str(&format!(
            "#   kubectl logs{namespace} {p} > {p}.log; kubectl logs{namespace} {n} > {n}.log\n#   {}\n",
            report_command(&format!("{p}.log"), &format!("{n}.log"))
        ));
    }
    y.0.push_str(&format!(
        "# `kubectl delete{namespace} -f` this file afterwards. Run the agents before the servers: a prefill\n\
         # server on the host network holds the bootstrap port its agent listens on.\n"
    ));
    y.line(0, "---");
    y.object("v1", "ConfigMap", d, &format!("{}-smoke-agent", d.name), COMPONENT);
    y.key(0, "data");
    y.pair(2, SCRIPT, files.script);
    y.pair(2, PLAN, files.plan);
    y.line(0, "---");
    y.object("v1", "Service", d, &service, COMPONENT);
    y.key(0, "spec");
    y.pair(2, "clusterIP", "None");
    // The decode may look the prefill up before the prefill is ready: it retries until its timeout.
    y.plain(2, "publishNotReadyAddresses", true);
    y.key(2, "selector");
    y.pair(4, crate::render::INSTANCE_LABEL, &d.name);
    y.pair(4, "app.kubernetes.io/component", COMPONENT);
    for (i, role, instance) in agents(pairs) {
        let Some(k) = layout.sets.iter().position(|s| s.role == role && s.instances.contains(&instance)) else {
            return Err(RenderError::at(
                format!("{role}.instances[{instance}]"),
                format_args!("runs in no set of pods; render the `kubernetes` format to see why"),
            ));
        };
        let host = node0(plan, Role::Prefill, pairs[i].1)?;
        let bootstrap = host_port(&format!("{}.{service}", pod_name(Role::Prefill, i)), bootstrap_port(d, host));
        let gpu = first_gpu(d, node0(plan, role, instance)?);
        let file = |f: &str| format!("{MOUNT}/{f}");
        let argv: Vec<String> =
            agent_argv(plan.python.clone(), file, role, bootstrap, gpu, i).iter().map(|w| escape(w)).collect();
        let name = pod_name(role, i);
        let group = format!("{role}-{instance}");
        y.line(0, "---");
        y.object("v1", "Pod", d, &name, COMPONENT);
        y.pair(4, GROUP_LABEL, &group);
        pod_annotations(&mut y, 2, &layout, None);
        y.key(0, "spec");
        y.pair(2, "hostname", &name);
        y.pair(2, "subdomain", &service);
        y.pair(2, "restartPolicy", "Never");
        if let Some(key) = &layout.cluster.exclusive_topology {
            exclusive(&mut y, d, key, &group);
        }
        let ports = match role {
            Role::Prefill => vec![("bootstrap", bootstrap_port(d, node0(plan, role, instance)?))],
            Role::Decode => vec![],
        };
        let extra = ("smoke-agent".to_owned(), MOUNT, Source::ConfigMap(format!("{}-smoke-agent", d.name)), true);
        let container = Container { name: "agent", argv: &argv, ports, probe: false, extra: Some(extra) };
        pod_spec(&mut y, 2, d, &layout, k, &container);
    }
    Ok(RenderedFile { name: format!("{}-smoke-agents.yaml", d.name), contents: y.0, executable: false })
}

/// What LeaderWorkerSet writes on a group's pods for its exclusive topology, for the agent pods:
/// together with the agents of the same instance, apart from those of any other.
fn exclusive(y: &mut Yaml, d: &Deployment, key: &str, group: &str) {
    y.key(2, "affinity");
    y.key(4, "podAffinity");
    y.key(6, "requiredDuringSchedulingIgnoredDuringExecution");
    y.key(6, "- labelSelector");
    y.key(10, "matchLabels");
    y.pair(12, crate::render::INSTANCE_LABEL, &d.name);
    y.pair(12, GROUP_LABEL, group);
    y.pair(8, "topologyKey", key);
    y.key(4, "podAntiAffinity");
    y.key(6, "requiredDuringSchedulingIgnoredDuringExecution");
    y.key(6, "- labelSelector");
    y.key(10, "matchExpressions");
    y.first(10, "key", crate::render::INSTANCE_LABEL);
    y.pair(12, "operator", "In");
    y.key(12, "values");
    y.item(12, &d.name);
    y.first(10, "key", GROUP_LABEL);
    y.pair(12, "operator", "Exists");
    y.first(10, "key", GROUP_LABEL);
    y.pair(12, "operator", "NotIn");
    y.key(12, "values");
    y.item(12, group);
    y.pair(8, "topologyKey", key);
}

/// Shell lines that write `text` byte for byte to `path` (a shell word).
fn write_file(s: &mut String, text: &str, path: &str) {
    let mut delimiter = "PDLAUNCH_EOF".to_owned();
    let mut k = 0;
    while text.split('\n').any(|line| line == delimiter) {
        k += 1;
        delimiter = format!("PDLAUNCH_EOF_{k}");
    }
    s.push_str(&format!("IFS= read -r -d '' text <<'{delimiter}' || true\n{text}\n{delimiter}\n"));
    // The here-document ends with one newline more than the text: `%?` drops it.
    s.push_str(&format!("printf '%s' \"${{text%?}}\" > {path}\n"));
}

fn sbatch(d: &Deployment, files: &AgentFiles, pairs: &[(usize, usize, usize)]) -> Result<RenderedFile, RenderError> {
    let layout = slurm::layout(d)?;
    let plan = &layout.plan;
    let mut s = slurm::preamble(&layout);
    s.push_str(
        "# The smoke-test agents: one step per agent on the node of the server instance it stands in for.\n\
         # The agent folder must be one every node sees (PDLAUNCH_SMOKE_DIR, by default under the submit folder).\n",
    );
    s.push_str("agent_dir=${PDLAUNCH_SMOKE_DIR:-$PWD/pdlaunch-smoke-${SLURM_JOB_ID:-0}}\nmkdir -p \"$agent_dir\"\n");
    write_file(&mut s, files.script, &format!("\"$agent_dir\"/{SCRIPT}"));
    write_file(&mut s, files.plan, &format!("\"$agent_dir\"/{PLAN}"));
    s.push_str(
        "\nsteps=()\ntrap 'if ((${#steps[@]})); then kill \"${steps[@]}\" 2>/dev/null || true; fi; exit 143' TERM\n\n",
    );
    for (i, role, instance) in agents(pairs) {
        let prefill = node0(plan, Role::Prefill, pairs[i].1)?;
        let bootstrap = slurm::word(&host_port(&prefill.host, bootstrap_port(d, prefill)));
        let p = node0(plan, role, instance)?;
        let file = |f: &str| format!("\"$agent_dir\"/{f}");
        let words = agent_argv(quote(&plan.python), file, role, bootstrap, first_gpu(d, p), i);
        let title = format!("pair {i}: the {role} agent, standing in for {role} instance {instance} (node 0)");
        let redirect = format!(" > \"$agent_dir\"/{role}-{i}.log");
        slurm::step_words(&mut s, &title, slurm::node_of(&p.host), &p.env, &words, &redirect);
    }
    s.push_str(
        "# Each agent has its own timeout; the job exits with the status of the first that failed.\n\
         status=0\nfor pid in \"${steps[@]}\"; do\n    rc=0\n    wait \"$pid\" || rc=$?\n    \
         if ((rc != 0 && status == 0)); then status=$rc; fi\ndone\n\
         echo \"pdlaunch: the agents ended (status $status); read the reports back with:\"\n",
    );
    for &(i, ..) in pairs {
        s.push_str(&format!(
            "printf '  {}\\n' \"$agent_dir/prefill-{i}.log\" \"$agent_dir/decode-{i}.log\"\n",
            report_command("%q", "%q")
        ));
    }
    s.push_str("exit \"$status\"\n");
    Ok(RenderedFile { name: format!("{}-smoke.sbatch", d.name), contents: s, executable: true })
}

/// `text` for the inside of a double-quoted shell string.
fn double_quoted(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if matches!(c, '\\' | '$' | '`' | '"') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn shell(
    d: &Deployment,
    files: &AgentFiles,
    pairs: &[(usize, usize, usize)],
) -> Result<Vec<RenderedFile>, RenderError> {
    let plan = plan(d);
    let mut out = Vec::new();
    for (i, role, instance) in agents(pairs) {
        let (prefill, p) = (node0(&plan, Role::Prefill, pairs[i].1)?, node0(&plan, role, instance)?);
        let bootstrap = host_port(&prefill.host, bootstrap_port(d, prefill));
        let log = |role: Role| format!("./{}-smoke-{role}-{i}.log", d.name);
        let other = match role {
            Role::Prefill => (Role::Decode, pairs[i].2),
            Role::Decode => (Role::Prefill, pairs[i].1),
        };
        let other_host = node0(&plan, other.0, other.1)?.host.replace('\n', " ");
        let mut s = String::from("#!/usr/bin/env bash\n");
        s.push_str(&header(&plan));
        s.push_str(&format!(
            "# The smoke-test {role} agent of pair {i}: run it by hand on {} (GPU {}), where {role} instance\n\
             # {instance} (node 0) runs; it stands in for that server. Run {}-smoke-{}-{i}.sh on {other_host}\n\
             # at the same time; the agents meet at the prefill's bootstrap address {}.\n\
             # PDLAUNCH_PYTHON names another interpreter than {}. Read both reports back with:\n#   {}\n",
            p.host.replace('\n', " "),
            first_gpu(d, p),
            d.name,
            other.0,
            bootstrap.replace('\n', " "),
            plan.python.replace('\n', " "),
            report_command(&log(Role::Prefill), &log(Role::Decode))
        ));
        s.push_str("set -euo pipefail\n\ndir=$(mktemp -d)\ntrap 'rm -rf \"$dir\"' EXIT\n");
        write_file(&mut s, files.script, &format!("\"$dir\"/{SCRIPT}"));
        write_file(&mut s, files.plan, &format!("\"$dir\"/{PLAN}"));
        s.push_str("\nstatus=0\n");
        for (name, value) in &p.env {
            s.push_str(&format!("{}={} ", quote(name), quote(value)));
        }
        let python = format!("\"${{PDLAUNCH_PYTHON:-{}}}\"", double_quoted(&plan.python));
        let file = |f: &str| format!("\"$dir\"/{f}");
        let words = agent_argv(python, file, role, quote(&bootstrap), first_gpu(d, p), i);
        s.push_str(&words.join(" "));
        s.push_str(&format!(" | tee {} || status=$?\n", quote(&log(role))));
        s.push_str(&format!(
            "echo \"pdlaunch: the {role} agent ended (status $status); once both have, read the reports back with:\" >&2\n\
             printf '  {}\\n' {} {} >&2\nexit \"$status\"\n",
            report_command("%q", "%q"),
            quote(&log(Role::Prefill)),
            quote(&log(Role::Decode))
        ));
        out.push(RenderedFile { name: format!("{}-smoke-{role}-{i}.sh", d.name), contents: s, executable: true });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::render::pods::testing::documents;
    use crate::render::{render_kubernetes, BOOTSTRAP_ANNOTATION, EXCLUSIVE_TOPOLOGY};
    use serde_yaml::Value;

    const FILES: AgentFiles = AgentFiles { script: "print('agent')\n", plan: "{\"tokens\": 4}" };

    /// The server pod template of an instance: its set's leader template.
    fn server_pod<'a>(docs: &'a [Value], d: &Deployment, role: Role, instance: usize) -> Result<&'a Value, String> {
        let sets: Vec<&Value> = docs
            .iter()
            .filter(|doc| {
                doc["kind"] == "LeaderWorkerSet"
                    && doc["metadata"]["labels"]["app.kubernetes.io/component"] == role.as_str()
            })
            .collect();
        let own = format!("{}-{role}-{instance}", d.name);
        let set = match sets.iter().find(|s| s["metadata"]["name"] == own.as_str()) {
            Some(set) => set,
            None => sets
                .iter()
                .find(|s| s["metadata"]["name"] == format!("{}-{role}", d.name).as_str())
                .ok_or(format!("no set of {own}"))?,
        };
        let t = &set["spec"]["leaderWorkerTemplate"];
        Ok(if t.get("leaderTemplate").is_some() { &t["leaderTemplate"] } else { &t["workerTemplate"] })
    }

    fn same(what: &str, agent: &Value, server: &Value) -> Result<(), String> {
        if agent == server {
            Ok(())
        } else {
            Err(format!("{what}: the agent has {agent:?}, against {server:?} (its server's, or the one wanted)"))
        }
    }

    fn strings(v: &Value) -> Vec<String> {
        v.as_sequence()
            .map(|s| s.iter().map(|w| w.as_str().unwrap_or_default().to_owned()).collect())
            .unwrap_or_default()
    }

    /// Compares every agent pod of `d`'s pairs, field by field, with the server pod template of
    /// its instance in `d`'s own manifests.
    fn check(d: &Deployment, all: bool) -> Result<usize, String> {
        let servers = documents(&render_kubernetes(d).map_err(|e| e.message)?.contents);
        let file = render_agents(d, AgentFormat::Kubernetes, &FILES, all).map_err(|e| e.message)?;
        let [file] = &file[..] else { return Err("one file".into()) };
        if file.name != format!("{}-smoke-agents.yaml", d.name) {
            return Err(format!("file name {}", file.name));
        }
        let docs = documents(&file.contents);
        let cm = &docs[0];
        same("ConfigMap", &cm["kind"], &"ConfigMap".into())?;
        same("script", &cm["data"][SCRIPT], &FILES.script.into())?;
        same("plan", &cm["data"][PLAN], &FILES.plan.into())?;
        let service = &docs[1];
        same("Service", &service["kind"], &"Service".into())?;
        same("headless", &service["spec"]["clusterIP"], &"None".into())?;
        let pairs = pairs(d, all).map_err(|e| e.message)?;
        let pods: Vec<&Value> = docs[2..].iter().collect();
        if pods.len() != 2 * pairs.len() {
            return Err(format!("{} pods for {} pairs", pods.len(), pairs.len()));
        }
        for ((i, role, instance), pod) in agents(&pairs).zip(pods) {
            let at = |what: &str| format!("{} pair {i} {role} agent: {what}", d.name);
            let name = format!("{}-smoke-{role}-{i}", d.name);
            same(&at("kind"), &pod["kind"], &"Pod".into())?;
            same(&at("name"), &pod["metadata"]["name"], &name.as_str().into())?;
            let server = server_pod(&servers, d, role, instance)?;
            let (a, s) = (&pod["spec"], &server["spec"]);
            same(&at("hostname"), &a["hostname"], &name.as_str().into())?;
            same(&at("subdomain"), &a["subdomain"], &service["metadata"]["name"])?;
            same(&at("restartPolicy"), &a["restartPolicy"], &"Never".into())?;
            for field in ["nodeSelector", "tolerations", "imagePullSecrets", "hostNetwork", "dnsPolicy"] {
                same(&at(field), &a[field], &s[field])?;
            }
            // The Service selects the agents, the router's selectors (a server's component) none.
            for (key, value) in service["spec"]["selector"].as_mapping().unwrap() {
                same(&at("selected"), &pod["metadata"]["labels"][key], value)?;
            }
            same(&at("component"), &pod["metadata"]["labels"]["app.kubernetes.io/component"], &COMPONENT.into())?;
            for (key, value) in &d.kubernetes.labels {
                same(&at("labels"), &pod["metadata"]["labels"][key.as_str()], &value.as_str().into())?;
            }
            let mut annotations = server["metadata"]["annotations"].clone();
            if let Some(m) = annotations.as_mapping_mut() {
                m.remove(BOOTSTRAP_ANNOTATION);
                if m.is_empty() {
                    annotations = Value::Null;
                }
            }
            same(&at("annotations"), &pod["metadata"]["annotations"], &annotations)?;
            let (ac, sc) = (&a["containers"][0], &s["containers"][0]);
            if a["containers"].as_sequence().map(Vec::len) != Some(1) {
                return Err(at("one container"));
            }
            for field in ["image", "env", "resources", "securityContext"] {
                same(&at(field), &ac[field], &sc[field])?;
            }
            let mut mounts = sc["volumeMounts"].as_sequence().cloned().unwrap_or_default();
            let mount: Value =
                serde_yaml::from_str("{name: smoke-agent, mountPath: /pdlaunch-smoke, readOnly: true}").unwrap();
            mounts.push(mount);
            same(&at("volumeMounts"), &ac["volumeMounts"], &Value::Sequence(mounts))?;
            let mut volumes = s["volumes"].as_sequence().cloned().unwrap_or_default();
            let source = format!("{{name: smoke-agent, configMap: {{name: {}-smoke-agent}}}}", d.name);
            volumes.push(serde_yaml::from_str(&source).unwrap());
            same(&at("volumes"), &a["volumes"], &Value::Sequence(volumes))?;
            // The exclusive topology of the server's set, as LeaderWorkerSet writes it on its pods.
            let set_topology =
                servers.iter().find_map(|doc| doc["metadata"]["annotations"].get(EXCLUSIVE_TOPOLOGY).cloned());
            let key = |kind: &str| {
                a["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"].clone()
            };
            match set_topology {
                Some(t) => {
                    same(&at("podAffinity"), &key("podAffinity"), &t)?;
                    same(&at("podAntiAffinity"), &key("podAntiAffinity"), &t)?;
                    let group = format!("{role}-{instance}");
                    same(&at("group"), &pod["metadata"]["labels"][GROUP_LABEL], &group.as_str().into())?;
                }
                None => same(&at("affinity"), &a["affinity"], &Value::Null)?,
            }
            // The command: the agent, its files in the mount, the pair's bootstrap address.
            let argv = strings(&ac["command"]);
            let server_argv = strings(&sc["command"]);
            let prefill_argv =
                strings(&server_pod(&servers, d, Role::Prefill, pairs[i].1)?["spec"]["containers"][0]["command"]);
            let port = prefill_argv
                .iter()
                .position(|w| w == "--disaggregation-bootstrap-port")
                .map_or("8998".to_owned(), |k| prefill_argv[k + 1].clone());
            let prefill_pod = format!("{}-smoke-prefill-{i}", d.name);
            let want = [
                server_argv[0].as_str(),
                "/pdlaunch-smoke/host_agent.py",
                role.as_str(),
                "/pdlaunch-smoke/plan.json",
                "--bootstrap",
                &format!("{prefill_pod}.{}:{port}", service["metadata"]["name"].as_str().unwrap()),
                "--gpu",
                "0",
                "--pair",
                &i.to_string(),
            ];
            same(&at("command"), &Value::from(argv.clone()), &Value::from(want.to_vec()))?;
            if argv == server_argv {
                return Err(at("the command is the server's"));
            }
            let prefill_spec = &docs[2 + 2 * i]["spec"];
            let host = format!(
                "{}.{}",
                prefill_spec["hostname"].as_str().unwrap(),
                prefill_spec["subdomain"].as_str().unwrap()
            );
            if !argv[5].starts_with(&format!("{host}:")) {
                return Err(at(&format!("--bootstrap {} is not the prefill agent's {host}", argv[5])));
            }
        }
        Ok(pairs.len())
    }

    /// Every example and a deployment with every cluster setting, one pair and a pair per instance.
    #[test]
    fn agent_pods_are_placed_as_their_servers() {
        let mut deployments: Vec<Deployment> = EXAMPLES.iter().map(|e| example(e.name).unwrap()).collect();
        let mut d = example("qwen3-2p1d-nixl").unwrap();
        let k = &mut d.kubernetes;
        k.namespace = Some("llm".into());
        k.prefill.node_selector.insert("nvidia.com/gpu.product".into(), "NVIDIA-H200".into());
        k.tolerations = vec!["dedicated=llm".into(), "nvidia.com/gpu:NoSchedule".into()];
        k.secret_env.insert("HF_TOKEN".into(), "hf-token/token".into());
        k.model_cache = Some("hf-cache".into());
        k.image_pull_secrets = vec!["regcred".into()];
        k.exclusive_topology = Some("cloud.google.com/gke-nodepool".into());
        k.labels.insert("kueue.x-k8s.io/queue-name".into(), "gpu-queue".into());
        k.pod_annotations.insert("prometheus.io/scrape".into(), "true".into());
        k.service_discovery = true;
        d.model.path = "/models/qwen3".into();
        d.prefill.instances[0].nodes[0].ib_device = Some("mlx5_0".into());
        d.prefill.instances[1].nodes[0].ib_device = Some("mlx5_1".into());
        deployments.push(d);
        let mut refused = example("llama-1p1d").unwrap();
        refused.name = "Llama".into();
        deployments.push(refused);
        for d in &deployments {
            // A deployment the `kubernetes` format refuses gets the same refusal.
            if let Err(e) = render_kubernetes(d) {
                assert_eq!(render_agents(d, AgentFormat::Kubernetes, &FILES, true).unwrap_err(), e);
                continue;
            }
            for all in [false, true] {
                let pairs = check(d, all).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(pairs, if all { d.prefill.instances.len().max(d.decode.instances.len()) } else { 1 });
            }
        }
    }

    /// For any deployment and cluster settings the `kubernetes` format renders, the agent pods are
    /// placed as the server pods of their instances.
    #[test]
    fn random_agent_pods_are_placed_as_their_servers() {
        use crate::lint::proptests::{cases, cluster, deployment, fit_manifests};
        use proptest::test_runner::{Config, TestCaseError, TestRunner};
        let n = cases(100);
        let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
        let checked = std::cell::Cell::new(0);
        runner
            .run(&(deployment(), cluster(), proptest::bool::ANY), |(mut d, k, all)| {
                d.kubernetes = k;
                fit_manifests(crate::render::Format::Kubernetes, &mut d);
                if render_kubernetes(&d).is_err() {
                    return Ok(());
                }
                checked.set(checked.get() + 1);
                check(&d, all).map_err(TestCaseError::fail)?;
                Ok(())
            })
            .unwrap();
        eprintln!("agent pods: {} of {n} generated deployments rendered and compared", checked.get());
        assert!(checked.get() >= n / 8, "too few compared: {}", checked.get());
    }

    #[test]
    fn too_big_a_config_map_is_refused() {
        let d = example("llama-1p1d").unwrap();
        let plan = "x".repeat(CONFIG_MAP_LIMIT);
        let files = AgentFiles { script: "print()\n", plan: &plan };
        let err = render_agents(&d, AgentFormat::Kubernetes, &files, false).unwrap_err();
        assert!(err.message.contains("1000008 bytes") && err.message.contains("lower --tokens"), "{err}");
        // The shell formats carry it.
        assert!(render_agents(&d, AgentFormat::Slurm, &files, false).is_ok());
        let files = AgentFiles { script: "", plan: &plan[8..] };
        assert!(render_agents(&d, AgentFormat::Kubernetes, &files, false).is_ok());
    }

    #[test]
    fn pairs_cycle_through_the_instances() {
        let d = example("qwen3-2p1d-nixl").unwrap();
        assert_eq!(pairs(&d, false).unwrap(), [(0, 0, 0)]);
        assert_eq!(pairs(&d, true).unwrap(), [(0, 0, 0), (1, 1, 0)]);
        let mut none = d.clone();
        none.decode.instances.clear();
        assert_eq!(pairs(&none, true).unwrap_err().field.as_deref(), Some("decode.instances"));
        let names: Vec<String> =
            render_agents(&d, AgentFormat::Shell, &FILES, true).unwrap().into_iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "qwen3-2p1d-nixl-smoke-prefill-0.sh",
                "qwen3-2p1d-nixl-smoke-decode-0.sh",
                "qwen3-2p1d-nixl-smoke-prefill-1.sh",
                "qwen3-2p1d-nixl-smoke-decode-1.sh"
            ]
        );
    }

    #[test]
    fn a_here_document_ends_at_no_line_of_its_text() {
        let mut s = String::new();
        write_file(&mut s, "a\nPDLAUNCH_EOF\nPDLAUNCH_EOF_1\n", "f");
        assert!(s.starts_with("IFS= read -r -d '' text <<'PDLAUNCH_EOF_2' || true\n"), "{s}");
        assert!(s.contains("\nPDLAUNCH_EOF_2\nprintf"), "{s}");
        let mut s = String::new();
        write_file(&mut s, "PDLAUNCH_EOF x\n PDLAUNCH_EOF", "f");
        assert!(s.starts_with("IFS= read -r -d '' text <<'PDLAUNCH_EOF' || true\n"), "{s}");
        let d = example("llama-1p1d").unwrap();
        let files = AgentFiles { script: "x\0", plan: "{}" };
        assert!(render_agents(&d, AgentFormat::Shell, &files, false).unwrap_err().message.contains("NUL"));
    }

    #[test]
    fn the_last_value_of_a_flag_counts() {
        let mut d = example("llama-1p1d").unwrap();
        d.prefill.extra_args = vec!["--disaggregation-bootstrap-port=9100".into()];
        d.decode.extra_args = vec!["--base-gpu-id".into(), "5".into()];
        let p = plan(&d);
        assert_eq!(bootstrap_port(&d, node0(&p, Role::Prefill, 0).unwrap()), 9100);
        assert_eq!(first_gpu(&d, node0(&p, Role::Decode, 0).unwrap()), 5);
        assert_eq!(first_gpu(&d, node0(&p, Role::Prefill, 0).unwrap()), 0);
    }
}
