//! `pdlaunch explain`: from an SGLang error message (or a rule code) to cause and fix. A log
//! excerpt of several lines (a traceback between the messages) gets each known message explained
//! once, in the order they appear.

use std::io::Read;

use pdlaunch_core::explain::{answer, Answer};

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// The SGLang error text (quote it), a log excerpt, a rule code such as PD001, or `-` to read
    /// stdin.
    pub text: String,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    let text = if args.text == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        args.text
    };
    let hits = answer(&text);
    if args.format == "json" {
        let v: Vec<_> = hits
            .iter()
            .map(|Answer { rule: r, matched: m, score: s, line: at }| {
                let mut v = serde_json::json!({
                    "code": r.code, "rule": r.name, "severity": r.severity, "score": s,
                    "summary": r.summary, "cause": r.explanation, "fix": r.fix,
                    "matched_sglang_text": m, "sglang_errors": r.sglang_errors, "lint_only": r.lint_only(),
                });
                if let Some((line, text)) = at {
                    v["line"] = serde_json::json!(line);
                    v["text"] = serde_json::json!(text);
                }
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if hits.is_empty() {
        println!("No rule matches this text. `pdlaunch rules` lists what pdlaunch checks.");
    } else {
        let mut last_line = None;
        for (i, Answer { rule: r, matched: m, line: at, .. }) in hits.iter().enumerate() {
            match at {
                Some((line, text)) if last_line != Some(*line) => {
                    if i > 0 {
                        println!();
                    }
                    println!("{} {text}", style.dim(&format!("line {line}:")));
                    last_line = Some(*line);
                }
                _ if i > 0 => println!("\nAlso possible:"),
                _ => {}
            }
            println!("{} {}: {}", style.bold(r.code), style.bold(r.name), r.summary);
            if let Some(m) = m {
                println!("  {} SGLang raises: {m}", style.dim("="));
            }
            println!("  {} cause: {}", style.dim("="), r.explanation);
            println!("  {} fix: {}", style.dim("="), r.fix);
            let reported = if r.probe_only() {
                "`pdlaunch probe` reports it about running servers"
            } else if r.lint_only() {
                "`pdlaunch lint` reports it in launch scripts and manifests"
            } else {
                "`pdlaunch check` reports it before launch, and `pdlaunch lint` in existing scripts,"
            };
            println!("  {} {reported} as {}.", style.dim("="), r.code);
        }
    }
    Ok(if hits.is_empty() { crate::EXIT_FINDINGS } else { 0 })
}
