//! Lint: paste or drop existing launch scripts or manifests. The core finds the SGLang launches
//! in them, reports drift between prefill, decode and router at the lines concerned, writes the
//! corrected files, and reconstructs the deployment they amount to ("open in builder"). Pasted
//! `/server_info` documents of running servers are checked as `pdlaunch probe` checks the servers
//! (the core's `probe` module), with no request leaving the app.

use std::rc::Rc;

use pdlaunch_core::deployment::Role;
use pdlaunch_core::lint::edit::{fix_all, FixedFile};
use pdlaunch_core::lint::reconstruct::{deployment, Reconstructed};
use pdlaunch_core::lint::{lint, Input, Linted, Options};
use pdlaunch_core::release::Release;
use pdlaunch_core::rules::Severity;
use web_sys::{HtmlSelectElement, HtmlTextAreaElement};
use yew::prelude::*;

use super::lint_finding::{lint_finding_card, LintFindingProps};
use super::source::{source, SourceProps};
use crate::browser;
use crate::state::Action;

/// What [`lint_view`] shows.
pub struct LintProps {
    /// The files (name, text); the text box edits the first.
    pub files: Rc<Vec<(String, String)>>,
    /// The GPU of the prefill and of the decode servers, when the user names them.
    pub gpus: [Option<String>; 2],
    /// The built-in model, when the user names it.
    pub model: Option<String>,
    /// The SGLang release, when the user names it.
    pub release: Option<String>,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// What the core made of the files.
pub struct LintResult {
    /// Findings, launches and groups.
    pub linted: Linted,
    /// The corrected files.
    pub fixed: Vec<FixedFile>,
    /// The deployment of each group.
    pub deployments: Vec<Result<Reconstructed, String>>,
}

/// What the user tells the linter that the material may not say (schema spellings).
#[derive(Clone, Copy, Default)]
pub struct Assumed<'a> {
    /// The GPU model of the prefill and of the decode servers.
    pub gpus: [Option<&'a str>; 2],
    /// The built-in model (`model.preset`).
    pub model: Option<&'a str>,
    /// The SGLang release.
    pub release: Option<&'a str>,
}

/// Runs the linter on the files, assuming what the user named.
pub fn run(files: &[(String, String)], assumed: Assumed) -> LintResult {
    let Assumed { gpus, model, release } = assumed;
    let inputs: Vec<Input> = files.iter().map(|(n, t)| Input::new(n.clone(), t.clone())).collect();
    let gpu = |g: Option<&str>| g.and_then(pdlaunch_core::deployment::Gpu::parse);
    let opts = Options {
        prefill_gpu: gpu(gpus[0]),
        decode_gpu: gpu(gpus[1]),
        model_preset: model.map(str::to_owned),
        release: release.and_then(|r| Release::ALL.into_iter().find(|x| x.as_str() == r)),
        ..Options::default()
    };
    let linted = lint(&inputs, &opts);
    let fixed = fix_all(&inputs, &opts);
    let deployments = (0..linted.groups.len()).map(|g| deployment(&linted, g)).collect();
    LintResult { linted, fixed, deployments }
}

/// Pasted text that is SGLang `/server_info` JSON (one document, several, or an array of them),
/// checked as a probe of those servers; `None` for launch material.
pub fn server_info(text: &str) -> Option<Result<Vec<pdlaunch_core::rules::Finding>, String>> {
    let t = text.trim_start();
    ((t.starts_with('{') || t.starts_with('[')) && t.contains("\"model_path\""))
        .then(|| pdlaunch_core::probe::check_pasted(t))
}

/// The findings of pasted `/server_info` documents, each at the document it concerns.
fn server_info_view(checked: Result<Vec<pdlaunch_core::rules::Finding>, String>) -> Html {
    let findings = match checked {
        Ok(f) => f,
        Err(e) => return html! { <p class="load-error">{e}</p> },
    };
    html! {
        <div id="server-info-findings">
            <h3>{"Findings"}</h3>
            { for findings.iter().map(|f| {
                let places: Vec<String> = f.locations.iter().map(|l| match &l.flag {
                    Some(flag) => format!("{} `{flag}` ({})", l.process, l.origin),
                    None => l.process.clone(),
                }).collect();
                html! {
                    <div class={super::class_list("finding", &[Some(f.severity.as_str())])} data-code={f.code}>
                        <p><strong>{format!("{} {}", f.code, f.rule)}</strong>{": "}{f.message.clone()}</p>
                        <p class="muted">{places.join("; ")}</p>
                        <p>{"Fix: "}{f.fix.clone()}</p>
                    </div>
                }
            }) }
            if findings.is_empty() { <p class="summary clean">{"No drift found."}</p> }
        </div>
    }
}

/// The Lint view. A plain function that lints on each render: it renders only while its tab is
/// shown, where nearly every update changes what is linted, so a memo would save little.
pub fn lint_view(props: &LintProps) -> Html {
    let assumed = Assumed {
        gpus: [props.gpus[0].as_deref(), props.gpus[1].as_deref()],
        model: props.model.as_deref(),
        release: props.release.as_deref(),
    };
    let pasted_info = props.files.first().and_then(|f| server_info(&f.1));
    let result = run(if pasted_info.is_some() { &[] } else { &props.files }, assumed);
    let schema = crate::form::Schema::get();
    let gpus = schema.choices("Gpu");
    let models: Vec<String> = pdlaunch_core::model::PRESET_NAMES.iter().map(|n| (*n).to_owned()).collect();
    let option = |id: &'static str,
                  label: &'static str,
                  choices: Vec<String>,
                  current: Option<String>,
                  unset: &'static str,
                  make: fn(Option<String>) -> Action| {
        let dispatch = props.dispatch.clone();
        let onchange = Callback::from(move |e: Event| {
            let v = e.target_unchecked_into::<HtmlSelectElement>().value();
            dispatch.emit(make((!v.is_empty()).then_some(v)));
        });
        html! {
            <span class="option">
                <label for={id}>{label}</label>
                <select id={id} {onchange}>
                    <option value="" selected={current.is_none()}>{unset}</option>
                    { for choices.into_iter().map(|c| html! {
                        <option value={c.clone()} selected={current.as_deref() == Some(c.as_str())}>{c.clone()}</option>
                    }) }
                </select>
            </span>
        }
    };
    let oninput = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: InputEvent| {
            dispatch.emit(Action::LintText(e.target_unchecked_into::<HtmlTextAreaElement>().value()))
        })
    };
    let ondragover = Callback::from(|e: DragEvent| e.prevent_default());
    let ondrop = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            let Some(list) = e.data_transfer().and_then(|d| d.files()) else { return };
            let n = list.length();
            let got = Rc::new(std::cell::RefCell::new(Vec::new()));
            for i in 0..n {
                let Some(file) = list.get(i) else { continue };
                let (got, dispatch) = (got.clone(), dispatch.clone());
                browser::read_file(file, move |name, text| {
                    got.borrow_mut().push((name, text));
                    if got.borrow().len() as u32 == n {
                        let mut files = got.borrow().clone();
                        pdlaunch_core::sort::sort(&mut files);
                        dispatch.emit(Action::LintFiles(files));
                    }
                });
            }
        })
    };
    let text = props.files.first().map(|f| f.1.clone()).unwrap_or_default();
    let others: Vec<String> = props.files.iter().skip(1).map(|f| f.0.clone()).collect();
    let l = &result.linted;
    let has_input = props.files.iter().any(|f| !f.1.trim().is_empty());
    let summary = if !has_input {
        String::new()
    } else if l.launches.is_empty() {
        // What was read instead, and why none of it starts SGLang.
        let seen: Vec<String> = l
            .seen
            .iter()
            .take(3)
            .map(|s| {
                let file = &l.files[s.file];
                format!("{}:{}: `{}`: {}", file.name, file.position(s.at).0, s.command, s.why)
            })
            .collect();
        match seen.is_empty() {
            true => "No SGLang launch found in this text.".to_owned(),
            false => format!("No SGLang launch found in this text. Read: {}", seen.join("; ")),
        }
    } else {
        let n = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{} in {}: {}, {}, {}",
            n(l.launches.len(), "launch", "launches"),
            n(l.groups.len(), "deployment", "deployments"),
            n(l.count(Severity::Error), "error", "errors"),
            n(l.count(Severity::Warning), "warning", "warnings"),
            n(l.count(Severity::Note), "note", "notes")
        )
    };
    let groups = result.deployments.iter().enumerate().map(|(g, r)| {
        let name = l.groups[g].name.clone();
        let opened = match r {
            Ok(rec) => {
                let d = Rc::new(rec.deployment.clone());
                let dispatch = props.dispatch.clone();
                let from = name.clone();
                let open = Callback::from(move |_| dispatch.emit(Action::Open(d.clone(), from.clone())));
                html! {
                    <div class="group-open">
                        <button id={if g == 0 { "lint-open".to_owned() } else { format!("lint-open-{g}") }} onclick={open}>
                            {format!("Open deployment “{name}” in the builder")}
                        </button>
                        if !rec.notes.is_empty() {
                            <ul class="notes">{ for rec.notes.iter().map(|n| html! { <li>{n.clone()}</li> }) }</ul>
                        }
                    </div>
                }
            }
            Err(e) => html! { <p class="muted">{format!("Deployment “{name}” cannot be reconstructed: {e}")}</p> },
        };
        html! { <>{ super::picture::lint_picture(l, g) }{opened}</> }
    });
    html! {
        <section class="lint" aria-labelledby="lint-title" {ondragover} {ondrop}>
            <h2 id="lint-title">{"Lint existing launch scripts and manifests"}</h2>
            <label for="lint-input">{"Shell script, command lines, Kubernetes or compose YAML, srtctl recipe (paste, or drop files here)"}</label>
            <textarea id="lint-input" rows="12" value={text} {oninput} spellcheck="false" autocomplete="off"
                      placeholder="python -m sglang.launch_server --model-path ... --disaggregation-mode prefill ..." />
            if !others.is_empty() { <p class="muted">{format!("Also linting: {}", others.join(", "))}</p> }
            <div class="lint-options">
                {option("lint-prefill-gpu", "Prefill GPU", gpus.clone(), props.gpus[0].clone(), "unknown",
                        |g| Action::LintGpu(Role::Prefill, g))}
                {option("lint-decode-gpu", "Decode GPU", gpus, props.gpus[1].clone(), "unknown",
                        |g| Action::LintGpu(Role::Decode, g))}
                {option("lint-model", "Model", models, props.model.clone(), "as the model path names it",
                        Action::LintModel)}
                {option("lint-release", "SGLang release", schema.choices("Release"), props.release.clone(),
                        "from the material, else newest", Action::LintRelease)}
            </div>
            <p class="muted">{"Or paste the /server_info JSON of running servers (one document or several) to check \
                them as `pdlaunch probe` does. The app sends no request: it checks what you paste, here."}</p>
            if let Some(checked) = pasted_info {
                { server_info_view(checked) }
            } else {
            <p id="lint-summary" class="summary" role="status" aria-live="polite">{summary}</p>
            { for l.unread.iter().map(|u| html! {
                <p class="load-error">{format!("{}:{}:{}: {}", u.file, u.line, u.column, u.message)}</p>
            }) }
            { for groups }
            <div class="lint-grid">
                <div>
                    <h3>{"Findings"}</h3>
                    { for l.findings.iter().enumerate().map(|(i, f)| lint_finding_card(&LintFindingProps { index: i, finding: Rc::new(f.clone()) })) }
                    if has_input && l.findings.is_empty() && !l.launches.is_empty() { <p class="summary clean">{"No drift found."}</p> }
                </div>
                <div>
                    <h3>{"Sources"}</h3>
                    { for l.files.iter().enumerate().map(|(i, f)| {
                        let places: Vec<(u32, u32, bool)> = l.findings.iter().flat_map(|lf| {
                            let err = lf.finding.severity == Severity::Error;
                            lf.places.iter().filter(|p| p.file == f.name).map(move |p| (p.line, p.end_line, err))
                        }).collect();
                        source(&SourceProps { index: i, name: f.name.clone().into(), text: f.text.clone().into(), places })
                    }) }
                </div>
            </div>
            if !result.fixed.is_empty() {
                <h3>{"Fixed"}</h3>
                { for result.fixed.iter().map(|f| {
                    let (name, after) = (f.name.clone(), f.after.clone());
                    let download = Callback::from(move |_| { let _ = browser::download(&name, "text/plain", &after); });
                    html! {
                        <div class="fixed">
                            <ul>{ for f.fixes.iter().map(|x| html! { <li>{x.clone()}</li> }) }</ul>
                            <button class="download-fixed" onclick={download}>{format!("Download fixed {}", f.name)}</button>
                            <pre class="fixed-text" tabindex="0" aria-label={format!("Fixed {}", f.name)}><code>{f.after.clone()}</code></pre>
                        </div>
                    }
                }) }
            }
            }
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_server_info_is_checked_as_a_probe() {
        let text = [
            include_str!("../../../tests/fixtures/probe/clean/p0.server_info.json"),
            include_str!("../../../tests/fixtures/probe/page-size/d1.server_info.json"),
        ]
        .concat();
        let f = server_info(&text).expect("read as server info").expect("checked");
        assert!(f.iter().any(|f| f.code == "PD001"), "{f:?}");
        assert!(server_info("python -m sglang.launch_server --model-path m").is_none());
        assert!(server_info("{\"model_path\": 3}").is_some_and(|r| r.is_err()));
    }

    #[test]
    fn the_drifted_fixture_shows_pd001_a_fix_and_a_deployment() {
        let r = run(
            &[("drifted.sh".into(), include_str!("../../e2e/fixtures/drifted.sh").into())],
            Assumed { gpus: [Some("h200"); 2], ..Assumed::default() },
        );
        assert!(r.linted.findings.iter().any(|f| f.finding.code == "PD001"), "{:?}", r.linted.findings);
        let f = r.linted.findings.iter().find(|f| f.finding.code == "PD001").unwrap();
        assert!(f.places.iter().any(|p| p.line > 0));
        assert!(!r.fixed.is_empty());
        assert!(r.deployments.first().is_some_and(|d| d.is_ok()));
    }

    #[test]
    fn a_named_model_gives_the_rules_its_geometry() {
        let server = |mode: &str, port: u16| {
            format!(
                "python3 -m sglang.launch_server --model-path /models/local --disaggregation-mode {mode} --tp 16 \
                 --port {port} &\n"
            )
        };
        let files = [("run.sh".to_owned(), server("prefill", 30000) + &server("decode", 30001))];
        let unknown = |r: &LintResult| {
            r.linted.findings.iter().filter(|f| f.finding.message.contains("model geometry unknown")).count()
        };
        let r = run(&files, Assumed::default());
        assert!(unknown(&r) > 0);
        assert!(r.linted.findings.iter().any(|f| f.finding.fix.contains("\"Model\" in the app")));
        let r = run(&files, Assumed { model: Some("deepseek-v3"), ..Assumed::default() });
        assert_eq!(unknown(&r), 0, "{:?}", r.linted.findings);
    }

    #[test]
    fn a_pasted_srtctl_recipe_is_linted_fixed_and_opens_as_a_deployment() {
        let recipe = include_str!("../../../tests/fixtures/lint/srtctl-qwen3-2p2d.yaml").replacen(
            "dp-size: 2\n      page-size: 32",
            "dp-size: 2\n      page-size: 64",
            1,
        );
        // Pasted text has no file name: the reader is chosen from the text.
        let r = run(&[("pasted".into(), recipe)], Assumed::default());
        assert_eq!(r.linted.launches.len(), 4);
        let codes: Vec<&str> = r.linted.findings.iter().map(|f| f.finding.code).collect();
        assert_eq!(codes, ["PD001"], "{:?}", r.linted.findings);
        let fixed = r.fixed.first().map(|f| f.after.clone()).expect("a fixed file");
        assert!(run(&[("pasted".into(), fixed)], Assumed::default()).linted.findings.is_empty());
        let d = r.deployments.first().and_then(|d| d.as_ref().ok()).expect("a deployment");
        assert_eq!(d.deployment.prefill.instances.len(), 2);
    }
}
