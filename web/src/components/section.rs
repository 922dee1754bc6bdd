//! A group of fields: one schema definition (the deployment, `shared`, a side, an instance...).
//! Primary fields show first; the rest sit under "more settings", opened when a finding concerns
//! one of them.

use std::rc::Rc;

use serde_json::Value;
use yew::prelude::*;

use super::field::{field, FieldProps};
use super::finding::finding_card;
use super::group::{group, GroupProps};
use super::list::{list, ListProps};
use crate::form::{Kind, Prop, Schema};
use crate::state::{Action, Diagnostic};

/// What every group of the form passes down unchanged: the findings, the load error's field path
/// and the dispatcher (one prop rather than three on every group).
#[derive(Clone, PartialEq)]
pub struct FormShared {
    /// Every finding; each field picks its own.
    pub diagnostics: Rc<Vec<Rc<Diagnostic>>>,
    /// The field path of the load error, if the document does not parse.
    pub error_path: Option<AttrValue>,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// Props of [`Section`].
#[derive(Properties, PartialEq)]
pub struct SectionProps {
    /// Schema definition (`Shared`, `Side`...).
    pub def: AttrValue,
    /// Field path of this group (empty for the deployment itself).
    pub path: AttrValue,
    /// The group's value (an object, or null when unset).
    pub value: Rc<Value>,
    /// The side this group belongs to, when inside `prefill` or `decode`.
    #[prop_or_default]
    pub side: Option<&'static str>,
    /// Findings, load error and dispatcher.
    pub form: FormShared,
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// A group of fields.
#[function_component]
pub fn Section(props: &SectionProps) -> Html {
    let form = &props.form;
    let schema = Schema::get();
    let props_of = schema.props(&props.def);
    let side = props.side.or(match props.path.as_str() {
        "prefill" => Some("prefill"),
        "decode" => Some("decode"),
        _ => None,
    });
    let render = |p: &Rc<Prop>| -> Html {
        let path = join(&props.path, &p.name);
        let value = props.value.get(&p.name).filter(|v| !v.is_null()).cloned();
        // A field meaningful on the other side only is hidden unless it is set.
        if let (Some(only), Some(side)) = (p.only_on, side) {
            if only != side && value.is_none() {
                return html! {};
            }
        }
        let error = form.error_path.as_deref().filter(|e| *e == path || e.starts_with(&format!("{path}.")));
        match &p.kind {
            Kind::Object(def) => group(&GroupProps {
                prop: p.clone(),
                def: def.clone().into(),
                path: path.into(),
                value,
                side,
                form: form.clone(),
            }),
            Kind::List(def) => list(&ListProps {
                prop: p.clone(),
                def: def.clone().into(),
                path: path.into(),
                items: value.and_then(|v| v.as_array().cloned()).unwrap_or_default(),
                side,
                form: form.clone(),
            }),
            _ => {
                let diags: Vec<Rc<Diagnostic>> =
                    form.diagnostics.iter().filter(|d| d.concerns(&path)).cloned().collect();
                let error = error.map(|_| AttrValue::from("This value is not valid here; see the message above."));
                field(&FieldProps {
                    prop: p.clone(),
                    path: path.into(),
                    value,
                    diagnostics: diags,
                    error,
                    dispatch: form.dispatch.clone(),
                })
            }
        }
    };
    let (primary, more): (Vec<_>, Vec<_>) = props_of.iter().partition(|p| p.primary);
    let more_needed = more.iter().any(|p| {
        let path = join(&props.path, &p.name);
        form.diagnostics.iter().any(|d| d.concerns(&path))
            || form.error_path.as_deref().is_some_and(|e| e.starts_with(&path))
    });
    // "More settings" renders its fields only once opened (most fields live there, so start-up
    // and every edit have far less to render); a finding or error inside opens it.
    let open = use_state(|| more_needed);
    {
        let open = open.clone();
        use_effect_with(more_needed, move |needed| {
            if *needed {
                open.set(true);
            }
        });
    }
    let ontoggle = {
        let open = open.clone();
        Callback::from(move |e: Event| open.set(e.target_unchecked_into::<web_sys::HtmlDetailsElement>().open()))
    };
    let here: Vec<Rc<Diagnostic>> = if props.path.is_empty() {
        Vec::new()
    } else {
        form.diagnostics.iter().filter(|d| d.paths().any(|p| p == props.path.as_str())).cloned().collect()
    };
    let more_label =
        if props.path.is_empty() { "More deployment settings".to_owned() } else { "More settings".to_owned() };
    html! {
        <>
            { for here.iter().map(|d| finding_card(d, false, &form.dispatch)) }
            { for primary.iter().map(|p| render(p)) }
            if !more.is_empty() {
                <details class="more" open={*open || more_needed} {ontoggle}>
                    <summary>{more_label}</summary>
                    if *open || more_needed { { for more.iter().map(|p| render(p)) } }
                </details>
            }
        </>
    }
}
