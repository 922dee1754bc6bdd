//! A linted group back to the one [`Deployment`] that renders it, through the flag table: each
//! option is stored by its flag's binding ([`flags::Binding::set`]), the way the plan renders it
//! by [`flags::Binding::get`]; options the table does not bind, and values their field cannot
//! hold, go to the side's (or the router's) `extra_args` verbatim. The few options the topology
//! decides (`--host`, `--dist-init-addr`, DP attention's `--dp-size`, the decode's bootstrap
//! port) are read back by code of their own below.
//!
//! A deployment cannot say "one side differs": shared settings exist once. Where the servers
//! disagree, the first prefill's value is kept for both sides and a note says what changed, so
//! rendering the result gives matched commands (the drift the linter reports is resolved, not
//! copied). Values the schema cannot hold (a choice it does not know) stay in `extra_args`.
//!
//! Normalisation, as checked by the round-trip property test (`tests::round_trip`): values a
//! rendering leaves implicit come back explicit (ports, bootstrap ports, dist-init ports, every
//! node's `base_gpu_id`), the decode's bootstrap port is the first prefill's, and `name`, the
//! releases, `launcher.config_dir`, per-node GPU counts, `gpu` and model geometry are not on
//! command lines (they come from the options or stay unset).

use std::collections::BTreeMap;

use serde_json::json;

use super::{Group, Linted};
use crate::deployment::{Deployment, Instance, Kubernetes, Node, Placement, Role};
use crate::effective::ServerView;
use crate::flags::{self, At, Flag, Reach, Written};
use crate::plan::instance_addrs;
use crate::spec::{ArgUse, ArgValue};

const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// The first GPU of a `CUDA_VISIBLE_DEVICES` that lists consecutive GPUs (`4,5,6,7`): a
/// deployment says the same with `base_gpu_id`. Other lists (`0,2`, UUIDs) stay in the environment.
fn visible_start(env: &std::collections::BTreeMap<String, String>) -> Option<u32> {
    let ids: Vec<u32> = env.get(VISIBLE)?.split(',').map(|g| g.trim().parse().ok()).collect::<Option<_>>()?;
    let first = *ids.first()?;
    ids.iter().zip(first..).all(|(a, b)| *a == b).then_some(first)
}

/// The most nodes a reconstructed instance gets; larger `--nnodes` values are typos.
const MAX_NODES: usize = 1024;

/// The most instances the `replicas` of one object become.
const MAX_REPLICAS: u32 = 256;

/// A reconstructed deployment and what was changed or could not be expressed.
#[derive(Clone, Debug)]
pub struct Reconstructed {
    /// The deployment.
    pub deployment: Deployment,
    /// One line per difference between the material and the deployment.
    pub notes: Vec<String>,
}

/// The deployment of group `g`.
pub fn deployment(linted: &Linted, g: usize) -> Result<Reconstructed, String> {
    let group = linted.groups.get(g).ok_or_else(|| format!("there is no group {g}"))?;
    Builder::new(linted, group)?.build()
}

struct Builder<'a> {
    linted: &'a Linted,
    group: &'a Group,
    d: Deployment,
    notes: Vec<String>,
    /// (role, instance) -> index in the deployment's instances.
    instances: Vec<(Role, usize, usize)>,
    /// The value each field of both sides or of one side was first read with, by the field's
    /// deployment path: a later server that disagrees gets a note, not the field.
    first: BTreeMap<String, String>,
    extra: [Vec<String>; 2],
}

fn side_index(r: Role) -> usize {
    match r {
        Role::Prefill => 0,
        Role::Decode => 1,
    }
}

/// The tokens of one option occurrence (the option and its values).
fn use_tokens<'t>(view: &'t ServerView, u: &ArgUse) -> &'t [String] {
    let next = view.parsed.uses.iter().map(|x| x.index).filter(|&i| i > u.index).min().unwrap_or(view.tokens.len());
    let next = view.parsed.problems.iter().map(|p| p.index).filter(|&i| i > u.index).fold(next, usize::min);
    &view.tokens[u.index..next.min(view.tokens.len())]
}

/// An option's value as the flags' bindings take it.
fn written(u: &ArgUse) -> Written {
    match &u.value {
        ArgValue::Switch(on) => Written::Switch(*on),
        value => Written::Text(value.as_text()),
    }
}

