//! One lint finding: rule code, message, fix, and the file positions of both sides.

use std::rc::Rc;

use pdlaunch_core::lint::LintFinding;
use pdlaunch_core::rules::rule;
use yew::prelude::*;

use super::help::spans;
use crate::browser;

/// What [`lint_finding_card`] shows.
pub struct LintFindingProps {
    /// Its position in the list.
    pub index: usize,
    /// The finding.
    pub finding: Rc<LintFinding>,
}

/// One lint finding.
pub fn lint_finding_card(props: &LintFindingProps) -> Html {
    let f = &props.finding.finding;
    let sev = f.severity.as_str();
    let explanation = rule(f.code).map(|r| r.explanation).unwrap_or_default();
    html! {
        <div class={super::class_list("finding", &[Some(sev)])} id={format!("lint-finding-{}", props.index)} data-code={f.code}
             role="group" aria-label={format!("{} {}", f.code, sev)}>
            <p class="headline">
                <span class="code">{f.code}</span>
                <span class="severity">{sev}</span>
                <span class="message">{spans(&f.message)}</span>
            </p>
            <p class="fix-text"><strong>{"Fix: "}</strong>{spans(&f.fix)}</p>
            <div class="actions">
                { for props.finding.places.iter().map(|p| {
                    let target = crate::components::source::line_id(&p.file, p.line);
                    let label = format!("{}:{}{}", p.file, p.line, p.flag.as_ref().map(|f| format!(" {f}")).unwrap_or_default());
                    html! { <button class="place" onclick={Callback::from(move |_| browser::focus(&target))}>{label}</button> }
                }) }
            </div>
            <details class="why">
                <summary>{format!("Why ({})", f.rule)}</summary>
                <p>{spans(explanation)}</p>
                if let Some(e) = f.sglang_error { <p class="sglang-error">{"SGLang: "}<code>{e}</code></p> }
            </details>
        </div>
    }
}
