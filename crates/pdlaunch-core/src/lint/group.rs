//! Grouping launches into deployments: each server read with the release's spec, linked to the
//! router that names it or grouped with the servers of its model, and numbered into instances
//! and nodes, which name it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::config::{self, ConfigProblem};
use super::launch::{self, Launch, Program};
use super::{base_name, dynamo, link, stem_hint, Group, Options, RouterEntryInfo, ServerEntry};
use crate::deployment::Role;
use crate::effective::{ModelFacts, ServerView};
use crate::fast_hash::FastMap;
use crate::plan::Origin;
use crate::read::source::{Embed, SourceFile, Word};
use crate::release::{Release, RouterRelease};

/// The members of a group: its router, and its servers (indices into the servers read).
struct Members {
    router: Option<usize>,
    servers: Vec<usize>,
}

/// A server launch read with a release's spec, before grouping.
pub(super) struct Pre {
    /// Index into the launches.
    pub launch: usize,
    /// The word of each token of `view.tokens`.
    pub words: Arc<[Word]>,
    /// Problems with its `--config` file.
    pub problems: Vec<ConfigProblem>,
    /// What SGLang will see (no label, host or role from the material yet).
    pub view: ServerView,
}

/// The deployments in the launches: servers linked by a router, or serving the same model.
pub(super) fn build_groups(
    files: &[SourceFile],
    config_files: &[usize],
    launches: &[Launch],
    services: &[launch::Service],
    opts: &Options,
) -> Vec<Group> {
    // The release: asked for, else named by an image (the newest known one before a version
    // pdlaunch has no spec of, which a note names), else the newest.
    let named = launches.iter().find(|l| l.release.is_some()).filter(|_| opts.release.is_none());
    let release = opts.release.or(named.and_then(|l| l.release)).unwrap_or(Release::LATEST);
    let version = named.and_then(|l| l.version.clone());
    let router_release = opts.router_release.unwrap_or(RouterRelease::LATEST);
    let spec = release.spec();
    let mut servers: Vec<Pre> = Vec::new();
    let mut routers: Vec<RouterEntryInfo> = Vec::new();
    for (k, l) in launches.iter().enumerate() {
        match l.program {
            Program::Server => {
                let (mut words, problems) = config::expand(&l.args, files, config_files, spec);
                // Dynamo's SGLang worker reads its own options; SGLang parses the rest. Its
                // multimodal encoder is no SGLang server.
                if l.entry.ends_with(launch::DYNAMO_WORKER) {
                    if dynamo::is_encode_worker(&words) {
                        continue;
                    }
                    words = dynamo::sglang_words(&words, spec).into();
                } else if launch::starts_router_too(&l.entry) {
                    words = launch::without_router_options(&words).into();
                }
                let tokens: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
                let origins = origins_of(files, &words);
                let mut env = BTreeMap::new();
                env.extend(l.env.iter().cloned());
                let view = ServerView::new(String::new(), String::new(), tokens, origins, env, None, release);
                servers.push(Pre { launch: k, words, problems, view });
            }
            Program::Router => {
                let mut info = link::router_info(k, l, files, router_release);
                // A router in its own pod binds its port on no server's machine.
                if l.isolated && link::is_wildcard(&info.view.host) {
                    info.view.host =
                        format!("pod of the router ({}:{})", files[l.file].name, files[l.file].position(l.at).0);
                }
                routers.push(info);
            }
        }
    }
    for info in &mut routers {
        link::discover(info, &servers, launches, files);
        link::forward(info, &servers, launches, services);
    }
    // Link servers to routers; a server no router names joins the first group of its model.
    let scope_of = |k: usize| launches[k].scope.as_ref();
    let model_of = |v: &ServerView| v.value("model_path").unwrap_or_default();
    let mut groups: Vec<Members> =
        routers.iter().enumerate().map(|(r, _)| Members { router: Some(r), servers: Vec::new() }).collect();
    let mut linked_role: Vec<Option<Role>> = vec![None; servers.len()];
    let mut unlinked = Vec::new();
    for (s, pre) in servers.iter().enumerate() {
        match routers.iter().enumerate().find_map(|(r, info)| link::link(info, pre, launches).map(|l| (r, l))) {
            Some((r, link)) => {
                groups[r].servers.push(s);
                linked_role[s] = link.role();
            }
            None => unlinked.push(s),
        }
    }
    // An unlinked server joins the first group that has a server of its model (and scope), else
    // starts one.
    let models: Vec<String> = servers.iter().map(|pre| model_of(&pre.view)).collect();
    let mut group_of_model: FastMap<(Option<&launch::Scope>, &str), usize> = FastMap::default();
    for (g, members) in groups.iter().enumerate() {
        for &o in &members.servers {
            group_of_model.entry((scope_of(servers[o].launch), models[o].as_str())).or_insert(g);
        }
    }
    for s in unlinked {
        let key = (scope_of(servers[s].launch), models[s].as_str());
        match group_of_model.get(&key) {
            Some(&g) => groups[g].servers.push(s),
            None => {
                group_of_model.insert(key, groups.len());
                groups.push(Members { router: None, servers: vec![s] });
            }
        }
    }
    pair_lone_sides(&mut groups, &servers, launches);
    let preset = opts.model_preset.as_deref().and_then(crate::model::preset);
    let mut out = Vec::new();
    let mut routers: Vec<Option<RouterEntryInfo>> = routers.into_iter().map(Some).collect();
    for Members { router, servers: members } in groups {
        let router = router.and_then(|r| routers[r].take());
        if members.is_empty() && router.is_none() {
            continue;
        }
        // Model facts: a preset asked for, or one whose Hugging Face id is the model path.
        let model_path = members.first().map(|&s| model_of(&servers[s].view)).unwrap_or_default();
        // A served name that is a Hugging Face id is the next best hint (a local path or an alias).
        let served = members.first().and_then(|&s| servers[s].view.value("served_model_name"));
        let found = preset
            .or_else(|| crate::model::preset_for_path(&model_path))
            .or_else(|| served.as_deref().and_then(crate::model::preset_for_path));
        let model = match found {
            Some(p) => preset_facts(p),
            None => ModelFacts::default(),
        };
        let mut entries: Vec<ServerEntry> = Vec::new();
        for &s in &members {
            let pre = &mut servers[s];
            let l = &launches[pre.launch];
            let intended = pre.view.role.or_else(|| role_hint(&l.hints)).or(linked_role[s]);
            let mut view = std::mem::replace(&mut pre.view, placeholder_view(release));
            let role_for_gpu = view.role.or(intended);
            view.gpu = match role_for_gpu {
                Some(Role::Prefill) => opts.prefill_gpu,
                Some(Role::Decode) => opts.decode_gpu,
                None => None,
            }
            .or(opts.gpu)
            .or(l.gpu);
            entries.push(ServerEntry {
                launch: pre.launch,
                view,
                words: pre.words.clone(),
                intended,
                config_problems: std::mem::take(&mut pre.problems),
            });
        }
        // Prefill first, then decode, then servers of no known role; launch order within.
        let rank = |e: &ServerEntry| match e.role() {
            Some(Role::Prefill) => 0,
            Some(Role::Decode) => 1,
            None => 2,
        };
        crate::sort::sort_by_key(&mut entries, |e| (rank(e), e.launch));
        assign_instances(&mut entries, files, launches);
        for e in &mut entries {
            let l = &launches[e.launch];
            let explicit = e.view.explicit("host").filter(|h| !link::is_wildcard(h));
            let guess = router.as_ref().map(|r| link::server_host(&e.view, e.role(), &r.view));
            // A pod of a group (a LeaderWorkerSet's) is a machine of its own, whatever reaches it.
            e.view.pod = l.machine.clone().filter(|_| l.isolated);
            e.view.host = match (explicit, l.machine.as_deref().filter(|_| l.isolated)) {
                (Some(host), _) => host,
                (None, Some(pod)) => link::pod_host(&e.view, pod, guess, router.as_ref().map(|r| &r.view)),
                (None, None) => guess.unwrap_or_default(),
            };
            // Else the machine the material starts it on (an srun's node).
            if e.view.host.is_empty() {
                e.view.host = launches[e.launch].machine.clone().unwrap_or_default();
            }
        }
        assign_placeholder_machines(&mut entries, launches, files);
        let name = group_name(&entries, router.as_ref(), launches, files);
        let version = version.clone();
        out.push(Group { name, release, version, router_release, model, preset: found, servers: entries, router });
    }
    out
}