/// The servers' cluster settings, when the servers of each side share theirs and the sides
/// differ at most in their node labels and taints: those of both sides are written once, the
/// rest as each side's own.
fn cluster_settings(linted: &Linted, group: &Group) -> Option<Kubernetes> {
    let mut sides: [Option<Kubernetes>; 2] = [None, None];
    for r in Role::BOTH {
        let mut servers = group.servers.iter().filter(|s| s.role() == Some(r));
        let first = linted.launches[servers.next()?.launch].kubernetes.as_deref();
        if !servers.all(|s| linted.launches[s.launch].kubernetes.as_deref() == first) {
            return None;
        }
        sides[r as usize] = Some(first.cloned().unwrap_or_default());
    }
    let [Some(mut prefill), Some(mut decode)] = sides else { return None };
    let placement = |k: &mut Kubernetes| (std::mem::take(&mut k.node_selector), std::mem::take(&mut k.tolerations));
    let (p, d) = (placement(&mut prefill), placement(&mut decode));
    // Labels and annotations of one side only (`component: prefill`) have no field: the common
    // ones are kept.
    let meta = |k: &mut Kubernetes| (std::mem::take(&mut k.labels), std::mem::take(&mut k.pod_annotations));
    let (pm, dm) = (meta(&mut prefill), meta(&mut decode));
    if prefill != decode {
        return None;
    }
    let mut k = prefill;
    let common = |a: &BTreeMap<String, String>, b: &BTreeMap<String, String>| {
        let mut both = BTreeMap::new();
        both.extend(a.iter().filter(|(key, v)| b.get(*key) == Some(v)).map(|(key, v)| (key.clone(), v.clone())));
        both
    };
    k.labels = common(&pm.0, &dm.0);
    k.pod_annotations = common(&pm.1, &dm.1);
    k.node_selector = common(&p.0, &d.0);
    k.tolerations = p.1.iter().filter(|t| d.1.contains(t)).cloned().collect();
    for (role, (selector, tolerations)) in Role::BOTH.into_iter().zip([p, d]) {
        let mut own = Placement::default();
        own.node_selector.extend(selector.into_iter().filter(|(key, _)| !k.node_selector.contains_key(key)));
        own.tolerations = tolerations.into_iter().filter(|t| !k.tolerations.contains(t)).collect();
        *k.side_mut(role) = own;
    }
    (!k.is_empty()).then_some(k)
}

