//! SGLang's `--config FILE` as SGLang reads it (`server_args_config_parser.py`): the exact token
//! `--config` followed by a path; the YAML mapping's keys become `--key` verbatim (so `page_size`
//! becomes the unknown `--page_size`), values become strings as Python's `str()` of what PyYAML
//! (YAML 1.1) read, store_true keys become bare flags, and the merged argv is the config's
//! arguments followed by the command line's, so the command line wins. `--config=FILE` is not
//! seen at all.

use std::sync::Arc;

use crate::read::source::{Embed, SourceFile, SrcMap, Word};
use crate::read::yaml::{self, Node, Scalar, Style};
pub use crate::rules::material::ConfigProblem;
use crate::spec::Spec;

/// The argv SGLang parses for `args` (tokens after the module), with `--config` expanded from
/// `files` (looked up by the path as written, then by file name).
pub fn expand(
    args: &Arc<[Word]>,
    files: &[SourceFile],
    config_files: &[usize],
    spec: &Spec,
) -> (Arc<[Word]>, Vec<ConfigProblem>) {
    let mut problems = Vec::new();
    // Most launches have no `--config`: their argv is the launch's, shared.
    let mut hits = args.iter().enumerate().filter(|(_, w)| w.text == "--config").map(|(i, _)| i);
    let Some(i) = hits.next() else { return (args.clone(), problems) };
    if let Some(second) = hits.next() {
        problems.push(ConfigProblem::Multiple { at: args[second].clone() });
        return (args.clone(), problems);
    }
    let Some(path_word) = args.get(i + 1) else {
        problems.push(ConfigProblem::NoPath { at: args[i].clone() });
        return (args.clone(), problems);
    };
    let path = path_word.text.clone();
    let rest: Vec<Word> = args[..i].iter().chain(&args[i + 2..]).cloned().collect();
    if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
        problems.push(ConfigProblem::NotYaml { path, at: path_word.clone() });
        return (rest.into(), problems);
    }
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    let found = config_files
        .iter()
        .copied()
        .find(|&f| files[f].name == path)
        .or_else(|| config_files.iter().copied().find(|&f| base(&files[f].name) == base(&path)));
    let Some(f) = found else {
        problems.push(ConfigProblem::NotGiven { path, at: path_word.clone() });
        return (rest.into(), problems);
    };
    let text = &files[f].text;
    let root = match yaml::parse(text) {
        Ok(docs) => match docs.into_iter().next() {
            None | Some(Node::Null(_)) => None,
            Some(Node::Map(m)) => Some(m),
            Some(_) => {
                problems.push(ConfigProblem::Unreadable {
                    path,
                    message: "Config file must contain a dictionary at root level".into(),
                    at: path_word.clone(),
                });
                return (rest.into(), problems);
            }
        },
        Err(e) => {
            let (line, col) = files[f].position(e.offset);
            problems.push(ConfigProblem::Unreadable {
                path,
                message: format!("YAML error at line {line}, column {col}: {}", e.message),
                at: path_word.clone(),
            });
            return (rest.into(), problems);
        }
    };
    let mut out: Vec<Word> = Vec::new();
    for (key, value) in root.map(|m| m.entries).unwrap_or_default() {
        let flag = format!("--{}", key.text);
        let key_word = Word {
            text: flag.clone(),
            file: f,
            start: key.start,
            end: key.end,
            unknown: Vec::new(),
            map: None,
            embed: Embed::ConfigKey,
        };
        if key.text.contains('_') {
            problems.push(ConfigProblem::Underscore {
                key: key_word.clone(),
                dashed: format!("--{}", key.text.replace('_', "-")),
            });
        }
        // SGLang looks the action up by the underscore form of the key.
        let spec_flag = spec.resolve(&format!("--{}", key.text.replace('_', "-"))).ok();
        let store_true = spec_flag.is_some_and(|s| s.action == "_StoreTrueAction");
        if let Some(s) = spec_flag {
            if s.action != "_StoreAction" && s.action != "_StoreTrueAction" {
                problems.push(ConfigProblem::Unsupported { key: key_word.clone(), action: s.action.clone() });
            }
        }
        let value_word = |text: String, sc: &Scalar| Word {
            text,
            file: f,
            start: sc.start,
            end: sc.end,
            unknown: Vec::new(),
            map: None,
            embed: Embed::ConfigValue,
        };
        match &value {
            Node::Scalar(sc) => match py_scalar(sc) {
                Py::Bool(b) if store_true => {
                    if b {
                        out.push(key_word);
                    }
                }
                Py::Bool(b) => {
                    out.push(key_word);
                    out.push(value_word(b.to_string(), sc));
                }
                Py::Text(t) => {
                    out.push(key_word);
                    out.push(value_word(t, sc));
                }
            },
            Node::Null(at) => {
                out.push(key_word);
                let sc =
                    Scalar { text: "".into(), style: Style::Plain, start: *at, end: *at, map: SrcMap::Offset(*at) };
                out.push(value_word("None".into(), &sc));
            }
            Node::Seq(s) => {
                if s.items.is_empty() {
                    continue;
                }
                out.push(key_word);
                for item in &s.items {
                    if let Node::Scalar(sc) = item {
                        out.push(value_word(py_str(sc), sc));
                    }
                }
            }
            Node::Map(_) => {
                out.push(key_word);
                let sc = Scalar {
                    text: "".into(),
                    style: Style::Plain,
                    start: value.start(),
                    end: value.start(),
                    map: SrcMap::Offset(0),
                };
                out.push(value_word(to_json(&value).to_string(), &sc));
            }
        }
    }
    out.extend(rest);
    (out.into(), problems)
}

