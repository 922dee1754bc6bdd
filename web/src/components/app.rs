//! The app: one reducer holds the state; the views render it and send actions back.

use yew::prelude::*;

use super::builder::{builder, BuilderProps};
use super::explain::explain_view;
use super::lint::{lint_view, LintProps};
use super::nav::{nav, NavProps};
use crate::browser;
use crate::state::{Action, State, View};

/// The root component's start: the deployment of the link the page was opened with, read
/// before the app mounts (the browser's decompression is asynchronous).
#[derive(Properties, PartialEq)]
pub struct AppProps {
    /// `None` without a link; else its document, or why it cannot be read.
    pub link: Option<Result<serde_json::Value, String>>,
}

/// The root component.
#[function_component]
pub fn App(props: &AppProps) -> Html {
    let state = use_reducer(|| {
        let s = State::startup(props.link.clone(), browser::load(browser::AUTOSAVE_KEY).as_deref());
        browser::mark("pdlaunch-state");
        s
    });
    let dispatch = {
        let state = state.clone();
        Callback::from(move |a: Action| state.dispatch(a))
    };
    // Persist every document change: the URL fragment (a link reproduces it) and local storage.
    // The fragment is compressed asynchronously; only the newest change writes it.
    let newest = use_mut_ref(|| 0u64);
    use_effect_with((state.rev, state.doc.clone()), move |(_, doc)| {
        browser::save(browser::AUTOSAVE_KEY, &doc.to_string());
        let turn = {
            let mut n = newest.borrow_mut();
            *n += 1;
            *n
        };
        let doc = doc.clone();
        wasm_bindgen_futures::spawn_local(async move {
            if let Ok(fragment) = crate::share::to_fragment(&doc).await {
                if *newest.borrow() == turn {
                    browser::replace_fragment(&fragment);
                }
            }
        });
    });
    // A link pasted into the address bar of this tab changes only the fragment: load it.
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let listener = browser::on_fragment_change(move |f| {
                let dispatch = dispatch.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    match crate::share::from_fragment(&f).await {
                        Some(Ok(doc)) => dispatch.emit(Action::Restore(doc)),
                        Some(Err(why)) => dispatch.emit(Action::Notice(why)),
                        None => {}
                    }
                });
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
