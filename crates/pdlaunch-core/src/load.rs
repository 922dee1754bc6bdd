//! Reading a deployment from YAML or JSON text, with errors that name the line, the column and
//! the field path, and say how to fix it.

use crate::deployment::{Deployment, Role};

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
#[allow(clippy::result_large_err)] // one error per run, reported and dropped
pub fn parse_deployment(text: &str, file: &str, syntax: Syntax) -> Result<Deployment, LoadError> {
    let result: Result<Deployment, SerdeFailure> = match syntax {
        Syntax::Yaml => {
            let de = serde_yaml::Deserializer::from_str(text);
            serde_path_to_error::deserialize(de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let loc = inner.location().map(|l| (l.line(), l.column()));
                let msg = strip_location(&inner.to_string());
                // serde_yaml prefixes the path it knows (`decode: unknown field ...`); we print
                // the full path apart, so drop its prefix.
                let msg = match msg.split_once(": ") {
                    Some((head, rest)) if !head.contains(' ') && path.starts_with(head) => rest.to_owned(),
                    _ => msg,
                };
                (path, loc, msg)
            })
        }
        Syntax::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let loc = Some((inner.line(), inner.column()));
                (path, loc, strip_location(&inner.to_string()))
            })
        }
    };
    let d = result.map_err(|(path, loc, message)| {
        let path = (path != "." && !path.is_empty()).then_some(path);
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
    // serde_yaml appends " at line L column C"; serde_json " at line L column C". We report it apart.
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
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
    if message.starts_with("invalid type") {
        return Some(format!("give `{}` a value of the expected type", path.unwrap_or("the field")));
    }
    None
}

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
    let value = serde_json::to_value(d).expect("a deployment serializes");
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