/// The machines of the servers whose host is a per-machine placeholder (`--host ${HOST_IP}`,
/// `$(hostname -i)`, `$(POD_IP)`): docs write one command per machine with one such host, so
/// equal text says nothing about sharing one. Only the material says so, in these ways:
///
/// - A pod: the containers of one pod spec share its network; other pods are other machines.
///   (A pod the material names, a LeaderWorkerSet's, is already its machine.)
/// - An `srun -w` node: the steps that name one node run on it.
/// - One script that starts commands side by side: those it starts one after another in the
///   background run on its machine. A command in the foreground ends that machine's run (the
///   next one is for another machine, or another terminal); an srun step runs on the nodes
///   Slurm gives it, not beside the script. A compose file's services all run side by side
///   on its Docker host.
/// - A split of one node's GPUs in one file: a command whose GPUs (after
///   `CUDA_VISIBLE_DEVICES` and `--base-gpu-id`) are disjoint from every GPU of an earlier
///   machine's commands, where one of them is placed off GPU 0 (as a process alone on its
///   machine would not be: `CUDA_VISIBLE_DEVICES=4,5,6,7` beside `0,1,2,3`, `--base-gpu-id 4`
///   beside 0 with 4 GPUs each), runs on that machine, in the background or not. GPU sets that
///   overlap say nothing: each machine fills them in.
///
/// Never on one machine: the nodes of one server (same role and instance, another node rank),
/// nor the copies one command makes on several nodes. The machines read from a script's order
/// are assumptions (`placeholder_assumed`): a collision they keep apart is a note.
fn assign_placeholder_machines(entries: &mut [ServerEntry], launches: &[Launch], files: &[SourceFile]) {
    let placeholder =
        |e: &ServerEntry| e.view.pod.is_none() && e.view.explicit("host").is_some_and(|h| h.contains(['$', '`']));
    let mut order: Vec<usize> = (0..entries.len()).filter(|&i| placeholder(&entries[i])).collect();
    crate::sort::sort_by_key(&mut order, |&i| entries[i].launch);
    /// A command on a machine: role, instance, node, command offset, and its GPUs.
    struct Member {
        who: (Option<Role>, usize, usize, usize),
        gpus: Vec<String>,
    }
    impl Member {
        /// True when the two can never share a machine.
        fn apart(&self, o: &Member) -> bool {
            let (a, b) = (self.who, o.who);
            (a.0 == b.0 && a.1 == b.1 && a.2 != b.2) || a.3 == b.3
        }
        /// True when its GPUs are numbered and leave GPU 0 to another process.
        fn off_zero(&self) -> bool {
            !self.gpus.is_empty() && self.gpus.iter().all(|g| g.parse::<u64>().is_ok_and(|n| n > 0))
        }
    }
    /// The machines being filled for one file and host: their members, the one the script's
    /// order fills, and whether the script went on past its last command.
    struct Runs {
        key: (usize, String),
        machines: Vec<Vec<Member>>,
        current: usize,
        open: bool,
    }
    let mut runs: Vec<Runs> = Vec::new();
    for i in order {
        let l = &launches[entries[i].launch];
        let host = entries[i].view.host.clone();
        let file = base_name(&files[l.file].name);
        let role = entries[i].role();
        let view = &mut entries[i].view;
        if l.isolated {
            let (line, _) = files[l.file].position(l.pod_at.unwrap_or(l.at));
            view.placeholder_machine = Some(format!("{host} (the pod at {file}:{line})"));
            continue;
        }
        if let Some(node) = &l.machine {
            view.placeholder_machine = Some(format!("{host} (node {node})"));
            continue;
        }
        let me = Member { who: (role, view.instance, view.node, l.at), gpus: view.gpu_ids() };
        let key = (l.file, host.clone());
        let k = match runs.iter().position(|r| r.key == key) {
            Some(k) => k,
            None => {
                runs.push(Runs { key, machines: Vec::new(), current: 0, open: false });
                runs.len() - 1
            }
        };
        let run = &mut runs[k];
        let split = |m: &[Member]| {
            !m.is_empty()
                && m.iter().all(|o| !o.apart(&me) && o.gpus.iter().all(|g| !me.gpus.contains(g)))
                && (me.off_zero() || m.iter().any(Member::off_zero))
        };
        let side_by_side = run.open && run.machines[run.current].iter().all(|o| !o.apart(&me));
        let n = if side_by_side {
            run.current
        } else if let Some(n) = (0..run.machines.len()).rev().find(|&n| split(&run.machines[n])) {
            n
        } else {
            run.machines.push(Vec::new());
            run.machines.len() - 1
        };
        run.machines[n].push(me);
        run.current = n;
        run.open = l.background;
        view.placeholder_machine = Some(format!("{host} (machine {} of {file})", n + 1));
        view.placeholder_assumed = true;
    }
}

