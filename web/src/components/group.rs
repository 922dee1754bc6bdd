//! A nested group of fields in a fieldset (`shared`, a side, speculative decoding...). An
//! optional group has a switch that adds or removes it.

use std::rc::Rc;

use serde_json::Value;
use yew::prelude::*;

use super::help::help;
use super::section::{FormShared, Section};
use crate::form::{field_id, Prop, Schema};
use crate::state::Action;

/// What [`group`] shows.
pub struct GroupProps {
    /// The property holding the group.
    pub prop: Rc<Prop>,
    /// Its schema definition.
    pub def: AttrValue,
    /// Its field path.
    pub path: AttrValue,
    /// Its value (`None` when unset).
    pub value: Option<Value>,
    /// The side it belongs to.
    pub side: Option<&'static str>,
    /// Findings, load error and dispatcher.
    pub form: FormShared,
}

/// A nested group in a fieldset; an optional one (speculative decoding, hierarchical cache...)
/// has a switch that adds or removes it.
pub fn group(props: &GroupProps) -> Html {
    let form = &props.form;
    let id = field_id(&props.path);
    let toggle = props.prop.nullable.then(|| {
        let on = props.value.is_some();
        let dispatch = form.dispatch.clone();
        let path = props.path.to_string();
        let def = props.def.to_string();
        let onchange = Callback::from(move |_| {
            let value = (!on).then(|| Schema::get().skeleton(&def));
            dispatch.emit(Action::Set { path: path.clone(), value });
        });
        html! {
            <p class="toggle">
                <input type="checkbox" id={id.clone()} checked={on} {onchange} />
                <label for={id.clone()}>{format!("Set {}", props.prop.label.to_ascii_lowercase())}</label>
            </p>
        }
    });
    let title = match props.path.as_str() {
        "shared" => "Shared settings (both sides)".to_owned(),
        "prefill" => "Prefill".to_owned(),
        "decode" => "Decode".to_owned(),
        "router" => "Router".to_owned(),
        _ => props.prop.label.clone(),
    };
    let top = !props.path.contains('.');
    html! {
        <fieldset class={super::class_list("group", &[top.then_some("top")])} id={format!("{id}-group")}>
            <legend>{title}</legend>
            { help(&props.prop.help, format!("{id}-help")) }
            {toggle}
            if props.value.is_some() || !props.prop.nullable {
                <Section def={props.def.clone()} path={props.path.clone()}
                         value={Rc::new(props.value.clone().unwrap_or(Value::Null))} side={props.side} form={form.clone()} />
            }
        </fieldset>
    }
}
