//! A POSIX/bash word reader good enough for launch scripts: quotes (`'…'`, `"…"`, `$'…'`),
//! backslash escapes and line continuations, comments, command separators, redirections, here
//! documents, `VAR=value` assignments and prefixes, `export`, and `$VAR`/`${VAR}`/`${VAR:-x}`
//! expansion from what the script assigned. A variable the script never sets (the environment,
//! a scheduler, a positional parameter) or a command substitution stays symbolic: its word keeps
//! the text as written and remembers what it depends on.
//!
//! Every output byte keeps its source offset, so words inside `bash -c "…"` strings, inside YAML
//! scalars or inside variable values still point at the file, line and column they came from.
//! While a word is read its offsets are kept as runs (a stretch of output bytes and where the
//! stretch came from); the per-byte table is written out only for the few words that need it
//! (assignments, words holding whitespace, words split by an expansion).

use std::ops::Range;

use crate::read::source::{Embed, SrcMap, Word};

/// A variable's value and, when it was written literally, where each byte came from.
#[derive(Clone, Debug)]
pub struct VarValue {
    /// The value, or `None` when the script sets it to something only known at run time.
    pub text: Option<String>,
    /// Source offset of each byte of `text`.
    pub map: Vec<usize>,
}

/// Shell variables the script has assigned so far, and the exported ones.
#[derive(Clone, Debug, Default)]
pub struct Vars {
    /// In first-assignment order. Scripts set a handful of variables, so a linear search beats
    /// hashing every name looked up.
    values: Vec<(String, VarValue)>,
    /// Names exported to child processes, in assignment order.
    pub exported: Vec<String>,
}

impl Vars {
    /// Sets `name`.
    pub fn set(&mut self, name: &str, value: VarValue) {
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.values.push((name.to_owned(), value)),
        }
    }
    /// The value of `name`: `None` when never set; `Some(None)` when set to an unknown value.
    pub fn get(&self, name: &str) -> Option<&VarValue> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    /// Marks `name` exported.
    pub fn export(&mut self, name: &str) {
        if !self.exported.iter().any(|n| n == name) {
            self.exported.push(name.to_owned());
        }
    }
    /// The exported variables with known values.
    pub fn env(&self) -> Vec<(String, String)> {
        self.exported.iter().filter_map(|n| self.get(n).and_then(|v| v.text.clone()).map(|t| (n.clone(), t))).collect()
    }
}

/// A word as read, with the position of an assignment's `=` when it is one (tests read
/// commands as owned words; the readers read them in place).
#[cfg(test)]
#[derive(Clone, Debug)]
pub struct LexWord {
    /// The word.
    pub word: Word,
    /// Byte index in `word.text` of the `=` of `NAME=value`.
    pub eq: Option<usize>,
    /// Source offsets of every byte of `word.text` when the word is an assignment (`eq` is set);
    /// empty otherwise.
    pub table: Vec<usize>,
}

/// One simple command and the here-documents that follow its line.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub struct Command {
    /// The words, redirections removed.
    pub words: Vec<LexWord>,
    /// Here-document bodies, as (start, end) byte ranges of the lexer's text.
    pub heredocs: Vec<(usize, usize)>,
}

/// A word of the command being read, its text and tables held in the lexer's buffers.
#[derive(Clone, Debug)]
struct Lexed {
    text: Range<usize>,
    start: usize,
    end: usize,
    unknown: Range<usize>,
    map: Option<Range<usize>>,
    eq: Option<usize>,
    nested: bool,
}

/// Where a run of output bytes came from.
#[derive(Clone, Copy, Debug)]
enum From {
    /// Byte `k` of the run is lexer text byte `p + k` (placed in the file through the map).
    Text(usize),
    /// Every byte of the run is source byte `o`.
    Fixed(usize),
    /// Byte `k` of the run is source byte `abs[q + k]` (a variable's value).
    Abs(usize),
}

/// A stretch of a word's output bytes with one origin.
#[derive(Clone, Copy, Debug)]
struct Run {
    len: usize,
    from: From,
    /// Produced by an unquoted expansion (subject to word splitting).
    split: bool,
}

/// Reads commands from shell text one at a time, so that assignments made by a command apply to
/// the expansions of the next ones.
pub struct Lexer<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    map: &'a SrcMap,
    file: usize,
    nested: bool,
    pending: Vec<(String, bool)>,
    /// Here-document bodies read after the current line.
    bodies: Vec<(usize, usize)>,
    /// The here-document bodies of the command read last.
    heredocs: Vec<(usize, usize)>,
    /// The texts of the command's words, one after another; the word being read is
    /// `texts[w0..]` (its "output").
    texts: String,
    w0: usize,
    /// The command's words.
    lexed: Vec<Lexed>,
    /// The words' unknowns, pointed into by `Lexed::unknown`.
    unknowns: Vec<String>,
    /// The words' per-byte source tables, pointed into by `Lexed::map`.
    tables: Vec<usize>,
    /// Where the output of the word being read came from, covering it in order.
    runs: Vec<Run>,
    /// Source offsets copied from variable values, pointed into by `From::Abs`.
    abs: Vec<usize>,
    /// Scratch for the per-byte table of a word that needs one.
    table: Vec<usize>,
    unknown: Vec<String>,
    quoted_any: bool,
    /// False while the word's output is plain text without whitespace, so it needs no source
    /// table.
    maybe_blank: bool,
    /// Some of the word's output came from an unquoted expansion.
    any_split: bool,
    /// Scratch for the pieces of a split word.
    pieces: Vec<Range<usize>>,
    /// Where the command read last is in the text: where its first word starts, where its last
    /// word (or redirection) starts, and where that ends.
    span: (usize, usize, usize),
    /// True when the command read last ends with a lone `&` (runs in the background).
    background: bool,
}

