//! Finding SGLang launches in commands: `python[3] -m sglang.launch_server`, `sglang serve`,
//! Dynamo's SGLang workers over its releases, `python -m sglang_router.launch_server` and
//! `smg server` (servers with a router), `python -m sglang_router.launch_router` (and the
//! router's `smg launch`), behind any wrapper (`exec`, `nohup`, `env`, `srun`, `numactl`,
//! `timeout`, `nsys profile`, `docker run … IMAGE python3 -m …`, `docker run --entrypoint python3
//! IMAGE -m …`, `VAR=x` prefixes), and inside shell strings (`bash -c "…"`, `ssh host '…'`,
//! here-documents, YAML scalars) read as scripts.

use std::sync::Arc;

use super::continuation;
use super::shell::{Lexer, VarValue, Vars};
use crate::deployment::Gpu;
use crate::read::source::{SrcMap, Word};
pub use crate::rules::material::{Break, BreakKind, NamedPort, PodMeta, Service, ServicePort, SrunSameRank, Target};

/// Which program a launch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Program {
    /// An SGLang server.
    Server,
    /// The sglang-router (model gateway).
    Router,
}

/// One SGLang server or router start found in a file.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Server or router.
    pub program: Program,
    /// Index of the source file.
    pub file: usize,
    /// Offset of the program word (`python3`, `sglang`, ...).
    pub at: usize,
    /// How it is started, e.g. `python3 -m sglang.launch_server`.
    pub entry: String,
    /// The interpreter word, when started with `python -m`.
    pub python: Option<String>,
    /// The arguments after the entry (shared, not copied, by the server or router entry that
    /// reads them).
    pub args: Arc<[Word]>,
    /// Environment known to be set for the process.
    pub env: Vec<(String, String)>,
    /// Words around the launch that hint at its role or name (file name, container, object,
    /// Kubernetes role names), lowercase.
    pub hints: Vec<String>,
    /// The GPU model, when the surrounding material says it.
    pub gpu: Option<Gpu>,
    /// An SGLang release named by the surrounding material (a container image tag).
    pub release: Option<crate::release::Release>,
    /// The version the material names when no known release is that version (`release` is then
    /// the newest known one before it).
    pub version: Option<String>,
    /// The container image the process runs in, when a manifest names it.
    pub image: Option<String>,
    /// True when the process runs in its own machine namespace (a Kubernetes pod).
    pub isolated: bool,
    /// Set when `srun` starts this multi-node server on several nodes with the same node rank.
    pub srun_same_rank: Option<SrunSameRank>,
    /// The machine the process runs on, when the material names it (`srun -w node01` of a
    /// one-node step).
    pub machine: Option<String>,
    /// Set when the material describes one whole deployment (an srtctl recipe): its launches
    /// form a deployment of their own, never joined with launches from elsewhere.
    pub scope: Option<Scope>,
    /// The cluster settings of the pod the process runs in, when a manifest gives any, in the
    /// words of the deployment's `kubernetes` section.
    pub kubernetes: Option<Arc<crate::deployment::Kubernetes>>,
    /// The labels and annotations of the pod the process runs in, when a manifest gives any.
    pub meta: Option<Arc<PodMeta>>,
    /// Where its command's line continuation breaks, and the words that never reach it.
    pub breaks: Vec<Break>,
    /// True when its script starts it in the background (`... &`) and goes on, or a compose
    /// file starts it as one of its services: what starts next runs beside it, on the same
    /// machine.
    pub background: bool,
    /// The offset of the pod spec (the map holding `containers`) its container is in, in a
    /// Kubernetes object: the containers of one pod share its network, those of others do not.
    pub pod_at: Option<usize>,
}

/// A whole deployment's material: one recipe, or one variant of a recipe with overrides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The file, the offset of the document (or of the override), and the variant's index.
    pub at: (usize, usize, usize),
    /// The deployment's name (the recipe's `name`, or the variant's).
    pub name: Option<String>,
    /// True for one variant of several in one file: its servers' labels name it.
    pub variant: bool,
}

/// What surrounds the commands being scanned.
#[derive(Clone, Debug, Default)]
pub struct Surroundings {
    /// Role and name hints.
    pub hints: Vec<String>,
    /// Environment set by the container or scheduler.
    pub env: Vec<(String, String)>,
    /// GPU model hint.
    pub gpu: Option<Gpu>,
    /// Release hint.
    pub release: Option<crate::release::Release>,
    /// The version named, when it is not a known release's.
    pub version: Option<String>,
    /// The container image.
    pub image: Option<String>,
    /// The machine the processes run on, when the material names it (a LeaderWorkerSet pod's
    /// stable name).
    pub machine: Option<String>,
    /// Processes run in their own pod.
    pub isolated: bool,
    /// The offset of the pod spec being read (see [`Launch::pod_at`]).
    pub pod_at: Option<usize>,
    /// In a LeaderWorkerSet object, or a RoleBasedGroup's leader-worker role: the group whose
    /// pods are being read.
    pub lws_group: Option<LwsGroup>,
    /// In a RoleBasedGroup: its name and `.<namespace>` (empty when it names none).
    pub rbg: Option<(String, String)>,
    /// Words the controller adds after a container's command (Dynamo's operator's multi-node
    /// arguments), with the span findings point at.
    pub appended: Vec<(String, usize, usize)>,
    /// In a Kubernetes object: its namespace and the settings of the pod being read.
    pub pod: Option<Arc<Pod>>,
    /// The cluster settings of the container being read.
    pub kubernetes: Option<Arc<crate::deployment::Kubernetes>>,
    /// The labels and annotations of the innermost object or pod template being read.
    pub meta: Option<Arc<PodMeta>>,
}

