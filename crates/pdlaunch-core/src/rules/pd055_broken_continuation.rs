//! PD055: a line continuation breaks, and the arguments after it never reach the process.

use super::material::{Break, BreakKind, Material};
use super::{Check, Finding, Rule, Severity};

/// Written commands go on over lines with `\` at each line's end. A blank after the `\` (it then
/// escapes the blank), a comment (`--tp 8 \  # eight GPUs`), a comment or blank line among the
/// continued lines, or a line that lacks its `\` ends the command there: bash starts the server
/// without the rest and runs the next line as a command of its own, whose first word is a flag.
pub static RULE: Rule = Rule {
    code: "PD055",
    name: "broken-continuation",
    severity: Severity::Error,
    summary: "a line continuation breaks: the arguments after it never reach the process",
    explanation: "bash joins a line to the next only when the line ends in `\\` right before the line break. \
        A blank after the `\\` makes it escape the blank, a comment holds any `\\` after it, and a comment or blank \
        line among the continued lines ends the command. bash then starts the server with the arguments before \
        the break (it runs with its defaults for the rest, and differs from the other side in ways the command \
        does not show) and runs the next line as a command of its own, which fails at once with `--flag: command \
        not found`; that line often holds the `&` and the log redirect, so the server also runs in the foreground \
        and logs to the terminal.",
    sglang_errors: &["command not found"],
    fix: "End each continued line with `\\` and nothing after it; put comments on lines of their own above the \
        command, and leave no blank line inside it.",
    check: Check::Material(check),
};

/// Each break of each server's and the router's command.
fn check(m: &Material, found: &mut Vec<Finding>) {
    let servers = m.servers.iter().map(|s| (s.view.label.as_str(), s.breaks));
    for (label, breaks) in servers.chain(m.router.iter().map(|r| ("router", r.breaks))) {
        for b in breaks {
            found.push(finding(m, label, b));
        }
    }
}

/// The finding for break `b` of the command of `label`.
fn finding(m: &Material, label: &str, b: &Break) -> Finding {
    let file = &m.files[b.file];
    let (line, column) = file.position(b.at);
    let place = format!("{}:{line}:{column}", file.name);
    if b.kind == BreakKind::EndOfText {
        let message = format!("{label}: the command ends the text with a line continuation ({place}): {}", b.kind.describe());
        let mut f = Finding::new(&RULE, message, "delete the `\\` at the end of the command's last line")
            .at_origin(label, None, m.origin_at(b.file, b.at));
        f.severity = Severity::Warning;
        f.sglang_error = None;
        return f;
    }
    let lost: Vec<&str> = b.lost.iter().map(|w| w.text.as_str()).collect();
    let first = lost.first().copied().unwrap_or_default();
    let message = format!(
        "{label}: the line continuation breaks at {place}: {}. bash ends the command there, starts it without \
         `{}`, and runs that line as a command of its own (`{first}: command not found`)",
        b.kind.describe(),
        lost.join(" "),
    );
    let fix = match b.kind {
        BreakKind::CommentAfterBackslash | BreakKind::CommentEndsLine | BreakKind::CommentLine => {
            "join the lines: end the line with ` \\` and nothing after it, and move the comment to a line of its own \
             above the command"
        }
        BreakKind::BlankLine => "join the lines: delete the blank line inside the command",
        BreakKind::NoBackslash => "join the lines: end the line with ` \\`",
        _ => "join the lines: delete the blanks after the `\\`",
    };
    let mut f = Finding::new(&RULE, message, fix).at_origin(label, None, m.origin_at(b.file, b.at));
    if let Some(w) = b.lost.first() {
        f = f.at_origin(label, Some(first), m.origin(w));
    }
    f
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::linted;

    const PREFILL: &str = "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --port 30000";
    const DECODE: &str = "python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --port 30001";

    #[test]
    fn a_comment_after_the_backslash_loses_the_rest() {
        let text = format!("{PREFILL} \\   # fp8 below\n  --page-size 64 > p.log 2>&1 &\n{DECODE} --page-size 64 &\n");
        let found = linted(&[("run.sh", &text)], "PD055");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("breaks at run.sh:1:"), "{}", found[0]);
        assert!(found[0].contains("without `--page-size 64`"), "{}", found[0]);
        assert!(found[0].contains("`--page-size: command not found`"), "{}", found[0]);
    }

    #[test]
    fn proper_continuations_and_separate_commands_pass() {
        let text = format!("{PREFILL} \\\n  --page-size 64 &\n# decode\n\n{DECODE} \\\n  --page-size 64\necho done\n");
        assert!(linted(&[("run.sh", &text)], "PD055").is_empty());
    }
}
