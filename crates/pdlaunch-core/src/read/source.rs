//! Source texts and positions: every word a reader produces remembers where its bytes came from,
//! so a finding can point at `file:line:column` and a fix can edit the exact span.

use std::sync::Arc;

/// One input text with its line index.
#[derive(Clone)]
pub struct SourceFile {
    /// The name findings use (a path as given, or `<stdin>`).
    pub name: String,
    /// The text.
    pub text: String,
    line_starts: Vec<usize>,
    /// `name`, shared by the origins that point into this file.
    shared_name: Arc<str>,
    /// True when every character is one byte, so columns are byte distances.
    ascii: bool,
}

impl std::fmt::Debug for SourceFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `shared_name` repeats `name`.
        f.debug_struct("SourceFile")
            .field("name", &self.name)
            .field("text", &self.text)
            .field("line_starts", &self.line_starts)
            .finish()
    }
}

impl SourceFile {
    /// Indexes `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text: String = text.into();
        let name: String = name.into();
        let mut line_starts = Vec::with_capacity(text.len() / 32 + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        let ascii = text.is_ascii();
        SourceFile { shared_name: Arc::from(name.as_str()), name, text, line_starts, ascii }
    }

    /// The name as origins hold it (a shared copy of `name`).
    pub fn shared_name(&self) -> &Arc<str> {
        &self.shared_name
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1);
        self.position_on(line, offset)
    }

    /// [`Self::position`], looking for the line from `*line` (0-based) on and leaving it there:
    /// the words of a command come in order, a line or two apart, so the next one is found in a
    /// step or two instead of a search of every line.
    pub fn position_after(&self, offset: usize, line: &mut usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let starts = &self.line_starts;
        let mut found = (*line).min(starts.len() - 1);
        // Behind, or far ahead: search.
        if starts[found] > offset || starts.get(found + 8).is_some_and(|&s| s <= offset) {
            found = starts.partition_point(|&s| s <= offset).saturating_sub(1);
        }
        while starts.get(found + 1).is_some_and(|&next| next <= offset) {
            found += 1;
        }
        *line = found;
        self.position_on(found, offset)
    }

    /// The position of `offset`, which is on 0-based line `line`.
    fn position_on(&self, line: usize, offset: usize) -> (u32, u32) {
        let start = self.line_starts[line];
        if self.ascii {
            return (line as u32 + 1, (offset - start) as u32 + 1);
        }
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.text[start..end].chars().count() + 1;
        (line as u32 + 1, column as u32)
    }

    /// True when byte `offset` is on 1-based line `line`, as [`Self::position`] counts: a cheap
    /// test before working out a column.
    pub fn on_line(&self, offset: usize, line: u32) -> bool {
        let offset = offset.min(self.text.len());
        let Some(i) = (line as usize).checked_sub(1) else { return false };
        self.line_starts.get(i).is_some_and(|&s| s <= offset)
            && self.line_starts.get(i + 1).is_none_or(|&next| offset < next)
    }

    /// The text of 1-based line `line`, without its newline.
    pub fn line_text(&self, line: u32) -> Option<&str> {
        let i = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(i)?;
        let end = self.line_starts.get(i + 1).map_or(self.text.len(), |e| e - 1);
        Some(self.text[start..end.max(start)].trim_end_matches('\r'))
    }

    /// Byte offset of the start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        let line = self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1);
        self.line_starts[line]
    }

    /// Byte offset just past the newline ending the line holding `offset` (or the end of text).
    pub fn line_end(&self, offset: usize) -> usize {
        let line = self.line_starts.partition_point(|&s| s <= offset);
        self.line_starts.get(line).copied().unwrap_or(self.text.len())
    }
}

/// Where the bytes of a piece of text came from in its source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SrcMap {
    /// Byte `i` of the text is byte `start + i` of the source.
    Offset(usize),
    /// Byte `i` of the text is byte `table[i]` of the source.
    Table(Vec<usize>),
}