/// What a Kubernetes object and pod spec set beside their containers.
#[derive(Clone, Debug, Default)]
pub struct Pod {
    /// The namespace, node selector, tolerations and pull secrets, as a deployment writes them.
    pub kubernetes: crate::deployment::Kubernetes,
    /// The pod's volumes a container may mount as its model cache: (name, source).
    pub volumes: Vec<(String, crate::render::cluster::Volume)>,
}

/// A group of pods of a LeaderWorkerSet, or of a RoleBasedGroup's leader-worker role.
#[derive(Clone, Debug)]
pub struct LwsGroup {
    /// The LeaderWorkerSet's name (also its headless Service's), or the role's workload name
    /// (`<group>-<role>`, its headless Service `s-<group>-<role>`).
    pub name: String,
    /// The group's index.
    pub group: u32,
    /// `.<namespace>` when the object names one, else empty.
    pub namespace: String,
    /// True in a RoleBasedGroup, whose pods are all `<name>-<group>-<index>`.
    pub rbg: bool,
}

impl LwsGroup {
    /// The address the controller gives the leader (`LWS_LEADER_ADDRESS`,
    /// `RBG_LWP_LEADER_ADDRESS`): its pod's name with the namespace.
    pub fn leader_address(&self) -> String {
        format!("{}{}", self.pod(0), self.namespace)
    }
    /// The name pods of the namespace reach pod `index` of the group by:
    /// `<name>-<group>[-<index>].<name>` (LeaderWorkerSet), `<name>-<group>-<index>.s-<name>` (RBG).
    pub fn pod(&self, index: u32) -> String {
        match (self.rbg, index) {
            (true, _) => format!("{}-{}-{index}.s-{}", self.name, self.group, self.name),
            (false, 0) => format!("{}-{}.{}", self.name, self.group, self.name),
            (false, _) => format!("{}-{}-{index}.{}", self.name, self.group, self.name),
        }
    }
}

/// Modules that start an SGLang server. Dynamo's SGLang worker (`dynamo.sglang`, from Dynamo
/// 0.4) takes SGLang's server arguments plus options of its own, which the linter takes out
/// (`dynamo.rs`) before reading the rest as SGLang's. Dynamo's earlier worker modules
/// (`dynamo.sglang.worker`, `dynamo.sglang.decode_worker`, and the `components` ones they grew
/// from) hand their whole argv to SGLang's parser. `sglang_router.launch_server` starts servers
/// and a router in front of them from SGLang's server arguments and the router's, spelled
/// `--router-*` ([`ROUTER_TOO`]).
const SERVER_MODULES: &[&str] = &[
    "sglang.launch_server",
    DYNAMO_WORKER,
    "dynamo.sglang.worker",
    "dynamo.sglang.decode_worker",
    "dynamo.sglang.components.worker",
    "dynamo.sglang.components.decode_worker",
    "sglang_router.launch_server",
];
/// Dynamo's SGLang worker module.
pub const DYNAMO_WORKER: &str = "dynamo.sglang";
const ROUTER_MODULES: &[&str] = &["sglang_router.launch_router"];
/// Entries that start servers and a router together, whose `--router-*` options are the
/// router's: `python -m sglang_router.launch_server` and the gateway's `smg server`.
const ROUTER_TOO: &[&str] = &["sglang_router.launch_server", "smg server", "amg server"];

/// True when the server `entry` starts a router beside it, whose options (`--router-*`) are
/// among its arguments.
pub fn starts_router_too(entry: &str) -> bool {
    ROUTER_TOO.iter().any(|e| entry.ends_with(e))
}

/// The arguments of a [`starts_router_too`] entry that SGLang's server parser reads: the
/// router's `--router-*` options are taken out with their values (every word up to the next
/// option, as SGLang's server arguments take no positional ones).
pub fn without_router_options(words: &[Word]) -> Vec<Word> {
    let mut out = Vec::with_capacity(words.len());
    let mut router = false;
    for w in words {
        if w.text.starts_with("--") {
            router = w.text.starts_with("--router-");
        }
        if !router {
            out.push(w.clone());
        }
    }
    out
}

/// The example scripts Dynamo's SGLang workers were run as before they became modules
/// (`python3 components/worker.py` in `examples/sglang`). Other backends' examples have
/// scripts of these names too, so one is read as SGLang's only when its path names sglang or
/// its arguments have `--skip-tokenizer-init`, which those workers required.
const DYNAMO_SCRIPTS: &[&str] = &["worker.py", "decode_worker.py", "worker_inc.py", "decode_worker_inc.py"];

/// True for the path of one of [`DYNAMO_SCRIPTS`] in a `components` folder.
fn is_dynamo_script(w: &str) -> bool {
    w.ends_with(".py")
        && DYNAMO_SCRIPTS.contains(&basename(w))
        && w.rsplit('/').nth(1).is_some_and(|dir| dir == "components")
}

/// True for `docker`, `podman`, `nerdctl`, whose `run` starts a container.
fn is_container_runner(w: &str) -> bool {
    matches!(basename(w), "docker" | "podman" | "nerdctl")
}

fn basename(w: &str) -> &str {
    // A plain backward loop: words are short, a searcher's setup costs more than it saves.
    w.bytes().rposition(|b| b == b'/').map_or(w, |i| &w[i + 1..])
}

