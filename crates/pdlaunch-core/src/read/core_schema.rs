//! The types of plain YAML scalars under YAML 1.2's core schema, read as serde_yaml 0.9 reads
//! them (so a deployment means what it meant before). The one typing of plain scalars: the
//! deserializer over the tree ([`super::de`]) and the JSON values of `crate::yaml_value` both
//! ask here.

/// What a plain scalar is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Plain {
    /// Empty, `~` and `null` (three spellings).
    Null,
    /// `true`/`false`, three spellings each.
    Bool(bool),
    /// A decimal, `0x`, `0o` or `0b` integer that fits 64 bits unsigned.
    Unsigned(u64),
    /// A negative integer that fits 64 bits.
    Negative(i64),
    /// A finite float, or an integer beyond 64 bits as the nearest float (as JSON readers take
    /// them).
    Float(f64),
    /// `.inf`, `-.inf`, `.nan` and their spellings: no JSON value and no deployment field
    /// holds them. (A decimal too big to be finite, `1e400`, is text, as serde_yaml reads it.)
    NonFinite,
    /// Anything else (a leading zero followed by digits too: a string in YAML 1.2, not octal).
    Text,
}

/// The type of the plain scalar `s`.
pub fn plain(s: &str) -> Plain {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Plain::Null,
        "true" | "True" | "TRUE" => return Plain::Bool(true),
        "false" | "False" | "FALSE" => return Plain::Bool(false),
        _ => {}
    }
    if let Some(n) = unsigned(s, u64::from_str_radix) {
        return Plain::Unsigned(n);
    }
    if let Some(n) = negative(s, i64::from_str_radix) {
        return Plain::Negative(n);
    }
    if let Some(n) = unsigned(s, u128::from_str_radix) {
        return Plain::Float(n as f64);
    }
    if let Some(n) = negative(s, i128::from_str_radix) {
        return Plain::Float(n as f64);
    }
    if !leading_zero_digits(s) {
        match float(s) {
            Some(f) if f.is_finite() => return Plain::Float(f),
            Some(_) => return Plain::NonFinite,
            None => {}
        }
    }
    Plain::Text
}

type Radix<T> = fn(&str, u32) -> Result<T, std::num::ParseIntError>;

const PREFIXES: [(&str, u32); 3] = [("0x", 16), ("0o", 8), ("0b", 2)];

fn unsigned<T>(s: &str, parse: Radix<T>) -> Option<T> {
    let u = s.strip_prefix('+').unwrap_or(s);
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = u.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(n) = parse(rest, radix) {
                return Some(n);
            }
        }
    }
    if u.starts_with(['+', '-']) || leading_zero_digits(s) {
        return None;
    }
    parse(u, 10).ok()
}

fn negative<T>(s: &str, parse: Radix<T>) -> Option<T> {
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = s.strip_prefix('-').and_then(|r| r.strip_prefix(prefix)) {
            if let Ok(n) = parse(&format!("-{rest}"), radix) {
                return Some(n);
            }
        }
    }
    if leading_zero_digits(s) {
        return None;
    }
    parse(s, 10).ok()
}

/// A float, infinite and NaN included; `None` when `s` is no float.
fn float(s: &str) -> Option<f64> {
    let u = match s.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => s,
    };
    match (u, s) {
        (".inf" | ".Inf" | ".INF", _) => return Some(f64::INFINITY),
        (_, "-.inf" | "-.Inf" | "-.INF") => return Some(f64::NEG_INFINITY),
        (_, ".nan" | ".NaN" | ".NAN") => return Some(f64::NAN),
        _ => {}
    }
    crate::float::parse(u).filter(|f| f.is_finite())
}

/// `0` followed by digits (with an optional sign): a string in YAML 1.2, not octal.
fn leading_zero_digits(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    s.len() > 1 && s.starts_with('0') && s[1..].bytes().all(|b| b.is_ascii_digit())
}