/// Byte classes for the word loop, one table lookup per byte.
const PLAIN: u8 = 1;
const NAME: u8 = 2;
const NAME_START: u8 = 4;
/// Ends a run of double-quoted text.
const DQ_SPECIAL: u8 = 8;
/// ASCII whitespace (`u8::is_ascii_whitespace`).
const BLANK: u8 = 16;
/// A byte [`Lexer::plain_word`] copies as it is once it knows the word is no assignment: a
/// plain byte or `=`.
const LITERAL: u8 = 32;
/// A blank between words: space, tab or carriage return.
const SKIP: u8 = 64;
/// Ends an unquoted word.
const ENDS_WORD: u8 = 128;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut k = 0;
        // An ASCII byte that [`Lexer::word`] copies as it is (no quote, expansion, operator, `=` or
        // whitespace).
        if c < 0x80
            && !c.is_ascii_whitespace()
            && !matches!(
                c,
                b' ' | b'\t'
                    | b'\n'
                    | b'\r'
                    | b';'
                    | b'&'
                    | b'|'
                    | b'<'
                    | b'>'
                    | b'('
                    | b')'
                    | b'\\'
                    | b'\''
                    | b'"'
                    | b'`'
                    | b'$'
                    | b'='
            )
        {
            k |= PLAIN;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            k |= NAME;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            k |= NAME_START;
        }
        if matches!(c, b'"' | b'\\' | b'$' | b'`') {
            k |= DQ_SPECIAL;
        }
        if c.is_ascii_whitespace() {
            k |= BLANK;
        }
        if matches!(c, b' ' | b'\t' | b'\r') {
            k |= SKIP;
        }
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')') {
            k |= ENDS_WORD;
        }
        if k & PLAIN != 0 || c == b'=' {
            k |= LITERAL;
        }
        t[b] = k;
        b += 1;
    }
    t
};

/// The number of bytes at the start of `s` that all have `class` (one bit).
fn run_len(s: &[u8], class: u8) -> usize {
    s.iter().position(|&c| CLASS[c as usize] & class == 0).unwrap_or(s.len())
}

fn is_name_start(b: u8) -> bool {
    CLASS[b as usize] & NAME_START != 0
}
fn is_name(b: u8) -> bool {
    CLASS[b as usize] & NAME != 0
}

