//! The published JSON Schema: checked in under `schema/`, equal to what the types generate, and
//! accepted by an independent validator (the `jsonschema` crate, not schemars) for every example.
//!
//! To refresh the checked-in files after changing the types: `UPDATE_SCHEMA=1 cargo test --test schema`.

use std::path::PathBuf;

use pdlaunch_core::schema::{schema_text, Dialect};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(root().join("examples"))
        .expect("examples/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    v.sort();
    assert!(v.len() >= 4, "expected the examples");
    v
}

#[test]
fn checked_in_schema_matches_the_types() {
    for dialect in [Dialect::Draft07, Dialect::Draft2020_12] {
        let path = root().join("schema").join(dialect.file_name());
        let generated = schema_text(dialect);
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "{} drifted from the deployment types; run `UPDATE_SCHEMA=1 cargo test --test schema` and commit it",
            path.display()
        );
    }
}

#[test]
fn every_example_has_the_modeline_and_validates_independently() {
    for dialect in [Dialect::Draft07, Dialect::Draft2020_12] {
        let schema: serde_json::Value = serde_json::from_str(&schema_text(dialect)).unwrap();
        let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
        for (path, text) in examples() {
            assert!(
                text.starts_with("# yaml-language-server: $schema=../schema/deployment.schema.json\n"),
                "{path} must start with the yaml-language-server modeline"
            );
            let value: serde_json::Value = serde_yaml::from_str(&text).expect("example is YAML");
            let errors: Vec<String> =
                validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path)).collect();
            assert!(errors.is_empty(), "{path} fails the {dialect:?} schema:\n{}", errors.join("\n"));
        }
    }
}

#[test]
fn the_independent_validator_rejects_what_serde_rejects() {
    let schema: serde_json::Value = serde_json::from_str(&schema_text(Dialect::Draft07)).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let (_, text) = &examples()[0];
    let good: serde_json::Value = serde_yaml::from_str(text).unwrap();
    for (mutate, what) in [
        (("shared", "kv_cache_dtype", serde_json::json!("fp9")), "bad enum"),
        (("shared", "page_size", serde_json::json!("sixteen")), "wrong type"),
        (("decode", "tpp", serde_json::json!(2)), "unknown field"),
    ] {
        let mut v = good.clone();
        let ((obj, key, val), _) = (mutate, ());
        v[obj][key] = val;
        assert!(!validator.is_valid(&v), "schema accepted a {what}");
        let parsed: Result<pdlaunch_core::deployment::Deployment, _> = serde_json::from_value(v);
        assert!(parsed.is_err(), "serde accepted a {what}");
    }
}