/// True for `python`, `python3`, `python3.12`, `/usr/bin/python3`...
pub fn is_python(w: &str) -> bool {
    // Most words end otherwise: skip the search for `/` for them.
    if !w.as_bytes().last().is_some_and(|&c| c.is_ascii_digit() || matches!(c, b'.' | b'n' | b'y')) {
        return false;
    }
    // From the end: the version, then the name, then the start of the word or a `/`.
    let b = w.as_bytes();
    let v = b.iter().rposition(|&c| !(c.is_ascii_digit() || c == b'.')).map_or(0, |i| i + 1);
    let name = match &b[..v] {
        h if h.ends_with(b"python") => v - 6,
        h if h.ends_with(b"pypy") => v - 4,
        _ => return false,
    };
    name == 0 || b[name - 1] == b'/'
}

/// The launch a command's words start, if any: (program, index of the program word, index of
/// the first argument, entry text).
pub fn find_launch(words: &[Word]) -> Option<(Program, usize, usize, String)> {
    find_launch_in(words.len(), |i| &words[i].text)
}

/// [`find_launch`] over `n` words given by their texts, so that a command still in the lexer is
/// looked at without copying its words out.
fn find_launch_in<'w>(n: usize, text: impl Fn(usize) -> &'w str) -> Option<(Program, usize, usize, String)> {
    let word = |j: usize| (j < n).then(|| text(j));
    for i in 0..n {
        let t = text(i);
        if is_container_runner(t) && word(i + 1) == Some("run") {
            if let Some(found) = container_entrypoint(i + 2, n, &text) {
                return Some(found);
            }
        }
        if is_python(t) {
            let mut j = i + 1;
            while let Some(x) = word(j) {
                match x {
                    "-m" => break,
                    "-X" | "-W" | "-Q" => j += 2,
                    s if s.starts_with('-') && s.len() > 1 => j += 1,
                    _ => break,
                }
            }
            if word(j) == Some("-m") {
                if let Some(m) = word(j + 1) {
                    let program = if SERVER_MODULES.contains(&m) {
                        Some(Program::Server)
                    } else if ROUTER_MODULES.contains(&m) {
                        Some(Program::Router)
                    } else {
                        None
                    };
                    if let Some(p) = program {
                        return Some((p, i, j + 2, [basename(t), " -m ", m].concat()));
                    }
                }
            } else if let Some(script) = word(j).filter(|s| is_dynamo_script(s)) {
                let sglang = has_sglang(script) || (j + 1..n).any(|k| text(k) == "--skip-tokenizer-init");
                if sglang {
                    return Some((Program::Server, i, j + 1, [basename(t), " ", script].concat()));
                }
            }
        }
        // The next word first: it rules out most words without looking for a `/`.
        match word(i + 1) {
            Some("serve") if basename(t) == "sglang" => {
                return Some((Program::Server, i, i + 2, "sglang serve".into()))
            }
            Some("launch") if matches!(basename(t), "smg" | "amg" | "sglang-router") => {
                return Some((Program::Router, i, i + 2, [basename(t), " launch"].concat()))
            }
            Some("server") if matches!(basename(t), "smg" | "amg") => {
                return Some((Program::Server, i, i + 2, [basename(t), " server"].concat()))
            }
            _ => {}
        }
    }
    None
}

/// The launch `docker run --entrypoint PROGRAM [options] IMAGE ARGS...` starts, whose words
/// after `run` begin at `from`: the entrypoint replaces the image's, and the words after the
/// image are its arguments (`--entrypoint python3 IMAGE -m sglang.launch_server ...`). The
/// program word is the entrypoint's value (or `--entrypoint=...`).
fn container_entrypoint<'w>(
    from: usize,
    n: usize,
    text: &impl Fn(usize) -> &'w str,
) -> Option<(Program, usize, usize, String)> {
    let (at, program) = (from..n).find_map(|k| {
        let w = text(k);
        if w == "--entrypoint" {
            (k + 1 < n).then(|| (k + 1, text(k + 1)))
        } else {
            w.strip_prefix("--entrypoint=").map(|v| (k, v))
        }
    })?;
    let name = basename(program);
    let rest = at + 1..n;
    if is_python(program) {
        let k = rest.clone().find(|&k| text(k) == "-m" && k + 1 < n)?;
        let m = text(k + 1);
        let p = if SERVER_MODULES.contains(&m) {
            Program::Server
        } else if ROUTER_MODULES.contains(&m) {
            Program::Router
        } else {
            return None;
        };
        return Some((p, at, k + 2, [name, " -m ", m].concat()));
    }
    let sub = |s: &str| rest.clone().find(|&k| text(k) == s);
    match name {
        "sglang" => sub("serve").map(|k| (Program::Server, at, k + 1, "sglang serve".to_owned())),
        "smg" | "amg" => {
            let k = rest.clone().find(|&k| matches!(text(k), "launch" | "server"))?;
            let p = if text(k) == "launch" { Program::Router } else { Program::Server };
            Some((p, at, k + 1, [name, " ", text(k)].concat()))
        }
        _ => None,
    }
}

/// The host GPUs a `docker run --gpus '"device=1,2"'` among `prefix` gives its container, as a
/// `CUDA_VISIBLE_DEVICES` list: the container sees them as its GPUs 0, 1..., as a process with
/// that variable does. `None` for `--gpus all`, a count, or no `--gpus`.
fn container_gpus<'w>(prefix: impl Iterator<Item = &'w str>) -> Option<String> {
    let mut words = prefix.skip_while(|w| !is_container_runner(w));
    words.next()?;
    let mut value = None;
    while let Some(w) = words.next() {
        if w == "--gpus" {
            value = words.next();
        } else if let Some(v) = w.strip_prefix("--gpus=") {
            value = Some(v);
        }
    }
    let list = value?.trim_matches(|c| c == '"' || c == '\'').strip_prefix("device=")?;
    let valid = !list.is_empty() && list.split(',').all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    valid.then(|| list.to_owned())
}

