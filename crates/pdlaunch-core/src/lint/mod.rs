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
mod continuation;
mod dynamo;
pub mod edit;
mod findings;
mod group;
pub mod launch;
mod link;
pub mod manifest;
mod place;
pub mod recipe;
pub mod reconstruct;
pub mod seen;
pub mod shell;
mod terms;
mod unknown;

use std::sync::Arc;

use serde::Serialize;

use crate::deployment::{Gpu, Role};
use crate::effective::{ModelFacts, ServerView};
use crate::read::source::{SourceFile, SrcMap, Word};
use crate::read::yaml;
use crate::release::{Release, RouterRelease};
use crate::rules::material::WrittenServer;
pub use crate::rules::material::{origin_of, DiscoveryMiss, MissedServer};
use crate::rules::{Context, Finding, RouterView, Severity};
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
    /// The server as the material rules read it.
    fn written<'a>(&'a self, launches: &'a [Launch]) -> WrittenServer<'a> {
        let l = &launches[self.launch];
        WrittenServer {
            view: &self.view,
            words: &self.words,
            intended: self.intended,
            config_problems: &self.config_problems,
            launch: self.launch,
            file: l.file,
            at: l.at,
            isolated: l.isolated,
            meta: l.meta.as_deref(),
            srun_same_rank: l.srun_same_rank.as_ref(),
            breaks: &l.breaks,
        }
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
    /// When no launch was found: the commands read that look like program starts, and why each
    /// is none.
    pub seen: Vec<seen::Seen>,
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

pub(super) fn stem_hint(name: &str) -> String {
    let base = base_name(name);
    base.split('.').next().unwrap_or(base).to_ascii_lowercase()
}

/// A file's name without its directories.
pub(super) fn base_name(name: &str) -> &str {
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
    let mut groups = group::build_groups(&files, &config_files, &launches, &services, opts);
    let mut findings = Vec::new();
    for (g, group) in groups.iter_mut().enumerate() {
        let found = findings::run_rules(group);
        findings.extend(findings::lint_group(g, group, found, &files, &launches, &services));
    }
    let seen = if launches.is_empty() { seen::seen(&files, &config_files) } else { Vec::new() };
    Linted { files, launches, groups, findings, unread, seen }
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

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod proptests;
