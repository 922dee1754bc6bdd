//! PD042: `--config=FILE` is silently ignored by SGLang.

use super::{Check, Context, Finding, Rule, Severity};

/// SGLang looks for the exact token `--config` in argv before argparse runs; `--config=FILE` is
/// then accepted by argparse as an ordinary option that nothing reads, so none of the file's
/// settings apply and nothing says so.
pub static RULE: Rule = Rule {
    code: "PD042",
    name: "config-equals-form",
    severity: Severity::Error,
    summary: "`--config=FILE` (equals form) is accepted but the file is never read",
    explanation: "SGLang's `prepare_server_args` merges a config file only when the argv holds the separate token \
        `--config` followed by the path. Written `--config=FILE`, the option passes argparse (the `config` \
        field exists) but no code reads it: the server starts with SGLang's defaults for everything the file \
        sets, e.g. page size 1 on one side while the other side's file says 64.",
    sglang_errors: &["no error: `--config=FILE` is silently ignored; the server runs without the file's settings"],
    fix: "Write `--config FILE` with a space, as two tokens.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &ctx.servers {
        for u in s.parsed.uses.iter().filter(|u| u.dest == "config") {
            let Some(tok) = s.tokens.get(u.index).filter(|t| t.contains('=')) else { continue };
            let path = tok.split_once('=').map_or("", |(_, p)| p);
            let origin = s.origins.get(u.index).cloned().unwrap_or(crate::plan::Origin::Derived);
            let message = format!(
                "{}: `{tok}` is ignored by SGLang, which only reads `--config {path}` written as two tokens; none of \
                 `{path}`'s settings apply",
                s.label
            );
            let fix = format!("write `--config {path}` (at `{origin}`)");
            out.push(Finding::new(&RULE, message, fix).at_origin(s.label.clone(), Some("--config"), origin));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn equals_form_in_extra_args() {
        let mut d = llama();
        d.decode.extra_args = vec!["--config=decode.yaml".into()];
        let f = findings(&d, "PD042");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`--config=decode.yaml` is ignored"), "{}", f[0].message);
        assert!(findings(&llama(), "PD042").is_empty());
    }
}
