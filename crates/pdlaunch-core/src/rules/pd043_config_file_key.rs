//! PD043: an SGLang `--config` file that SGLang rejects or misreads.

use super::{Check, Context, Finding, Rule, Severity};

/// Reported by the linter while it reads the `--config` files that commands refer to (a
/// deployment renders its config files without these traps, see `render::config`).
pub static RULE: Rule = Rule {
    code: "PD043",
    name: "config-file-key",
    severity: Severity::Error,
    summary: "an SGLang `--config` file has a key or shape SGLang rejects",
    explanation: "SGLang's config loader turns each key into `--key` verbatim, so `page_size:` becomes the unknown \
        `--page_size` and the server exits with \"unrecognized arguments\"; it refuses keys whose option is not a \
        plain store or store_true option (deprecated aliases, `--no-x` forms, LoRA paths) with a ValueError; it \
        wants a `.yaml`/`.yml` file whose root is a mapping, and a single `--config` followed by its path.",
    sglang_errors: &[
        "Unsupported config option '{key}' with action '{ActionClass}'",
        "Config file must be YAML format, got: {suffix}",
        "Config file must contain a dictionary at root level",
        "Multiple config files specified! Only one allowed.",
        "No config file specified after --config flag!",
    ],
    fix: "Write keys as option names without `--` in the dash form (`page-size: 64`), use only plain options in the \
        file, and pass one `--config FILE.yaml`.",
    check: Check::Commands(check),
};

/// The linter reports these while reading files; a context has nothing more to say.
fn check(_: &Context) -> Vec<Finding> {
    Vec::new()
}
