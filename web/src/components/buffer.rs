//! A text box over a structured value (a token list or an environment map). It keeps the text
//! as typed, so a trailing space or a half-written quote is not rewritten under the cursor, and
//! takes the value's text again when the value changes from elsewhere (undo, a fix, an import).

use serde_json::{Map, Value};
use web_sys::HtmlTextAreaElement;
use yew::prelude::*;

use crate::state::Action;
use crate::words;

/// What the text box holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKind {
    /// Command-line tokens, as shell words.
    Words,
    /// Environment variables, as `KEY=value` lines.
    Env,
}

impl BufferKind {
    fn text(self, value: &Option<Value>) -> String {
        match (self, value) {
            (BufferKind::Words, Some(Value::Array(a))) => {
                words::join(&a.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect::<Vec<_>>())
            }
            (BufferKind::Env, Some(Value::Object(m))) => {
                let mut env = std::collections::BTreeMap::new();
                env.extend(m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())));
                words::env_text(&env)
            }
            _ => String::new(),
        }
    }
    fn parse(self, text: &str) -> Option<Value> {
        match self {
            BufferKind::Words => {
                let tokens = words::split(text);
                (!tokens.is_empty()).then(|| Value::Array(tokens.into_iter().map(Value::String).collect()))
            }
            BufferKind::Env => {
                let mut env = Map::new();
                env.extend(words::parse_env(text).into_iter().map(|(k, v)| (k, Value::String(v))));
                (!env.is_empty()).then_some(Value::Object(env))
            }
        }
    }
}

/// Props of [`Buffer`].
#[derive(Properties, PartialEq)]
pub struct BufferProps {
    /// Element id.
    pub id: AttrValue,
    /// Field path.
    pub path: AttrValue,
    /// What it holds.
    pub kind: BufferKind,
    /// The value.
    pub value: Option<Value>,
    /// Ids of the help text and findings.
    pub describedby: AttrValue,
    /// Whether a finding marks it invalid.
    pub invalid: bool,
    /// Sends actions.
    pub dispatch: Callback<Action>,
}

/// The text box.
#[function_component]
pub fn Buffer(props: &BufferProps) -> Html {
    let kind = props.kind;
    let text = use_state(|| kind.text(&props.value));
    {
        let text = text.clone();
        use_effect_with(props.value.clone(), move |value| {
            if kind.parse(&text) != *value {
                text.set(kind.text(value));
            }
        });
    }
    let oninput = {
        let text = text.clone();
        let dispatch = props.dispatch.clone();
        let path = props.path.to_string();
        Callback::from(move |e: InputEvent| {
            let raw = e.target_unchecked_into::<HtmlTextAreaElement>().value();
            let value = kind.parse(&raw);
            text.set(raw);
            dispatch.emit(Action::Set { path: path.clone(), value });
        })
    };
    // Flags for a list of arguments, variables for an environment; other lists and maps (a
    // node selector, tolerations) get a neutral hint.
    let (rows, placeholder) = match kind {
        BufferKind::Words if props.path.ends_with("args") => (2, "--flag value --other-flag"),
        BufferKind::Words => (2, "values separated by spaces"),
        BufferKind::Env if props.path.ends_with("env") => (3, "NAME=value (one per line)"),
        BufferKind::Env => (3, "key=value (one per line)"),
    };
    html! {
        <textarea id={props.id.clone()} rows={rows.to_string()} value={(*text).clone()} {oninput} {placeholder}
                  spellcheck="false" autocomplete="off"
                  aria-describedby={props.describedby.clone()} aria-invalid={props.invalid.to_string()} />
    }
}
