//! `pdlaunch explain`: from an SGLang error message (or a rule or environment-cause code) to cause
//! and fix. A log excerpt of several lines (a traceback between the messages) gets each known
//! message explained once, in the order they appear.

use std::io::Read;

use pdlaunch_core::explain::{answer, Answer, Known};

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// The SGLang error text (quote it), a log excerpt, a rule code such as PD001, an environment
    /// cause such as ENV003, or `-` to read stdin.
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
            .map(|Answer { known: k, matched: m, score: s, line: at }| {
                let mut v = serde_json::json!({
                    "code": k.code(), "kind": if k.rule().is_some() { "rule" } else { "environment" },
                    "rule": k.name(), "score": s, "summary": k.summary(), "cause": k.explanation(), "fix": k.fix(),
                    "matched_sglang_text": m, "sglang_errors": k.sglang_errors(),
                });
                match k {
                    Known::Rule(r) => {
                        v["severity"] = serde_json::json!(r.severity);
                        v["lint_only"] = serde_json::json!(r.lint_only());
                    }
                    Known::Cause(c) => v["command"] = serde_json::json!(c.command),
                }
                if let Some((line, text)) = at {
                    v["line"] = serde_json::json!(line);
                    v["text"] = serde_json::json!(text);
                }
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if hits.is_empty() {
        println!("No rule matches this text. `pdlaunch rules` lists what pdlaunch checks and the environment causes it knows.");
    } else {
        let mut last_line = None;
        for (i, Answer { known: k, matched: m, line: at, .. }) in hits.iter().enumerate() {
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
            println!("{} {}: {}", style.bold(k.code()), style.bold(k.name()), k.summary());
            if let Some(m) = m {
                println!("  {} SGLang raises: {m}", style.dim("="));
            }
            println!("  {} cause: {}", style.dim("="), k.explanation());
            println!("  {} fix: {}", style.dim("="), k.fix());
            match k {
                Known::Rule(r) => {
                    let reported = if r.probe_only() {
                        "`pdlaunch probe` reports it about running servers"
                    } else if r.lint_only() {
                        "`pdlaunch lint` reports it in launch scripts and manifests"
                    } else {
                        "`pdlaunch check` reports it before launch, and `pdlaunch lint` in existing scripts,"
                    };
                    println!("  {} {reported} as {}.", style.dim("="), r.code);
                }
                Known::Cause(c) => {
                    println!("  {} an environment cause: no command line prevents it.", style.dim("="));
                    if let Some(cmd) = c.command {
                        println!("  {} to tell it apart, run: {cmd}", style.dim("="));
                    }
                }
            }
        }
    }
    Ok(if hits.is_empty() { crate::EXIT_FINDINGS } else { 0 })
}
