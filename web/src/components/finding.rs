//! One finding: its rule code, what is wrong, why it matters, how to fix it, and a button that
//! applies the fix when the core found one.

use pdlaunch_core::rules::rule;
use yew::prelude::*;

use super::help::spans;
use crate::browser;
use crate::form::field_id;
use crate::state::{Action, Diagnostic};

/// One finding; `goto` adds a "go to field" link (in the summary list). Keyed by the finding's
/// index, so a list of them keeps each card (and its open "why") across updates.
pub fn finding_card(d: &Diagnostic, goto: bool, dispatch: &Callback<Action>) -> Html {
    let f = &d.finding;
    let sev = f.severity.as_str();
    let explanation = rule(f.code).map(|r| r.explanation).unwrap_or_default();
    let apply = d.fix.as_ref().map(|fix| {
        let dispatch = dispatch.clone();
        let index = d.index;
        html! {
            <button class="apply-fix" onclick={Callback::from(move |_| dispatch.emit(Action::ApplyFix(index)))}>
                {"Apply fix: "}{spans(&fix.title)}
            </button>
        }
    });
    let goto_link = goto.then(|| d.first_path()).flatten().map(|path| {
        let id = field_id(path);
        let label = format!("Go to {path}");
        html! {
            <button class="goto" onclick={Callback::from(move |_| {
                // Open any closed "more settings" around the field first.
                browser::focus(&id);
            })}>{label}</button>
        }
    });
    let id = if goto { format!("summary-finding-{}", d.index) } else { format!("finding-{}", d.index) };
    html! {
        <div key={d.index} class={super::class_list("finding", &[Some(sev)])} id={id} data-code={f.code} role="group"
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
            <div class="actions">{apply}{goto_link}</div>
        </div>
    }
}