impl SrcMap {
    /// The source offset of text byte `i` (`i` may be the text length: one past the last byte).
    pub fn at(&self, i: usize) -> usize {
        match self {
            SrcMap::Offset(s) => s + i,
            SrcMap::Table(t) => match t.get(i) {
                Some(&o) => o,
                None => t.last().map_or(0, |&o| o + 1),
            },
        }
    }
}

/// How a word is embedded in its file, which decides how a fix edits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Embed {
    /// A word of shell text (a script, or a shell string inside YAML or `bash -c`). `nested` is
    /// true when the shell text itself sits inside quotes of an outer layer.
    Shell { nested: bool },
    /// An item of a YAML sequence: `flow` for `[a, b]`, else a `- item` line at `indent`.
    YamlItem { flow: bool, indent: usize },
    /// A key of an SGLang `--config` mapping (the line holds `key: value`).
    ConfigKey,
    /// A value of an SGLang `--config` mapping.
    ConfigValue,
    /// Not written: added by the tool that starts the process (srtctl's own flags). Its span is
    /// the place findings point at; fixes do not edit it.
    Generated,
}

/// One word as the program receives it, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The text after quote removal and variable expansion.
    pub text: String,
    /// Index of the source file.
    pub file: usize,
    /// Raw span in the source (quotes included).
    pub start: usize,
    /// End of the raw span.
    pub end: usize,
    /// Variables (or command substitutions) whose value pdlaunch cannot know, as written.
    pub unknown: Vec<String>,
    /// Source offset of every text byte, kept for words that may hold a nested script.
    pub map: Option<SrcMap>,
    /// How the word sits in its file.
    pub embed: Embed,
}

impl Word {
    /// True when the value depends on something only known at run time.
    pub fn is_symbolic(&self) -> bool {
        !self.unknown.is_empty()
    }

    /// A shell word with this text and no place, for tests.
    #[cfg(test)]
    pub fn plain(text: &str) -> Word {
        Word {
            text: text.into(),
            file: 0,
            start: 0,
            end: 0,
            unknown: vec![],
            map: None,
            embed: Embed::Shell { nested: false },
        }
    }
}

/// True for text that needs no quoting in a shell, in YAML or inside double quotes, so a fix can
/// write it anywhere unchanged.
pub fn is_plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./:,@%+=".contains(&b))
        && !s.starts_with(['=', '-', ':', ',', '@', '%'])
        || (s.starts_with("--") && s.len() > 2 && s[2..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters() {
        let f = SourceFile::new("x", "ab\nçd e\n");
        assert_eq!(f.position(0), (1, 1));
        assert_eq!(f.position(3), (2, 1));
        assert_eq!(f.position(6), (2, 3));
        let mut line = 0;
        assert_eq!([0, 3, 6, 9, 1].map(|o| f.position_after(o, &mut line)), [0, 3, 6, 9, 1].map(|o| f.position(o)));
        let long = SourceFile::new("y", "a\n".repeat(20));
        let mut line = 0;
        assert_eq!(
            [2, 4, 30, 38, 0].map(|o| long.position_after(o, &mut line)),
            [2, 4, 30, 38, 0].map(|o| long.position(o))
        );
        assert_eq!(f.line_text(2), Some("çd e"));
        assert_eq!(f.line_start(6), 3);
        assert_eq!(f.line_end(6), 9);
        assert!(f.on_line(6, 2) && f.on_line(3, 2) && !f.on_line(2, 2) && !f.on_line(6, 1) && !f.on_line(6, 0));
    }

    #[test]
    fn plain_words() {
        assert!(is_plain("64") && is_plain("low_latency") && is_plain("--page-size") && is_plain("http://a:1"));
        assert!(!is_plain("a b") && !is_plain("") && !is_plain("$x") && !is_plain("-x"));
    }
}
