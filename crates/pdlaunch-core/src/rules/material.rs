//! What the linter read of a group beside the views of its servers and router: the words of
//! each command and where it was written, what the objects around it say (labels, replicas, an
//! srun step), the Services between the router and the servers, the `--config` files, and the
//! values only known at run time. The linter fills it; the rules that only the written material
//! can break read it ([`super::Check::Material`]), so they stand on these data, not on the
//! linter's machinery.

use super::{RouterEntry, RouterView};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::Origin;
use crate::read::source::{Embed, SourceFile, Word};
use crate::release::Release;

/// One group of linted material, as the material rules read it.
#[derive(Debug)]
pub struct Material<'a> {
    /// Every input, in order (words and Services name them by index).
    pub files: &'a [SourceFile],
    /// The SGLang release the commands were read with.
    pub release: Release,
    /// The version the material names when no known release is that version (`release` is the
    /// newest known one before it).
    pub version: Option<&'a str>,
    /// Its servers, prefill first.
    pub servers: Vec<WrittenServer<'a>>,
    /// Its router.
    pub router: Option<WrittenRouter<'a>>,
    /// Every Service of the material.
    pub services: &'a [Service],
    /// The values only known at run time, and what they kept from being checked.
    pub unknown: &'a Unknown,
}

/// A server as it was written.
#[derive(Clone, Copy, Debug)]
pub struct WrittenServer<'a> {
    /// What SGLang will see.
    pub view: &'a ServerView,
    /// The word of each token of `view.tokens`.
    pub words: &'a [Word],
    /// The role the material suggests when `--disaggregation-mode` does not give one.
    pub intended: Option<Role>,
    /// Problems with its `--config` file.
    pub config_problems: &'a [ConfigProblem],
    /// Index of its launch among the linted launches.
    pub launch: usize,
    /// The file of its command, and the offset where the command starts.
    pub file: usize,
    pub at: usize,
    /// True when it runs in a pod or container of its own.
    pub isolated: bool,
    /// The labels, annotations and replicas of the object that starts it.
    pub meta: Option<&'a PodMeta>,
    /// Set when `srun --nodes=N` starts it with one node rank for every node.
    pub srun_same_rank: Option<&'a SrunSameRank>,
    /// Where its command's line continuation breaks (PD055).
    pub breaks: &'a [Break],
}

impl WrittenServer<'_> {
    /// Its role: the one its arguments give, else the one the material around it suggests.
    pub fn role(&self) -> Option<Role> {
        self.view.role.or(self.intended)
    }
}

/// The router as it was written.
#[derive(Clone, Copy, Debug)]
pub struct WrittenRouter<'a> {
    /// What the rules see.
    pub view: &'a RouterView,
    /// The word of each token.
    pub words: &'a [Word],
    /// With `--service-discovery`: what its selectors miss.
    pub misses: &'a [DiscoveryMiss],
    /// Where its command's line continuation breaks (PD055).
    pub breaks: &'a [Break],
}

impl<'a> Material<'a> {
    /// Where a word was written; a word srtctl adds is [`Origin::Derived`].
    pub fn origin(&self, w: &Word) -> Origin {
        origin_of(self.files, w)
    }
    /// The place at byte `at` of file `file`.
    pub fn origin_at(&self, file: usize, at: usize) -> Origin {
        let f = &self.files[file];
        let (line, column) = f.position(at);
        Origin::Source { file: f.shared_name().clone(), line, column }
    }
    /// The words of the process `label` (`router` for the router).
    pub fn words_of(&self, label: &str) -> &'a [Word] {
        if label == "router" {
            return self.router.map_or(&[], |r| r.words);
        }
        self.servers.iter().find(|s| s.view.label == label).map_or(&[], |s| s.words)
    }
    /// The prefill servers (their node 0) that a router entry names: at its host, listening on
    /// the port it reaches them at.
    pub fn prefills_at<'m>(&'m self, e: &'m RouterEntry) -> impl Iterator<Item = &'m WrittenServer<'a>> {
        self.servers.iter().filter(move |s| {
            s.role() == Some(Role::Prefill)
                && s.view.node == 0
                && s.view.port() == Some(e.server_port())
                && s.view.host.eq_ignore_ascii_case(&e.host)
        })
    }
}

/// The `Origin::Source` of a word, [`Origin::Derived`] for one the material's tool adds.
pub fn origin_of(files: &[SourceFile], w: &Word) -> Origin {
    if w.embed == Embed::Generated {
        return Origin::Derived;
    }
    let f = &files[w.file];
    let (line, column) = f.position(w.start);
    Origin::Source { file: f.shared_name().clone(), line, column }
}

