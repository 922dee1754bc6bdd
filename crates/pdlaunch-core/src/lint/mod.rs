//! The linter: finds SGLang launches in what users already have (shell scripts, pasted command
//! lines, Kubernetes and compose manifests, SLURM jobs, SGLang `--config` files), reads them
//! through the same argparse simulation and flag table as `check`, groups them into deployments
//! (router links, same model), and runs the same rule registry on what SGLang will actually use,
//! pointing every finding at `file:line` of both sides.
//!
//! Pure like the rest of the core: the caller hands in texts ([`Input`]); [`lint`] returns what
//! it found; [`edit::fix_all`] returns corrected texts and [`reconstruct::deployment`] the
//! deployment a group amounts to. The CLI prints and writes; the web app can run it on pasted text.

pub mod config;
mod dynamo;
pub mod edit;
pub mod launch;
pub mod manifest;
pub mod recipe;
pub mod reconstruct;
pub mod shell;
mod terms;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::deployment::{Gpu, Role};
use crate::effective::{ModelFacts, ServerView};
use crate::fast_hash::FastMap;
use crate::plan::Origin;
use crate::read::source::{Embed, SourceFile, SrcMap, Word};
use crate::read::yaml;
use crate::release::{Release, RouterRelease};
use crate::rules::{self, Context, Finding, RouterEntry, RouterView, Severity};
use crate::spec::{parse_argv, ArgValue};
use config::ConfigProblem;
use launch::{Launch, Program, Surroundings};
use shell::Vars;

/// One text to lint.
#[derive(Clone, Debug)]
pub struct Input {
    /// The name findings use (a path, or `<stdin>`).
    pub name: String,
    /// The text.
    pub text: String,
    /// True for an SGLang `--config` file a command refers to: read only through that command.
    pub config_only: bool,
}

impl Input {
    /// A file to lint.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Input {
        Input { name: name.into(), text: text.into(), config_only: false }
    }
    /// An SGLang `--config` file, named as the command writes its path.
    pub fn config(name: impl Into<String>, text: impl Into<String>) -> Input {
        Input { name: name.into(), text: text.into(), config_only: true }
    }
}

/// What the linted material does not say.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Target SGLang release (default: a release named by a container image, else the newest).
    pub release: Option<Release>,
    /// Target router release (default: the newest).
    pub router_release: Option<RouterRelease>,
    /// GPU model of every server (overridden per side below).
    pub gpu: Option<Gpu>,
    /// GPU model of prefill servers.
    pub prefill_gpu: Option<Gpu>,
    /// GPU model of decode servers.
    pub decode_gpu: Option<Gpu>,
    /// A built-in model (`model.preset` name) when the model path is not one of them.
    pub model_preset: Option<String>,
}

/// A place a finding points at, resolved to a file position.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Place {
    /// The process (label), or `router`.
    pub process: String,
    /// The flag concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
    /// File name.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// 1-based line where the span ends.
    pub end_line: u32,
    /// 1-based column just past the span.
    pub end_column: u32,
    /// True when the flag is absent: the place is the command that lacks it.
    pub missing: bool,
}

/// A finding with its places in the files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LintFinding {
    /// The finding, as every other output shows it.
    #[serde(flatten)]
    pub finding: Finding,
    /// Index of the group (deployment) it belongs to.
    pub group: usize,
    /// The places, in the order of the finding's locations.
    pub places: Vec<Place>,
}

/// A file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReadProblem {
    /// File name.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// What is wrong.
    pub message: String,
}

/// A server of a group, with the words its tokens came from.
#[derive(Clone, Debug)]
pub struct ServerEntry {
    /// Index into [`Linted::launches`].
    pub launch: usize,
    /// What SGLang will see.
    pub view: ServerView,
    /// The word of each token of `view.tokens` (the launch's arguments, unless a `--config`
    /// file adds some).
    pub words: Arc<[Word]>,
    /// The role the material suggests when `--disaggregation-mode` does not give one.
    pub intended: Option<Role>,
    /// Problems with its `--config` file.
    pub config_problems: Vec<ConfigProblem>,
}

impl ServerEntry {
    /// Its role: the one its arguments give, else the one the material around it suggests.
    pub fn role(&self) -> Option<Role> {
        self.view.role.or(self.intended)
    }
}

/// The router of a group.
#[derive(Clone, Debug)]
pub struct RouterEntryInfo {
    /// Index into [`Linted::launches`].
    pub launch: usize,
    /// What the rules see.
    pub view: RouterView,
    /// The word of each token.
    pub words: Arc<[Word]>,
    /// Token index of the `--prefill` of each `view.prefills` entry (entries from service
    /// discovery, which follow, have none).
    pub prefill_tokens: Vec<usize>,
    /// Token index of the `--decode` of each `view.decodes` entry (entries from service
    /// discovery, which follow, have none).
    pub decode_tokens: Vec<usize>,
    /// With `--service-discovery`: the prefill and decode server launches the router registers.
    pub discovered: Option<[Vec<usize>; 2]>,
    /// With `--service-discovery`: what its selectors miss.
    pub misses: Vec<DiscoveryMiss>,
}

/// A side that a router with `--service-discovery` misses (PD049).
#[derive(Clone, Debug)]
pub struct DiscoveryMiss {
    pub role: Role,
    /// The selector, as written.
    pub selector: String,
    /// Where the selector flag is.
    pub origin: Origin,
    /// The port the router reaches every pod at.
    pub port: u16,
    /// The namespace the router watches, when it names one.
    pub namespace: Option<String>,
    /// A server launch the selector matches that listens on another port than the router's
    /// discovery port, with that port; `None` when the selector matches no server pod.
    pub server: Option<(usize, Option<u16>)>,
}

/// One deployment found in the material: servers linked by a router or serving the same model.
#[derive(Clone, Debug)]
pub struct Group {
    /// A name for it (from file or object names).
    pub name: String,
    /// The SGLang release its commands were read with.
    pub release: Release,
    /// The version the material names when no known release is that version (`release` is the
    /// newest known one before it).
    pub version: Option<String>,
    /// The router release.
    pub router_release: RouterRelease,
    /// What is known about the model.
    pub model: ModelFacts,
    /// The built-in model those facts come from: the one asked for, else the one the model path
    /// names.
    pub preset: Option<&'static crate::model::Preset>,
    /// Its servers, prefill first.
    pub servers: Vec<ServerEntry>,
    /// Its router.
    pub router: Option<RouterEntryInfo>,
}

impl Group {
    /// The rules' view of the group.
    pub fn context(&self) -> Context<'static> {
        Context {
            servers: self.servers.iter().map(|s| s.view.clone()).collect(),
            router: self.router.as_ref().map(|r| r.view.clone()),
            model: self.model.clone(),
            release: self.release,
            deployment: None,
            dropped: Vec::new(),
        }
    }
    /// The server with this label.
    pub fn server(&self, label: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|s| s.view.label == label)
    }
}