/// Python's `str()` of a scalar as PyYAML (YAML 1.1) reads it.
pub(super) fn py_str(sc: &Scalar) -> String {
    match py_scalar(sc) {
        Py::Bool(b) => if b { "True" } else { "False" }.to_owned(),
        Py::Text(t) => t,
    }
}

pub(super) enum Py {
    Bool(bool),
    Text(String),
}

/// A scalar as Python's `str()` of PyYAML's (YAML 1.1) value.
pub(super) fn py_scalar(sc: &Scalar) -> Py {
    if sc.style != Style::Plain {
        return Py::Text(sc.text.to_string());
    }
    let t = &*sc.text;
    match t {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => return Py::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => return Py::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Py::Text("None".into()),
        _ => {}
    }
    let clean: String = t.chars().filter(|&c| c != '_').collect();
    let (neg, digits) = match clean.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let int = if let Some(h) = digits.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()
    } else if let Some(o) = digits.strip_prefix("0o") {
        i128::from_str_radix(o, 8).ok()
    } else if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) {
        i128::from_str_radix(&digits[1..], 8).ok()
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    };
    if let Some(n) = int {
        return Py::Text(if neg { (-n).to_string() } else { n.to_string() });
    }
    let looks_float =
        clean.bytes().any(|b| b == b'.') && clean.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    if looks_float {
        if let Some(x) = crate::float::parse(&clean) {
            let s = format!("{x:?}");
            return Py::Text(s);
        }
    }
    Py::Text(t.to_owned())
}

fn to_json(n: &Node) -> serde_json::Value {
    match n {
        Node::Null(_) => serde_json::Value::Null,
        Node::Scalar(s) => match py_scalar(s) {
            Py::Bool(b) => serde_json::Value::Bool(b),
            Py::Text(t) if s.style == Style::Plain => t
                .parse::<i64>()
                .map(serde_json::Value::from)
                .ok()
                .or_else(|| crate::float::parse(&t).map(serde_json::Value::from))
                .unwrap_or(serde_json::Value::String(t)),
            Py::Text(t) => serde_json::Value::String(t),
        },
        Node::Seq(s) => serde_json::Value::Array(s.items.iter().map(to_json).collect()),
        Node::Map(m) => {
            let mut out = serde_json::Map::new();
            out.extend(m.entries.iter().map(|(k, v)| (k.text.to_string(), to_json(v))));
            serde_json::Value::Object(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    fn word(text: &str) -> Word {
        Word::plain(text)
    }

    #[test]
    fn expands_before_the_command_line() {
        let files = vec![
            SourceFile::new("run.sh", ""),
            SourceFile::new("conf/p.yaml", "model-path: m\npage-size: 64\ntrust-remote-code: true\nenable-metrics: no\nmem-fraction-static: 0.80\npage_size: 1\n"),
        ];
        let args = vec![word("--config"), word("./p.yaml"), word("--page-size"), word("32")];
        let (out, problems) = expand(&args.into(), &files, &[1], Release::LATEST.spec());
        let texts: Vec<&str> = out.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "--model-path",
                "m",
                "--page-size",
                "64",
                "--trust-remote-code",
                "--mem-fraction-static",
                "0.8",
                "--page_size",
                "1",
                "--page-size",
                "32"
            ]
        );
        assert!(
            matches!(&problems[..], [ConfigProblem::Underscore { dashed, .. }] if dashed == "--page-size"),
            "{problems:?}"
        );
        assert_eq!(out[1].file, 1);
        assert_eq!(&files[1].text[out[3].start..out[3].end], "64");
    }

    #[test]
    fn missing_and_unsupported() {
        let files = vec![SourceFile::new("c.yaml", "disable-cuda-graph: true\n")];
        let (_, p) = expand(&[word("--config"), word("other.yaml")].into(), &files, &[0], Release::LATEST.spec());
        assert!(matches!(&p[..], [ConfigProblem::NotGiven { .. }]));
        let (_, p) = expand(&[word("--config"), word("c.yaml")].into(), &files, &[0], Release::LATEST.spec());
        assert!(matches!(&p[..], [ConfigProblem::Unsupported { .. }]), "{p:?}");
        let (_, p) = expand(&[word("--config"), word("c.json")].into(), &files, &[0], Release::LATEST.spec());
        assert!(matches!(&p[..], [ConfigProblem::NotYaml { .. }]));
    }
}
