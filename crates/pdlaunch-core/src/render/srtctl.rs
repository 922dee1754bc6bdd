//! An srt-slurm recipe (`srtctl apply -f <name>.srtctl.yaml`, `schema: 2` layout) that srtctl
//! turns into the plan's processes. The linter's recipe reader (`lint/recipe.rs`) repeats what
//! srtctl starts from a recipe; the tests read the rendered recipe with it and compare.
//!
//! Each side is a role: one worker per instance, `gpus` GPUs a worker (TP x PP), its nodes the
//! instance's node count, the plan's arguments and environment. srtctl owns some values and
//! writes them itself, so they are not in the recipe:
//! - where the processes run: nodes of the job, `gpus_per_node` GPUs each (a multi-node side's
//!   GPUs per node, else 8, or more for a larger one-node worker), workers of less than a node
//!   packed at GPU offsets (`CUDA_VISIBLE_DEVICES`, where the plan has `--base-gpu-id`),
//!   prefill first, decode from a fresh node;
//! - `--host 0.0.0.0`, `--port` (6100 + 32 k for the k-th worker leader on a node),
//!   `--disaggregation-bootstrap-port` (7200 + k, prefill only), `--dist-init-addr` (the first
//!   node's, port 8300), `--nnodes`, `--node-rank`, `--disaggregation-mode`, `--model-path`
//!   (`model.path`) and `--served-model-name` (written in the role's arguments, which srtctl
//!   takes it from: the deployment's, or SGLang's default, the model path);
//! - the router (the SGLang router frontend): `--pd-disaggregation`, every worker leader, `--host
//!   0.0.0.0 --port 8000`; the plan's other router arguments are the frontend's.
//!
//! The instances' ports (`port`, `bootstrap_port`, `dist_init_port`, `nccl_port`) are srtctl's
//! too: the servers and the router find each other through it, so a deployment's own are not
//! carried (`lint --to-deployment` of the recipe gives srtctl's back). A deployment that needs
//! other values than srtctl's is refused at the field: a `bind_host` other than `0.0.0.0`, the
//! router's address and port (the one its clients use), instances of one side on different node counts, a one-node worker larger than a
//! node, none or two GPU models, an interpreter other than `python3`, arguments that differ between
//! the processes of one side (a node's own `ib_device`), an extra argument srtctl writes itself
//! or that repeats another, and environment values with srtctl's `{node}` placeholders. The
//! container is `launcher.image`, else `lmsysorg/sglang:v<sglang_version>`; `identity` names
//! the release; `model.precision`, which srtctl requires but starts nothing from, is read from
//! `model.quantization` and `model.dtype`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{header, RenderError, RenderedFile};
use crate::deployment::{Deployment, Gpu, Role};
use crate::plan::{plan, Arg, Origin, Plan, Scope};

/// The port of srtctl's one router frontend.
pub const FRONTEND_PORT: u16 = 8000;
/// GPUs a node when no multi-node worker says otherwise.
const DEFAULT_GPUS_PER_NODE: u32 = 8;

/// The server options srtctl writes itself (the recipe does not carry them).
pub const SERVER_OWNED: &[&str] = &[
    "--model-path",
    "--served-model-name",
    "--host",
    "--port",
    "--disaggregation-mode",
    "--disaggregation-bootstrap-port",
    "--dist-init-addr",
    "--nnodes",
    "--node-rank",
    "--base-gpu-id",
    "--nccl-port",
];
/// The router options srtctl writes itself.
pub const ROUTER_OWNED: &[&str] = &["--pd-disaggregation", "--prefill", "--decode", "--host", "--port"];

#[derive(Serialize)]
struct Recipe<'a> {
    schema: u32,
    name: &'a str,
    identity: Identity,
    model: Model<'a>,
    resources: Resources,
    engine: &'static str,
    frontend: Frontend,
    roles: Roles,
}

#[derive(Serialize)]
struct Identity {
    frameworks: Frameworks,
}

#[derive(Serialize)]
struct Frameworks {
    sglang: String,
}

#[derive(Serialize)]
struct Model<'a> {
    path: &'a str,
    container: String,
    precision: &'static str,
}

#[derive(Serialize)]
struct Resources {
    gpu_type: &'static str,
    gpus_per_node: u32,
}

