//! `pdlaunch check`: validate a deployment.

use pdlaunch_core::load::locate;
use pdlaunch_core::plan::Origin;
use pdlaunch_core::rules::{check, Finding, Report, Severity};

use crate::input::{load, Loaded};
use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// Deployment file (YAML or JSON), or `-` for stdin.
    pub file: String,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
    /// Treat warnings as errors (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
    /// A Hugging Face `config.json` whose geometry replaces `model.geometry` (and `model.preset`).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<std::path::PathBuf>,
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    let mut loaded = load(&args.file)?;
    super::model::apply_model_config(&mut loaded.deployment, args.model_config.as_deref())?;
    let report = check(&loaded.deployment);
    if args.format == "json" {
        println!("{}", report_json(&report, &loaded)?);
    } else {
        print!("{}", human(&report, &loaded, style));
    }
    let failed = !report.is_clean() || (args.deny_warnings && report.count(Severity::Warning) > 0);
    Ok(if failed { crate::EXIT_FINDINGS } else { 0 })
}

/// `file:line:col` of a field origin, when it can be found in the text.
pub fn place(loaded: &Loaded, origin: &Origin) -> Option<String> {
    match origin {
        Origin::Field { path } => {
            // `decode.env.NAME` and similar: fall back to the longest path that exists.
            let mut p = path.as_str();
            loop {
                if let Some((l, c)) = locate(&loaded.text, p) {
                    return Some(format!("{}:{l}:{c}", loaded.file));
                }
                // Drop the last segment: an index (`[3]`) or a key (`.name`).
                p = match p.strip_suffix(']').and_then(|q| q.rfind('[')) {
                    Some(i) => &p[..i],
                    None => p.rsplit_once('.').map(|(head, _)| head)?,
                };
            }
        }
        Origin::Source { file, line, column } => Some(format!("{file}:{line}:{column}")),
        Origin::Derived | Origin::Default => None,
    }
}

/// The human report: one block per finding, then a summary line.
pub fn human(report: &Report, loaded: &Loaded, style: &Style) -> String {
    let mut s = String::new();
    for f in &report.findings {
        s.push_str(&finding_text(f, Some(loaded), style));
        s.push('\n');
    }
    let (e, w, n) = (report.count(Severity::Error), report.count(Severity::Warning), report.count(Severity::Note));
    let summary = format!("{}: {e} error(s), {w} warning(s), {n} note(s)", loaded.file);
    s.push_str(&style.summary(&summary, e, w));
    s.push('\n');
    s
}

/// One finding as text.
pub fn finding_text(f: &Finding, loaded: Option<&Loaded>, style: &Style) -> String {
    let sev = match f.severity {
        Severity::Error => style.error(&format!("error[{}]", f.code)),
        Severity::Warning => style.warning(&format!("warning[{}]", f.code)),
        Severity::Note => style.note(&format!("note[{}]", f.code)),
    };
    let mut s = format!("{sev} {}: {}\n", style.bold(f.rule), f.message);
    for l in &f.locations {
        let flag = l.flag.as_deref().map(|f| format!(" `{f}`")).unwrap_or_default();
        let at = match (&l.origin, loaded.and_then(|ld| place(ld, &l.origin))) {
            (Origin::Derived, _) => "derived from the topology".to_owned(),
            (Origin::Default, _) => "not set, so SGLang's default applies".to_owned(),
            (o, Some(p)) => format!("{o} ({p})"),
            (o, None) => o.to_string(),
        };
        s.push_str(&format!("  {} {}{flag}: {at}\n", style.dim("-->"), l.process));
    }
    if let Some(e) = f.sglang_error {
        s.push_str(&format!("  {} SGLang: {e}\n", style.dim("=")));
    }
    s.push_str(&format!("  {} fix: {}\n", style.dim("="), f.fix));
    s
}

/// The JSON report: findings with file positions added.
pub fn report_json(report: &Report, loaded: &Loaded) -> Result<String, serde_json::Error> {
    let findings: Vec<serde_json::Value> = report
        .findings
        .iter()
        .map(|f| {
            let mut v = serde_json::to_value(f).expect("findings serialize");
            if let Some(locs) = v.get_mut("locations").and_then(|l| l.as_array_mut()) {
                for (loc, l) in locs.iter_mut().zip(&f.locations) {
                    if let Some(p) = place(loaded, &l.origin) {
                        loc["position"] = serde_json::Value::String(p);
                    }
                }
            }
            v
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "file": loaded.file,
        "clean": report.is_clean(),
        "errors": report.count(Severity::Error),
        "warnings": report.count(Severity::Warning),
        "notes": report.count(Severity::Note),
        "findings": findings,
    }))
}
