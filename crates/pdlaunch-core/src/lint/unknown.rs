//! Values only known when a process starts (`${VAR}`, `$(command)`, a pod's `$(VAR)`): the
//! linter keeps them symbolic instead of guessing, and withdraws the findings that read them,
//! recording which rules were kept from checking each value (PD044 reports them).

use super::place::Position;
use super::Group;
use crate::effective::ServerView;
use crate::fast_hash::FastMap;
use crate::read::source::{SourceFile, Word};
use crate::rules::material::{Opaque, Unchecked, Unknown};
use crate::rules::Finding;

/// A symbolic value of an option: the process, the option's destination, the value as written.
struct Valued {
    label: String,
    dest: String,
    raw: String,
}

/// A symbolic value as written, and the process it is in.
#[derive(Clone)]
struct Symbol {
    label: String,
    raw: String,
}

/// The symbolic values of a group: by the options they are values of, and by the positions of
/// the values and of their options.
#[derive(Default)]
struct Symbols {
    valued: Vec<Valued>,
    at: FastMap<Position, Symbol>,
    opaque: Vec<Opaque>,
}

impl Symbols {
    /// The symbolic words of one server's arguments.
    fn collect(&mut self, label: &str, view: &ServerView, words: &[Word], files: &[SourceFile]) {
        let spec = view.spec();
        let symbol = |w: &Word| Symbol { label: label.to_owned(), raw: w.text.clone() };
        for (i, w) in words.iter().enumerate() {
            if !w.is_symbolic() {
                continue;
            }
            self.at.insert(Position::of(files, w), symbol(w));
            let valued = |dest: &str| Valued { label: label.to_owned(), dest: dest.to_owned(), raw: w.text.clone() };
            // The option this value belongs to: the nearest option token before it.
            let owner = (0..=i).rev().find(|&k| words[k].text.starts_with("--"));
            match owner {
                Some(k) if k == i && w.text.contains('=') => {
                    if let Ok(f) = spec.resolve(w.text.split('=').next().unwrap_or("")) {
                        self.valued.push(valued(&f.dest));
                    }
                }
                Some(k) if k < i => {
                    self.at.insert(Position::of(files, &words[k]), symbol(w));
                    let name = words[k].text.split('=').next().unwrap_or("");
                    match spec.resolve(name) {
                        Ok(f) if f.arity() != crate::spec::Arity::Zero && i - k <= 8 => {
                            self.valued.push(valued(&f.dest));
                        }
                        _ => self.opaque.push(Opaque { label: label.to_owned(), word: w.clone() }),
                    }
                }
                _ => self.opaque.push(Opaque { label: label.to_owned(), word: w.clone() }),
            }
        }
    }

    /// The symbolic words of the router's arguments: each the value of the word before it.
    fn collect_router(&mut self, group: &Group, files: &[SourceFile]) {
        let Some(r) = &group.router else { return };
        let spec = r.view.release.spec();
        let symbol = |w: &Word| Symbol { label: "router".into(), raw: w.text.clone() };
        for (i, w) in r.words.iter().enumerate() {
            if !w.is_symbolic() {
                continue;
            }
            self.at.insert(Position::of(files, w), symbol(w));
            if let Some(prev) = i.checked_sub(1).and_then(|p| r.words.get(p)) {
                self.at.insert(Position::of(files, prev), symbol(w));
                if let Ok(f) = spec.resolve(prev.text.split('=').next().unwrap_or("")) {
                    self.valued.push(Valued { label: "router".into(), dest: f.dest.clone(), raw: w.text.clone() });
                }
            }
        }
    }

    /// The symbolic value a finding reads: one at a place it points at, or the value of a flag
    /// it names.
    fn read_by(&self, group: &Group, f: &Finding) -> Option<Symbol> {
        f.locations.iter().find_map(|loc| {
            if let Some(s) = Position::of_origin(&loc.origin).and_then(|p| self.at.get(&p)) {
                return Some(s.clone());
            }
            let flag = loc.flag.as_deref()?;
            let dest = group
                .server(&loc.process)
                .and_then(|s| s.view.spec().resolve(flag).ok().map(|x| x.dest.clone()))
                .or_else(|| (loc.process == "router").then(|| flag.trim_start_matches('-').replace('-', "_")))?;
            let v = self.valued.iter().find(|v| v.label == loc.process && v.dest == dest)?;
            Some(Symbol { label: v.label.clone(), raw: v.raw.clone() })
        })
    }
}

/// Withdraws the findings that read a value only known at run time, and says what they were.
pub(super) fn withdraw(group: &Group, files: &[SourceFile], findings: &mut Vec<Finding>) -> Unknown {
    let mut symbols = Symbols::default();
    for s in group.servers.iter().filter(|s| s.words.iter().any(Word::is_symbolic)) {
        symbols.collect(&s.view.label, &s.view, &s.words, files);
    }
    symbols.collect_router(group, files);
    let mut unchecked: Vec<Unchecked> = Vec::new();
    if !symbols.at.is_empty() || !symbols.valued.is_empty() {
        findings.retain(|f| {
            let Some(Symbol { label, raw }) = symbols.read_by(group, f) else { return true };
            match unchecked.iter_mut().find(|u| u.label == label && u.raw == raw) {
                Some(u) => {
                    if !u.codes.contains(&f.code) {
                        u.codes.push(f.code);
                    }
                }
                None => unchecked.push(Unchecked { label, raw, codes: vec![f.code] }),
            }
            false
        });
    }
    Unknown { unchecked, opaque: symbols.opaque }
}