#[derive(Serialize)]
struct Frontend {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    args: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Roles {
    prefill: RoleSpec,
    decode: RoleSpec,
}

#[derive(Serialize)]
struct RoleSpec {
    nodes: u32,
    workers: u32,
    gpus: u32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    args: BTreeMap<String, Value>,
}

/// An argument's value as srtctl writes it back: `true` for a bare flag, a list for several.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
enum Value {
    Switch(bool),
    One(String),
    Many(Vec<String>),
}

impl Value {
    fn of(values: &[String]) -> Value {
        match values {
            [] => Value::Switch(true),
            [one] => Value::One(one.clone()),
            many => Value::Many(many.to_vec()),
        }
    }
}

/// Renders the deployment as one srtctl recipe (`<name>.srtctl.yaml`).
pub fn render_srtctl(d: &Deployment) -> Result<RenderedFile, RenderError> {
    super::slurm::check_name(&d.name)?;
    let plan = plan(d);
    check_launcher(d)?;
    let gpu = gpu_model(d)?;
    let per_node = gpus_per_node(d)?;
    let roles =
        Roles { prefill: role(d, &plan, Role::Prefill, per_node)?, decode: role(d, &plan, Role::Decode, per_node)? };
    let recipe = Recipe {
        schema: 2,
        name: &d.name,
        identity: Identity { frameworks: Frameworks { sglang: d.sglang_version.to_string() } },
        model: Model {
            path: &d.model.path,
            container: d.launcher.image.clone().unwrap_or_else(|| super::default_image(d.sglang_version)),
            precision: precision(d),
        },
        resources: Resources { gpu_type: gpu.as_str(), gpus_per_node: per_node },
        engine: "sglang",
        frontend: frontend(d, &plan)?,
        roles,
    };
    let yaml = crate::yaml_value::to_string(&recipe).map_err(RenderError::general)?;
    let mut contents = header(&plan);
    contents.push_str(
        "# An srt-slurm recipe: `srtctl apply -f` it. srtctl picks the nodes, GPUs, hosts and ports itself.\n",
    );
    contents.push_str(&yaml);
    Ok(RenderedFile { name: format!("{}.srtctl.yaml", d.name), contents, executable: false })
}

/// srtctl's `model.precision` (fp4, fp8, fp16 or bf16), which it requires and starts nothing
/// from: the quantization's, else the dtype's, else bf16.
fn precision(d: &Deployment) -> &'static str {
    let quantization = d.model.quantization.map(|q| q.as_str()).unwrap_or_default();
    if quantization.contains("fp4") || quantization.contains("nvfp4") {
        "fp4"
    } else if quantization.contains("fp8") {
        "fp8"
    } else if d.model.dtype.is_some_and(|t| matches!(t.as_str(), "half" | "float16")) {
        "fp16"
    } else {
        "bf16"
    }
}

fn check_launcher(d: &Deployment) -> Result<(), RenderError> {
    if d.launcher.python != "python3" {
        return Err(RenderError::at(
            "launcher.python",
            format_args!(
                "({:?}): srtctl starts every process with `python3`; leave the interpreter unset",
                d.launcher.python
            ),
        ));
    }
    if d.model.path.starts_with("hf:") {
        return Err(RenderError::at(
            "model.path",
            format_args!("starts with `hf:`, which srtctl takes off; write the path without it"),
        ));
    }
    for role in Role::BOTH {
        if let Some(bind) = d.side(role).bind_host.as_deref().filter(|b| *b != "0.0.0.0") {
            return Err(RenderError::at(
                format!("{role}.bind_host"),
                format_args!(
                    "({bind:?}): srtctl starts every server with `--host 0.0.0.0`; bind `0.0.0.0` or leave it unset"
                ),
            ));
        }
    }
    if d.router.host != "0.0.0.0" {
        return Err(RenderError::at(
            "router.host",
            format_args!("({:?}): srtctl's router listens on `0.0.0.0`; set that", d.router.host),
        ));
    }
    if d.router.port != FRONTEND_PORT {
        return Err(RenderError::at(
            "router.port",
            format_args!("is {}, but srtctl's router listens on port {FRONTEND_PORT}; set that", d.router.port),
        ));
    }
    Ok(())
}

