//! The standard code that the core's stand-ins keep out of the browser app stays out: no
//! `parse::<f64>` or `f64::from_str` in the core or the app outside `float.rs` (clippy cannot
//! refuse `str::parse` for one type only; the slice sorts are refused by `clippy.toml`).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Lines that parse an `f64` with the standard parser, outside tests.
fn standard_float_parses(text: &str) -> Vec<usize> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| {
            ["parse::<f64>", "parse::<f32>", "f64::from_str", "f32::from_str"].iter().any(|p| l.contains(p))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn the_standard_float_parser_stays_out_of_the_app() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("../../web/src"), &mut files);
    assert!(files.len() > 50, "only {} source files found", files.len());
    let found: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("float.rs"))
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            standard_float_parses(&text).into_iter().map(move |n| format!("{}:{n}", f.display()))
        })
        .collect();
    assert!(found.is_empty(), "use pdlaunch_core::float::parse (see float.rs): {found:?}");
}

#[test]
fn the_scan_sees_a_standard_float_parse() {
    assert_eq!(standard_float_parses("let x = t.parse::<f64>();\n// t.parse::<f64>()\n"), [1]);
    assert_eq!(standard_float_parses("f64::from_str(t)\n#[cfg(test)]\nmod t { f64::from_str(u) }"), [1]);
    assert!(standard_float_parses("crate::float::parse(t)").is_empty());
}