/// Words that open a compound command or negate one, skipped before the command name.
const KEYWORDS: &[&str] = &["then", "do", "else", "elif", "if", "while", "until", "!", "{", "}", "time"];
/// Words that end a compound command.
const ENDERS: &[&str] = &["fi", "done", "esac", "}", "in"];

/// True when one of `words` of the command just read can belong to a launch (or hold one):
/// commands without such a word are skipped without copying them.
fn command_might_launch(lx: &Lexer<'_>, words: std::ops::Range<usize>) -> bool {
    // One search over the whole command spares one per word for most commands.
    let sglang = sglang_finder().find(lx.command_text().as_bytes()).is_some();
    words.into_iter().any(|i| might_launch(lx.text(i), sglang))
}

/// True for a word that can belong to a launch; `sglang` says whether its command holds
/// "sglang" at all.
fn might_launch(w: &str, sglang: bool) -> bool {
    (sglang && has_sglang(w)) || (w.ends_with("mg") && matches!(basename(w), "smg" | "amg")) || is_dynamo_script(w)
}

/// A searcher for "sglang", built once.
fn sglang_finder() -> &'static memchr::memmem::Finder<'static> {
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    FINDER.get_or_init(|| memchr::memmem::Finder::new(b"sglang"))
}

/// `s.contains("sglang")`, without building a substring searcher for each (short) word.
fn has_sglang(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() > 64 {
        return sglang_finder().find(b).is_some();
    }
    (0..b.len().saturating_sub(5)).any(|i| b[i] == b's' && &b[i + 1..i + 6] == b"glang")
}

/// Scans shell text for launches. `map` places the text in file `file`; `vars` carries the
/// script's variables (and is updated by its assignments).
#[allow(clippy::too_many_arguments)]
pub fn scan_shell(
    text: &str,
    map: &SrcMap,
    file: usize,
    nested: bool,
    vars: &mut Vars,
    around: &Surroundings,
    out: &mut Vec<Launch>,
    depth: usize,
) {
    if depth > 6 {
        return;
    }
    let mut lx = Lexer::new(text, map, file, nested);
    // The launches the command read last started, while its continuation may have broken.
    let mut open: Option<Open> = None;
    // The words are read where the lexer holds them; only a launch's arguments, or a word that
    // may be a shell string holding one, are copied out.
    while lx.read_command(vars) {
        let n = lx.len();
        if let Some(o) = open.take() {
            if let Some(next) = broken_continuation(&mut lx, text, o, out) {
                open = Some(next);
                continue;
            }
        }
        let mut first = 0;
        // All keywords and enders are short: longer words skip the comparisons.
        while first < n && lx.text(first).len() <= 5 && KEYWORDS.contains(&lx.text(first)) && lx.eq(first).is_none() {
            first += 1;
        }
        // A compound command's end, and `for x in ...` and `case x in`, read no commands of ours.
        let skip = first < n
            && lx.text(first).len() <= 4
            && (ENDERS.contains(&lx.text(first)) || matches!(lx.text(first), "for" | "case"));
        let words = first..if skip { first } else { n };
        let n_assign = words.clone().take_while(|&i| lx.eq(i).is_some()).count();
        let assign = |vars: &mut Vars, lx: &Lexer<'_>, i: usize, export: bool| {
            let eq = lx.eq(i).expect("assignment");
            let text = lx.text(i);
            let name = &text[..eq];
            let value = if lx.is_symbolic(i) { None } else { Some(text[eq + 1..].to_owned()) };
            let map = lx.table_of(i).get(eq + 1..).map(<[usize]>::to_vec).unwrap_or_default();
            vars.set(name, VarValue { text: value, map });
            if export {
                vars.export(name);
            }
        };
        if n_assign > 0 && n_assign == words.len() {
            for i in words {
                assign(vars, &lx, i, false);
            }
        } else if n_assign < words.len() {
            let head = words.start + n_assign;
            let name = lx.text(head);
            if matches!(name, "export" | "declare" | "typeset" | "local" | "readonly") {
                let export =
                    name == "export" || words.clone().any(|i| lx.text(i).starts_with('-') && lx.text(i).contains('x'));
                for i in head + 1..words.end {
                    if lx.eq(i).is_some() {
                        assign(vars, &lx, i, export);
                    } else if export && !lx.text(i).starts_with('-') {
                        vars.export(lx.text(i));
                    }
                }
            } else if command_might_launch(&lx, words.clone()) {
                let mut env: Vec<(String, String)> = around.env.clone();
                env.extend(vars.env());
                for i in words.start..head {
                    let eq = lx.eq(i).expect("assignment");
                    if !lx.is_symbolic(i) {
                        let text = lx.text(i);
                        env.push((text[..eq].to_owned(), text[eq + 1..].to_owned()));
                    }
                }
                let w0 = words.start;
                match find_launch_in(words.len(), |k| lx.text(w0 + k)) {
                    Some((program, i, start, entry)) => {
                        let prog = w0 + i;
                        add_wrapper_env(&mut env, (w0..prog).map(|k| (lx.text(k), lx.is_symbolic(k))));
                        if let Some(devices) = container_gpus((w0..prog).map(|k| lx.text(k))) {
                            env.retain(|(k, _)| k != "CUDA_VISIBLE_DEVICES");
                            env.push(("CUDA_VISIBLE_DEVICES".to_owned(), devices));
                        }
                        let at = lx.start(prog);
                        let python = is_python(lx.text(prog)).then(|| lx.text(prog).to_owned());
                        let args = (w0 + start..words.end).map(|k| lx.take_word(k)).collect();
                        let mut launch = new_launch(around, (program, entry), (python, file, at), args, env);
                        let prefix = || (w0..prog).map(|k| lx.text(k));
                        let (nodes, machine) = srun_step(prefix(), vars);
                        launch.machine = machine;
                        // An srun step runs on the nodes Slurm gives it, not beside the script.
                        launch.background = lx.background() && SrunStep::read(prefix()).is_none();
                        let before = out.len();
                        match nodes {
                            Some(nodes) => push_per_node(vec![launch], nodes, out),
                            None => out.push(launch),
                        }
                        if lx.heredocs().is_empty() {
                            open = Some(Open::after(&lx, text, before..out.len()));
                        }
                    }
                    None => {
                        for k in words.clone() {
                            if might_hold_script(lx.text(k)) {
                                let (nodes, machine) = srun_step((w0..k).map(|j| lx.text(j)), vars);
                                let w = lx.take_word(k);
                                let before = out.len();
                                scan_nested_per_node(&w, nodes, &env, vars, around, out, depth);
                                for l in out[before..].iter_mut().filter(|l| l.machine.is_none()) {
                                    l.machine.clone_from(&machine);
                                }
                            }
                        }
                    }
                }
            }
        }
        for &(s, e) in lx.heredocs() {
            let Some(body) = text.get(s..e) else { continue };
            let body_map = match map {
                SrcMap::Offset(o) => SrcMap::Offset(o + s),
                SrcMap::Table(t) => SrcMap::Table(t.get(s..e).map(<[usize]>::to_vec).unwrap_or_default()),
            };
            if has_sglang(body) {
                let mut inner = vars.clone();
                scan_shell(body, &body_map, file, nested, &mut inner, around, out, depth + 1);
            }
        }
    }
    // A continuation at the end of a script of its own (not of a shell string in an outer layer).
    if let Some(o) = open.filter(|_| !nested) {
        if let Some(end) = text.get(o.from..).and_then(continuation::ends_text) {
            let at = o.from + text[o.from..].find('\\').unwrap_or(0);
            let b = Break {
                kind: BreakKind::EndOfText,
                file,
                at: map.at(at),
                lost: Vec::new(),
                gap: (map.at(o.from), map.at(o.from + end)),
                gap_text: text[o.from..o.from + end].to_owned(),
                command_at: map.at(o.command_at),
            };
            for l in &mut out[o.launches] {
                l.breaks.push(b.clone());
            }
        }
    }
}

