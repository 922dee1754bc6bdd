//! The core's modules stand in layers, listed once in `ARCHITECTURE.md` ("Layers of the core"):
//! a module may use the modules of the layers below its own, never one of its own layer or above.
//! This test reads that list and every source file of the core (test code left out) and fails on
//! an import that crosses the layers upward, on a module the list does not place, and on a crate of
//! ours that the core depends on.

// A native test: the standard sorts, which `clippy.toml` keeps out of the browser app, are fine.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Module name -> layer number (1 is the lowest), from the numbered list under the heading
/// "## Layers of the core": `N. \`a\`, \`b\`: what they are`.
fn layers(architecture: &str) -> BTreeMap<String, usize> {
    let section = architecture
        .split("\n## ")
        .find(|s| s.starts_with("Layers of the core"))
        .expect("ARCHITECTURE.md has a section \"## Layers of the core\"");
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let Some((number, rest)) = line.split_once(". ") else { continue };
        let Ok(layer) = number.trim().parse::<usize>() else { continue };
        let names = rest.split(':').next().unwrap_or_default();
        for name in names.split('`').skip(1).step_by(2) {
            assert!(out.insert(name.to_owned(), layer).is_none(), "`{name}` is placed in two layers");
        }
    }
    out
}

/// The source files under `dir`, with their paths.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The files that a `#[cfg(test)] mod name;` declares: test code as a whole.
fn test_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            if pair[0].trim() != "#[cfg(test)]" {
                continue;
            }
            let Some(name) = pair[1].trim().strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) else { continue };
            let stem = file.file_stem().unwrap();
            let dir = if stem == "mod" || stem == "lib" {
                file.parent().unwrap().to_owned()
            } else {
                file.with_extension("")
            };
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name).join("mod.rs"));
        }
    }
    out
}

/// The text of a file without its comments and without the `#[cfg(test)]` items written inline
/// (a module or function with a body, skipped to its closing brace at the same indent).
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" && i + 1 < lines.len() && lines[i + 1].trim_end().ends_with('{') {
            let indent = lines[i + 1].len() - lines[i + 1].trim_start().len();
            let close = format!("{}}}", " ".repeat(indent));
            i += 2;
            while i < lines.len() && !lines[i].starts_with(&close) {
                i += 1;
            }
            i += 1;
            continue;
        }
        let line = lines[i];
        let line = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// The top-level modules a text names as `crate::<module>`.
fn uses(code: &str) -> Vec<&str> {
    let mut out: Vec<&str> = code
        .match_indices("crate::")
        .filter(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$'))
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            &rest[..rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .filter(|m| !m.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The module a source file belongs to: the first component under `src/`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.strip_suffix(".rs").unwrap_or(&first).to_owned()
}

#[test]
fn core_imports_point_down_the_layers() {
    let architecture = std::fs::read_to_string(Path::new(ROOT).join("../../ARCHITECTURE.md")).unwrap();
    let layer = layers(&architecture);
    assert!(layer.len() > 10, "the layer list of ARCHITECTURE.md was not read: {layer:?}");
    let src = Path::new(ROOT).join("src");
    let files = sources(&src);
    let tests = test_files(&files);
    let mut problems = Vec::new();

    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in code(&lib).lines() {
        let declared = line.trim().trim_start_matches("pub ").strip_prefix("mod ").and_then(|r| r.strip_suffix(';'));
        if let Some(m) = declared.filter(|m| !layer.contains_key(*m)) {
            problems.push(format!("module `{m}` is in no layer: place it in ARCHITECTURE.md's list"));
        }
    }
    for file in files.iter().filter(|f| !tests.contains(f) && f.file_name().unwrap() != "lib.rs") {
        let module = module_of(&src, file);
        let Some(&own) = layer.get(&module) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for used in uses(&code(&text)) {
            match layer.get(used) {
                Some(&l) if used != module && l >= own => problems.push(format!(
                    "{}: `{module}` (layer {own}) uses `{used}` (layer {l}): only layers below {own} may be used",
                    file.strip_prefix(ROOT).unwrap().display()
                )),
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "imports cross the layers of ARCHITECTURE.md:\n{}", problems.join("\n"));
}

#[test]
fn the_core_depends_on_no_crate_of_ours() {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let ours: Vec<&str> = manifest.lines().filter(|l| l.trim_start().starts_with("pdlaunch")).collect();
    assert!(ours.is_empty(), "pdlaunch-core depends on crates of ours: {ours:?}");
}

#[test]
fn the_checker_sees_an_upward_import() {
    // The reader of the list and of the code, on a small case each way: the test above would pass
    // vacuously if either read nothing.
    let layer = layers("# A\n\n## Layers of the core\n\n1. `low`: bottom\n2. `mid`, `other`: middle\n3. `high`: top\n");
    assert_eq!(layer["low"], 1);
    assert_eq!(layer["other"], 2);
    let source = "use crate::high::X;\n// crate::comment\nfn f() { crate::low::y(); }\n#[cfg(test)]\nmod tests {\n    use crate::top;\n}\n";
    assert_eq!(uses(&code(source)), ["high", "low"]);
    assert_eq!(uses("let s = \"$crate::x\"; mycrate::y;"), Vec::<&str>::new());
}
