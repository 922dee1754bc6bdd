//! The app's state and the one reducer that changes it. Every user action is an [`Action`]; the
//! reducer edits the deployment document and asks the core for everything derived from it (the
//! parsed deployment, the findings and their fixes). Nothing here validates on its own.

use std::rc::Rc;

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::deployment_fix::{self, Fix};
use pdlaunch_core::examples::EXAMPLES;
use pdlaunch_core::load::{parse_deployment, LoadError, Syntax};
use pdlaunch_core::plan::Origin;
use pdlaunch_core::render::{bundle, render, Format};
use pdlaunch_core::rules::{check, Finding, Report, Severity};
use pdlaunch_core::yaml_value;
use serde_json::Value;
use yew::Reducible;

/// The name pasted Lint text goes under: no extension, so the linter reads the text to tell a
/// script from a manifest.
pub const PASTED: &str = "pasted";

/// How many changes undo remembers.
const UNDO_DEPTH: usize = 100;

/// The top-level views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Builder,
    Lint,
    Explain,
}

/// The builder's output tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputTab {
    /// Launch scripts (`pdlaunch render`).
    Shell,
    /// SGLang `--config` YAML files and the scripts that load them.
    Config,
    /// Argv and environment per process.
    Json,
    /// LeaderWorkerSets and the router's Deployment and Service.
    Kubernetes,
    /// One RoleBasedGroup.
    Rbg,
    /// One DynamoGraphDeployment.
    Dynamo,
    /// One `sbatch` script.
    Slurm,
    /// An srt-slurm recipe.
    Srtctl,
    /// The deployment itself.
    Yaml,
}

impl OutputTab {
    /// Every tab, in display order.
    pub const ALL: [OutputTab; 9] = [
        OutputTab::Shell,
        OutputTab::Config,
        OutputTab::Json,
        OutputTab::Kubernetes,
        OutputTab::Rbg,
        OutputTab::Dynamo,
        OutputTab::Slurm,
        OutputTab::Srtctl,
        OutputTab::Yaml,
    ];
    /// Tab label.
    pub fn label(self) -> &'static str {
        match self {
            OutputTab::Shell => "Shell",
            OutputTab::Config => "SGLang config YAML",
            OutputTab::Json => "JSON",
            OutputTab::Kubernetes => "Kubernetes",
            OutputTab::Rbg => "RoleBasedGroup",
            OutputTab::Dynamo => "Dynamo",
            OutputTab::Slurm => "SLURM",
            OutputTab::Srtctl => "srtctl",
            OutputTab::Yaml => "Deployment YAML",
        }
    }
    /// The format `pdlaunch render --format` names it by; `None` for the deployment itself.
    pub fn format(self) -> Option<Format> {
        Some(match self {
            OutputTab::Shell => Format::Shell,
            OutputTab::Config => Format::SglangConfig,
            OutputTab::Json => Format::Json,
            OutputTab::Kubernetes => Format::Kubernetes,
            OutputTab::Rbg => Format::Rbg,
            OutputTab::Dynamo => Format::Dynamo,
            OutputTab::Slurm => Format::Slurm,
            OutputTab::Srtctl => Format::Srtctl,
            OutputTab::Yaml => return None,
        })
    }
    /// Short id used in element ids: the format's name (`config` for `sglang-config`).
    pub fn id(self) -> &'static str {
        match self {
            OutputTab::Config => "config",
            OutputTab::Yaml => "yaml",
            t => t.format().map_or("yaml", Format::as_str),
        }
    }
    /// The file name a download gets, and its MIME type.
    pub fn file(self, name: &str) -> (String, &'static str) {
        match self {
            OutputTab::Shell => (format!("{name}.sh"), "text/x-shellscript"),
            OutputTab::Config => (format!("{name}.sglang-config.txt"), "text/plain"),
            OutputTab::Json => (format!("{name}.launch.json"), "application/json"),
            OutputTab::Slurm => (format!("{name}.sbatch"), "text/x-shellscript"),
            OutputTab::Yaml => (format!("{name}.yaml"), "application/yaml"),
            t => (format!("{name}.{}.yaml", t.id()), "application/yaml"),
        }
    }
}

