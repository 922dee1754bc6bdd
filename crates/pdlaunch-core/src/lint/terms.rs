//! Rules word their messages and fixes for a deployment (`set shared.page_size to 64`). Linted
//! material has command lines instead, so the linter names a field that renders a flag by that
//! flag and the servers it concerns (`set --page-size of every server to 64`), and an `env` map
//! by the environment it sets. Other deployment terms (`model.preset`, `decode.gpu`) stay: they
//! are pdlaunch's own settings, which lint takes too.

use std::borrow::Cow;

use crate::flags::{ROUTER_FLAGS, SERVER_FLAGS};

/// `text` with each backquoted deployment field that renders a flag replaced by that flag, and
/// each backquoted `field: value` by `--flag value`.
pub(crate) fn in_flag_terms(text: &str) -> Cow<'_, str> {
    if !text.contains('`') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else { break };
        let quoted = &rest[open + 1..open + 1 + len];
        out.push_str(&rest[..open]);
        match in_lint_words(quoted) {
            Some(p) => {
                out.push_str(&p);
                changed = true;
            }
            None => {
                out.push('`');
                out.push_str(quoted);
                out.push('`');
            }
        }
        rest = &rest[open + len + 2..];
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The lint wording of one backquoted deployment term, when it has one.
fn in_lint_words(quoted: &str) -> Option<String> {
    if let Some((path, value)) = quoted.split_once(": ") {
        return flag_of(path).map(|(flag, whom)| format!("`{flag} {value}` on {whom}"));
    }
    if let Some(side) = quoted.strip_suffix(".env").filter(|s| matches!(*s, "shared" | "prefill" | "decode")) {
        return Some(format!("the environment of {}", servers(side)?));
    }
    // The GPU model is the linter's own option.
    if let Some(side) = quoted.strip_suffix(".gpu").filter(|s| matches!(*s, "prefill" | "decode")) {
        let app = if side == "prefill" { "Prefill" } else { "Decode" };
        return Some(format!("`--{side}-gpu` or the app's \"{app} GPU\""));
    }
    flag_of(quoted).map(|(flag, whom)| format!("`{flag}` of {whom}"))
}

/// The servers that the deployment part `head` (`shared`, `prefill`...) configures.
fn servers(head: &str) -> Option<&'static str> {
    Some(match head {
        "shared" | "model" => "every server",
        "prefill" => "the prefill servers",
        "decode" => "the decode servers",
        "router" => "the router",
        _ => return None,
    })
}

/// The flag that deployment field `path` renders and the servers it concerns, when it renders one.
fn flag_of(path: &str) -> Option<(&'static str, &'static str)> {
    let (head, rest) = path.split_once('.')?;
    let whom = servers(head)?;
    let (def, prop) = match (head, rest.split_once('.')) {
        ("shared", Some(("speculative", prop))) => ("Speculative", prop),
        ("prefill" | "decode", Some(("hicache", prop))) => ("HiCache", prop),
        (_, Some(_)) => return None,
        ("shared", None) => ("Shared", rest),
        ("model", None) => ("Model", rest),
        ("router", None) => ("Router", rest),
        (_, None) => ("Side", rest),
    };
    let field = format!("{def}.{prop}");
    let flags = if head == "router" { ROUTER_FLAGS } else { SERVER_FLAGS };
    let flag = flags.iter().find(|f| f.field == field)?;
    Some((flag.name, whom))
}

#[cfg(test)]
mod tests {
    use super::in_flag_terms;

    #[test]
    fn fields_that_render_a_flag_are_named_by_it() {
        let cases = [
            (
                "set `shared.page_size` to 64 and remove per-side `--page-size`",
                "set `--page-size` of every server to 64 and remove per-side `--page-size`",
            ),
            ("set `decode.tp` to 8", "set `--tp-size` of the decode servers to 8"),
            ("`shared.speculative.algorithm`", "`--speculative-algorithm` of every server"),
            ("`prefill.hicache.storage_backend`", "`--hicache-storage-backend` of the prefill servers"),
            ("`router.port`", "`--port` of the router"),
            ("`model.context_length`", "`--context-length` of every server"),
            ("set `NCCL_IB_GID_INDEX` in `shared.env`", "set `NCCL_IB_GID_INDEX` in the environment of every server"),
            ("FP8 (`shared.kv_cache_dtype: fp8_e4m3`)", "FP8 (`--kv-cache-dtype fp8_e4m3` on every server)"),
            ("unknown (set `decode.gpu`)", "unknown (set `--decode-gpu` or the app's \"Decode GPU\")"),
        ];
        for (text, want) in cases {
            assert_eq!(in_flag_terms(text), want, "{text}");
        }
        // pdlaunch's own settings, fields of no flag, other quotes and an unclosed quote stay.
        for text in [
            "set `model.preset` or `shared.gpu`",
            "`router.env` and `model.preset: deepseek-v3`",
            "`decode.instances[0].port` and `decode.extra_args`",
            "`--page-size 1` `a.b` no quotes",
            "a `shared.page_size",
            "",
        ] {
            assert_eq!(in_flag_terms(text), text);
        }
    }
}
