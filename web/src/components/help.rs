//! Help text from the schema: paragraphs, with `code` spans.

use yew::prelude::*;

/// Props of [`Help`].
#[derive(Properties, PartialEq)]
pub struct HelpProps {
    /// The description (paragraphs separated by blank lines, `code` in backticks).
    pub text: AttrValue,
    /// Element id (fields point `aria-describedby` at it).
    pub id: AttrValue,
}

/// A field's or group's help text.
#[function_component]
pub fn Help(props: &HelpProps) -> Html {
    if props.text.is_empty() {
        return html! {};
    }
    html! {
        <div class="help" id={props.id.clone()}>
            { for props.text.split("\n\n").map(|para| html! { <p>{ spans(&para.replace('\n', " ")) }</p> }) }
        </div>
    }
}

/// Text with `code` spans.
pub fn spans(text: &str) -> Html {
    html! {
        <>{ for text.split('`').enumerate().map(|(i, part)| {
            if i % 2 == 1 { html! { <code>{part.to_owned()}</code> } } else { html! { {part.to_owned()} } }
        }) }</>
    }
}
