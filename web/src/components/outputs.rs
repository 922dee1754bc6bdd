//! The output tabs: launch scripts, SGLang config YAML, JSON, Kubernetes manifests, and the
//! deployment as YAML, each with copy and download buttons.

use std::rc::Rc;

use pdlaunch_core::deployment::Deployment;
use yew::prelude::*;

use crate::browser;
use crate::state::{output_text, Action, OutputTab};

/// Props of [`Outputs`].
#[derive(Properties, PartialEq)]
pub struct OutputsProps {
    /// The deployment, when valid.
    pub parsed: Option<Rc<Deployment>>,
    /// The current tab.
    pub tab: OutputTab,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The output tabs.
#[function_component]
pub fn Outputs(props: &OutputsProps) -> Html {
    let text = use_memo((props.parsed.clone(), props.tab), |(parsed, tab)| {
        parsed.as_ref().map(|d| (d.name.clone(), output_text(d, *tab)))
    });
    // The first time an output is on screen: the start-up measure of `web/bench.sh`.
    use_effect_with((), |_| browser::mark("pdlaunch-first-output"));
    let tabs = OutputTab::ALL.iter().map(|&t| {
        let dispatch = props.dispatch.clone();
        let selected = t == props.tab;
        let onkeydown = {
            let dispatch = props.dispatch.clone();
            Callback::from(move |e: KeyboardEvent| {
                let i = OutputTab::ALL.iter().position(|x| *x == t).unwrap_or(0);
                let n = OutputTab::ALL.len();
                let next = match e.key().as_str() {
                    "ArrowRight" => OutputTab::ALL[(i + 1) % n],
                    "ArrowLeft" => OutputTab::ALL[(i + n - 1) % n],
                    _ => return,
                };
                e.prevent_default();
                dispatch.emit(Action::Output(next));
                browser::focus(&format!("out-{}", next.id()));
            })
        };
        html! {
            <button role="tab" id={format!("out-{}", t.id())} aria-selected={selected.to_string()}
                    aria-controls="output-panel" tabindex={if selected { "0" } else { "-1" }}
                    class={super::class_list("tab", &[selected.then_some("current")])} {onkeydown}
                    onclick={Callback::from(move |_| dispatch.emit(Action::Output(t)))}>{t.label()}</button>
        }
    });
    let body = match &*text {
        None => html! { <p class="muted">{"No output until the deployment is valid."}</p> },
        Some((_, Err(reason))) => html! { <p class="muted" id="output-unavailable">{reason.clone()}</p> },
        Some((name, Ok(out))) => {
            let (file, mime) = props.tab.file(name);
            let copy = {
                let out = out.clone();
                let dispatch = props.dispatch.clone();
                Callback::from(move |_| {
                    browser::copy(&out);
                    dispatch.emit(Action::Notice("Copied to the clipboard".into()));
                })
            };
            let download = {
                let out = out.clone();
                let file = file.clone();
                let dispatch = props.dispatch.clone();
                Callback::from(move |_| {
                    if browser::download(&file, mime, &out).is_ok() {
                        dispatch.emit(Action::Notice(format!("Downloaded {file}")));
                    }
                })
            };
            html! {
                <>
                    <div class="output-actions">
                        <button id="copy-output" onclick={copy}>{"Copy"}</button>
                        <button id="download-output" onclick={download}>{format!("Download {file}")}</button>
                    </div>
                    <pre id="output" tabindex="0" aria-label={format!("{} output", props.tab.label())}><code>{out.clone()}</code></pre>
                </>
            }
        }
    };
    html! {
        <section class="outputs" aria-labelledby="outputs-title">
            <h3 id="outputs-title">{"Output"}</h3>
            <div role="tablist" aria-label="Output format" class="tabs">{ for tabs }</div>
            <div role="tabpanel" id="output-panel" aria-labelledby={format!("out-{}", props.tab.id())}>{body}</div>
        </section>
    }
}
