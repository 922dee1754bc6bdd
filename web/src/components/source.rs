//! A linted file with line numbers, the lines findings point at highlighted.

use yew::prelude::*;

use crate::form::field_id;

/// What [`source`] shows.
pub struct SourceProps {
    /// Position of the file among the inputs.
    pub index: usize,
    /// File name.
    pub name: AttrValue,
    /// Its text.
    pub text: AttrValue,
    /// Highlighted line ranges (first, last, is an error).
    pub places: Vec<(u32, u32, bool)>,
}

/// The element id of a line of a file.
pub fn line_id(file: &str, line: u32) -> String {
    format!("{}-{line}", field_id(&format!("src.{file}")))
}

/// A linted file.
pub fn source(props: &SourceProps) -> Html {
    let hit = |n: u32| {
        let mut class = None;
        for (a, b, err) in &props.places {
            if *a <= n && n <= *b {
                if *err {
                    return Some("hit");
                }
                class = Some("hit-warning");
            }
        }
        class
    };
    html! {
        <figure class="source-file">
            <figcaption>{props.name.clone()}</figcaption>
            <pre class="source" aria-label={format!("Source of {}", props.name)}><code>
                { for props.text.lines().enumerate().map(|(i, l)| {
                    let n = i as u32 + 1;
                    let class = hit(n);
                    html! {
                        <span class={super::class_list("line", &[class])} id={line_id(&props.name, n)} tabindex={class.map(|_| "-1")}>
                            {l.to_owned()}
                        </span>
                    }
                }) }
            </code></pre>
        </figure>
    }
}