/// Material whose only deployments without a router are one of prefill servers and one of
/// decode servers (`pdlaunch lint prefill.sh decode.sh`) is one deployment, whatever their model
/// paths say: the cross-side checks then run, and PD056 compares the paths.
fn pair_lone_sides(groups: &mut [Members], servers: &[Pre], launches: &[Launch]) {
    let role_of = |s: usize| servers[s].view.role.or_else(|| role_hint(&launches[servers[s].launch].hints));
    let lone: Vec<usize> =
        (0..groups.len()).filter(|&g| groups[g].router.is_none() && !groups[g].servers.is_empty()).collect();
    let [a, b] = lone[..] else { return };
    // One side each, and no recipe's (a recipe is a deployment of its own).
    let side = |g: usize| -> Option<Role> {
        let members = &groups[g].servers;
        if members.iter().any(|&s| launches[servers[s].launch].scope.is_some()) {
            return None;
        }
        let first = role_of(members[0])?;
        members.iter().all(|&s| role_of(s) == Some(first)).then_some(first)
    };
    match (side(a), side(b)) {
        (Some(x), Some(y)) if x != y => {
            let moved = std::mem::take(&mut groups[b].servers);
            groups[a].servers.extend(moved);
        }
        _ => {}
    }
}

/// The model facts of a built-in model, read from its `config.json` once.
fn preset_facts(p: &'static crate::model::Preset) -> ModelFacts {
    static CACHE: std::sync::OnceLock<Vec<ModelFacts>> = std::sync::OnceLock::new();
    let all = CACHE.get_or_init(|| {
        crate::model::PRESETS
            .iter()
            .map(|p| {
                let m = crate::deployment::Model { preset: Some(p.name.to_owned()), ..bare_model(p.hf_id) };
                ModelFacts::from_model(&m)
            })
            .collect()
    });
    crate::model::PRESETS.iter().position(|x| std::ptr::eq(x, p)).map_or_else(ModelFacts::default, |i| all[i].clone())
}