/// The launches a command started, and where its text ends, while the next command may show
/// that its continuation broke.
struct Open {
    launches: std::ops::Range<usize>,
    /// Text offset where the command's last word ends (where a `\ ` escaping a blank starts).
    from: usize,
    /// Text offset of the command's first word.
    command_at: usize,
}

impl Open {
    /// After the command just read, which started `launches`.
    fn after(lx: &Lexer<'_>, text: &str, launches: std::ops::Range<usize>) -> Open {
        let (command_at, last_at, last_end) = lx.span();
        // `\ ` escapes a blank, which is then the command's last word.
        let escaped_blank = !lx.is_empty()
            && text.as_bytes().get(last_at) == Some(&b'\\')
            && lx.text(lx.len() - 1).bytes().all(|b| b == b' ' || b == b'\t');
        Open { launches, from: if escaped_blank { last_at } else { last_end }, command_at }
    }
}

/// When the command just read starts with a flag and what separates it from the launches of
/// `open` is a continuation that broke: records the break on those launches, with the command's
/// words as the arguments they never get, and gives what stays open for the next command (a
/// second break after this one loses its words too).
fn broken_continuation(lx: &mut Lexer<'_>, text: &str, open: Open, out: &mut [Launch]) -> Option<Open> {
    let (first_at, _, last_end) = lx.span();
    let flag = !lx.is_empty() && lx.eq(0).is_none() && lx.text(0).len() > 1 && lx.text(0).starts_with('-');
    if !flag || !lx.heredocs().is_empty() || first_at < open.from {
        return None;
    }
    let gap = text.get(open.from..first_at)?;
    let (kind, at) = continuation::classify(gap)?;
    let lost: Vec<Word> = (0..lx.len()).map(|i| lx.take_word(i)).collect();
    let b = Break {
        kind,
        file: lost[0].file,
        at: lx.source_at(open.from + at),
        lost,
        gap: (lx.source_at(open.from), lx.source_at(first_at)),
        gap_text: gap.to_owned(),
        command_at: lx.source_at(open.command_at),
    };
    for l in &mut out[open.launches.clone()] {
        l.breaks.push(b.clone());
    }
    Some(Open { launches: open.launches, from: last_end, command_at: open.command_at })
}

/// Looks for shell strings that hold a launch (`bash -c "…"`) among a command's words that
/// start none themselves.
pub(super) fn scan_scripts(
    words: &[Word],
    env: &[(String, String)],
    vars: &Vars,
    around: &Surroundings,
    out: &mut Vec<Launch>,
    depth: usize,
) {
    for w in words {
        if might_hold_script(&w.text) {
            scan_nested(w, env, vars, around, out, depth);
        }
    }
}

/// Pushes the launch `find_launch` found in `words`: (program, index of the program word, index
/// of the first argument, entry text).
fn push_launch(
    mut words: Vec<Word>,
    (program, i, start, entry): (Program, usize, usize, String),
    env: &[(String, String)],
    around: &Surroundings,
    out: &mut Vec<Launch>,
) {
    let mut env = env.to_vec();
    add_wrapper_env(&mut env, words[..i].iter().map(|w| (w.text.as_str(), w.is_symbolic())));
    let python = is_python(&words[i].text).then(|| words[i].text.clone());
    let (file, at) = (words[i].file, words[i].start);
    words.drain(..start);
    out.push(new_launch(around, (program, entry), (python, file, at), words, env));
}

