//! A list of groups: a side's instances, an instance's nodes. Items can be added (a copy of the
//! last one, so a new node starts with the same settings) and removed.

use std::rc::Rc;

use serde_json::Value;
use yew::prelude::*;

use super::finding::finding_card;
use super::help::help;
use super::section::{FormShared, Section};
use crate::form::{field_id, Prop, Schema};
use crate::state::{Action, Diagnostic};

/// What [`list`] shows.
pub struct ListProps {
    /// The list property.
    pub prop: Rc<Prop>,
    /// The items' schema definition.
    pub def: AttrValue,
    /// The list's field path.
    pub path: AttrValue,
    /// The items.
    pub items: Vec<Value>,
    /// The side it belongs to.
    pub side: Option<&'static str>,
    /// Findings, load error and dispatcher.
    pub form: FormShared,
}

/// A list of groups.
pub fn list(props: &ListProps) -> Html {
    let form = &props.form;
    let id = field_id(&props.path);
    let noun = props.def.to_ascii_lowercase();
    let set = |items: Vec<Value>| {
        let dispatch = form.dispatch.clone();
        let path = props.path.to_string();
        Callback::from(move |_: MouseEvent| {
            dispatch.emit(Action::Set { path: path.clone(), value: Some(Value::Array(items.clone())) })
        })
    };
    let add = {
        let mut items = props.items.clone();
        items.push(props.items.last().cloned().unwrap_or_else(|| Schema::get().skeleton(&props.def)));
        set(items)
    };
    let here: Vec<Rc<Diagnostic>> =
        form.diagnostics.iter().filter(|d| d.paths().any(|p| p == props.path.as_str())).cloned().collect();
    html! {
        <fieldset class="list" id={id.clone()}>
            <legend>{props.prop.label.clone()}</legend>
            { help(&props.prop.help, format!("{id}-help")) }
            { for here.iter().map(|d| finding_card(d, false, &form.dispatch)) }
            { for props.items.iter().enumerate().map(|(i, item)| {
                let path = format!("{}[{i}]", props.path);
                let mut rest = props.items.clone();
                rest.remove(i);
                let title = format!("{} {}", props.def, i + 1);
                html! {
                    <fieldset class="item" key={path.clone()}>
                        <legend>{title.clone()}</legend>
                        <Section def={props.def.clone()} path={path.clone()} value={Rc::new(item.clone())}
                                 side={props.side} form={form.clone()} />
                        <button class="remove" onclick={set(rest)} disabled={props.items.len() == 1}
                                aria-label={format!("Remove {}", title.to_ascii_lowercase())}>
                            {format!("Remove {noun}")}
                        </button>
                    </fieldset>
                }
            }) }
            <button class="add" id={format!("{id}-add")} onclick={add}>{format!("Add {noun}")}</button>
        </fieldset>
    }
}
