//! Explain: an SGLang error message (or a rule code) in, the rule that prevents it (or the
//! environment cause behind it) out, with its cause and fix. A log excerpt gets each known message explained once, in order, under its line.

use pdlaunch_core::explain::{answer, Answer, Known};
use pdlaunch_core::rules::{Rule, RULES};
use web_sys::HtmlTextAreaElement;
use yew::prelude::*;

use super::help::spans;
use crate::state::Action;

/// The Explain view of the pasted `text`. A plain function: it renders only while its tab is
/// shown, and then nearly every update is an edit of the text, so a memo would save nothing.
pub fn explain_view(text: &str, dispatch: &Callback<Action>) -> Html {
    let t = text.trim();
    let matches = answer(text);
    let oninput = {
        let dispatch = dispatch.clone();
        Callback::from(move |e: InputEvent| {
            dispatch.emit(Action::Explain(e.target_unchecked_into::<HtmlTextAreaElement>().value()))
        })
    };
    let result = |Answer { known: k, matched, score, line: at }: &Answer| {
        let code = k.code();
        html! {
            <article class="explanation" data-code={code} aria-labelledby={format!("explain-{code}")}>
                if let Some((line, text)) = at {
                    <p class="log-line">{format!("Line {line}: ")}<code>{text.clone()}</code></p>
                }
                <h3 id={format!("explain-{code}")}>
                    <span class="code">{code}</span>{" "}{k.name()}
                    <span class="severity">{k.severity().map_or("environment", |s| s.as_str())}</span>
                    if matched.is_some() { <span class="score">{format!("{:.0}% match", score * 100.0)}</span> }
                </h3>
                <p class="rule-summary">{spans(k.summary())}</p>
                if let Some(m) = matched { <p class="matched">{"SGLang says: "}<code>{*m}</code></p> }
                <h4>{"Cause"}</h4>
                <p>{spans(k.explanation())}</p>
                <h4>{"Fix"}</h4>
                <p>{spans(k.fix())}</p>
                <p class="muted">{match k {
                    Known::Rule(r) if r.lint_only() => "The Lint tab reports it in pasted scripts and manifests.",
                    Known::Rule(_) => "The Builder reports it as you edit, and the Lint tab in pasted scripts and manifests.",
                    Known::Cause(_) => "An environment cause: no command line prevents it.",
                }}</p>
                if let Some(cmd) = k.command() {
                    <p class="command">{"To tell it apart, run "}<code>{cmd}</code></p>
                }
            </article>
        }
    };
    let body = if t.is_empty() {
        // Every rule, each a button that explains it.
        let row = |r: &&'static Rule| {
            let dispatch = dispatch.clone();
            let code = r.code;
            let onclick = Callback::from(move |_| dispatch.emit(Action::Explain(code.to_owned())));
            html! {
                <li><button class="rule-link" {onclick}><span class="code">{r.code}</span>{" "}{r.name}</button>
                    {" "}{spans(r.summary)}</li>
            }
        };
        html! {
            <>
                <p class="muted">{"Paste an error message from an SGLang log, or a rule code such as PD001."}</p>
                <details id="rule-list">
                    <summary>{format!("Every rule pdlaunch checks ({})", RULES.len())}</summary>
                    <ul class="rules">{ for RULES.iter().map(row) }</ul>
                </details>
            </>
        }
    } else if matches.is_empty() {
        html! { <p id="explain-none">{"No rule matches this text. pdlaunch knows the errors its rules prevent; "}
        {"try the line that starts with the exception name."}</p> }
    } else {
        html! { <>{ for matches.iter().map(result) }</> }
    };
    html! {
        <section class="explain" aria-labelledby="explain-title">
            <h2 id="explain-title">{"Explain an SGLang error"}</h2>
            <label for="explain-input">{"SGLang error message, log excerpt or rule code"}</label>
            <textarea id="explain-input" rows="5" value={text.to_owned()} {oninput} spellcheck="false"
                      placeholder="RuntimeError: Page size mismatch: prefill server has page_size=64, ..." />
            <div id="explain-results" aria-live="polite">{body}</div>
        </section>
    }
}
