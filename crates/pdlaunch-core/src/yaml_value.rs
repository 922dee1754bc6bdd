//! YAML as JSON values, over the position-keeping reader of [`crate::read::yaml`] (plain scalars
//! typed by YAML 1.2's core schema, [`crate::read::core_schema`]), and a block-style writer whose output every YAML reader, 1.1 or
//! 1.2, reads back as the same value.

use serde::Serialize;
use serde_json::{Map, Number, Value};

use crate::read::core_schema::{self, Plain};
use crate::read::yaml::{self, Node, Scalar, Style, YamlError};

/// Reads a YAML (or JSON) text of at most one document; no document is `null`.
pub fn from_str(text: &str) -> Result<Value, YamlError> {
    Ok(document(text)?.as_ref().map_or(Value::Null, node_value))
}

/// The error of a text with more than one document.
pub(crate) const MULTIPLE_DOCUMENTS: &str =
    "deserializing from YAML containing more than one document is not supported";

/// The one document of a text (`None` for none); more than one is an error at the second.
pub(crate) fn document(text: &str) -> Result<Option<Node<'_>>, YamlError> {
    let mut docs = yaml::parse(text)?;
    if docs.len() > 1 {
        return Err(YamlError::new(docs[1].start(), MULTIPLE_DOCUMENTS));
    }
    Ok(docs.pop())
}

/// The value of a node: plain scalars typed, other scalars strings, mapping keys their text.
pub fn node_value(n: &Node) -> Value {
    match n {
        Node::Null(_) => Value::Null,
        Node::Scalar(s) => scalar_value(s),
        Node::Seq(s) => Value::Array(s.items.iter().map(node_value).collect()),
        Node::Map(m) => {
            let mut out = Map::new();
            for (k, v) in &m.entries {
                out.insert(k.text.to_string(), node_value(v));
            }
            Value::Object(out)
        }
    }
}

/// The value of a scalar: a plain one typed by [`plain_value`], any other a string.
pub fn scalar_value(s: &Scalar) -> Value {
    match s.style {
        Style::Plain => plain_value(&s.text),
        _ => Value::String(s.text.to_string()),
    }
}

/// The value of a plain scalar under YAML 1.2's core schema ([`core_schema::plain`]); `.inf`
/// and `.nan`, which JSON cannot hold, are null.
pub fn plain_value(s: &str) -> Value {
    match core_schema::plain(s) {
        Plain::Null | Plain::NonFinite => Value::Null,
        Plain::Bool(b) => Value::Bool(b),
        Plain::Unsigned(n) => Value::Number(n.into()),
        Plain::Negative(n) => Value::Number(n.into()),
        Plain::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        Plain::Text => Value::String(s.to_owned()),
    }
}

/// Writes `value` as block-style YAML: keys in the order it serializes them, two-space indents,
/// sequences under a key at the key's own indent (as serde_yaml writes them), and strings
/// quoted whenever a plain scalar would read as something else in YAML 1.2 or 1.1.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    // serde_json keeps the serialized order of fields, which a `Value` would sort; its text is
    // YAML, so the reader gives the ordered tree back.
    let json = serde_json::to_string(value).map_err(|e| e.to_string())?;
    let doc = yaml::parse(&json).map_err(|e| e.message)?;
    let mut out = String::new();
    match doc.first() {
        Some(n) => write_node(&mut out, n, 0, false),
        None => out.push_str("null\n"),
    }
    Ok(out)
}

