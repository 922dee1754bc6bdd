//! Page indices of the test request on each side. Page 0 is never handed out (SGLang's padding
//! page); the prefill side gets consecutive pages, the decode side gets short runs in shuffled
//! order, the shape a pool takes after some churn, so that run merging and per-page descriptors
//! are both exercised.

use crate::rng::SplitMix;

/// Pages a request of `tokens` tokens needs.
pub fn pages_for(tokens: u32, page_size: u32) -> u32 {
    tokens.div_ceil(page_size)
}

/// Pool capacity (usable pages, page 0 excluded) for a request of `needed` pages: twice as many
/// plus two, so that foreign pages sit around and between the request's pages.
pub fn pool_pages(needed: u32) -> u32 {
    needed.saturating_mul(2).saturating_add(2)
}

/// `needed` consecutive pages starting at 1.
pub fn contiguous(needed: u32) -> Vec<u32> {
    (1..=needed).collect()
}

/// `needed` pages out of `1..=capacity`, as runs of 1 to 4 consecutive pages in shuffled order.
pub fn fragmented(needed: u32, capacity: u32, seed: u64) -> Vec<u32> {
    assert!(needed <= capacity, "pool too small for the request");
    let mut rng = SplitMix::new(seed);
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut p = 1u32;
    while p <= capacity {
        let len = (1 + rng.below(4) as u32).min(capacity - p + 1);
        runs.push((p, len));
        p += len;
    }
    for i in (1..runs.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        runs.swap(i, j);
    }
    runs.into_iter().flat_map(|(s, l)| s..s + l).take(needed as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmented_pages_are_distinct_and_skip_padding() {
        let v = fragmented(40, pool_pages(40), 3);
        assert_eq!(v.len(), 40);
        let mut s = v.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 40);
        assert!(v.iter().all(|&p| p >= 1 && p <= pool_pages(40)));
        // Not one long run.
        assert!(v.windows(2).any(|w| w[1] != w[0] + 1));
    }

    #[test]
    fn counts() {
        assert_eq!(pages_for(40, 16), 3);
        assert_eq!(pages_for(64, 64), 1);
        assert_eq!(contiguous(3), vec![1, 2, 3]);
    }
}
