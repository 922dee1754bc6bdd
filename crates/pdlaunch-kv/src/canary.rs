//! Canaries: every slice of the request carries a self-describing header and a keyed payload,
//! and all other memory carries a position-dependent fill pattern, so that a wrong byte says
//! what it is.
//!
//! Slice bytes: `0..4` magic `KVcy`, `4..8` token (u32 LE), `8..10` layer (u16), `10..12` global
//! KV head (u16), `12` buffer kind (0 K, 1 V, 2 latent), `13` the element type the slice is
//! encoded in, `14..16` a keyed check of the first 14 bytes; then one keyed 64-bit word per 8
//! bytes (SplitMix64 of key, coordinates, element type and word index), cut at the slice's end.
//! Replicated heads carry identical slices. Because the element type is part of the content, a
//! slice written as bf16 never passes for the fp8 slice the decode expects, even when a transfer
//! copies exactly as many bytes as the decode's row holds.
//!
//! Fill patterns repeat every 8 bytes, aligned to the allocation's start: `Guard` outside the
//! request's pages (a change there is a stray write), `Stale` in the decode's request pages
//! before the transfer (still there means never written), `Source` in prefill memory outside
//! the request (found on the decode means data was read from the wrong prefill place).

use crate::dtype::KvDtype;
use crate::layout::BufKind;
use crate::rng::mix64;
use crate::truth::Coord;

/// Magic at the start of every slice.
pub const MAGIC: [u8; 4] = *b"KVcy";
/// Header bytes.
pub const HEADER: usize = 16;

/// The keyed canary generator of one run.
#[derive(Clone, Copy, Debug)]
pub struct Canary {
    key: u64,
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

impl Canary {
    /// A generator for `key` (the run's seed).
    pub fn new(key: u64) -> Canary {
        Canary { key }
    }

    fn check(&self, first14: &[u8]) -> u16 {
        (mix64(self.key ^ word(&first14[..8]) ^ mix64(word(&first14[8..14]))) & 0xFFFF) as u16
    }

    /// The 16 header bytes of `c` encoded as `dtype`.
    pub fn header(&self, c: &Coord, dtype: KvDtype) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..4].copy_from_slice(&MAGIC);
        h[4..8].copy_from_slice(&c.token.to_le_bytes());
        h[8..10].copy_from_slice(&(c.layer as u16).to_le_bytes());
        h[10..12].copy_from_slice(&(c.head as u16).to_le_bytes());
        h[12] = c.kind.code();
        h[13] = dtype.code();
        let check = self.check(&h[..14]);
        h[14..16].copy_from_slice(&check.to_le_bytes());
        h
    }

    fn seed(&self, c: &Coord, dtype: KvDtype) -> u64 {
        let coords = u64::from(c.token)
            | u64::from(c.layer) << 32
            | u64::from(c.kind.code()) << 48
            | u64::from(dtype.code()) << 56;
        mix64(self.key ^ mix64(coords) ^ u64::from(c.head))
    }

    /// Writes the slice of `c`, encoded as `dtype`, into `out` (its length is the slice's).
    pub fn write(&self, c: &Coord, dtype: KvDtype, out: &mut [u8]) {
        let h = self.header(c, dtype);
        let n = out.len().min(HEADER);
        out[..n].copy_from_slice(&h[..n]);
        if out.len() > HEADER {
            let seed = self.seed(c, dtype);
            for (i, chunk) in out[HEADER..].chunks_mut(8).enumerate() {
                let w = mix64(seed.wrapping_add(i as u64)).to_le_bytes();
                chunk.copy_from_slice(&w[..chunk.len()]);
            }
        }
    }

    /// True when `bytes` are exactly the slice of `c` encoded as `dtype`.
    pub fn matches(&self, c: &Coord, dtype: KvDtype, bytes: &[u8]) -> bool {
        let h = self.header(c, dtype);
        let n = bytes.len().min(HEADER);
        if bytes[..n] != h[..n] {
            return false;
        }
        if bytes.len() > HEADER {
            let seed = self.seed(c, dtype);
            for (i, chunk) in bytes[HEADER..].chunks(8).enumerate() {
                let w = mix64(seed.wrapping_add(i as u64)).to_le_bytes();
                if chunk != &w[..chunk.len()] {
                    return false;
                }
            }
        }
        true
    }

    /// The coordinates and element type in a valid header at the start of `bytes`.
    pub fn read_header(&self, bytes: &[u8]) -> Option<(Coord, KvDtype)> {
        if bytes.len() < HEADER || bytes[..4] != MAGIC {
            return None;
        }
        let check = u16::from_le_bytes([bytes[14], bytes[15]]);
        if check != self.check(&bytes[..14]) {
            return None;
        }
        let c = Coord {
            token: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            layer: u32::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            head: u32::from(u16::from_le_bytes([bytes[10], bytes[11]])),
            kind: BufKind::from_code(bytes[12])?,
        };
        Some((c, KvDtype::from_code(bytes[13])?))
    }

    /// The first valid header inside `bytes` after its start, with its offset.
    pub fn find_header(&self, bytes: &[u8]) -> Option<(usize, Coord)> {
        (1..bytes.len().saturating_sub(HEADER - 1))
            .filter(|&i| bytes[i..i + 4] == MAGIC)
            .find_map(|i| self.read_header(&bytes[i..]).map(|(c, _)| (i, c)))
    }
}