/// The text of an output tab: what `pdlaunch render` prints for the same format, or the
/// deployment as YAML. `Err` says why the format cannot be produced.
pub fn output_text(d: &Deployment, tab: OutputTab) -> Result<String, String> {
    let Some(format) = tab.format() else { return yaml_value::to_string(d) };
    render(d, format).map(|files| bundle(&files)).map_err(|e| e.message)
}

/// A finding with what the view needs beside it.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Position in the report (what [`Action::ApplyFix`] names).
    pub index: usize,
    /// The finding.
    pub finding: Finding,
    /// Its one-click fix, when the core found one.
    pub fix: Option<Rc<Fix>>,
}

/// Compared by what the view shows (the fix by its title), so that props compare cheaply.
impl PartialEq for Diagnostic {
    fn eq(&self, other: &Diagnostic) -> bool {
        self.index == other.index
            && self.finding == other.finding
            && self.fix.as_ref().map(|f| &f.title) == other.fix.as_ref().map(|f| &f.title)
    }
}

impl Diagnostic {
    /// The deployment field paths the finding points at.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.finding.locations.iter().filter_map(|l| match &l.origin {
            Origin::Field { path } => Some(path.as_str()),
            _ => None,
        })
    }
    /// True when the finding concerns the field at `path`: the field itself, an item of it (a
    /// token of `extra_args`), or, for a leaf field, anything below it.
    pub fn concerns(&self, path: &str) -> bool {
        self.paths().any(|p| {
            p == path || p.strip_prefix(path).is_some_and(|rest| rest.starts_with('[') || rest.starts_with('.'))
        })
    }
    /// Where "go to field" leads: the field the fix edits, else the first field concerned.
    pub fn first_path(&self) -> Option<&str> {
        self.fix.as_ref().map(|f| f.path.as_str()).or_else(|| self.paths().next())
    }
}

/// The whole app state.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// The deployment as the form edits it (may not parse).
    pub doc: Rc<Value>,
    /// The core's reading of [`Self::doc`].
    pub parsed: Result<Rc<Deployment>, Rc<LoadError>>,
    /// Findings of the parsed deployment, errors first.
    pub diagnostics: Rc<Vec<Rc<Diagnostic>>>,
    /// Incremented on every document change (persistence and memoized outputs key on it).
    pub rev: u64,
    /// The revision whose findings are computed (at start-up they come just after the first
    /// output).
    pub checked_rev: u64,
    /// The revision whose fixes are computed (fixes come a moment after the findings, so an edit
    /// shows its output and findings first).
    pub fixed_rev: u64,
    undo: Vec<(Rc<Value>, Option<String>)>,
    /// The current view.
    pub view: View,
    /// The current output tab.
    pub output: OutputTab,
    /// Text pasted into Explain.
    pub explain: String,
    /// Files given to Lint (name, text); the text box edits the first.
    pub lint: Rc<Vec<(String, String)>>,
    /// What the linted material does not say: the GPU of the prefill and of the decode servers,
    /// and the SGLang release.
    pub lint_gpu: [Option<String>; 2],
    /// The built-in model Lint assumes where the model path names none.
    pub lint_model: Option<String>,
    /// See [`Self::lint_gpu`].
    pub lint_release: Option<String>,
    /// A status line for the live region ("Imported ...", load errors).
    pub notice: Option<String>,
}

