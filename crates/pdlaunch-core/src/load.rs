//! Reading a deployment from YAML or JSON text, with errors that name the line, the column and
//! the field path, and say how to fix it.
//!
//! Both syntaxes are read into the position-keeping YAML tree (JSON is YAML's flow style; a
//! JSON text is first held to JSON's own grammar by serde_json), and the deployment is
//! deserialized from the tree ([`crate::read::de`]): every error is placed at the node it is
//! about, with that node's path, in either syntax.

use std::borrow::Cow;

use serde_json::Value;

use crate::deployment::{Deployment, Role};
use crate::read::de::{self, NON_FINITE};
use crate::read::path;
use crate::read::source::SrcMap;
use crate::read::yaml::{Map, Node, Scalar, Seq, Style};
use crate::yaml_value;

/// A deployment that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{}", self.render())]
pub struct LoadError {
    /// The file (or `<stdin>`) the text came from.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Field path, e.g. `decode.instances[0].port`.
    pub path: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl LoadError {
    fn render(&self) -> String {
        let mut s = self.file.clone();
        if let Some(l) = self.line {
            s.push_str(&format!(":{l}"));
            if let Some(c) = self.column {
                s.push_str(&format!(":{c}"));
            }
        }
        s.push_str(": ");
        if let Some(p) = &self.path {
            s.push_str(&format!("field `{p}`: "));
        }
        s.push_str(&self.message);
        if let Some(h) = &self.hint {
            s.push_str(&format!("\n  hint: {h}"));
        }
        s
    }
}

/// Which syntax the text is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    Json,
}

impl Syntax {
    /// Guesses from a file name (`.json` is JSON, anything else YAML, which also reads JSON).
    pub fn from_name(name: &str) -> Syntax {
        if name.ends_with(".json") {
            Syntax::Json
        } else {
            Syntax::Yaml
        }
    }
}

/// What went wrong where, before the file and a hint make it a [`LoadError`].
struct Failure {
    /// Field path; empty for the whole document.
    path: String,
    /// Source offset, when known.
    offset: Option<usize>,
    /// What is wrong.
    message: String,
}

/// A structural check that failed.
struct Refusal {
    /// The field.
    path: String,
    /// What is wrong with it.
    message: String,
    /// How to fix it.
    hint: String,
}

/// Parses a deployment from text; `file` only labels errors.
#[allow(clippy::result_large_err)] // one error per run, reported and dropped
pub fn parse_deployment(text: &str, file: &str, syntax: Syntax) -> Result<Deployment, LoadError> {
    let doc = document(text, syntax).map_err(|f| load_error(text, file, f, None))?;
    let reading = match syntax {
        Syntax::Yaml => de::Syntax::Yaml,
        Syntax::Json => de::Syntax::Json,
    };
    let d: Deployment = de::from_node(&doc, reading).map_err(|e| {
        let offset = Some(empty_value_place(text, e.offset));
        load_error(text, file, Failure { path: e.path, offset, message: e.message }, None)
    })?;
    check_structure(&d).map_err(|r| {
        let offset = path::find(&doc, text, &path::parse(&r.path));
        load_error(text, file, Failure { path: r.path, offset, message: r.message }, Some(r.hint))
    })?;
    Ok(d)
}

#[allow(clippy::result_large_err)]
fn load_error(text: &str, file: &str, f: Failure, hint: Option<String>) -> LoadError {
    let path = (!f.path.is_empty()).then_some(f.path);
    let hint = hint.or_else(|| hint_for(&f.message, path.as_deref()));
    let (line, column) = f.offset.map(|o| line_col(text, o)).unzip();
    LoadError { file: file.to_owned(), line, column, path, message: f.message, hint }
}

/// The tree of the one document of `text`; no document reads as an empty mapping at the end, as
/// serde_yaml read it.
fn document(text: &str, syntax: Syntax) -> Result<Node<'_>, Failure> {
    if syntax == Syntax::Json {
        // The YAML reader reads more than JSON: a JSON file is held to JSON.
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            let offset = json_offset(text, e.line(), e.column());
            let message = e.to_string();
            // serde_json appends " at line L column C"; the place is reported apart.
            let message = message.rfind(" at line ").map_or(&*message, |i| &message[..i]).to_owned();
            // The field the error is in, from the tree the YAML reader makes of the text, or
            // from where that reader stopped.
            let steps = match yaml_value::document(text) {
                Ok(doc) => doc.map(|d| path::at(&d, offset)).unwrap_or_default(),
                Err(e) => e.path,
            };
            return Err(Failure { path: path::render(&steps), offset: Some(offset), message });
        }
    }
    match yaml_value::document(text) {
        Ok(doc) => Ok(doc.unwrap_or(Node::Map(Map { entries: Vec::new(), start: text.len() }))),
        Err(e) => {
            // More than one document is about the file, not the field before the `---`.
            let path = if e.message == yaml_value::MULTIPLE_DOCUMENTS { String::new() } else { path::render(&e.path) };
            Err(Failure { path, offset: Some(e.offset), message: e.message })
        }
    }
}

