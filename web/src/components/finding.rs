//! One finding: its rule code, what is wrong, why it matters, how to fix it, and a button that
//! applies the fix when the core found one.

use std::rc::Rc;

use pdlaunch_core::rules::rule;
use yew::prelude::*;

use super::help::spans;
use crate::browser;
use crate::form::field_id;
use crate::state::{Action, Diagnostic};

/// Props of [`FindingCard`].
#[derive(Properties, PartialEq)]
pub struct FindingProps {
    /// The finding.
    pub diagnostic: Rc<Diagnostic>,
    /// Show a "go to field" link (in the summary list).
    #[prop_or_default]
    pub goto: bool,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// One finding.
#[function_component]
pub fn FindingCard(props: &FindingProps) -> Html {
    let d = &props.diagnostic;
    let f = &d.finding;
    let sev = f.severity.as_str();
    let explanation = rule(f.code).map(|r| r.explanation).unwrap_or_default();
    let apply = d.fix.as_ref().map(|fix| {
        let dispatch = props.dispatch.clone();
        let index = d.index;
        html! {
            <button class="apply-fix" onclick={Callback::from(move |_| dispatch.emit(Action::ApplyFix(index)))}>
                {"Apply fix: "}{spans(&fix.title)}
            </button>
        }
    });
    let goto = props.goto.then(|| d.first_path()).flatten().map(|path| {
        let id = field_id(path);
        let label = format!("Go to {path}");
        html! {
            <button class="goto" onclick={Callback::from(move |_| {
                // Open any closed "more settings" around the field first.
                browser::focus(&id);
            })}>{label}</button>
        }
    });
    let id = if props.goto { format!("summary-finding-{}", d.index) } else { format!("finding-{}", d.index) };
    html! {
        <div class={classes!("finding", sev)} id={id} data-code={f.code} role="group"
             aria-label={format!("{} {}", f.code, sev)}>
            <p class="headline">
                <span class="code">{f.code}</span>
                <span class="severity">{sev}</span>
                <span class="message">{spans(&f.message)}</span>
            </p>
            <p class="fix-text"><strong>{"Fix: "}</strong>{spans(&f.fix)}</p>
            <details class="why">
                <summary>{format!("Why ({})", f.rule)}</summary>
                <p>{spans(explanation)}</p>
                if let Some(e) = f.sglang_error { <p class="sglang-error">{"SGLang: "}<code>{e}</code></p> }
            </details>
            <div class="actions">{apply}{goto}</div>
        </div>
    }
}