/// Everything the user can do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Set (or with `None` unset) the field at a path; consecutive edits of one field undo as one.
    Set { path: String, value: Option<Value> },
    /// Replace the deployment with an example.
    Preset(String),
    /// Replace the deployment with a file's text (YAML or JSON, by name).
    Import { name: String, text: String },
    /// Replace the deployment with one from a link.
    Restore(Value),
    /// Replace the deployment with a parsed one (from the linter).
    Open(Rc<Deployment>, String),
    /// Apply the fix of the diagnostic with this index.
    ApplyFix(usize),
    /// Undo the last change.
    Undo,
    /// Switch view.
    View(View),
    /// Switch output tab.
    Output(OutputTab),
    /// Explain input.
    Explain(String),
    /// Files dropped on Lint (name, text), replacing those it had.
    LintFiles(Vec<(String, String)>),
    /// Text typed or pasted into Lint's text box (the first file).
    LintText(String),
    /// The GPU Lint assumes for the servers of one side (`None`: unknown).
    LintGpu(Role, Option<String>),
    /// The built-in model Lint assumes (`None`: only what the model path names).
    LintModel(Option<String>),
    /// The SGLang release Lint reads the commands with (`None`: from the material, else newest).
    LintRelease(Option<String>),
    /// Show a status line.
    Notice(String),
    /// Compute the one-click fixes of the findings of this revision.
    ComputeFixes(u64),
}

impl State {
    /// A state holding `doc`.
    pub fn new(doc: Value) -> State {
        let mut s = State {
            doc: Rc::new(Value::Null),
            parsed: Err(Rc::new(LoadError {
                file: String::new(),
                line: None,
                column: None,
                path: None,
                message: String::new(),
                hint: None,
            })),
            diagnostics: Rc::new(Vec::new()),
            rev: 0,
            fixed_rev: 0,
            checked_rev: 0,
            undo: Vec::new(),
            view: View::Builder,
            output: OutputTab::Shell,
            explain: String::new(),
            lint: Rc::new(Vec::new()),
            lint_gpu: [None, None],
            lint_model: None,
            lint_release: None,
            notice: None,
        };
        s.replace_doc(doc);
        s
    }

    /// True while the findings of the current revision are not computed yet.
    pub fn checking(&self) -> bool {
        self.parsed.is_ok() && self.checked_rev != self.rev
    }

    /// The state at start-up: the deployment of the link (the URL fragment, read by
    /// [`crate::share::from_fragment`]), else the autosaved one, else the first example. A link
    /// that cannot be read leaves the editor as it would be without it, and the notice says why.
    pub fn startup(link: Option<Result<Value, String>>, saved: Option<&str>) -> State {
        let (linked, refused) = match link {
            Some(Ok(doc)) => (Some(doc), None),
            Some(Err(why)) => (None, Some(why)),
            None => (None, None),
        };
        let doc = linked
            .or_else(|| saved.and_then(|s| serde_json::from_str(s).ok()))
            .unwrap_or_else(|| preset(EXAMPLES[0].name).unwrap_or(Value::Null));
        // The output shows first; the findings follow (Action::ComputeFixes) a moment later.
        let mut s = State::new(Value::Null);
        s.replace_doc_with(doc, false);
        s.notice = refused;
        s
    }

    /// True when there is a change to undo.
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// The deployment's name, for file names.
    pub fn name(&self) -> String {
        match &self.parsed {
            Ok(d) => d.name.clone(),
            Err(_) => self.doc.get("name").and_then(Value::as_str).unwrap_or("deployment").to_owned(),
        }
    }

    fn replace_doc(&mut self, doc: Value) {
        self.replace_doc_with(doc, true);
    }

    fn replace_doc_with(&mut self, doc: Value, check_now: bool) {
        let text = serde_json::to_string(&doc).unwrap_or_default();
        self.parsed = parse_deployment(&text, "builder", Syntax::Json).map(Rc::new).map_err(Rc::new);
        self.diagnostics = Rc::new(Vec::new());
        self.doc = Rc::new(doc);
        self.rev += 1;
        if check_now {
            self.check();
        }
    }

    /// Asks the core for the findings.
    fn check(&mut self) {
        if let Ok(d) = &self.parsed {
            self.diagnostics = Rc::new(
                check(d)
                    .findings
                    .into_iter()
                    .enumerate()
                    .map(|(index, finding)| Rc::new(Diagnostic { index, finding, fix: None }))
                    .collect(),
            );
        }
        self.checked_rev = self.rev;
    }

