//! The app: one reducer holds the state; the views render it and send actions back.

use yew::prelude::*;

use super::builder::{builder, BuilderProps};
use super::explain::explain_view;
use super::lint::{lint_view, LintProps};
use super::nav::{nav, NavProps};
use crate::browser;
use crate::state::{Action, State, View};

/// The root component.
#[function_component]
pub fn App() -> Html {
    let state = use_reducer(|| {
        let s = State::startup(browser::fragment().as_deref(), browser::load(browser::AUTOSAVE_KEY).as_deref());
        browser::mark("pdlaunch-state");
        s
    });
    let dispatch = {
        let state = state.clone();
        Callback::from(move |a: Action| state.dispatch(a))
    };
    // Persist every document change: the URL fragment (a link reproduces it) and local storage.
    use_effect_with((state.rev, state.doc.clone()), |(_, doc)| {
        browser::replace_fragment(&crate::share::to_fragment(doc));
        browser::save(browser::AUTOSAVE_KEY, &doc.to_string());
    });
    // A link pasted into the address bar of this tab changes only the fragment: load it.
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let listener = browser::on_fragment_change(move |f| {
                if let Some(doc) = crate::share::from_fragment(&f) {
                    dispatch.emit(Action::Restore(doc));
                }
            });
            move || drop(listener)
        });
    }
    // The one-click fixes are computed a moment after each change, so an edit shows its output
    // and findings first.
    {
        let dispatch = dispatch.clone();
        use_effect_with(state.rev, move |rev| {
            let rev = *rev;
            browser::later(move || dispatch.emit(Action::ComputeFixes(rev)));
        });
    }
    // Ctrl+Z / Cmd+Z outside text boxes undoes the last change (text boxes keep their own undo).
    let onkeydown = {
        let dispatch = dispatch.clone();
        Callback::from(move |e: KeyboardEvent| {
            let typing = e
                .target()
                .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
                .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA"));
            if (e.ctrl_key() || e.meta_key()) && e.key().eq_ignore_ascii_case("z") && !typing {
                e.prevent_default();
                dispatch.emit(Action::Undo);
            }
        })
    };
    let view = match state.view {
        View::Builder => builder(&BuilderProps { state: (*state).clone(), dispatch: dispatch.clone() }),
        View::Lint => lint_view(&LintProps {
            files: state.lint.clone(),
            gpus: state.lint_gpu.clone(),
            model: state.lint_model.clone(),
            release: state.lint_release.clone(),
            dispatch: dispatch.clone(),
        }),
        View::Explain => explain_view(&state.explain, &dispatch),
    };
    html! {
        <div class="app" {onkeydown}>
            <a class="skip" href="#main">{"Skip to content"}</a>
            <header class="top">
                <h1>{"pdlaunch"}</h1>
                <p class="tagline">{"Describe an SGLang prefill-decode deployment once; get matched commands, checked."}</p>
                { nav(&NavProps { view: state.view, dispatch: dispatch.clone() }) }
            </header>
            <p class="notice" role="status" aria-live="polite" id="notice">{state.notice.clone().unwrap_or_default()}</p>
            <main id="main" tabindex="-1">{view}</main>
        </div>
    }
}
