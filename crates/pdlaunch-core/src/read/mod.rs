//! The readers every other layer stands on: source texts with their line index and the place of
//! every byte ([`source`]), a YAML reader that keeps those places ([`yaml`]), the types of its
//! plain scalars ([`core_schema`]), field paths in its trees ([`path`]) and a serde deserializer
//! over them ([`de`]). The deployment loader, the YAML values and the linter all read through
//! here; nothing here knows SGLang.

pub mod core_schema;
pub mod de;
pub mod path;
pub mod source;
pub mod yaml;