/// Pushes the launch that `words` start, taking them as its arguments; gives the words back
/// when they hold none.
pub(super) fn take_launch(
    words: Vec<Word>,
    env: &[(String, String)],
    around: &Surroundings,
    out: &mut Vec<Launch>,
) -> Result<(), Vec<Word>> {
    match find_launch(&words) {
        Some(found) => {
            push_launch(words, found, env, around, out);
            Ok(())
        }
        None => Err(words),
    }
}

/// Adds to `env` the `VAR=x` words, given as (text, symbolic), between a wrapper (`env`,
/// `srun --export=...`) and the program, when known and not there yet.
fn add_wrapper_env<'w>(env: &mut Vec<(String, String)>, words: impl Iterator<Item = (&'w str, bool)>) {
    for (text, symbolic) in words {
        // The name ends at the first byte that cannot be part of one, which must be the `=`.
        let n = text.bytes().take_while(|&b| b.is_ascii_alphanumeric() || b == b'_').count();
        let valid = n > 0 && text.as_bytes().get(n) == Some(&b'=') && !text.as_bytes()[0].is_ascii_digit();
        if valid && !symbolic {
            let (k, v) = (&text[..n], &text[n + 1..]);
            if !env.iter().any(|(x, y)| x == k && y == v) {
                env.push((k.to_owned(), v.to_owned()));
            }
        }
    }
}

/// The launch of `program` (with its entry text), whose program word is the interpreter
/// `python` (when started with `python -m`) at offset `at` of file `file`.
fn new_launch(
    around: &Surroundings,
    (program, entry): (Program, String),
    (python, file, at): (Option<String>, usize, usize),
    args: Vec<Word>,
    env: Vec<(String, String)>,
) -> Launch {
    Launch {
        program,
        file,
        at,
        entry,
        python,
        args: args.into(),
        env,
        hints: around.hints.clone(),
        gpu: around.gpu,
        release: around.release,
        version: around.version.clone(),
        image: around.image.clone(),
        isolated: around.isolated,
        srun_same_rank: None,
        machine: around.machine.clone(),
        scope: None,
        kubernetes: around.kubernetes.clone(),
        meta: around.meta.clone(),
        breaks: Vec::new(),
        background: false,
        pod_at: around.pod_at,
    }
}

/// True for a word that may be a shell string holding a launch (`bash -c "…"`, `ssh host '…'`).
fn might_hold_script(w: &str) -> bool {
    has_sglang(w) && w.bytes().any(|b| b.is_ascii_whitespace())
}

/// Reads word `w` as a script, when it keeps where its bytes came from, with the command's `env`.
fn scan_nested(
    w: &Word,
    env: &[(String, String)],
    vars: &Vars,
    around: &Surroundings,
    out: &mut Vec<Launch>,
    depth: usize,
) {
    if let Some(map) = &w.map {
        let mut inner = vars.clone();
        let mut around = around.clone();
        around.env.extend(env.iter().cloned());
        scan_shell(&w.text, map, w.file, true, &mut inner, &around, out, depth + 1);
    }
}

/// The most nodes of one srun step read as that many launches.
const MAX_SRUN_NODES: u32 = 64;

/// The variables srun sets differently in each task.
const PER_TASK: &[&str] = &["SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID"];

/// The step's node count, which srun sets in every task.
const STEP_NODES: &str = "SLURM_STEP_NUM_NODES";

/// What the `srun` among a command's words before its program says about where its step runs,
/// each option as written (the last one given).
#[derive(Default)]
struct SrunStep<'w> {
    /// `-N`/`--nodes`.
    nodes: Option<&'w str>,
    /// `-n`/`--ntasks`.
    tasks: Option<&'w str>,
    /// `--ntasks-per-node`.
    per_node: Option<&'w str>,
    /// `-w`/`--nodelist`.
    nodelist: Option<&'w str>,
    /// True when the step asks for GPUs of its own (`--gres`, `--gpus...`, `-G`).
    own_gpus: bool,
}

impl<'w> SrunStep<'w> {
    /// Reads the srun options among `prefix`; `None` without srun, or when an option lacks its
    /// value.
    fn read(prefix: impl Iterator<Item = &'w str>) -> Option<SrunStep<'w>> {
        let mut words = prefix.skip_while(|w| basename(w) != "srun");
        words.next()?;
        let mut step = SrunStep::default();
        while let Some(w) = words.next() {
            if w.starts_with("--gres") || w.starts_with("--gpus") || w.starts_with("-G") {
                step.own_gpus = true;
                continue;
            }
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ if w.len() > 2 && (w.starts_with("-N") || w.starts_with("-n") || w.starts_with("-w")) => {
                    (&w[..2], Some(&w[2..]))
                }
                _ => (w, None),
            };
            let slot = match name {
                "-N" | "--nodes" => &mut step.nodes,
                "-n" | "--ntasks" => &mut step.tasks,
                "--ntasks-per-node" => &mut step.per_node,
                "-w" | "--nodelist" => &mut step.nodelist,
                _ => continue,
            };
            *slot = Some(match inline {
                Some(v) => v,
                None => words.next()?,
            });
        }
        Some(step)
    }

    /// The node count, when the step starts one task on each of 2 to [`MAX_SRUN_NODES`] nodes
    /// with no other task count. `None` for one node, for several tasks per node, and for counts
    /// only known at run time (`-N $NODES`, a range `2-4`).
    fn nodes(&self) -> Option<u32> {
        let count = |v: Option<&str>| v.map(str::parse::<u32>).transpose().ok();
        let (n, tasks, per_node) = (count(self.nodes)??, count(self.tasks)?, count(self.per_node)?);
        let one_task_per_node = tasks.is_none_or(|t| t == n) && per_node.is_none_or(|p| p == 1);
        ((2..=MAX_SRUN_NODES).contains(&n) && one_task_per_node).then_some(n)
    }

