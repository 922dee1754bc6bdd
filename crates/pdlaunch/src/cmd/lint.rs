//! `pdlaunch lint`: read launch scripts, manifests, SLURM jobs or pasted command lines, and report
//! drift between prefill, decode and router with the rule registry, pointing at both places.

use std::io::Read;
use std::path::{Path, PathBuf};

use pdlaunch_core::deployment::Gpu;
use pdlaunch_core::lint::{self, Input, LintFinding, Linted, Options, Place};
use pdlaunch_core::release::{Release, RouterRelease};
use pdlaunch_core::rules::{Severity, RULES};

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// Files to lint (shell scripts, SLURM jobs, Kubernetes or compose YAML), or `-` for stdin.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json", "sarif"])]
    pub format: String,
    /// Print the corrections as a unified diff instead of the findings.
    #[arg(long)]
    pub fix: bool,
    /// Apply the corrections to the files (atomically, keeping a `.bak` copy of each).
    #[arg(long)]
    pub write: bool,
    /// Write the deployment the commands amount to into this file (never overwritten).
    #[arg(long, value_name = "FILE")]
    pub to_deployment: Option<PathBuf>,
    /// SGLang release the commands target (default: named by a container image, or the newest known
    /// release before the image's version, else the newest).
    #[arg(long, value_name = "VERSION")]
    pub sglang_version: Option<String>,
    /// sglang-router release the router command targets.
    #[arg(long, value_name = "VERSION")]
    pub router_version: Option<String>,
    /// GPU model of every server (e.g. h200, b200), when the files do not say.
    #[arg(long)]
    pub gpu: Option<String>,
    /// GPU model of the prefill servers.
    #[arg(long)]
    pub prefill_gpu: Option<String>,
    /// GPU model of the decode servers.
    #[arg(long)]
    pub decode_gpu: Option<String>,
    /// A built-in model (`pdlaunch model --list`) when the model path is not recognised.
    #[arg(long, value_name = "PRESET")]
    pub model: Option<String>,
    /// Treat warnings as errors (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
}

fn gpu(s: &Option<String>) -> super::Result<Option<Gpu>> {
    s.as_deref()
        .map(|g| {
            serde_json::from_value::<Gpu>(serde_json::Value::String(g.to_ascii_lowercase()))
                .map_err(|_| format!("unknown GPU `{g}` (e.g. h100, h200, b200, gb200, mi300x)").into())
        })
        .transpose()
}

