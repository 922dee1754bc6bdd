//! `pdlaunch rules`: list the validation rules, and apart from them the environment causes that
//! `explain` knows (no check finds those before launch).

use pdlaunch_core::causes::CAUSES;
use pdlaunch_core::rules::RULES;

use crate::style::Style;

#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

pub fn run(args: Args, style: &Style) -> super::Result<u8> {
    if args.format == "json" {
        // The rules only: an environment cause is no check (`pdlaunch explain ENV001 --format json`
        // gives one).
        let v: Vec<_> = RULES
            .iter()
            .map(|r| {
                serde_json::json!({"code": r.code, "rule": r.name, "severity": r.severity, "summary": r.summary,
                    "cause": r.explanation, "fix": r.fix, "sglang_errors": r.sglang_errors, "lint_only": r.lint_only(), "probe_only": r.probe_only()})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for r in RULES {
            // Rules only written commands can break are reported by `lint` alone.
            let lint = if r.probe_only() {
                " (probe only)"
            } else if r.lint_only() {
                " (lint only)"
            } else {
                ""
            };
            println!("{} {:<8} {:<36} {}{lint}", style.bold(r.code), r.severity.as_str(), r.name, r.summary);
        }
        println!("\nEnvironment causes (`pdlaunch explain` names them; no check prevents them):");
        for c in CAUSES {
            println!("{} {:<36} {}", style.bold(c.code), c.name, c.summary);
        }
    }
    Ok(0)
}