    /// The one node the step runs on, when it names one (a name, or one variable) and spans one
    /// node. A list or a range (`node[1-2]`) names no single machine here. A step that asks for GPUs
    /// of its own is given them by Slurm through `CUDA_VISIBLE_DEVICES`, so its GPU indices are
    /// not the node's: `None` too, as the GPU check would compare indices that do not name the
    /// same devices.
    fn machine(&self) -> Option<String> {
        if self.own_gpus || self.nodes.is_some_and(|n| n != "1") {
            return None;
        }
        let name = self.nodelist?;
        // A variable the script sets once (`-w "$node_0"`), or one element of an array of the
        // job's nodes (`-w ${nodes[1]}`), names one node too, the same one for every step that
        // names it.
        let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
        let ident = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let element =
            |v: &str| v.strip_suffix(']').and_then(|v| v.split_once('[')).is_some_and(|(a, i)| ident(a) && ident(i));
        let single = match name.strip_prefix('$') {
            Some(v) => match v.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                Some(braced) => ident(braced) || element(braced),
                None => ident(v),
            },
            None => !name.is_empty() && name.bytes().all(name_byte),
        };
        single.then(|| name.to_owned())
    }
}

/// The srun step among `prefix` (the words before the program it starts): its node count when
/// it starts one task on each of several nodes ([`SrunStep::nodes`]), and the machine of a
/// one-node step ([`SrunStep::machine`]). Inside a task of a step read per node (`vars` has
/// srun's variables) the node count is not read again, so that nested steps do not multiply.
fn srun_step<'w>(prefix: impl Iterator<Item = &'w str>, vars: &Vars) -> (Option<u32>, Option<String>) {
    let Some(step) = SrunStep::read(prefix) else { return (None, None) };
    let nodes = if vars.get(STEP_NODES).is_some() { None } else { step.nodes() };
    (nodes, step.machine())
}

/// The per-task variable among a word's unknown expansions (as written), if any.
fn per_task_var(w: &Word) -> Option<&String> {
    w.unknown.iter().find(|raw| {
        let name = raw.trim_start_matches('$').trim_start_matches('{');
        PER_TASK.iter().any(|v| {
            name.strip_prefix(v).is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        })
    })
}

/// The value word of option `name` among a launch's arguments (`--name V` or `--name=V`).
fn option_value<'a>(args: &'a [Word], name: &str) -> Option<&'a Word> {
    let i =
        args.iter().position(|w| w.text == name || w.text.strip_prefix(name).is_some_and(|r| r.starts_with('=')))?;
    if args[i].text.len() > name.len() {
        Some(&args[i])
    } else {
        args.get(i + 1)
    }
}

/// Pushes `launches`, read once from a command that srun starts on `nodes` nodes with the same
/// argv. A multi-node server (`--nnodes` other than 1, or a `--node-rank`) whose rank is literal,
/// absent or a per-task variable the script's shell already expanded gets one node rank on every
/// node: it is pushed once and marked (PD047). A rank in another unknown variable stays unknown
/// (one launch). Anything else runs once per node: a copy each.
fn push_per_node(launches: Vec<Launch>, nodes: u32, out: &mut Vec<Launch>) {
    for mut l in launches {
        let nnodes = option_value(&l.args, "--nnodes");
        let rank = option_value(&l.args, "--node-rank");
        let multi_node =
            rank.is_some() || nnodes.is_some_and(|w| w.is_symbolic() || w.text.rsplit('=').next() != Some("1"));
        if l.program != Program::Server || !multi_node {
            out.extend(std::iter::repeat_n(l, nodes as usize));
            continue;
        }
        let var = match rank {
            Some(w) if w.is_symbolic() => match per_task_var(w) {
                Some(v) => Some(v.clone()),
                None => {
                    out.push(l);
                    continue;
                }
            },
            _ => None,
        };
        l.srun_same_rank = Some(SrunSameRank { nodes, var });
        out.push(l);
    }
}

/// Reads the shell string `w` that srun starts on `nodes` nodes (when it does). When the string
/// names a per-task variable that the script's shell leaves to the task (single quotes), it is
/// read once per node with srun's variables set; otherwise once, through [`push_per_node`].
fn scan_nested_per_node(
    w: &Word,
    nodes: Option<u32>,
    env: &[(String, String)],
    vars: &Vars,
    around: &Surroundings,
    out: &mut Vec<Launch>,
    depth: usize,
) {
    let Some(n) = nodes else { return scan_nested(w, env, vars, around, out, depth) };
    let per_task = PER_TASK.iter().any(|v| w.text.contains(v)) && per_task_var(w).is_none();
    if !per_task {
        let mut once = Vec::new();
        scan_nested(w, env, vars, around, &mut once, depth);
        return push_per_node(once, n, out);
    }
    for node in 0..n {
        let mut inner = vars.clone();
        let set = |vars: &mut Vars, name: &str, value: u32| {
            vars.set(name, VarValue { text: Some(value.to_string()), map: Vec::new() });
        };
        for name in ["SLURM_NODEID", "SLURM_PROCID"] {
            set(&mut inner, name, node);
        }
        set(&mut inner, "SLURM_LOCALID", 0);
        for name in ["SLURM_NNODES", STEP_NODES, "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_NPROCS"] {
            set(&mut inner, name, n);
        }
        scan_nested(w, env, &inner, around, out, depth);
    }
}