impl<'a> Builder<'a> {
    fn new(linted: &'a Linted, group: &'a Group) -> Result<Builder<'a>, String> {
        for r in Role::BOTH {
            if !group.servers.iter().any(|s| s.role() == Some(r)) {
                return Err(format!("group `{}` has no {r} server, so it is not a complete PD deployment", group.name));
            }
        }
        let first = &group.servers[0];
        let python = linted.launches[first.launch].python.clone().unwrap_or_else(|| "python3".into());
        let model_path = first.view.value("model_path").unwrap_or_else(|| "UNKNOWN-MODEL".into());
        let mut notes = Vec::new();
        if first.view.value("model_path").is_none() {
            notes.push("no --model-path found: set `model.path`".to_owned());
        }
        // The skeleton, read as a deployment so that every field the options leave unset takes
        // the schema's default.
        let skeleton = json!({
            "name": group.name,
            "sglang_version": group.release,
            "router_version": group.router_release,
            "launcher": {"python": python},
            "model": {"path": model_path},
            "shared": {},
            "prefill": {"instances": []},
            "decode": {"instances": []},
        });
        let mut d: Deployment =
            crate::load::from_value(&skeleton).map_err(|e| format!("cannot build a deployment: {e}"))?;
        // The servers' image, when they share one other than the one `render` would name.
        let image = linted.launches[first.launch].image.as_deref();
        let shared = group.servers.iter().all(|s| linted.launches[s.launch].image.as_deref() == image);
        // Images `render` names itself: SGLang's, and the Dynamo runtime that ships the release.
        let named = |i: &str| {
            i == crate::render::default_image(group.release)
                || crate::render::dynamo_runtime_image(group.release).is_some_and(|r| r == i)
        };
        if let Some(image) = image.filter(|i| shared && !named(i)) {
            d.launcher.image = Some(image.to_owned());
        }
        if let Some(k) = cluster_settings(linted, group) {
            d.kubernetes = k;
        }
        // The built-in model the rules used, so that checking the deployment uses it too.
        if let Some(p) = group.preset {
            d.model.preset = Some(p.name.to_owned());
        }
        let mut instances = Vec::new();
        for r in Role::BOTH {
            let mut seen: Vec<usize> = Vec::new();
            for s in group.servers.iter().filter(|s| s.role() == Some(r)) {
                if !seen.contains(&s.view.instance) {
                    seen.push(s.view.instance);
                }
            }
            crate::sort::sort(&mut seen);
            for (k, inst) in seen.iter().enumerate() {
                let nodes: Vec<&super::ServerEntry> =
                    group.servers.iter().filter(|s| s.role() == Some(r) && s.view.instance == *inst).collect();
                // A node rank at or past `--nnodes` names no node of the instance (SGLang waits
                // for it forever); it is left out, so that `--node-rank 2147483647` does not
                // make two billion placeholder nodes. No instance spans more than MAX_NODES.
                let nnodes = nodes.iter().map(|s| s.view.size("nnodes") as usize).max().unwrap_or(1).min(MAX_NODES);
                let count = nodes.iter().map(|s| s.view.node + 1).max().unwrap_or(1).min(nnodes);
                for s in nodes.iter().filter(|s| s.view.node >= count) {
                    notes.push(format!(
                        "{} has node rank {} but its instance spans {nnodes} node(s): it is left out",
                        s.view.label, s.view.node
                    ));
                }
                let mut hosts = Vec::new();
                for n in 0..count {
                    let known =
                        nodes.iter().find(|s| s.view.node == n).map(|s| own_host(group, s)).filter(|h| !h.is_empty());
                    if let Some(s) = nodes.iter().find(|s| s.view.node == n && split(group, s)) {
                        notes.push(format!(
                            "{} binds `{}`, a placeholder each machine fills in: its machine is `{}` here; set its \
                             address as `host`",
                            s.view.label,
                            s.view.host,
                            own_host(group, s)
                        ));
                    }
                    let host = known.unwrap_or_else(|| {
                        let placeholder = format!("{r}-{k}-node-{n}");
                        notes.push(format!("the address of {r} instance {k} node {n} is unknown: set its `host` (`{placeholder}` is a placeholder)"));
                        placeholder
                    });
                    hosts.push(Node { host, gpus: None, gpus_installed: None, base_gpu_id: None, ib_device: None });
                }
                d.side_mut(r).instances.push(Instance {
                    nodes: hosts,
                    port: None,
                    bootstrap_port: None,
                    dist_init_port: None,
                    nccl_port: None,
                });
                instances.push((r, *inst, k));
            }
        }
        Ok(Builder { linted, group, d, notes, instances, first: BTreeMap::new(), extra: [Vec::new(), Vec::new()] })
    }

    /// The deployment's place of the server `v` of `role`: its instance's index among the side's.
    fn at(&self, role: Role, v: &ServerView) -> Option<At> {
        let &(_, _, instance) = self.instances.iter().find(|(r, i, _)| *r == role && *i == v.instance)?;
        Some(At { role, instance, node: v.node })
    }

    fn build(mut self) -> Result<Reconstructed, String> {
        let group = self.group;
        let first_prefill_bootstrap =
            group.servers.iter().find(|s| s.role() == Some(Role::Prefill)).and_then(|s| s.view.bootstrap_port());
        for s in &group.servers {
            let Some(role) = s.role() else {
                self.notes.push(format!("{} is neither prefill nor decode; left out", s.view.label));
                continue;
            };
            let v = &s.view;
            let Some(at) = self.at(role, v) else { continue };
            if v.role.is_none() {
                self.notes.push(format!("{} has no --disaggregation-mode; the deployment renders `{role}`", v.label));
            }
            let is_side_head = at.instance == 0 && at.node == 0;
            // Argparse problems: verbatim into extra_args (the first server of the side speaks for it).
            if is_side_head {
                for p in &v.parsed.problems {
                    let end =
                        v.parsed.uses.iter().map(|u| u.index).filter(|&i| i > p.index).min().unwrap_or(v.tokens.len());
                    let toks = v.tokens[p.index..end].to_vec();
                    self.extra[side_index(role)].extend(toks);
                }
            }
            let dp_attention = v.switch("enable_dp_attention");
            for u in &v.parsed.uses {
                // The last occurrence of each option is the one that counts.
                if v.parsed.last_use(u.dest).map(|l| l.index) != Some(u.index) {
                    continue;
                }
                let flag = flags::server_flag(u.canonical).or_else(|| flags::server_flags_for_dest(u.dest).next());
                let handled = match (flag, u.dest) {
                    (_, "disaggregation_mode" | "nnodes" | "node_rank" | "enable_dp_attention") => true,
                    (_, "host") => {
                        let h = u.value.as_text();
                        match &self.d.side(role).bind_host {
                            _ if h == v.host || h.is_empty() => {}
                            Some(prev) if *prev != h => {
                                self.notes.push(format!(
                                    "{} binds `{h}`, other {role} servers `{prev}`; kept `{prev}`",
                                    v.label
                                ));
                            }
                            _ => self.d.side_mut(role).bind_host = Some(h),
                        }
                        true
                    }
                    (_, "dist_init_addr") => {
                        let port = crate::rules::split_url(&u.value.as_text()).map(|(_, p)| p);
                        match (port, self.d.side_mut(role).instances.get_mut(at.instance)) {
                            (Some(p), Some(instance)) => {
                                instance.dist_init_port = Some(p);
                                true
                            }
                            _ => false,
                        }
                    }
                    (_, "dp_size") if dp_attention => {
                        self.d.side_mut(role).attn_dp = v.size("dp_size");
                        true
                    }
                    (_, "disaggregation_bootstrap_port") if role == Role::Decode => {
                        let b = v.bootstrap_port();
                        if b != first_prefill_bootstrap {
                            self.notes.push(format!(
                                "{} falls back to bootstrap port {}, the first prefill binds {}; the deployment renders the \
                                 prefill's value on the decode",
                                v.label,
                                b.map_or("?".into(), |x| x.to_string()),
                                first_prefill_bootstrap.map_or("?".into(), |x| x.to_string())
                            ));
                        }
                        true
                    }
                    // A spelling for the other side's servers (`--cuda-graph-max-bs-prefill` on a
                    // decode) is kept verbatim: the side's field renders the other spelling.
                    (Some(f), _) if !f.bind.on.has(role) => false,
                    (Some(f), _) => self.store(f, u, v, at),
                    _ => false,
                };
                if !handled && is_side_head {
                    self.extra[side_index(role)].extend(use_tokens(v, u).iter().cloned());
                }
            }
        }
        for r in Role::BOTH {
            self.d.side_mut(r).extra_args = std::mem::take(&mut self.extra[side_index(r)]);
            let mut gpus = group.servers.iter().filter(|s| s.role() == Some(r)).map(|s| s.view.gpu);
            if let Some(Some(g)) = gpus.next() {
                if gpus.all(|x| x == Some(g)) {
                    self.d.side_mut(r).gpu = Some(g);
                }
            }
        }
        self.decode_only_speculation();
        self.env();
        self.router();
        self.pin_gpus();
        self.replicate();
        Ok(Reconstructed { deployment: self.d, notes: self.notes })
    }

    /// Stores option `u` of server `v` by its flag's binding; false when the flag has none or its
    /// field cannot hold the value. A field of both sides or of a side takes the first server's
    /// value; a later server that disagrees gets a note.
    fn store(&mut self, f: &'static Flag, u: &ArgUse, v: &ServerView, at: At) -> bool {
        let (Some(set), Some(reach), Some(path)) = (f.bind.set, f.reach(), f.path(at)) else { return false };
        match reach {
            // Node 0 speaks for its instance.
            Reach::Instance if at.node != 0 => return true,
            Reach::Both | Reach::Side => {
                let value = u.value.as_text();
                if let Some(prev) = self.first.get(&path) {
                    if *prev != value {
                        let scope = if reach == Reach::Both { "both sides" } else { "the whole side" };
                        self.notes.push(format!(
                            "{} has `{} {value}` but an earlier server has `{prev}`; the deployment renders `{prev}` on \
                             {scope}",
                            v.label, u.spelling
                        ));
                    }
                    return true;
                }
                if !set(&mut self.d, at, &written(u)) {
                    return false;
                }
                self.first.insert(path, value);
                return true;
            }
            _ => {}
        }
        set(&mut self.d, at, &written(u))
    }

    /// Makes `base_gpu_id` explicit where the plan's default placement (after the GPUs of
    /// processes rendered earlier on the same host) differs from the GPU the server really starts
    /// at (`--base-gpu-id`, default 0).
    fn pin_gpus(&mut self) {
        for _ in 0..8 {
            let plan = crate::plan::plan(&self.d);
            let mut changed = false;
            for s in &self.group.servers {
                let Some(at) = s.role().and_then(|role| self.at(role, &s.view)) else { continue };
                let base = s.view.int("base_gpu_id").and_then(|b| u32::try_from(b).ok()).unwrap_or(0);
                let want = visible_start(&s.view.env).map_or(base, |first| first + base);
                let planned = plan
                    .servers
                    .iter()
                    .find(|p| p.role == at.role && p.instance == at.instance && p.node == at.node)
                    .map(|p| p.gpus.0);
                if planned.is_some_and(|p| p != want) {
                    let side = self.d.side_mut(at.role);
                    if let Some(node) = side.instances.get_mut(at.instance).and_then(|i| i.nodes.get_mut(at.node)) {
                        node.base_gpu_id = Some(want);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The instances that the `replicas` of a Deployment or StatefulSet stand for (one per
    /// `--nnodes` pods): the server read once is the first, and copies of it follow the side's
    /// other instances. Their hosts are their pods' names, `<object>-<i>.<address>`, which a
    /// StatefulSet's headless Service resolves and a Deployment's pods do not have.
    fn replicate(&mut self) {
        for s in self.group.servers.iter().filter(|s| s.view.node == 0 && s.view.pod.is_none()) {
            let l = &self.linted.launches[s.launch];
            let (Some(role), Some(meta)) = (s.role(), l.meta.as_deref().filter(|_| l.isolated)) else {
                continue;
            };
            let copies = (meta.replicas.unwrap_or(1) / s.view.size("nnodes").max(1)).min(MAX_REPLICAS) as usize;
            let Some(at) = self.at(role, &s.view) else { continue };
            let side = self.d.side_mut(role);
            let Some(first) = side.instances.get(at.instance).cloned().filter(|_| copies >= 2) else { continue };
            let owner = meta.owner.as_deref().unwrap_or(role.as_str());
            let pod = |c: usize, host: &str| match crate::plan::is_ip_literal(host) {
                true => format!("{owner}-{c}"),
                false => format!("{owner}-{c}.{host}"),
            };
            let mut numbers = vec![at.instance];
            for c in 1..copies {
                let mut copy = first.clone();
                for n in &mut copy.nodes {
                    n.host = pod(c, &n.host);
                }
                numbers.push(side.instances.len());
                side.instances.push(copy);
            }
            for n in &mut side.instances[at.instance].nodes {
                n.host = pod(0, &n.host);
            }
            let numbers: Vec<String> = numbers.iter().map(ToString::to_string).collect();
            self.notes.push(format!(
                "{} stands for the {copies} replicas of `{owner}`: {role} instances {}, at their pods' names (a \
                 StatefulSet's; a Deployment's pods have none, so set those hosts to render other than Kubernetes \
                 manifests)",
                s.view.label,
                numbers.join(", ")
            ));
        }
    }

    /// A decode that speculates behind prefills that do not: `shared.speculative` came from the
    /// decode, and renders on the decode only.
    fn decode_only_speculation(&mut self) {
        let speculates = |s: &&super::ServerEntry| {
            s.view.value("speculative_algorithm").is_some_and(|a| !a.eq_ignore_ascii_case("none"))
        };
        let on = |role: Role| self.group.servers.iter().filter(move |s| s.role() == Some(role));
        if on(Role::Decode).any(|s| speculates(&s)) && !on(Role::Prefill).any(|s| speculates(&s)) {
            if let Some(speculative) = &mut self.d.shared.speculative {
                speculative.decode_only = true;
            }
        }
    }

    fn env(&mut self) {
        let group = self.group;
        // Names a shell can export, and not those a leader-worker controller sets in its pods.
        let valid = |k: &str| {
            k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !super::manifest::POD_VARS.contains(&k)
        };
        // A contiguous `CUDA_VISIBLE_DEVICES` becomes the node's `base_gpu_id` (`pin_gpus`).
        let valid =
            |k: &str, env: &BTreeMap<String, String>| valid(k) && !(k == VISIBLE && visible_start(env).is_some());
        let all: Vec<&BTreeMap<String, String>> = group.servers.iter().map(|s| &s.view.env).collect();
        let Some(first) = all.first() else { return };
        let mut shared = BTreeMap::new();
        for (k, v) in first.iter() {
            if valid(k, first) && all.iter().all(|e| e.get(k) == Some(v)) {
                shared.insert(k.clone(), v.clone());
            }
        }
        for r in Role::BOTH {
            let side: Vec<&super::ServerEntry> = group.servers.iter().filter(|s| s.role() == Some(r)).collect();
            let Some(head) = side.first() else { continue };
            let mut env = BTreeMap::new();
            for (k, v) in &head.view.env {
                if valid(k, &head.view.env) && !shared.contains_key(k) {
                    if !side.iter().all(|s| s.view.env.get(k) == Some(v)) {
                        self.notes
                            .push(format!("`{k}` differs between {r} servers; kept `{v}` from {}", head.view.label));
                    }
                    env.insert(k.clone(), v.clone());
                }
            }
            self.d.side_mut(r).env = env;
        }
        self.d.shared.env = shared;
    }

    fn router(&mut self) {
        let Some(r) = &self.group.router else {
            // On a port no server of the material binds, so that it collides with none of them.
            let used: Vec<i64> = self
                .group
                .servers
                .iter()
                .flat_map(|s| ["port", "disaggregation_bootstrap_port"].map(|f| s.view.int(f)))
                .flatten()
                .collect();
            let port = (self.d.router.port..=u16::MAX).find(|p| !used.contains(&i64::from(*p)));
            let port = port.unwrap_or(self.d.router.port);
            self.d.router.port = port;
            self.notes.push(format!("no router found: the deployment's router listens on 0.0.0.0:{port}"));
            return;
        };
        let v = &r.view;
        let mut extra: Vec<String> = Vec::new();
        for p in &v.parsed.problems {
            let end = v.parsed.uses.iter().map(|u| u.index).filter(|&i| i > p.index).min().unwrap_or(v.tokens.len());
            extra.extend(v.tokens[p.index..end].iter().cloned());
        }
        // A router that discovers its servers renders as `kubernetes.service_discovery`, with
        // selectors and a port of its own.
        let discovery = r.discovered.is_some();
        if discovery {
            let k = &mut self.d.kubernetes;
            k.service_discovery = true;
            // The router's namespace, when it is one (not `$(POD_NAMESPACE)`).
            let ns = v.parsed.get("service_discovery_namespace").map(|n| n.as_text());
            if let (None, Some(ns)) = (&k.namespace, ns.filter(|n| crate::render::cluster::is_label(n))) {
                k.namespace = Some(ns);
            }
        }
        let discovery_flags = [
            "service_discovery",
            "prefill_selector",
            "decode_selector",
            "service_discovery_port",
            "service_discovery_namespace",
        ];
        // Router fields are the deployment's one router's: the place is not read.
        let at = At { role: Role::Prefill, instance: 0, node: 0 };
        let mut stored: Vec<&str> = Vec::new();
        for u in &v.parsed.uses {
            if matches!(u.dest, "prefill" | "decode" | "pd_disaggregation")
                || discovery && discovery_flags.contains(&u.dest)
            {
                continue;
            }
            if v.parsed.last_use(u.dest).map(|l| l.index) != Some(u.index) {
                continue;
            }
            let set = flags::ROUTER_FLAGS.iter().find(|f| f.dest == u.dest).and_then(|f| f.bind.set);
            if set.is_some_and(|set| set(&mut self.d, at, &written(u))) {
                stored.push(u.dest);
            } else {
                let next =
                    v.parsed.uses.iter().map(|x| x.index).filter(|&i| i > u.index).min().unwrap_or(v.tokens.len());
                extra.extend(v.tokens[u.index..next].iter().cloned());
            }
        }
        let router = &mut self.d.router;
        if !stored.contains(&"port") {
            router.port = v.port;
            self.notes.push(format!("the router gives no --port (its default is {}); kept it explicit", v.port));
        }
        if !stored.contains(&"host") {
            router.host = v.host.clone();
        }
        router.extra_args = extra;
        let launch = &self.linted.launches[r.launch];
        router.env.extend(launch.env.iter().cloned());
        let default_image = crate::render::default_router_image(self.group.router_release);
        if let Some(image) = launch.image.as_deref().filter(|i| *i != default_image) {
            router.image = Some(image.to_owned());
        }
        // Routers behind one Service: the replicas of the object that makes the router's pods.
        if let Some(n) = launch.meta.as_deref().and_then(|m| m.replicas).filter(|n| *n > 1) {
            self.d.kubernetes.router_replicas = n;
        }
        // Entries the deployment renders from the prefill side: say where the router disagreed.
        let addrs = instance_addrs(&self.d);
        for (i, e) in v.prefills.iter().enumerate() {
            let Some(a) = addrs.get(&(Role::Prefill, i)) else {
                self.notes.push(format!(
                    "router entry {i} (`--prefill http://{}:{}`) has no prefill instance",
                    e.host, e.port
                ));
                continue;
            };
            if e.bootstrap_port.is_some_and(|b| b != a.bootstrap_port) {
                self.notes.push(format!(
                    "router entry `--prefill http://{}:{}` gives bootstrap port {}, the prefill binds {}; the deployment \
                     renders {}",
                    e.host,
                    e.port,
                    e.bootstrap_port.unwrap_or_default(),
                    a.bootstrap_port,
                    a.bootstrap_port
                ));
            }
        }
    }
}

/// The address of a server's own: its host, unless that is also the host of a server in another
/// pod (a Service in front of the groups of a LeaderWorkerSet), then its pod's name.
fn own_host(group: &Group, s: &super::ServerEntry) -> String {
    let shared = |pod: &String| {
        group.servers.iter().any(|o| o.view.pod.as_ref().is_some_and(|p| p != pod) && o.view.host == s.view.host)
    };
    match (&s.view.pod, &s.view.placeholder_machine) {
        (Some(pod), _) if shared(pod) => pod.clone(),
        (_, Some(m)) if split(group, s) => machine_name(group, m),
        _ => s.view.host.clone(),
    }
}

/// True when the placeholder host of `s` is also the host of a server on another machine: it
/// then names no machine, and the deployment names one for it.
fn split(group: &Group, s: &super::ServerEntry) -> bool {
    let m = s.view.placeholder_machine.as_deref();
    m.is_some()
        && group.servers.iter().any(|o| o.view.host == s.view.host && o.view.placeholder_machine.as_deref() != m)
}

/// The host a deployment gives the machine `m` of servers whose host is a per-machine placeholder
/// (`${HOST_IP}`): `machine-<k>`, numbered in the order the group's servers name them, so that
/// servers one script starts side by side keep one host and the others get their own.
fn machine_name(group: &Group, m: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in group.servers.iter().filter_map(|o| o.view.placeholder_machine.as_deref()) {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    let k = seen.iter().position(|p| *p == m).map_or(0, |k| k + 1);
    format!("machine-{k}")
}

/// Makes a deployment's implicit, rendering-derived values explicit, and drops what command lines
/// cannot carry, so that two deployments that render the same commands compare equal.
pub fn normalize(d: &Deployment) -> Deployment {
    let mut n = d.clone();
    let addrs = instance_addrs(d);
    let plan = crate::plan::plan(d);
    for r in Role::BOTH {
        let side = n.side_mut(r);
        side.gpu = None;
        for (i, inst) in side.instances.iter_mut().enumerate() {
            let a = &addrs[&(r, i)];
            inst.port = Some(a.port);
            inst.bootstrap_port = (r == Role::Prefill).then_some(a.bootstrap_port);
            inst.dist_init_port = a.dist_init_port;
            for (k, node) in inst.nodes.iter_mut().enumerate() {
                node.gpus = None;
                node.gpus_installed = None;
                let p = plan.servers.iter().find(|p| p.role == r && p.instance == i && p.node == k);
                node.base_gpu_id = p.map(|p| p.gpus.0);
            }
        }
    }
    n.model.geometry = None;
    n.launcher.config_dir = crate::deployment::Launcher::default().config_dir;
    n
}
