//! Fast lookup tables for keys that never come from an adversary in a way that matters:
//! [`NameIndex`] for the name tables built once from embedded data (option spellings,
//! destinations), which every token and every rule reads, and [`FastMap`], a `HashMap` with the
//! `rustc-hash` crate's small non-cryptographic hasher, for other keys (SipHash dominated those
//! lookups).

use std::hash::BuildHasher;

/// A `HashMap` with the `rustc-hash` crate's FxHash, the multiply-rotate hash rustc uses
/// internally.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// The FxHash of a value.
pub fn hash_one<T: std::hash::Hash>(value: T) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(value)
}

/// The items in order, each kept unless an earlier one is the `same`. Up to 64 kept items they
/// are compared one by one; past that (a finding naming thousands of servers), through a table
/// of their `hash`es, keyed by the hash alone so that one table type serves every kind of item.
pub fn unique_by<T>(
    items: impl IntoIterator<Item = T>,
    hash: impl Fn(&T) -> u64,
    same: impl Fn(&T, &T) -> bool,
) -> Vec<T> {
    const SCAN: usize = 64;
    let mut out: Vec<T> = Vec::new();
    let mut index: Option<FastMap<u64, Vec<usize>>> = None;
    for item in items {
        let seen = match &index {
            None => out.iter().any(|o| same(o, &item)),
            Some(map) => map.get(&hash(&item)).is_some_and(|v| v.iter().any(|&i| same(&out[i], &item))),
        };
        if seen {
            continue;
        }
        if index.is_none() && out.len() >= SCAN {
            let mut map: FastMap<u64, Vec<usize>> = FastMap::default();
            for (i, o) in out.iter().enumerate() {
                map.entry(hash(o)).or_default().push(i);
            }
            index = Some(map);
        }
        if let Some(map) = &mut index {
            map.entry(hash(&item)).or_default().push(out.len());
        }
        out.push(item);
    }
    out
}

/// Names (option spellings, destinations) to values, for the lookups every option token and
/// every value a rule reads make: open addressing over a power-of-two table, hashing a name by
/// its length and its first and last eight bytes. A general map's hashing and probing cost more
/// than the rest of such a lookup.
#[derive(Debug)]
pub(crate) struct NameIndex<V> {
    entries: Vec<(String, V)>,
    /// 1 + an index into `entries`, or 0 for a free slot; at most half are taken.
    slots: Vec<u32>,
    /// 64 minus the log2 of `slots.len()`: the hash's top bits pick the first slot.
    shift: u32,
}

impl<V> NameIndex<V> {
    /// Indexes `entries`, whose names are distinct.
    pub(crate) fn new(entries: Vec<(String, V)>) -> NameIndex<V> {
        let size = (entries.len() * 2).next_power_of_two().max(2);
        let mut index = NameIndex { entries, slots: vec![0; size], shift: 64 - size.trailing_zeros() };
        for (k, (name, _)) in index.entries.iter().enumerate() {
            let mut i = index.first_slot(name);
            while index.slots[i] != 0 {
                i = (i + 1) & (size - 1);
            }
            index.slots[i] = u32::try_from(k + 1).expect("fewer than 2^32 names");
        }
        index
    }

    fn first_slot(&self, name: &str) -> usize {
        let b = name.as_bytes();
        let n = b.len();
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        let half = |i: usize| u64::from(u32::from_le_bytes(b[i..i + 4].try_into().expect("four bytes")));
        let (head, tail) = match n {
            8.. => (word(0), word(n - 8)),
            4..=7 => (half(0), half(n - 4)),
            1..=3 => (u64::from(b[0]) | u64::from(b[n / 2]) << 8, u64::from(b[n - 1])),
            0 => (0, 0),
        };
        let h = (head.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ tail.rotate_left(29) ^ n as u64)
            .wrapping_mul(0xd6e8_feb8_6659_fd93);
        (h >> self.shift) as usize
    }

    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<&V> {
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(name);
        loop {
            let taken = self.slots[i] as usize;
            let (k, v) = &self.entries[taken.checked_sub(1)?];
            if k == name {
                return Some(v);
            }
            i = (i + 1) & mask;
        }
    }
}