pub(super) fn bare_model(path: &str) -> crate::deployment::Model {
    crate::load::from_value(&serde_json::json!({ "path": path })).expect("a model with a path deserializes")
}

/// An empty view, left behind when a server's view moves into its group.
pub(super) fn placeholder_view(release: Release) -> ServerView {
    ServerView::new(String::new(), String::new(), Vec::new(), Vec::new(), BTreeMap::new(), None, release)
}

/// An instance of a rendezvous, and the explicit node ranks seen in it.
struct Instance {
    number: usize,
    ranks: Vec<usize>,
}

/// The instance and node numbers of a server.
struct InstanceNode {
    instance: usize,
    node: usize,
}

/// Instance and node numbers, and labels: multi-node servers sharing a `--dist-init-addr` are
/// one instance, numbered by `--node-rank`.
///
/// A node rank names one process of an instance, so a second server giving the same rendezvous
/// and the same explicit `--node-rank` is another instance, whose rendezvous collides with the
/// first one's (PD019 reports it): it joins the first instance of that rendezvous still lacking
/// the rank, else starts a new one. A rank that is not known (`--node-rank $RANK`) joins the
/// first instance, as a per-node template does.
fn assign_instances(entries: &mut [ServerEntry], files: &[SourceFile], launches: &[Launch]) {
    // Per role and rendezvous: the instances sharing it, each with the node ranks it has.
    let mut rendezvous: FastMap<(Option<Role>, String), Vec<Instance>> = FastMap::default();
    let mut counters: FastMap<Option<Role>, usize> = FastMap::default();
    let mut instance_of: Vec<InstanceNode> = Vec::new();
    for e in entries.iter() {
        let role = e.role();
        let multi = e.view.int("nnodes").unwrap_or(1) > 1;
        let rank = multi.then(|| e.view.int("node_rank").and_then(|n| usize::try_from(n).ok())).flatten();
        let key = multi.then(|| e.view.explicit("dist_init_addr")).flatten();
        let mut new_instance = || {
            let c = counters.entry(role).or_insert(0);
            *c += 1;
            *c - 1
        };
        let inst = match key {
            Some(k) => {
                let shared = rendezvous.entry((role, k)).or_default();
                let free = shared.iter_mut().find(|i| rank.is_none_or(|r| !i.ranks.contains(&r)));
                match free {
                    Some(i) => {
                        i.ranks.extend(rank);
                        i.number
                    }
                    None => {
                        let number = new_instance();
                        shared.push(Instance { number, ranks: rank.into_iter().collect() });
                        number
                    }
                }
            }
            None => new_instance(),
        };
        instance_of.push(InstanceNode { instance: inst, node: rank.unwrap_or(0) });
    }
    for (e, InstanceNode { instance: inst, node }) in entries.iter_mut().zip(instance_of) {
        let l = &launches[e.launch];
        let (line, _) = files[l.file].position(l.at);
        let base = base_name(&files[l.file].name);
        // A variant of a recipe file: `variant, file`.
        let variant = l.scope.as_ref().filter(|s| s.variant).and_then(|s| s.name.as_deref());
        let base = variant.map_or_else(|| base.to_owned(), |v| [v, ", ", base].concat());
        let role = match e.role() {
            Some(r) => r.as_str(),
            None => "server",
        };
        let multi = e.view.int("nnodes").unwrap_or(1) > 1;
        let node_part = if multi { [" node ", &node.to_string()].concat() } else { String::new() };
        e.view.instance = inst;
        e.view.node = node;
        // `role[inst] node N (file:line)`, joined without the cost of `format!`.
        e.view.label =
            [role, "[", &inst.to_string(), "]", &node_part, " (", &base, ":", &line.to_string(), ")"].concat();
    }
}

