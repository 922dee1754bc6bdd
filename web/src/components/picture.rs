//! The picture of the deployment (the core's `picture`: processes on their hosts, their links and
//! the findings on them), beside the outputs. It is drawn a moment after each change, so an edit
//! shows its output and findings first; the Lint tab draws the picture of what it read.

use std::rc::Rc;

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::picture;
use yew::prelude::*;

use crate::browser;

/// Props of [`Picture`].
#[derive(Properties, PartialEq)]
pub struct PictureProps {
    /// The deployment, when valid.
    pub parsed: Option<Rc<Deployment>>,
}

/// The builder's picture.
#[function_component]
pub fn Picture(props: &PictureProps) -> Html {
    let drawn = use_state(|| None::<AttrValue>);
    {
        let drawn = drawn.clone();
        use_effect_with(props.parsed.clone(), move |parsed| {
            let parsed = parsed.clone();
            browser::later(move || {
                drawn.set(parsed.map(|d| AttrValue::from(picture::svg(&picture::of_deployment(&d)))))
            });
        });
    }
    let body = match (&*drawn, &props.parsed) {
        (Some(svg), Some(_)) => Html::from_html_unchecked(svg.clone()),
        (None, Some(_)) => html! { <p class="muted">{"Drawing…"}</p> },
        (_, None) => html! { <p class="muted">{"No picture until the deployment is valid."}</p> },
    };
    figure("picture", "The deployment: each process on its host, who talks to whom, and the findings on them", body)
}

/// The picture of group `g` of what the linter read, as the Lint tab shows it.
pub fn lint_picture(linted: &pdlaunch_core::lint::Linted, g: usize) -> Html {
    let Some(graph) = picture::of_lint_group(linted, g) else { return Html::default() };
    let id = if g == 0 { "lint-picture".to_owned() } else { format!("lint-picture-{g}") };
    figure(&id, "What was read: each server on its host, who talks to whom, and the findings on them", {
        Html::from_html_unchecked(AttrValue::from(picture::svg(&graph)))
    })
}

fn figure(id: &str, caption: &str, body: Html) -> Html {
    html! {
        <figure class="picture" id={id.to_owned()}>
            <figcaption>{caption}</figcaption>
            // It scrolls sideways when wider than the column: focusable, so the keyboard scrolls it too.
            <div class="picture-body" tabindex="0" role="region" aria-label={caption.to_owned()}>{body}</div>
        </figure>
    }
}
