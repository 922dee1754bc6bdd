//! The options of Dynamo's SGLang worker (`python -m dynamo.sglang`) that are not SGLang's.
//!
//! The worker parses its own options first and hands every other argument to SGLang's strict
//! parser (one shared strict parser in its first releases): an option neither of them knows stops
//! the worker with "unrecognized arguments". So the linter takes the worker's options out of its
//! argv and reads the rest as SGLang's, where unknown options are PD024 errors as for any server.
//!
//! The list is the union over Dynamo's releases (0.4 to 1.x): runtime options, the SGLang
//! worker's own, and the worker-side router options. Dynamo's booleans also take `--no-NAME`.
//! A spelling SGLang knows too (`--enable-multimodal`) is left to SGLang's parser.

use crate::read::source::Word;
use crate::spec::Spec;

/// How many values an option takes.
#[derive(Clone, Copy)]
enum Arity {
    /// None (a boolean; `--no-NAME` too).
    Switch,
    /// Exactly one.
    One,
    /// One, when the next word is not an option (`nargs="?"`).
    Optional,
    /// Every following word up to the next option (`nargs="*"`).
    Many,
}

use Arity::{Many, One, Optional, Switch};

const OPTIONS: &[(&str, Arity)] = &[
    // The worker's own.
    ("--version", Switch),
    ("--use-sglang-tokenizer", Switch),
    ("--multimodal-processor", Switch),
    ("--multimodal-encode-worker", Switch),
    ("--multimodal-worker", Switch),
    ("--dedicated-mm-encoder", Switch),
    ("--embedding-worker", Switch),
    ("--image-diffusion-worker", Switch),
    ("--video-generation-worker", Switch),
    ("--enable-rl", Switch),
    ("--frontend-decoding", Switch),
    ("--embedding-transfer-mode", One),
    ("--sglang-trace-level", One),
    ("--disagg-config", One),
    ("--disagg-config-key", One),
    ("--config-key", One),
    ("--image-diffusion-fs-url", One),
    ("--image-diffusion-base-url", One),
    ("--afd-attention-ratio", One),
    ("--afd-ffn-endpoint", One),
    ("--afd-microbatch-size", One),
    ("--afd-sync-timeout-ms", One),
    // The runtime's.
    ("--namespace", One),
    ("--endpoint", One),
    ("--kv-state-endpoint", One),
    ("--discovery-backend", One),
    ("--store-kv", One),
    ("--request-plane", One),
    ("--response-plane", One),
    ("--event-plane", One),
    ("--migration-limit", One),
    ("--enable-local-indexer", Optional),
    ("--durable-kv-events", Switch),
    ("--fpm-trace", Switch),
    ("--connector", Many),
    ("--dyn-tool-call-parser", One),
    ("--dyn-reasoning-parser", One),
    ("--dyn-default-thinking-mode", One),
    ("--exclude-tools-when-tool-choice-none", Switch),
    ("--dyn-structural-tag", Optional),
    ("--dyn-enable-structural-tag", Switch),
    ("--dyn-structural-tag-scope", One),
    ("--dyn-structural-tag-schema", One),
    ("--custom-jinja-template", One),
    ("--endpoint-types", One),
    ("--dyn-endpoint-types", One),
    ("--dump-config-to", One),
    ("--multimodal-embedding-cache-capacity-gb", One),
    ("--multimodal-embedding-cache-publisher", Switch),
    ("--output-modalities", Many),
    ("--media-output-fs-url", One),
    ("--media-output-http-url", One),
    ("--health-check-payload", One),
    ("--engine-request-limit", One),
    ("--tcp-tls-cert-path", One),
    ("--tcp-tls-key-path", One),
    ("--tcp-tls-ca-cert-path", One),
    ("--tcp-tls-insecure", Switch),
    ("--tcp-tls-server-name", One),
    ("--tcp-tls-handshake-timeout", One),
    ("--tcp-tls-client-cert-path", One),
    ("--tcp-tls-client-key-path", One),
    ("--tcp-tls-client-ca-cert-path", One),
    ("--nats-tls-ca-cert-path", One),
    ("--nats-tls-insecure", Switch),
    ("--nats-tls-client-cert-path", One),
    ("--nats-tls-client-key-path", One),
    // The worker-side router's.
    ("--router-mode", One),
    ("--router-session-affinity-ttl-secs", One),
    ("--router-session-affinity-mode", One),
    ("--active-decode-blocks-threshold", One),
    ("--active-prefill-tokens-threshold", One),
    ("--active-prefill-tokens-threshold-frac", One),
    ("--load-aware", Switch),
    ("--router-replica-sync", Switch),
    ("--router-track-prefill-tokens", Switch),
    ("--router-conditional-disagg", Switch),
    ("--use-remote-indexer", Switch),
    ("--enable-session-prefix-index", Switch),
    ("--router-kv-events", Switch),
    ("--kv-events", Switch),
    ("--router-track-active-blocks", Switch),
    ("--track-active-blocks", Switch),
    ("--router-track-output-blocks", Switch),
    ("--track-output-blocks", Switch),
    ("--router-assume-kv-reuse", Switch),
    ("--assume-kv-reuse", Switch),
    ("--router-kv-overlap-score-credit", One),
    ("--router-kv-overlap-score-credit-decay", One),
    ("--router-kv-overlap-score-weight", One),
    ("--kv-overlap-score-weight", One),
    ("--router-prefill-load-scale", One),
    ("--router-prefill-load-model", One),
    ("--router-decode-active-request-weight", One),
    ("--router-host-cache-hit-weight", One),
    ("--router-disk-cache-hit-weight", One),
    ("--router-temperature", One),
    ("--router-tracking-hash", One),
    ("--router-tracking-key-file", One),
    ("--router-tracking-key-id", One),
    ("--router-ttl-secs", One),
    ("--router-predicted-ttl-secs", One),
    ("--router-approximate-cache-policy", One),
    ("--router-queue-threshold", One),
    ("--router-queue-policy", One),
    ("--router-policy-config", One),
    ("--router-conditional-disagg-config", One),
    ("--router-prefill-policy", One),
    ("--router-decode-policy", One),
    ("--router-event-threads", One),
    ("--shared-cache-multiplier", One),
    ("--shared-cache-type", One),
];