/// The values of a group only known when its processes start.
#[derive(Clone, Debug, Default)]
pub struct Unknown {
    /// Each value that findings were withdrawn at, with the rules whose findings they were.
    pub unchecked: Vec<Unchecked>,
    /// Words that stand for arguments not known (`$ARGS`), outside any option's value.
    pub opaque: Vec<Opaque>,
}

/// A value only known at run time, and the rules whose findings at it were withdrawn.
#[derive(Clone, Debug)]
pub struct Unchecked {
    /// The process (label), or `router`.
    pub label: String,
    /// The value as written (`${PORT}`).
    pub raw: String,
    /// The codes of the withdrawn findings, in order of first withdrawal.
    pub codes: Vec<&'static str>,
}

/// A word that stands for arguments only known at run time.
#[derive(Clone, Debug)]
pub struct Opaque {
    /// The process (label), or `router`.
    pub label: String,
    /// The word.
    pub word: Word,
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
    /// A server the selector matches that listens on another port than the router's discovery
    /// port; `None` when the selector matches no server pod.
    pub server: Option<MissedServer>,
}

/// A server that a discovering router reaches at a port it does not listen on.
#[derive(Clone, Debug)]
pub struct MissedServer {
    /// Index of its launch among the linted launches.
    pub launch: usize,
    /// Where its command is, `file:line` (the file's name without its directories).
    pub written_at: String,
    /// The port it listens on, when known.
    pub listens: Option<u16>,
}

/// A pod's labels and annotations, with the labels its controller adds (a LeaderWorkerSet
/// pod's set name and worker index), and its namespace when the object names one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMeta {
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub namespace: Option<String>,
    /// True when these are the pod's own (read from a pod or pod template); false for an
    /// object's, whose pods an operator makes and labels (OME's runtimes, Dynamo's graphs).
    pub pod: bool,
    /// The `replicas` of the object that makes the pod (a Deployment's, a StatefulSet's).
    pub replicas: Option<u32>,
    /// The name of the object those `replicas` are of (a StatefulSet names its pods after it).
    pub owner: Option<String>,
    /// The named ports of the container, which a Service may forward to.
    pub ports: Vec<NamedPort>,
}

/// A container port with a name (`name`, `containerPort`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedPort {
    pub name: String,
    pub number: u16,
}

/// A Kubernetes Service of the material, which a router entry may name.
#[derive(Clone, Debug)]
pub struct Service {
    pub name: String,
    pub namespace: Option<String>,
    /// `clusterIP: None`: its name resolves to the pods themselves, which answer at any port.
    pub headless: bool,
    /// Each port it exposes, with the pod port it forwards to.
    pub ports: Vec<ServicePort>,
    /// Its selector, as `key=value` words ([`PodMeta::matches`]).
    pub selector: Vec<String>,
    /// The file, and the offset of its `ports` (else of the object).
    pub file: usize,
    pub at: usize,
}

/// One port a Service exposes (`port`), and where it forwards (`targetPort`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    pub port: u16,
    pub target: Target,
}

/// Where a Service port forwards to: a pod port, or a container port's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Port(u16),
    Named(String),
}

