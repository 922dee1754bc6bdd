//! Help text from the schema: paragraphs, with `code` spans.

use yew::prelude::*;

/// A field's or group's help text, with element id `id` (fields point `aria-describedby` at
/// it). The description's paragraphs are separated by blank lines, `code` is in backticks.
pub fn help(text: &str, id: String) -> Html {
    if text.is_empty() {
        return html! {};
    }
    html! {
        <div class="help" id={id}>
            { for text.split("\n\n").map(|para| html! { <p>{ spans(&para.replace('\n', " ")) }</p> }) }
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
