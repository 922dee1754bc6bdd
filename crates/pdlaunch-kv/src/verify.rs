//! Reads the decode pools after a transfer and compares them with the ground truth: each
//! expected slice is classified, every byte outside the request's pages must still hold the
//! guard pattern, and the findings are summarised with coordinates and a diagnosis.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::canary::{Canary, Fill};
use crate::dtype::KvDtype;
use crate::layout::SideLayout;
use crate::truth::{Coord, Slice};

/// What an expected slice holds after the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Exactly the expected slice.
    Ok,
    /// Still the stale pattern: never written.
    Missing,
    /// A valid slice of other coordinates.
    Misplaced,
    /// Prefill memory from outside the request.
    Unrequested,
    /// The right slice, encoded in another element type than the decode reads.
    WrongDtype,
    /// Anything else (torn, shifted, or foreign bytes).
    Corrupt,
}

/// One wrong slice, with where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceError {
    /// Decode rank label (`pp0/tp1`).
    pub rank: String,
    /// Expected content.
    pub expected: Coord,
    /// Decode page and slot of the token.
    pub page: u32,
    /// Slot within the page.
    pub slot: u32,
    /// Byte offset in the rank's allocation.
    pub offset: u64,
    /// Classification.
    pub class: Class,
    /// The slice found instead, when one was recognisable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<Coord>,
    /// A short explanation.
    pub detail: String,
}

/// A run of bytes outside the request's pages that no longer holds the guard pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stray {
    /// Decode rank label.
    pub rank: String,
    /// Byte offset in the rank's allocation.
    pub offset: u64,
    /// Bytes changed in the run.
    pub len: u64,
    /// Buffer, page and slot where it starts (`None` in alignment padding).
    pub place: Option<String>,
    /// A slice whose header starts the run, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<Coord>,
}

/// Verification of one transfer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Verification {
    /// Expected slices.
    pub slices: u64,
    /// Correct slices.
    pub ok: u64,
    /// Never written.
    pub missing: u64,
    /// Holding another slice.
    pub misplaced: u64,
    /// Holding prefill bytes from outside the request.
    pub unrequested: u64,
    /// Holding the right slice encoded in another element type.
    pub wrong_dtype: u64,
    /// Holding anything else.
    pub corrupt: u64,
    /// Bytes changed outside the request's pages.
    pub stray_bytes: u64,
    /// Runs of such bytes.
    pub stray_runs: u64,
    /// The first wrong slices.
    pub first_errors: Vec<SliceError>,
    /// The first stray runs.
    pub first_strays: Vec<Stray>,
    /// Wrong slices per layer.
    pub bad_by_layer: BTreeMap<u32, u64>,
    /// Wrong slices per decode page.
    pub bad_by_page: BTreeMap<u32, u64>,
    /// Wrong slices per decode rank.
    pub bad_by_rank: BTreeMap<String, u64>,
    /// Likely causes, most specific first.
    pub diagnosis: Vec<String>,
    /// Class of each expected slice, in the order given (for per-pair summaries).
    #[serde(skip)]
    pub classes: Vec<Class>,
}

