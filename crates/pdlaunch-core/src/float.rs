//! Decimal text to `f64`, correctly rounded, as `str::parse::<f64>` reads it.
//!
//! The standard parser carries a 10 KB table of powers of five. Measured
//! (`web/size-variants.sh float`, 2026-12-02): with [`parse`] calling `str::parse::<f64>`, the
//! app's gzipped download grows by 12,974 bytes (516,725 to 529,699), about 2.5% of it. The values
//! the core reads are nearly always short (`0.85`, `1e-5`), and those take the exact fast path
//! below; anything else is rounded by comparing big integers, which is slower but needs no table.
//! Clippy cannot refuse `str::parse` for one type only, so `tests/stand_ins.rs` fails on a
//! `parse::<f64>` or `f64::from_str` in the core or the app.

use std::cmp::Ordering;

/// Significant digits kept; beyond them only "some digit was not zero" matters. An `f64`
/// halfway point has at most 767 significant digits, so 800 decide every rounding.
const MAX_DIGITS: usize = 800;

/// The powers of ten an `f64` holds exactly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// Parses what `str::parse::<f64>` parses, to the same value: an optional sign, then `inf`,
/// `infinity` or `nan` in any case, or digits with an optional `.` and an optional exponent.
pub fn parse(text: &str) -> Option<f64> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let value = if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if rest.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        let (digits, exponent) = decimal(rest.as_bytes())?;
        round(&digits, exponent)
    };
    Some(if negative { -value } else { value })
}

/// The significant digits (values 0..=9, no leading zeros) and the power of ten that scales them
/// to the number; `None` when the text is not a decimal number.
fn decimal(b: &[u8]) -> Option<(Vec<u8>, i64)> {
    let mut digits = Vec::new();
    let mut exponent: i64 = 0;
    let (mut seen, mut sticky, mut i) = (false, false, 0);
    let mut take = |d: u8, fraction: bool, exponent: &mut i64| {
        if digits.is_empty() && d == 0 {
            *exponent -= i64::from(fraction);
        } else if digits.len() < MAX_DIGITS {
            digits.push(d);
            *exponent -= i64::from(fraction);
        } else {
            sticky |= d != 0;
            *exponent += i64::from(!fraction);
        }
    };
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        take(c - b'0', false, &mut exponent);
        (seen, i) = (true, i + 1);
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            take(c - b'0', true, &mut exponent);
            (seen, i) = (true, i + 1);
        }
    }
    if !seen {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let negative = b.get(i) == Some(&b'-');
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let start = i;
        let mut e: i64 = 0;
        while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            // Past a billion the value is 0 or infinite whatever the other digits say.
            e = (e * 10 + i64::from(c - b'0')).min(1_000_000_000);
            i += 1;
        }
        if i == start {
            return None;
        }
        exponent += if negative { -e } else { e };
    }
    if i != b.len() {
        return None;
    }
    while digits.last() == Some(&0) && !sticky {
        digits.pop();
        exponent += 1;
    }
    if sticky {
        // A nonzero digit past the last kept one: the value lies strictly above the kept digits.
        digits.push(1);
        exponent -= 1;
    }
    Some((digits, exponent))
}