fn group_name(
    entries: &[ServerEntry],
    router: Option<&RouterEntryInfo>,
    launches: &[Launch],
    files: &[SourceFile],
) -> String {
    let first = entries.first().map(|e| e.launch).or(router.map(|r| r.launch));
    let Some(l) = first.map(|k| &launches[k]) else { return "lint".into() };
    // A recipe's name, else the application instance its pods' labels name (Kubernetes'
    // recommended label, which `render` writes), else the file's name.
    let instance = l
        .meta
        .as_deref()
        .and_then(|m| m.labels.iter().find(|(k, _)| k == crate::render::INSTANCE_LABEL))
        .map(|(_, v)| v);
    let stem = match l.scope.as_ref().and_then(|s| s.name.as_deref()).or(instance.map(String::as_str)) {
        Some(name) => name.to_ascii_lowercase(),
        None => stem_hint(&files[l.file].name),
    };
    let clean: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    if clean.is_empty() {
        "lint".into()
    } else {
        clean
    }
}

/// The role the names around a launch suggest (a file, object or container name).
fn role_hint(hints: &[String]) -> Option<Role> {
    // The nearest hint wins: container names come after object and file names.
    hints.iter().rev().find_map(|h| {
        let p = h.contains("prefill");
        let d = h.contains("decode");
        match (p, d) {
            (true, false) => Some(Role::Prefill),
            (false, true) => Some(Role::Decode),
            _ => None,
        }
    })
}

/// [`origin_of`] each of a command's words, whose positions follow one another.
pub(super) fn origins_of(files: &[SourceFile], words: &[Word]) -> Vec<Origin> {
    // The line of the previous word of each file (a `--config` file's words come among them).
    let mut lines: Vec<usize> = vec![0; files.len()];
    words
        .iter()
        .map(|w| {
            if w.embed == Embed::Generated {
                return Origin::Derived;
            }
            let f = &files[w.file];
            let (line, column) = f.position_after(w.start, &mut lines[w.file]);
            Origin::Source { file: f.shared_name().clone(), line, column }
        })
        .collect()
}