impl<'a> Lexer<'a> {
    /// A lexer over `text`, whose byte `i` is source byte `map.at(i)` of file `file`.
    pub fn new(text: &'a str, map: &'a SrcMap, file: usize, nested: bool) -> Lexer<'a> {
        Lexer {
            s: text.as_bytes(),
            text,
            pos: 0,
            map,
            file,
            nested,
            pending: Vec::new(),
            bodies: Vec::new(),
            heredocs: Vec::new(),
            // Room for a long command, so the buffers rarely grow.
            texts: String::with_capacity(text.len().min(1024)),
            w0: 0,
            lexed: Vec::with_capacity(64),
            unknowns: Vec::new(),
            tables: Vec::new(),
            runs: Vec::new(),
            abs: Vec::new(),
            table: Vec::new(),
            unknown: Vec::new(),
            quoted_any: false,
            maybe_blank: false,
            any_split: false,
            pieces: Vec::new(),
            span: (0, 0, 0),
            background: false,
        }
    }

    fn peek(&self, k: usize) -> Option<u8> {
        self.s.get(self.pos + k).copied()
    }

    /// Reads the next command, as owned words; `None` at the end of the text.
    #[cfg(test)]
    pub fn next_command(&mut self, vars: &Vars) -> Option<Command> {
        if !self.read_command(vars) {
            return None;
        }
        let words = (0..self.lexed.len())
            .map(|i| {
                let eq = self.lexed[i].eq;
                let table = if eq.is_some() { self.table_of(i).to_vec() } else { Vec::new() };
                LexWord { word: self.take_word(i), eq, table }
            })
            .collect();
        Some(Command { words, heredocs: std::mem::take(&mut self.heredocs) })
    }

    /// Reads the next command into the lexer, where [`Self::len`], [`Self::text`],
    /// [`Self::take_word`]... read it without copying; false at the end of the text.
    pub fn read_command(&mut self, vars: &Vars) -> bool {
        self.texts.clear();
        self.lexed.clear();
        self.unknowns.clear();
        self.tables.clear();
        self.heredocs.clear();
        self.background = false;
        loop {
            // Blanks and line continuations.
            while let Some(b) = self.peek(0) {
                if CLASS[b as usize] & SKIP != 0 {
                    self.pos += 1;
                } else if b == b'\\' && self.peek(1) == Some(b'\n') {
                    self.pos += 2;
                } else if b == b'\\' && self.peek(1) == Some(b'\r') && self.peek(2) == Some(b'\n') {
                    self.pos += 3;
                } else {
                    break;
                }
            }
            let Some(b) = self.peek(0) else {
                self.heredocs.append(&mut self.bodies);
                return !self.lexed.is_empty() || !self.heredocs.is_empty();
            };
            match b {
                b'#' => {
                    self.pos = memchr::memchr(b'\n', &self.s[self.pos..]).map_or(self.s.len(), |k| self.pos + k);
                }
                b'\n' => {
                    self.pos += 1;
                    self.read_heredoc_bodies();
                    if !self.lexed.is_empty() || !self.bodies.is_empty() {
                        self.heredocs.append(&mut self.bodies);
                        return true;
                    }
                }
                b';' | b'&' | b'|' | b'(' | b')' => {
                    let op = self.pos;
                    self.pos += 1;
                    while self.peek(0).is_some_and(|c| matches!(c, b';' | b'&' | b'|')) {
                        self.pos += 1;
                    }
                    if !self.lexed.is_empty() {
                        self.background = &self.s[op..self.pos] == b"&";
                        return true;
                    }
                }
                b'<' | b'>' => {
                    let at = self.pos;
                    self.redirection(vars);
                    self.span = (self.span.0, at, self.pos);
                }
                b'0'..=b'9' if self.is_fd_redirect() => {
                    let at = self.pos;
                    while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    self.redirection(vars);
                    self.span = (self.span.0, at, self.pos);
                }
                _ => {
                    let (at, first) = (self.pos, self.lexed.is_empty());
                    if !self.plain_word() {
                        self.word(vars);
                    }
                    let start = if first && !self.lexed.is_empty() { at } else { self.span.0 };
                    self.span = (start, at, self.pos);
                }
            }
        }
    }

    /// Reads a word made only of plain bytes and `=` (most words: no quote, expansion or
    /// escape, and no assignment), without [`Self::word`]'s bookkeeping; false, reading nothing,
    /// for any other word.
    fn plain_word(&mut self) -> bool {
        let start = self.pos;
        let rest = &self.s[start..];
        let ends = |n: usize| rest.get(n).is_none_or(|&c| CLASS[c as usize] & ENDS_WORD != 0);
        let mut n = run_len(rest, PLAIN);
        if !ends(n) {
            // `NAME=...` is an assignment, which the general path records; any other `=` is literal.
            if rest[n] != b'=' || is_name_start(rest[0]) && rest[1..n].iter().all(|&c| is_name(c)) {
                return false;
            }
            n += run_len(&rest[n..], LITERAL);
            if !ends(n) {
                return false;
            }
        }
        if n == 0 {
            return false;
        }
        let end = start + n;
        let t0 = self.texts.len();
        self.texts.push_str(&self.text[start..end]);
        self.lexed.push(Lexed {
            text: t0..self.texts.len(),
            start: self.map.at(start),
            end: self.map.at(end - 1) + 1,
            unknown: self.unknowns.len()..self.unknowns.len(),
            map: None,
            eq: None,
            nested: self.nested,
        });
        self.pos = end;
        true
    }

    /// Where the command read last is in the text (byte offsets, not source offsets): where its
    /// first word starts, where its last word or redirection starts, and where that ends.
    pub fn span(&self) -> (usize, usize, usize) {
        self.span
    }

    /// True when the command read last ends with a lone `&`: the shell goes on while it runs.
    pub fn background(&self) -> bool {
        self.background
    }

    /// The source offset of byte `i` of the text.
    pub fn source_at(&self, i: usize) -> usize {
        self.map.at(i)
    }

    /// The number of words of the command read last.
    pub fn len(&self) -> usize {
        self.lexed.len()
    }

    /// True when the command read last has no words (only here-documents).
    pub fn is_empty(&self) -> bool {
        self.lexed.is_empty()
    }

    /// The text of word `i` of the command read last.
    pub fn text(&self, i: usize) -> &str {
        &self.texts[self.lexed[i].text.clone()]
    }

    /// The texts of all words of the command read last, one after another (with the blanks
    /// of split words): every word's text is a part of it.
    pub fn command_text(&self) -> &str {
        &self.texts
    }

    /// Byte index in word `i`'s text of the `=` of `NAME=value`.
    pub fn eq(&self, i: usize) -> Option<usize> {
        self.lexed[i].eq
    }

    /// Source offset where word `i` starts.
    pub fn start(&self, i: usize) -> usize {
        self.lexed[i].start
    }

    /// True when word `i`'s value depends on something only known at run time.
    pub fn is_symbolic(&self, i: usize) -> bool {
        !self.lexed[i].unknown.is_empty()
    }

    /// Source offsets of every byte of word `i` when it is an assignment or holds whitespace;
    /// empty otherwise.
    pub fn table_of(&self, i: usize) -> &[usize] {
        self.lexed[i].map.clone().map_or(&[], |r| &self.tables[r])
    }

    /// Here-document bodies of the command read last, as (start, end) byte ranges of the text.
    pub fn heredocs(&self) -> &[(usize, usize)] {
        &self.heredocs
    }

    /// Word `i` of the command read last (its unknowns move out: take each word once).
    pub fn take_word(&mut self, i: usize) -> Word {
        let l = &self.lexed[i];
        Word {
            text: self.texts[l.text.clone()].to_owned(),
            file: self.file,
            start: l.start,
            end: l.end,
            unknown: self.unknowns[l.unknown.clone()].iter_mut().map(std::mem::take).collect(),
            map: l.map.clone().map(|r| SrcMap::Table(self.tables[r].to_vec())),
            embed: Embed::Shell { nested: l.nested },
        }
    }

    fn is_fd_redirect(&self) -> bool {
        let mut k = 0;
        while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
            k += 1;
        }
        matches!(self.peek(k), Some(b'<' | b'>'))
    }

    /// A redirection operator and its target, both dropped; `<<` registers a here-document.
    fn redirection(&mut self, vars: &Vars) {
        let first = self.s[self.pos];
        self.pos += 1;
        if first == b'<' && self.peek(0) == Some(b'<') {
            self.pos += 1;
            if self.peek(0) == Some(b'<') {
                // Here-string: the next word is its text.
                self.pos += 1;
                self.skip_blanks();
                self.discard_word(vars);
                return;
            }
            let strip = self.peek(0) == Some(b'-');
            if strip {
                self.pos += 1;
            }
            self.skip_blanks();
            let mark = self.mark();
            self.word(vars);
            if mark.0 < self.lexed.len() {
                let delim = self.text(mark.0).to_owned();
                self.pending.push((delim, strip));
            }
            self.reset(mark);
            return;
        }
        while self.peek(0).is_some_and(|c| matches!(c, b'>' | b'&' | b'|')) {
            self.pos += 1;
        }
        if self.peek(0) == Some(b'-') {
            self.pos += 1;
            return;
        }
        self.skip_blanks();
        if self.peek(0).is_some_and(|c| !matches!(c, b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')) {
            self.discard_word(vars);
        }
    }

    fn skip_blanks(&mut self) {
        while self.peek(0).is_some_and(|c| c == b' ' || c == b'\t') {
            self.pos += 1;
        }
    }

    /// After a newline: the bodies of the here-documents opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for (delim, strip) in std::mem::take(&mut self.pending) {
            let start = self.pos;
            loop {
                if self.pos >= self.s.len() {
                    self.bodies.push((start, self.s.len()));
                    break;
                }
                let line_start = self.pos;
                let line_end =
                    self.s[self.pos..].iter().position(|&c| c == b'\n').map_or(self.s.len(), |k| self.pos + k);
                let mut line = &self.text[line_start..line_end];
                line = line.trim_end_matches('\r');
                if strip {
                    line = line.trim_start_matches('\t');
                }
                self.pos = (line_end + 1).min(self.s.len());
                if line == delim {
                    self.bodies.push((start, line_start));
                    break;
                }
            }
        }
    }

    /// Records that the `len` bytes just appended to `out` came from `from`.
    fn add_run(&mut self, len: usize, from: From, split: bool) {
        if len == 0 {
            return;
        }
        self.maybe_blank = true;
        self.any_split |= split;
        if let (Some(last), From::Text(p)) = (self.runs.last_mut(), from) {
            // Text read straight on (a word's plain bytes, then a quoted part) is one run.
            if let From::Text(q) = last.from {
                if q + last.len == p && last.split == split {
                    last.len += len;
                    return;
                }
            }
        }
        self.runs.push(Run { len, from, split });
    }

    fn push(&mut self, b: u8, at: usize) {
        // Bytes are pushed whole-character at a time by the callers, so `out` stays UTF-8.
        self.texts.push(b as char);
        self.add_run(1, From::Text(at), false);
    }

    /// Pushes the character starting at `self.pos` verbatim and advances past it.
    fn push_char(&mut self) {
        let ch_len = utf8_len(self.s[self.pos]);
        let end = (self.pos + ch_len).min(self.s.len());
        let start = self.pos;
        match self.text.get(start..end) {
            Some(ch) => {
                self.texts.push_str(ch);
                self.add_run(end - start, From::Text(start), false);
            }
            None => {
                self.texts.push('\u{fffd}');
                let at = self.map.at(start);
                self.add_run(3, From::Fixed(at), false);
            }
        }
        self.pos = end.max(start + 1);
    }

    /// Pushes the text from `self.pos` to `end` verbatim, as [`Self::push_char`] would one
    /// character at a time, and advances to `end`. Falls back to that when `self.pos` is not on a
    /// character boundary; `end` must be one.
    fn push_run(&mut self, end: usize) {
        let start = self.pos;
        if !self.text.is_char_boundary(start) {
            while self.pos < end {
                self.push_char();
            }
            return;
        }
        self.texts.push_str(&self.text[start..end]);
        self.add_run(end - start, From::Text(start), false);
        self.pos = end;
    }

    /// Writes the source offset of every byte of `out` into `self.table` (cleared first).
    fn materialize(&mut self) {
        self.table.clear();
        self.table.reserve(self.texts.len() - self.w0);
        for r in &self.runs {
            match r.from {
                From::Text(p) => match self.map {
                    SrcMap::Offset(o) => self.table.extend(o + p..o + p + r.len),
                    SrcMap::Table(t) if p + r.len <= t.len() => self.table.extend_from_slice(&t[p..p + r.len]),
                    m => self.table.extend((p..p + r.len).map(|i| m.at(i))),
                },
                From::Fixed(o) => self.table.extend(std::iter::repeat_n(o, r.len)),
                From::Abs(q) => self.table.extend_from_slice(&self.abs[q..q + r.len]),
            }
        }
    }

    /// The source offset of byte `k` of run `r`.
    fn run_at(&self, r: &Run, k: usize) -> usize {
        match r.from {
            From::Text(p) => self.map.at(p + k),
            From::Fixed(o) => o,
            From::Abs(q) => self.abs[q + k],
        }
    }

    /// How far the command's buffers are filled, to drop what is read after.
    fn mark(&self) -> (usize, usize, usize, usize) {
        (self.lexed.len(), self.texts.len(), self.unknowns.len(), self.tables.len())
    }

    fn reset(&mut self, (lexed, texts, unknowns, tables): (usize, usize, usize, usize)) {
        self.lexed.truncate(lexed);
        self.texts.truncate(texts);
        self.unknowns.truncate(unknowns);
        self.tables.truncate(tables);
    }

    /// Reads one word (or several, when an unquoted expansion splits) and drops it.
    fn discard_word(&mut self, vars: &Vars) {
        let mark = self.mark();
        self.word(vars);
        self.reset(mark);
    }

    /// The output of the word being read.
    fn out(&self) -> &str {
        &self.texts[self.w0..]
    }

    /// Reads one word (or several, when an unquoted expansion splits) into the command.
    fn word(&mut self, vars: &Vars) {
        self.w0 = self.texts.len();
        self.runs.clear();
        self.abs.clear();
        self.unknown.clear();
        self.quoted_any = false;
        self.maybe_blank = false;
        self.any_split = false;
        let raw_start = self.pos;
        let mut eq: Option<usize> = None;
        let mut name_ok = true;
        while let Some(b) = self.peek(0) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => {
                    // `$(` is handled inside; a bare `(` after `=` starts an array: keep it literal.
                    if b == b'(' && eq.is_some() && self.out().len() == eq.unwrap_or(0) + 1 {
                        self.skip_balanced(b'(', b')');
                        let raw = self.text[raw_start..self.pos].to_owned();
                        self.unknown.push(raw);
                        continue;
                    }
                    break;
                }
                b'\\' => {
                    name_ok &= eq.is_some();
                    match self.peek(1) {
                        Some(b'\n') => self.pos += 2,
                        Some(_) => {
                            self.pos += 1;
                            self.quoted_any = true;
                            self.push_char();
                        }
                        None => self.pos += 1,
                    }
                }
                b'\'' => {
                    name_ok = false;
                    self.quoted_any = true;
                    self.pos += 1;
                    let close = memchr::memchr(b'\'', &self.s[self.pos.min(self.s.len())..]);
                    self.push_run(close.map_or(self.s.len(), |k| self.pos + k));
                    self.pos += 1;
                }
                b'"' => {
                    name_ok = false;
                    self.quoted_any = true;
                    self.pos += 1;
                    self.double_quoted(vars);
                }
                b'`' => {
                    name_ok = false;
                    self.backquoted();
                }
                b'$' => {
                    name_ok = false;
                    if self.peek(1) == Some(b'\'') {
                        self.quoted_any = true;
                        self.pos += 2;
                        self.ansi_c();
                    } else if self.peek(1) == Some(b'"') {
                        self.pos += 1;
                    } else {
                        self.dollar(vars, true);
                    }
                }
                b'=' if eq.is_none() && name_ok && self.texts.len() > self.w0 => {
                    eq = Some(self.texts.len() - self.w0);
                    self.push_char();
                }
                _ if b >= 0x80 => {
                    if eq.is_none() {
                        name_ok = false;
                    }
                    self.push_char();
                }
                _ => {
                    // A run of plain ASCII bytes (after this one, which may be a `=` or a form
                    // feed), copied at once.
                    let start = self.pos;
                    let k = start + 1 + run_len(&self.s[start + 1..], PLAIN);
                    if eq.is_none() && name_ok {
                        let first = if self.texts.len() == self.w0 { NAME_START } else { NAME };
                        name_ok = CLASS[b as usize] & first != 0 && self.s[start + 1..k].iter().all(|&c| is_name(c));
                    }
                    self.texts.push_str(&self.text[start..k]);
                    let maybe_blank = self.maybe_blank;
                    self.add_run(k - start, From::Text(start), false);
                    // Plain bytes hold no whitespace: only the first byte can be (a form feed).
                    self.maybe_blank = maybe_blank || CLASS[b as usize] & BLANK != 0;
                    self.pos = k;
                }
            }
        }
        let raw_end = self.pos.min(self.s.len());
        let eq = eq.filter(|_| self.out().as_bytes().first().is_some_and(|&c| is_name_start(c)));
        self.finish(raw_start, raw_end, eq);
    }

    /// True when an unquoted expansion produced a blank or newline, so the word splits.
    fn needs_split(&self) -> bool {
        let bytes = self.out().as_bytes();
        let mut at = 0;
        for r in &self.runs {
            if r.split && bytes[at..at + r.len].iter().any(|&b| b == b' ' || b == b'\t' || b == b'\n') {
                return true;
            }
            at += r.len;
        }
        false
    }

    /// True when the bytes of `out` come from consecutive source bytes.
    fn contiguous(&mut self) -> bool {
        self.materialize();
        self.table.windows(2).all(|w| w[1] == w[0] + 1)
    }

    /// Records the word(s) just read, splitting on whitespace produced by unquoted expansions.
    fn finish(&mut self, raw_start: usize, raw_end: usize, eq: Option<usize>) {
        let w0 = self.w0;
        if eq.is_some() || !self.any_split || !self.needs_split() {
            if self.texts.len() == w0 && !self.quoted_any && self.unknown.is_empty() {
                return;
            }
            let keep_map = eq.is_some() || self.maybe_blank && self.out().bytes().any(|b| b.is_ascii_whitespace());
            let (mut start, mut end) = (
                self.map.at(raw_start),
                if raw_end > raw_start { self.map.at(raw_end - 1) + 1 } else { self.map.at(raw_start) },
            );
            let mut nested = self.nested;
            // A word made wholly of one variable's literal value points at that value, where the
            // script assigned it (that is what a fix edits).
            if let (Some(first), Some(last)) = (self.runs.first(), self.runs.last()) {
                // Cheapest test first: only a word starting with `$` can qualify.
                if self.s.get(raw_start) == Some(&b'$') {
                    let (first, last) = (self.run_at(first, 0), self.run_at(last, last.len - 1));
                    if (first < start || first >= end) && self.contiguous() {
                        (start, end, nested) = (first, last + 1, true);
                    }
                }
            }
            let map = keep_map.then(|| {
                self.materialize();
                let m0 = self.tables.len();
                self.tables.extend_from_slice(&self.table);
                m0..self.tables.len()
            });
            let u0 = self.unknowns.len();
            if !self.unknown.is_empty() {
                self.unknowns.append(&mut self.unknown);
            }
            let unknown = u0..self.unknowns.len();
            let text = w0..self.texts.len();
            self.lexed.push(Lexed { text, start, end, unknown, map, eq, nested });
            return;
        }
        self.materialize();
        // The pieces lie between the blanks that unquoted expansions produced.
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let (mut at, mut piece) = (0, 0);
        // Whitespace stays in a piece only from text not subject to splitting (quotes, escapes).
        let mut kept_blank = false;
        let bytes = &self.texts.as_bytes()[w0..];
        for r in &self.runs {
            let run = &bytes[at..at + r.len];
            if r.split {
                for (k, &b) in run.iter().enumerate() {
                    if CLASS[b as usize] & BLANK != 0 {
                        if at + k > piece {
                            pieces.push(piece..at + k);
                        }
                        piece = at + k + 1;
                    }
                }
            } else {
                kept_blank |= run.iter().any(|b| b.is_ascii_whitespace());
            }
            at += r.len;
        }
        if bytes.len() > piece {
            pieces.push(piece..bytes.len());
        }
        let unknown = std::mem::take(&mut self.unknown);
        for &Range { start, end } in &pieces {
            let text = w0 + start..w0 + end;
            let piece = &self.texts[text.clone()];
            let t = &self.table[start..end];
            let u0 = self.unknowns.len();
            if !unknown.is_empty() {
                self.unknowns.extend(unknown.iter().filter(|u| piece.contains(u.as_str())).cloned());
            }
            let map = (kept_blank && piece.bytes().any(|b| b.is_ascii_whitespace())).then(|| {
                let m0 = self.tables.len();
                self.tables.extend_from_slice(t);
                m0..self.tables.len()
            });
            self.lexed.push(Lexed {
                text,
                start: t[0],
                end: t[t.len() - 1] + 1,
                unknown: u0..self.unknowns.len(),
                map,
                eq: None,
                nested: true,
            });
        }
        self.pieces = pieces;
    }

    fn double_quoted(&mut self, vars: &Vars) {
        while let Some(c) = self.peek(0) {
            match c {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => match self.peek(1) {
                    Some(b'$' | b'`' | b'"' | b'\\') => {
                        self.pos += 1;
                        self.push_char();
                    }
                    Some(b'\n') => self.pos += 2,
                    _ => self.push_char(),
                },
                b'$' => self.dollar(vars, false),
                b'`' => {
                    self.backquoted();
                }
                _ => {
                    let rest = &self.s[self.pos + 1..];
                    let k = rest.iter().position(|&c| CLASS[c as usize] & DQ_SPECIAL != 0);
                    self.push_run(k.map_or(self.s.len(), |k| self.pos + 1 + k));
                }
            }
        }
    }

    fn ansi_c(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                b'\'' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => {
                    let at = self.pos;
                    let e = self.peek(1);
                    self.pos += 2;
                    let ch = match e {
                        Some(b'n') => b'\n',
                        Some(b't') => b'\t',
                        Some(b'r') => b'\r',
                        Some(b'\\') => b'\\',
                        Some(b'\'') => b'\'',
                        Some(b'"') => b'"',
                        Some(b'e') | Some(b'E') => 0x1b,
                        Some(b'a') => 7,
                        Some(b'b') => 8,
                        Some(b'v') => 11,
                        Some(b'f') => 12,
                        Some(b'0') => 0,
                        Some(other) if other < 0x80 => {
                            self.push(b'\\', at);
                            other
                        }
                        _ => {
                            self.pos = at + 1;
                            b'\\'
                        }
                    };
                    self.push(ch, at);
                }
                _ => self.push_char(),
            }
        }
    }

    /// Skips from an opening bracket to its match, honouring quotes; `self.pos` is on the opener.
    fn skip_balanced(&mut self, open: u8, close: u8) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                b'\\' => self.pos += 1,
                b'\'' => {
                    while self.peek(0).is_some_and(|c| c != b'\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                b'"' => {
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        if c == b'\\' {
                            self.pos += 1;
                        } else if c == b'"' {
                            break;
                        }
                    }
                }
                _ if c == open => depth += 1,
                _ if c == close => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        self.pos = self.pos.min(self.s.len());
    }

    /// `$…` at `self.pos`.
    fn dollar(&mut self, vars: &Vars, unquoted: bool) {
        let start = self.pos;
        match self.peek(1) {
            Some(b'(') => {
                self.pos += 1;
                self.skip_balanced(b'(', b')');
                let end = self.pos;
                self.symbolic_raw(start, end);
            }
            Some(b'{') => {
                self.pos += 1;
                self.skip_balanced(b'{', b'}');
                let end = self.pos;
                let inner = self.text.get(start + 2..end.saturating_sub(1).max(start + 2)).unwrap_or("");
                self.expand(vars, inner, start, end, unquoted);
            }
            Some(c) if is_name_start(c) => {
                self.pos += 1;
                while self.peek(0).is_some_and(is_name) {
                    self.pos += 1;
                }
                let end = self.pos;
                let text = self.text;
                self.expand(vars, &text[start + 1..end], start, end, unquoted);
            }
            Some(c) if c.is_ascii_digit() || b"@*#?$!-".contains(&c) => {
                self.pos += 2;
                let end = self.pos;
                self.symbolic_raw(start, end);
            }
            _ => {
                self.push(b'$', start);
                self.pos += 1;
            }
        }
    }

    /// A `` `...` `` command substitution, from its opening backquote at the cursor: symbolic.
    fn backquoted(&mut self) {
        let start = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            if c == b'\\' {
                self.pos += 1;
            } else if c == b'`' {
                break;
            }
        }
        let end = self.pos.min(self.s.len());
        self.symbolic_raw(start, end);
    }

    /// A command substitution, arithmetic or special parameter: symbolic, written as is.
    fn symbolic_raw(&mut self, start: usize, end: usize) {
        let end = end.min(self.s.len());
        let text = self.text;
        let raw = &text[start..end];
        self.texts.push_str(raw);
        if raw.is_ascii() {
            self.add_run(raw.len(), From::Text(start), false);
        } else {
            // Every byte of a character points at the character's first byte.
            for (k, ch) in raw.char_indices() {
                match ch.len_utf8() {
                    1 => self.add_run(1, From::Text(start + k), false),
                    n => {
                        let at = self.map.at(start + k);
                        self.add_run(n, From::Fixed(at), false);
                    }
                }
            }
        }
        self.unknown.push(raw.to_owned());
    }

    /// Expands `${inner}` (or `$inner`), the raw text spanning `start..end`.
    fn expand(&mut self, vars: &Vars, inner: &str, start: usize, end: usize, unquoted: bool) {
        let name_len = inner.bytes().take_while(|&b| is_name(b)).count();
        let (name, op) = inner.split_at(name_len);
        let value = if name.is_empty() || !is_name_start(name.as_bytes()[0]) {
            None
        } else {
            match (vars.get(name), op) {
                (Some(v), "") => known(v),
                (Some(v), o) if o.starts_with(":-") || o.starts_with(":=") => match &v.text {
                    Some(t) if !t.is_empty() => known(v),
                    Some(_) => literal_default(&o[2..]),
                    None => None,
                },
                (Some(v), o) if o.starts_with('-') || o.starts_with('=') => known(v),
                (None, o) if o.starts_with(":-") || o.starts_with(":=") => literal_default(&o[2..]),
                (None, o) if o.starts_with('-') || o.starts_with('=') => literal_default(&o[1..]),
                _ => None,
            }
        };
        match value {
            Some((text, map)) => {
                self.texts.push_str(text);
                match map.filter(|m| m.len() == text.len()) {
                    Some(m) => {
                        let q = self.abs.len();
                        self.abs.extend_from_slice(m);
                        self.add_run(text.len(), From::Abs(q), unquoted);
                    }
                    None => {
                        let at = self.map.at(start);
                        self.add_run(text.len(), From::Fixed(at), unquoted);
                    }
                }
            }
            None => {
                let end = end.min(self.s.len());
                self.symbolic_raw(start, end);
            }
        }
    }
}

