//! The view switcher: Builder, Lint, Explain.

use yew::prelude::*;

use crate::state::{Action, View};

/// What [`nav`] shows.
pub struct NavProps {
    /// The current view.
    pub view: View,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The view switcher.
pub fn nav(props: &NavProps) -> Html {
    let item = |view: View, id: &'static str, label: &'static str| {
        let dispatch = props.dispatch.clone();
        let current = props.view == view;
        html! {
            <li>
                <button id={id} class={super::class_list("nav", &[current.then_some("current")])}
                        aria-current={current.then_some("page")}
                        onclick={Callback::from(move |_| dispatch.emit(Action::View(view)))}>
                    {label}
                </button>
            </li>
        }
    };
    html! {
        <nav aria-label="Views">
            <ul class="navlist">
                {item(View::Builder, "nav-builder", "Builder")}
                {item(View::Lint, "nav-lint", "Lint")}
                {item(View::Explain, "nav-explain", "Explain")}
            </ul>
        </nav>
    }
}
