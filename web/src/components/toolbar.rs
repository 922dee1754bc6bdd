//! The builder's toolbar: examples, import, export, undo, link.

use std::rc::Rc;

use pdlaunch_core::deployment::Deployment;
use pdlaunch_core::examples::EXAMPLES;
use pdlaunch_core::yaml_value;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

use crate::browser;
use crate::state::Action;

/// What [`toolbar`] shows.
pub struct ToolbarProps {
    /// Whether there is a change to undo.
    pub can_undo: bool,
    /// The deployment, when it is valid (export needs it).
    pub parsed: Option<Rc<Deployment>>,
    /// The deployment's name, for file names.
    pub name: AttrValue,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The toolbar.
pub fn toolbar(props: &ToolbarProps) -> Html {
    let on_preset = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            let name = select.value();
            if !name.is_empty() {
                dispatch.emit(Action::Preset(name));
                select.set_value("");
            }
        })
    };
    let on_import = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                let dispatch = dispatch.clone();
                browser::read_file(file, move |name, text| dispatch.emit(Action::Import { name, text }));
            }
            input.set_value("");
        })
    };
    let export = |yaml: bool| {
        let parsed = props.parsed.clone();
        let name = props.name.clone();
        let dispatch = props.dispatch.clone();
        Callback::from(move |_| {
            let Some(d) = &parsed else { return };
            let (file, mime, text) = if yaml {
                (format!("{name}.yaml"), "application/yaml", yaml_value::to_string(&**d).unwrap_or_default())
            } else {
                (
                    format!("{name}.json"),
                    "application/json",
                    // Through a value: the deployment types then serialize one way only.
                    serde_json::to_string_pretty(&pdlaunch_core::load::to_value(&**d)).unwrap_or_default() + "\n",
                )
            };
            match browser::download(&file, mime, &text) {
                Ok(()) => dispatch.emit(Action::Notice(format!("Exported {file}"))),
                Err(_) => dispatch.emit(Action::Notice("The browser refused the download".into())),
            }
        })
    };
    let undo = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |_| dispatch.emit(Action::Undo))
    };
    let copy_link = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |_| {
            if let Some(url) = browser::href() {
                browser::copy(&url);
                dispatch.emit(Action::Notice("Copied a link to this deployment".into()));
            }
        })
    };
    let invalid = props.parsed.is_none();
    html! {
        <div class="toolbar" role="toolbar" aria-label="Deployment actions">
            <label for="preset">{"Start from an example"}</label>
            <select id="preset" onchange={on_preset}>
                <option value="" selected=true>{"Choose an example…"}</option>
                { for EXAMPLES.iter().map(|e| html! {
                    <option value={e.name} title={e.summary}>{format!("{} — {}", e.name, e.summary)}</option>
                }) }
            </select>
            <input id="import" class="file" type="file" accept=".yaml,.yml,.json,application/json,application/yaml"
                   onchange={on_import} />
            <label class="button" for="import">{"Import YAML/JSON"}</label>
            <button id="export-yaml" onclick={export(true)} disabled={invalid}>{"Export YAML"}</button>
            <button id="export-json" onclick={export(false)} disabled={invalid}>{"Export JSON"}</button>
            <button id="undo" onclick={undo} disabled={!props.can_undo} title="Undo the last change (Ctrl+Z)">{"Undo"}</button>
            <button id="copy-link" onclick={copy_link}>{"Copy link"}</button>
        </div>
    }
}
