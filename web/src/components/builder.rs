//! The builder: toolbar, the form over the deployment, and beside it the findings, the outputs
//! and the picture.

use yew::prelude::*;

use super::diagnostics::Diagnostics;
use super::outputs::Outputs;
use super::picture::Picture;
use super::section::{FormShared, Section};
use super::toolbar::{toolbar, ToolbarProps};
use crate::browser;
use crate::state::{Action, State};

/// What [`builder`] shows.
pub struct BuilderProps {
    /// The app state.
    pub state: State,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The builder view.
pub fn builder(props: &BuilderProps) -> Html {
    let s = &props.state;
    // A deployment file dropped anywhere on the builder is imported.
    let ondragover = Callback::from(|e: DragEvent| e.prevent_default());
    let ondrop = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if let Some(file) = e.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)) {
                let dispatch = dispatch.clone();
                browser::read_file(file, move |name, text| dispatch.emit(Action::Import { name, text }));
            }
        })
    };
    let load_error = s.parsed.as_ref().err().map(|e| {
        let at = e.path.clone().map(|p| format!("field `{p}`: ")).unwrap_or_default();
        html! {
            <div class="load-error" role="alert" id="load-error">
                <strong>{"Not a valid deployment: "}</strong>{at}{e.message.clone()}
                if let Some(h) = &e.hint { <p class="hint">{"Hint: "}{h.clone()}</p> }
            </div>
        }
    });
    let form = FormShared {
        diagnostics: s.diagnostics.clone(),
        error_path: s.parsed.as_ref().err().and_then(|e| e.path.clone()).map(AttrValue::from),
        dispatch: props.dispatch.clone(),
    };
    html! {
        <div class="builder" {ondragover} {ondrop}>
            <h2 class="sr-only">{"Builder"}</h2>
            { toolbar(&ToolbarProps { can_undo: s.can_undo(), parsed: s.parsed.clone().ok(), name: s.name().into(), dispatch: props.dispatch.clone() }) }
            <div class="columns">
                <section class="form" aria-labelledby="form-title">
                    <h2 id="form-title">{"Deployment"}</h2>
                    <button class="jump" onclick={Callback::from(|_| browser::focus("results-title"))}>
                        {"Jump to findings and output"}
                    </button>
                    {load_error}
                    <Section def="Deployment" path="" value={s.doc.clone()} {form} />
                </section>
                <section class="results" aria-labelledby="results-title">
                    <h2 id="results-title" tabindex="-1">{"Findings and output"}</h2>
                    <Diagnostics diagnostics={s.diagnostics.clone()} valid={s.parsed.is_ok()} checking={s.checking()} dispatch={props.dispatch.clone()} />
                    <Outputs parsed={s.parsed.clone().ok()} tab={s.output} dispatch={props.dispatch.clone()} />
                    <Picture parsed={s.parsed.clone().ok()} />
                </section>
            </div>
        </div>
    }
}
