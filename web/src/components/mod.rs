//! The views: small function components, one per file, each over props from the one state.

pub mod app;
pub mod buffer;
pub mod builder;
pub mod diagnostics;
pub mod explain;
pub mod field;
pub mod finding;
pub mod group;
pub mod help;
pub mod lint;
pub mod lint_finding;
pub mod list;
pub mod nav;
pub mod outputs;
pub mod section;
pub mod source;
pub mod toolbar;