/// The byte offset of serde_json's place (1-based line; column: bytes of the line read so far,
/// the last of them the one it stopped at).
fn json_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// An empty value (at the end of its line, or before a comment) is placed right after its key's
/// colon, as serde_yaml placed it.
fn empty_value_place(text: &str, offset: usize) -> usize {
    let b = text.as_bytes();
    let mut at = offset.min(b.len());
    if b.get(at).is_none_or(|c| matches!(c, b'\n' | b'\r' | b'#')) {
        while at > 0 && matches!(b[at - 1], b' ' | b'\t') {
            at -= 1;
        }
    }
    at
}

/// A deployment (or a part of one) from a JSON value: a document being edited or reconstructed.
/// It is read as a JSON text would be, by the deserializer [`parse_deployment`] uses: a second
/// one (serde_json's) would add its size again to the browser app.
pub fn from_value<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, de::Error> {
    de::from_node(&value_node(value), de::Syntax::Json)
}

/// The tree a JSON text of `value` would read as (with no places).
fn value_node(value: &Value) -> Node<'static> {
    let scalar =
        |text: String, style: Style| Scalar { text: Cow::Owned(text), style, start: 0, end: 0, map: SrcMap::Offset(0) };
    match value {
        Value::Null => Node::Scalar(scalar("null".into(), Style::Plain)),
        Value::Bool(b) => Node::Scalar(scalar(b.to_string(), Style::Plain)),
        Value::Number(n) => Node::Scalar(scalar(n.to_string(), Style::Plain)),
        Value::String(s) => Node::Scalar(scalar(s.clone(), Style::Double)),
        Value::Array(a) => {
            Node::Seq(Seq { items: a.iter().map(value_node).collect(), flow: true, start: 0, indent: 0 })
        }
        Value::Object(o) => Node::Map(Map {
            entries: o.iter().map(|(k, v)| (scalar(k.clone(), Style::Double), value_node(v))).collect(),
            start: 0,
        }),
    }
}

/// A deployment (or a part of one) as a JSON value. Through JSON text: the text writer's code
/// per field is smaller than the value builder's, and the app has the writer anyway.
pub fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_string(value).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// 1-based line and column (in characters, as YAML readers count them) of a byte offset, as the
/// linter counts them (errors only: the text is indexed for the one lookup).
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let (line, column) = crate::read::source::SourceFile::new(String::new(), text).position(at);
    (line as usize, column as usize)
}

fn hint_for(message: &str, path: Option<&str>) -> Option<String> {
    if message.starts_with("unknown field") {
        return Some(
            "remove or rename the field; the schema in schema/deployment.schema.json lists every field \
             (flags pdlaunch does not model go in the side's `extra_args`)"
                .into(),
        );
    }
    if message.starts_with("unknown variant") {
        return Some("use one of the values listed above".into());
    }
    if message.starts_with("missing field") {
        return Some("add the field; `pdlaunch init` writes a complete starting deployment".into());
    }
    if message == yaml_value::MULTIPLE_DOCUMENTS {
        return Some(
            "keep one deployment per file: remove the `---` line and what follows, or move it to its own file".into(),
        );
    }
    if message.starts_with("invalid type") || message.starts_with("invalid value") {
        return Some(format!("give `{}` a value of the expected type", path.unwrap_or("the field")));
    }
    if message.ends_with(NON_FINITE) {
        return Some("write a finite number (e.g. 0.85), or quote the value if it is text".into());
    }
    None
}