/// A node whose first line's indent (or `- `/`key: ` prefix) is already written when `inline`.
fn write_node(out: &mut String, n: &Node, indent: usize, inline: bool) {
    match n {
        Node::Map(m) if !m.entries.is_empty() => {
            for (i, (k, v)) in m.entries.iter().enumerate() {
                if i > 0 || !inline {
                    pad(out, indent);
                }
                out.push_str(&string(&k.text));
                out.push(':');
                match v {
                    Node::Map(c) if !c.entries.is_empty() => {
                        out.push('\n');
                        write_node(out, v, indent + 2, false);
                    }
                    Node::Seq(s) if !s.items.is_empty() => {
                        out.push('\n');
                        write_node(out, v, indent, false);
                    }
                    _ => {
                        out.push(' ');
                        write_node(out, v, indent + 2, true);
                    }
                }
            }
        }
        Node::Seq(s) if !s.items.is_empty() => {
            for (i, item) in s.items.iter().enumerate() {
                if i > 0 || !inline {
                    pad(out, indent);
                }
                out.push_str("- ");
                write_node(out, item, indent + 2, true);
            }
        }
        Node::Map(_) => out.push_str("{}\n"),
        Node::Seq(_) => out.push_str("[]\n"),
        Node::Null(_) => out.push_str("null\n"),
        Node::Scalar(s) => {
            match s.style {
                // Numbers, booleans and null, written as serde_json wrote them.
                Style::Plain => out.push_str(&s.text),
                _ => out.push_str(&string(&s.text)),
            }
            out.push('\n');
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A string as a YAML scalar: plain when that reads back as the same string, single-quoted when
/// only its look is ambiguous, double-quoted with escapes when it holds line breaks, tabs or
/// characters YAML does not print.
pub fn string(s: &str) -> String {
    if reads_plain(s) {
        s.to_owned()
    } else {
        single_quoted(s)
    }
}

/// True when `s` written as a plain scalar reads back as the same string, in YAML 1.2 and 1.1.
pub fn reads_plain(s: &str) -> bool {
    !s.chars().any(needs_escape) && plain_ok(s)
}

/// `s` single-quoted (`'` doubled), or double-quoted when it holds characters a single-quoted
/// scalar cannot carry.
pub fn single_quoted(s: &str) -> String {
    if s.chars().any(needs_escape) {
        double_quoted(s)
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// `s` double-quoted, with escapes for `"`, `\` and what YAML does not print.
pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if needs_escape(c) && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if needs_escape(c) && (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if needs_escape(c) => out.push_str(&format!("\\U{:08x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters a plain or single-quoted scalar cannot carry as themselves: line breaks (YAML's
/// own and Unicode's), tabs, controls, the byte-order mark and non-characters.
fn needs_escape(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

/// True when `s` written plain reads back as the same string in YAML 1.2 and 1.1.
fn plain_ok(s: &str) -> bool {
    let (Some(first), Some(last)) = (s.chars().next(), s.chars().last()) else { return false };
    if first == ' ' || last == ' ' || last == ':' {
        return false;
    }
    // Indicators that start something other than a plain scalar; `-` only when a space or
    // nothing follows, or as a document marker.
    let second = s[first.len_utf8()..].chars().next();
    match first {
        '?' | ':' | ',' | '[' | ']' | '{' | '}' | '#' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => {
            return false
        }
        '-' if second.is_none_or(|c| c == ' ') || s.starts_with("---") => return false,
        '.' if s.starts_with("...") => return false,
        _ => {}
    }
    if s.contains(": ") || s.contains(" #") {
        return false;
    }
    matches!(plain_value(s), Value::String(_)) && !yaml11_special(s)
}

/// Plain scalars YAML 1.1 (PyYAML, SGLang's `--config` loader) reads as something other than a
/// string: its booleans, `=`, `<<`, and numbers with `_`, base-60 `:` or leading zeros.
fn yaml11_special(s: &str) -> bool {
    const WORDS: &[&str] =
        &["y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "=", "<<"];
    WORDS.contains(&s) || number_like(s)
}

/// Looks like a number in either YAML version (over-approximated: a false positive only adds
/// quotes).
fn number_like(s: &str) -> bool {
    let t: String = s.strip_prefix(['+', '-']).unwrap_or(s).chars().filter(|&c| c != '_').collect();
    let t = t.to_ascii_lowercase();
    if matches!(t.as_str(), ".inf" | ".nan") {
        return true;
    }
    if let Some(r) = t.strip_prefix("0x") {
        return !r.is_empty() && r.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if let Some(r) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0b")) {
        return !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit());
    }
    let (mantissa, exponent) = match t.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (t.as_str(), None),
    };
    if let Some(e) = exponent {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if e.is_empty() || !e.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    }
    let mut digits = 0;
    let mut dots = 0;
    for b in mantissa.bytes() {
        match b {
            b'0'..=b'9' => digits += 1,
            b'.' => dots += 1,
            b':' => {}
            _ => return false,
        }
    }
    digits > 0 && dots <= 1 && !mantissa.starts_with(':')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// What serde_yaml 0.9 (the reader this module replaced) makes of a text.
    fn serde_yaml_value(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap_or_else(|e| panic!("serde_yaml refuses {text:?}: {e}"))
    }

    #[test]
    fn plain_scalars_are_typed_as_serde_yaml_types_them() {
        let plains = [
            "",
            "~",
            "null",
            "Null",
            "NULL",
            "nULL",
            "true",
            "True",
            "TRUE",
            "tRUE",
            "false",
            "yes",
            "no",
            "on",
            "off",
            "y",
            "0",
            "-0",
            "+0",
            "00",
            "007",
            "-007",
            "+7",
            "++7",
            "+-7",
            "-+7",
            "12",
            "-12",
            "0x1F",
            "0X1F",
            "-0x1F",
            "+0x1F",
            "0x-1",
            "0x",
            "0o17",
            "-0o17",
            "0o8",
            "0b101",
            "-0b101",
            "0b2",
            "1_000",
            "1:20",
            "1.5",
            "-1.5",
            "+1.5",
            ".5",
            "5.",
            "1e3",
            "1E3",
            "1e-3",
            "-1e+3",
            "1e400",
            ".inf",
            ".Inf",
            ".INF",
            "-.inf",
            "+.inf",
            ".nan",
            ".NaN",
            "-.nan",
            "inf",
            "nan",
            "NaN",
            "Infinity",
            "0.5.23",
            "10.0.0.1",
            "1.10",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "340282366920938463463374607431768211455",
            "0x10000000000000000",
            "01.5",
            "-01.5",
            "0e5",
            "abc",
            "a b",
        ];
        for p in plains {
            let text = format!("v: {p}\n");
            let ours = from_str(&text).unwrap();
            let theirs = std::panic::catch_unwind(|| serde_yaml_value(&text));
            match theirs {
                Ok(theirs) => assert_eq!(ours, theirs, "{p:?}"),
                // Integers beyond 64 bits, which serde_json's value cannot hold: the nearest float.
                Err(_) => assert!(ours["v"].is_f64(), "{p:?}: {ours}"),
            }
        }
    }

    #[test]
    fn quoted_and_block_scalars_are_strings() {
        let v = from_str("a: '1'\nb: \"true\"\nc: |\n  ~\nd: >-\n  12\ne: [1, '2', x]\nf: {1: 2}\n").unwrap();
        assert_eq!(v, json!({"a": "1", "b": "true", "c": "~\n", "d": "12", "e": [1, "2", "x"], "f": {"1": 2}}));
        // Strings of line breaks, as serde_yaml writes them.
        let v = json!({"a": "\n", "b": ["\n\n", "x"], "c": "", "d": "a\n"});
        let text = serde_yaml::to_string(&v).unwrap();
        assert_eq!(from_str(&text).unwrap(), v, "{text}");
        assert_eq!(from_str("# nothing\n").unwrap(), Value::Null);
        let e = from_str("a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("more than one document"), "{e:?}");
    }

    #[test]
    fn writes_block_yaml_in_serialized_order() {
        #[derive(Serialize)]
        struct Item {
            z: u32,
            a: Vec<&'static str>,
        }
        #[derive(Serialize)]
        struct Doc {
            name: &'static str,
            version: &'static str,
            items: Vec<Item>,
            nested: Vec<Vec<u32>>,
            empty: Vec<u32>,
            map: BTreeMapOf,
            none: Option<u32>,
            ratio: f64,
        }
        type BTreeMapOf = std::collections::BTreeMap<&'static str, &'static str>;
        let doc = Doc {
            name: "x",
            version: "0.5.23",
            items: vec![
                Item { z: 1, a: vec!["--page-size", "64", "yes", "a: b", "two\nlines"] },
                Item { z: 2, a: vec![] },
            ],
            nested: vec![vec![1, 2], vec![]],
            empty: vec![],
            map: [("B", "1"), ("A", "")].into_iter().collect(),
            none: None,
            ratio: 0.5,
        };
        let text = to_string(&doc).unwrap();
        assert_eq!(
            text,
            "name: x\nversion: 0.5.23\nitems:\n- z: 1\n  a:\n  - --page-size\n  - '64'\n  - 'yes'\n  - 'a: b'\n  - \"two\\nlines\"\n- z: 2\n  a: []\nnested:\n- - 1\n  - 2\n- []\nempty: []\nmap:\n  A: ''\n  B: '1'\nnone: null\nratio: 0.5\n"
        );
        let value = serde_json::to_value(&doc).unwrap();
        assert_eq!(serde_yaml_value(&text), value);
        assert_eq!(from_str(&text).unwrap(), value);
    }

    #[test]
    fn strings_that_read_as_something_else_are_quoted() {
        for s in [
            "",
            " x",
            "x ",
            "-",
            "- x",
            "---",
            "...",
            "?",
            "? x",
            ":",
            ":x",
            "x:",
            "a: b",
            "a #b",
            "#a",
            "&a",
            "*a",
            "!a",
            "|",
            ">",
            "'",
            "\"",
            "%a",
            "@a",
            "`a",
            ",",
            "[a]",
            "{a}",
            "~",
            "null",
            "true",
            "False",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "=",
            "<<",
            "1",
            "-1",
            "1.5",
            "1e3",
            "0x1F",
            "0o7",
            "0b1",
            "0755",
            "1_000",
            "1:20",
            "-1:20.5",
            ".inf",
            "-.Inf",
            ".NaN",
            "a\tb",
            "a\nb",
            "\r",
            "\0",
            "\u{7f}",
            "\u{85}",
            "\u{2028}",
            "\u{feff}x",
            "\u{fffe}",
        ] {
            let written = string(s);
            assert_ne!(written, s, "{s:?} written plain");
            let doc = format!("k: {written}\n{written}: v\n");
            assert_eq!(from_str(&doc).unwrap(), json!({"k": s, s: "v"}), "ours: {doc:?}");
            assert_eq!(serde_yaml_value(&doc), json!({"k": s, s: "v"}), "serde_yaml: {doc:?}");
        }
        for s in ["x", "--page-size", "-x", "a:b", "a#b", "0.5.23", "10.0.0.1", "mlx5_0,mlx5_1", "é", "a b", "x-1"] {
            assert_eq!(string(s), s);
        }
    }

    /// Strings made of the characters that matter to YAML.
    fn nasty() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "a", "Z", "0", "1", "9", ".", "-", "+", "_", ":", "#", " ", "\t", "\n", "\r", "'", "\"", "\\", "[", "]",
            "{", "}", ",", "&", "*", "!", "|", ">", "%", "@", "`", "?", "~", "e", "x", "o", "b", "inf", "nan", "true",
            "null", "yes", "on", "<<", "---", "é", "\u{85}", "\u{2028}", "\u{feff}", "\u{0}", "\u{7f}", "💡",
        ]);
        prop::collection::vec(atoms, 0..8).prop_map(|v| v.concat())
    }

    fn arbitrary_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            nasty().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(nasty(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// What the writer writes, serde_yaml and our reader read back as the same value.
        #[test]
        fn written_yaml_reads_back(value in arbitrary_value()) {
            let text = to_string(&value).unwrap();
            prop_assert_eq!(&from_str(&text).unwrap(), &value, "ours, text:\n{}", text);
            let theirs: Value = serde_yaml::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            prop_assert_eq!(&theirs, &value, "serde_yaml, text:\n{}", text);
        }

        /// Number-, boolean- and null-like plain scalars are typed as serde_yaml types them.
        #[test]
        fn plain_scalars_match_serde_yaml(s in number_like_text()) {
            // Texts serde_yaml refuses or reads as a collection (`- `, `1: `) are not plain scalars.
            if let Ok(Value::Object(theirs)) = serde_yaml::from_str::<Value>(&format!("v: {s}")) {
                if let Some(v) = theirs.get("v").filter(|v| !v.is_object() && !v.is_array()) {
                    prop_assert_eq!(&plain_value(&s), v, "{:?}", s);
                }
            }
        }
    }

    /// Texts made of what numbers, booleans and nulls are made of.
    fn number_like_text() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "0", "1", "7", "9", "f", ".", "-", "+", "_", ":", "e", "E", "x", "o", "b", "inf", "nan", "Inf", "NaN",
            "true", "null", "~", "0x", "0o", "0b", "00",
        ]);
        prop::collection::vec(atoms, 1..6).prop_map(|v| v.concat())
    }
}