    /// Asks the core for a one-click fix of each error and warning, and of each note that
    /// suggests a value (a skipped rule naming the preset that `model.path` names).
    fn compute_fixes(&mut self) {
        let Ok(d) = &self.parsed else { return };
        let before = Report { findings: self.diagnostics.iter().map(|d| d.finding.clone()).collect() };
        self.diagnostics = Rc::new(
            self.diagnostics
                .iter()
                .map(|diag| {
                    let fix = (diag.finding.severity != Severity::Note || diag.finding.suggestion.is_some())
                        .then(|| deployment_fix::fix_in(d, &before, &diag.finding))
                        .flatten()
                        .map(Rc::new);
                    Rc::new(Diagnostic { fix, ..(**diag).clone() })
                })
                .collect(),
        );
        self.fixed_rev = self.rev;
    }

    /// Replaces the document, remembering the old one for undo under `path` (edits of the same
    /// path in a row keep the first remembered state).
    fn change(&mut self, doc: Value, path: Option<String>) {
        if *self.doc == doc {
            return;
        }
        let coalesce = path.is_some() && self.undo.last().is_some_and(|(_, p)| *p == path);
        if !coalesce {
            self.undo.push((self.doc.clone(), path));
            if self.undo.len() > UNDO_DEPTH {
                self.undo.remove(0);
            }
        }
        self.replace_doc(doc);
    }
}

/// An example as a document.
pub fn preset(name: &str) -> Option<Value> {
    let e = EXAMPLES.iter().find(|e| e.name == name)?;
    read_deployment(e.yaml, e.name).ok().map(|d| pdlaunch_core::load::to_value(&d))
}

