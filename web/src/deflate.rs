//! A small DEFLATE encoder (RFC 1951) for the link fragment: one block of fixed Huffman codes
//! over greedy LZ77 matches. Its output is 17-24% longer than `miniz_oxide`'s best level on the
//! examples' documents (a link of 855 characters instead of 691 for the largest), and the app is
//! 8 KB smaller gzipped without that encoder. Any inflater reads its output; the app reads links
//! with `miniz_oxide`'s, which also reads links made before this encoder.

/// The LZ77 window, the largest distance DEFLATE can code.
const WINDOW: usize = 32 * 1024;
/// Shortest and longest match DEFLATE can code.
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
/// How many earlier places with the same first three bytes are tried per position.
const MAX_CHAIN: usize = 64;
/// Hash table size for three-byte prefixes.
const HASH_BITS: u32 = 12;

/// Length codes 257..=285: the shortest length of each, and its extra bits.
const LENGTH_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Distance codes 0..=29: the shortest distance of each, and its extra bits.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/// Bits written least significant first, as DEFLATE packs them.
struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= value << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code: its bits go most significant first.
    fn code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    /// A literal byte or a length symbol (256..=287) in the fixed literal/length code.
    fn symbol(&mut self, s: u32) {
        match s {
            0..=143 => self.code(0x30 + s, 8),
            144..=255 => self.code(0x190 + s - 144, 9),
            256..=279 => self.code(s - 256, 7),
            _ => self.code(0xc0 + s - 280, 8),
        }
    }

    fn copy(&mut self, len: usize, dist: usize) {
        let l = LENGTH_BASE.iter().rposition(|&b| usize::from(b) <= len).unwrap_or(0);
        self.symbol(257 + l as u32);
        self.put((len - usize::from(LENGTH_BASE[l])) as u32, u32::from(LENGTH_EXTRA[l]));
        let d = DIST_BASE.iter().rposition(|&b| usize::from(b) <= dist).unwrap_or(0);
        self.code(d as u32, 5);
        self.put((dist - usize::from(DIST_BASE[d])) as u32, u32::from(DIST_EXTRA[d]));
    }
}

fn hash(b: &[u8]) -> usize {
    let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// `data` as raw DEFLATE (no zlib or gzip wrapper).
pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut bits = Bits { out: Vec::with_capacity(data.len() / 2 + 16), acc: 0, n: 0 };
    bits.put(1, 1); // the final block
    bits.put(1, 2); // fixed Huffman codes
                    // The latest position of each prefix hash, and for each position the previous one with its
                    // hash (positions are stored plus one, so zero means none).
    let mut head = vec![0usize; 1 << HASH_BITS];
    let mut prev = vec![0usize; data.len()];
    let insert = |i: usize, head: &mut [usize], prev: &mut [usize]| {
        if i + MIN_MATCH <= data.len() {
            let h = hash(&data[i..]);
            prev[i] = head[h];
            head[h] = i + 1;
        }
    };
    let mut i = 0;
    while i < data.len() {
        let (mut best_len, mut best_dist) = (0, 0);
        if i + MIN_MATCH <= data.len() {
            let mut candidate = head[hash(&data[i..])];
            let max = (data.len() - i).min(MAX_MATCH);
            for _ in 0..MAX_CHAIN {
                let Some(j) = candidate.checked_sub(1).filter(|j| i - j <= WINDOW) else { break };
                let len = data[j..].iter().zip(&data[i..i + max]).take_while(|(a, b)| a == b).count();
                if len > best_len {
                    (best_len, best_dist) = (len, i - j);
                    if len == max {
                        break;
                    }
                }
                candidate = prev[j];
            }
        }
        if best_len >= MIN_MATCH {
            bits.copy(best_len, best_dist);
            for k in i..i + best_len {
                insert(k, &mut head, &mut prev);
            }
            i += best_len;
        } else {
            bits.symbol(u32::from(data[i]));
            insert(i, &mut head, &mut prev);
            i += 1;
        }
    }
    bits.symbol(256); // end of block
    bits.put(0, 7); // flush the last partial byte
    bits.out
}

#[cfg(test)]
mod tests {
    use super::deflate;

    fn round_trip(data: &[u8]) {
        let packed = deflate(data);
        let back = miniz_oxide::inflate::decompress_to_vec(&packed).expect("valid DEFLATE");
        assert_eq!(back, data, "{} bytes", data.len());
    }

    #[test]
    fn inflates_back_to_the_input() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabc");
        round_trip(&[0u8; 100_000]);
        round_trip(&(0..=255u8).cycle().take(70_000).collect::<Vec<_>>());
        // Pseudo-random bytes and text of every length up to 600, with runs repeated far back.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in 0..600 {
            let random: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            round_trip(&random);
            let text: Vec<u8> = (0..n).map(|_| b"ab_c: 1\n"[(next() % 8) as usize]).collect();
            round_trip(&text);
        }
        let mut long: Vec<u8> = (0..40_000).map(|_| next() as u8).collect();
        let tail = long[100..400].to_vec();
        long.extend_from_slice(&tail);
        round_trip(&long);
        for e in pdlaunch_core::examples::EXAMPLES {
            round_trip(e.yaml.as_bytes());
        }
    }
}
