//! Bash scripts, one per process. Every value is single-quoted unless it is made only of
//! characters the shell never interprets, so any byte string reaches SGLang's argv intact.

use super::{header, RenderedFile};
use crate::plan::{Plan, ServerProcess};

/// Quotes a word for bash so that it is passed through as exactly one argument.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-+=./:,@%".contains(&b))
        && !s.starts_with('=');
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A bash script that exports `env` and execs `argv`.
pub(super) fn render_shell_like(
    plan: &Plan,
    title: &str,
    env: &std::collections::BTreeMap<String, String>,
    argv: &[String],
) -> String {
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(&header(plan));
    s.push_str(&format!("# {title}\nset -euo pipefail\n"));
    for (k, v) in env {
        s.push_str(&format!("export {}={}\n", quote(k), quote(v)));
    }
    s.push_str("exec");
    let mut first = true;
    for (i, a) in argv.iter().enumerate() {
        // Break before each flag so long command lines stay readable.
        if !first && a.starts_with("--") && i > 2 {
            s.push_str(" \\\n   ");
        }
        s.push(' ');
        s.push_str(&quote(a));
        first = false;
    }
    s.push('\n');
    s
}

fn title(p: &ServerProcess) -> String {
    // The loader refuses a node with no GPUs.
    let gpus = if p.gpus.1 <= 1 {
        format!("GPU {}", p.gpus.0)
    } else {
        format!("GPUs {}-{}", p.gpus.0, u64::from(p.gpus.0) + u64::from(p.gpus.1) - 1)
    };
    format!(
        "{} instance {}, node {} of {}, on {} ({gpus})",
        p.role,
        p.instance,
        p.node,
        p.nnodes,
        p.host.replace('\n', " ")
    )
}

/// One script per server process plus `router.sh`.
pub fn render_shell(plan: &Plan) -> Vec<RenderedFile> {
    let mut files: Vec<RenderedFile> = plan
        .servers
        .iter()
        .map(|p| RenderedFile {
            name: format!("{}.sh", p.id()),
            contents: render_shell_like(plan, &title(p), &p.env, &plan.server_argv(p)),
            executable: true,
        })
        .collect();
    files.push(RenderedFile {
        name: "router.sh".into(),
        contents: render_shell_like(plan, "router", &plan.router.env, &plan.router_argv()),
        executable: true,
    });
    files
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote("--page-size"), "--page-size");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote("ünï"), "'ünï'");
    }
}
