//! Terminal colour, off when not a terminal or when `NO_COLOR` is set.

use std::io::IsTerminal;

/// Colour choices for one run.
pub struct Style {
    on: bool,
}

impl Style {
    /// `mode` is `auto`, `always` or `never`.
    pub fn new(mode: &str) -> Style {
        let on = match mode {
            "always" => true,
            "never" => false,
            _ => std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal(),
        };
        Style { on }
    }
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
    /// Red bold.
    pub fn error(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    /// Yellow bold.
    pub fn warning(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    /// Cyan bold.
    pub fn note(&self, s: &str) -> String {
        self.paint("1;36", s)
    }
    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    /// Dim.
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    /// Green bold.
    pub fn ok(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    /// A summary line coloured by its worst count: red with errors, yellow with warnings, else green.
    pub fn summary(&self, s: &str, errors: usize, warnings: usize) -> String {
        if errors > 0 {
            self.error(s)
        } else if warnings > 0 {
            self.warning(s)
        } else {
            self.ok(s)
        }
    }
}