/// The nearest `f64` (ties to even) to `digits × 10^exponent`.
fn round(digits: &[u8], exponent: i64) -> f64 {
    if digits.is_empty() {
        return 0.0;
    }
    let magnitude = exponent + digits.len() as i64; // the value is below 10^magnitude
    if magnitude > 310 {
        return f64::INFINITY;
    }
    if magnitude < -324 {
        return 0.0;
    }
    let exponent = exponent as i32;
    // Up to 15 digits are exact in an f64, and so is 10^22: one rounding, the right one.
    if digits.len() <= 15 && (-22..=22).contains(&exponent) {
        let w = digits.iter().fold(0u64, |w, &d| w * 10 + u64::from(d)) as f64;
        let p = POW10[exponent.unsigned_abs() as usize];
        return if exponent < 0 { w / p } else { w * p };
    }
    let mut z = approximate(digits, exponent);
    let exact = Big::from_digits(digits);
    loop {
        let bits = z.to_bits();
        let (m, k) = if bits >> 52 == 0 {
            (bits, -1074)
        } else {
            ((bits & ((1 << 52) - 1)) | 1 << 52, (bits >> 52) as i32 - 1075)
        };
        // Against the halfway point above z: (2m + 1) × 2^(k-1).
        match compare(&exact, exponent, 2 * m + 1, k - 1) {
            Ordering::Greater => {
                z = f64::from_bits(bits + 1);
                if z.is_infinite() {
                    return z;
                }
                continue;
            }
            Ordering::Equal => return if m % 2 == 1 { f64::from_bits(bits + 1) } else { z },
            Ordering::Less => {}
        }
        if m == 0 {
            return z;
        }
        // Against the halfway point below z; below a power of two the spacing halves.
        let below = if m == 1 << 52 && k > -1074 {
            compare(&exact, exponent, 4 * m - 1, k - 2)
        } else {
            compare(&exact, exponent, 2 * m - 1, k - 1)
        };
        match below {
            Ordering::Less => z = f64::from_bits(bits - 1),
            Ordering::Equal => return if m % 2 == 1 { f64::from_bits(bits - 1) } else { z },
            Ordering::Greater => return z,
        }
    }
}

/// A value within a few units in the last place, from the first 19 digits.
fn approximate(digits: &[u8], exponent: i32) -> f64 {
    let n = digits.len().min(19);
    let w = digits[..n].iter().fold(0u64, |w, &d| w * 10 + u64::from(d)) as f64;
    let e = exponent + (digits.len() - n) as i32;
    let z = if e < -300 {
        w * 10f64.powi(e + 300) * 1e-300
    } else if e > 300 {
        w * 10f64.powi(e - 300) * 1e300
    } else {
        w * 10f64.powi(e)
    };
    if z.is_infinite() {
        f64::MAX
    } else {
        z
    }
}

/// Compares `exact × 10^exponent` with `m × 2^k`.
fn compare(exact: &Big, exponent: i32, m: u64, k: i32) -> Ordering {
    let mut left = exact.clone();
    let mut right = Big(vec![m as u32, (m >> 32) as u32]);
    // exact × 5^e × 2^e against m × 2^k: move each factor to the side where it is a whole number.
    if exponent >= 0 {
        left.mul_pow5(exponent as u32);
    } else {
        right.mul_pow5(exponent.unsigned_abs());
    }
    let shift = i64::from(exponent) - i64::from(k);
    if shift >= 0 {
        left.shl(shift as u32);
    } else {
        right.shl(shift.unsigned_abs() as u32);
    }
    left.cmp(&right)
}

