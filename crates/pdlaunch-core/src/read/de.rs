//! A serde deserializer over the positioned YAML tree: any `DeserializeOwned` type read from a
//! [`Node`], with plain scalars typed by YAML 1.2's core schema ([`core_schema`]) and every
//! error placed at the node it is about, with that node's field path.
//!
//! YAML reads as serde_yaml 0.9 read a deployment: a plain scalar is text where text is wanted
//! (`name: 2024`), an empty value is an empty mapping or sequence where one is wanted. JSON (the
//! tree of a JSON text, or of a JSON value) reads as serde_json reads it: a number, boolean or
//! null is never text. Either way an enum is a scalar naming a variant, and a struct is never
//! read from a sequence of its fields (as serde's derive would allow). An error names the node whose deserializer raised it: an
//! unknown field its key, a missing or duplicate field its mapping, a refused value the value.

use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Expected, IntoDeserializer, Unexpected, Visitor};

use super::core_schema::{self, Plain};
use super::path::{self, Step};
use super::yaml::{Map, Node, Scalar, Seq, Style};

/// A value that could not be read from a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What is wrong, in serde's words.
    pub message: String,
    /// Source offset of the node the error is about.
    pub offset: usize,
    /// Field path of that node (`decode.instances[0].port`); empty for the root.
    pub path: String,
    /// Whether `offset` and `path` are set: the innermost node that sees the error sets them.
    placed: bool,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "field `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error { message: msg.to_string(), offset: 0, path: String::new(), placed: false }
    }

    // YAML's and JSON's word for nothing is null, not serde's "unit value".
    fn invalid_type(unexp: Unexpected, exp: &dyn Expected) -> Self {
        Self::custom(format_args!("invalid type: {}, expected {exp}", Shown(unexp)))
    }

    fn invalid_value(unexp: Unexpected, exp: &dyn Expected) -> Self {
        Self::custom(format_args!("invalid value: {}, expected {exp}", Shown(unexp)))
    }
}

/// An unexpected value as the messages show it.
struct Shown<'a>(Unexpected<'a>);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Unexpected::Unit => f.write_str("null"),
            other => other.fmt(f),
        }
    }
}

/// The end of the message for a YAML infinity or NaN.
pub const NON_FINITE: &str = "is a YAML infinity or NaN, which no deployment field takes";

/// How plain scalars read where text is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// As their text (YAML).
    Yaml,
    /// As their core-schema type, which text refuses unless it is text (JSON).
    Json,
}

/// Reads a `T` from `root`, written in `syntax`.
pub fn from_node<T: DeserializeOwned>(root: &Node, syntax: Syntax) -> Result<T, Error> {
    let de = NodeDe { view: View::of(root), path: &Path::Root, syntax };
    place(T::deserialize(de), root.start(), &Path::Root)
}

/// The path to the node being read, as a chain through the stack: printed only for an error.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    fn steps(&self, out: &mut Vec<Step>) {
        match *self {
            Path::Root => {}
            Path::Key(parent, k) => {
                parent.steps(out);
                out.push(Step::Key(k.to_owned()));
            }
            Path::Index(parent, i) => {
                parent.steps(out);
                out.push(Step::Index(i));
            }
        }
    }
}

/// Gives an error that no inner node placed the place of this one. Generic over every value the
/// deployment types read, so the work is in [`placed_at`], compiled once: with [`is_some`], 1.2 KiB
/// less of the app's gzipped download (523,541 to 522,323 bytes, `web/e2e/size.mjs`).
fn place<T>(r: Result<T, Error>, offset: usize, at: &Path) -> Result<T, Error> {
    r.map_err(|e| placed_at(e, offset, at))
}

#[inline(never)]
fn placed_at(mut e: Error, offset: usize, at: &Path) -> Error {
    if !e.placed {
        let mut steps = Vec::new();
        at.steps(&mut steps);
        e.path = path::render(&steps);
        e.offset = offset;
        e.placed = true;
    }
    e
}

