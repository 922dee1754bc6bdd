//! The findings summary: counts in a live region, then every finding with a link to its field.

use std::rc::Rc;

use pdlaunch_core::rules::Severity;
use yew::prelude::*;

use super::finding::finding_card;
use crate::state::{Action, Diagnostic};

/// Props of [`Diagnostics`].
#[derive(Properties, PartialEq)]
pub struct DiagnosticsProps {
    /// The findings.
    pub diagnostics: Rc<Vec<Rc<Diagnostic>>>,
    /// False when the document does not parse (there are no findings to show then).
    pub valid: bool,
    /// True while the findings are being computed (just after start-up).
    pub checking: bool,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The findings summary.
#[function_component]
pub fn Diagnostics(props: &DiagnosticsProps) -> Html {
    let count = |s: Severity| props.diagnostics.iter().filter(|d| d.finding.severity == s).count();
    let (e, w, n) = (count(Severity::Error), count(Severity::Warning), count(Severity::Note));
    // The first time findings are on screen: reported by `web/bench.sh` next to the first output.
    use_effect_with(props.checking, |checking| {
        if !checking {
            crate::browser::mark("pdlaunch-first-findings");
        }
    });
    let summary = if props.checking {
        "Checking…".to_owned()
    } else if !props.valid {
        "Fix the deployment's structure to see findings.".to_owned()
    } else if props.diagnostics.is_empty() {
        "No problems found: prefill, decode and router agree.".to_owned()
    } else {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!("{}, {}, {}", plural(e, "error"), plural(w, "warning"), plural(n, "note"))
    };
    let class = if props.checking {
        "checking"
    } else if e > 0 {
        "has-errors"
    } else if props.diagnostics.is_empty() {
        "clean"
    } else {
        "has-warnings"
    };
    html! {
        <section class="diagnostics" aria-labelledby="diagnostics-title">
            <h3 id="diagnostics-title">{"Findings"}</h3>
            <p id="diagnostics-summary" class={super::class_list("summary", &[Some(class)])} data-errors={(!props.checking).then(|| AttrValue::from(e.to_string()))} role="status"
               aria-live="polite">{summary}</p>
            <div class="finding-list">
                { for props.diagnostics.iter().map(|d| finding_card(d, true, &props.dispatch)) }
            </div>
        </section>
    }
}
