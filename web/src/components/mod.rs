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
pub mod picture;
pub mod section;
pub mod source;
pub mod toolbar;

/// A `class` attribute: `base`, then each extra class that is present. Plain text rather than
/// Yew's `classes!`, whose ordered-set type the app would otherwise carry for eight call sites.
pub fn class_list(base: &str, extra: &[Option<&str>]) -> String {
    extra.iter().flatten().fold(base.to_owned(), |mut s, c| {
        s.push(' ');
        s.push_str(c);
        s
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn class_list_joins_the_present_classes() {
        assert_eq!(super::class_list("field", &[None, Some("invalid")]), "field invalid");
        assert_eq!(super::class_list("tab", &[Some("current"), Some("x")]), "tab current x");
        assert_eq!(super::class_list("nav", &[None]), "nav");
    }
}