/// Structural checks serde cannot express: something to render on each side, names usable in
/// file names. Everything else is the validator's job, so the user sees a rendering.
fn check_structure(d: &Deployment) -> Result<(), Refusal> {
    if d.name.is_empty() || !d.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return refuse(
            "name".into(),
            format!(
                "deployment name {:?} is empty or has characters other than letters, digits, `-`, `_`, `.`",
                d.name
            ),
            "pick a short name like `llama-1p1d`; it becomes part of script file names".into(),
        );
    }
    for role in Role::BOTH {
        let side = d.side(role);
        if side.instances.is_empty() {
            return refuse(
                format!("{role}.instances"),
                format!("the {role} side has no instances"),
                "add at least one instance with one node, e.g. `instances: [{nodes: [{host: 10.0.0.1}]}]`".into(),
            );
        }
        for (i, inst) in side.instances.iter().enumerate() {
            if inst.nodes.is_empty() {
                return refuse(
                    format!("{role}.instances[{i}].nodes"),
                    format!("{role} instance {i} has no nodes"),
                    "add at least one node with its `host`".into(),
                );
            }
            for (n, node) in inst.nodes.iter().enumerate() {
                if node.host.trim().is_empty() {
                    return refuse(
                        format!("{role}.instances[{i}].nodes[{n}].host"),
                        "empty host".into(),
                        "give the node's address (IP or DNS name)".into(),
                    );
                }
                if node.gpus == Some(0) {
                    return refuse(
                        format!("{role}.instances[{i}].nodes[{n}].gpus"),
                        "`gpus` is 0".into(),
                        "a node runs on at least one GPU; leave `gpus` out for tp × pp / nodes".into(),
                    );
                }
            }
        }
        for (field, v) in [
            ("tp", side.tp),
            ("dp", side.dp),
            ("attn_dp", side.attn_dp),
            ("pp", side.pp),
            ("attn_cp", side.attn_cp),
            ("dcp", side.dcp),
        ] {
            if v == 0 {
                return refuse(format!("{role}.{field}"), format!("`{field}` is 0"), "sizes start at 1".into());
            }
        }
    }
    let envs = [
        ("shared.env", &d.shared.env),
        ("prefill.env", &d.prefill.env),
        ("decode.env", &d.decode.env),
        ("router.env", &d.router.env),
    ];
    for (path, env) in envs {
        for name in env.keys() {
            let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return refuse(
                    format!("{path}.{name}"),
                    format!("environment variable name {name:?} is not a valid name"),
                    "names are letters, digits and `_`, not starting with a digit (e.g. `SGLANG_DISAGG_STAGING_BUFFER`)".into(),
                );
            }
        }
    }
    let value = to_value(d);
    if let Some(path) = find_nul(&value, String::new()) {
        return refuse(
            path,
            "the value contains a NUL character, which no command-line argument or environment value can carry".into(),
            "remove the NUL (\\0) character".into(),
        );
    }
    if d.shared.page_size == 0 {
        return refuse(
            "shared.page_size".into(),
            "`page_size` is 0".into(),
            "use a positive page size such as 16, 32 or 64".into(),
        );
    }
    if d.model.path.trim().is_empty() {
        return refuse(
            "model.path".into(),
            "empty model path".into(),
            "give a local directory or a Hugging Face id".into(),
        );
    }
    Ok(())
}

/// A [`Refusal`] of the field at `path`.
fn refuse(path: String, message: String, hint: String) -> Result<(), Refusal> {
    Err(Refusal { path, message, hint })
}

/// The path of the first string (or map key) containing a NUL character.
fn find_nul(v: &serde_json::Value, path: String) -> Option<String> {
    let join = |k: &str| if path.is_empty() { k.to_owned() } else { format!("{path}.{k}") };
    match v {
        serde_json::Value::String(s) => s.contains('\0').then_some(path),
        serde_json::Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| find_nul(x, format!("{path}[{i}]"))),
        serde_json::Value::Object(o) => {
            o.iter().find_map(|(k, x)| if k.contains('\0') { Some(join(k)) } else { find_nul(x, join(k)) })
        }
        _ => None,
    }
}