/// Everything the linter found.
#[derive(Clone, Debug)]
pub struct Linted {
    /// Every input, in order.
    pub files: Vec<SourceFile>,
    /// Every launch found.
    pub launches: Vec<Launch>,
    /// The deployments.
    pub groups: Vec<Group>,
    /// Findings, per group, errors first.
    pub findings: Vec<LintFinding>,
    /// Files that could not be read.
    pub unread: Vec<ReadProblem>,
}

impl Linted {
    /// Number of findings of a severity.
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.finding.severity == s).count()
    }
    /// True when no finding is an error.
    pub fn is_clean(&self) -> bool {
        self.count(Severity::Error) == 0
    }
}

/// Which reader a text goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Shell script, SLURM job or pasted command lines.
    Shell,
    /// YAML (Kubernetes, compose, anything with `command`/`args`).
    Yaml,
}

/// Guesses the reader from the name, then from the first significant line.
pub fn kind_of(name: &str, text: &str) -> Kind {
    let lower = name.to_ascii_lowercase();
    if [".yaml", ".yml", ".json"].iter().any(|e| lower.ends_with(e)) {
        return Kind::Yaml;
    }
    if [".sh", ".bash", ".slurm", ".sbatch", ".zsh", ".job"].iter().any(|e| lower.ends_with(e)) {
        return Kind::Shell;
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap_or("");
    if first == "---" || first.starts_with("- ") || first.starts_with('{') {
        return Kind::Yaml;
    }
    if let Some((k, rest)) = first.split_once(':') {
        let key = k.trim_matches(|c| c == '"' || c == '\'');
        if !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b))
            && (rest.is_empty() || rest.starts_with(' '))
        {
            return Kind::Yaml;
        }
    }
    Kind::Shell
}

/// GPU named by `#SBATCH --gres=gpu:h200:8`, `--constraint`, `-C` or `--partition` lines.
fn sbatch_gpu(text: &str) -> Option<Gpu> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("#SBATCH"))
        .filter(|l| ["--gres", "--gpus", "--constraint", "-C", "--partition", "-p"].iter().any(|k| l.contains(k)))
        .find_map(launch::gpu_in_text)
}

fn stem_hint(name: &str) -> String {
    let base = base_name(name);
    base.split('.').next().unwrap_or(base).to_ascii_lowercase()
}

/// A file's name without its directories.
fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Reads every input and lints what it finds.
pub fn lint(inputs: &[Input], opts: &Options) -> Linted {
    let files: Vec<SourceFile> = inputs.iter().map(|i| SourceFile::new(i.name.clone(), i.text.clone())).collect();
    let config_files: Vec<usize> = inputs.iter().enumerate().filter(|(_, i)| i.config_only).map(|(k, _)| k).collect();
    let mut launches = Vec::new();
    let mut services = Vec::new();
    let mut unread = Vec::new();
    for (idx, (input, file)) in inputs.iter().zip(&files).enumerate() {
        if input.config_only {
            continue;
        }
        read_file(idx, file, &mut launches, &mut services, &mut unread);
    }
    let mut groups = build_groups(&files, &config_files, &launches, &services, opts);
    let mut findings = Vec::new();
    for (g, group) in groups.iter_mut().enumerate() {
        let found = run_rules(group);
        findings.extend(lint_group(g, group, found, &files, &launches, &services));
    }
    Linted { files, launches, groups, findings, unread }
}

/// The `--config` paths the servers in `inputs` refer to, as written, with the index of the
/// input that refers to each: the caller reads them and lints again with [`Input::config`].
pub fn config_paths(inputs: &[Input]) -> Vec<(usize, String)> {
    let mut launches = Vec::new();
    let mut unread = Vec::new();
    for (idx, input) in inputs.iter().enumerate() {
        if !input.config_only {
            let file = SourceFile::new(input.name.clone(), input.text.clone());
            read_file(idx, &file, &mut launches, &mut Vec::new(), &mut unread);
        }
    }
    let mut out: Vec<(usize, String)> = Vec::new();
    for l in launches.iter().filter(|l| l.program == Program::Server) {
        for pair in l.args.windows(2) {
            if pair[0].text == "--config" && !pair[1].is_symbolic() && !out.iter().any(|(_, p)| *p == pair[1].text) {
                out.push((l.file, pair[1].text.clone()));
            }
        }
    }
    out
}

fn read_file(
    idx: usize,
    file: &SourceFile,
    out: &mut Vec<Launch>,
    services: &mut Vec<launch::Service>,
    unread: &mut Vec<ReadProblem>,
) {
    let around = Surroundings { hints: vec![stem_hint(&file.name)], ..Surroundings::default() };
    match kind_of(&file.name, &file.text) {
        Kind::Shell => {
            let around = Surroundings { gpu: sbatch_gpu(&file.text), ..around };
            let mut vars = Vars::default();
            launch::scan_shell(&file.text, &SrcMap::Offset(0), idx, false, &mut vars, &around, out, 0);
        }
        Kind::Yaml => match yaml::parse(&file.text) {
            Ok(docs) => {
                manifest::scan_documents(&docs, idx, &around, out);
                services.extend(manifest::services(&docs, idx));
            }
            Err(e) => {
                let (line, column) = file.position(e.offset);
                unread.push(ReadProblem {
                    file: file.name.clone(),
                    line,
                    column,
                    message: format!("not readable as YAML: {}", e.message),
                });
            }
        },
    }
}

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

fn is_wildcard(h: &str) -> bool {
    matches!(h, "0.0.0.0" | "::" | "[::]" | "")
}

/// Server launches read with a release's spec, before grouping.
struct Pre {
    launch: usize,
    words: Arc<[Word]>,
    problems: Vec<ConfigProblem>,
}

