//! Reading a deployment from YAML or JSON text, with errors that name the line, the column and
//! the field path, and say how to fix it.

use serde_json::Value;

use crate::deployment::{Deployment, Role};
use crate::read::yaml::{self, Map, Node, Scalar, Style};
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

/// What a failed deserialization reports: field path, position, message.
type SerdeFailure = (String, Option<(usize, usize)>, String);

/// Parses a deployment from text; `file` only labels errors.
///
/// Both syntaxes end in one `serde_json` deserializer of the deployment types (the code they
/// take is the biggest share of the web app). YAML is read by the core's position-keeping reader
/// and written out as JSON text, one value per line, beside a table saying where each line came
/// from; an error's line in that text gives the field path and the place in the YAML.
#[allow(clippy::result_large_err)] // one error per run, reported and dropped
pub fn parse_deployment(text: &str, file: &str, syntax: Syntax) -> Result<Deployment, LoadError> {
    let result: Result<Deployment, SerdeFailure> = match syntax {
        Syntax::Yaml => from_yaml(text),
        Syntax::Json => serde_json::from_str(text).map_err(|e| {
            let message = strip_location(&e.to_string());
            let mut path = json_path(text, e.line(), e.column(), e.is_syntax() || e.is_eof());
            if message.starts_with("duplicate field") {
                path.pop();
            }
            (render_path(&path), Some((e.line(), e.column())), message)
        }),
    };
    let d = result.map_err(|(path, loc, message)| {
        let path = (!path.is_empty()).then_some(path);
        let hint = hint_for(&message, path.as_deref());
        LoadError { file: file.to_owned(), line: loc.map(|l| l.0), column: loc.map(|l| l.1), path, message, hint }
    })?;
    check_structure(&d).map_err(|(path, message, hint)| {
        let loc = locate(text, &path);
        LoadError {
            file: file.to_owned(),
            line: loc.map(|l| l.0),
            column: loc.map(|l| l.1),
            path: Some(path),
            message,
            hint: Some(hint),
        }
    })?;
    Ok(d)
}

