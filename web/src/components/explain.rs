//! Explain: an SGLang error message (or a rule code) in, the rule that prevents it out, with its
//! cause and fix.

use pdlaunch_core::explain::explain;
use pdlaunch_core::rules::{rule, Rule};
use web_sys::HtmlTextAreaElement;
use yew::prelude::*;

use super::help::spans;
use crate::state::Action;

/// Props of [`ExplainView`].
#[derive(Properties, PartialEq)]
pub struct ExplainProps {
    /// The pasted text.
    pub text: AttrValue,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The Explain view.
#[function_component]
pub fn ExplainView(props: &ExplainProps) -> Html {
    let matches = use_memo(props.text.clone(), |text| {
        let t = text.trim();
        match rule(t) {
            Some(r) => vec![(r, None, 1.0)],
            None => explain(t).into_iter().map(|e| (e.rule, Some(e.matched), e.score)).collect::<Vec<_>>(),
        }
    });
    let oninput = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: InputEvent| {
            dispatch.emit(Action::Explain(e.target_unchecked_into::<HtmlTextAreaElement>().value()))
        })
    };
    let result = |(r, matched, score): &(&'static Rule, Option<&'static str>, f64)| {
        html! {
            <article class="explanation" data-code={r.code} aria-labelledby={format!("explain-{}", r.code)}>
                <h3 id={format!("explain-{}", r.code)}>
                    <span class="code">{r.code}</span>{" "}{r.name}
                    <span class="severity">{r.severity.as_str()}</span>
                    if matched.is_some() { <span class="score">{format!("{:.0}% match", score * 100.0)}</span> }
                </h3>
                <p class="rule-summary">{spans(r.summary)}</p>
                if let Some(m) = matched { <p class="matched">{"SGLang says: "}<code>{*m}</code></p> }
                <h4>{"Cause"}</h4>
                <p>{spans(r.explanation)}</p>
                <h4>{"Fix"}</h4>
                <p>{spans(r.fix)}</p>
            </article>
        }
    };
    let body = if props.text.trim().is_empty() {
        html! { <p class="muted">{"Paste an error message from an SGLang log, or a rule code such as PD001."}</p> }
    } else if matches.is_empty() {
        html! { <p id="explain-none">{"No rule matches this text. pdlaunch knows the errors its rules prevent; "}
        {"try the line that starts with the exception name."}</p> }
    } else {
        html! { <>{ for matches.iter().map(result) }</> }
    };
    html! {
        <section class="explain" aria-labelledby="explain-title">
            <h2 id="explain-title">{"Explain an SGLang error"}</h2>
            <label for="explain-input">{"SGLang error message or rule code"}</label>
            <textarea id="explain-input" rows="5" value={props.text.clone()} {oninput} spellcheck="false"
                      placeholder="RuntimeError: Page size mismatch: prefill server has page_size=64, ..." />
            <div id="explain-results" aria-live="polite">{body}</div>
        </section>
    }
}
