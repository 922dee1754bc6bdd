//! Placing findings at source places: each location of a finding becomes a span of a file (a
//! word's, or the command that lacks a flag), and findings of one rule at the very same places
//! are merged into one with a count.

use std::sync::Arc;

use super::launch::Launch;
use super::{Group, LintFinding, Place};
use crate::fast_hash::FastMap;
use crate::plan::Origin;
use crate::read::source::{SourceFile, Word};
use crate::rules::Finding;

/// Where a word starts: its file's name, and the 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Position {
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
}

impl Position {
    /// Where `w` starts.
    pub fn of(files: &[SourceFile], w: &Word) -> Position {
        let (line, column) = files[w.file].position(w.start);
        Position { file: files[w.file].shared_name().clone(), line, column }
    }
    /// The position an origin names, when it is a place in a file.
    pub fn of_origin(o: &Origin) -> Option<Position> {
        match o {
            Origin::Source { file, line, column } => {
                Some(Position { file: file.clone(), line: *line, column: *column })
            }
            _ => None,
        }
    }
}

/// Where a group's processes and words are, read once for all its findings (a finding may name
/// every server of a large group).
pub(super) struct Locator<'g> {
    group: &'g Group,
    files: &'g [SourceFile],
    /// The launch of each process label (`router` for the router).
    launches: FastMap<&'g str, usize>,
    /// The end of the word that starts at each position (the last such word, as a later one
    /// repeats an earlier one's text), read at the first question.
    ends: std::cell::OnceCell<FastMap<Position, (u32, u32)>>,
}

impl<'g> Locator<'g> {
    pub fn new(group: &'g Group, files: &'g [SourceFile]) -> Locator<'g> {
        let mut launches: FastMap<&str, usize> = FastMap::default();
        for s in &group.servers {
            launches.entry(s.view.label.as_str()).or_insert(s.launch);
        }
        if let Some(r) = &group.router {
            launches.insert("router", r.launch);
        }
        Locator { group, files, launches, ends: std::cell::OnceCell::new() }
    }

    /// Where the word that starts at `at` ends.
    fn end(&self, at: &Position) -> Option<(u32, u32)> {
        let ends = self.ends.get_or_init(|| {
            let (g, files) = (self.group, self.files);
            let words =
                g.servers.iter().flat_map(|s| s.words.iter()).chain(g.router.iter().flat_map(|r| r.words.iter()));
            words.map(|w| (Position::of(files, w), files[w.file].position(w.end))).collect()
        });
        ends.get(at).copied()
    }

    /// The places of a finding's locations, each once.
    pub fn places(&self, f: &Finding, launches: &[Launch]) -> Vec<Place> {
        let files = self.files;
        let mut out: Vec<Place> = Vec::new();
        for loc in &f.locations {
            let place = match &loc.origin {
                Origin::Source { file, line, column } => {
                    let at = Position { file: file.clone(), line: *line, column: *column };
                    let (end_line, end_column) = self.end(&at).unwrap_or((*line, *column + 1));
                    Place {
                        process: loc.process.clone(),
                        flag: loc.flag.clone(),
                        file: file.to_string(),
                        line: *line,
                        column: *column,
                        end_line,
                        end_column,
                        missing: false,
                    }
                }
                Origin::Default | Origin::Derived | Origin::Field { .. } => {
                    let Some(l) = self.launches.get(loc.process.as_str()).map(|&k| &launches[k]) else { continue };
                    let file = &files[l.file];
                    let (line, column) = file.position(l.at);
                    let (end_line, end_column) = file.position(l.at + l.entry.split(' ').next().map_or(1, str::len));
                    Place {
                        process: loc.process.clone(),
                        flag: loc.flag.clone(),
                        file: file.name.clone(),
                        line,
                        column,
                        end_line,
                        end_column,
                        missing: loc.flag.is_some() && loc.origin == Origin::Default,
                    }
                }
            };
            out.push(place);
        }
        crate::fast_hash::unique_by(out, |p| crate::fast_hash::hash_one(p), PartialEq::eq)
    }
}

/// What makes two findings the same for [`merge_same_places`]: the rule, and each place but the
/// process it names.
#[derive(PartialEq, Eq, Hash)]
struct SamePlaces<'a> {
    code: &'a str,
    places: Vec<Spot<'a>>,
}

/// A place without the process it names.
#[derive(PartialEq, Eq, Hash)]
struct Spot<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    missing: bool,
    flag: Option<&'a str>,
}

impl<'a> SamePlaces<'a> {
    fn of(f: &'a LintFinding) -> SamePlaces<'a> {
        let places = f.places.iter().map(|p| Spot {
            file: p.file.as_str(),
            line: p.line,
            column: p.column,
            end_line: p.end_line,
            end_column: p.end_column,
            missing: p.missing,
            flag: p.flag.as_deref(),
        });
        SamePlaces { code: f.finding.code, places: places.collect() }
    }
}

/// Findings of one rule at the very same places are one finding: servers that one written
/// command starts (a recipe's workers, a template's pods) are compared pair by pair, and every
/// pair points at the same lines, which one edit fixes. The first stays and says how many more
/// it stands for.
pub(super) fn merge_same_places(found: Vec<LintFinding>) -> Vec<LintFinding> {
    let mut first: FastMap<u64, Vec<usize>> = FastMap::default();
    let mut more = vec![0usize; found.len()];
    let mut keep = vec![true; found.len()];
    for (i, f) in found.iter().enumerate() {
        if f.places.is_empty() {
            continue;
        }
        let k = SamePlaces::of(f);
        let seen = first.entry(crate::fast_hash::hash_one(&k)).or_default();
        match seen.iter().find(|&&j| SamePlaces::of(&found[j]) == k) {
            Some(&j) => {
                more[j] += 1;
                keep[i] = false;
            }
            None => seen.push(i),
        }
    }
    let mut out = Vec::with_capacity(found.len());
    for (i, mut f) in found.into_iter().enumerate() {
        if keep[i] {
            if more[i] > 0 {
                f.finding.message.push_str(&format!(" (and {} more like it at the same places)", more[i]));
            }
            out.push(f);
        }
    }
    out
}