fn strip_location(msg: &str) -> String {
    // serde_json appends " at line L column C"; we report it apart.
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// One step of a field path.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// `a.b[2].c`, as errors print it.
fn render_path(steps: &[Step]) -> String {
    let mut s = String::new();
    for step in steps {
        match step {
            Step::Key(k) if s.is_empty() => s.push_str(k),
            Step::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// The field path at a position of a JSON text that serde_json reports (`column` is the number
/// of bytes of the line read so far): the keys and indices of the containers open there, with
/// the key just read.
fn json_path(text: &str, line: usize, column: usize, syntax_error: bool) -> Vec<Step> {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let end = (line_start + column).min(text.len());
    let b = text.as_bytes();
    // Per open container: the key being read (objects) or the item's index (arrays).
    let mut open: Vec<(bool, Option<Step>)> = Vec::new();
    let mut i = 0;
    while i < end {
        match b[i] {
            b'{' => open.push((true, None)),
            b'[' => open.push((false, Some(Step::Index(0)))),
            b'}' | b']' => {
                open.pop();
            }
            b',' => match open.last_mut() {
                Some((false, Some(Step::Index(n)))) => *n += 1,
                Some((true, key)) => *key = None,
                _ => {}
            },
            b'"' => {
                let from = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if let Some((true, key @ None)) = open.last_mut() {
                    let k = text.get(from..=i.min(b.len() - 1)).and_then(|t| serde_json::from_str(t).ok());
                    *key = Some(Step::Key(k.unwrap_or_default()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    // serde_json places a syntax error after the byte it looked at; one at an opening bracket is
    // about the container, not its first item. (Errors about values come before the value.)
    if syntax_error && end > 0 && matches!(b[end - 1], b'[' | b'{') {
        open.pop();
    }
    open.into_iter().filter_map(|(_, step)| step).collect()
}

/// Reads YAML into a deployment through JSON text (see [`parse_deployment`]).
fn from_yaml(text: &str) -> Result<Deployment, SerdeFailure> {
    let doc = yaml_value::document(text).map_err(|e| syntax_failure(text, e))?;
    // No document reads as an empty mapping at the end, as serde_yaml reads it.
    let doc = doc.unwrap_or(Node::Map(Map { entries: Vec::new(), start: text.len() }));
    let place = |path: &str, at: usize, message: String| {
        // An empty value is placed right after its key's colon, as serde_yaml places it.
        let b = text.as_bytes();
        let mut at = at;
        if b.get(at).is_none_or(|c| matches!(c, b'\n' | b'\r' | b'#')) {
            while at > 0 && matches!(b[at - 1], b' ' | b'\t') {
                at -= 1;
            }
        }
        (path.to_owned(), Some(line_col(text, at)), message)
    };
    // serde_yaml gives a plain scalar's text to a field that wants text, and an empty value is
    // an empty mapping or sequence where one is wanted: each plain scalar written as a number,
    // boolean or null that the deserializer refuses is written again that way.
    let mut refill: Vec<(usize, Fill)> = Vec::new();
    let mut refused: Option<(usize, SerdeFailure)> = None;
    // JSON has no infinity or NaN: the writer put null there, and an optional field would
    // silently be left unset.
    let accept = |d: Deployment, non_finite: Option<NonFinite>| match non_finite {
        Some(NonFinite { path, at, text }) => Err(place(&path, at, format!("`{text}` {NON_FINITE}"))),
        None => Ok(d),
    };
    loop {
        let (lines, line, message) = match attempt(&doc, &refill) {
            Ok((d, non_finite)) => match seq_read_as_struct(&doc, &to_value(&d)) {
                // serde_json fills a struct from an array of its fields; serde_yaml refuses that.
                Some(at) => {
                    let mut probe = refill.clone();
                    probe.push((at, Fill::Text));
                    match attempt(&doc, &probe) {
                        Err((lines, Some(l), m)) if m.starts_with("invalid type: string \"\", expected struct") => {
                            let expected = m.trim_start_matches("invalid type: string \"\", ");
                            return Err(place(&lines[l].path, at, format!("invalid type: sequence, {expected}")));
                        }
                        _ => return accept(d, non_finite),
                    }
                }
                None => return accept(d, non_finite),
            },
            Err(e) => e,
        };
        let Some(line) = line.map(|l| &lines[l]) else { return Err((String::new(), None, message)) };
        let about_key = message.starts_with("unknown field") || message.starts_with("duplicate field");
        if line.typed_plain.is_some() && !about_key {
            let fill = match line.typed_plain {
                Some(true) if message.contains("expected struct") || message.contains("expected a map") => Fill::Map,
                Some(true) if message.contains("expected a sequence") => Fill::Seq,
                _ => Fill::Text,
            };
            refill.push((line.at, fill));
            refused = Some((line.at, place(&line.path, line.at, message)));
            continue;
        }
        if message.starts_with("duplicate field") {
            let parent = line.parent.map(|p| &lines[p]);
            return Err(place(parent.map_or("", |p| &p.path), parent.map_or(doc.start(), |p| p.at), message));
        }
        if about_key {
            return Err(place(&line.path, line.key.unwrap_or(line.at), message));
        }
        // Refused as text too: the error about the value as written is the better one.
        let failure = match refused.take() {
            Some((at, first)) if at == line.at && message.starts_with("invalid type: string") => first,
            _ => place(&line.path, line.at, message),
        };
        // serde_json reads a struct from an array (of its fields in order) and an enum from a
        // mapping or nothing else; serde_yaml refuses a sequence for either. Written as an empty
        // string instead, a collection on the way to the error tells what was expected there.
        let within = |l: &&Line| {
            l.collection.is_some()
                && (line.path == l.path
                    || line.path.starts_with(&format!("{}[", l.path))
                    || line.path.starts_with(&format!("{}.", l.path))
                    || l.path.is_empty())
        };
        for open in lines.iter().filter(within) {
            let mut probe = refill.clone();
            probe.push((open.at, Fill::Text));
            let Err((_, Some(_), m)) = attempt(&doc, &probe) else { continue };
            let kind = open.collection.unwrap_or("sequence");
            let expected = m
                .strip_prefix("invalid type: string \"\", ")
                .filter(|e| kind == "sequence" && e.starts_with("expected struct"));
            let variant = m.strip_prefix("unknown variant ``, ");
            if let Some(expected) = expected.or(variant) {
                return Err(place(&open.path, open.at, format!("invalid type: {kind}, {expected}")));
            }
        }
        return Err(failure);
    }
}

/// The offset of the first sequence of `doc` whose place in `value` (the deserialized
/// deployment, serialized again) holds a mapping.
fn seq_read_as_struct(doc: &Node, value: &Value) -> Option<usize> {
    match (doc, value) {
        (Node::Seq(s), Value::Object(_)) => Some(s.start),
        (Node::Seq(s), Value::Array(a)) => s.items.iter().zip(a).find_map(|(n, v)| seq_read_as_struct(n, v)),
        (Node::Map(m), Value::Object(o)) => {
            m.entries.iter().find_map(|(k, n)| o.get(&*k.text).and_then(|v| seq_read_as_struct(n, v)))
        }
        _ => None,
    }
}

/// A YAML syntax error, with the path of the last field before it (where a reader going
/// through the text stood).
fn syntax_failure(text: &str, e: yaml::YamlError) -> SerdeFailure {
    if e.message == yaml_value::MULTIPLE_DOCUMENTS {
        // About the file, not a field: the field before the `---` would mislead.
        return (String::new(), Some(line_col(text, e.offset)), e.message);
    }
    let mut at = e.offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    (path_before(&text[..line_start]), Some(line_col(text, at)), e.message)
}

/// The field path of the last `key:` line of `text`, from the keys and sequence items that
/// enclose it by indentation; empty when there is none.
fn path_before(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('\t') && !l.trim_start().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let key = |l: &str| {
        let body = l.trim_start().trim_start_matches("- ").trim_start();
        let end = body.find(": ").or_else(|| body.strip_suffix(':').map(str::len))?;
        Some(body[..end].trim_matches(|c| c == '"' || c == '\'').to_owned())
    };
    let mut steps = Vec::new();
    // Column of the last step found; what encloses it starts left of it.
    let Some(last) = lines.iter().rposition(|l| key(l).is_some()) else { return String::new() };
    let item_key_col = |l: &str| l.len() - l.trim_start().trim_start_matches("- ").trim_start().len();
    steps.push(Step::Key(key(lines[last]).expect("a key line")));
    let mut col = item_key_col(lines[last]);
    let mut i = last;
    loop {
        let l = lines[i];
        // The line's own sequence item, when the key is the item's.
        if l.trim_start().starts_with("- ") && item_key_col(l) == col {
            let d = indent(l);
            let index = lines[..i]
                .iter()
                .rev()
                .take_while(|p| indent(p) >= d)
                .filter(|p| indent(p) == d && p.trim_start().starts_with("- "))
                .count();
            steps.push(Step::Index(index));
            col = d;
        }
        let Some(parent) = lines[..i].iter().rposition(|p| {
            key(p).is_some()
                && (item_key_col(p) < col
                    || (item_key_col(p) == col
                        && lines[i].trim_start().starts_with("- ")
                        && !p.trim_start().starts_with("- ")))
        }) else {
            break;
        };
        // Keys of an item's mapping after its first line sit at the item's key column.
        steps.push(Step::Key(key(lines[parent]).expect("a key line")));
        col = item_key_col(lines[parent]);
        i = parent;
    }
    steps.reverse();
    render_path(&steps)
}

/// A deployment (or a part of one) from a JSON value: a document being edited or reconstructed.
/// It goes through JSON text so that the deployment types have one deserializer, the one
/// [`parse_deployment`] uses: a second one (over `Value`) would add its size again to the browser
/// app.
pub fn from_value<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<T, serde_json::Error> {
    serde_json::from_str(&value.to_string())
}

/// A deployment (or a part of one) as a JSON value. Through JSON text, for the reason of
/// [`from_value`]: the text writer's code per field is smaller than the value builder's, and the
/// app has the writer anyway.
pub fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_string(value).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// One deserialization of the document written as JSON: on failure, the lines of the text, the
/// one the error is on, and the message.
#[allow(clippy::type_complexity)]
fn attempt(
    doc: &Node,
    refill: &[(usize, Fill)],
) -> Result<(Deployment, Option<NonFinite>), (Vec<Line>, Option<usize>, String)> {
    let mut json = JsonOut { text: String::new(), lines: Vec::new(), refill, non_finite: None };
    json.node(doc, &mut Vec::new(), None, None, true);
    let non_finite = json.non_finite.take();
    serde_json::from_str::<Deployment>(&json.text).map(|d| (d, non_finite)).map_err(|e| {
        let mut line = e.line().checked_sub(1).filter(|&l| l < json.lines.len());
        // An error of a field's own deserializer comes after its value; serde_json has gone on
        // to the closing bracket when the field was the last. Only a struct's own errors (a
        // missing field) are about the bracket.
        let message = strip_location(&e.to_string());
        if let Some(l) = line.filter(|&l| json.lines[l].closing && l > 0) {
            if !message.starts_with("missing field") && !message.starts_with("invalid length") {
                line = Some(l - 1);
            }
        }
        (json.lines, line, message)
    })
}

/// What a refused plain scalar is written as next.
#[derive(Clone, Copy, PartialEq)]
enum Fill {
    Text,
    Map,
    Seq,
}

/// Where a line of the JSON text came from.
struct Line {
    /// Field path of the value on the line (of the container, on a closing bracket's line).
    path: String,
    /// Source offset of the value's key, when it has one.
    key: Option<usize>,
    /// Source offset of the value (of the container, on a closing bracket's line).
    at: usize,
    /// The line that opened the enclosing container.
    parent: Option<usize>,
    /// A plain scalar written as a number, boolean or null: `Some(empty)`.
    typed_plain: Option<bool>,
    /// The line opens a `"sequence"` or a `"map"`.
    collection: Option<&'static str>,
    /// The line closes one.
    closing: bool,
}

/// JSON text written from YAML nodes, one value or bracket per line.
struct JsonOut<'a> {
    text: String,
    lines: Vec<Line>,
    /// Plain scalars (by offset) to write otherwise.
    refill: &'a [(usize, Fill)],
    /// The first plain scalar YAML reads as infinity or NaN, written as null.
    non_finite: Option<NonFinite>,
}

/// A plain scalar YAML reads as infinity or NaN, which JSON cannot hold.
struct NonFinite {
    /// Its field path.
    path: String,
    /// Its source offset.
    at: usize,
    /// Its text (`.inf`).
    text: String,
}

impl JsonOut<'_> {
    fn node(&mut self, n: &Node, path: &mut Vec<Step>, key: Option<&Scalar>, parent: Option<usize>, last: bool) {
        if let Some(k) = key {
            self.text.push_str(&Value::String(k.text.to_string()).to_string());
            self.text.push(':');
        }
        let at = n.start();
        let here = self.lines.len();
        let mut line = Line {
            path: render_path(path),
            key: key.map(|k| k.start),
            at,
            parent,
            typed_plain: None,
            collection: None,
            closing: false,
        };
        if self.refill.contains(&(at, Fill::Text)) && matches!(n, Node::Seq(_) | Node::Map(_)) {
            self.text.push_str("\"\"");
            self.end_line(last);
            self.lines.push(line);
            return;
        }
        match n {
            Node::Seq(s) => {
                self.text.push_str("[\n");
                line.collection = Some("sequence");
                self.lines.push(line);
                for (i, item) in s.items.iter().enumerate() {
                    path.push(Step::Index(i));
                    self.node(item, path, None, Some(here), i + 1 == s.items.len());
                    path.pop();
                }
                self.close(']', here, last);
            }
            Node::Map(m) => {
                self.text.push_str("{\n");
                line.collection = Some("map");
                self.lines.push(line);
                for (i, (k, v)) in m.entries.iter().enumerate() {
                    path.push(Step::Key(k.text.to_string()));
                    self.node(v, path, Some(k), Some(here), i + 1 == m.entries.len());
                    path.pop();
                }
                self.close('}', here, last);
            }
            Node::Null(_) | Node::Scalar(_) => {
                let plain = match n {
                    Node::Null(_) => Some(""),
                    Node::Scalar(s) if s.style == Style::Plain => Some(&*s.text),
                    _ => None,
                };
                let fill = self.refill.iter().find(|(o, _)| *o == at).map(|(_, f)| *f);
                let value = match (n, plain, fill) {
                    (_, Some(t), Some(Fill::Text)) => Value::String(t.to_owned()),
                    (_, Some(_), Some(Fill::Map)) => Value::Object(Default::default()),
                    (_, Some(_), Some(Fill::Seq)) => Value::Array(Vec::new()),
                    (Node::Scalar(s), _, _) => yaml_value::scalar_value(s),
                    _ => Value::Null,
                };
                if plain.is_some() && fill.is_none() && !value.is_string() {
                    line.typed_plain = Some(plain == Some(""));
                    if let Some(t) = plain.filter(|t| self.non_finite.is_none() && yaml_value::plain_is_non_finite(t)) {
                        self.non_finite = Some(NonFinite { path: line.path.clone(), at, text: t.to_owned() });
                    }
                }
                self.text.push_str(&value.to_string());
                self.end_line(last);
                self.lines.push(line);
            }
        }
    }

    fn close(&mut self, bracket: char, open: usize, last: bool) {
        self.text.push(bracket);
        self.end_line(last);
        let o = &self.lines[open];
        let line = Line {
            path: o.path.clone(),
            key: None,
            at: o.at,
            parent: o.parent,
            typed_plain: None,
            collection: None,
            closing: true,
        };
        self.lines.push(line);
    }

    fn end_line(&mut self, last: bool) {
        if !last {
            self.text.push(',');
        }
        self.text.push('\n');
    }
}

/// 1-based line and column (in characters, as YAML readers count them) of a byte offset, as the
/// linter counts them (errors only: the text is indexed for the one lookup).
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let (line, column) = crate::read::source::SourceFile::new(String::new(), text).position(offset);
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

/// The end of the message for a YAML infinity or NaN.
const NON_FINITE: &str = "is a YAML infinity or NaN, which no deployment field takes";

/// Structural checks serde cannot express: something to render on each side, names usable in
/// file names. Everything else is the validator's job, so the user sees a rendering.
fn check_structure(d: &Deployment) -> Result<(), (String, String, String)> {
    if d.name.is_empty() || !d.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err((
            "name".into(),
            format!(
                "deployment name {:?} is empty or has characters other than letters, digits, `-`, `_`, `.`",
                d.name
            ),
            "pick a short name like `llama-1p1d`; it becomes part of script file names".into(),
        ));
    }
    for role in Role::BOTH {
        let side = d.side(role);
        if side.instances.is_empty() {
            return Err((
                format!("{role}.instances"),
                format!("the {role} side has no instances"),
                "add at least one instance with one node, e.g. `instances: [{nodes: [{host: 10.0.0.1}]}]`".into(),
            ));
        }
        for (i, inst) in side.instances.iter().enumerate() {
            if inst.nodes.is_empty() {
                return Err((
                    format!("{role}.instances[{i}].nodes"),
                    format!("{role} instance {i} has no nodes"),
                    "add at least one node with its `host`".into(),
                ));
            }
            for (n, node) in inst.nodes.iter().enumerate() {
                if node.host.trim().is_empty() {
                    return Err((
                        format!("{role}.instances[{i}].nodes[{n}].host"),
                        "empty host".into(),
                        "give the node's address (IP or DNS name)".into(),
                    ));
                }
                if node.gpus == Some(0) {
                    return Err((
                        format!("{role}.instances[{i}].nodes[{n}].gpus"),
                        "`gpus` is 0".into(),
                        "a node runs on at least one GPU; leave `gpus` out for tp × pp / nodes".into(),
                    ));
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
                return Err((format!("{role}.{field}"), format!("`{field}` is 0"), "sizes start at 1".into()));
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
                return Err((
                    format!("{path}.{name}"),
                    format!("environment variable name {name:?} is not a valid name"),
                    "names are letters, digits and `_`, not starting with a digit (e.g. `SGLANG_DISAGG_STAGING_BUFFER`)".into(),
                ));
            }
        }
    }
    let value = to_value(d);
    if let Some(path) = find_nul(&value, String::new()) {
        return Err((
            path,
            "the value contains a NUL character, which no command-line argument or environment value can carry".into(),
            "remove the NUL (\\0) character".into(),
        ));
    }
    if d.shared.page_size == 0 {
        return Err((
            "shared.page_size".into(),
            "`page_size` is 0".into(),
            "use a positive page size such as 16, 32 or 64".into(),
        ));
    }
    if d.model.path.trim().is_empty() {
        return Err((
            "model.path".into(),
            "empty model path".into(),
            "give a local directory or a Hugging Face id".into(),
        ));
    }
    Ok(())
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

/// Finds the line and column of a field path (`a.b[2].c`) in block-style YAML or in JSON text.
/// Best effort: `None` when the text is written in a style it does not follow.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            segments.push(Seg::Key(key.to_owned()));
        }
        for idx in rest.split('[') {
            if let Ok(i) = idx.trim_end_matches(']').parse::<usize>() {
                segments.push(Seg::Index(i));
            }
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let significant = |l: &str| {
        let t = l.trim_start();
        !t.is_empty() && !t.starts_with('#')
    };
    let (mut lo, mut hi) = (0usize, lines.len());
    let mut found = None;
    // Column of the keys of the current block when it is a sequence item's mapping.
    let mut item_key_col: Option<usize> = None;
    for seg in &segments {
        let mut hit = None;
        let mut count = 0usize;
        // Only the shallowest lines of the current block are candidates.
        let floor = (lo..hi).filter(|&i| significant(lines[i])).map(|i| indent_of(lines[i])).min()?;
        for (ln, line) in lines.iter().enumerate().take(hi).skip(lo) {
            if !significant(line) {
                continue;
            }
            let trimmed = line.trim_start();
            let indent = indent_of(line);
            match seg {
                Seg::Key(k) => {
                    let body = if ln == lo { trimmed.trim_start_matches("- ") } else { trimmed };
                    let col = line.len() - body.len();
                    if col != item_key_col.unwrap_or(floor) {
                        continue;
                    }
                    if body.starts_with(&format!("{k}:")) || body.starts_with(&format!("\"{k}\":")) {
                        hit = Some((ln, col));
                        break;
                    }
                }
                Seg::Index(i) => {
                    if indent == floor && (trimmed.starts_with("- ") || trimmed == "-") {
                        if count == *i {
                            hit = Some((ln, indent));
                            break;
                        }
                        count += 1;
                    }
                }
            }
        }
        let (ln, col) = hit?;
        found = Some((ln + 1, col + 1));
        // The value's block: the following lines deeper than the hit (a sequence under a key may
        // sit at the key's own indent).
        let end = (ln + 1..lines.len())
            .find(|&i| {
                let l = lines[i];
                significant(l)
                    && (indent_of(l) < col
                        || (indent_of(l) == col && !(matches!(seg, Seg::Key(_)) && l.trim_start().starts_with("- "))))
            })
            .unwrap_or(lines.len());
        match seg {
            Seg::Key(_) => {
                lo = ln + 1;
                item_key_col = None;
            }
            // An item's first keys sit on its own line, after the dash.
            Seg::Index(_) => {
                lo = ln;
                let body = lines[ln].trim_start().trim_start_matches("- ");
                item_key_col = Some(lines[ln].len() - body.len());
            }
        }
        hi = end;
        if lo >= hi {
            return found.filter(|_| std::ptr::eq(seg, segments.last().expect("non-empty")));
        }
    }
    found
}

enum Seg {
    Key(String),
    Index(usize),
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
        assert_eq!(text.lines().nth(l - 1).map(|t| &t[..c]), Some("    \"port\": true"));
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
        assert_eq!((p.as_str(), m.as_str()), ("model.geometry.attention", "expected value"));
        let (_, _, p, m) = json("{\"name\": \"x\", \"router\": [{\"port\": 1}]}");
        assert_eq!((p.as_str(), m.as_str()), ("router[0]", "invalid type: map, expected a string"));
    }

    #[test]
    fn locates_nested_paths() {
        let text = "name: x\nprefill:\n  tp: 2\n  instances:\n    - nodes:\n        - host: a\n    - port: 1\n      nodes:\n        - host: b\n        - host: c\ndecode:\n  tp: 4\n";
        assert_eq!(locate(text, "prefill.tp"), Some((3, 3)));
        assert_eq!(locate(text, "decode.tp"), Some((12, 3)));
        assert_eq!(locate(text, "prefill.instances[1].nodes[1].host"), Some((10, 11)));
        assert_eq!(locate(text, "prefill.instances[1].port"), Some((7, 7)));
        assert_eq!(locate(text, "prefill.nothing"), None);
    }
}
