//! A stable sort with one copy of its algorithm for the whole program.
//!
//! The standard library's sorts are fast but generic over both the element and the comparison,
//! so every call site adds its own copy of the sorting code to the WebAssembly build. This sort
//! orders indices with a merge sort that is compiled once, then moves the elements into that
//! order; what remains generic per call site is a few hundred bytes. The lists sorted here are
//! short (findings, edits, a side's instances) or sorted once (an option table), so the extra
//! allocations do not matter.
//!
//! Measured (`web/size-variants.sh sort`, 2026-12-02): with these functions' bodies replaced by
//! the standard `sort`, `sort_by` and `sort_by_key`, the app's gzipped download grows by 10,883
//! bytes (516,725 to 527,608), about 2% of it. `clippy.toml` (the core's and the app's) refuses
//! the standard slice sorts, so no call site brings them back.
//!
//! For the same reason ordered maps and sets (`BTreeMap`, `BTreeSet`, `serde_json::Map`) are
//! filled with `extend`, which inserts, rather than `collect`, which sorts its input first: five
//! such `collect`s were 5.6 KiB of the gzipped app.

use std::cmp::Ordering;

/// Sorts `v` stably by `cmp`: equal elements keep their order.
pub fn sort_by<T>(v: &mut Vec<T>, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let Some(order) = stable_order(v.len(), &mut |a, b| cmp(&v[a], &v[b]) == Ordering::Less) else {
        return;
    };
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().map(|i| slots[i].take().expect("a permutation names each index once")));
}

/// Sorts `v` stably by the key `key` gives each element.
pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` in ascending order (stably, which only matters for elements that compare equal
/// but differ).
pub fn sort<T: Ord>(v: &mut Vec<T>) {
    sort_by(v, T::cmp);
}

/// The indices `0..n` in the stable order `less` defines, or `None` when they already are in
/// that order (lists often come sorted): a bottom-up merge sort over indices, with insertion sort
/// for runs of up to 8.
fn stable_order(n: usize, less: &mut dyn FnMut(usize, usize) -> bool) -> Option<Vec<usize>> {
    const RUN: usize = 8;
    if (1..n).all(|i| !less(i, i - 1)) {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    for start in (0..n).step_by(RUN) {
        let end = (start + RUN).min(n);
        for i in start + 1..end {
            let mut j = i;
            // Only a strictly smaller element moves left, so equal ones keep their order.
            while j > start && less(order[j], order[j - 1]) {
                order.swap(j, j - 1);
                j -= 1;
            }
        }
    }
    if n <= RUN {
        return Some(order);
    }
    let mut merged = vec![0; n];
    let mut width = RUN;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut a, mut b) = (start, mid);
            for slot in &mut merged[start..end] {
                // Take from the right run only when it is strictly smaller: stability.
                let take_b = b < end && (a >= mid || less(order[b], order[a]));
                if take_b {
                    *slot = order[b];
                    b += 1;
                } else {
                    *slot = order[a];
                    a += 1;
                }
            }
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same result as the standard library's stable sort, for any length and any
        /// number of equal keys (the second field tells equal keys apart).
        #[test]
        fn agrees_with_the_standard_stable_sort(keys in proptest::collection::vec(0u8..6, 0..80)) {
            let mut mine: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut std = mine.clone();
            sort_by_key(&mut mine, |e| e.0);
            #[allow(clippy::disallowed_methods)] // the reference it is checked against
            std.sort_by_key(|e| e.0);
            prop_assert_eq!(mine, std);
        }
    }

    #[test]
    fn sorts_strings() {
        let mut v = vec!["b".to_owned(), "c".to_owned(), "a".to_owned()];
        sort(&mut v);
        assert_eq!(v, ["a", "b", "c"]);
    }
}