/// A fill pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Outside the request's pages.
    Guard,
    /// The decode's request pages before the transfer.
    Stale,
    /// Prefill memory outside the request.
    Source,
}

impl Fill {
    /// The 8 pattern bytes (byte `o` of an allocation holds `pattern[o % 8]`).
    pub fn pattern(self) -> [u8; 8] {
        match self {
            Fill::Guard => [0xD6, b'G', b'U', b'A', b'R', b'D', b'!', 0xA5],
            Fill::Stale => [0x5E, b'S', b'T', b'A', b'L', b'E', b'?', 0x5A],
            Fill::Source => [0xF1, b'P', b'F', b'I', b'L', b'L', b'.', 0x3C],
        }
    }

    /// Fills `buf`, which starts at byte `base` of its allocation.
    pub fn fill(self, buf: &mut [u8], base: u64) {
        let p = self.pattern();
        let head = ((8 - base % 8) % 8).min(buf.len() as u64) as usize;
        for (i, b) in buf[..head].iter_mut().enumerate() {
            *b = p[((base + i as u64) % 8) as usize];
        }
        let mut chunks = buf[head..].chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&p);
        }
        for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
            *b = p[i];
        }
    }

    /// The byte ranges (relative to `buf`) that differ from the pattern, with the number of
    /// differing bytes. `buf` starts at byte `base` of its allocation.
    pub fn mismatches(self, buf: &[u8], base: u64) -> (u64, Vec<std::ops::Range<usize>>) {
        let p = self.pattern();
        let mut bad = 0u64;
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        let mut note = |i: usize| {
            bad += 1;
            match runs.last_mut() {
                Some(r) if r.end == i => r.end = i + 1,
                _ => runs.push(i..i + 1),
            }
        };
        let head = ((8 - base % 8) % 8).min(buf.len() as u64) as usize;
        for i in 0..head {
            if buf[i] != p[((base + i as u64) % 8) as usize] {
                note(i);
            }
        }
        let mut i = head;
        while i + 8 <= buf.len() {
            if buf[i..i + 8] != p {
                for k in 0..8 {
                    if buf[i + k] != p[k] {
                        note(i + k);
                    }
                }
            }
            i += 8;
        }
        for k in 0..buf.len() - i {
            if buf[i + k] != p[k] {
                note(i + k);
            }
        }
        (bad, runs)
    }

    /// True when all of `buf` holds the pattern.
    pub fn holds(self, buf: &[u8], base: u64) -> bool {
        let p = self.pattern();
        buf.iter().enumerate().all(|(i, &b)| b == p[((base + i as u64) % 8) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(token: u32) -> Coord {
        Coord { layer: 3, kind: BufKind::V, token, head: 5 }
    }

    #[test]
    fn slices_describe_themselves() {
        let k = Canary::new(42);
        let bf = KvDtype::Bf16;
        let mut b = vec![0u8; 40];
        k.write(&c(17), bf, &mut b);
        assert_eq!(k.read_header(&b), Some((c(17), bf)));
        assert!(k.matches(&c(17), bf, &b));
        assert!(!k.matches(&c(18), bf, &b));
        // The same slice encoded as another type differs, even in a prefix.
        assert!(!k.matches(&c(17), KvDtype::Fp8E4m3, &b[..32]));
        // Another key does not accept the header.
        assert_eq!(Canary::new(43).read_header(&b), None);
        // A flipped payload byte breaks the match but not the header.
        b[30] ^= 1;
        assert!(!k.matches(&c(17), bf, &b));
        assert_eq!(k.read_header(&b), Some((c(17), bf)));
    }

    #[test]
    fn header_found_at_an_offset() {
        let k = Canary::new(1);
        let mut b = vec![0u8; 64];
        k.write(&c(2), KvDtype::Fp16, &mut b[24..]);
        assert_eq!(k.find_header(&b), Some((24, c(2))));
    }

    #[test]
    fn short_slices_still_compare() {
        let k = Canary::new(9);
        let mut b = vec![0u8; 8];
        k.write(&c(1), KvDtype::Fp8E5m2, &mut b);
        assert!(k.matches(&c(1), KvDtype::Fp8E5m2, &b));
        assert!(k.read_header(&b).is_none());
    }

    #[test]
    fn fill_patterns_are_position_dependent() {
        let mut b = vec![0u8; 29];
        Fill::Guard.fill(&mut b, 3);
        assert!(Fill::Guard.holds(&b, 3));
        assert!(!Fill::Guard.holds(&b, 4));
        assert_eq!(Fill::Guard.mismatches(&b, 3), (0, vec![]));
        b[10] = 0;
        b[11] = 0;
        b[20] = 0;
        let (n, runs) = Fill::Guard.mismatches(&b, 3);
        assert_eq!(n, 3);
        assert_eq!(runs, vec![10..12, 20..21]);
    }
}
