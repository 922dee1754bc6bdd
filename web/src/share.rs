//! The deployment in the URL fragment: its JSON, compressed as raw DEFLATE (RFC 1951) by the
//! browser's own `CompressionStream('deflate-raw')`, base64url-encoded, so a link reproduces the
//! exact builder state. `DecompressionStream('deflate-raw')` reads it back, and any other raw
//! DEFLATE stream too: the links the app wrote with its own encoder before still open
//! (`web/e2e/fixtures/links-before-compression-stream.json`, opened by the browser test).
//!
//! A link is untrusted input. Its inflated size is capped ([`MAX_INFLATED`]): the stream is read
//! chunk by chunk and cancelled past the cap, so a zip bomb costs a few milliseconds, not the tab.
//! Every failure is a sentence for the notice, never a panic.
//!
//! `web-sys` exposes the two streams only behind its unstable APIs (a `--cfg` for every build), so
//! their constructors are declared here; the rest is `web-sys`'s stable streams.

use js_sys::{Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// Largest document a link may inflate to, so a hostile link cannot exhaust memory.
pub const MAX_INFLATED: usize = 4 << 20;

#[wasm_bindgen]
extern "C" {
    /// The browser's `CompressionStream`: a transform stream, readable and writable.
    #[wasm_bindgen(js_name = CompressionStream)]
    type Compression;
    #[wasm_bindgen(constructor, js_class = "CompressionStream", catch)]
    fn new(format: &str) -> Result<Compression, JsValue>;

    /// The browser's `DecompressionStream`.
    #[wasm_bindgen(js_name = DecompressionStream)]
    type Decompression;
    #[wasm_bindgen(constructor, js_class = "DecompressionStream", catch)]
    fn new(format: &str) -> Result<Decompression, JsValue>;
}

/// The message of a JavaScript error, for the notice.
fn js_text(e: JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| e.as_string()).unwrap_or_default()
}

/// `bytes` through a transform stream, read until its end or past `limit` bytes (an error).
async fn through(bytes: &[u8], transform: &JsValue, limit: usize) -> Result<Vec<u8>, String> {
    let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(js_text)?;
    let stream = blob.stream().pipe_through(transform.unchecked_ref::<web_sys::ReadableWritablePair>());
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut out = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(js_text)?;
        if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
            return Ok(out);
        }
        let value: Uint8Array = Reflect::get(&chunk, &"value".into()).map_err(js_text)?.unchecked_into();
        if out.len() + value.length() as usize > limit {
            let _ = reader.cancel();
            return Err(format!("it inflates to more than {} MiB", limit >> 20));
        }
        out.extend(value.to_vec());
    }
}

/// Encodes a document for the fragment.
pub async fn encode(doc: &Value) -> Result<String, String> {
    let json = serde_json::to_string(doc).map_err(|e| e.to_string())?;
    let deflate = Compression::new("deflate-raw").map_err(js_text)?;
    Ok(base64url(&through(json.as_bytes(), &deflate, usize::MAX).await?))
}

/// Decodes a fragment value written by [`encode`]; the error says why a link cannot be opened.
pub async fn decode(text: &str) -> Result<Value, String> {
    let bytes = unbase64url(text.trim()).ok_or("it is not base64url text")?;
    let inflate = Decompression::new("deflate-raw").map_err(js_text)?;
    let json = through(&bytes, &inflate, MAX_INFLATED).await.map_err(|e| match e.is_empty() {
        true => "it is not compressed data".to_owned(),
        false => e,
    })?;
    let text = std::str::from_utf8(&json).map_err(|_| "it does not hold text")?;
    // Through text, as everything else the app reads: one copy of the JSON reader, not two.
    serde_json::from_str(text).map_err(|e| format!("it does not hold a JSON document ({e})"))
}

/// The `s=` parameter of a fragment such as `#s=...`, `None` when it has none.
pub fn payload(fragment: &str) -> Option<&str> {
    let f = fragment.strip_prefix('#').unwrap_or(fragment);
    f.split('&').find_map(|kv| kv.strip_prefix("s="))
}

/// The document of a fragment: `None` when it carries none, else the document or why it cannot
/// be read, as the notice says it.
pub async fn from_fragment(fragment: &str) -> Option<Result<Value, String>> {
    let text = payload(fragment)?;
    Some(decode(text).await.map_err(|why| format!("The deployment in the link could not be read: {why}.")))
}

/// The fragment for a document.
pub async fn to_fragment(doc: &Value) -> Result<String, String> {
    Ok(format!("#s={}", encode(doc).await?))
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
    fn text_that_is_not_base64url_is_refused() {
        assert_eq!(unbase64url("!!"), None);
        assert_eq!(unbase64url("a+b/"), None);
        assert_eq!(unbase64url("é"), None);
    }

    #[test]
    fn the_payload_is_the_s_parameter() {
        assert_eq!(payload("#s=abc"), Some("abc"));
        assert_eq!(payload("#x=1&s=abc"), Some("abc"));
        assert_eq!(payload("s="), Some(""));
        assert_eq!(payload("#other=1"), None);
        assert_eq!(payload(""), None);
    }
}
