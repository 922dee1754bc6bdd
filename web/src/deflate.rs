//! DEFLATE (RFC 1951) for the link fragment, small rather than fast or tight.
//!
//! [`deflate`] writes one block of fixed Huffman codes over greedy LZ77 matches. Its output is
//! 17-24% longer than `miniz_oxide`'s best level on the examples' documents (a link of 855
//! characters instead of 691 for the largest); that encoder was 8 KB of the gzipped app.
//! [`inflate`] reads any DEFLATE stream (stored, fixed and dynamic blocks), so links made by
//! other encoders, and before this one, still open. Damaged input is an error, never a panic,
//! and output is capped.

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

/// Why a DEFLATE stream could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// Reads bits least significant first.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u32,
    n: u32,
}

impl Reader<'_> {
    fn take(&mut self, count: u32) -> Result<u32, Corrupt> {
        while self.n < count {
            let byte = *self.data.get(self.pos).ok_or(Corrupt)?;
            self.pos += 1;
            self.acc |= u32::from(byte) << self.n;
            self.n += 8;
        }
        let v = self.acc & ((1u64 << count) - 1) as u32;
        self.acc >>= count;
        self.n -= count;
        Ok(v)
    }
}

/// A canonical Huffman code: how many codes have each length, and the symbols in code order.
struct Code {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Code {
    fn new(lengths: &[u8]) -> Code {
        let mut counts = [0u16; 16];
        for &l in lengths {
            counts[usize::from(l)] += 1;
        }
        counts[0] = 0;
        let mut offsets = [0u16; 16];
        for l in 1..15 {
            offsets[l + 1] = offsets[l] + counts[l];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbols[usize::from(offsets[usize::from(l)])] = s as u16;
                offsets[usize::from(l)] += 1;
            }
        }
        Code { counts, symbols }
    }