/// A node, or a mapping's key read as one.
#[derive(Clone, Copy)]
enum View<'n, 'a> {
    Null(usize),
    Scalar(&'n Scalar<'a>),
    Seq(&'n Seq<'a>),
    Map(&'n Map<'a>),
}

impl<'n, 'a> View<'n, 'a> {
    fn of(n: &'n Node<'a>) -> Self {
        match n {
            Node::Null(at) => View::Null(*at),
            Node::Scalar(s) => View::Scalar(s),
            Node::Seq(s) => View::Seq(s),
            Node::Map(m) => View::Map(m),
        }
    }

    fn offset(self) -> usize {
        match self {
            View::Null(at) => at,
            View::Scalar(s) => s.start,
            View::Seq(s) => s.start,
            View::Map(m) => m.start,
        }
    }

    /// The core-schema type of a plain scalar; `None` for any other node.
    fn plain(self) -> Option<Plain> {
        match self {
            View::Scalar(s) if s.style == Style::Plain => Some(core_schema::plain(&s.text)),
            _ => None,
        }
    }
}

struct NodeDe<'n, 'a, 'p> {
    view: View<'n, 'a>,
    path: &'p Path<'p>,
    syntax: Syntax,
}

impl<'n, 'a> NodeDe<'n, 'a, '_> {
    /// The node as it is written, without regard to what is wanted.
    fn any<'de, V: Visitor<'de>>(&self, v: V) -> Result<V::Value, Error> {
        match self.view {
            View::Null(_) => v.visit_unit(),
            View::Scalar(s) => match self.view.plain() {
                None | Some(Plain::Text) => v.visit_str(&s.text),
                Some(Plain::Null) => v.visit_unit(),
                Some(Plain::Bool(b)) => v.visit_bool(b),
                Some(Plain::Unsigned(n)) => v.visit_u64(n),
                Some(Plain::Negative(n)) => v.visit_i64(n),
                Some(Plain::Float(f)) => v.visit_f64(f),
                Some(Plain::NonFinite) => Err(non_finite(s)),
            },
            View::Seq(s) => v.visit_seq(SeqDe { items: &s.items, next: 0, path: self.path, syntax: self.syntax }),
            View::Map(m) => {
                v.visit_map(MapDe { entries: &m.entries, pending: None, path: self.path, syntax: self.syntax })
            }
        }
    }

    /// Nothing written, read as an empty mapping.
    fn empty_map<'de, V: Visitor<'de>>(&self, v: V) -> Result<V::Value, Error> {
        v.visit_map(MapDe { entries: &[], pending: None, path: self.path, syntax: self.syntax })
    }

    fn placed<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        place(r, self.view.offset(), self.path)
    }
}

/// Whether an optional value is there: not for a null; an error for a non-finite number, which
/// null would leave unset without a word. Apart from `deserialize_option`, which is generic over
/// every optional field, so that it is compiled once.
#[inline(never)]
fn is_some(view: View) -> Result<bool, Error> {
    match (view, view.plain()) {
        (View::Null(_), _) | (_, Some(Plain::Null)) => Ok(false),
        (View::Scalar(s), Some(Plain::NonFinite)) => Err(non_finite(s)),
        _ => Ok(true),
    }
}

/// A variant's name, read as a unit variant.
fn name(text: &str) -> StrDeserializer<'_, Error> {
    text.into_deserializer()
}

fn non_finite(s: &Scalar) -> Error {
    de::Error::custom(format_args!("`{}` {NON_FINITE}", s.text))
}

/// "one of `a`, `b`", the derive's words for a set of variants.
struct OneOf(&'static [&'static str]);

