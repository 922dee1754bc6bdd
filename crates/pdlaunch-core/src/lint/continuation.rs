//! Broken line continuations (PD055): a launch whose next command starts with a flag was meant
//! to go on there. This module tells why bash ended the command (a blank after the `\`, a
//! comment, a blank or comment line among the continued lines, a line without `\`) and writes
//! the fix that joins the lines again, moving any comment above the command.

use super::edit::Edit;
use crate::read::source::SourceFile;
use crate::rules::material::{Break, BreakKind};

/// Why the shell text `gap` between a command's last word and the next command's first word
/// ends the first command, when it is a continuation that broke: the kind, and the offset in
/// `gap` of the break. `None` when the commands are separated on purpose (`;`, `&`, `|`...), or
/// by anything else than line ends, blanks, `\` and comments.
pub(super) fn classify(gap: &str) -> Option<(BreakKind, usize)> {
    if !gap.contains('\n') {
        return None;
    }
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in gap.bytes().enumerate() {
        if b == b'\n' {
            lines.push((start, &gap[start..i]));
            start = i + 1;
        }
    }
    // The blanks before the next command's first word.
    if !gap[start..].bytes().all(|b| matches!(b, b' ' | b'\t')) {
        return None;
    }
    let blank = |s: &str| s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
    let (first_at, first) = lines[0];
    let indent = first.len() - first.trim_start_matches([' ', '\t']).len();
    let rest = first[indent..].trim_end_matches('\r');
    let at = first_at + indent;
    if rest.is_empty() {
        return Some((BreakKind::NoBackslash, first_at + first.len()));
    }
    if rest.starts_with('#') {
        return Some((BreakKind::CommentEndsLine, at));
    }
    let after = rest.strip_prefix('\\')?;
    if !after.is_empty() {
        let tail = after.trim_start_matches([' ', '\t']);
        return match tail {
            "" => Some((BreakKind::BlankAfterBackslash, at)),
            t if t.starts_with('#') && tail.len() < after.len() => Some((BreakKind::CommentAfterBackslash, at)),
            _ => None,
        };
    }
    // A proper `\` at the end of the first line: the next line must go on.
    for &(line_at, line) in &lines[1..] {
        let t = line.trim_start_matches([' ', '\t']).trim_end_matches('\r');
        if blank(line) {
            return Some((BreakKind::BlankLine, line_at));
        }
        if t.starts_with('#') {
            return Some((BreakKind::CommentLine, line_at + (line.len() - line.trim_start_matches([' ', '\t']).len())));
        }
        if t != "\\" {
            return None;
        }
    }
    None
}

/// When the text after a command's last word is a `\` and nothing else but blank lines: the
/// offset just past that `\`.
pub(super) fn ends_text(rest: &str) -> Option<usize> {
    let t = rest.trim_start_matches([' ', '\t']);
    let after = t.strip_prefix('\\')?;
    let n = rest.len() - after.len();
    after.bytes().all(|b| b.is_ascii_whitespace()).then_some(n)
}

/// The comments of a gap, in order, without the `\` that ends any of them.
fn comments(gap: &str) -> Vec<&str> {
    gap.lines()
        .filter_map(|l| l.find('#').map(|k| l[k..].trim_end().trim_end_matches('\\').trim_end()))
        .filter(|c| c.len() > 1)
        .collect()
}

/// The edits that join a broken continuation again: the gap becomes ` \` and a line break with
/// the next line's own indentation, and its comments go on lines of their own above the command,
/// indented like it. `None` when the source does not hold the gap as plain shell text (the
/// shell text is the value of a quoted string), or a comment has no line of its own to go to.
pub(super) fn fix(b: &Break, files: &[SourceFile], why: &str) -> Option<Vec<Edit>> {
    let src = &files.get(b.file)?.text;
    let (start, end) = b.gap;
    let source_gap = src.get(start..end)?;
    // The source gap is the shell gap up to the indentation of an outer layer (a YAML block).
    let squeeze = |s: &str| s.bytes().filter(|c| !matches!(c, b' ' | b'\t' | b'\r')).collect::<Vec<u8>>();
    if squeeze(source_gap) != squeeze(&b.gap_text) || source_gap.contains(['"', '\'']) {
        return None;
    }
    // The blanks before the gap go too (before a `\ ` that escapes a blank, they are outside it).
    let bytes = src.as_bytes();
    let mut start = start;
    while start > 0 && matches!(bytes[start - 1], b' ' | b'\t') && !(start > 1 && bytes[start - 2] == b'\\') {
        start -= 1;
    }
    let edit = |start: usize, end: usize, text: String| Edit { file: b.file, start, end, text, why: why.to_owned() };
    if b.kind == BreakKind::EndOfText {
        // Delete the `\` and the blanks before it.
        return Some(vec![edit(start, end, String::new())]);
    }
    let indent_of_next = &source_gap[source_gap.rfind('\n')? + 1..];
    let mut out = vec![edit(start, end, [" \\\n", indent_of_next].concat())];
    let notes = comments(&b.gap_text);
    if !notes.is_empty() {
        let line_start = src[..b.command_at].rfind('\n').map_or(0, |k| k + 1);
        let lead = &src[line_start..b.command_at];
        if !lead.bytes().all(|c| matches!(c, b' ' | b'\t')) {
            return None;
        }
        let moved: String = notes.iter().map(|c| [lead, c, "\n"].concat()).collect();
        out.insert(0, edit(line_start, line_start, moved));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_break_is_told_at_its_place() {
        let cases: &[(&str, Option<(BreakKind, usize)>)] = &[
            (" \\  \n  ", Some((BreakKind::BlankAfterBackslash, 1))),
            (" \\   # note\n  ", Some((BreakKind::CommentAfterBackslash, 1))),
            ("  # note \\\n  ", Some((BreakKind::CommentEndsLine, 2))),
            ("\n", Some((BreakKind::NoBackslash, 0))),
            (" \\\n  # note\n  ", Some((BreakKind::CommentLine, 5))),
            (" \\\n\n  ", Some((BreakKind::BlankLine, 3))),
            (" \\\n\\\n \\\n\n", Some((BreakKind::BlankLine, 8))),
            // Separated on purpose, or by something else.
            (" &\n", None),
            (" ; \n", None),
            (" \\x\n", None),
            (" \\ ", None),
            (" \\\n  x\n", None),
        ];
        for (gap, want) in cases {
            assert_eq!(classify(gap), *want, "{gap:?}");
        }
        assert_eq!(ends_text(" \\\n\n"), Some(2));
        assert_eq!(ends_text(" \\"), Some(2));
        assert_eq!(ends_text(" \\ x"), None);
        assert_eq!(comments(" \\  # a \\\n# b\n  "), ["# a", "# b"]);
    }
}