/// The inputs, and the real path of each (`None` for stdin).
fn read_inputs(files: &[String]) -> super::Result<(Vec<Input>, Vec<Option<PathBuf>>)> {
    let mut inputs = Vec::new();
    let mut paths = Vec::new();
    for f in files {
        if f == "-" {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read stdin: {e}"))?;
            inputs.push(Input::new("<stdin>", s));
            paths.push(None);
        } else {
            let bytes = std::fs::read(f).map_err(|e| format!("cannot read {f}: {e}"))?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{f}: not UTF-8 text"))?;
            inputs.push(Input::new(f.clone(), text));
            paths.push(Some(PathBuf::from(f)));
        }
    }
    // `--config FILE` of the servers: read next to the file that names it, else from here.
    for (from, path) in lint::config_paths(&inputs) {
        if inputs.iter().any(|i| i.name == path) {
            continue;
        }
        let base = paths[from].as_deref().and_then(Path::parent).unwrap_or(Path::new(""));
        let candidates = [base.join(&path), PathBuf::from(&path)];
        if let Some(p) = candidates.iter().find(|p| p.is_file()) {
            let text = std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            inputs.push(Input::config(path.clone(), text));
            paths.push(Some(p.clone()));
        }
    }
    Ok((inputs, paths))
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    let opts = Options {
        release: args.sglang_version.as_deref().map(str::parse::<Release>).transpose()?,
        router_release: args
            .router_version
            .as_deref()
            .map(|v| {
                RouterRelease::ALL
                    .into_iter()
                    .find(|r| r.as_str() == v.trim_start_matches('v'))
                    .ok_or_else(|| format!("unknown sglang-router release `{v}`"))
            })
            .transpose()?,
        gpu: gpu(&args.gpu)?,
        prefill_gpu: gpu(&args.prefill_gpu)?,
        decode_gpu: gpu(&args.decode_gpu)?,
        model_preset: args.model.clone(),
    };
    if let Some(m) = &args.model {
        if pdlaunch_core::model::preset(m).is_none() {
            return Err(format!(
                "unknown model preset `{m}`; known: {}",
                pdlaunch_core::model::PRESET_NAMES.join(", ")
            )
            .into());
        }
    }
    let (inputs, paths) = read_inputs(&args.files)?;
    let linted = lint::lint(&inputs, &opts);
    for u in &linted.unread {
        eprintln!("{}: {}:{}:{}: {}", style.error("error"), u.file, u.line, u.column, u.message);
    }
    if linted.launches.is_empty() {
        eprintln!(
            "{}: no SGLang launch (`python -m sglang.launch_server`, `sglang serve`, `python -m dynamo.sglang`, `python -m sglang_router.launch_router`...) found in {}",
            style.error("error"),
            args.files.join(", ")
        );
        print_seen(&linted);
        return Ok(crate::EXIT_BAD_INPUT);
    }
    if args.fix || args.write {
        let fixed = lint::edit::fix_all(&inputs, &opts);
        if fixed.is_empty() {
            eprintln!("nothing to fix automatically");
        }
        for f in &fixed {
            let diff = similar::TextDiff::from_lines(&f.before, &f.after);
            print!(
                "{}",
                diff.unified_diff().context_radius(3).header(&format!("a/{}", f.name), &format!("b/{}", f.name))
            );
            for why in &f.fixes {
                eprintln!("{} {}: {why}", style.ok("fixed"), f.name);
            }
        }
        if args.write {
            for f in &fixed {
                let k = inputs.iter().position(|i| i.name == f.name).expect("fixed files are inputs");
                let Some(path) = &paths[k] else {
                    return Err("cannot --write standard input; redirect the --fix diff instead".into());
                };
                write_with_backup(path, &f.after)?;
                eprintln!("{} {}", style.ok("wrote"), path.display());
            }
        }
    } else {
        match args.format.as_str() {
            "json" => println!("{}", json(&linted)?),
            "sarif" => println!("{}", sarif(&linted)?),
            _ => print!("{}", human(&linted, style)),
        }
    }
    if let Some(out) = &args.to_deployment {
        write_deployment(&linted, out, style)?;
    }
    let failed = !linted.unread.is_empty();
    if failed {
        return Ok(crate::EXIT_BAD_INPUT);
    }
    let bad = !linted.is_clean() || (args.deny_warnings && linted.count(Severity::Warning) > 0);
    Ok(if bad { crate::EXIT_FINDINGS } else { 0 })
}

/// The most commands listed when no launch is found.
const SEEN_SHOWN: usize = 5;

/// Says which commands were read when none starts SGLang, and why each does not.
fn print_seen(linted: &Linted) {
    if linted.seen.is_empty() {
        eprintln!("  no command that starts a program like one (an interpreter, a launcher, a container) was read");
        return;
    }
    eprintln!("  commands read:");
    for s in linted.seen.iter().take(SEEN_SHOWN) {
        let file = &linted.files[s.file];
        let (line, column) = file.position(s.at);
        eprintln!("  {}:{line}:{column}: `{}`: {}", file.name, s.command, s.why);
    }
    if linted.seen.len() > SEEN_SHOWN {
        eprintln!("  ... and {} more", linted.seen.len() - SEEN_SHOWN);
    }
}

