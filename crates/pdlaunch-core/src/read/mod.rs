//! The readers every other layer stands on: source texts with their line index and the place of
//! every byte ([`source`]), and a YAML reader that keeps those places ([`yaml`]). The deployment
//! loader, the YAML values and the linter all read through here; nothing here knows SGLang.

pub mod source;
pub mod yaml;