/// The line and column of what a field path (`a.b[2].c`) names in a YAML or JSON text: its key,
/// or its item. `None` when the text does not read or holds no such field.
pub fn locate(text: &str, field: &str) -> Option<(usize, usize)> {
    let doc = yaml_value::document(text).ok()??;
    path::find(&doc, text, &path::parse(field)).map(|at| line_col(text, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "name: x\nmodel:\n  path: m\n  geometry:\n    architecture: A\n    attention: gqa\n    layers: 32\n    attention_heads: 32\n    kv_heads: 8\n    head_dim: 128\nprefill:\n  tp: 1\n  instances:\n    - nodes:\n        - host: a\ndecode:\n  tp: 1\n  max_running_requests: 128\n  instances:\n    - nodes:\n        - host: a\n          ib_device: d\nrouter:\n  port: 8000\n";

    /// The line, column, path and message start of the error `to` (replacing `from`) gives.
    fn error(from: &str, to: &str) -> (usize, usize, String, String) {
        assert!(BASE.contains(from), "{from:?}");
        let text = BASE.replacen(from, to, 1);
        let e = parse_deployment(&text, "f.yaml", Syntax::Yaml).expect_err(&text);
        (e.line.unwrap_or(0), e.column.unwrap_or(0), e.path.unwrap_or_default(), e.message)
    }

    #[track_caller]
    fn assert_error(from: &str, to: &str, at: (usize, usize), path: &str, message: &str) {
        let (l, c, p, m) = error(from, to);
        assert_eq!((l, c, p.as_str()), (at.0, at.1, path), "{to:?}: {m}");
        assert!(m.starts_with(message), "{to:?}: {m}");
    }

    /// JSON has no infinity or NaN: YAML's are refused where they are written, not read as
    /// an unset field; quoted, they are text.
    #[test]
    fn yaml_infinity_and_nan_are_refused_at_their_place() {
        for value in [".inf", "-.inf", "+.INF", ".nan", ".NaN"] {
            let to = format!("  max_running_requests: 128\n  mem_fraction_static: {value}\n");
            assert_error(
                "  max_running_requests: 128\n",
                &to,
                (19, 24),
                "decode.mem_fraction_static",
                &format!("`{value}` is a YAML infinity or NaN"),
            );
        }
        let quoted = BASE.replacen("  path: m\n", "  path: m\n  served_name: '.inf'\n", 1);
        assert_eq!(parse_deployment(&quoted, "f", Syntax::Yaml).unwrap().model.served_name.as_deref(), Some(".inf"));
    }

    /// Values serde reads but no deployment can use are refused where they are written.
    #[test]
    fn zero_sizes_are_refused_at_their_place() {
        assert_error("prefill:\n  tp: 1", "prefill:\n  tp: 0", (12, 3), "prefill.tp", "`tp` is 0");
        assert_error(
            "        - host: a\ndecode",
            "        - host: a\n          gpus: 0\ndecode",
            (16, 11),
            "prefill.instances[0].nodes[0].gpus",
            "`gpus` is 0",
        );
    }

    /// Errors name the place serde_yaml with a path tracker named before the reader changed.
    #[test]
    fn yaml_errors_name_line_column_and_path() {
        assert_error(
            "  max_running_requests: 128\n",
            "  max_running_requests: 128\n  tpp: 2\n",
            (19, 3),
            "decode.tpp",
            "unknown field `tpp`, expected one of",
        );
        assert_error(
            "  max_running_requests: 128",
            "  max_running_requests: abc",
            (18, 25),
            "decode.max_running_requests",
            "invalid type: string \"abc\", expected u32",
        );
        assert_error(
            "  max_running_requests: 128",
            "  max_running_requests: [1]",
            (18, 25),
            "decode.max_running_requests",
            "invalid type: sequence, expected u32",
        );
        assert_error(
            "  max_running_requests: 128",
            "  max_running_requests:\n    a: 1",
            (19, 5),
            "decode.max_running_requests",
            "invalid type: map, expected u32",
        );
        assert_error("    layers: 32\n", "", (5, 5), "model.geometry", "missing field `layers`");
        assert_error("  path: m\n", "", (3, 3), "model", "missing field `path`");
        assert_error(
            "          ib_device: d\n",
            "          ib_device: d\n        - ib_device: e\n",
            (23, 11),
            "decode.instances[0].nodes[1]",
            "missing field `host`",
        );
        assert_error(
            "          ib_device: d\n",
            "          ib_device: d\n          bogus: 1\n",
            (23, 11),
            "decode.instances[0].nodes[0].bogus",
            "unknown field `bogus`",
        );
        assert_error(
            "    attention: gqa",
            "    attention: fp9",
            (6, 16),
            "model.geometry.attention",
            "unknown variant `fp9`, expected one of `mha`, `gqa`, `mla`",
        );
        assert_error(
            "    attention: gqa",
            "    attention: 8",
            (6, 16),
            "model.geometry.attention",
            "unknown variant `8`",
        );
        assert_error("    attention: gqa", "    attention:", (6, 15), "model.geometry.attention", "unknown variant ``");
        assert_error(
            "    attention: gqa",
            "    attention:   ",
            (6, 15),
            "model.geometry.attention",
            "unknown variant ``",
        );
        assert_error(
            "    attention: gqa",
            "    attention: [gqa]",
            (6, 16),
            "model.geometry.attention",
            "invalid type: sequence, expected one of `mha`",
        );
        assert_error(
            "    attention: gqa",
            "    attention: {gqa: 1}",
            (6, 16),
            "model.geometry.attention",
            "invalid type: map, expected one of `mha`",
        );
        // A field's own deserializer refuses the value, after reading it (the last of its map).
        assert_error(
            "    head_dim: 128\n",
            "    head_dim: 128\n  preset: nope\n",
            (11, 11),
            "model.preset",
            "unknown variant `nope`, expected one of",
        );
        assert_error(
            "  port: 8000",
            "  port: 80000",
            (24, 9),
            "router.port",
            "invalid value: integer `80000`, expected u16",
        );
        assert_error(
            "  port: 8000",
            "  port: true",
            (24, 9),
            "router.port",
            "invalid type: boolean `true`, expected u16",
        );
        assert_error(
            "  port: 8000",
            "  port: 1.5",
            (24, 9),
            "router.port",
            "invalid type: floating point `1.5`, expected u16",
        );
        assert_error("  port: 8000", "  port: ~", (24, 9), "router.port", "invalid type: null, expected u16");
        assert_error(
            "  port: 8000",
            "  port: \"8000\"",
            (24, 9),
            "router.port",
            "invalid type: string \"8000\", expected u16",
        );
        assert_error("decode:\n  tp: 1\n", "decode:\n  tp: 1\n  tp: 2\n", (17, 3), "decode", "duplicate field `tp`");
        assert_error(
            "router:\n  port: 8000\n",
            "router:\n  port: 8000\nrouter: {}\n",
            (1, 1),
            "",
            "duplicate field `router`",
        );
        assert_error(
            "router:\n  port: 8000\n",
            "router:\n  - port: 8000\n",
            (24, 3),
            "router",
            "invalid type: sequence, expected struct Router",
        );
        assert_error(
            "router:\n  port: 8000\n",
            "router: [a, 1]\n",
            (23, 9),
            "router",
            "invalid type: sequence, expected struct Router",
        );
        assert_error(
            "prefill:\n  tp: 1\n",
            "prefill: 5\nx:\n  tp: 1\n",
            (11, 10),
            "prefill",
            "invalid type: integer `5`, expected struct Side",
        );
        assert_error(
            "  tp: 1\n  max",
            "  tp: 1\n  extra_args: [--x, [1]]\n  max",
            (18, 21),
            "decode.extra_args[1]",
            "invalid type: sequence, expected a string",
        );
        assert_error(
            "  tp: 1\n  max",
            "  tp: 1\n  env: {A: [1]}\n  max",
            (18, 12),
            "decode.env.A",
            "invalid type: sequence, expected a string",
        );
        assert_error(
            "  tp: 1\n  max",
            "  tp: 1\n  instances: 3\n  max",
            (18, 14),
            "decode.instances",
            "invalid type: integer `3`, expected a sequence",
        );
    }

    #[test]
    fn yaml_syntax_errors_and_documents() {
        let e = parse_deployment("name: \"x\n", "f.yaml", Syntax::Yaml).unwrap_err();
        assert_eq!((e.line, e.column, e.path.as_deref()), (Some(2), Some(1), Some("name")));
        assert!(e.to_string().starts_with("f.yaml:2:1: field `name`: unterminated double-quoted string"), "{e}");
        let e = parse_deployment("# nothing\n", "f.yaml", Syntax::Yaml).unwrap_err();
        assert_eq!((e.line, e.column, e.message.as_str()), (Some(2), Some(1), "missing field `name`"));
        let e = parse_deployment(&format!("{BASE}---\n{BASE}"), "f.yaml", Syntax::Yaml).unwrap_err();
        assert_eq!(e.line, Some(BASE.lines().count() + 2));
        assert!(e.message.contains("more than one document"), "{e}");
        assert_eq!(e.path, None, "about the file, not the field before `---`");
        assert!(e.hint.as_deref().is_some_and(|h| h.contains("one deployment per file")), "{e}");
    }

    /// Plain scalars are text where the field wants text, and empty values empty collections,
    /// as serde_yaml read them; everything reads as serde_yaml read it.
    #[test]
    fn yaml_reads_as_serde_yaml_read_it() {
        let edits = [
            ("  tp: 1\n  max", "  tp: 1\n  extra_args: [--max-total-tokens, 128, true, 1.5, ~, 0x10]\n  max"),
            ("  tp: 1\n  max", "  tp: 1\n  env: {A: 1, B: true, C: 007, D: null}\n  max"),
            ("  tp: 1\n  max", "  tp: 1\n  env:\n  extra_args:\n  max"),
            ("  port: 8000", "  port: 0x1F40"),
            ("  port: 8000", "  port: +8000"),
            ("  path: m", "  path: 1.5"),
            ("  path: m", "  path: 'it''s'"),
            ("  path: m", "  path: |\n    multi\n    line"),
            ("name: x", "name: 2024"),
            ("name: x", "sglang_version: \"0.5.23\"\nname: x"),
            ("router:\n  port: 8000\n", "router:\n"),
            ("router:\n  port: 8000\n", "router:\n  port: 8000\n  host: 0.0.0.0\n"),
        ];
        for (from, to) in edits {
            let text = BASE.replacen(from, to, 1);
            let ours = parse_deployment(&text, "f.yaml", Syntax::Yaml).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let theirs: Deployment = serde_yaml::from_str(&text).unwrap();
            assert_eq!(ours, theirs, "{text}");
        }
        for e in crate::examples::EXAMPLES {
            let theirs: Deployment = serde_yaml::from_str(e.yaml).unwrap();
            assert_eq!(parse_deployment(e.yaml, e.name, Syntax::Yaml).unwrap(), theirs, "{}", e.name);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Near-valid texts (an example with a few characters inserted or removed) give a
        /// deployment or an error, never a panic, read as YAML or as JSON.
        #[test]
        fn edited_examples_never_panic(
            example in 0..crate::examples::EXAMPLES.len(),
            edits in proptest::collection::vec((0.0..1.0f64, proptest::sample::select(vec![
                "", " ", "\t", "\n", ":", "- ", "[", "]", "{", "}", ",", "\"", "'", "#", "&a", "*a", "|", ">", "~", "é", "💡", "0x", "1",
            ])), 1..4),
            json in proptest::bool::ANY,
        ) {
            let e = &crate::examples::EXAMPLES[example];
            let mut text = if json {
                serde_json::to_string_pretty(&parse_deployment(e.yaml, e.name, Syntax::Yaml).unwrap()).unwrap()
            } else {
                e.yaml.to_owned()
            };
            for (at, insert) in edits {
                let mut i = (at * text.len() as f64) as usize;
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                if insert.is_empty() {
                    let mut j = (i + 1).min(text.len());
                    while !text.is_char_boundary(j) {
                        j += 1;
                    }
                    text.replace_range(i..j, "");
                } else {
                    text.insert_str(i, insert);
                }
            }
            let syntax = if json { Syntax::Json } else { Syntax::Yaml };
            if let Err(e) = parse_deployment(&text, "f", syntax) {
                proptest::prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn json_errors_name_line_column_and_path() {
        let json = |text: &str| {
            let e = parse_deployment(text, "f.json", Syntax::Json).unwrap_err();
            (e.line.unwrap_or(0), e.column.unwrap_or(0), e.path.unwrap_or_default(), e.message)
        };
        let d = serde_json::to_string_pretty(&serde_yaml::from_str::<Value>(BASE).unwrap()).unwrap();
        let text = d.replacen("\"port\": 8000", "\"port\": true", 1);
        let (l, c, p, m) = json(&text);
        assert_eq!((p.as_str(), m.as_str()), ("router.port", "invalid type: boolean `true`, expected u16"));
        // At the value, as in YAML (serde_json placed it after the value).
        assert_eq!(text.lines().nth(l - 1).map(|t| &t[..c]), Some("    \"port\": t"));
        let (_, _, p, m) = json(&d.replacen("\"ib_device\"", "\"bogus\"", 1));
        assert_eq!(p, "decode.instances[0].nodes[0].bogus", "{m}");
        let (_, _, p, m) = json(&d.replacen("\"host\": \"a\",", "", 1));
        assert_eq!((p.as_str(), m.as_str()), ("decode.instances[0].nodes[0]", "missing field `host`"));
        let (_, _, p, m) = json(&d.replacen(
            "\"max_running_requests\": 128,",
            "\"max_running_requests\": 1, \"max_running_requests\": 2,",
            1,
        ));
        assert_eq!((p.as_str(), m.as_str()), ("decode", "duplicate field `max_running_requests`"));
        let (_, _, p, m) = json(&d.replacen("\"attention\": \"gqa\"", "\"attention\": [\"gqa\"]", 1));
        assert_eq!(
            (p.as_str(), m.as_str()),
            ("model.geometry.attention", "invalid type: sequence, expected one of `mha`, `gqa`, `mla`")
        );
        // A struct is not read from a sequence of its fields, as in YAML.
        let (_, _, p, m) = json("{\"name\": \"x\", \"router\": [{\"port\": 1}]}");
        assert_eq!((p.as_str(), m.as_str()), ("router", "invalid type: sequence, expected struct Router"));
    }

    /// The same text as JSON, written from what serde_yaml reads of it.
    fn as_json(yaml: &str) -> String {
        serde_json::to_string_pretty(&serde_yaml::from_str::<Value>(yaml).unwrap()).unwrap()
    }

    /// An error in an item of a list in an item of a list names its line, its column and the
    /// indices on the way.
    #[test]
    fn errors_deep_in_nested_lists_name_line_column_and_path() {
        let nested = "  instances:\n    - nodes:\n        - host: a\n    - nodes:\n        - host: b\n        - host: c\n          gpus: x\ndecode";
        assert_error(
            "  instances:\n    - nodes:\n        - host: a\ndecode",
            nested,
            (19, 17),
            "prefill.instances[1].nodes[1].gpus",
            "invalid type: string \"x\", expected u32",
        );
        assert_error(
            "  instances:\n    - nodes:\n        - host: a\ndecode",
            "  instances:\n    - nodes:\n        - host: a\n    - nodes:\n        - host: b\n        - hots: c\ndecode",
            (18, 11),
            "prefill.instances[1].nodes[1].hots",
            "unknown field `hots`",
        );
    }

    /// A YAML text and the JSON text of the same document fail at the same field.
    #[test]
    fn json_and_yaml_name_the_same_path() {
        let edits = [
            ("        - host: a\ndecode", "        - host: a\n        - host: b\n          port: x\ndecode"),
            ("          ib_device: d\n", "          ib_device: d\n          bogus: 1\n"),
            ("          ib_device: d\n", "          ib_device: d\n        - ib_device: e\n"),
            ("    attention: gqa", "    attention: fp9"),
            ("    attention: gqa", "    attention: [gqa]"),
            ("  port: 8000", "  port: 80000"),
            ("  port: 8000", "  port: \"8000\""),
            ("  tp: 1\n  max", "  tp: 1\n  extra_args: [--x, [1]]\n  max"),
            ("  tp: 1\n  max", "  tp: 1\n  env: {A: [1]}\n  max"),
            ("router:\n  port: 8000\n", "router:\n  - port: 8000\n"),
            ("prefill:\n  tp: 1", "prefill:\n  tp: 0"),
        ];
        for (from, to) in edits {
            assert!(BASE.contains(from), "{from:?}");
            let yaml = BASE.replacen(from, to, 1);
            let y = parse_deployment(&yaml, "f.yaml", Syntax::Yaml).expect_err(&yaml);
            let json = as_json(&yaml);
            let j = parse_deployment(&json, "f.json", Syntax::Json).expect_err(&json);
            assert_eq!((&y.path, &y.message), (&j.path, &j.message), "{to:?}");
            assert!(y.path.is_some(), "{to:?}: {y}");
            // Each is placed at a line of its own text that holds the field's key or value (or
            // starts the collection that is the value).
            let field = y.path.as_deref().unwrap().rsplit(['.', '[']).next().unwrap().trim_end_matches(']');
            for (e, text) in [(&y, &yaml), (&j, &json)] {
                let line = text.lines().nth(e.line.unwrap() - 1).unwrap();
                let starts_collection = line.trim_start().starts_with(['-', '[', '{']);
                assert!(line.contains(field) || starts_collection, "{to:?}: {e}\n{line}");
            }
        }
    }

    /// In a flow mapping (`{host: a, port: x}`), a wrong value is placed at itself.
    #[test]
    fn wrong_type_inside_a_flow_mapping_is_placed_at_the_value() {
        assert_error(
            "    - nodes:\n        - host: a\ndecode",
            "    - nodes: [{host: a, gpus: x}]\ndecode",
            (14, 31),
            "prefill.instances[0].nodes[0].gpus",
            "invalid type: string \"x\", expected u32",
        );
        assert_error(
            "  tp: 1\n  max",
            "  tp: 1\n  env: {A: b, B: {c: d}}\n  max",
            (18, 18),
            "decode.env.B",
            "invalid type: map, expected a string",
        );
    }

    /// A value that names no variant of an enum is placed at the value, with the variants.
    #[test]
    fn unknown_enum_variant_values_name_the_variants() {
        assert_error(
            "router:\n  port: 8000\n",
            "router:\n  port: 8000\nshared:\n  kv_cache_dtype: fp9\n",
            (26, 19),
            "shared.kv_cache_dtype",
            "unknown variant `fp9`, expected one of `auto`, `fp8_e5m2`, `fp8_e4m3`",
        );
        let e =
            parse_deployment(&as_json(&BASE.replacen("attention: gqa", "attention: Gqa", 1)), "f.json", Syntax::Json)
                .unwrap_err();
        assert_eq!(e.path.as_deref(), Some("model.geometry.attention"));
        assert!(e.message.starts_with("unknown variant `Gqa`, expected one of `mha`, `gqa`, `mla`"), "{e}");
        assert!(e.hint.as_deref().is_some_and(|h| h.contains("one of the values")), "{e}");
        // A number is a variant's name in YAML, not in JSON.
        let json = as_json(BASE).replacen("\"gqa\"", "8", 1);
        let e = parse_deployment(&json, "f.json", Syntax::Json).unwrap_err();
        assert!(e.message.starts_with("invalid type: integer `8`, expected one of `mha`"), "{e}");
    }

    /// JSON is held to JSON, and read as serde_json reads it: escapes (surrogate pairs too),
    /// duplicate keys, numbers beyond 64 bits, tabs, no text from numbers, no comments.
    #[test]
    #[allow(clippy::result_large_err)] // as parse_deployment itself
    fn json_reads_as_serde_json_reads_it() {
        let json = as_json(BASE);
        let read = |text: &str| parse_deployment(text, "f.json", Syntax::Json);
        let theirs = |text: &str| serde_json::from_str::<Deployment>(text).unwrap();
        let escaped = json.replacen("\"path\": \"m\"", "\"path\": \"m\\u00e9\\ud83d\\ude00\\/\\t\\\"\"", 1);
        assert_eq!(read(&escaped).unwrap(), theirs(&escaped));
        assert_eq!(read(&escaped).unwrap().model.path, "m\u{e9}\u{1f600}/\t\"");
        let tabs = json.replace("  ", "\t");
        assert_eq!(read(&tabs).unwrap(), theirs(&json));
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(&json).unwrap()).unwrap();
        assert_eq!(read(&compact).unwrap(), theirs(&json));
        let e = read(&json.replacen("\"port\": 8000", "\"port\": 18446744073709551616", 1)).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("router.port"));
        assert!(e.message.starts_with("invalid type: floating point"), "{e}");
        let e = read(&json.replacen("\"name\": \"x\"", "\"name\": 2024", 1)).unwrap_err();
        assert_eq!(
            (e.path.as_deref(), e.message.as_str()),
            (Some("name"), "invalid type: integer `2024`, expected a string")
        );
        let e = read(&json.replacen("\"host\": \"a\"", "\"host\": null", 1)).unwrap_err();
        assert_eq!(e.message, "invalid type: null, expected a string");
        // What YAML reads and JSON does not is a JSON syntax error, placed at the field.
        let e = read(&json.replacen("\"tp\": 1\n", "\"tp\": 1 # one\n", 1)).unwrap_err();
        let tp_line = json.lines().position(|l| l.contains("\"tp\"")).unwrap() + 1;
        assert_eq!((e.line, e.path.as_deref()), (Some(tp_line), Some("decode.tp")));
        assert_eq!(e.message, "expected `,` or `}`");
        let unquoted = json.replacen("\"name\": \"x\"", "name: x", 1);
        let e = read(&unquoted).unwrap_err();
        let name_line = unquoted.lines().position(|l| l.contains("name: x")).unwrap() + 1;
        assert_eq!((e.line, e.message.as_str()), (Some(name_line), "key must be a string"));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(read(&deep).unwrap_err().message, "nested too deeply");
    }

    /// A JSON value reads as serde_json reads it, with the path of a refused field.
    #[test]
    fn from_value_reads_as_serde_json_reads_it() {
        for e in crate::examples::EXAMPLES {
            let v = to_value(&parse_deployment(e.yaml, e.name, Syntax::Yaml).unwrap());
            assert_eq!(from_value::<Deployment>(&v).unwrap(), serde_json::from_value::<Deployment>(v).unwrap());
        }
        let mut v = to_value(&parse_deployment(BASE, "f", Syntax::Yaml).unwrap());
        v["decode"]["instances"][0]["nodes"][0]["host"] = Value::Null;
        let e = from_value::<Deployment>(&v).unwrap_err();
        assert_eq!(e.to_string(), "field `decode.instances[0].nodes[0].host`: invalid type: null, expected a string");
        v["decode"]["instances"][0]["nodes"][0]["host"] = serde_json::json!(7);
        assert!(from_value::<Deployment>(&v).unwrap_err().message.starts_with("invalid type: integer `7`"));
        v["decode"]["instances"][0]["nodes"][0]["host"] = serde_json::json!("a");
        v["decode"]["mem_fraction_static"] = serde_json::json!(0.5);
        v["decode"]["chunked_prefill_size"] = serde_json::json!(-1);
        v["model"]["served_name"] = serde_json::json!("null");
        let d = from_value::<Deployment>(&v).unwrap();
        assert_eq!((d.decode.mem_fraction_static, d.decode.chunked_prefill_size), (Some(0.5), Some(-1)));
        assert_eq!(d.model.served_name.as_deref(), Some("null"));
    }

    #[test]
    fn locates_nested_paths() {
        let text = "name: x\nprefill:\n  tp: 2\n  instances:\n    - nodes:\n        - host: a\n    - port: 1\n      nodes:\n        - host: b\n        - host: c\ndecode:\n  tp: 4\n";
        assert_eq!(locate(text, "prefill.tp"), Some((3, 3)));
        assert_eq!(locate(text, "decode.tp"), Some((12, 3)));
        assert_eq!(locate(text, "prefill.instances[1].nodes[1].host"), Some((10, 11)));
        assert_eq!(locate(text, "prefill.instances[1].port"), Some((7, 7)));
        assert_eq!(locate(text, "prefill.instances[1]"), Some((7, 5)), "a block item at its `-`");
        let flow = "name: x\ndecode:\n  extra_args: [--a, \"--b\"]\n";
        assert_eq!(locate(flow, "decode.extra_args[1]"), Some((3, 21)), "a flow item at itself");
        let json = "{\n  \"decode\": {\"tp\": 4,\n    \"env\": {\"A\": \"1\"}}}\n";
        assert_eq!(locate(json, "decode.env.A"), Some((3, 13)));
        assert_eq!(locate(text, "prefill.nothing"), None);
    }
}