/// Reads a deployment from YAML or JSON text (a `.json` name is JSON; YAML reads JSON too). The
/// core reads both through one JSON deserializer of the deployment types, so the app carries
/// one copy of that code (the biggest share of its size otherwise).
#[allow(clippy::result_large_err)] // one error per import, shown and dropped
pub fn read_deployment(text: &str, name: &str) -> Result<Deployment, LoadError> {
    parse_deployment(text, name, Syntax::from_name(name))
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        s.notice = None;
        match action {
            Action::Set { path, value } => {
                let mut doc = (*s.doc).clone();
                if deployment_fix::set(&mut doc, &path, value) {
                    s.change(doc, Some(path));
                }
            }
            Action::Preset(name) => match preset(&name) {
                Some(doc) => {
                    s.change(doc, None);
                    s.notice = Some(format!("Loaded example {name}"));
                }
                None => s.notice = Some(format!("No example named {name}")),
            },
            Action::Import { name, text } => match read_deployment(&text, &name) {
                Ok(d) => {
                    s.change(pdlaunch_core::load::to_value(&d), None);
                    s.view = View::Builder;
                    s.notice = Some(format!("Imported {name}"));
                }
                Err(e) => s.notice = Some(format!("Could not import: {e}")),
            },
            Action::Restore(doc) => {
                if doc != *s.doc {
                    s.change(doc, None);
                    s.notice = Some("Loaded the deployment from the link".into());
                }
            }
            Action::Open(d, from) => {
                s.change(pdlaunch_core::load::to_value(&*d), None);
                s.view = View::Builder;
                s.notice = Some(format!("Opened the deployment read from {from}"));
            }
            Action::ApplyFix(index) => {
                if let Some(fix) = s.diagnostics.get(index).and_then(|d| d.fix.clone()) {
                    s.change(pdlaunch_core::load::to_value(&fix.deployment), None);
                    s.notice = Some(format!("Applied: {}", fix.title));
                }
            }
            Action::Undo => match s.undo.pop() {
                Some((doc, _)) => {
                    s.replace_doc((*doc).clone());
                    s.notice = Some("Undid the last change".into());
                }
                None => s.notice = Some("Nothing to undo".into()),
            },
            Action::View(v) => s.view = v,
            Action::Output(t) => s.output = t,
            Action::Explain(t) => s.explain = t,
            Action::LintFiles(files) => s.lint = Rc::new(files),
            Action::LintText(text) => {
                let mut files = (*s.lint).clone();
                match files.first_mut() {
                    Some(first) => first.1 = text,
                    None => files.push((PASTED.to_owned(), text)),
                }
                s.lint = Rc::new(files);
            }
            Action::LintGpu(role, g) => s.lint_gpu[role as usize] = g,
            Action::LintModel(m) => s.lint_model = m,
            Action::LintRelease(r) => s.lint_release = r,
            Action::Notice(n) => s.notice = Some(n),
            Action::ComputeFixes(rev) => {
                if rev != s.rev || s.fixed_rev == rev {
                    return self;
                }
                s.notice = self.notice.clone();
                if s.checked_rev != rev {
                    s.check();
                }
                s.compute_fixes();
            }
        }
        Rc::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> Rc<State> {
        Rc::new(State::startup(None, None))
    }

    fn codes(s: &State) -> Vec<&'static str> {
        s.diagnostics.iter().map(|d| d.finding.code).collect()
    }

    fn set(path: &str, v: Value) -> Action {
        Action::Set { path: path.into(), value: Some(v) }
    }

    #[test]
    fn starts_from_the_first_example_clean() {
        let s = start();
        assert_eq!(s.name(), EXAMPLES[0].name);
        assert!(s.parsed.is_ok());
        assert!(s.checking());
        let rev = s.rev;
        let s = s.reduce(Action::ComputeFixes(rev));
        assert!(!s.checking());
        assert!(!s.diagnostics.iter().any(|d| d.finding.severity == Severity::Error), "{:?}", codes(&s));
    }

    #[test]
    fn a_decode_page_size_override_is_found_fixed_and_undone() {
        let original = start();
        let s = original.clone().reduce(set("decode.extra_args", serde_json::json!(["--page-size", "1"])));
        assert!(codes(&s).contains(&"PD001"), "{:?}", codes(&s));
        assert!(s.diagnostics.iter().all(|d| d.fix.is_none()), "fixes come a moment later");
        let rev = s.rev;
        let s = s.reduce(Action::ComputeFixes(rev));
        let d = s.diagnostics.iter().find(|d| d.finding.code == "PD001").unwrap().clone();
        assert!(d.concerns("decode.extra_args"));
        assert!(!d.concerns("decode.extra"));
        let fix = d.fix.as_ref().expect("PD001 has a one-click fix");
        assert_eq!(
            (fix.title.as_str(), fix.path.as_str()),
            ("Remove `--page-size 1` from decode.extra_args", "decode.extra_args")
        );
        let fixed = s.clone().reduce(Action::ApplyFix(d.index));
        assert!(!codes(&fixed).contains(&"PD001"));
        // The document is the one before the override, its list of extra arguments now empty.
        let mut doc = (*fixed.doc).clone();
        let extra = doc["decode"].as_object_mut().unwrap().remove("extra_args");
        assert!(extra.as_ref().is_none_or(|e| e == &serde_json::json!([])), "{extra:?}");
        assert_eq!(doc, *original.doc);
        // The decode's rendered argv carries the shared page size alone.
        let parsed = fixed.parsed.as_ref().expect("the fixed document loads");
        let json: Value = serde_json::from_str(&output_text(parsed, OutputTab::Json).unwrap()).unwrap();
        let decode = json["servers"].as_array().unwrap().iter().find(|s| s["role"] == "decode").unwrap();
        let argv: Vec<&str> = decode["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let page_sizes: Vec<&str> = argv.windows(2).filter(|w| w[0] == "--page-size").map(|w| w[1]).collect();
        let shared = original.doc["shared"]["page_size"].to_string();
        assert_eq!(page_sizes, [shared.as_str()], "{argv:?}");
        let undone = fixed.reduce(Action::Undo);
        assert!(codes(&undone).contains(&"PD001"));
        assert_eq!(undone.doc, s.doc);
    }

    /// Without a geometry, the notes of skipped rules offer the preset the model path names.
    #[test]
    fn a_known_model_path_offers_its_preset_in_one_click() {
        let s = start()
            .reduce(Action::Preset("deepseek-v3-dp-deepep".into()))
            .reduce(Action::Set { path: "model.geometry".into(), value: None })
            .reduce(set("model.path", "deepseek-ai/DeepSeek-R1-0528".into()));
        let rev = s.rev;
        let s = s.reduce(Action::ComputeFixes(rev));
        let d =
            s.diagnostics.iter().find(|d| d.finding.suggestion.is_some()).expect("a note with a suggestion").clone();
        assert_eq!(d.finding.severity, Severity::Note);
        assert!(d.concerns("model.preset"));
        assert_eq!(d.fix.as_ref().map(|f| f.title.as_str()), Some("Set model.preset to deepseek-v3"));
        let fixed = s.reduce(Action::ApplyFix(d.index));
        assert_eq!(fixed.doc["model"]["preset"], "deepseek-v3");
        assert!(fixed.diagnostics.iter().all(|d| d.finding.suggestion.is_none()), "{:?}", codes(&fixed));
    }

    #[test]
    fn typing_in_one_field_undoes_as_one_change() {
        let s = start();
        let original = s.doc.clone();
        let s = s.reduce(set("name", "a".into())).reduce(set("name", "ab".into())).reduce(set("name", "abc".into()));
        assert_eq!(s.name(), "abc");
        let s = s.reduce(Action::Undo);
        assert_eq!(s.doc, original);
        assert!(!s.can_undo());
    }

    #[test]
    fn a_bad_value_is_a_load_error_at_its_path() {
        let s = start().reduce(set("prefill.tp", "two".into()));
        let e = s.parsed.as_ref().unwrap_err();
        assert_eq!(e.path.as_deref(), Some("prefill.tp"));
    }

    #[test]
    fn the_link_wins_over_the_autosave() {
        let s = start().reduce(set("shared.page_size", 64.into()));
        let saved = serde_json::to_string(&*start().doc).unwrap();
        let again = State::startup(Some(Ok((*s.doc).clone())), Some(&saved));
        assert_eq!(again.doc, s.doc);
        assert_eq!(again.notice, None);
        assert_eq!(State::startup(None, Some(&saved)).doc, start().doc);
    }

    #[test]
    fn a_link_that_cannot_be_read_leaves_the_autosave_and_says_why() {
        let s = start().reduce(set("shared.page_size", 64.into()));
        let saved = serde_json::to_string(&*s.doc).unwrap();
        let why = "The deployment in the link could not be read: it is not base64url text.".to_owned();
        let again = State::startup(Some(Err(why.clone())), Some(&saved));
        assert_eq!(again.doc, s.doc);
        assert_eq!(again.notice, Some(why.clone()));
        // Without an autosave, the first example.
        let fresh = State::startup(Some(Err(why)), None);
        assert_eq!(fresh.doc, start().doc);
        assert!(fresh.notice.is_some());
    }

    #[test]
    fn imports_read_yaml_and_report_errors() {
        let e = &EXAMPLES[1];
        let s = start().reduce(Action::Import { name: "x.yaml".into(), text: e.yaml.into() });
        assert_eq!(s.name(), e.name);
        let s = s.reduce(Action::Import { name: "bad.json".into(), text: "{".into() });
        assert!(s.notice.as_deref().unwrap_or_default().starts_with("Could not import"));
        assert_eq!(s.name(), e.name);
        let bad = "name: x\nmodel: {path: m}\nprefill:\n  tp: two\n  instances: [{nodes: [{host: a}]}]\ndecode: {instances: [{nodes: [{host: b}]}]}\n";
        let err = read_deployment(bad, "bad.yaml").unwrap_err();
        assert_eq!((err.path.as_deref(), err.line), (Some("prefill.tp"), Some(4)));
    }

    #[test]
    fn examples_read_as_the_core_reads_them() {
        for e in EXAMPLES {
            let d = read_deployment(e.yaml, e.name).unwrap();
            assert_eq!(Some(d), pdlaunch_core::examples::example(e.name), "{}", e.name);
        }
    }

    #[test]
    fn the_output_tabs_are_the_cli_bundles() {
        let s = start();
        let d = s.parsed.as_ref().unwrap();
        // Every launch format has its tab, with the CLI's bundle (the picture is drawn beside them).
        let formats: Vec<Format> = OutputTab::ALL.iter().filter_map(|t| t.format()).collect();
        let launches =
            Format::ALL.iter().filter(|f| !matches!(f, Format::Svg | Format::Mermaid)).copied().collect::<Vec<_>>();
        assert_eq!(formats.len(), launches.len());
        assert!(launches.iter().all(|f| formats.contains(f)), "{formats:?}");
        for tab in OutputTab::ALL {
            let Some(format) = tab.format() else { continue };
            let cli = render(d, format).map(|f| bundle(&f)).map_err(|e| e.message);
            assert_eq!(output_text(d, tab), cli, "{tab:?}");
        }
        assert!(output_text(d, OutputTab::Kubernetes).unwrap().contains("kind: LeaderWorkerSet"));
        assert!(output_text(d, OutputTab::Rbg).unwrap().contains("kind: RoleBasedGroup"));
        assert!(output_text(d, OutputTab::Slurm).unwrap().contains("#SBATCH"));
        assert_eq!(OutputTab::Slurm.file("x"), ("x.sbatch".to_owned(), "text/x-shellscript"));
        assert_eq!(OutputTab::Rbg.file("x").0, "x.rbg.yaml");
        assert_eq!(OutputTab::Config.id(), "config");
        assert!(output_text(d, OutputTab::Yaml).unwrap().contains("page_size: 16"));
        // A deployment the format cannot render says why instead.
        let mut bad = (**d).clone();
        bad.name = "Not_A_Label".into();
        assert!(output_text(&bad, OutputTab::Kubernetes).unwrap_err().contains("DNS label"));
    }

    /// The `kubernetes` section is edited like any other, from its absence on: the manifests
    /// follow, and a setting Kubernetes would refuse is named in the tab.
    #[test]
    fn cluster_settings_edit_the_manifests() {
        let s = start();
        let s = s.reduce(set("kubernetes.node_selector", serde_json::json!({"nvidia.com/gpu.product": "NVIDIA-H200"})));
        let s = s.reduce(set("kubernetes.tolerations", serde_json::json!(["nvidia.com/gpu:NoSchedule"])));
        let d = s.parsed.as_ref().unwrap();
        let text = output_text(d, OutputTab::Kubernetes).unwrap();
        assert!(text.contains("nodeSelector:\n          nvidia.com/gpu.product: NVIDIA-H200\n"), "{text}");
        assert!(output_text(d, OutputTab::Yaml).unwrap().contains("kubernetes:"));
        let s = s.reduce(set("kubernetes.tolerations[0]", serde_json::json!("gpu:Always")));
        let err = output_text(s.parsed.as_ref().unwrap(), OutputTab::Kubernetes).unwrap_err();
        assert!(err.starts_with("`kubernetes.tolerations[0]`"), "{err}");
    }

    /// Autosaved text is the user's own and may be anything: a document of the wrong shape
    /// opens with its error shown, and edits and checks on it do not panic.
    #[test]
    fn a_saved_document_of_any_shape_opens_and_takes_edits() {
        for saved in
            ["42", "[]", "\"x\"", "null", "{\"shared\": 5}", "{\"prefill\": []}", "{\"decode\": {\"instances\": 3}}"]
        {
            let s = Rc::new(State::startup(None, Some(saved)));
            assert!(s.parsed.is_err(), "{saved}");
            let _ = s.name();
            let s = s.reduce(set("shared.page_size", serde_json::json!(64)));
            let s = s.reduce(set("decode.instances[0].nodes[0].host", serde_json::json!("h")));
            let rev = s.rev;
            let s = s.reduce(Action::ComputeFixes(rev));
            for tab in OutputTab::ALL {
                if let Ok(d) = &s.parsed {
                    let _ = output_text(d, tab);
                }
            }
        }
    }
}