/// Writes `text` to `path` atomically, after copying the original to the first free `.bak` name.
fn write_with_backup(path: &Path, text: &str) -> super::Result<()> {
    let name = path.file_name().ok_or("not a file")?.to_string_lossy().into_owned();
    let backup = (0..1000)
        .map(|i| path.with_file_name(if i == 0 { format!("{name}.bak") } else { format!("{name}.bak.{i}") }))
        .find(|p| !p.exists())
        .ok_or("no free backup name")?;
    std::fs::copy(path, &backup).map_err(|e| format!("cannot back up {}: {e}", path.display()))?;
    let tmp = path.with_file_name(format!(".{name}.pdlaunch-tmp"));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
    Ok(())
}

fn write_deployment(linted: &Linted, out: &Path, style: &Style) -> super::Result<()> {
    let mut built = Vec::new();
    let mut why = Vec::new();
    for g in 0..linted.groups.len() {
        match lint::reconstruct::deployment(linted, g) {
            Ok(r) => built.push(r),
            Err(e) => why.push(e),
        }
    }
    let Some(first) = built.first() else {
        return Err(format!("no complete deployment to write: {}", why.join("; ")).into());
    };
    if built.len() > 1 {
        eprintln!("{}: {} deployments found; writing the first", style.warning("warning"), built.len());
    }
    let mut text = String::from("# yaml-language-server: $schema=https://raw.githubusercontent.com/pdlaunch/pdlaunch/main/schema/deployment.schema.json\n");
    text.push_str("# Reconstructed by `pdlaunch lint --to-deployment` from:");
    for f in linted.files.iter() {
        text.push_str(&format!(" {}", f.name));
    }
    text.push('\n');
    for n in &first.notes {
        text.push_str(&format!("# note: {}\n", n.replace('\n', " ")));
    }
    text.push_str(
        &pdlaunch_core::yaml_value::to_string(&first.deployment).map_err(|e| format!("cannot serialize: {e}"))?,
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|e| format!("cannot create {} (it is never overwritten): {e}", out.display()))?;
    use std::io::Write;
    file.write_all(text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    eprintln!("{} {}", style.ok("wrote"), out.display());
    Ok(())
}

/// A source line with a caret line under `place`.
fn snippet(linted: &Linted, p: &Place, style: &Style) -> String {
    let Some(file) = linted.files.iter().find(|f| f.name == p.file) else { return String::new() };
    let Some(text) = file.line_text(p.line) else { return String::new() };
    let width = p.line.to_string().len();
    let start = p.column.saturating_sub(1) as usize;
    let len = if p.end_line == p.line {
        (p.end_column.saturating_sub(p.column) as usize).max(1)
    } else {
        text.chars().count().saturating_sub(start).max(1)
    };
    let pad: String = text.chars().take(start).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
    format!(
        "{} {}\n{} {} {}\n{} {} {pad}{}\n",
        " ".repeat(width),
        style.dim("|"),
        style.dim(&p.line.to_string()),
        style.dim("|"),
        text,
        " ".repeat(width),
        style.dim("|"),
        style.warning(&"^".repeat(len))
    )
}

fn finding_text(linted: &Linted, f: &LintFinding, style: &Style) -> String {
    let x = &f.finding;
    let sev = match x.severity {
        Severity::Error => style.error(&format!("error[{}]", x.code)),
        Severity::Warning => style.warning(&format!("warning[{}]", x.code)),
        Severity::Note => style.note(&format!("note[{}]", x.code)),
    };
    let mut s = format!("{sev} {}: {}\n", style.bold(x.rule), x.message);
    for p in &f.places {
        let flag = p.flag.as_deref().map(|f| format!(" `{f}`")).unwrap_or_default();
        let what = if p.missing {
            format!("{}{flag} not set here, so SGLang's default applies", p.process)
        } else {
            format!("{}{flag}", p.process)
        };
        s.push_str(&format!("  {} {}:{}:{} {what}\n", style.dim("-->"), p.file, p.line, p.column));
        s.push_str(&snippet(linted, p, style));
    }
    if let Some(e) = x.sglang_error {
        s.push_str(&format!("  {} SGLang: {e}\n", style.dim("=")));
    }
    s.push_str(&format!("  {} fix: {}\n", style.dim("="), x.fix));
    let auto = lint::edit::describe(linted, f);
    if !auto.is_empty() {
        s.push_str(&format!("  {} `--fix` would: {}\n", style.dim("="), auto.join("; ")));
    }
    s
}

fn human(linted: &Linted, style: &Style) -> String {
    let mut s = String::new();
    for f in &linted.findings {
        s.push_str(&finding_text(linted, f, style));
        s.push('\n');
    }
    let (e, w, n) = (linted.count(Severity::Error), linted.count(Severity::Warning), linted.count(Severity::Note));
    let summary = format!(
        "{} file(s), {} launch(es) in {} deployment(s): {e} error(s), {w} warning(s), {n} note(s)",
        linted.files.len(),
        linted.launches.len(),
        linted.groups.len()
    );
    s.push_str(&style.summary(&summary, e, w));
    s.push('\n');
    s
}

fn json(linted: &Linted) -> Result<String, serde_json::Error> {
    let groups: Vec<serde_json::Value> = linted
        .groups
        .iter()
        .map(|g| {
            serde_json::json!({
                "name": g.name,
                "sglang_version": g.release,
                "servers": g.servers.iter().map(|s| s.view.label.clone()).collect::<Vec<_>>(),
                "router": g.router.as_ref().map(|r| {
                    let l = &linted.launches[r.launch];
                    let (line, _) = linted.files[l.file].position(l.at);
                    format!("{}:{line}", linted.files[l.file].name)
                }),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "files": linted.files.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
        "launches": linted.launches.len(),
        "deployments": groups,
        "clean": linted.is_clean(),
        "errors": linted.count(Severity::Error),
        "warnings": linted.count(Severity::Warning),
        "notes": linted.count(Severity::Note),
        "findings": linted.findings,
        "unreadable": linted.unread,
    }))
}

/// SARIF 2.1.0, for code scanning in CI systems.
fn sarif(linted: &Linted) -> Result<String, serde_json::Error> {
    let level = |s: Severity| match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let location = |p: &Place, id: Option<usize>| {
        let mut v = serde_json::json!({
            "physicalLocation": {
                "artifactLocation": {"uri": p.file},
                "region": {"startLine": p.line, "startColumn": p.column, "endLine": p.end_line, "endColumn": p.end_column},
            },
            "message": {"text": match (&p.flag, p.missing) {
                (Some(f), true) => format!("{}: `{f}` not set here", p.process),
                (Some(f), false) => format!("{}: `{f}`", p.process),
                (None, _) => p.process.clone(),
            }},
        });
        if let Some(id) = id {
            v["id"] = serde_json::Value::from(id);
        }
        v
    };
    let results: Vec<serde_json::Value> = linted
        .findings
        .iter()
        .map(|f| {
            let x = &f.finding;
            let mut r = serde_json::json!({
                "ruleId": x.code,
                "ruleIndex": RULES.iter().position(|r| r.code == x.code),
                "level": level(x.severity),
                "message": {"text": format!("{} Fix: {}", x.message, x.fix)},
                "locations": f.places.first().map(|p| vec![location(p, None)]).unwrap_or_default(),
            });
            if f.places.len() > 1 {
                r["relatedLocations"] = serde_json::Value::Array(
                    f.places.iter().enumerate().skip(1).map(|(i, p)| location(p, Some(i))).collect(),
                );
            }
            r
        })
        .collect();
    serde_json::to_string_pretty(&sarif_log(results))
}

/// A SARIF 2.1.0 log of `results`, with every rule in the driver (`lint` and `probe` share it).
pub fn sarif_log(results: Vec<serde_json::Value>) -> serde_json::Value {
    let rules: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.explanation},
                "help": {"text": r.fix},
                "defaultConfiguration": {"level": r.severity.as_str()},
            })
        })
        .collect();
    serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "pdlaunch",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/pdlaunch/pdlaunch",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}