impl Service {
    /// True when a router reaches it at `host` (`<name>`, `<name>.<namespace>`, and the rest of
    /// `svc.cluster.local` may follow).
    pub fn named_by(&self, host: &str) -> bool {
        let mut labels = host.split('.');
        labels.next() == Some(self.name.as_str())
            && match (labels.next(), &self.namespace) {
                (Some(ns), Some(own)) => ns == own,
                _ => true,
            }
    }
    /// Where its port `port` forwards to, `None` when it exposes no such port. A headless
    /// Service's name reaches the pods at any port.
    pub fn target(&self, port: u16) -> Option<Target> {
        if self.headless {
            return Some(Target::Port(port));
        }
        self.ports.iter().find(|p| p.port == port).map(|p| p.target.clone())
    }
    /// The pod port its port `port` forwards to, a named one looked up in the pods it selects
    /// among `pods`: `Some(None)` when the pods do not say one number, `None` when it exposes no
    /// such port.
    pub fn pod_port<'m>(&self, port: u16, pods: impl Iterator<Item = &'m PodMeta>) -> Option<Option<u16>> {
        Some(match self.target(port)? {
            Target::Port(p) => Some(p),
            Target::Named(name) => {
                let mut found = pods
                    .filter(|m| !self.selector.is_empty() && m.matches(&self.selector) && self.holds(m))
                    .filter_map(|m| m.ports.iter().find(|p| p.name == name).map(|p| p.number));
                let first = found.next();
                first.filter(|f| found.all(|p| p == *f))
            }
        })
    }
    /// True when a pod of this namespace (when both are known) may be one of its.
    fn holds(&self, m: &PodMeta) -> bool {
        match (&self.namespace, &m.namespace) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

impl PodMeta {
    /// True when the pod has every label of `selector` (`key=value` words).
    pub fn matches(&self, selector: &[String]) -> bool {
        selector.iter().all(|s| {
            let (k, v) = s.split_once('=').unwrap_or((s, ""));
            self.labels.iter().any(|(lk, lv)| lk == k && lv == v)
        })
    }
    /// The value of an annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A multi-node server that `srun --nodes=N` starts with one argv, so one node rank, everywhere.
#[derive(Clone, Debug)]
pub struct SrunSameRank {
    /// The nodes of the srun step.
    pub nodes: u32,
    /// The per-task variable (`$SLURM_NODEID`) that the script's shell expanded before srun ran,
    /// as written; `None` when the rank is literal.
    pub var: Option<String>,
}

/// A line continuation that does not continue: bash ends the command there and runs the next
/// line as a command of its own, whose first word is a flag (`--page-size: command not found`).
#[derive(Clone, Debug)]
pub struct Break {
    /// What breaks it.
    pub kind: BreakKind,
    /// The file, and the source offset of the break (the `\`, the comment, the blank line).
    pub file: usize,
    pub at: usize,
    /// The words bash runs as other commands: they never reach the process. Empty when the
    /// continuation ends the text.
    pub lost: Vec<Word>,
    /// The source range from the end of the command's last word to the first lost word (to the
    /// end of the `\` when the continuation ends the text), and the shell text it reads as.
    pub gap: (usize, usize),
    pub gap_text: String,
    /// The source offset of the command's first word.
    pub command_at: usize,
}

/// What ends a continued command before its author meant it to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakKind {
    /// `\` followed by blanks: it escapes a blank, not the line break.
    BlankAfterBackslash,
    /// `\`, blanks and a comment: the `\` escapes a blank, the comment runs to the line's end.
    CommentAfterBackslash,
    /// A comment at the end of the line, which holds any `\` after it.
    CommentEndsLine,
    /// The line ends without `\`.
    NoBackslash,
    /// A comment line among the continued lines.
    CommentLine,
    /// A blank line among the continued lines.
    BlankLine,
    /// The last line ends in `\`: pasted into a terminal, the shell waits for more.
    EndOfText,
}

impl BreakKind {
    /// What breaks the continuation, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            BreakKind::BlankAfterBackslash => {
                "the `\\` is followed by blanks, so it escapes a blank, not the line break"
            }
            BreakKind::CommentAfterBackslash => {
                "the `\\` is followed by blanks and a comment, so it escapes a blank, not the line break"
            }
            BreakKind::CommentEndsLine => "a comment ends the line, and a `\\` inside a comment continues nothing",
            BreakKind::NoBackslash => "the line ends without a `\\`",
            BreakKind::CommentLine => "a comment line among the continued lines ends the command",
            BreakKind::BlankLine => "a blank line among the continued lines ends the command",
            BreakKind::EndOfText => {
                "the last line ends in `\\` with nothing after it: pasted into a terminal, the shell waits and \
                 joins whatever is typed next to the command"
            }
        }
    }
}

/// What is wrong with a `--config` use, for PD042 (or a note when the file is not at hand).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigProblem {
    /// The file was not given to the linter: its settings are unknown.
    NotGiven { path: String, at: Word },
    /// `--config` given more than once.
    Multiple { at: Word },
    /// `--config` is the last token.
    NoPath { at: Word },
    /// The extension is not `.yaml`/`.yml`.
    NotYaml { path: String, at: Word },
    /// The YAML did not parse, or its root is not a mapping.
    Unreadable { path: String, message: String, at: Word },
    /// A key with `_`: SGLang passes `--key_with_underscores`, which argparse rejects.
    Underscore { key: Word, dashed: String },
    /// A key whose option is not a plain store/store_true (SGLang raises ValueError).
    Unsupported { key: Word, action: String },
}