/// How many values the Dynamo option `name` takes, when it is one SGLang does not know.
fn arity(name: &str, spec: &Spec) -> Option<Arity> {
    if spec.get(name).is_some() {
        return None;
    }
    let found = |n: &str| OPTIONS.iter().find(|(o, _)| *o == n).map(|(_, a)| *a);
    found(name).or_else(|| {
        let negated = name.strip_prefix("--no-").map(|rest| format!("--{rest}"))?;
        found(&negated).filter(|a| matches!(a, Switch)).map(|_| Switch)
    })
}

/// The value the worker gives `--disaggregation-mode` (its last occurrence).
fn mode(words: &[Word]) -> Option<&str> {
    words.iter().enumerate().rev().find_map(|(i, w)| match w.text.strip_prefix("--disaggregation-mode") {
        Some("") => words.get(i + 1).map(|v| v.text.as_str()),
        Some(rest) => rest.strip_prefix('='),
        None => None,
    })
}

/// True for the worker's multimodal encoder (`--disaggregation-mode encode`): Dynamo starts no
/// SGLang prefill or decode server for it, so it takes no part in the KV transfer.
pub fn is_encode_worker(words: &[Word]) -> bool {
    mode(words) == Some("encode")
}

/// The worker's argv without Dynamo's own options and their values: what SGLang parses. The
/// worker's own modes `agg` and `pd` reach SGLang as `null`.
pub fn sglang_words(words: &[Word], spec: &Spec) -> Vec<Word> {
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    let is_option = |w: &Word| w.text.starts_with('-') && w.text.len() > 1;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if matches!(w.text.as_str(), "agg" | "pd")
            && out.last().is_some_and(|p: &Word| p.text == "--disaggregation-mode")
        {
            out.push(Word { text: "null".into(), ..w.clone() });
            continue;
        }
        let (name, inline) = match w.text.split_once('=') {
            Some((n, _)) if w.text.starts_with("--") => (n, true),
            _ => (w.text.as_str(), false),
        };
        let Some(a) = arity(name, spec) else {
            out.push(w.clone());
            continue;
        };
        match a {
            _ if inline => {}
            Switch => {}
            One => i = (i + 1).min(words.len()),
            Optional => {
                if words.get(i).is_some_and(|n| !is_option(n)) {
                    i += 1;
                }
            }
            Many => {
                while words.get(i).is_some_and(|n| !is_option(n)) {
                    i += 1;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    fn words(s: &str) -> Vec<Word> {
        s.split(' ').map(Word::plain).collect()
    }

    #[test]
    fn dynamo_options_are_taken_out_before_sglang_reads_the_rest() {
        let spec = Release::LATEST.spec();
        let argv = "--model-path m --endpoint dyn://ns.prefill.generate --no-use-sglang-tokenizer --tp 2 \
                    --connector nixl lmcache --page-size 64 --dyn-structural-tag --migration-limit=3 \
                    --enable-multimodal --dyn-tool-call-parser hermes --page-szie 1";
        let kept: Vec<String> = sglang_words(&words(argv), spec).into_iter().map(|w| w.text).collect();
        assert_eq!(
            kept,
            ["--model-path", "m", "--tp", "2", "--page-size", "64", "--enable-multimodal", "--page-szie", "1"]
        );
        // Only booleans have a `--no-` form.
        assert_eq!(sglang_words(&words("--no-endpoint x"), spec).len(), 2);
        // The worker's own modes.
        let kept: Vec<String> =
            sglang_words(&words("--disaggregation-mode agg"), spec).into_iter().map(|w| w.text).collect();
        assert_eq!(kept, ["--disaggregation-mode", "null"]);
        assert!(is_encode_worker(&words("--enable-multimodal --disaggregation-mode encode")));
        assert!(is_encode_worker(&words("--disaggregation-mode=encode")));
        assert!(!is_encode_worker(&words("--disaggregation-mode prefill")));
    }
}