/// The GPU model named in free text (`NVIDIA-H200`, `gpu:b200:8`, `nvidia-h100-80gb`).
pub fn gpu_in_text(text: &str) -> Option<Gpu> {
    let t = text.to_ascii_lowercase();
    t.split(|c: char| !c.is_ascii_alphanumeric()).find_map(Gpu::parse)
}

/// The SGLang version a container image of SGLang names (`lmsysorg/sglang:v0.5.6.post2-cu126`).
/// Dynamo's SGLang runtime (`ai-dynamo/sglang-runtime:1.1.1`) is tagged with its own release,
/// read through [`crate::release::DYNAMO_RELEASES`].
pub fn version_in_image(image: &str) -> Option<&str> {
    let (repo, tag) = image.rsplit_once(':')?;
    // Dynamo's SGLang runtime is tagged with Dynamo's release, which ships one SGLang's.
    if repo.ends_with("ai-dynamo/sglang-runtime") {
        return crate::release::Release::in_dynamo(tag.split('-').next().unwrap_or(tag));
    }
    if !repo.rsplit('/').next().is_some_and(|name| name.eq_ignore_ascii_case("sglang")) {
        return None;
    }
    let tag = tag.trim_start_matches('v');
    let end = tag.find(|c: char| !(c == '.' || c.is_ascii_alphanumeric())).unwrap_or(tag.len());
    tag[..end].split('-').next()
}

/// The release to read the commands of an SGLang `version` with, and the version itself when
/// no known release is that version ([`crate::release::Release::for_version`]).
pub fn release_for(version: &str) -> Option<(crate::release::Release, Option<String>)> {
    let (release, exact) = crate::release::Release::for_version(version)?;
    Some((release, (!exact).then(|| version.trim_start_matches('v').to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launches(text: &str) -> Vec<Launch> {
        let mut out = Vec::new();
        scan_shell(text, &SrcMap::Offset(0), 0, false, &mut Vars::default(), &Surroundings::default(), &mut out, 0);
        out
    }

    fn args(l: &Launch) -> Vec<&str> {
        l.args.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn entry_points_and_wrappers() {
        let l = launches(
            "CUDA_VISIBLE_DEVICES=0 nohup python3 -u -m sglang.launch_server --tp 2 > p.log 2>&1 &\n\
             exec env A=1 sglang serve --port 1\n\
             srun -N1 --export=ALL /opt/venv/bin/python -m sglang_router.launch_router --pd-disaggregation\n\
             python3 -m sglang.bench_serving --x 1\n",
        );
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].program, args(&l[0])), (Program::Server, vec!["--tp", "2"]));
        assert!(l[0].env.contains(&("CUDA_VISIBLE_DEVICES".into(), "0".into())));
        assert_eq!(l[1].entry, "sglang serve");
        assert!(l[1].env.contains(&("A".into(), "1".into())));
        assert_eq!(l[2].program, Program::Router);
    }

    #[test]
    fn wrappers_pass_known_assignments_only() {
        let l = launches("env =x 1A=2 B_1=3 C=$UNSET B_1=3 -u=4 python -m sglang.launch_server\n");
        assert_eq!(l[0].env, [("B_1".to_owned(), "3".to_owned())]);
    }

    #[test]
    fn bash_c_and_heredocs_are_read_with_positions() {
        let text = "ssh node1 \"bash -c 'python3 -m sglang.launch_server --page-size 64'\"\ncat <<EOF | bash\npython -m sglang.launch_server --page-size 16\nEOF\n";
        let l = launches(text);
        assert_eq!(l.len(), 2, "{l:?}");
        let w = &l[0].args[1];
        assert_eq!(&text[w.start..w.end], "64");
        let w = &l[1].args[1];
        assert_eq!(&text[w.start..w.end], "16");
    }

    #[test]
    fn exported_variables_become_env() {
        let l =
            launches("export SGLANG_DISAGG_STAGING_BUFFER=1\nPS=32\npython -m sglang.launch_server --page-size $PS");
        assert_eq!(l[0].env, vec![("SGLANG_DISAGG_STAGING_BUFFER".to_owned(), "1".to_owned())]);
        assert_eq!(args(&l[0]), ["--page-size", "32"]);
    }

    #[test]
    fn gpus_and_images() {
        assert_eq!(gpu_in_text("NVIDIA-H200"), Some(Gpu::H200));
        assert_eq!(gpu_in_text("gpu:h20:8"), Some(Gpu::H20));
        assert_eq!(gpu_in_text("nvidia-gb200"), Some(Gpu::Gb200));
        assert_eq!(gpu_in_text("B200"), Some(Gpu::B200));
        assert_eq!(gpu_in_text("nothing"), None);
        use crate::release::Release;
        let release = |image: &str| version_in_image(image).and_then(release_for);
        assert_eq!(release("lmsysorg/sglang:v0.5.6.post2-cu126"), Some((Release::V0_5_6, None)));
        assert_eq!(release("lmsysorg/sglang:v0.5.6-cu126"), Some((Release::V0_5_6, None)));
        // A release between known ones is read with the newest known one before it.
        assert_eq!(release("lmsysorg/sglang:v0.5.8.post1-cu130"), Some((Release::V0_5_6, Some("0.5.8.post1".into()))));
        assert_eq!(release("lmsysorg/sglang:v0.6.0"), Some((Release::V0_5_23, Some("0.6.0".into()))));
        for none in [
            "lmsysorg/sglang:latest",
            "lmsysorg/sglang:v0.4.9",
            "lmsysorg/sglang:dev-x",
            "vllm/vllm:v0.5.8",
            "nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.6.0",
        ] {
            assert_eq!(release(none), None, "{none}");
        }
    }
}