impl Verification {
    /// True when every slice is right and nothing outside the request changed.
    pub fn is_clean(&self) -> bool {
        self.ok == self.slices && self.stray_bytes == 0
    }
    /// Wrong slices.
    pub fn bad(&self) -> u64 {
        self.slices - self.ok
    }
    /// One line.
    pub fn summary(&self) -> String {
        if self.is_clean() {
            return format!("{} of {} slices in place, no stray writes", self.ok, self.slices);
        }
        let mut parts = vec![format!("{} of {} slices in place", self.ok, self.slices)];
        for (n, what) in [
            (self.missing, "never written"),
            (self.misplaced, "misplaced"),
            (self.unrequested, "from outside the request"),
            (self.wrong_dtype, "in another element type"),
            (self.corrupt, "corrupt"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if self.stray_bytes > 0 {
            parts.push(format!(
                "{} stray bytes in {} runs outside the request's pages",
                self.stray_bytes, self.stray_runs
            ));
        }
        parts.join(", ")
    }
}

const KEEP_ERRORS: usize = 12;
const KEEP_STRAYS: usize = 8;

/// Verifies `pools` (one per decode rank of `decode`) against `expected` (the ground truth on
/// `decode`), for a request on `pages` (the decode's own page indices).
pub fn verify(
    canary: &Canary,
    decode: &SideLayout,
    pages: &[u32],
    expected: &[Slice],
    pools: &[Vec<u8>],
) -> Verification {
    let mut v = Verification { slices: expected.len() as u64, ..Default::default() };
    v.classes.reserve(expected.len());
    let mut deltas = Deltas::default();
    for s in expected {
        let rank = &decode.ranks[s.rank as usize];
        let bytes = &pools[s.rank as usize][s.offset as usize..s.offset as usize + s.len as usize];
        let (class, found, detail) = classify(canary, decode.config.dtype, s, bytes);
        v.classes.push(class);
        match class {
            Class::Ok => {
                v.ok += 1;
                continue;
            }
            Class::Missing => v.missing += 1,
            Class::Misplaced => v.misplaced += 1,
            Class::Unrequested => v.unrequested += 1,
            Class::WrongDtype => v.wrong_dtype += 1,
            Class::Corrupt => v.corrupt += 1,
        }
        let place = rank.locate(s.offset);
        *v.bad_by_layer.entry(s.coord.layer).or_default() += 1;
        *v.bad_by_page.entry(place.page).or_default() += 1;
        *v.bad_by_rank.entry(rank.label()).or_default() += 1;
        if let Some(f) = found {
            deltas.note(&s.coord, &f);
        }
        if v.first_errors.len() < KEEP_ERRORS {
            v.first_errors.push(SliceError {
                rank: rank.label(),
                expected: s.coord,
                page: place.page,
                slot: place.slot,
                offset: s.offset,
                class,
                found,
                detail,
            });
        }
    }
    strays(canary, decode, pages, pools, &mut v);
    v.diagnosis = diagnose(&v, &deltas, decode);
    v
}

fn classify(canary: &Canary, dtype: KvDtype, s: &Slice, bytes: &[u8]) -> (Class, Option<Coord>, String) {
    if canary.matches(&s.coord, dtype, bytes) {
        return (Class::Ok, None, String::new());
    }
    if Fill::Stale.holds(bytes, s.offset) || Fill::Guard.holds(bytes, s.offset) {
        return (Class::Missing, None, "still holds the pre-transfer pattern".into());
    }
    if let Some((found, written)) = canary.read_header(bytes) {
        if found == s.coord && written != dtype {
            return (Class::WrongDtype, Some(found), format!("written as {written}, read as {dtype}"));
        }
        if found == s.coord {
            return (Class::Corrupt, Some(found), "right header, wrong payload (partial or torn write)".into());
        }
        return (Class::Misplaced, Some(found), format!("holds {found}"));
    }
    if Fill::Source.holds(bytes, s.offset) {
        return (Class::Unrequested, None, "holds prefill memory from outside the request".into());
    }
    if let Some((at, found)) = canary.find_header(bytes) {
        return (Class::Corrupt, Some(found), format!("shifted: a header of {found} starts {at} bytes into the slice"));
    }
    (Class::Corrupt, None, "unrecognised bytes".into())
}

/// Checks the guard pattern on every page outside the request, and on alignment padding.
fn strays(canary: &Canary, decode: &SideLayout, pages: &[u32], pools: &[Vec<u8>], v: &mut Verification) {
    let request: BTreeSet<u32> = pages.iter().copied().collect();
    for (r, rank) in decode.ranks.iter().enumerate() {
        let pool = &pools[r];
        let item = rank.item_len();
        let mut regions: Vec<(u64, u64)> = Vec::new();
        let mut cursor = 0u64;
        for buf in &rank.buffers {
            if buf.offset > cursor {
                regions.push((cursor, buf.offset));
            }
            for page in 0..=rank.pages {
                if !request.contains(&page) {
                    let start = buf.offset + u64::from(page) * item;
                    regions.push((start, start + item));
                }
            }
            cursor = buf.offset + buf.len;
        }
        if rank.pool_bytes > cursor {
            regions.push((cursor, rank.pool_bytes));
        }
        for (a, b) in regions {
            let (bad, runs) = Fill::Guard.mismatches(&pool[a as usize..b as usize], a);
            if bad == 0 {
                continue;
            }
            v.stray_bytes += bad;
            v.stray_runs += runs.len() as u64;
            for run in runs {
                if v.first_strays.len() >= KEEP_STRAYS {
                    break;
                }
                let offset = a + run.start as u64;
                let p = rank.locate(offset);
                let place = p.buffer.map(|i| {
                    let b = &rank.buffers[i];
                    format!("{} layer {} page {} slot {}", b.kind.name(), b.layer, p.page, p.slot)
                });
                let found =
                    canary.read_header(&pool[offset as usize..(offset as usize + 16).min(pool.len())]).map(|(c, _)| c);
                v.first_strays.push(Stray { rank: rank.label(), offset, len: run.len() as u64, place, found });
            }
        }
    }
}

/// How found slices differ from expected ones.
#[derive(Default)]
struct Deltas {
    kind_only: u64,
    token: u64,
    head_only: u64,
    layer_only: u64,
    other: u64,
    example_token: Option<(u32, u32)>,
    example_head: Option<(u32, u32)>,
    example_layer: Option<(u32, u32)>,
}

impl Deltas {
    fn note(&mut self, want: &Coord, got: &Coord) {
        let same_tok = want.token == got.token;
        let same_layer = want.layer == got.layer;
        let same_head = want.head == got.head;
        let same_kind = want.kind == got.kind;
        if same_tok && same_layer && same_head && !same_kind {
            self.kind_only += 1;
        } else if !same_tok {
            self.token += 1;
            self.example_token.get_or_insert((want.token, got.token));
        } else if same_layer && same_kind && !same_head {
            self.head_only += 1;
            self.example_head.get_or_insert((want.head, got.head));
        } else if same_head && same_kind && !same_layer {
            self.layer_only += 1;
            self.example_layer.get_or_insert((want.layer, got.layer));
        } else {
            self.other += 1;
        }
    }
}

fn diagnose(v: &Verification, d: &Deltas, decode: &SideLayout) -> Vec<String> {
    let mut out = Vec::new();
    if v.is_clean() {
        return out;
    }
    if d.kind_only > 0 && d.kind_only >= (d.token + d.head_only + d.layer_only + d.other) {
        out.push(format!(
            "K/V buffer order: {} slices hold the other buffer's data for the same token, layer and head",
            d.kind_only
        ));
    }
    if d.token > 0 {
        let (w, g) = d.example_token.unwrap_or_default();
        out.push(format!(
            "tokens land in other slots (e.g. token {w}'s slot holds token {g}): the page size or row stride the sender used differs from the decode's layout"
        ));
    }
    if d.head_only > 0 {
        let (w, g) = d.example_head.unwrap_or_default();
        out.push(format!(
            "heads land in other positions (e.g. head {w}'s place holds head {g}): head slicing or TP rank mapping"
        ));
    }
    if d.layer_only > 0 {
        let (w, g) = d.example_layer.unwrap_or_default();
        out.push(format!(
            "layers are paired wrongly (e.g. layer {w} holds layer {g}): PP stage or layer-pointer slicing"
        ));
    }
    if v.corrupt > 0 && v.first_errors.iter().any(|e| e.detail.starts_with("shifted")) {
        out.push(
            "slices are shifted inside token rows: the row stride differs (KV dtype width or heads per rank)".into(),
        );
    }
    let silent: Vec<String> = decode
        .ranks
        .iter()
        .filter(|r| {
            let per_rank = v.slices / decode.ranks.len() as u64;
            v.bad_by_rank.get(&r.label()).is_some_and(|&n| n == per_rank) && v.missing >= per_rank
        })
        .map(|r| r.label())
        .collect();
    if !silent.is_empty() && silent.len() < decode.ranks.len() {
        out.push(format!(
            "decode rank(s) {} received nothing: the rank mapping covers fewer decode ranks than exist (decode TP)",
            silent.join(", ")
        ));
    }
    if v.missing > 0 && v.stray_bytes > 0 {
        out.push("writes landed outside the request's pages while request slots stayed empty: the sender's page or item size differs from the decode's".into());
    } else if v.stray_bytes > 0 {
        out.push("bytes outside the request's pages were overwritten".into());
    }
    if v.wrong_dtype > 0 {
        let e =
            v.first_errors.iter().find(|e| e.class == Class::WrongDtype).map(|e| e.detail.clone()).unwrap_or_default();
        out.push(format!("{} slices arrive in another element type ({e}): the KV dtypes differ", v.wrong_dtype));
    }
    if v.unrequested > 0 {
        out.push("some slots hold prefill memory from outside the request: source offsets are wrong".into());
    }
    if out.is_empty() {
        out.push(v.summary());
    }
    out
}
