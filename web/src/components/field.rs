//! One field: its label, input, help text from the schema, and the findings that concern it.

use std::rc::Rc;

use pdlaunch_core::rules::Severity;
use serde_json::Value;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

use super::buffer::{Buffer, BufferKind};
use super::finding::finding_card;
use super::help::help;
use crate::form::{field_id, Kind, Prop};
use crate::state::{Action, Diagnostic};

/// What [`field`] shows.
pub struct FieldProps {
    /// The property.
    pub prop: Rc<Prop>,
    /// Its field path.
    pub path: AttrValue,
    /// Its value (`None` when unset).
    pub value: Option<Value>,
    /// The findings that concern it.
    pub diagnostics: Vec<Rc<Diagnostic>>,
    /// Set when the document does not parse because of this field.
    pub error: Option<AttrValue>,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One field.
pub fn field(props: &FieldProps) -> Html {
    let p = &props.prop;
    let id = field_id(&props.path);
    let help_id = format!("{id}-help");
    let describedby = std::iter::once(help_id.clone())
        .chain(props.diagnostics.iter().map(|d| format!("finding-{}", d.index)))
        .collect::<Vec<_>>()
        .join(" ");
    let invalid = props.error.is_some() || props.diagnostics.iter().any(|d| d.finding.severity == Severity::Error);
    let set = {
        let dispatch = props.dispatch.clone();
        let path = props.path.to_string();
        move |value: Option<Value>| dispatch.emit(Action::Set { path: path.clone(), value })
    };
    let placeholder = p.default.as_ref().map(|d| format!("default: {}", shown(d))).unwrap_or_default();
    let current = props.value.as_ref().map(shown).unwrap_or_default();
    let empty_is_unset = p.nullable || p.default.is_some();
    let input = match &p.kind {
        Kind::Bool => {
            let on = props.value.as_ref().and_then(Value::as_bool).unwrap_or(false);
            let onchange = Callback::from(move |_: Event| set(Some(Value::Bool(!on))));
            html! { <input type="checkbox" id={id.clone()} checked={on} {onchange}
            aria-describedby={describedby.clone()} aria-invalid={invalid.to_string()} /> }
        }
        Kind::Choice(choices) => {
            let onchange = Callback::from(move |e: Event| {
                let v = e.target_unchecked_into::<HtmlSelectElement>().value();
                set((!v.is_empty()).then_some(Value::String(v)));
            });
            let unset_label = match &p.default {
                Some(d) => format!("(default: {})", shown(d)),
                None => "(not set: SGLang decides)".to_owned(),
            };
            html! {
                <select id={id.clone()} {onchange} aria-describedby={describedby.clone()} aria-invalid={invalid.to_string()}>
                    if empty_is_unset || props.value.is_none() {
                        <option value="" selected={props.value.is_none()}>{unset_label}</option>
                    }
                    { for choices.iter().map(|c| html! {
                        <option value={c.value.clone()} selected={current == c.value}
                                title={c.doc.clone().unwrap_or_default()}>{c.value.clone()}</option>
                    }) }
                </select>
            }
        }
        Kind::Int { .. } | Kind::Float => {
            let float = p.kind == Kind::Float;
            let required = !empty_is_unset;
            let oninput = Callback::from(move |e: InputEvent| {
                let raw = e.target_unchecked_into::<HtmlInputElement>().value();
                let raw = raw.trim();
                let v = if raw.is_empty() {
                    (required).then(|| Value::String(String::new()))
                } else if float {
                    pdlaunch_core::float::parse(raw).map(Value::from).or_else(|| Some(Value::String(raw.to_owned())))
                } else {
                    raw.parse::<i64>().ok().map(Value::from).or_else(|| Some(Value::String(raw.to_owned())))
                };
                set(v);
            });
            let min = match &p.kind {
                Kind::Int { min } => min.map(|m| m.to_string()),
                _ => None,
            };
            html! { <input type="number" id={id.clone()} value={current.clone()} {oninput} min={min}
            step={if float { "any" } else { "1" }} inputmode={if float { "decimal" } else { "numeric" }}
            placeholder={placeholder.clone()}
            aria-describedby={describedby.clone()} aria-invalid={invalid.to_string()} /> }
        }
        Kind::Words | Kind::Env => {
            let kind = if p.kind == Kind::Words { BufferKind::Words } else { BufferKind::Env };
            html! { <Buffer id={id.clone()} path={props.path.clone()} {kind} value={props.value.clone()}
            describedby={describedby.clone()} invalid={invalid} dispatch={props.dispatch.clone()} /> }
        }
        _ => {
            let nullable = p.nullable;
            let oninput = Callback::from(move |e: InputEvent| {
                let v = e.target_unchecked_into::<HtmlInputElement>().value();
                set(if v.is_empty() && nullable { None } else { Some(Value::String(v)) });
            });
            html! { <input type="text" id={id.clone()} value={current.clone()} {oninput} placeholder={placeholder.clone()}
            autocomplete="off" spellcheck="false"
            aria-describedby={describedby.clone()} aria-invalid={invalid.to_string()} /> }
        }
    };
    let label = html! { <label for={id.clone()}>{p.label.clone()}</label> };
    let bool_field = p.kind == Kind::Bool;
    html! {
        <div class={super::class_list("field", &[bool_field.then_some("switch"), invalid.then_some("invalid")])} data-path={props.path.clone()}>
            if bool_field { {input} {label} } else { {label} {input} }
            if let Some(e) = &props.error { <p class="field-error" role="alert">{e.clone()}</p> }
            { help(&p.help, help_id) }
            { for props.diagnostics.iter().map(|d| finding_card(d, false, &props.dispatch)) }
        </div>
    }
}
