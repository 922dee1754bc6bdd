//! A YAML reader that keeps positions: every scalar knows the source offset of each of its bytes,
//! every sequence where its items are, so findings point at lines and fixes edit exact spans.
//!
//! It reads what Kubernetes manifests, compose files and SGLang `--config` files use: multiple
//! documents, block mappings and sequences (compact `- key: v` items too), flow `[...]`/`{...}`,
//! plain, single- and double-quoted scalars (multi-line, with escapes), literal and folded block
//! scalars, comments, tags (ignored), anchors, aliases and `<<` merge keys. Anything else is an
//! error with its offset, never a panic.

use std::borrow::Cow;
use std::cell::Cell;

use super::path::{self, Step};
use super::source::SrcMap;
use crate::fast_hash::FastMap;

/// How a scalar was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    Single,
    Double,
    Literal,
    Folded,
}

/// A scalar with the source offset of each byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scalar<'a> {
    /// The value: a slice of the source when it is written as is (most scalars), else its own
    /// copy (escapes, folded lines, block scalars).
    pub text: Cow<'a, str>,
    /// How it was written.
    pub style: Style,
    /// Raw span in the source (quotes and block headers included).
    pub start: usize,
    /// End of the raw span.
    pub end: usize,
    /// Source offset of every byte of `text`.
    pub map: SrcMap,
}

/// A YAML node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node<'a> {
    /// Nothing (an empty value) at an offset.
    Null(usize),
    Scalar(Scalar<'a>),
    Seq(Seq<'a>),
    Map(Map<'a>),
}

/// A sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seq<'a> {
    /// The items.
    pub items: Vec<Node<'a>>,
    /// `[a, b]` rather than `- a` lines.
    pub flow: bool,
    /// Offset of `[` or of the first `-`.
    pub start: usize,
    /// Column of the `-` of block items.
    pub indent: usize,
}

/// A mapping, in written order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map<'a> {
    /// Keys and values.
    pub entries: Vec<(Scalar<'a>, Node<'a>)>,
    /// Offset of the first key.
    pub start: usize,
}

impl<'a> Node<'a> {
    /// The value under `key`, when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.entry(key).map(|(_, v)| v)
    }
    /// The key and value of `key` (its last entry), when this is a mapping.
    pub fn entry(&self, key: &str) -> Option<(&Scalar<'a>, &Node<'a>)> {
        self.map()?.entries.iter().rev().find(|(k, _)| k.text == key).map(|(k, v)| (k, v))
    }
    /// The mapping itself.
    pub fn map(&self) -> Option<&Map<'a>> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }
    /// The text of a scalar.
    pub fn str(&self) -> Option<&str> {
        match self {
            Node::Scalar(s) => Some(&s.text),
            _ => None,
        }
    }
    /// The scalar itself.
    pub fn scalar(&self) -> Option<&Scalar<'a>> {
        match self {
            Node::Scalar(s) => Some(s),
            _ => None,
        }
    }
    /// The items of a sequence.
    pub fn items(&self) -> &[Node<'a>] {
        match self {
            Node::Seq(s) => &s.items,
            _ => &[],
        }
    }
    /// Where the node starts.
    pub fn start(&self) -> usize {
        match self {
            Node::Null(o) => *o,
            Node::Scalar(s) => s.start,
            Node::Seq(s) => s.start,
            Node::Map(m) => m.start,
        }
    }
}

/// A YAML text that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
    /// The field path of the node being read there, outermost step first: the keys and items
    /// of the collections open at the error, or, past the end of a node, the last of its
    /// fields before the error.
    pub path: Vec<Step>,
}

impl YamlError {
    /// An error at `offset`, inside no collection.
    pub fn new(offset: usize, message: impl Into<String>) -> YamlError {
        YamlError { offset, message: message.into(), path: Vec::new() }
    }
}

/// Puts `step` before the path of an error that arose inside the node it leads to (the error
/// comes out through the enclosing collections innermost first).
fn within<T>(r: R<T>, step: impl FnOnce() -> Step) -> R<T> {
    r.map_err(|mut e| {
        e.path.insert(0, step());
        e
    })
}

type R<T> = Result<T, YamlError>;

const MAX_DEPTH: usize = 64;

/// Reads every document of `text`.
pub fn parse(text: &str) -> Result<Vec<Node<'_>>, YamlError> {
    // Columns are asked for at every node: a line index answers without scanning back.
    let mut lines = Vec::with_capacity(text.len() / 24 + 2);
    lines.push(0);
    lines.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    let mut p = Parser {
        s: text.as_bytes(),
        t: text,
        pos: 0,
        depth: 0,
        anchors: FastMap::default(),
        lines,
        line: Cell::new(0),
        // Room for the open collections of a common manifest, so the stacks do not grow (and
        // copy) a step at a time in every file.
        entries: Vec::with_capacity(32),
        items: Vec::with_capacity(16),
        skipped: (usize::MAX, 0, false),
        block_lines: Vec::new(),
    };
    p.stream().map_err(|e| tab_indent(text, e))
}

/// An error on a line indented with a tab is about the tab: YAML indents with spaces only, and
/// the reader's own message ("bad indentation?") would not say so.
fn tab_indent(text: &str, e: YamlError) -> YamlError {
    let at = e.offset.min(text.len());
    let line_start = text.as_bytes()[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let indent = text.as_bytes()[line_start..].iter().take_while(|&&b| b == b' ' || b == b'\t');
    match indent.clone().position(|&b| b == b'\t') {
        Some(tab) => YamlError {
            offset: line_start + tab,
            message: "a tab character in the indentation; YAML indents with spaces only".into(),
            ..e
        },
        None => e,
    }
}

struct Parser<'a> {
    s: &'a [u8],
    t: &'a str,
    pos: usize,
    depth: usize,
    anchors: FastMap<&'a str, Node<'a>>,
    /// Offset of the start of every line.
    lines: Vec<usize>,
    /// Index in `lines` of the line last asked about: the next question is mostly about it or
    /// the one after.
    line: Cell<usize>,
    /// Entries of the block mappings being read, innermost last: each mapping takes its own
    /// at its end, in a vector of the right size.
    entries: Vec<(Scalar<'a>, Node<'a>)>,
    /// Items of the block sequences being read, the same way.
    items: Vec<Node<'a>>,
    /// The last run of space skipped: from, to, and whether it crossed a line break.
    skipped: (usize, usize, bool),
    /// The lines of the block scalar being read, kept so that each does not allocate its own.
    block_lines: Vec<(usize, usize)>,
}