impl Expected for OneOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("no variant"),
            [a] => write!(f, "`{a}`"),
            [a, b] => write!(f, "`{a}` or `{b}`"),
            names => {
                f.write_str("one of ")?;
                for (i, n) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{n}`")?;
                }
                Ok(())
            }
        }
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'_, '_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.placed(self.any(v))
    }

    /// A scalar's text, whatever it would be typed as in YAML; nothing is empty text.
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let r = match self.view {
            View::Null(_) => v.visit_str(""),
            View::Scalar(s) if self.syntax == Syntax::Yaml || matches!(self.view.plain(), None | Some(Plain::Text)) => {
                v.visit_str(&s.text)
            }
            View::Scalar(_) | View::Seq(_) | View::Map(_) => self.any(v),
        };
        self.placed(r)
    }

    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.deserialize_str(v)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.deserialize_str(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let r = match is_some(self.view) {
            Ok(false) => v.visit_none(),
            Ok(true) => v.visit_some(NodeDe { ..self }),
            Err(e) => Err(e),
        };
        self.placed(r)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let r = match self.view {
            View::Null(_) => v.visit_seq(SeqDe { items: &[], next: 0, path: self.path, syntax: self.syntax }),
            _ => self.any(v),
        };
        self.placed(r)
    }

    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let r = match self.view {
            View::Null(_) => self.empty_map(v),
            _ => self.any(v),
        };
        self.placed(r)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let r = match self.view {
            View::Null(_) => self.empty_map(v),
            View::Seq(_) => Err(de::Error::invalid_type(Unexpected::Seq, &v)),
            _ => self.any(v),
        };
        self.placed(r)
    }

    /// A scalar naming a unit variant (empty names the variant ``): tags, which would name
    /// others, are not kept by the reader.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let r = match self.view {
            View::Null(_) => v.visit_enum(name("")),
            View::Scalar(s) if self.syntax == Syntax::Yaml || matches!(self.view.plain(), None | Some(Plain::Text)) => {
                v.visit_enum(name(&s.text))
            }
            View::Scalar(_) => self.any(OneOfVisitor(variants)).map(|never| match never {}),
            View::Seq(_) => Err(de::Error::invalid_type(Unexpected::Seq, &OneOf(variants))),
            View::Map(_) => Err(de::Error::invalid_type(Unexpected::Map, &OneOf(variants))),
        };
        self.placed(r)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, v: V) -> Result<V::Value, Error> {
        let r = v.visit_newtype_struct(NodeDe { ..self });
        self.placed(r)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit unit_struct tuple
        tuple_struct
    }
}

/// Refuses what is not a variant's name, in the words of [`OneOf`].
struct OneOfVisitor(&'static [&'static str]);

impl<'de> Visitor<'de> for OneOfVisitor {
    type Value = std::convert::Infallible;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        OneOf(self.0).fmt(f)
    }
}

/// The items of a sequence (none, for nothing written).
struct SeqDe<'n, 'a, 'p> {
    items: &'n [Node<'a>],
    next: usize,
    path: &'p Path<'p>,
    syntax: Syntax,
}

impl<'de> de::SeqAccess<'de> for SeqDe<'_, '_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(item) = self.items.get(self.next) else { return Ok(None) };
        let at = Path::Index(self.path, self.next);
        self.next += 1;
        place(seed.deserialize(NodeDe { view: View::of(item), path: &at, syntax: self.syntax }), item.start(), &at)
            .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len() - self.next)
    }
}

/// The entries of a mapping (none, for nothing written).
struct MapDe<'n, 'a, 'p> {
    /// The entries whose keys are still to read.
    entries: &'n [(Scalar<'a>, Node<'a>)],
    /// The entry whose key was read last, until its value is.
    pending: Option<&'n (Scalar<'a>, Node<'a>)>,
    path: &'p Path<'p>,
    syntax: Syntax,
}

impl<'de> de::MapAccess<'de> for MapDe<'_, '_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((entry, rest)) = self.entries.split_first() else { return Ok(None) };
        self.entries = rest;
        self.pending = Some(entry);
        let k = &entry.0;
        let at = Path::Key(self.path, &k.text);
        place(seed.deserialize(NodeDe { view: View::Scalar(k), path: &at, syntax: self.syntax }), k.start, &at)
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((k, value)) = self.pending.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        let at = Path::Key(self.path, &k.text);
        // A value's own deserializer may refuse it after reading it (`deserialize_with`).
        place(seed.deserialize(NodeDe { view: View::of(value), path: &at, syntax: self.syntax }), value.start(), &at)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}