    /// The next symbol, read one bit at a time from the first code of each length.
    fn decode(&self, r: &mut Reader) -> Result<usize, Corrupt> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for &count in &self.counts[1..] {
            code |= r.take(1)? as i32;
            let count = i32::from(count);
            if code - first < count {
                return self.symbols.get((index + code - first) as usize).map(|&s| usize::from(s)).ok_or(Corrupt);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(Corrupt)
    }
}

/// Inflates raw DEFLATE, refusing output longer than `limit` bytes.
pub fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, Corrupt> {
    let mut r = Reader { data, pos: 0, acc: 0, n: 0 };
    let mut out = Vec::new();
    loop {
        let last = r.take(1)? == 1;
        match r.take(2)? {
            0 => {
                (r.acc, r.n) = (0, 0); // to the byte boundary
                let header = data.get(r.pos..r.pos + 4).ok_or(Corrupt)?;
                let len = usize::from(u16::from_le_bytes([header[0], header[1]]));
                if u16::from_le_bytes([header[2], header[3]]) != !(len as u16) {
                    return Err(Corrupt);
                }
                let bytes = data.get(r.pos + 4..r.pos + 4 + len).ok_or(Corrupt)?;
                if out.len() + len > limit {
                    return Err(Corrupt);
                }
                out.extend_from_slice(bytes);
                r.pos += 4 + len;
            }
            1 => {
                let mut lengths = [8u8; 288];
                lengths[144..256].fill(9);
                lengths[256..280].fill(7);
                codes(&mut r, &mut out, limit, &Code::new(&lengths), &Code::new(&[5; 30]))?;
            }
            2 => {
                let (lit, dist) = dynamic_codes(&mut r)?;
                codes(&mut r, &mut out, limit, &lit, &dist)?;
            }
            _ => return Err(Corrupt),
        }
        if last {
            return Ok(out);
        }
    }
}

/// The literal/length and distance codes of a dynamic block.
fn dynamic_codes(r: &mut Reader) -> Result<(Code, Code), Corrupt> {
    const ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
    let nlen = r.take(5)? as usize + 257;
    let ndist = r.take(5)? as usize + 1;
    let ncode = r.take(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return Err(Corrupt);
    }
    let mut code_lengths = [0u8; 19];
    for &i in &ORDER[..ncode] {
        code_lengths[i] = r.take(3)? as u8;
    }
    let lencode = Code::new(&code_lengths);
    let mut lengths = vec![0u8; nlen + ndist];
    let mut i = 0;
    while i < lengths.len() {
        let (value, repeat) = match lencode.decode(r)? {
            s @ 0..=15 => (s as u8, 1),
            16 => (*lengths[..i].last().ok_or(Corrupt)?, 3 + r.take(2)? as usize),
            17 => (0, 3 + r.take(3)? as usize),
            _ => (0, 11 + r.take(7)? as usize),
        };
        let run = lengths.get_mut(i..i + repeat).ok_or(Corrupt)?;
        run.fill(value);
        i += repeat;
    }
    if lengths[256] == 0 {
        return Err(Corrupt); // no end-of-block code
    }
    Ok((Code::new(&lengths[..nlen]), Code::new(&lengths[nlen..])))
}

/// The symbols of one compressed block, up to its end-of-block code.
fn codes(r: &mut Reader, out: &mut Vec<u8>, limit: usize, lit: &Code, dist: &Code) -> Result<(), Corrupt> {
    loop {
        let s = lit.decode(r)?;
        if s < 256 {
            out.push(s as u8);
        } else if s == 256 {
            return Ok(());
        } else {
            let l = s - 257;
            let len = usize::from(*LENGTH_BASE.get(l).ok_or(Corrupt)?) + r.take(u32::from(LENGTH_EXTRA[l]))? as usize;
            let d = dist.decode(r)?;
            let back = usize::from(*DIST_BASE.get(d).ok_or(Corrupt)?) + r.take(u32::from(DIST_EXTRA[d]))? as usize;
            if back > out.len() {
                return Err(Corrupt);
            }
            for _ in 0..len {
                out.push(out[out.len() - back]);
            }
        }
        if out.len() > limit {
            return Err(Corrupt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{deflate, inflate, Corrupt};

    /// A reproducible stream of pseudo-random numbers.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Ours and `miniz_oxide`'s streams, at every level (stored, fixed and dynamic blocks), read
    /// back by both inflaters.
    fn round_trip(data: &[u8]) {
        let packed = deflate(data);
        let back = miniz_oxide::inflate::decompress_to_vec(&packed).expect("valid DEFLATE");
        assert_eq!(back, data, "{} bytes", data.len());
        assert_eq!(inflate(&packed, usize::MAX).as_deref(), Ok(data));
        for level in [0, 1, 6, 10] {
            let theirs = miniz_oxide::deflate::compress_to_vec(data, level);
            assert_eq!(inflate(&theirs, usize::MAX).as_deref(), Ok(data), "level {level}, {} bytes", data.len());
        }
    }

    #[test]
    fn inflates_back_to_the_input() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabc");
        round_trip(&[0u8; 100_000]);
        round_trip(&(0..=255u8).cycle().take(70_000).collect::<Vec<_>>());
        // Pseudo-random bytes and text of every length up to 600, with runs repeated far back.
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
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

    #[test]
    fn damaged_streams_are_refused_without_panicking() {
        let good = deflate(pdlaunch_core::examples::EXAMPLES[0].yaml.as_bytes());
        for cut in 0..good.len() {
            assert!(inflate(&good[..cut], usize::MAX).is_err(), "cut at {cut}");
        }
        // Flipped bits and noise: each is refused, or inflates to at most the limit and to what
        // `miniz_oxide` makes of it whenever that decodes it too.
        const LIMIT: usize = 1 << 20;
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let (mut agreed, mut refused) = (0, 0);
        let mut check = |bytes: &[u8]| match inflate(bytes, LIMIT) {
            Ok(ours) => {
                assert!(ours.len() <= LIMIT);
                if let Ok(theirs) = miniz_oxide::inflate::decompress_to_vec_with_limit(bytes, LIMIT) {
                    assert!(
                        ours == theirs,
                        "{} bytes inflated, miniz_oxide {}, from {bytes:02x?}",
                        ours.len(),
                        theirs.len()
                    );
                    agreed += 1;
                }
            }
            Err(Corrupt) => refused += 1,
        };
        for _ in 0..20_000 {
            let mut bytes = good.clone();
            for _ in 0..=(next() % 4) {
                let i = (next() as usize) % bytes.len();
                bytes[i] ^= 1 << (next() % 8);
            }
            check(&bytes);
            let noise: Vec<u8> = (0..(next() % 64)).map(|_| next() as u8).collect();
            check(&noise);
        }
        // Both outcomes are common, so neither half of the contract is checked vacuously.
        assert!(agreed > 1000 && refused > 1000, "{agreed} inflated alike, {refused} refused");
        // A stream that would inflate past the limit.
        assert_eq!(inflate(&deflate(&[b'x'; 5000]), 4000), Err(Corrupt));
        assert_eq!(inflate(&miniz_oxide::deflate::compress_to_vec(&[b'x'; 5000], 0), 4000), Err(Corrupt));
    }
}