/// How a plain scalar in block context is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Plain {
    /// A mapping key: one line, up to `: `.
    Key,
    /// A value: `: ` is text, and it may continue on more indented lines.
    Value,
    /// A key when its line holds `key: `, else a value.
    Either,
}

/// Bytes that may end the text of a plain scalar's line (which ones do depends on the context).
static PLAIN_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let stops = b"\n\r#:,[]{}";
    while i < stops.len() {
        t[stops[i] as usize] = true;
        i += 1;
    }
    t
};

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

impl<'a> Parser<'a> {
    fn at(&self, k: usize) -> Option<u8> {
        self.s.get(self.pos + k).copied()
    }
    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(YamlError::new(self.pos.min(self.s.len()), message))
    }
    fn line_start(&self, pos: usize) -> usize {
        let pos = pos.min(self.s.len());
        let holds = |i: usize| self.lines[i] <= pos && self.lines.get(i + 1).is_none_or(|&next| pos < next);
        let cur = self.line.get();
        let i = if holds(cur) {
            cur
        } else if cur + 1 < self.lines.len() && holds(cur + 1) {
            cur + 1
        } else {
            // `lines[0]` is 0, so at least one line starts at or before `pos`.
            self.lines.partition_point(|&s| s <= pos) - 1
        };
        self.line.set(i);
        self.lines[i]
    }
    fn col(&self, pos: usize) -> usize {
        pos - self.line_start(pos)
    }
    /// True at a `---` or `...` line.
    fn at_marker(&self) -> bool {
        let rest = self.s.get(self.pos..).unwrap_or(&[]);
        (rest.starts_with(b"---") || rest.starts_with(b"..."))
            && (self.pos == 0 || self.s[self.pos - 1] == b'\n')
            && self.s.get(self.pos + 3).is_none_or(|&b| b == b' ' || b == b'\n' || b == b'\r' || b == b'\t')
    }
    fn skip_blanks(&mut self) {
        while self.at(0).is_some_and(is_blank) {
            self.pos += 1;
        }
    }
    /// Skips blanks, comments and line breaks; returns true when a line break was crossed.
    #[inline]
    fn skip_space(&mut self) -> bool {
        // Often there is nothing to skip (a node starts where its parent's look ended).
        if self.s.get(self.pos).is_none_or(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'#')) {
            return false;
        }
        self.skip_some_space()
    }

    fn skip_some_space(&mut self) -> bool {
        // A collection that ends looks past the space after its last entry, steps back and
        // leaves it to its parent, which looks again: the last answer is kept for that.
        let (from, to, crossed) = self.skipped;
        if from == self.pos {
            self.pos = to;
            return crossed;
        }
        let from = self.pos;
        let s = self.s;
        let mut i = self.pos;
        let mut crossed = false;
        while i < s.len() {
            match s[i] {
                b' ' | b'\t' | b'\r' => i += 1,
                b'\n' => {
                    i += 1;
                    crossed = true;
                    // Indentation: a run of spaces.
                    while i < s.len() && s[i] == b' ' {
                        i += 1;
                    }
                }
                b'#' if i == 0 || matches!(s[i - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                    i = memchr::memchr(b'\n', &s[i..]).map_or(s.len(), |k| i + k);
                }
                _ => break,
            }
        }
        self.pos = i;
        self.skipped = (from, i, crossed);
        crossed
    }

    /// True when the rest of the line is empty or a comment.
    fn line_rest_empty(&self) -> bool {
        let mut k = self.pos;
        while k < self.s.len() && matches!(self.s[k], b' ' | b'\t' | b'\r') {
            k += 1;
        }
        k >= self.s.len() || self.s[k] == b'\n' || self.s[k] == b'#'
    }

    /// True when the line from `from` holds `key:` (a mapping entry) rather than a plain value.
    fn line_has_key(&self, from: usize) -> bool {
        let mut k = from;
        while k < self.s.len() && self.s[k] != b'\n' {
            let b = self.s[k];
            if b == b'#' && k > from && matches!(self.s[k - 1], b' ' | b'\t') {
                return false;
            }
            if b == b':' && self.s.get(k + 1).is_none_or(|&c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
                return true;
            }
            k += 1;
        }
        false
    }

    fn stream(&mut self) -> R<Vec<Node<'a>>> {
        let mut docs = Vec::new();
        loop {
            self.skip_space();
            if self.pos >= self.s.len() {
                break;
            }
            if self.at_marker() {
                let dashes = self.s[self.pos] == b'-';
                self.pos += 3;
                if !dashes {
                    continue;
                }
                self.skip_blanks();
                if self.line_rest_empty() {
                    continue;
                }
            }
            let before = self.pos;
            let node = self.node(-1, true)?;
            docs.push(node);
            self.skip_space();
            if self.pos < self.s.len() && !self.at_marker() {
                let mut e = YamlError::new(self.pos, "unexpected content after the end of a node (bad indentation?)");
                e.path = docs.last().map(|n| path::at(n, self.pos)).unwrap_or_default();
                return Err(e);
            }
            if self.pos == before {
                return self.err("cannot read this");
            }
        }
        Ok(docs)
    }

    /// Properties (`&anchor`, `!tag`) before a node; returns the anchor name.
    #[inline]
    fn properties(&mut self) -> Option<&'a str> {
        // Most nodes have none.
        if !matches!(self.at(0), Some(b'&' | b'!')) {
            return None;
        }
        self.properties_slow()
    }

    fn properties_slow(&mut self) -> Option<&'a str> {
        let mut anchor = None;
        loop {
            match self.at(0) {
                Some(b'&') => {
                    let start = self.pos + 1;
                    while self.at(0).is_some_and(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}')) {
                        self.pos += 1;
                    }
                    anchor = Some(self.t.get(start..self.pos).unwrap_or(""));
                    self.skip_blanks();
                }
                Some(b'!') => {
                    while self.at(0).is_some_and(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}')) {
                        self.pos += 1;
                    }
                    self.skip_blanks();
                }
                _ => return anchor,
            }
        }
    }

    /// A node whose lines are indented more than `parent`. `key_ok`: a scalar followed by `: `
    /// starts a block mapping here.
    fn node(&mut self, parent: isize, key_ok: bool) -> R<Node<'a>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err("nested too deeply");
        }
        let r = self.node_inner(parent, key_ok);
        self.depth -= 1;
        r
    }

    fn node_inner(&mut self, parent: isize, key_ok: bool) -> R<Node<'a>> {
        let here = self.pos;
        let crossed = self.skip_space();
        if self.pos >= self.s.len() || self.at_marker() || (crossed && (self.col(self.pos) as isize) <= parent) {
            self.pos = if crossed { self.pos } else { here };
            return Ok(Node::Null(here));
        }
        let anchor = self.properties();
        if anchor.is_some() && self.line_rest_empty() {
            let n = self.node(parent, true)?;
            self.remember(anchor, &n);
            return Ok(n);
        }
        let col = self.col(self.pos);
        let n = match self.at(0) {
            Some(b'-') if self.at(1).is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) => {
                self.block_seq(col)?
            }
            Some(b'|' | b'>') => Node::Scalar(self.block_scalar(parent)?),
            Some(b'*') => self.alias(),
            Some(b'[' | b'{') => {
                let n = self.flow(0)?;
                self.skip_blanks();
                n
            }
            Some(b'?') if self.at(1).is_none_or(|b| matches!(b, b' ' | b'\n')) => {
                return self.err("complex mapping keys (`? key`) are not supported");
            }
            _ => {
                // A quoted scalar may be a key; a plain one is when its line holds `key: `.
                let mode = if key_ok { Plain::Either } else { Plain::Value };
                let (key, is_key) = self.scalar_in_block(parent, mode)?;
                self.skip_blanks();
                if is_key
                    && self.at(0) == Some(b':')
                    && self.at(1).is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                {
                    self.block_map(col, key)?
                } else {
                    Node::Scalar(key)
                }
            }
        };
        self.remember(anchor, &n);
        Ok(n)
    }

    /// Keeps a copy of `n` under its anchor name. By reference: most nodes have no anchor, and
    /// moving every node in and out would cost them a copy each.
    #[inline]
    fn remember(&mut self, anchor: Option<&'a str>, n: &Node<'a>) {
        if let Some(a) = anchor {
            self.anchors.insert(a, n.clone());
        }
    }

    fn alias(&mut self) -> Node<'a> {
        let at = self.pos;
        self.pos += 1;
        let start = self.pos;
        while self.at(0).is_some_and(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}')) {
            self.pos += 1;
        }
        let name = self.t.get(start..self.pos).unwrap_or("");
        self.anchors.get(name).cloned().unwrap_or(Node::Null(at))
    }

    fn block_seq(&mut self, col: usize) -> R<Node<'a>> {
        let start = self.pos;
        let mark = self.items.len();
        loop {
            // On a `-` at column `col`.
            self.pos += 1;
            self.skip_blanks();
            let index = self.items.len() - mark;
            let item = within(self.node(col as isize, true), || Step::Index(index))?;
            self.items.push(item);
            let save = self.pos;
            self.skip_space();
            if self.pos < self.s.len()
                && !self.at_marker()
                && self.col(self.pos) == col
                && self.at(0) == Some(b'-')
                && self.at(1).is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                continue;
            }
            self.pos = save;
            break;
        }
        let items = self.items.split_off(mark);
        Ok(Node::Seq(Seq { items, flow: false, start, indent: col }))
    }

    fn block_map(&mut self, col: usize, first: Scalar<'a>) -> R<Node<'a>> {
        let start = first.start;
        let mark = self.entries.len();
        let mut key = first;
        loop {
            // On the `:` after `key`.
            self.pos += 1;
            let value = within(self.value(col), || Step::Key(key.text.to_string()))?;
            self.entries.push((key, value));
            let save = self.pos;
            self.skip_space();
            if self.pos >= self.s.len() || self.at_marker() || self.col(self.pos) != col {
                self.pos = save;
                break;
            }
            if self.at(0) == Some(b'-') && self.at(1).is_none_or(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t')) {
                self.pos = save;
                break;
            }
            let k = if matches!(self.at(0), Some(b'[' | b'{')) {
                return self.err("flow collections as mapping keys are not supported");
            } else {
                self.scalar_in_block(col as isize, Plain::Key)?.0
            };
            self.skip_blanks();
            if self.at(0) != Some(b':') {
                return self.err(format!("expected `:` after the key `{}`", k.text));
            }
            key = k;
        }
        let entries = self.entries.split_off(mark);
        Ok(Node::Map(merge(Map { entries, start })))
    }

    /// The value after `key:` of a mapping at column `col`.
    fn value(&mut self, col: usize) -> R<Node<'a>> {
        self.skip_blanks();
        let anchor = self.properties();
        if self.line_rest_empty() {
            let here = self.pos;
            self.skip_space();
            let c = self.col(self.pos);
            let n = if self.pos < self.s.len()
                && !self.at_marker()
                && c == col
                && self.at(0) == Some(b'-')
                && self.at(1).is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                self.block_seq(col)?
            } else if self.pos < self.s.len() && !self.at_marker() && c > col {
                self.node(col as isize, true)?
            } else {
                self.pos = here;
                Node::Null(here)
            };
            self.remember(anchor, &n);
            return Ok(n);
        }
        let n = match self.at(0) {
            Some(b'|' | b'>') => Node::Scalar(self.block_scalar(col as isize)?),
            Some(b'*') => self.alias(),
            Some(b'[' | b'{') => self.flow(0)?,
            _ => Node::Scalar(self.scalar_in_block(col as isize, Plain::Value)?.0),
        };
        self.remember(anchor, &n);
        Ok(n)
    }

    /// A plain or quoted scalar in block context, read as `mode` says.
    fn scalar_in_block(&mut self, parent: isize, mode: Plain) -> R<(Scalar<'a>, bool)> {
        match self.at(0) {
            Some(b'"') => Ok((self.double_quoted()?, mode != Plain::Value)),
            Some(b'\'') => Ok((self.single_quoted()?, mode != Plain::Value)),
            _ => Ok(self.plain(parent, mode, false)),
        }
    }

    /// Where the text of a plain scalar's line ends: at a line break, a comment, `: ` when `key`
    /// (or in flow context), and at `,[]{}` in flow context. `after_break`: the line continues
    /// a scalar, so a `#` at its start is a comment too.
    fn plain_line_stop(&self, from: usize, key: bool, flow: bool, after_break: bool) -> usize {
        let s = self.s;
        let mut i = from;
        loop {
            // Most bytes are none of these: one table look-up each, in a loop that does no more.
            match s[i..].iter().position(|&b| PLAIN_STOP[b as usize]) {
                Some(k) => i += k,
                None => return s.len(),
            }
            match s[i] {
                b'\n' | b'\r' => return i,
                b'#' if (i > from && is_blank(s[i - 1])) || (i == from && after_break) => return i,
                b'#' => {}
                b':' => {
                    let next = s.get(i + 1).copied();
                    if (key || flow) && next.is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
                        return i;
                    }
                    if flow && next.is_some_and(|c| matches!(c, b',' | b']' | b'}')) {
                        return i;
                    }
                }
                _ if flow => return i,
                _ => {}
            }
            i += 1;
        }
    }

    /// A plain scalar. In flow context it stops at `,[]{}`; a key stops at `: `; a value in
    /// block context continues on lines indented more than `parent`. Returns the scalar and
    /// whether it was read as a key (so a `:` after it starts a mapping).
    fn plain(&mut self, parent: isize, mode: Plain, flow: bool) -> (Scalar<'a>, bool) {
        let start = self.pos;
        let key_stop = mode != Plain::Value;
        let stop = self.plain_line_stop(start, key_stop, flow, false);
        let first_end = self.trim_blanks_back(start, stop);
        let is_key = match mode {
            Plain::Key => true,
            Plain::Value => false,
            // A key when the line holds `key: `: the scan stopped there. A lone carriage return
            // stops the scan short of the rest of the line, which decides instead.
            Plain::Either => {
                let cr_alone = self.s.get(stop) == Some(&b'\r') && self.s.get(stop + 1) != Some(&b'\n');
                self.s.get(stop) == Some(&b':') || (cr_alone && self.line_has_key(start))
            }
        };
        self.pos = first_end;
        let first = self.t.get(start..first_end).unwrap_or("");
        let mut next = if is_key { None } else { self.plain_continues(parent, flow) };
        if next.is_none() {
            // Most plain scalars are one line: their text is a slice of the source and their
            // map an offset.
            let scalar = Scalar {
                text: Cow::Borrowed(first),
                style: Style::Plain,
                start,
                end: first_end,
                map: SrcMap::Offset(start),
            };
            return (scalar, is_key);
        }
        // Continuation lines are folded into a copy, with a table.
        let mut text: Cow<'a, str> = Cow::Borrowed(first);
        let mut table: Vec<usize> = Vec::new();
        let mut first_src = (first_end > start).then_some(start);
        while let Some((breaks, at, line_begin)) = next {
            let stop = self.plain_line_stop(line_begin, key_stop, flow, true);
            let seg_end = self.trim_blanks_back(line_begin, stop);
            if seg_end > line_begin {
                if table.is_empty() {
                    if let Some(f) = first_src {
                        table.extend(f..f + text.len());
                    }
                }
                push_folded(text.to_mut(), &mut table, breaks, at);
                let seg = self.t.get(line_begin..seg_end).unwrap_or("");
                if first_src.is_none() {
                    first_src = Some(line_begin);
                } else {
                    table.extend(line_begin..line_begin + seg.len());
                }
                if text.is_empty() {
                    text = Cow::Borrowed(seg);
                } else {
                    text.to_mut().push_str(seg);
                }
            }
            self.pos = seg_end;
            // A line that yields no text ends the scalar: what stopped it is not a break.
            next = if seg_end > line_begin { self.plain_continues(parent, flow) } else { None };
        }
        let end = self.pos;
        let map = if table.is_empty() { SrcMap::Offset(first_src.unwrap_or(start)) } else { SrcMap::Table(table) };
        (Scalar { text, style: Style::Plain, start, end: end.max(start), map }, false)
    }

    /// `stop` moved back over the blanks before it, not past `from`.
    fn trim_blanks_back(&self, from: usize, stop: usize) -> usize {
        let mut end = stop;
        while end > from && is_blank(self.s[end - 1]) {
            end -= 1;
        }
        end
    }

    /// Whether the plain scalar whose text ends at the cursor continues on a later line: the
    /// number of line breaks before that line, where the first break is, and where the line's
    /// text starts. When it does not, and the space after the cursor was looked across, that
    /// space is kept for the `skip_space` that follows.
    fn plain_continues(&mut self, parent: isize, flow: bool) -> Option<(usize, usize, usize)> {
        let s = self.s;
        let mut k = self.pos;
        while k < s.len() && is_blank(s[k]) {
            k += 1;
        }
        if (k >= s.len() || !matches!(s[k], b'\n' | b'\r'))
            && (!flow || k >= s.len() || matches!(s[k], b',' | b']' | b'}' | b'#'))
        {
            return None;
        }
        // Count line breaks and find the next content line.
        let mut breaks = 0;
        let mut m = k;
        let mut ls = k;
        loop {
            while m < s.len() && matches!(s[m], b' ' | b'\t' | b'\r') {
                m += 1;
            }
            if m < s.len() && s[m] == b'\n' {
                breaks += 1;
                m += 1;
                ls = m;
                continue;
            }
            break;
        }
        if m >= s.len() || breaks == 0 {
            return None;
        }
        let c = m - ls;
        let is_marker = c == 0
            && (s[m..].starts_with(b"---") || s[m..].starts_with(b"..."))
            && s.get(m + 3).is_none_or(|&b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
        let next = s[m];
        if (!flow && (c as isize) <= parent) || is_marker || next == b'#' {
            if next != b'#' {
                // What `skip_space` from `k` would find: a comment would make it look further.
                self.skipped = (k, m, true);
            }
            return None;
        }
        if !flow {
            // A `key:` on the continuation line would be a new mapping entry, not text.
            let line_end = s[m..].iter().position(|&b| b == b'\n').map_or(s.len(), |e| m + e);
            let line = &s[m..line_end];
            if line.windows(2).any(|w| w[0] == b':' && matches!(w[1], b' ' | b'\t'))
                || line.ends_with(b":")
                || (next == b'-' && line.get(1).is_none_or(|&b| b == b' '))
            {
                return None;
            }
        }
        if flow && matches!(next, b',' | b']' | b'}' | b'[' | b'{') {
            return None;
        }
        Some((breaks, k, m))
    }

    fn fold_breaks(&mut self, text: &mut String, table: &mut Vec<usize>) {
        // At a line break inside a quoted scalar: fold it (one break: space; n breaks: n-1 newlines).
        let at = self.pos;
        let mut breaks = 0;
        loop {
            match self.at(0) {
                Some(b'\n') => {
                    breaks += 1;
                    self.pos += 1;
                }
                Some(b' ' | b'\t' | b'\r') => self.pos += 1,
                _ => break,
            }
        }
        push_folded(text, table, breaks, at);
    }

    fn trim_trailing_blanks(text: &mut String, table: &mut Vec<usize>) {
        while text.ends_with([' ', '\t']) {
            text.pop();
            table.pop();
        }
    }

    /// A one-line quoted scalar without escapes: its text is a slice of the source.
    fn quoted_fast(&mut self, quote: u8) -> Option<Scalar<'a>> {
        let start = self.pos;
        let body = self.s.get(start + 1..)?;
        let k = body.iter().position(|&b| b == quote || b == b'\n' || b == b'\r' || (quote == b'"' && b == b'\\'))?;
        if body[k] != quote || (quote == b'\'' && body.get(k + 1) == Some(&b'\'')) {
            return None;
        }
        let text = Cow::Borrowed(self.t.get(start + 1..start + 1 + k)?);
        self.pos = start + k + 2;
        let style = if quote == b'"' { Style::Double } else { Style::Single };
        Some(Scalar { text, style, start, end: self.pos, map: SrcMap::Offset(start + 1) })
    }

    fn single_quoted(&mut self) -> R<Scalar<'a>> {
        if let Some(s) = self.quoted_fast(b'\'') {
            return Ok(s);
        }
        let start = self.pos;
        self.pos += 1;
        let mut text = String::new();
        let mut table = Vec::new();
        loop {
            match self.at(0) {
                None => return self.err("unterminated single-quoted string"),
                Some(b'\'') if self.at(1) == Some(b'\'') => {
                    text.push('\'');
                    table.push(self.pos);
                    self.pos += 2;
                }
                Some(b'\'') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\n') | Some(b'\r') => {
                    Self::trim_trailing_blanks(&mut text, &mut table);
                    self.fold_breaks(&mut text, &mut table);
                }
                Some(_) => self.push_char(&mut text, &mut table),
            }
        }
        Ok(Scalar { text: Cow::Owned(text), style: Style::Single, start, end: self.pos, map: SrcMap::Table(table) })
    }

    fn push_char(&mut self, text: &mut String, table: &mut Vec<usize>) {
        let start = self.pos;
        let mut end = start + 1;
        while end < self.s.len() && !self.t.is_char_boundary(end) {
            end += 1;
        }
        let ch = self.t.get(start..end).unwrap_or("\u{fffd}");
        text.push_str(ch);
        for k in 0..ch.len() {
            table.push(start + k.min(end - start - 1));
        }
        self.pos = end;
    }

    fn double_quoted(&mut self) -> R<Scalar<'a>> {
        if let Some(s) = self.quoted_fast(b'"') {
            return Ok(s);
        }
        let start = self.pos;
        self.pos += 1;
        let mut text = String::new();
        let mut table = Vec::new();
        loop {
            match self.at(0) {
                None => return self.err("unterminated double-quoted string"),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    let at = self.pos;
                    let e = self.at(1);
                    self.pos += 2;
                    let ch: Option<char> = match e {
                        Some(b'0') => Some('\0'),
                        Some(b'a') => Some('\u{7}'),
                        Some(b'b') => Some('\u{8}'),
                        Some(b't') | Some(b'\t') => Some('\t'),
                        Some(b'n') => Some('\n'),
                        Some(b'v') => Some('\u{b}'),
                        Some(b'f') => Some('\u{c}'),
                        Some(b'r') => Some('\r'),
                        Some(b'e') => Some('\u{1b}'),
                        Some(b' ') => Some(' '),
                        Some(b'"') => Some('"'),
                        Some(b'/') => Some('/'),
                        Some(b'\\') => Some('\\'),
                        Some(b'N') => Some('\u{85}'),
                        Some(b'_') => Some('\u{a0}'),
                        Some(b'L') => Some('\u{2028}'),
                        Some(b'P') => Some('\u{2029}'),
                        Some(b'x') => self.hex(2),
                        Some(b'u') => self.utf16(),
                        Some(b'U') => self.hex(8),
                        Some(b'\n') | Some(b'\r') => {
                            // Escaped line break: joined without a space.
                            while self.at(0).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
                                self.pos += 1;
                            }
                            continue;
                        }
                        _ => {
                            self.pos = at;
                            return self.err("invalid escape in a double-quoted string");
                        }
                    };
                    let Some(ch) = ch else {
                        self.pos = at;
                        return self.err("invalid escape in a double-quoted string");
                    };
                    text.push(ch);
                    for _ in 0..ch.len_utf8() {
                        table.push(at);
                    }
                }
                Some(b'\n') | Some(b'\r') => {
                    Self::trim_trailing_blanks(&mut text, &mut table);
                    self.fold_breaks(&mut text, &mut table);
                }
                Some(_) => self.push_char(&mut text, &mut table),
            }
        }
        Ok(Scalar { text: Cow::Owned(text), style: Style::Double, start, end: self.pos, map: SrcMap::Table(table) })
    }

    /// A `\u` escape's four digits, and a low surrogate's escape after a high one (JSON writes
    /// characters beyond the first plane so).
    fn utf16(&mut self) -> Option<char> {
        let digits = self.t.get(self.pos..self.pos + 4)?;
        let high = u32::from_str_radix(digits, 16).ok()?;
        if !(0xD800..0xDC00).contains(&high) {
            return self.hex(4);
        }
        let low = self.t.get(self.pos + 4..self.pos + 10)?.strip_prefix("\\u")?;
        let low = u32::from_str_radix(low, 16).ok().filter(|l| (0xDC00..0xE000).contains(l))?;
        self.pos += 10;
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }

    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.t.get(self.pos..self.pos + n)?;
        let v = u32::from_str_radix(digits, 16).ok()?;
        self.pos += n;
        char::from_u32(v)
    }

    /// `|` or `>` scalar; its lines are indented more than `parent`.
    fn block_scalar(&mut self, parent: isize) -> R<Scalar<'a>> {
        let start = self.pos;
        let literal = self.s[self.pos] == b'|';
        self.pos += 1;
        let mut chomp = b' ';
        let mut explicit: Option<usize> = None;
        while let Some(b) = self.at(0) {
            match b {
                b'-' | b'+' => chomp = b,
                b'1'..=b'9' => explicit = Some((b - b'0') as usize),
                _ => break,
            }
            self.pos += 1;
        }
        if !self.line_rest_empty() {
            return self.err("unexpected text after a block scalar indicator");
        }
        while self.at(0).is_some_and(|b| b != b'\n') {
            self.pos += 1;
        }
        if self.at(0) == Some(b'\n') {
            self.pos += 1;
        }
        let base = (parent + 1).max(0) as usize;
        // Content indentation: explicit, or that of the first non-empty line.
        let indent = match explicit {
            Some(d) => (parent.max(0) as usize) + d,
            None => {
                let mut k = self.pos;
                let mut found = None;
                while k < self.s.len() {
                    let mut c = k;
                    while c < self.s.len() && self.s[c] == b' ' {
                        c += 1;
                    }
                    if c < self.s.len() && (self.s[c] == b'\n' || self.s[c] == b'\r') {
                        k = c + 1;
                        continue;
                    }
                    found = Some(c - k);
                    break;
                }
                found.unwrap_or(base).max(base)
            }
        };
        // (content start, content end) per line, in the parser's buffer kept for this.
        let mut lines = std::mem::take(&mut self.block_lines);
        lines.clear();
        let src = self.s;
        while self.pos < src.len() {
            // One look at each byte: the indentation, then the blanks after it, then the rest.
            let ls = self.pos;
            let mut k = ls;
            while k < src.len() && src[k] == b' ' {
                k += 1;
            }
            let spaces = k - ls;
            while k < src.len() && matches!(src[k], b' ' | b'\r' | b'\t') {
                k += 1;
            }
            let blank = k >= src.len() || src[k] == b'\n';
            if !blank && (spaces < indent || self.at_marker()) {
                break;
            }
            let le = if blank { k } else { memchr::memchr(b'\n', &src[k..]).map_or(src.len(), |e| k + e) };
            if blank {
                lines.push((le, le));
            } else {
                let ce = if src[le - 1] == b'\r' { le - 1 } else { le };
                lines.push((ls + indent, ce));
            }
            self.pos = (le + 1).min(src.len());
            if le >= src.len() {
                break;
            }
        }
        // Trailing blank lines belong to the chomping, not the content.
        let content_lines = lines.iter().rposition(|(s, e)| e > s).map_or(0, |i| i + 1);
        let trailing = lines.len() - content_lines;
        // Each line gives at most its content and one line break or space.
        let capacity = lines.iter().map(|(s, e)| e - s + 1).sum();
        let mut text = String::with_capacity(capacity);
        let mut table = Vec::with_capacity(capacity);
        let mut prev_more_indented = false;
        for (i, &(s, e)) in lines[..content_lines].iter().enumerate() {
            let line = self.t.get(s..e).unwrap_or("");
            let more = line.starts_with([' ', '\t']);
            if i > 0 {
                let (ps, pe) = lines[i - 1];
                let prev_empty = pe == ps;
                if literal || more || prev_more_indented || line.is_empty() {
                    text.push('\n');
                    table.push(pe);
                } else if !prev_empty {
                    text.push(' ');
                    table.push(pe);
                }
            }
            text.push_str(line);
            table.extend(s..s + line.len());
            prev_more_indented = more;
        }
        if content_lines == 0 && chomp == b'+' {
            // Only empty lines, kept: each is a line break (how a string of breaks is written).
            for &(e, _) in &lines {
                text.push('\n');
                table.push(e);
            }
        }
        if content_lines > 0 {
            let last_end = lines[content_lines - 1].1;
            match chomp {
                b'-' => {}
                b'+' => {
                    for _ in 0..=trailing {
                        text.push('\n');
                        table.push(last_end);
                    }
                }
                _ => {
                    text.push('\n');
                    table.push(last_end);
                }
            }
        }
        // Leave the position at the end of the last content line so the caller sees the break.
        let end = if content_lines > 0 { lines[content_lines - 1].1 } else { self.pos };
        self.pos = end.min(self.s.len());
        self.block_lines = lines;
        Ok(Scalar {
            text: Cow::Owned(text),
            style: if literal { Style::Literal } else { Style::Folded },
            start,
            end,
            map: SrcMap::Table(table),
        })
    }

    /// The entries of a flow collection from its `open` bracket (at the cursor) through its
    /// `close` one: `entry` reads one entry; empty entries between commas are skipped, and an
    /// entry must be followed by `,` or `close`. `what` names an entry in errors.
    fn flow_entries(&mut self, open: u8, close: u8, what: &str, mut entry: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.pos += 1;
        loop {
            self.skip_space();
            match self.at(0) {
                None => return self.err(format!("unterminated `{}`", open as char)),
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let before = self.pos;
            entry(self)?;
            self.skip_space();
            match self.at(0) {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {}
                _ if self.pos == before => return self.err(format!("cannot read this {what}")),
                _ => return self.err(format!("expected `,` or `{}`", close as char)),
            }
        }
    }

    /// A flow collection or scalar.
    fn flow(&mut self, depth: usize) -> R<Node<'a>> {
        if depth + self.depth > MAX_DEPTH {
            return self.err("nested too deeply");
        }
        self.skip_space();
        let anchor = self.properties();
        self.skip_space();
        let n = match self.at(0) {
            Some(b'[') => {
                let start = self.pos;
                let mut items = Vec::new();
                self.flow_entries(b'[', b']', "flow sequence item", |p| {
                    let index = items.len();
                    let item = within(p.flow(depth + 1), || Step::Index(index))?;
                    p.skip_space();
                    let item = if p.at(0) == Some(b':') {
                        p.pos += 1;
                        let v = p.flow(depth + 1)?;
                        match item {
                            Node::Scalar(k) => Node::Map(Map { start: k.start, entries: vec![(k, v)] }),
                            _ => return p.err("only scalar keys are supported"),
                        }
                    } else {
                        item
                    };
                    items.push(item);
                    Ok(())
                })?;
                Node::Seq(Seq { items, flow: true, start, indent: self.col(start) })
            }
            Some(b'{') => {
                let start = self.pos;
                let mut entries = Vec::new();
                self.flow_entries(b'{', b'}', "flow mapping entry", |p| {
                    let key = match p.flow(depth + 1)? {
                        Node::Scalar(k) => k,
                        Node::Null(at) => Scalar {
                            text: Cow::Borrowed(""),
                            style: Style::Plain,
                            start: at,
                            end: at,
                            map: SrcMap::Table(vec![]),
                        },
                        _ => return p.err("only scalar keys are supported"),
                    };
                    p.skip_space();
                    let value = if p.at(0) == Some(b':') {
                        p.pos += 1;
                        within(p.flow(depth + 1), || Step::Key(key.text.to_string()))?
                    } else {
                        Node::Null(p.pos)
                    };
                    entries.push((key, value));
                    Ok(())
                })?;
                Node::Map(merge(Map { entries, start }))
            }
            Some(b'"') => Node::Scalar(self.double_quoted()?),
            Some(b'\'') => Node::Scalar(self.single_quoted()?),
            Some(b'*') => self.alias(),
            Some(b',' | b']' | b'}') | None => Node::Null(self.pos),
            _ => {
                let (s, _) = self.plain(-1, Plain::Value, true);
                if s.text.is_empty() && s.end == s.start {
                    return self.err("unexpected character in a flow collection");
                }
                Node::Scalar(s)
            }
        };
        self.remember(anchor, &n);
        Ok(n)
    }
}

