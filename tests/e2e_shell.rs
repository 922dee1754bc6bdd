//! End-to-end: render the shell scripts of a deployment, run each one with bash against a stub
//! `python3` that records the argv and environment it receives, and compare them with the plan.
//!
//! This proves that what the plan says (`Plan::server_argv` / `Plan::router_argv`, the `env`
//! maps) is exactly what the interpreter gets, for the shipped examples and for a deployment full
//! of shell metacharacters, quotes, newlines and non-ASCII text (nothing may be expanded, split
//! or substituted on the way).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pdlaunch_core::deployment::{Deployment, Role};
use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::load::{parse_deployment, Syntax};
use pdlaunch_core::plan::{plan, Plan, Scope, ServerProcess, ROUTER_MODULE, SERVER_MODULE};
use pdlaunch_core::render::{render_config, render_shell, RenderedFile};

const BIN: &str = env!("CARGO_BIN_EXE_pdlaunch");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The stub interpreter: records `$0`, every argument (NUL-terminated, so newlines and empty
/// strings survive) and the whole environment (`env -0`), then exits 0.
const STUB: &str = r#"#!/usr/bin/env bash
printf '%s' "$0" > "$PDL_ARGV0_OUT"
: > "$PDL_ARGV_OUT"
for a in "$@"; do printf '%s\0' "$a" >> "$PDL_ARGV_OUT"; done
env -0 > "$PDL_ENV_OUT"
"#;

/// A sandbox: a temp dir with the stub as `python3` and `python` in `bin/`, a working directory,
/// and record files.
struct Sandbox {
    dir: tempfile::TempDir,
}

/// What one run of a script recorded.
#[derive(Debug)]
struct Recorded {
    argv0: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        for name in ["python3", "python"] {
            write_executable(&bin.join(name), STUB);
        }
        Sandbox { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn bin(&self) -> PathBuf {
        self.path().join("bin")
    }
    /// The working directory scripts run in (relative command substitutions would land here).
    fn work(&self) -> PathBuf {
        self.path().join("work")
    }
    /// A marker file that only a successful command substitution creates.
    fn marker(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// Runs `script` with bash (stub first on PATH, otherwise a minimal clean environment) and
    /// returns what the stub recorded.
    fn run(&self, script: &Path) -> Recorded {
        self.run_with_path(script, &format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin().display()))
    }

    fn run_with_path(&self, script: &Path, path_var: &str) -> Recorded {
        let rec = self.path().join("rec");
        let _ = std::fs::remove_dir_all(&rec);
        std::fs::create_dir_all(&rec).unwrap();
        let (argv0, argv, env) = (rec.join("argv0"), rec.join("argv"), rec.join("env"));
        let out = Command::new("bash")
            .arg(script)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", path_var)
            .env("HOME", self.work())
            .env("PDL_ARGV0_OUT", &argv0)
            .env("PDL_ARGV_OUT", &argv)
            .env("PDL_ENV_OUT", &env)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "script {} failed ({}):\nstdout: {}\nstderr: {}\nscript:\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(script).unwrap_or_default()
        );
        assert!(argv.exists(), "script {} did not reach the stub interpreter", script.display());
        let args = split_nul(&std::fs::read(&argv).unwrap());
        let env = split_nul(&std::fs::read(&env).unwrap())
            .into_iter()
            .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        Recorded { argv0: std::fs::read_to_string(&argv0).unwrap(), args, env }
    }
}

fn write_executable(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Splits NUL-terminated records; each must be valid UTF-8 (the inputs were Rust strings).
fn split_nul(bytes: &[u8]) -> Vec<String> {
    if bytes.is_empty() {
        return Vec::new();
    }
    assert_eq!(bytes.last(), Some(&0), "records are NUL-terminated");
    bytes[..bytes.len() - 1]
        .split(|&b| b == 0)
        .map(|r| String::from_utf8(r.to_vec()).expect("recorded bytes are UTF-8"))
        .collect()
}

/// Writes rendered files into `dir` (as `pdlaunch render -o` would).
fn write_files(dir: &Path, files: &[RenderedFile]) {
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        let path = dir.join(&f.name);
        if f.executable {
            write_executable(&path, &f.contents);
        } else {
            std::fs::write(&path, &f.contents).unwrap();
        }
    }
}

fn script_name(p: &ServerProcess) -> String {
    format!("{}.sh", p.id())
}

/// Asserts that every variable of `expected` arrived with exactly its value.
fn assert_env(what: &str, expected: &BTreeMap<String, String>, got: &BTreeMap<String, String>) {
    for (k, v) in expected {
        match got.get(k) {
            Some(g) => assert_eq!(g, v, "{what}: env var {k} arrived with a different value"),
            None => panic!("{what}: env var {k} did not arrive (expected {v:?}); got keys {:?}", got.keys()),
        }
    }
}

/// The file names `render_shell` must produce for a plan.
fn expected_shell_names(plan: &Plan) -> Vec<String> {
    let mut v: Vec<String> = plan.servers.iter().map(script_name).collect();
    v.push("router.sh".into());
    v.sort();
    v
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Runs every shell script of `plan` found in `dir` and compares argv and env with the plan.
fn assert_scripts_match_plan(sb: &Sandbox, dir: &Path, plan: &Plan, what: &str) {
    assert_eq!(dir_names(dir), expected_shell_names(plan), "{what}: the files rendered into {}", dir.display());
    for p in &plan.servers {
        let script = dir.join(script_name(p));
        let rec = sb.run(&script);
        let argv = plan.server_argv(p);
        let label = format!("{what}: {}", p.label());
        assert_eq!(Path::new(&rec.argv0).file_name().unwrap().to_str().unwrap(), plan.python, "{label}: interpreter");
        assert_eq!(rec.args, argv[1..].to_vec(), "{label}: argv after the interpreter");
        assert_eq!(&rec.args[..2], ["-m", SERVER_MODULE], "{label}: module");
        assert_env(&label, &p.env, &rec.env);
    }
    let rec = sb.run(&dir.join("router.sh"));
    let argv = plan.router_argv();
    assert_eq!(rec.args, argv[1..].to_vec(), "{what}: router argv after the interpreter");
    assert_eq!(&rec.args[..2], ["-m", ROUTER_MODULE], "{what}: router module");
    assert_env(&format!("{what}: router"), &plan.router.env, &rec.env);
}

fn run_cli(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).env("NO_COLOR", "1").output().expect("pdlaunch runs")
}

/// The harness itself: the stub records exact arguments, so a badly quoted script is caught.
#[test]
fn harness_detects_bad_quoting() {
    let sb = Sandbox::new();
    let script = sb.path().join("bad.sh");
    std::fs::write(&script, "set -euo pipefail\nexport V='x y'\nexec python3 -m mod a b '' \"c\nd\" $V\n").unwrap();
    let rec = sb.run(&script);
    assert_eq!(rec.args, ["-m", "mod", "a", "b", "", "c\nd", "x", "y"]);
    assert_eq!(rec.env.get("V").map(String::as_str), Some("x y"));
    assert!(rec.argv0.ends_with("/bin/python3"), "the stub on PATH ran: {}", rec.argv0);
}

// ---------------------------------------------------------------------------------------------
// The shipped examples.

#[test]
fn examples_list_matches_the_examples_folder() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".yaml").map(str::to_owned)
        })
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = EXAMPLES.iter().map(|e| e.name.to_owned()).collect();
    embedded.sort();
    assert_eq!(on_disk, embedded, "examples/*.yaml and pdlaunch_core::examples::EXAMPLES differ");
}