fn build_groups(
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
    let mut servers: Vec<(Pre, ServerView)> = Vec::new();
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
                }
                let tokens: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
                let origins = origins_of(files, &words);
                let mut env = BTreeMap::new();
                env.extend(l.env.iter().cloned());
                let view = ServerView::new(String::new(), String::new(), tokens, origins, env, None, release);
                servers.push((Pre { launch: k, words, problems }, view));
            }
            Program::Router => {
                let mut info = router_info(k, l, files, router_release);
                // A router in its own pod binds its port on no server's machine.
                if l.isolated && is_wildcard(&info.view.host) {
                    info.view.host =
                        format!("pod of the router ({}:{})", files[l.file].name, files[l.file].position(l.at).0);
                }
                routers.push(info);
            }
        }
    }
    for info in &mut routers {
        discover(info, &servers, launches, files);
        // An entry that names a Service reaches the pods at the port it forwards to.
        let pods = || servers.iter().filter_map(|(pre, _)| launches[pre.launch].meta.as_deref());
        for e in info.view.prefills.iter_mut().chain(&mut info.view.decodes).filter(|e| !e.discovered) {
            let target = services.iter().find(|s| s.named_by(&e.host)).and_then(|s| s.pod_port(e.port, pods()));
            e.forwarded = target.flatten().filter(|t| *t != e.port);
        }
    }
    // Link servers to routers by port (and host, when the server names one), or as discovered.
    // Linked: `Some(role)`, or `Some(None)` when entries of both kinds use the server's port.
    // A recipe's launches link and group only among themselves.
    let scope_of = |k: usize| launches[k].scope.as_ref();
    let link = |r: &RouterEntryInfo, s: &Pre, v: &ServerView| -> Option<Option<Role>> {
        if scope_of(r.launch) != scope_of(s.launch) {
            return None;
        }
        // Linked as a prefill or a decode, or `Some(None)` as both.
        let role = |prefill: bool, decode: bool| match (prefill, decode) {
            (true, false) => Some(Some(Role::Prefill)),
            (false, true) => Some(Some(Role::Decode)),
            (true, true) => Some(None),
            (false, false) => None,
        };
        if let Some([prefills, decodes]) = &r.discovered {
            return role(prefills.contains(&s.launch), decodes.contains(&s.launch));
        }
        let port = v.port()?;
        let host = v.explicit("host").filter(|h| !is_wildcard(h));
        let hit = |e: &RouterEntry| {
            e.server_port() == port && host.as_deref().is_none_or(|h| h == e.host || loopback(h) && loopback(&e.host))
        };
        role(r.view.prefills.iter().any(hit), r.view.decodes.iter().any(hit))
    };
    let model_of = |v: &ServerView| v.value("model_path").unwrap_or_default();
    // Groups as (router index, server indices).
    let mut groups: Vec<(Option<usize>, Vec<usize>)> =
        routers.iter().enumerate().map(|(r, _)| (Some(r), Vec::new())).collect();
    let mut linked_role: Vec<Option<Role>> = vec![None; servers.len()];
    let mut unlinked = Vec::new();
    for (s, (pre, v)) in servers.iter().enumerate() {
        match routers.iter().enumerate().find_map(|(r, info)| link(info, pre, v).map(|role| (r, role))) {
            Some((r, role)) => {
                groups[r].1.push(s);
                linked_role[s] = role;
            }
            None => unlinked.push(s),
        }
    }
    // An unlinked server joins the first group that has a server of its model (and scope), else
    // starts one.
    let models: Vec<String> = servers.iter().map(|(_, v)| model_of(v)).collect();
    let mut group_of_model: FastMap<(Option<&launch::Scope>, &str), usize> = FastMap::default();
    for (g, (_, members)) in groups.iter().enumerate() {
        for &o in members {
            group_of_model.entry((scope_of(servers[o].0.launch), models[o].as_str())).or_insert(g);
        }
    }
    for s in unlinked {
        let key = (scope_of(servers[s].0.launch), models[s].as_str());
        match group_of_model.get(&key) {
            Some(&g) => groups[g].1.push(s),
            None => {
                group_of_model.insert(key, groups.len());
                groups.push((None, vec![s]));
            }
        }
    }
    let preset = opts.model_preset.as_deref().and_then(crate::model::preset);
    let mut out = Vec::new();
    let mut routers: Vec<Option<RouterEntryInfo>> = routers.into_iter().map(Some).collect();
    for (router, members) in groups {
        let router = router.and_then(|r| routers[r].take());
        if members.is_empty() && router.is_none() {
            continue;
        }
        // Model facts: a preset asked for, or one whose Hugging Face id is the model path.
        let model_path = members.first().map(|&s| model_of(&servers[s].1)).unwrap_or_default();
        // A served name that is a Hugging Face id is the next best hint (a local path or an alias).
        let served = members.first().and_then(|&s| servers[s].1.value("served_model_name"));
        let found = preset
            .or_else(|| crate::model::preset_for_path(&model_path))
            .or_else(|| served.as_deref().and_then(crate::model::preset_for_path));
        let model = match found {
            Some(p) => preset_facts(p),
            None => ModelFacts::default(),
        };
        let mut entries: Vec<ServerEntry> = Vec::new();
        for &s in &members {
            let (pre, view) = &mut servers[s];
            let l = &launches[pre.launch];
            let intended = view.role.or_else(|| role_hint(&l.hints)).or(linked_role[s]);
            let mut view = std::mem::replace(view, placeholder_view(release));
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
            let explicit = e.view.explicit("host").filter(|h| !is_wildcard(h));
            let guess = router.as_ref().map(|r| server_host(&e.view, e.role(), &r.view));
            // A pod of a group (a LeaderWorkerSet's) is a machine of its own, whatever reaches it.
            e.view.pod = l.machine.clone().filter(|_| l.isolated);
            e.view.host = match (explicit, l.machine.as_deref().filter(|_| l.isolated)) {
                (Some(host), _) => host,
                (None, Some(pod)) => pod_host(&e.view, pod, guess, router.as_ref().map(|r| &r.view)),
                (None, None) => guess.unwrap_or_default(),
            };
            // Else the machine the material starts it on (an srun's node).
            if e.view.host.is_empty() {
                e.view.host = launches[e.launch].machine.clone().unwrap_or_default();
            }
        }
        let name = group_name(&entries, router.as_ref(), launches, files);
        let version = version.clone();
        out.push(Group { name, release, version, router_release, model, preset: found, servers: entries, router });
    }
    out
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

fn bare_model(path: &str) -> crate::deployment::Model {
    crate::load::from_value(&serde_json::json!({ "path": path })).expect("a model with a path deserializes")
}

/// An empty view, left behind when a server's view moves into its group.
fn placeholder_view(release: Release) -> ServerView {
    ServerView::new(String::new(), String::new(), Vec::new(), Vec::new(), BTreeMap::new(), None, release)
}

/// The address of a server in a pod with a name of its own (`<pod>.<service>`, a
/// LeaderWorkerSet's), which binds all addresses: the router's spelling of the pod's name (the
/// namespace and `svc.cluster.local` may follow it), else the router entry the port names when it
/// names the pod's Service, else the pod's name. Replicas share a port, so an entry of the port
/// that names another pod is not this one's.
fn pod_host(v: &ServerView, pod: &str, guess: Option<String>, r: Option<&RouterView>) -> String {
    let names =
        |host: &str, name: &str| host.strip_prefix(name).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
    let service = pod.split_once('.').map_or(pod, |(_, s)| s);
    let mut entries = r.into_iter().flat_map(|r| r.prefills.iter().chain(&r.decodes));
    if let Some(e) = entries.find(|e| Some(e.server_port()) == v.port() && names(&e.host, pod)) {
        return e.host.clone();
    }
    match guess {
        Some(guess) if names(&guess, service) => guess,
        _ => pod.to_owned(),
    }
}

fn loopback(h: &str) -> bool {
    h.eq_ignore_ascii_case("localhost") || h == "::1" || h.starts_with("127.")
}

/// The address peers use for a server: its concrete `--host`, else the host of the router entry
/// that names its port, else unknown.
fn server_host(v: &ServerView, role: Option<Role>, r: &RouterView) -> String {
    if let Some(h) = v.explicit("host").filter(|h| !is_wildcard(h)) {
        return h;
    }
    let Some(port) = v.port() else { return String::new() };
    if v.node != 0 {
        return String::new();
    }
    let hits: Vec<&RouterEntry> = r.prefills.iter().chain(&r.decodes).filter(|e| e.server_port() == port).collect();
    if let [one] = hits.as_slice() {
        return one.host.clone();
    }
    // Pods of both sides on one port: the entries of the server's own role decide.
    let own: &[RouterEntry] = match role {
        Some(Role::Prefill) => &r.prefills,
        Some(Role::Decode) => &r.decodes,
        None => &[],
    };
    match own.iter().filter(|e| e.server_port() == port).collect::<Vec<_>>().as_slice() {
        [one] => one.host.clone(),
        _ => String::new(),
    }
}

