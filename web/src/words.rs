//! The text form of a token list (a side's `extra_args`) and of an environment map: tokens are
//! shown shell-quoted and read back with the shell's quoting rules, so any token survives a
//! round trip through the text box.

use std::collections::BTreeMap;

use pdlaunch_core::render::quote;

/// Tokens as one line of shell words.
pub fn join(tokens: &[String]) -> String {
    tokens.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" ")
}

/// Splits shell words with the core's shell reader ([`pdlaunch_core::lint::shell::words`]), the
/// one the linter reads scripts with: `'...'`, `"..."`, `$'...'`, backslashes and line
/// continuations as a shell reads them; an unclosed quote runs to the end. Separators and
/// redirections a shell would act on (`;`, `|`, `&`, `>`...) end a word and are dropped, as
/// `#` comments are; [`join`] quotes them, so a token holding one survives the round trip.
pub fn split(text: &str) -> Vec<String> {
    pdlaunch_core::lint::shell::words(text)
}

/// An environment map as `KEY=value` lines (values shell-quoted when they need it).
pub fn env_text(env: &BTreeMap<String, String>) -> String {
    env.iter().map(|(k, v)| format!("{k}={}", quote(v))).collect::<Vec<_>>().join("\n")
}

/// Reads `KEY=value` lines; blank lines are skipped, a line without `=` is a key with an empty
/// value (the core reports bad names).
pub fn parse_env(text: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.extend(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| match l.split_once('=') {
        Some((k, v)) => (k.trim().to_owned(), split(v).join(" ")),
        None => (l.to_owned(), String::new()),
    }));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let cases: &[&[&str]] = &[
            &["--page-size", "1"],
            &["--x", "a b", "it's", "$(rm -rf /)", "\"q\"", "back\\slash", ""],
            &["naïve", "tab\there", "new\nline"],
        ];
        for tokens in cases {
            let tokens: Vec<String> = tokens.iter().map(|s| s.to_string()).collect();
            assert_eq!(split(&join(&tokens)), tokens, "{}", join(&tokens));
        }
    }

    #[test]
    fn typing_reads_as_a_shell_would() {
        assert_eq!(split("  --page-size  1 "), vec!["--page-size", "1"]);
        assert_eq!(split(r#"--a "x \"y\"" 'z w' p\ q"#), vec!["--a", "x \"y\"", "z w", "p q"]);
        assert_eq!(split("--a 'unclosed"), vec!["--a", "unclosed"]);
        assert!(split("   ").is_empty());
    }

    /// Quoting the app's own reader read right, and still does: quotes joined into one word,
    /// `'\''` inside single quotes, escapes inside double quotes.
    #[test]
    fn joined_quotes_read_as_one_word() {
        assert_eq!(split(r#"'it'\''s' "a\$b\\c" x"y"'z'"#), ["it's", "a$b\\c", "xyz"]);
    }

    /// What the app's own reader read wrong: an ANSI-C quote (`$'\t'`), a line continuation
    /// outside and inside double quotes (it kept the backslash and the line break), and a
    /// no-break space (a shell splits on blanks, not on every Unicode space).
    #[test]
    fn reads_what_a_shell_reads() {
        assert_eq!(split(r"--sep $'a\tb'"), ["--sep", "a\tb"]);
        assert_eq!(split("--a b\\\nc"), ["--a", "bc"]);
        assert_eq!(split("--a \"b\\\nc\""), ["--a", "bc"]);
        assert_eq!(split("--name a\u{a0}b"), ["--name", "a\u{a0}b"]);
    }

    #[test]
    fn env_round_trips() {
        let env: BTreeMap<String, String> =
            [("A".to_owned(), "1".to_owned()), ("B".to_owned(), "x y".to_owned())].into_iter().collect();
        assert_eq!(parse_env(&env_text(&env)), env);
        assert_eq!(parse_env("\nC\n D = 2 \n").get("D").map(String::as_str), Some("2"));
    }
}