/// The words of shell text, read as the linter reads scripts: quotes and escapes removed, line
/// continuations joined, comments, command separators (`;`, `&`, `|`, `(`, `)`, line breaks) and
/// redirections dropped, the words of every command in order. No variable is set, so `$X` and
/// command substitutions stay as written and `${X:-d}` reads as its default. The web app reads
/// typed argument lists and environment values with it.
pub fn words(text: &str) -> Vec<String> {
    let map = SrcMap::Offset(0);
    let mut lexer = Lexer::new(text, &map, 0, false);
    let vars = Vars::default();
    let mut out = Vec::new();
    while lexer.read_command(&vars) {
        out.extend((0..lexer.len()).map(|i| lexer.text(i).to_owned()));
    }
    out
}

/// A variable's value and where its bytes came from, when the script knows it.
fn known(v: &VarValue) -> Option<(&str, Option<&[usize]>)> {
    v.text.as_deref().map(|t| (t, Some(v.map.as_slice())))
}

/// A `${X:-default}` default, when it is literal text (else the expansion stays symbolic). Its
/// bytes all point at the expansion.
fn literal_default(d: &str) -> Option<(&str, Option<&[usize]>)> {
    let lit = d.bytes().all(|b| !matches!(b, b'$' | b'`' | b'"' | b'\'' | b'\\'));
    lit.then_some((d, None))
}

fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(text: &str) -> Vec<Vec<String>> {
        let map = SrcMap::Offset(0);
        let mut lx = Lexer::new(text, &map, 0, false);
        let mut vars = Vars::default();
        let mut out = Vec::new();
        while let Some(c) = lx.next_command(&vars) {
            if c.words.len() == 1 {
                if let Some(eq) = c.words[0].eq {
                    let w = &c.words[0];
                    vars.set(
                        &w.word.text[..eq],
                        VarValue { text: Some(w.word.text[eq + 1..].to_owned()), map: w.table[eq + 1..].to_vec() },
                    );
                }
            }
            out.push(c.words.iter().map(|w| w.word.text.clone()).collect());
        }
        out
    }

    #[test]
    fn quotes_escapes_and_continuations() {
        let c = commands("python3 -m x \\\n  --a 'b c' \"d\\\"e\" f\\ g $'h\\ti' # comment\nnext");
        assert_eq!(c[0], ["python3", "-m", "x", "--a", "b c", "d\"e", "f g", "h\ti"]);
        assert_eq!(c[1], ["next"]);
    }

    #[test]
    fn operators_and_redirections() {
        let c = commands("a 2>&1 >log.txt; b && c | d & e <in");
        assert_eq!(c, vec![vec!["a"], vec!["b"], vec!["c"], vec!["d"], vec!["e"]]);
    }

    #[test]
    fn variables_expand_split_or_stay_symbolic() {
        let c = commands("PS=64\nARGS=\"--tp 2 --pp-size 1\"\nx --page-size $PS $ARGS ${UNSET} ${D:-7} \"$ARGS\"");
        assert_eq!(
            c[2],
            ["x", "--page-size", "64", "--tp", "2", "--pp-size", "1", "${UNSET}", "7", "--tp 2 --pp-size 1"]
        );
    }

    #[test]
    fn positions_of_expanded_values_point_at_the_assignment() {
        let text = "PS=64\nx --page-size $PS";
        let map = SrcMap::Offset(0);
        let mut lx = Lexer::new(text, &map, 0, false);
        let mut vars = Vars::default();
        let a = lx.next_command(&vars).unwrap();
        let w = &a.words[0];
        let eq = w.eq.unwrap();
        vars.set("PS", VarValue { text: Some("64".into()), map: w.table[eq + 1..].to_vec() });
        let b = lx.next_command(&vars).unwrap();
        assert_eq!(b.words[2].word.start, 3);
        assert_eq!(b.words[2].word.end, 5);
    }

    #[test]
    fn heredoc_bodies_are_returned() {
        let map = SrcMap::Offset(0);
        let text = "ssh host bash <<'EOF'\npython -m a\nEOF\nafter";
        let mut lx = Lexer::new(text, &map, 0, false);
        let vars = Vars::default();
        let c = lx.next_command(&vars).unwrap();
        assert_eq!(c.heredocs.len(), 1);
        let (s, e) = c.heredocs[0];
        assert_eq!(&text[s..e], "python -m a\n");
        assert_eq!(lx.next_command(&vars).unwrap().words[0].word.text, "after");
    }

    #[test]
    fn commands_are_read_in_place() {
        let text = "A=1 run --x 'y z' $A\nnext a\x0cb";
        let map = SrcMap::Offset(10);
        let mut lx = Lexer::new(text, &map, 3, false);
        let vars = Vars::default();
        assert!(lx.read_command(&vars));
        assert_eq!(lx.len(), 5);
        assert_eq!((lx.text(0), lx.eq(0), lx.table_of(0)), ("A=1", Some(1), &[10, 11, 12][..]));
        let w = lx.take_word(2);
        assert_eq!((w.text.as_str(), w.file, w.start, w.end, w.map), ("--x", 3, 18, 21, None));
        let w = lx.take_word(3);
        assert_eq!((w.text.as_str(), w.start, w.end), ("y z", 22, 27));
        assert_eq!(w.map, Some(SrcMap::Table(vec![23, 24, 25])));
        assert!(lx.is_symbolic(4) && lx.take_word(4).unknown == ["$A"]);
        assert!(lx.read_command(&vars));
        // A form feed is whitespace: the word keeps its map, like any word holding whitespace.
        assert_eq!(lx.text(1), "a\x0cb");
        assert!(lx.take_word(1).map.is_some());
        assert!(!lx.read_command(&vars));
    }

    #[test]
    fn equals_signs_outside_assignments_are_literal() {
        let map = SrcMap::Offset(0);
        let mut lx = Lexer::new("srun --nodes=1 a.b=c =x N=1 k=v=w", &map, 0, false);
        assert!(lx.read_command(&Vars::default()));
        let words: Vec<_> = (0..lx.len()).map(|i| (lx.text(i), lx.eq(i), lx.table_of(i).len())).collect();
        assert_eq!(
            words,
            [
                ("srun", None, 0),
                ("--nodes=1", None, 0),
                ("a.b=c", None, 0),
                ("=x", None, 0),
                ("N=1", Some(1), 3),
                ("k=v=w", Some(1), 5)
            ]
        );
    }

    #[test]
    fn words_of_every_command_in_order() {
        let text = "run --a 'b c' \"d\\\"e\" f\\ g $'h\\ti' \\\n  --x=1 2>&1 # note\nnext $HOME ${N:-7} '' | tail";
        assert_eq!(
            words(text),
            ["run", "--a", "b c", "d\"e", "f g", "h\ti", "--x=1", "next", "$HOME", "7", "", "tail"]
        );
        assert!(words(" \t\n# only a comment\n").is_empty());
        assert_eq!(words("--a 'unclosed"), ["--a", "unclosed"]);
    }

    #[test]
    fn command_substitution_is_symbolic() {
        let map = SrcMap::Offset(0);
        let mut lx = Lexer::new("x --host $(hostname -i) `id`", &map, 0, false);
        let c = lx.next_command(&Vars::default()).unwrap();
        assert_eq!(c.words[2].word.text, "$(hostname -i)");
        assert!(c.words[2].word.is_symbolic() && c.words[3].word.is_symbolic());
    }
}