/// An instance number and the explicit node ranks seen in it.
type Ranks = (usize, Vec<usize>);

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
    let mut rendezvous: FastMap<(Option<Role>, String), Vec<Ranks>> = FastMap::default();
    let mut counters: FastMap<Option<Role>, usize> = FastMap::default();
    let mut instance_of: Vec<(usize, usize)> = Vec::new();
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
                let free = shared.iter_mut().find(|(_, ranks)| rank.is_none_or(|r| !ranks.contains(&r)));
                match free {
                    Some((inst, ranks)) => {
                        ranks.extend(rank);
                        *inst
                    }
                    None => {
                        let inst = new_instance();
                        shared.push((inst, rank.into_iter().collect()));
                        inst
                    }
                }
            }
            None => new_instance(),
        };
        instance_of.push((inst, rank.unwrap_or(0)));
    }
    for (e, (inst, node)) in entries.iter_mut().zip(instance_of) {
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

/// The `Origin::Source` of a word.
pub fn origin_of(files: &[SourceFile], w: &Word) -> Origin {
    if w.embed == Embed::Generated {
        return Origin::Derived;
    }
    let f = &files[w.file];
    let (line, column) = f.position(w.start);
    Origin::Source { file: f.shared_name().clone(), line, column }
}

/// [`origin_of`] each of a command's words, whose positions follow one another.
fn origins_of(files: &[SourceFile], words: &[Word]) -> Vec<Origin> {
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

fn router_info(k: usize, l: &Launch, files: &[SourceFile], release: RouterRelease) -> RouterEntryInfo {
    let tokens: Vec<String> = l.args.iter().map(|w| w.text.clone()).collect();
    let origins = origins_of(files, &l.args);
    let parsed = parse_argv(release.spec(), &tokens);
    let mut prefills = Vec::new();
    let mut decodes = Vec::new();
    let mut prefill_tokens = Vec::new();
    let mut decode_tokens = Vec::new();
    for u in &parsed.uses {
        let ArgValue::Many(groups) = &u.value else { continue };
        let Some(last) = groups.last() else { continue };
        let mut parts = last.split('\t');
        let url = parts.next().unwrap_or("");
        let (host, port) = rules::split_url(url).unwrap_or_default();
        let origin = origins.get(u.index).cloned().unwrap_or(Origin::Derived);
        match u.dest {
            "prefill" => {
                let bootstrap = parts.next().and_then(|p| p.parse::<u16>().ok());
                prefills.push(RouterEntry {
                    host,
                    port,
                    bootstrap_port: bootstrap,
                    origin,
                    discovered: false,
                    forwarded: None,
                });
                prefill_tokens.push(u.index);
            }
            "decode" => {
                decodes.push(RouterEntry {
                    host,
                    port,
                    bootstrap_port: None,
                    origin,
                    discovered: false,
                    forwarded: None,
                });
                decode_tokens.push(u.index);
            }
            _ => {}
        }
    }
    let value = |dest: &str| {
        parsed.get(dest).map(ArgValue::as_text).or_else(|| release.spec().default_text(dest).map(str::to_owned))
    };
    let view = RouterView {
        host: value("host").unwrap_or_else(|| "0.0.0.0".into()),
        port: value("port").and_then(|p| p.parse().ok()).unwrap_or(30000),
        prefills,
        decodes,
        tokens,
        parsed,
        origins,
        release,
    };
    RouterEntryInfo {
        launch: k,
        view,
        words: l.args.clone(),
        prefill_tokens,
        decode_tokens,
        discovered: None,
        misses: Vec::new(),
    }
}

/// The servers a router with `--service-discovery` registers: each server pod its prefill or
/// decode selector matches (in its namespace, when it names one) is an entry at the discovery
/// port, a prefill's with the bootstrap port its pod's annotation gives, and is linked to the
/// router. A selector that matches no pod, and a server that listens on another port, are
/// misses (PD049).
fn discover(info: &mut RouterEntryInfo, servers: &[(Pre, ServerView)], launches: &[Launch], files: &[SourceFile]) {
    let view = &mut info.view;
    if !matches!(view.parsed.get("service_discovery"), Some(ArgValue::Switch(true))) {
        return;
    }
    let value = |dest: &str| {
        view.parsed
            .get(dest)
            .map(ArgValue::as_text)
            .or_else(|| view.release.spec().default_text(dest).map(str::to_owned))
    };
    let port: u16 = value("service_discovery_port").and_then(|p| p.parse().ok()).unwrap_or(80);
    // A namespace the pod's environment gives (`$(POD_NAMESPACE)`) is not known here.
    let namespace = value("service_discovery_namespace").filter(|n| !n.contains('$'));
    let mut linked = [Vec::new(), Vec::new()];
    let mut found = [Vec::new(), Vec::new()];
    for (role, dest) in [(Role::Prefill, "prefill_selector"), (Role::Decode, "decode_selector")] {
        let Some(u) = view.parsed.last_use(dest) else { continue };
        let selector: Vec<String> = match &u.value {
            ArgValue::Many(v) => v.clone(),
            other => vec![other.as_text()],
        };
        let origin = view.origins.get(u.index).cloned().unwrap_or(Origin::Derived);
        let miss = |server| DiscoveryMiss {
            role,
            selector: selector.join(" "),
            origin: origin.clone(),
            port,
            namespace: namespace.clone(),
            server,
        };
        let (mut matched, mut labelled) = (false, false);
        for (pre, v) in servers {
            let l = &launches[pre.launch];
            let Some(meta) = l.meta.as_deref().filter(|m| m.pod) else { continue };
            labelled = true;
            let elsewhere = namespace.as_deref().is_some_and(|n| meta.namespace.as_deref().is_some_and(|m| m != n));
            if elsewhere || !meta.matches(&selector) || l.scope.is_some() {
                continue;
            }
            let f = &files[l.file];
            let host = l
                .machine
                .clone()
                .unwrap_or_else(|| format!("pod of {role} ({}:{})", base_name(&f.name), f.position(l.at).0));
            let bootstrap = meta.annotation(crate::render::BOOTSTRAP_ANNOTATION).and_then(|b| b.trim().parse().ok());
            let bootstrap_port = bootstrap.filter(|_| role == Role::Prefill);
            found[role as usize].push(RouterEntry {
                host,
                port,
                bootstrap_port,
                origin: origin.clone(),
                discovered: true,
                forwarded: None,
            });
            matched = true;
            linked[role as usize].push(pre.launch);
            if v.port() != Some(port) {
                info.misses.push(miss(Some((pre.launch, v.port()))));
            }
        }
        // Pods an operator makes get labels the material does not show.
        if !matched && labelled {
            info.misses.push(miss(None));
        }
    }
    let [prefills, decodes] = found;
    view.prefills.extend(prefills);
    view.decodes.extend(decodes);
    info.discovered = Some(linked);
}

/// Position key of a word: (file name, line, column).
type PosKey = (Arc<str>, u32, u32);

/// Runs the registry on a group, lending it the group's views (no copies).
fn run_rules(group: &mut Group) -> Vec<Finding> {
    let servers: Vec<ServerView> =
        group.servers.iter_mut().map(|s| std::mem::replace(&mut s.view, placeholder_view(group.release))).collect();
    let router = group.router.as_mut().map(|r| {
        let release = r.view.release;
        std::mem::replace(&mut r.view, placeholder_router(release))
    });
    let ctx = Context {
        servers,
        router,
        model: group.model.clone(),
        release: group.release,
        deployment: None,
        dropped: Vec::new(),
    };
    let mut findings = rules::run(&ctx);
    for f in &mut findings {
        if let Cow::Owned(m) = terms::in_flag_terms(&f.message) {
            f.message = m;
        }
        if let Cow::Owned(fix) = terms::in_flag_terms(&f.fix) {
            f.fix = fix;
        }
    }
    let Context { servers, router, .. } = ctx;
    for (s, v) in group.servers.iter_mut().zip(servers) {
        s.view = v;
    }
    if let (Some(r), Some(v)) = (group.router.as_mut(), router) {
        r.view = v;
    }
    findings
}

fn placeholder_router(release: RouterRelease) -> RouterView {
    RouterView {
        host: String::new(),
        port: 0,
        prefills: Vec::new(),
        decodes: Vec::new(),
        tokens: Vec::new(),
        parsed: Default::default(),
        origins: Vec::new(),
        release,
    }
}

fn lint_group(
    g: usize,
    group: &Group,
    mut findings: Vec<Finding>,
    files: &[SourceFile],
    launches: &[Launch],
    services: &[launch::Service],
) -> Vec<LintFinding> {
    let mut extra: Vec<Finding> = Vec::new();

    // Values only known at run time: findings that read them are not trustworthy.
    let mut symbolic_dests: Vec<(String, String, String)> = Vec::new(); // (label, dest, raw)
    let mut symbolic_pos: FastMap<PosKey, (String, String)> = FastMap::default(); // pos -> (label, raw)
    let mut opaque: Vec<(String, Word)> = Vec::new();
    for s in group.servers.iter().filter(|s| s.words.iter().any(Word::is_symbolic)) {
        collect_symbolic(&s.view.label, &s.view, &s.words, files, &mut symbolic_dests, &mut symbolic_pos, &mut opaque);
    }
    if let Some(r) = &group.router {
        let spec = r.view.release.spec();
        for (i, w) in r.words.iter().enumerate() {
            if w.is_symbolic() {
                let key = pos_key(files, w);
                symbolic_pos.insert(key, ("router".into(), w.text.clone()));
                if let Some(prev) = i.checked_sub(1).and_then(|p| r.words.get(p)) {
                    symbolic_pos.insert(pos_key(files, prev), ("router".into(), w.text.clone()));
                    if let Ok(f) = spec.resolve(prev.text.split('=').next().unwrap_or("")) {
                        symbolic_dests.push(("router".into(), f.dest.clone(), w.text.clone()));
                    }
                }
            }
        }
    }
    let mut suppressed: Vec<(String, String, Vec<&'static str>)> = Vec::new(); // (label, raw, codes)
    let any_symbolic = !symbolic_pos.is_empty() || !symbolic_dests.is_empty();
    findings.retain(|f| {
        if !any_symbolic {
            return true;
        }
        let hit = f.locations.iter().find_map(|loc| {
            if let Origin::Source { file, line, column } = &loc.origin {
                if let Some((label, raw)) = symbolic_pos.get(&(file.clone(), *line, *column)) {
                    return Some((label.clone(), raw.clone()));
                }
            }
            let flag = loc.flag.as_deref()?;
            let dest = group
                .server(&loc.process)
                .and_then(|s| s.view.spec().resolve(flag).ok().map(|x| x.dest.clone()))
                .or_else(|| (loc.process == "router").then(|| flag.trim_start_matches('-').replace('-', "_")))?;
            symbolic_dests
                .iter()
                .find(|(l, d, _)| *l == loc.process && *d == dest)
                .map(|(l, _, raw)| (l.clone(), raw.clone()))
        });
        match hit {
            Some((label, raw)) => {
                match suppressed.iter_mut().find(|(l, r, _)| *l == label && *r == raw) {
                    Some((_, _, codes)) => {
                        if !codes.contains(&f.code) {
                            codes.push(f.code);
                        }
                    }
                    None => suppressed.push((label, raw, vec![f.code])),
                }
                false
            }
            None => true,
        }
    });
    // srun starting a multi-node server with one node rank on every node (PD047), in place of
    // the note that its rank variable is unknown.
    for s in &group.servers {
        let Some(same) = &launches[s.launch].srun_same_rank else { continue };
        let label = &s.view.label;
        let rank_word = same.var.as_ref().and_then(|v| s.words.iter().find(|w| w.unknown.contains(v)));
        let f = match (&same.var, rank_word) {
            (Some(var), Some(w)) => {
                suppressed.retain(|(l, raw, _)| !(l == label && raw == var));
                rules::pd047(label, same.nodes, rules::SameRank::Expanded(var), origin_of(files, w))
            }
            _ => {
                let rank = s.view.explicit("node_rank").unwrap_or_else(|| "0".to_owned());
                let l = &launches[s.launch];
                let (line, column) = files[l.file].position(l.at);
                let origin = Origin::Source { file: files[l.file].shared_name().clone(), line, column };
                rules::pd047(label, same.nodes, rules::SameRank::Literal(&rank), origin)
            }
        };
        extra.push(f);
    }
    let unknown_rule = &rules::PD044;
    for (label, raw, codes) in &suppressed {
        let names: Vec<String> =
            codes.iter().map(|c| format!("{c} ({})", rules::rule(c).map_or("", |r| r.name))).collect();
        let message = format!(
            "{label}: `{raw}` is only known when the process starts, so {} could not be checked",
            names.join(", ")
        );
        let fix =
            format!("write the value of `{raw}` literally (or define it in the same script) so that it can be checked");
        let mut f = Finding::new(unknown_rule, message, fix);
        if let Some((w, file)) = find_raw_word(group, label, raw).map(|w| (w.clone(), w.file)) {
            let _ = file;
            f = f.at_origin(label.clone(), None, origin_of(files, &w));
        }
        extra.push(f);
    }
    for (label, w) in &opaque {
        if suppressed.iter().any(|(l, r, _)| l == label && *r == w.text) {
            continue;
        }
        let message = format!(
            "{label}: `{}` stands for arguments only known when the process starts; settings it holds are not checked",
            w.text
        );
        let fix = "write the arguments out (or define the variable in the same script) so that they can be checked";
        extra.push(Finding::new(unknown_rule, message, fix).at_origin(label.clone(), None, origin_of(files, w)));
    }

    // `--config` files.
    let config_rule = &rules::PD043;
    let mut config_keys: Vec<PosKey> = Vec::new();
    for s in &group.servers {
        for p in &s.config_problems {
            let label = s.view.label.clone();
            let f = match p {
                ConfigProblem::NotGiven { path, at } => Finding::new(
                    unknown_rule,
                    format!("{label}: the --config file `{path}` was not given to the linter, so its settings are not checked"),
                    format!("lint it together with its config file: `pdlaunch lint {} {path}`", files[at.file].name),
                )
                .at_origin(label, Some("--config"), origin_of(files, at)),
                ConfigProblem::Multiple { at } => {
                    let mut f = Finding::new(config_rule, format!("{label}: `--config` is given more than once"), "pass a single `--config FILE`");
                    f.sglang_error = Some("Multiple config files specified! Only one allowed.");
                    f.at_origin(label, Some("--config"), origin_of(files, at))
                }
                ConfigProblem::NoPath { at } => {
                    let mut f = Finding::new(config_rule, format!("{label}: `--config` is not followed by a path"), "write the YAML file's path after `--config`");
                    f.sglang_error = Some("No config file specified after --config flag!");
                    f.at_origin(label, Some("--config"), origin_of(files, at))
                }
                ConfigProblem::NotYaml { path, at } => {
                    let mut f = Finding::new(
                        config_rule,
                        format!("{label}: the --config file `{path}` is not a `.yaml`/`.yml` file, which SGLang refuses"),
                        "rename the file to `.yaml` (YAML also reads JSON)",
                    );
                    f.sglang_error = Some("Config file must be YAML format, got: {suffix}");
                    f.at_origin(label, Some("--config"), origin_of(files, at))
                }
                ConfigProblem::Unreadable { path, message, at } => Finding::new(
                    config_rule,
                    format!("{label}: the --config file `{path}` cannot be read: {message}"),
                    "make the file a YAML mapping of option names (without `--`) to values",
                )
                .at_origin(label, Some("--config"), origin_of(files, at)),
                ConfigProblem::Underscore { key, dashed } => {
                    config_keys.push(pos_key(files, key));
                    let mut f = Finding::new(
                        config_rule,
                        format!(
                            "{label}: the --config key `{}` has underscores: SGLang passes it as `{}`, which argparse rejects",
                            key.text.trim_start_matches("--"),
                            key.text
                        ),
                        format!("write the key as `{}`", dashed.trim_start_matches("--")),
                    );
                    f.sglang_error = Some("{prog}: error: unrecognized arguments: {args}");
                    f.at_origin(label, Some(&key.text), origin_of(files, key))
                }
                ConfigProblem::Unsupported { key, action } => {
                    let mut f = Finding::new(
                        config_rule,
                        format!(
                            "{label}: the --config key `{}` is a `{action}` option, which SGLang's config loader refuses",
                            key.text.trim_start_matches("--")
                        ),
                        "pass this option on the command line instead, or use its non-deprecated replacement in the file",
                    );
                    f.sglang_error = Some("Unsupported config option '{key}' with action '{ActionClass}'");
                    f.at_origin(label, Some(&key.text), origin_of(files, key))
                }
            };
            extra.push(f);
        }
    }
    // An underscore key is PD043's; do not report it again as an unknown option.
    findings.retain(|f| {
        !(f.code == "PD024"
            && f.locations.iter().any(|l| matches!(&l.origin, Origin::Source { file, line, column } if config_keys.contains(&(file.clone(), *line, *column)))))
    });

    // No prefill-decode evidence at all: a plain server is not PD drift.
    let pd_evidence = group.servers.iter().any(|s| s.view.role.is_some() || s.intended.is_some())
        || group.router.as_ref().is_some_and(|r| !r.view.prefills.is_empty() || !r.view.decodes.is_empty());
    if let Some(v) = &group.version {
        // An option the release read lacks but the next known one has may well be the version's.
        if let Some(next) = group.release.next() {
            let maybe = |f: &Finding| {
                let token = f.locations.first().and_then(|l| l.flag.as_deref()).unwrap_or("");
                let name = token.split('=').next().unwrap_or("");
                group.release.spec().resolve(name).is_err() && next.spec().get(name).is_some()
            };
            for f in findings.iter_mut().filter(|f| f.code == "PD024" && maybe(f)) {
                f.severity = Severity::Note;
                f.message.push_str(&format!("; {v} lies between {} and {next}, which has it", group.release));
            }
        }
        let message = format!(
            "the material names SGLang {v}, a release pdlaunch has no argparse spec of: arguments are read with \
             {}, the newest known release before it, so an option added since may be reported as unknown",
            group.release
        );
        let fix = "name the release to check against: `--sglang-version` on the command line (\"SGLang release\" \
                   in the app), one of the known releases (`pdlaunch lint --help`)";
        extra.push(Finding::new(&rules::PD024, message, fix).severity(Severity::Note));
    }
    if let Some(r) = &group.router {
        extra.extend(r.misses.iter().map(|m| discovery_miss(m, group, files, launches)));
        extra.extend(prefill_pods_behind_one_address(r, group, launches));
        let (found, translated) = service_bootstrap_ports(r, group, files, launches, services);
        extra.extend(found);
        // A Service that forwards the decodes' port to the one the prefill binds links them.
        findings
            .retain(|f| !(f.code == "PD017" && f.locations.first().is_some_and(|l| translated.contains(&l.origin))));
    }
    let pair_rule = &rules::PD045;
    if !pd_evidence {
        findings.retain(|f| f.code != "PD037");
        let labels: Vec<&str> = group.servers.iter().map(|s| s.view.label.as_str()).collect();
        if !labels.is_empty() {
            extra.push(Finding::new(
                pair_rule,
                format!("{}: no `--disaggregation-mode`, router or prefill/decode naming: not a PD deployment, cross-side checks skipped", labels.join(", ")),
                "add `--disaggregation-mode prefill|decode` to the servers meant for PD",
            ));
        }
    } else {
        let has = |r: Role| group.servers.iter().any(|s| s.view.role == Some(r));
        let missing: Vec<&str> = Role::BOTH.iter().filter(|r| !has(**r)).map(|r| r.as_str()).collect();
        if !missing.is_empty() && !group.servers.is_empty() {
            let present: Vec<&str> = group.servers.iter().map(|s| s.view.label.as_str()).collect();
            extra.push(Finding::new(
                pair_rule,
                format!(
                    "no {} server found next to {}: prefill/decode comparisons were skipped",
                    missing.join(" or "),
                    present.join(", ")
                ),
                "lint the files of both sides together (e.g. `pdlaunch lint prefill.sh decode.sh router.sh`)",
            ));
        } else if group.servers.is_empty() {
            extra.push(Finding::new(
                pair_rule,
                "router found without any of its servers: links to prefill and decode were not checked".to_owned(),
                "lint the router together with the servers' scripts or manifests",
            ));
        }
    }
    findings.extend(extra);
    crate::sort::sort_by(&mut findings, |a, b| a.severity.cmp(&b.severity).then(a.code.cmp(b.code)));
    let locator = Locator::new(group, files);
    merge_same_places(
        findings
            .into_iter()
            .map(|f| LintFinding { places: places(&f, &locator, files, launches), group: g, finding: f })
            .collect(),
    )
}

/// PD049: what a discovering router's selector misses.
fn discovery_miss(m: &DiscoveryMiss, group: &Group, files: &[SourceFile], launches: &[Launch]) -> Finding {
    let flag = format!("--{}-selector", m.role);
    let within = m.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
    let at_router = |f: Finding| f.at_origin("router", Some(&flag), m.origin.clone());
    let Some((launch, listens)) = m.server else {
        let message = format!(
            "the router's `{flag} {}` matches no {} server pod{within}: the router has no {} server, so every request \
             fails",
            m.selector, m.role, m.role
        );
        let fix = format!(
            "give the {} pod template the labels `{}`{within}, or select the labels it has",
            m.role, m.selector
        );
        return at_router(Finding::new(&rules::PD049, message, fix));
    };
    let port = m.port;
    let server = group.servers.iter().find(|s| s.launch == launch);
    let label = server.map_or_else(
        || {
            let f = &files[launches[launch].file];
            format!("the {} at {}:{}", m.role, base_name(&f.name), f.position(launches[launch].at).0)
        },
        |s| s.view.label.clone(),
    );
    let message = format!(
        "the router reaches {label}, which its `{flag}` selects, at `--service-discovery-port {port}`, but it listens on \
         {}: the router's requests and health checks reach nothing there",
        listens.map_or_else(|| "no known port".to_owned(), |p| p.to_string())
    );
    let fix = format!(
        "give every server `--port {port}`, or the router the servers' port: it reaches the pods of both sides at one \
         port"
    );
    let f = at_router(Finding::new(&rules::PD049, message, fix));
    match server {
        Some(s) => f.at(&s.view, "port"),
        None => f,
    }
}

/// The prefill servers (their node 0) that a router entry names: at its host, listening on the
/// port it reaches them at.
fn prefills_at<'g>(group: &'g Group, e: &'g RouterEntry) -> impl Iterator<Item = &'g ServerEntry> {
    group.servers.iter().filter(move |s| {
        s.role() == Some(Role::Prefill)
            && s.view.node == 0
            && s.view.port() == Some(e.server_port())
            && s.view.host.eq_ignore_ascii_case(&e.host)
    })
}

/// PD051: the router's prefill entries that reach several prefill pods through one address: the
/// replicas of one Deployment or StatefulSet behind a Service, or the leaders of the groups of one
/// LeaderWorkerSet behind its Service. An entry that names a pod (a StatefulSet's `<name>-<i>`) or
/// an IP address reaches one.
fn prefill_pods_behind_one_address(r: &RouterEntryInfo, group: &Group, launches: &[Launch]) -> Vec<Finding> {
    let mut out = Vec::new();
    let report = |e: &RouterEntry, pods: u32, what: String, servers: &[&ServerEntry]| {
        let message = format!(
            "router entry `{}` reaches {pods} prefill pods through one address ({what}): the decode fetches the \
             bootstrap information there once and keeps the pod that answered, so the requests the router sends \
             to the other pods wait for KV destinations that never come, and time out",
            e.prefill_flag()
        );
        let fix = "list each prefill pod at an address of its own (a StatefulSet pod's or a LeaderWorkerSet \
                   leader's name), or let the router discover them (`--service-discovery` with a \
                   `--prefill-selector`)";
        let f = Finding::new(&rules::PD051, message, fix).at_origin("router", Some("--prefill"), e.origin.clone());
        servers.iter().fold(f, |f, s| f.at(&s.view, "port"))
    };
    for e in r.view.prefills.iter().filter(|e| !e.discovered && !crate::plan::is_ip_literal(&e.host)) {
        let behind: Vec<&ServerEntry> = prefills_at(group, e).filter(|s| launches[s.launch].isolated).collect();
        // One server that stands for the replicas of its object, one instance per `--nnodes` pods.
        for &s in behind.iter().filter(|s| s.view.pod.is_none()) {
            let Some(meta) = launches[s.launch].meta.as_deref() else { continue };
            let pods = meta.replicas.unwrap_or(1) / s.view.size("nnodes").max(1);
            let names_a_pod = meta.owner.as_deref().is_some_and(|owner| {
                let first = e.host.split('.').next().unwrap_or_default();
                first
                    .strip_prefix(owner)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
            });
            if pods >= 2 && !names_a_pod {
                out.push(report(e, pods, format!("the {pods} replicas of {}", s.view.label), &[s]));
            }
        }
        // The leaders of several groups, each in its own pod, that the entry's Service reaches.
        let leaders: Vec<&ServerEntry> = behind.into_iter().filter(|s| s.view.pod.is_some()).collect();
        if leaders.len() >= 2 {
            let labels: Vec<&str> = leaders.iter().map(|s| s.view.label.as_str()).collect();
            let what = format!("the leaders of {}", labels.join(", "));
            out.push(report(e, leaders.len() as u32, what, &leaders));
        }
    }
    out
}

/// A router's prefill entries that name a Service of the material, which stands between the
/// decodes and the prefill's bootstrap server: PD017 where it exposes no port for the bootstrap
/// port the decodes get, or forwards it to another pod port than the prefill binds; and the
/// origins of the entries whose Service forwards that port to another one, the one the prefill
/// binds (the rule, which knows no Services, compares the two ports).
fn service_bootstrap_ports(
    r: &RouterEntryInfo,
    group: &Group,
    files: &[SourceFile],
    launches: &[Launch],
    services: &[launch::Service],
) -> (Vec<Finding>, Vec<Origin>) {
    let mut out = Vec::new();
    let mut translated = Vec::new();
    let decode_fallback =
        group.servers.iter().find(|s| s.role() == Some(Role::Decode)).and_then(|s| s.view.bootstrap_port());
    for e in r.view.prefills.iter().filter(|e| !e.discovered) {
        let Some(service) = services.iter().find(|s| !s.headless && s.named_by(&e.host)) else { continue };
        // Where the decodes connect: the port after the URL, else their own bootstrap port.
        let Some(port) = e.bootstrap_port.or(decode_fallback) else { continue };
        let prefill = prefills_at(group, e).next();
        let bound = prefill.and_then(|p| p.view.bootstrap_port());
        let pods = group.servers.iter().filter_map(|s| launches[s.launch].meta.as_deref());
        let problem = match (service.pod_port(port, pods), bound) {
            (None, _) => format!("Service `{}` exposes no port {port}", service.name),
            (Some(Some(target)), Some(bound)) if target == bound && port != bound => {
                translated.push(e.origin.clone());
                continue;
            }
            // A port forwarded as is to another than the prefill binds is the rule's finding.
            (Some(Some(target)), Some(bound)) if target != bound && port == bound => format!(
                "Service `{}` forwards port {port} to pod port {target}, and {} binds its bootstrap server on {bound}",
                service.name,
                prefill.map_or("", |p| p.view.label.as_str())
            ),
            _ => continue,
        };
        let message = format!(
            "router entry `{}` sends decodes to {} for the prefill's bootstrap information, but {problem}: they cannot \
             fetch it, so every request fails",
            e.prefill_flag(),
            crate::plan::host_port(&e.host, port)
        );
        let fix = format!(
            "give Service `{}` the port `{{name: bootstrap, port: {port}, targetPort: {}}}`",
            service.name,
            bound.unwrap_or(port)
        );
        let f = &files[service.file];
        let (line, column) = f.position(service.at);
        let at = Origin::Source { file: f.shared_name().clone(), line, column };
        out.push(
            Finding::new(&rules::PD017, message, fix)
                .at_origin("router", Some("--prefill"), e.origin.clone())
                .at_origin(format!("Service {}", service.name), Some("ports"), at),
        );
    }
    (out, translated)
}

/// Findings of one rule at the very same places are one finding: servers that one written
/// command starts (a recipe's workers, a template's pods) are compared pair by pair, and every
/// pair points at the same lines, which one edit fixes. The first stays and says how many more
/// it stands for.
fn merge_same_places(found: Vec<LintFinding>) -> Vec<LintFinding> {
    type Key<'a> = (&'a str, Vec<(&'a str, u32, u32, u32, u32, bool, Option<&'a str>)>);
    fn key(f: &LintFinding) -> Key<'_> {
        let places = f
            .places
            .iter()
            .map(|p| (p.file.as_str(), p.line, p.column, p.end_line, p.end_column, p.missing, p.flag.as_deref()));
        (f.finding.code, places.collect())
    }
    let mut first: FastMap<u64, Vec<usize>> = FastMap::default();
    let mut more = vec![0usize; found.len()];
    let mut keep = vec![true; found.len()];
    for (i, f) in found.iter().enumerate() {
        if f.places.is_empty() {
            continue;
        }
        let k = key(f);
        let seen = first.entry(crate::fast_hash::hash_one(&k)).or_default();
        match seen.iter().find(|&&j| key(&found[j]) == k) {
            Some(&j) => {
                more[j] += 1;
                keep[i] = false;
            }
            None => seen.push(i),
        }
    }
    let mut out = Vec::with_capacity(found.len());
    for (i, mut f) in found.into_iter().enumerate() {
        if keep[i] {
            if more[i] > 0 {
                f.finding.message.push_str(&format!(" (and {} more like it at the same places)", more[i]));
            }
            out.push(f);
        }
    }
    out
}

fn pos_key(files: &[SourceFile], w: &Word) -> PosKey {
    let (l, c) = files[w.file].position(w.start);
    (files[w.file].shared_name().clone(), l, c)
}

fn find_raw_word<'a>(group: &'a Group, label: &str, raw: &str) -> Option<&'a Word> {
    let words: &[Word] = if label == "router" {
        group.router.as_ref().map_or(&[], |r| &r.words)
    } else {
        group.server(label).map_or(&[], |s| &s.words)
    };
    words.iter().find(|w| w.text == raw)
}