/// The one GPU model of the recipe's `resources.gpu_type`.
fn gpu_model(d: &Deployment) -> Result<Gpu, RenderError> {
    match (d.prefill.gpu, d.decode.gpu) {
        (Some(p), Some(dg)) if p != dg => Err(RenderError::at(
            "decode.gpu",
            format_args!(
                "is {}, but `prefill.gpu` is {}: an srtctl recipe names one GPU model (`resources.gpu_type`); give both \
                 sides the same model",
                dg.as_str(),
                p.as_str()
            ),
        )),
        (None, None) => Err(RenderError::at(
            "prefill.gpu",
            format_args!("is unset, but an srtctl recipe names its GPU model (`resources.gpu_type`); set it (and `decode.gpu`)"),
        )),
        (Some(g), _) | (None, Some(g)) => Ok(g),
    }
}

/// GPUs each node of the job has: a multi-node worker's GPUs per node, else 8, or the largest
/// one-node worker's when larger.
fn gpus_per_node(d: &Deployment) -> Result<u32, RenderError> {
    let mut multi: Option<(Role, u32)> = None;
    let mut largest = DEFAULT_GPUS_PER_NODE;
    for role in Role::BOTH {
        let side = d.side(role);
        let Some(first) = side.instances.first() else {
            return Err(RenderError::at(
                format!("{role}.instances"),
                format_args!("is empty, but an srtctl role has at least one worker"),
            ));
        };
        let n = first.nodes.len() as u32;
        let g = side.gpus_per_instance();
        for (i, inst) in side.instances.iter().enumerate() {
            if inst.nodes.len() as u32 != n {
                return Err(RenderError::at(
                    format!("{role}.instances[{i}].nodes"),
                    format_args!(
                        "has {} node(s), but {role} instance 0 has {n}: the workers of an srtctl role are alike; give \
                         every {role} instance the same node count",
                        inst.nodes.len()
                    ),
                ));
            }
            for (k, node) in inst.nodes.iter().enumerate() {
                if let Some(own) = node.gpus.filter(|c| *c != (g / n.max(1)).max(1)) {
                    return Err(RenderError::at(
                        format!("{role}.instances[{i}].nodes[{k}].gpus"),
                        format_args!(
                            "is {own}, but srtctl gives each node of a {role} worker {} GPU(s) (TP x PP over the \
                             nodes); leave it unset",
                            (g / n.max(1)).max(1)
                        ),
                    ));
                }
            }
        }
        if n > 1 {
            let at = format!("{role}.instances[0].nodes");
            if !g.is_multiple_of(n) {
                return Err(RenderError::at(
                    at,
                    format_args!("spreads {g} GPUs over {n} nodes, but srtctl gives every node of a worker as many"),
                ));
            }
            match multi {
                Some((other, per)) if per != g / n => {
                    return Err(RenderError::at(
                        at,
                        format_args!(
                            "gives each node {} GPUs, but {other} nodes have {per}: srtctl's nodes all have \
                             `gpus_per_node`",
                            g / n
                        ),
                    ))
                }
                _ => multi = Some((role, g / n)),
            }
        } else {
            largest = largest.max(g);
        }
    }
    let Some((_, per)) = multi else { return Ok(largest) };
    for role in Role::BOTH {
        let side = d.side(role);
        if side.instances[0].nodes.len() == 1 && side.gpus_per_instance() > per {
            return Err(RenderError::at(
                format!("{role}.instances[0].nodes"),
                format_args!(
                    "is one node for {} GPUs, but the job's nodes have {per} (the multi-node side's): srtctl would \
                     spread the worker over several nodes; give it {} nodes",
                    side.gpus_per_instance(),
                    side.gpus_per_instance().div_ceil(per)
                ),
            ));
        }
    }
    Ok(per)
}

