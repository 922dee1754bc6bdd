//! The views, one per file, each over props from the one state. Views that hold state (hooks)
//! are function components; the others are plain functions returning `Html`, because every
//! component type adds its own copy of Yew's lifecycle code (about 1.4 KB gzipped) to the app.

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