#[allow(clippy::too_many_arguments)]
fn collect_symbolic(
    label: &str,
    view: &ServerView,
    words: &[Word],
    files: &[SourceFile],
    dests: &mut Vec<(String, String, String)>,
    positions: &mut FastMap<PosKey, (String, String)>,
    opaque: &mut Vec<(String, Word)>,
) {
    let spec = view.spec();
    for (i, w) in words.iter().enumerate() {
        if !w.is_symbolic() {
            continue;
        }
        positions.insert(pos_key(files, w), (label.to_owned(), w.text.clone()));
        // The option this value belongs to: the nearest option token before it.
        let owner = (0..=i).rev().find(|&k| words[k].text.starts_with("--"));
        match owner {
            Some(k) if k == i && w.text.contains('=') => {
                if let Ok(f) = spec.resolve(w.text.split('=').next().unwrap_or("")) {
                    dests.push((label.to_owned(), f.dest.clone(), w.text.clone()));
                }
            }
            Some(k) if k < i => {
                positions.insert(pos_key(files, &words[k]), (label.to_owned(), w.text.clone()));
                let name = words[k].text.split('=').next().unwrap_or("");
                match spec.resolve(name) {
                    Ok(f) if f.arity() != crate::spec::Arity::Zero && i - k <= 8 => {
                        dests.push((label.to_owned(), f.dest.clone(), w.text.clone()));
                    }
                    _ => opaque.push((label.to_owned(), w.clone())),
                }
            }
            _ => opaque.push((label.to_owned(), w.clone())),
        }
    }
}

