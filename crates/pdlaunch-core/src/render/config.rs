//! SGLang `--config` YAML, one file per role, plus the short command lines that load it.
//!
//! SGLang's config loader has traps this renderer avoids: keys are flag names without `--` in the
//! dash form (`page-size`, not `page_size`); only plain store and store_true options are accepted
//! (no deprecated aliases, no `--no-x` forms); a store_true set in the file cannot be turned off
//! from the command line; `--config=path` (equals form) is silently ignored, so the path is its
//! own token; and scalars are turned back into strings with Python's `str()` after PyYAML (YAML
//! 1.1) read them, where `on`, `no`, `1_000` or `1:20` are not strings. So every string is written
//! double-quoted (a JSON string is a valid YAML double-quoted scalar), numbers and `true` plain.

use super::shell::render_shell_like;
use super::{header, RenderedFile};
use crate::deployment::Role;
use crate::flags::Kind;
use crate::plan::{Arg, Plan, Scope};

/// The YAML key of a flag spelling.
pub fn config_key(flag: &str) -> &str {
    flag.trim_start_matches("--")
}

/// The YAML text of an argument's value.
fn yaml_value(arg: &Arg) -> String {
    let flag = arg.flag.expect("config args come from the table");
    let values = &arg.tokens[1..];
    let quoted = |v: &String| serde_json::to_string(v).expect("strings serialize");
    match flag.kind {
        Kind::Switch => "true".into(),
        Kind::Int if values[0].parse::<i64>().is_ok() => values[0].clone(),
        Kind::Float if crate::float::parse(&values[0]).is_some_and(f64::is_finite) => values[0].clone(),
        Kind::List | Kind::Append => format!("[{}]", values.iter().map(quoted).collect::<Vec<_>>().join(", ")),
        _ => quoted(&values[0]),
    }
}

/// Splits a process's args into the role-wide ones (for the YAML) and the rest (command line).
fn split(args: &[Arg]) -> (Vec<&Arg>, Vec<&Arg>) {
    args.iter().partition(|a| a.scope == Scope::Role && a.flag.is_some())
}

/// The config file name of a role.
pub fn config_file_name(plan: &Plan, role: Role) -> String {
    format!("{}-{}.yaml", plan.name, role)
}

/// One YAML per role (from its first process; role-wide args are equal on all of them) and one
/// script per process that runs `--config FILE` plus its per-process flags.
pub fn render_config(plan: &Plan) -> Vec<RenderedFile> {
    let mut files = Vec::new();
    for role in Role::BOTH {
        let Some(first) = plan.role(role).next() else { continue };
        let (wide, _) = split(&first.args);
        let body: String = wide.iter().map(|a| format!("{}: {}\n", config_key(&a.tokens[0]), yaml_value(a))).collect();
        let mut contents = header(plan);
        contents
            .push_str(&format!("# SGLang --config file for every {role} server. Keys are flag names without `--`.\n"));
        contents.push_str(&body);
        files.push(RenderedFile { name: config_file_name(plan, role), contents, executable: false });
    }
    for p in &plan.servers {
        let (_, rest) = split(&p.args);
        let path = format!("{}/{}", plan.config_dir.trim_end_matches('/'), config_file_name(plan, p.role));
        let mut argv =
            vec![plan.python.clone(), "-m".into(), crate::plan::SERVER_MODULE.into(), "--config".into(), path];
        argv.extend(rest.iter().flat_map(|a| a.tokens.iter().cloned()));
        files.push(RenderedFile {
            name: format!("{}.sh", p.id()),
            contents: render_shell_like(
                plan,
                &format!("{} (loads its role's --config file)", p.label()),
                &p.env,
                &argv,
            ),
            executable: true,
        });
    }
    files.push(RenderedFile {
        name: "router.sh".into(),
        contents: render_shell_like(plan, "router", &plan.router.env, &plan.router_argv()),
        executable: true,
    });
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SGLang turns YAML scalars back into argv strings with `str()`, so strings that YAML would
    /// read as numbers, booleans or null must stay strings.
    #[test]
    fn ambiguous_strings_stay_strings() {
        let mut d = crate::examples::example("llama-1p1d").unwrap();
        for name in [
            "1.10", "true", "null", "0x10", "~", "8e3", "no", "on", "1_000", "1:20", "- x", "a: b", "#x", "=", "<<",
            "\"q\"\n'",
        ] {
            d.model.served_name = Some(name.into());
            let files = render_config(&crate::plan::plan(&d));
            let yaml: serde_yaml::Mapping = serde_yaml::from_str(&files[0].contents).unwrap();
            let v = &yaml[&serde_yaml::Value::String("served-model-name".into())];
            assert_eq!(v, &serde_yaml::Value::String(name.into()), "{name} was not kept as a string");
        }
    }

    #[test]
    fn keys_use_dashes_and_config_path_is_its_own_token() {
        let d = crate::examples::example("deepseek-v3-dp-deepep").unwrap();
        let files = render_config(&crate::plan::plan(&d));
        for f in files.iter().filter(|f| f.name.ends_with(".yaml")) {
            for line in f.contents.lines().filter(|l| !l.starts_with('#')) {
                let key = line.split(':').next().unwrap();
                assert!(!key.contains('_'), "{key} has an underscore");
            }
        }
        assert!(files.iter().any(|f| f.contents.contains("--config ./deepseek-v3-dp-deepep-prefill.yaml")));
        assert!(files.iter().all(|f| !f.contents.contains("--config=")));
    }
}