/// Applies `<<` merge keys: entries of the merged mappings that the mapping does not set itself.
fn merge(mut m: Map<'_>) -> Map<'_> {
    if !m.entries.iter().any(|(k, _)| k.text == "<<" && k.style == Style::Plain) {
        return m;
    }
    let mut out = Vec::new();
    let mut merged: Vec<(Scalar, Node)> = Vec::new();
    for (k, v) in m.entries.drain(..) {
        if k.text == "<<" && k.style == Style::Plain {
            let sources: Vec<Node<'_>> = match v {
                Node::Seq(s) => s.items,
                other => vec![other],
            };
            for src in sources {
                if let Node::Map(sm) = src {
                    for (mk, mv) in sm.entries {
                        if !merged.iter().any(|(x, _)| x.text == mk.text) {
                            merged.push((mk, mv));
                        }
                    }
                }
            }
        } else {
            out.push((k, v));
        }
    }
    for (k, v) in merged {
        if !out.iter().any(|(x, _)| x.text == k.text) {
            out.push((k, v));
        }
    }
    Map { entries: out, start: m.start }
}

/// Appends the folding of `breaks` line breaks at source offset `at`: one break reads as a
/// space, `n` breaks as `n - 1` newlines.
fn push_folded(text: &mut String, table: &mut Vec<usize>, breaks: usize, at: usize) {
    if breaks <= 1 {
        text.push(' ');
        table.push(at);
    } else {
        for _ in 1..breaks {
            text.push('\n');
            table.push(at);
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Node<'_> {
        let mut d = parse(text).unwrap_or_else(|e| panic!("{e:?} in {text:?}"));
        assert_eq!(d.len(), 1, "{d:?}");
        d.remove(0)
    }

    #[test]
    fn kubernetes_container() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: prefill\n          command: [\"python3\", \"-m\", 'sglang.launch_server']\n          args:\n            - --page-size\n            - \"64\"  # pinned\n";
        let d = one(text);
        let c =
            &d.get("spec").unwrap().get("template").unwrap().get("spec").unwrap().get("containers").unwrap().items()[0];
        assert_eq!(c.get("name").unwrap().str(), Some("prefill"));
        let cmd: Vec<&str> = c.get("command").unwrap().items().iter().filter_map(Node::str).collect();
        assert_eq!(cmd, ["python3", "-m", "sglang.launch_server"]);
        let args = c.get("args").unwrap().items();
        let s = args[1].scalar().unwrap();
        assert_eq!(s.text, "64");
        assert_eq!(&text[s.start..s.end], "\"64\"");
        assert_eq!(s.map.at(0), text.find("64\"").unwrap());
    }

    #[test]
    fn block_scalars_keep_line_positions() {
        let text = "args:\n  - |\n    python3 -m sglang.launch_server \\\n      --page-size 64\n  - x\n";
        let d = one(text);
        let items = d.get("args").unwrap().items();
        let s = items[0].scalar().unwrap();
        assert_eq!(s.text, "python3 -m sglang.launch_server \\\n  --page-size 64\n");
        let i = s.text.find("64").unwrap();
        assert_eq!(&text[s.map.at(i)..s.map.at(i) + 2], "64");
        assert_eq!(items[1].str(), Some("x"));
        let f = one("a: >-\n  one\n  two\n\n  three\nb: 1\n");
        assert_eq!(f.get("a").unwrap().str(), Some("one two\nthree"));
        assert_eq!(f.get("b").unwrap().str(), Some("1"));
        // Kept chomping with only empty lines: their breaks (a string of line breaks, written).
        let k = one("a: |+\n\nb: |2+\n\n\nc: |-\n\nd: x\n");
        assert_eq!(k.get("a").unwrap().str(), Some("\n"));
        assert_eq!(k.get("b").unwrap().str(), Some("\n\n"));
        assert_eq!(k.get("c").unwrap().str(), Some(""));
        assert_eq!(k.get("d").unwrap().str(), Some("x"));
    }

    #[test]
    fn documents_anchors_merge_and_multiline_plain() {
        let d = parse("x: 1\n---\nbase: &b {image: img, command: run}\nsvc:\n  <<: *b\n  command: python3 -m a\n    --tp 2\n...\n").unwrap();
        assert_eq!(d.len(), 2);
        let svc = d[1].get("svc").unwrap();
        assert_eq!(svc.get("image").unwrap().str(), Some("img"));
        assert_eq!(svc.get("command").unwrap().str(), Some("python3 -m a --tp 2"));
    }

    #[test]
    fn quoted_escapes_and_folding() {
        let d = one("a: \"x\\ty\\\"z\\u00e9\"\nb: 'it''s\n  folded'\nc: [a, 'b', \"c\", {d: e}]\n");
        assert_eq!(d.get("a").unwrap().str(), Some("x\ty\"zé"));
        assert_eq!(d.get("b").unwrap().str(), Some("it's folded"));
        assert_eq!(d.get("c").unwrap().items().len(), 4);
    }

    #[test]
    fn compact_nested_items_and_empty_values() {
        let d = one("env:\n- name: A\n  value: \"1\"\n- name: B\n  valueFrom:\n    fieldRef: {fieldPath: status.podIP}\nempty:\nlast: z\n");
        let env = d.get("env").unwrap().items();
        assert_eq!(env.len(), 2);
        assert_eq!(env[0].get("value").unwrap().str(), Some("1"));
        assert!(matches!(d.get("empty"), Some(Node::Null(_))));
        assert_eq!(d.get("last").unwrap().str(), Some("z"));
    }

    #[test]
    fn errors_not_panics() {
        for bad in ["a: \"x", "[a, b", "a:\n  - b\n c: d", "- [\n", "a: |x\n", "{a: [}"] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "[".repeat(200);
        assert!(parse(&deep).is_err());
    }

    /// An error names the field being read: the keys and items of the collections open at
    /// it, or, past the end of a node, its last field before the error.
    #[test]
    fn errors_name_the_path_being_read() {
        let path = |text: &str| path::render(&parse(text).unwrap_err().path);
        assert_eq!(path("a:\n  b: \"x\n"), "a.b");
        assert_eq!(path("a:\n  - x\n  - c: [1, {d: \"y}]\n"), "a[1].c[1].d");
        assert_eq!(path("a:\n  b: 1\n  c: 2\n d: 3\n"), "a.c");
        assert_eq!(path("a:\n  b: 1\n\tc: 2\n"), "a.b");
        assert_eq!(path("[a, b"), "");
    }

    /// JSON's escapes of characters beyond the first plane, in two halves, make one character.
    #[test]
    fn surrogate_pairs_are_one_character() {
        assert_eq!(one("\"\\ud83d\\ude00 \\u00e9\"").str(), Some("\u{1f600} \u{e9}"));
        for bad in ["\"\\ud83d\"", "\"\\ud83d\\u0041\"", "\"\\ude00\""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tab_in_the_indentation_is_named() {
        let text = "a: 1\n\tb: 2\n";
        let e = parse(text).unwrap_err();
        assert!(e.message.contains("tab character in the indentation"), "{}", e.message);
        assert_eq!(e.offset, text.find('\t').unwrap());
    }
}