/// Where a group's processes and words are, read once for all its findings (a finding may name
/// every server of a large group).
struct Locator<'g> {
    group: &'g Group,
    files: &'g [SourceFile],
    /// The launch of each process label (`router` for the router).
    launches: FastMap<&'g str, usize>,
    /// The end of the word that starts at each position (the last such word, as a later one
    /// repeats an earlier one's text), read at the first question.
    ends: std::cell::OnceCell<FastMap<PosKey, (u32, u32)>>,
}

impl<'g> Locator<'g> {
    fn new(group: &'g Group, files: &'g [SourceFile]) -> Locator<'g> {
        let mut launches: FastMap<&str, usize> = FastMap::default();
        for s in &group.servers {
            launches.entry(s.view.label.as_str()).or_insert(s.launch);
        }
        if let Some(r) = &group.router {
            launches.insert("router", r.launch);
        }
        Locator { group, files, launches, ends: std::cell::OnceCell::new() }
    }

    /// Where the word that starts at `key` ends.
    fn end(&self, key: &PosKey) -> Option<(u32, u32)> {
        let ends = self.ends.get_or_init(|| {
            let (g, files) = (self.group, self.files);
            let words =
                g.servers.iter().flat_map(|s| s.words.iter()).chain(g.router.iter().flat_map(|r| r.words.iter()));
            words.map(|w| (pos_key(files, w), files[w.file].position(w.end))).collect()
        });
        ends.get(key).copied()
    }
}

