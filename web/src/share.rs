//! The deployment in the URL fragment: JSON, deflated ([`crate::deflate`]) and base64url-encoded,
//! so a link reproduces the exact builder state.

use serde_json::Value;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// Largest document a link may inflate to, so a hostile link cannot exhaust memory.
const MAX_INFLATED: usize = 4 << 20;

/// Encodes a document for the fragment.
pub fn encode(doc: &Value) -> String {
    let json = serde_json::to_string(doc).unwrap_or_default();
    base64url(&crate::deflate::deflate(json.as_bytes()))
}

/// Decodes a fragment value written by [`encode`].
pub fn decode(text: &str) -> Option<Value> {
    let bytes = unbase64url(text.trim())?;
    let json = crate::deflate::inflate(&bytes, MAX_INFLATED).ok()?;
    // Through text, as everything else the app reads: one copy of the JSON reader, not two.
    serde_json::from_str(std::str::from_utf8(&json).ok()?).ok()
}

/// The `s=` parameter of a fragment such as `#s=...`.
pub fn from_fragment(fragment: &str) -> Option<Value> {
    let f = fragment.strip_prefix('#').unwrap_or(fragment);
    f.split('&').find_map(|kv| kv.strip_prefix("s=")).and_then(decode)
}

/// The fragment for a document.
pub fn to_fragment(doc: &Value) -> String {
    format!("#s={}", encode(doc))
}

fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn unbase64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_every_length() {
        for n in 0..40u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37).wrapping_add(250)).collect();
            let text = base64url(&bytes);
            assert!(text.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{text}");
            assert_eq!(unbase64url(&text).as_deref(), Some(&bytes[..]));
        }
        assert_eq!(base64url(b"pdl"), "cGRs");
    }

    #[test]
    fn documents_round_trip_through_the_fragment() {
        let doc = serde_json::json!({"name": "x y", "shared": {"page_size": 16}, "list": ["a", "é", "$(x)"]});
        let fragment = to_fragment(&doc);
        assert!(fragment.starts_with("#s="));
        assert_eq!(from_fragment(&fragment), Some(doc));
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(decode("!!"), None);
        assert_eq!(decode("AAAA"), None);
        assert_eq!(from_fragment("#other=1"), None);
    }
}
