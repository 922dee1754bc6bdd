//! Snapshot tests: the rendered output (or refusal) of every example in every format, the SVG and
//! Mermaid pictures too, is pinned under `tests/snapshots/`. Review changes with `cargo insta
//! review` (or `INSTA_UPDATE=always`).

use std::path::PathBuf;

use pdlaunch_core::examples::EXAMPLES;
use pdlaunch_core::picture::render;
use pdlaunch_core::render::{bundle, Format};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

#[test]
fn every_example_in_every_format() {
    for e in EXAMPLES {
        let d = pdlaunch_core::examples::example(e.name).expect("example parses");
        for format in Format::ALL {
            // A format that cannot render an example (`dynamo` of a release no Dynamo runtime
            // ships) pins its refusal instead.
            let text = match render(&d, format) {
                Ok(files) => bundle(&files),
                Err(why) => format!("refused at {:?}: {}\n", why.field, why.message),
            };
            settings().bind(|| insta::assert_snapshot!(format!("{}.{}", e.name, format.as_str()), text));
        }
    }
}