/// An unsigned big integer, 32-bit limbs, least significant first.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Big {
        let mut b = Big(Vec::with_capacity(digits.len() / 9 + 1));
        for chunk in digits.chunks(9) {
            let v = chunk.iter().fold(0u32, |v, &d| v * 10 + u32::from(d));
            b.mul_add(10u32.pow(chunk.len() as u32), v);
        }
        b
    }

    fn mul_add(&mut self, factor: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(factor) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow5(&mut self, mut n: u32) {
        const FIVE_13: u32 = 1_220_703_125;
        while n >= 13 {
            self.mul_add(FIVE_13, 0);
            n -= 13;
        }
        self.mul_add(5u32.pow(n), 0);
    }

    fn shl(&mut self, bits: u32) {
        let (limbs, bits) = ((bits / 32) as usize, bits % 32);
        if bits > 0 {
            let mut carry = 0;
            for limb in &mut self.0 {
                let v = (*limb << bits) | carry;
                carry = *limb >> (32 - bits);
                *limb = v;
            }
            if carry > 0 {
                self.0.push(carry);
            }
        }
        self.0.splice(0..0, std::iter::repeat_n(0, limbs));
    }

    fn cmp(&self, other: &Big) -> Ordering {
        let len = |b: &Big| b.0.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1);
        let (a, b) = (len(self), len(other));
        a.cmp(&b).then_with(|| self.0[..a].iter().rev().cmp(other.0[..b].iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{parse, Big};

    /// The exact decimal text of the point halfway between a positive float and the next one up.
    fn halfway(bits: u64) -> String {
        let (m, k) = if bits >> 52 == 0 {
            (bits, -1074)
        } else {
            ((bits & ((1 << 52) - 1)) | 1 << 52, (bits >> 52) as i32 - 1075)
        };
        let mut h = Big(vec![(2 * m + 1) as u32, ((2 * m + 1) >> 32) as u32]);
        let scale = if k > 0 {
            h.shl((k - 1) as u32);
            0
        } else {
            h.mul_pow5((1 - k) as u32);
            1 - k
        };
        let mut digits = String::new();
        while h.0.iter().any(|&l| l != 0) {
            let mut rem = 0u64;
            for limb in h.0.iter_mut().rev() {
                let v = (rem << 32) | u64::from(*limb);
                *limb = (v / 1_000_000_000) as u32;
                rem = v % 1_000_000_000;
            }
            digits = format!("{rem:09}{digits}");
        }
        format!("{}e-{scale}", digits.trim_start_matches('0'))
    }

    fn same(text: &str) {
        let ours = parse(text);
        let theirs = text.parse::<f64>().ok();
        match (ours, theirs) {
            (Some(a), Some(b)) if a.is_nan() && b.is_nan() => {}
            (a, b) => assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{text:?}: {a:?} against {b:?}"),
        }
    }

    #[test]
    fn reads_as_the_standard_parser_reads() {
        for text in [
            "0",
            "-0",
            "+0",
            "0.85",
            "1e-5",
            "1E5",
            "1.",
            ".5",
            "-.5",
            "1.e1",
            "007",
            "0.000",
            "00.0100e2",
            "inf",
            "-INF",
            "Infinity",
            "+infinity",
            "nan",
            "NaN",
            "-nan",
            "infinit",
            "nana",
            "",
            "+",
            "-",
            ".",
            "e5",
            "1e",
            "1e+",
            "1e-",
            ".e1",
            "1_0",
            " 1",
            "1 ",
            "1..2",
            "1e5.5",
            "0x10",
            "١",
            // Beyond the fast path: long mantissas, large and small exponents, halfway points.
            "9007199254740993",
            "9007199254740995",
            "9007199254740992.5",
            "1e23",
            "8.98846567431158e307",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "1e309",
            "1e400",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "4.9e-324",
            "5e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "2.47032822920623272e-324",
            "1e-400",
            "1e-325",
            "0.1000000000000000055511151231257827021181583404541015625",
            "0.1000000000000000055511151231257827021181583404541015624",
            "0.1000000000000000055511151231257827021181583404541015626",
            "123456789012345678901234567890e-10",
            "1e1000000000000000000000",
            "1e-1000000000000000000000",
            "0e999999999",
            "179769313486231580793728971405301e276",
        ] {
            same(text);
        }
        // A long run of digits, with a nonzero digit past the ones kept.
        let long = format!("0.{}1e-300", "0".repeat(2000));
        same(&long);
        same(&format!("2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125{}", "0".repeat(50)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::lint::proptests::cases(2000)))]

        #[test]
        fn every_float_reads_back(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            for text in [format!("{x}"), format!("{x:e}"), format!("{x:?}"), format!("{x:.3e}"), format!("{x:.20e}")] {
                same(&text);
            }
        }

        #[test]
        fn halfway_points_round_to_even(bits in 0u64..0x7fef_ffff_ffff_ffff) {
            let text = halfway(bits);
            same(&text);
            // Exactly halfway: the neighbour with the even mantissa.
            prop_assert_eq!(parse(&text).map(f64::to_bits), Some(bits + (bits & 1)));
        }

        #[test]
        fn decimal_texts_read_as_the_standard_parser_reads(
            int in "[0-9]{0,25}", frac in proptest::option::of("[0-9]{0,25}"), exp in proptest::option::of(-400i32..400),
            sign in "[-+]?",
        ) {
            let mut text = sign + &int;
            if let Some(f) = frac {
                text = text + "." + &f;
            }
            if let Some(e) = exp {
                text = format!("{text}e{e}");
            }
            same(&text);
        }
    }
}