/// A process's options as srtctl's arguments: (key, value, the field it came from), extra
/// arguments grouped under the flag before them.
fn options(args: &[Arg], owned: &[&str]) -> Result<Vec<(String, Value, String)>, RenderError> {
    let mut out: Vec<(String, Vec<String>, String)> = Vec::new();
    let path = |a: &Arg| match &a.origin {
        Origin::Field { path } => path.clone(),
        _ => String::new(),
    };
    let mut extra_open = false;
    for a in args {
        if a.scope != Scope::Extra {
            extra_open = false;
            if !owned.contains(&a.tokens[0].as_str()) {
                out.push((a.tokens[0].clone(), a.tokens[1..].to_vec(), path(a)));
            }
            continue;
        }
        let tok = &a.tokens[0];
        if let Some(name) = tok.strip_prefix("--").filter(|n| !n.is_empty()) {
            if name.contains('=') {
                return Err(RenderError::at(
                    path(a),
                    format_args!("({tok:?}): an srtctl argument is a key and its value; write the flag and the value as two items"),
                ));
            }
            if owned.contains(&tok.as_str()) {
                return Err(RenderError::at(
                    path(a),
                    format_args!("({tok:?}) is an option srtctl writes itself; set it through its deployment field, or leave it out"),
                ));
            }
            out.push((tok.clone(), Vec::new(), path(a)));
            extra_open = true;
        } else if extra_open {
            out.last_mut().expect("an open flag").1.push(tok.clone());
        } else {
            return Err(RenderError::at(
                path(a),
                format_args!("({tok:?}) follows no flag of its own: srtctl's arguments are flags with their values"),
            ));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for (key, _, at) in &out {
        if seen.contains(&key.as_str()) {
            return Err(RenderError::at(
                at.clone(),
                format_args!("repeats `{key}`, but an srtctl role gives each argument once; keep one"),
            ));
        }
        seen.push(key);
    }
    Ok(out.into_iter().map(|(k, v, at)| (k.trim_start_matches("--").to_owned(), Value::of(&v), at)).collect())
}

fn role(d: &Deployment, plan: &Plan, role: Role, per_node: u32) -> Result<RoleSpec, RenderError> {
    let side = d.side(role);
    let mut args: Option<Vec<(String, Value, String)>> = None;
    for p in plan.role(role) {
        let own = options(&p.args, SERVER_OWNED)?;
        match &args {
            None => args = Some(own),
            Some(first) => {
                let differs = own
                    .iter()
                    .find(|o| !first.iter().any(|f| f.0 == o.0 && f.1 == o.1))
                    .or_else(|| first.iter().find(|f| !own.iter().any(|o| o.0 == f.0)));
                if let Some((key, _, at)) = differs {
                    return Err(RenderError::at(
                        at.clone(),
                        format_args!(
                            "gives {} `--{key}` of its own, but the processes of an srtctl role share one set of arguments; \
                             give every {role} process the same value",
                            p.label()
                        ),
                    ));
                }
            }
        }
    }
    let mut map: BTreeMap<String, Value> = BTreeMap::new();
    map.extend(args.unwrap_or_default().into_iter().map(|(k, v, _)| (k, v)));
    let served = d.model.served_name.clone().unwrap_or_else(|| d.model.path.clone());
    map.insert("served-model-name".into(), Value::One(served));
    let env = plan.role(role).next().map(|p| p.env.clone()).unwrap_or_default();
    for (k, v) in &env {
        let at = if side.env.contains_key(k) { format!("{role}.env.{k}") } else { format!("shared.env.{k}") };
        if v.contains("{node}") || v.contains("{node_id}") {
            return Err(RenderError::at(
                at,
                format_args!("holds `{{node}}` or `{{node_id}}`, which srtctl replaces with the node's name or index"),
            ));
        }
        if k == "CUDA_VISIBLE_DEVICES" {
            return Err(RenderError::at(
                at,
                format_args!("is srtctl's to set: it gives each worker its GPUs; leave it out"),
            ));
        }
    }
    let workers = side.instances.len() as u32;
    let g = side.gpus_per_instance().max(1);
    let nodes =
        if g >= per_node { workers.saturating_mul(g.div_ceil(per_node)) } else { workers.div_ceil(per_node / g) };
    Ok(RoleSpec { nodes, workers, gpus: g, env, args: map })
}

fn frontend(d: &Deployment, plan: &Plan) -> Result<Frontend, RenderError> {
    let mut args = BTreeMap::new();
    args.extend(options(&plan.router.args, ROUTER_OWNED)?.into_iter().map(|(k, v, _)| (k, v)));
    Ok(Frontend { kind: "sglang-router", args, env: d.router.env.clone() })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};
    use crate::lint::{lint, Input, Options};
    use crate::rules::Severity;

    /// Options as groups of a flag and its values, srtctl's own left out, in a stable order.
    pub(crate) fn groups(tokens: &[String], owned: &[&str]) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        for t in tokens {
            if t.starts_with("--") || out.is_empty() {
                out.push(vec![t.clone()]);
            } else {
                out.last_mut().unwrap().push(t.clone());
            }
        }
        out.retain(|g| !owned.contains(&g[0].as_str()));
        crate::sort::sort(&mut out);
        out
    }

    /// The linter's errors in the rendered recipe of `d`.
    fn errors(d: &Deployment) -> Vec<String> {
        let f = render_srtctl(d).unwrap();
        let linted = lint(&[Input::new(f.name.clone(), f.contents.as_str())], &Options::default());
        let errors = linted.findings.iter().filter(|x| x.finding.severity == Severity::Error);
        errors.map(|x| x.finding.message.clone()).collect()
    }

    /// What srtctl starts from the rendered recipe (as the linter reads it) is the plan: each
    /// server's options, srtctl's own apart, and its environment; the router's options and
    /// environment; and srtctl's own values where the plan decides them.
    pub(crate) fn assert_recipe_runs_the_plan(d: &Deployment) {
        let f = render_srtctl(d).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        let linted = lint(&[Input::new(f.name.clone(), f.contents.as_str())], &Options::default());
        let plan = plan(d);
        let (servers, routers): (Vec<_>, Vec<_>) =
            linted.launches.iter().partition(|l| l.program == crate::lint::launch::Program::Server);
        assert_eq!(servers.len(), plan.servers.len(), "{}: one process per node\n{}", d.name, f.contents);
        for (p, l) in plan.servers.iter().zip(&servers) {
            let got: Vec<String> = l.args.iter().map(|w| w.text.clone()).collect();
            let want = p.arg_tokens();
            assert_eq!(groups(&got, SERVER_OWNED), groups(&want, SERVER_OWNED), "{}: {}", d.name, p.label());
            let value = |tokens: &[String], flag: &str| {
                tokens.iter().position(|t| t == flag).and_then(|i| tokens.get(i + 1)).cloned()
            };
            let served = d.model.served_name.clone().unwrap_or_else(|| d.model.path.clone());
            assert_eq!(value(&got, "--served-model-name"), Some(served), "{}", p.label());
            assert_eq!(value(&got, "--model-path").as_deref(), Some(d.model.path.as_str()), "{}", p.label());
            for flag in ["--disaggregation-mode", "--nnodes", "--node-rank"] {
                assert_eq!(value(&got, flag), value(&want, flag), "{}: {flag}", p.label());
            }
            let mut env: BTreeMap<String, String> = l.env.iter().cloned().collect();
            env.remove("CUDA_VISIBLE_DEVICES");
            assert_eq!(env, p.env, "{}: {}", d.name, p.label());
            assert_eq!(l.python.as_deref(), Some(plan.python.as_str()));
        }
        let [router] = routers[..] else { panic!("{}: one router", d.name) };
        let got: Vec<String> = router.args.iter().map(|w| w.text.clone()).collect();
        assert_eq!(groups(&got, ROUTER_OWNED), groups(&plan.router.arg_tokens(), ROUTER_OWNED), "{}: router", d.name);
        let env: BTreeMap<String, String> = router.env.iter().cloned().collect();
        assert_eq!(env, plan.router.env, "{}: router env", d.name);
    }

    /// The examples, set to what srtctl decides (its router's address and port).
    fn srtctl_examples() -> Vec<Deployment> {
        EXAMPLES
            .iter()
            .map(|e| {
                let mut d = example(e.name).unwrap();
                d.router.port = FRONTEND_PORT;
                d.router.host = "0.0.0.0".into();
                d
            })
            .collect()
    }

    #[test]
    fn every_example_recipe_starts_the_plans_processes() {
        for d in srtctl_examples() {
            assert_eq!(errors(&d), Vec::<String>::new(), "{}", d.name);
            assert_recipe_runs_the_plan(&d);
        }
    }

    /// Linting the recipe finds no error, and the deployment the linter reconstructs from it
    /// renders the very same recipe.
    #[test]
    fn the_reconstructed_deployment_renders_the_same_recipe() {
        for d in srtctl_examples() {
            let f = render_srtctl(&d).unwrap();
            let linted = lint(&[Input::new(f.name.clone(), f.contents.as_str())], &Options::default());
            assert_eq!(linted.groups.len(), 1, "{}", d.name);
            let back = crate::lint::reconstruct::deployment(&linted, 0).unwrap().deployment;
            let again = render_srtctl(&back).unwrap_or_else(|e| panic!("{}: {e}", d.name));
            assert_eq!(again.contents, f.contents, "{}", d.name);
        }
    }

    #[test]
    fn the_recipe_names_srtctls_own_words() {
        let d = &srtctl_examples()[0];
        let f = render_srtctl(d).unwrap();
        assert!(f.name.ends_with(".srtctl.yaml"));
        let text = &f.contents;
        for want in ["schema: 2\n", "engine: sglang\n", "  type: sglang-router\n", "roles:\n  prefill:\n"] {
            assert!(text.contains(want), "{want:?} in\n{text}");
        }
        assert!(!text.contains("--host") && !text.contains("  port:"), "{text}");
    }

    #[test]
    fn what_srtctl_decides_itself_is_refused_at_its_field() {
        let base = srtctl_examples().into_iter().find(|d| d.name == "qwen3-2p1d-nixl").unwrap();
        let refused = |d: &Deployment| render_srtctl(d).expect_err("refused").field;
        let mut d = base.clone();
        d.router.port = 9000;
        assert_eq!(refused(&d).as_deref(), Some("router.port"));
        let mut d = base.clone();
        d.router.host = "10.0.0.9".into();
        assert_eq!(refused(&d).as_deref(), Some("router.host"));
        // Ports are srtctl's: the deployment's own are not carried, and not refused.
        let mut d = base.clone();
        d.prefill.instances[1].port = Some(31000);
        d.prefill.instances[0].nccl_port = Some(7000);
        assert_eq!(render_srtctl(&d).unwrap().contents, render_srtctl(&base).unwrap().contents);
        let mut d = base.clone();
        d.decode.bind_host = Some("10.0.3.3".into());
        assert_eq!(refused(&d).as_deref(), Some("decode.bind_host"));
        let mut d = base.clone();
        let node = d.prefill.instances[1].nodes[0].clone();
        d.prefill.instances[1].nodes.push(node);
        assert_eq!(refused(&d).as_deref(), Some("prefill.instances[1].nodes"));
        let mut d = base.clone();
        d.launcher.python = "/opt/venv/bin/python".into();
        assert_eq!(refused(&d).as_deref(), Some("launcher.python"));
        let mut d = base.clone();
        d.decode.gpu = Some(Gpu::H200);
        assert_eq!(refused(&d).as_deref(), Some("decode.gpu"));
        // srtctl requires a GPU model; one side naming it is enough.
        d.prefill.gpu = None;
        assert!(render_srtctl(&d).unwrap().contents.contains("gpu_type: h200\n"));
        d.decode.gpu = None;
        assert_eq!(refused(&d).as_deref(), Some("prefill.gpu"));
        let mut d = base.clone();
        d.prefill.extra_args = vec!["--port".into(), "1".into()];
        assert_eq!(refused(&d).as_deref(), Some("prefill.extra_args[0]"));
        d.prefill.extra_args = vec!["--log-level".into(), "info".into(), "--log-level".into(), "debug".into()];
        assert_eq!(refused(&d).as_deref(), Some("prefill.extra_args[2]"));
        d.prefill.extra_args = vec!["stray".into()];
        assert_eq!(refused(&d).as_deref(), Some("prefill.extra_args[0]"));
        let mut d = base.clone();
        d.decode.env.insert("WHERE".into(), "{node}".into());
        assert_eq!(refused(&d).as_deref(), Some("decode.env.WHERE"));
        // A node's own NIC: the processes of a role share their arguments.
        let mut d = srtctl_examples().into_iter().find(|d| d.name == "deepseek-v3-dp-deepep").unwrap();
        d.prefill.instances[0].nodes[1].ib_device = Some("mlx5_9".into());
        assert_eq!(refused(&d).as_deref(), Some("prefill.instances[0].nodes[1].ib_device"));
        // A one-node worker larger than the multi-node side's nodes.
        let mut d = srtctl_examples().into_iter().find(|d| d.name == "deepseek-v3-dp-deepep").unwrap();
        d.decode.instances[0].nodes.truncate(1);
        assert_eq!(refused(&d).as_deref(), Some("decode.instances[0].nodes"));
    }
}