fn places(f: &Finding, locator: &Locator, files: &[SourceFile], launches: &[Launch]) -> Vec<Place> {
    let mut out: Vec<Place> = Vec::new();
    for loc in &f.locations {
        let place = match &loc.origin {
            Origin::Source { file, line, column } => {
                let (end_line, end_column) =
                    locator.end(&(file.clone(), *line, *column)).unwrap_or((*line, *column + 1));
                Place {
                    process: loc.process.clone(),
                    flag: loc.flag.clone(),
                    file: file.to_string(),
                    line: *line,
                    column: *column,
                    end_line,
                    end_column,
                    missing: false,
                }
            }
            Origin::Default | Origin::Derived | Origin::Field { .. } => {
                let Some(l) = locator.launches.get(loc.process.as_str()).map(|&k| &launches[k]) else { continue };
                let file = &files[l.file];
                let (line, column) = file.position(l.at);
                let (end_line, end_column) = file.position(l.at + l.entry.split(' ').next().map_or(1, str::len));
                Place {
                    process: loc.process.clone(),
                    flag: loc.flag.clone(),
                    file: file.name.clone(),
                    line,
                    column,
                    end_line,
                    end_column,
                    missing: loc.flag.is_some() && loc.origin == Origin::Default,
                }
            }
        };
        out.push(place);
    }
    crate::fast_hash::unique_by(out, |p| crate::fast_hash::hash_one(p), PartialEq::eq)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod proptests;