/// `pdlaunch render FILE -o DIR` for each example, then every script runs against the stub.
#[test]
fn every_example_cli_rendered_scripts_pass_exact_argv_and_env() {
    for e in EXAMPLES {
        let sb = Sandbox::new();
        let file = repo_root().join("examples").join(format!("{}.yaml", e.name));
        let out_dir = sb.path().join("out");
        let out = run_cli(&["render", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "render {} exited {}: {}",
            e.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let d = parse_deployment(&text, e.name, Syntax::Yaml).expect("example parses");
        let plan = plan(&d);
        assert!(!plan.servers.is_empty(), "{}: plan has servers", e.name);
        assert!(plan.role(Role::Prefill).next().is_some() && plan.role(Role::Decode).next().is_some());
        assert_scripts_match_plan(&sb, &out_dir, &plan, e.name);
    }
}

/// The same through the library renderer (`render_shell`), which the web app uses.
#[test]
fn every_example_library_rendered_scripts_pass_exact_argv_and_env() {
    for e in EXAMPLES {
        let sb = Sandbox::new();
        let d = example(e.name).expect("embedded example");
        let plan = plan(&d);
        let dir = sb.path().join("out");
        write_files(&dir, &render_shell(&plan));
        assert_scripts_match_plan(&sb, &dir, &plan, e.name);
    }
}

/// Every script is `bash -n` clean and uses the strict mode the brief promises.
#[test]
fn every_example_script_is_strict_and_syntactically_valid() {
    for e in EXAMPLES {
        let plan = plan(&example(e.name).unwrap());
        for f in render_shell(&plan) {
            assert!(f.executable, "{}: {} should be executable", e.name, f.name);
            assert!(f.contents.starts_with("#!/usr/bin/env bash\n"), "{}: {} shebang", e.name, f.name);
            assert!(f.contents.contains("\nset -euo pipefail\n"), "{}: {} lacks set -euo pipefail", e.name, f.name);
            assert!(f.contents.contains("Generated by pdlaunch"), "{}: {} lacks the marker", e.name, f.name);
            let out = Command::new("bash").arg("-n").arg("-c").arg(&f.contents).output().unwrap();
            assert!(
                out.status.success(),
                "{}: {} is not valid bash: {}",
                e.name,
                f.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A hostile deployment: every free-text field full of shell syntax.

/// Strings bash would interpret in some way if they were not quoted exactly right. `{mark}` is
/// replaced by a marker path: any command substitution that runs creates it.
const NASTY: &[&str] = &[
    "with spaces",
    "  leading and trailing  ",
    "single 'quote'",
    "it's",
    "'",
    "''",
    "double \"quote\"",
    "\"",
    "new\nline",
    "\n",
    "trailing newline\n",
    "cr\r\nlf",
    "tab\there",
    "$(touch {mark})",
    "`touch {mark}`",
    "$(touch pwned-relative)",
    "a;touch {mark}",
    "a | touch {mark}",
    "a && touch {mark}",
    "a & touch {mark}",
    "x > {mark}",
    "< /etc/passwd",
    "2>&1",
    "*",
    "/*",
    "?",
    "[a-z]*",
    "~",
    "~root",
    "~/x",
    "a:~/x",
    "$HOME",
    "${HOME}",
    "$PATH",
    "$0",
    "$@",
    "$'\\x41'",
    "$((1+1))",
    "!!",
    "!$",
    "#not a comment",
    "a #b",
    "{a,b}",
    "{1..3}",
    "\\",
    "\\\\",
    "back\\slash",
    "\\n",
    "trailing backslash\\",
    "=starts-with-equals",
    "a=b",
    "%s%n",
    "(subshell)",
    "@(x|y)",
    "модель ü 模型 🚀",
    "\u{a0}nbsp\u{2028}ls\u{feff}bom",
    "",
];

fn nasty(mark: &Path) -> Vec<String> {
    NASTY.iter().map(|s| s.replace("{mark}", mark.to_str().unwrap())).collect()
}

/// One long string combining the worst of the list.
fn nasty_one(mark: &Path, head: &str) -> String {
    format!(
        "{head} 'sq' \"dq\" $(touch {m}) `touch {m}` ; | * ~ \\ \\' \n\tнов модель ü 模型 🚀 $HOME ${{X}} !! {{a,b}} #",
        m = mark.display()
    )
}

/// `llama-1p1d` with hostile strings in every free-text field that reaches a command line or an
/// environment.
fn hostile(mark: &Path) -> Deployment {
    let mut d = example("llama-1p1d").expect("llama-1p1d example");
    d.model.path = nasty_one(mark, "/models/my model");
    d.model.served_name = Some(nasty_one(mark, "served name").replace(':', ""));
    assert!(!d.model.served_name.as_ref().unwrap().contains(':'));
    d.model.chat_template = Some(nasty_one(mark, "template\r\n{{ messages }}"));
    d.model.tokenizer = Some("".into());
    d.model.revision = Some("-".into());
    let list = nasty(mark);
    d.prefill.extra_args = list.clone();
    let mut rev = list.clone();
    rev.reverse();
    d.decode.extra_args = rev;
    d.router.extra_args = list.clone();
    d.prefill.extra_args.push("--flag with space".into());
    d.decode.extra_args.push("--".into());
    for (i, v) in list.iter().enumerate() {
        d.shared.env.insert(format!("PDL_SHARED_{i}"), v.clone());
        d.prefill.env.insert(format!("PDL_PREFILL_{i}"), v.clone());
        d.decode.env.insert(format!("PDL_DECODE_{i}"), v.clone());
        d.router.env.insert(format!("PDL_ROUTER_{i}"), v.clone());
    }
    // A side value overriding a shared one must win on that side.
    d.shared.env.insert("PDL_OVERRIDDEN".into(), "shared 'value'".into());
    d.decode.env.insert("PDL_OVERRIDDEN".into(), "decode $(touch value)".into());
    d.shared.env.insert("PDL_COMBINED".into(), nasty_one(mark, "env"));
    d.prefill.bind_host = Some("0.0.0.0 $(touch bind)".into());
    d
}

fn assert_no_marker(sb: &Sandbox, mark: &Path) {
    assert!(!mark.exists(), "a command substitution ran: {} was created", mark.display());
    for name in ["pwned-relative", "value", "bind"] {
        assert!(!sb.work().join(name).exists(), "a command substitution ran: work/{name} was created");
    }
    assert!(!sb.work().join("x").exists(), "`~/x` or a redirection was expanded into a file");
}

#[test]
fn hostile_deployment_library_render_reaches_argv_intact() {
    let sb = Sandbox::new();
    let mark = sb.marker("pwned");
    let d = hostile(&mark);
    let plan = plan(&d);
    // Sanity: the hostile strings really are in the plan, verbatim.
    let prefill = plan.role(Role::Prefill).next().unwrap();
    let toks = prefill.arg_tokens();
    assert!(toks.contains(&d.model.path), "model path is a single token of the plan");
    assert!(toks.ends_with(&d.prefill.extra_args), "extra_args come last, verbatim");
    assert_eq!(prefill.env.get("PDL_OVERRIDDEN").map(String::as_str), Some("shared 'value'"));
    let decode = plan.role(Role::Decode).next().unwrap();
    assert_eq!(decode.env.get("PDL_OVERRIDDEN").map(String::as_str), Some("decode $(touch value)"));

    let dir = sb.path().join("out");
    write_files(&dir, &render_shell(&plan));
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        let out = Command::new("bash").arg("-n").arg(&f).output().unwrap();
        assert!(out.status.success(), "{} is not valid bash: {}", f.display(), String::from_utf8_lossy(&out.stderr));
    }
    assert_scripts_match_plan(&sb, &dir, &plan, "hostile");
    assert_no_marker(&sb, &mark);
    // Spot checks, independent of the plan, on what the interpreter got.
    let rec = sb.run(&dir.join(script_name(prefill)));
    let i = rec.args.iter().position(|a| a == "--model-path").expect("--model-path passed");
    assert_eq!(rec.args[i + 1], d.model.path);
    let i = rec.args.iter().position(|a| a == "--served-model-name").expect("--served-model-name passed");
    assert_eq!(rec.args[i + 1], *d.model.served_name.as_ref().unwrap());
    let i = rec.args.iter().position(|a| a == "--chat-template").expect("--chat-template passed");
    assert_eq!(rec.args[i + 1], *d.model.chat_template.as_ref().unwrap());
    assert!(rec.args.iter().any(|a| a.is_empty()), "empty strings survive as empty arguments");
    assert!(rec.args.iter().any(|a| a == "модель ü 模型 🚀"), "unicode survives");
    assert_eq!(rec.env.get("PDL_SHARED_0").map(String::as_str), Some("with spaces"));
    assert_eq!(rec.env.get("PDL_COMBINED"), Some(&nasty_one(&mark, "env")));
    let empty_idx = NASTY.iter().position(|s| s.is_empty()).unwrap();
    assert_eq!(
        rec.env.get(&format!("PDL_SHARED_{empty_idx}")).map(String::as_str),
        Some(""),
        "empty env value is set, empty"
    );
    assert_no_marker(&sb, &mark);
}

/// The same deployment written as YAML and rendered by the CLI (`--allow-errors`: the validator
/// may object to the nonsense flags; rendering must still be exact).
#[test]
fn hostile_deployment_cli_render_via_yaml_reaches_argv_intact() {
    let sb = Sandbox::new();
    let mark = sb.marker("pwned");
    let d = hostile(&mark);
    let yaml = serde_yaml::to_string(&d).expect("deployment serializes");
    let file = sb.path().join("hostile.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let reparsed = parse_deployment(&yaml, "hostile.yaml", Syntax::Yaml).expect("the YAML parses back");
    assert_eq!(reparsed, d, "YAML round trip changes the deployment");

    let out_dir = sb.path().join("out");
    let out = run_cli(&["render", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap(), "--allow-errors"]);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "render --allow-errors exited {code:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    assert_scripts_match_plan(&sb, &out_dir, &plan(&d), "hostile via CLI");
    assert_no_marker(&sb, &mark);

    // JSON input too (the same document as JSON).
    let json_file = sb.path().join("hostile.json");
    std::fs::write(&json_file, serde_json::to_string_pretty(&d).unwrap()).unwrap();
    let out_dir2 = sb.path().join("out-json");
    let out = run_cli(&["render", json_file.to_str().unwrap(), "-o", out_dir2.to_str().unwrap(), "--allow-errors"]);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", String::from_utf8_lossy(&out.stderr));
    for name in dir_names(&out_dir) {
        assert_eq!(
            std::fs::read(out_dir.join(&name)).unwrap(),
            std::fs::read(out_dir2.join(&name)).unwrap(),
            "{name}: rendering from YAML and from JSON differ"
        );
    }
}

/// Hostile host names: they appear in `--host`, in the router's URLs and in a script comment.
#[test]
fn hostile_host_reaches_argv_intact_and_comment_stays_a_comment() {
    let sb = Sandbox::new();
    let mark = sb.marker("pwned");
    let mut d = example("llama-1p1d").unwrap();
    d.prefill.instances[0].nodes[0].host =
        format!("evil host\ntouch {m}\n$(touch {m}) `touch {m}` 'q' \"dq\"", m = mark.display());
    d.decode.instances[0].nodes[0].host = "décodé\r\n; touch pwned-relative".into();
    let plan = plan(&d);
    let dir = sb.path().join("out");
    write_files(&dir, &render_shell(&plan));
    assert_scripts_match_plan(&sb, &dir, &plan, "hostile host");
    assert_no_marker(&sb, &mark);
    let rec = sb.run(&dir.join("router.sh"));
    let i = rec.args.iter().position(|a| a == "--prefill").unwrap();
    assert_eq!(rec.args[i + 1], format!("http://{}:30000", d.prefill.instances[0].nodes[0].host));
}

/// `launcher.python` with spaces and quotes: the interpreter path itself is quoted.
#[test]
fn interpreter_path_with_spaces_and_quotes() {
    let sb = Sandbox::new();
    let odd_dir = sb.path().join("py dir 'q' \"dq\" $(touch pwned-relative)");
    std::fs::create_dir_all(&odd_dir).unwrap();
    let py = odd_dir.join("my python");
    write_executable(&py, STUB);
    let mut d = example("qwen3-2p1d-nixl").unwrap();
    d.launcher.python = py.to_str().unwrap().to_owned();
    let plan = plan(&d);
    let dir = sb.path().join("out");
    write_files(&dir, &render_shell(&plan));
    for p in &plan.servers {
        // No stub on PATH: only the quoted absolute path can reach the recorder.
        let rec = sb.run_with_path(&dir.join(script_name(p)), "/usr/local/bin:/usr/bin:/bin");
        assert_eq!(rec.argv0, d.launcher.python, "{}: interpreter path", p.label());
        assert_eq!(rec.args, plan.server_argv(p)[1..].to_vec(), "{}", p.label());
        assert_env(&p.label(), &p.env, &rec.env);
    }
    let rec = sb.run_with_path(&dir.join("router.sh"), "/usr/local/bin:/usr/bin:/bin");
    assert_eq!(rec.argv0, d.launcher.python);
    assert_eq!(rec.args, plan.router_argv()[1..].to_vec());
    assert!(!sb.work().join("pwned-relative").exists());
}

/// The `sglang-config` format for the hostile deployment: scripts pass `--config PATH` as two
/// tokens followed by the per-process and extra arguments; the YAML holds the role-wide values,
/// which parse back to exactly the tokens the flat command line would have had.
#[test]
fn hostile_deployment_sglang_config_scripts_and_yaml() {
    let sb = Sandbox::new();
    let mark = sb.marker("pwned");
    let d = hostile(&mark);
    let plan = plan(&d);
    let files = render_config(&plan);
    let dir = sb.path().join("out");
    write_files(&dir, &files);
    for p in &plan.servers {
        let rec = sb.run(&dir.join(script_name(p)));
        let config = format!("./{}-{}.yaml", plan.name, p.role);
        let mut expected = vec!["-m".to_owned(), SERVER_MODULE.to_owned(), "--config".to_owned(), config.clone()];
        expected.extend(
            p.args
                .iter()
                .filter(|a| !(a.scope == Scope::Role && a.flag.is_some()))
                .flat_map(|a| a.tokens.iter().cloned()),
        );
        assert_eq!(rec.args, expected, "{}: sglang-config argv", p.label());
        assert!(
            !rec.args.iter().any(|a| a.starts_with("--config=")),
            "{}: --config= form is ignored by SGLang",
            p.label()
        );
        assert_env(&p.label(), &p.env, &rec.env);

        // The YAML: role-wide args, keys without `--`, values exactly the tokens.
        let text = std::fs::read_to_string(dir.join(&config[2..])).unwrap();
        let map: BTreeMap<String, serde_yaml::Value> = serde_yaml::from_str(&text).expect("config YAML parses");
        let wide: Vec<_> = p.args.iter().filter(|a| a.scope == Scope::Role && a.flag.is_some()).collect();
        assert_eq!(map.len(), wide.len(), "{}: one key per role-wide flag", p.label());
        for a in wide {
            let key = a.tokens[0].trim_start_matches("--");
            let v = map.get(key).unwrap_or_else(|| panic!("{}: key {key} missing from the config", p.label()));
            match (&a.tokens[1..], v) {
                ([], serde_yaml::Value::Bool(true)) => {}
                ([one], serde_yaml::Value::String(s)) => assert_eq!(s, one, "{}: {key}", p.label()),
                ([one], serde_yaml::Value::Number(n)) => {
                    assert_eq!(one.parse::<f64>().ok(), n.as_f64(), "{}: {key}", p.label())
                }
                (many, serde_yaml::Value::Sequence(seq)) => {
                    let seq: Vec<_> = seq.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect();
                    assert_eq!(seq, many.to_vec(), "{}: {key}", p.label());
                }
                (toks, v) => panic!("{}: {key}: tokens {toks:?} rendered as {v:?}", p.label()),
            }
        }
        assert_eq!(map.get("model-path").and_then(|v| v.as_str()), Some(d.model.path.as_str()));
        assert_eq!(map.get("served-model-name").and_then(|v| v.as_str()), d.model.served_name.as_deref());
        assert_eq!(map.get("chat-template").and_then(|v| v.as_str()), d.model.chat_template.as_deref());
    }
    let rec = sb.run(&dir.join("router.sh"));
    assert_eq!(rec.args, plan.router_argv()[1..].to_vec(), "router argv in sglang-config format");
    assert_no_marker(&sb, &mark);
}

// ---------------------------------------------------------------------------------------------
// Known bugs, documented as tests (run with `--ignored`).

/// Environment variable names are not validated: `A=B` renders `export A=B=v`, which silently
/// sets `A` to `B=v`, and `BAD KEY` renders `export 'BAD KEY'=x`, which makes the script fail
/// under `set -e` on the node. Expected: the load (exit 2) or the validator rejects names that
/// are not shell identifiers.
#[test]

fn invalid_env_names_are_rejected_before_rendering() {
    let sb = Sandbox::new();
    for key in ["A=B", "BAD KEY", "1ABC", "A-B", ""] {
        let mut d = example("llama-1p1d").unwrap();
        d.shared.env.insert(key.into(), "v".into());
        let file = sb.path().join("envkey.yaml");
        std::fs::write(&file, serde_yaml::to_string(&d).unwrap()).unwrap();
        let out = run_cli(&["check", file.to_str().unwrap()]);
        assert_ne!(out.status.code(), Some(0), "env name {key:?} accepted by check; it renders `export {key}=v`");
    }
}

/// A NUL character cannot be passed in argv; the renderer writes it into the script, where bash
/// drops it, so the argument silently changes. Expected: rejected at load or by the validator.
#[test]

fn nul_in_values_is_rejected() {
    let sb = Sandbox::new();
    let mut d = example("llama-1p1d").unwrap();
    d.decode.extra_args = vec!["--watchdog-timeout".into(), "6\u{0}00".into()];
    let file = sb.path().join("nul.yaml");
    std::fs::write(&file, serde_yaml::to_string(&d).unwrap()).unwrap();
    let out = run_cli(&["check", file.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0), "a NUL in extra_args is accepted");
}
