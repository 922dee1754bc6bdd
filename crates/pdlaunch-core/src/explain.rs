//! `explain`: from an SGLang error message (pasted from a log) to the rule that prevents it, or
//! the environment cause behind it ([`crate::causes`]), with its cause and fix. Each rule and cause
//! quotes SGLang's own texts with `{...}` where SGLang interpolates a value; a message matches when
//! every literal piece of a quoted text appears in it, in order. [`explain_log`] finds every known
//! message of a log excerpt, each once, in order.

use crate::causes::{Cause, CAUSES};
use crate::rules::{Rule, Severity, RULES};

/// What explains a message: a rule that prevents it, or an environment cause.
#[derive(Clone, Copy, Debug)]
pub enum Known {
    /// A rule: its check finds the condition before launch (or says why it cannot).
    Rule(&'static Rule),
    /// An environment cause: no command line prevents it.
    Cause(&'static Cause),
}

impl Known {
    /// The rule or cause with this code (case-insensitive) or name.
    pub fn find(code_or_name: &str) -> Option<Known> {
        crate::rules::rule(code_or_name)
            .map(Known::Rule)
            .or_else(|| crate::causes::cause(code_or_name).map(Known::Cause))
    }
    /// `PD001`, `ENV003`...
    pub fn code(self) -> &'static str {
        match self {
            Known::Rule(r) => r.code,
            Known::Cause(c) => c.code,
        }
    }
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Known::Rule(r) => r.name,
            Known::Cause(c) => c.name,
        }
    }
    /// One line.
    pub fn summary(self) -> &'static str {
        match self {
            Known::Rule(r) => r.summary,
            Known::Cause(c) => c.summary,
        }
    }
    /// Why it happens.
    pub fn explanation(self) -> &'static str {
        match self {
            Known::Rule(r) => r.explanation,
            Known::Cause(c) => c.explanation,
        }
    }
    /// What to change.
    pub fn fix(self) -> &'static str {
        match self {
            Known::Rule(r) => r.fix,
            Known::Cause(c) => c.fix,
        }
    }
    /// SGLang's texts it matches.
    pub fn sglang_errors(self) -> &'static [&'static str] {
        match self {
            Known::Rule(r) => r.sglang_errors,
            Known::Cause(c) => c.sglang_errors,
        }
    }
    /// A rule's severity; an environment cause has none (it is not a finding).
    pub fn severity(self) -> Option<Severity> {
        match self {
            Known::Rule(r) => Some(r.severity),
            Known::Cause(_) => None,
        }
    }
    /// The rule, when it is one.
    pub fn rule(self) -> Option<&'static Rule> {
        match self {
            Known::Rule(r) => Some(r),
            Known::Cause(_) => None,
        }
    }
    /// The pdlaunch command that tells an environment cause apart, when there is one.
    pub fn command(self) -> Option<&'static str> {
        match self {
            Known::Rule(_) => None,
            Known::Cause(c) => c.command,
        }
    }
}

/// A rule or cause that matches a message.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The rule or cause.
    pub known: Known,
    /// The SGLang text that matched.
    pub matched: &'static str,
    /// How much of the text matched, 0..=1 (1 = every literal piece of the SGLang text).
    pub score: f64,
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

/// The literal pieces of an SGLang text, between `{...}` placeholders.
fn pieces(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in template.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 && !cur.trim().is_empty() {
                    out.push(normalize(&cur));
                }
                cur.clear();
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => cur.push(c),
            _ => {}
        }
    }
    if !cur.trim().is_empty() {
        out.push(normalize(&cur));
    }
    out
}

/// The distinct words of a text, sorted. SGLang's texts are ASCII, so a word is a run of ASCII
/// letters, digits, `_` and `-` (more than one character, not all digits).
fn words(s: &str) -> Vec<&str> {
    let mut out: Vec<&str> = s
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| w.len() > 1 && !w.bytes().all(|c| c.is_ascii_digit()))
        .collect();
    crate::sort::sort(&mut out);
    out.dedup();
    out
}

/// Scores how well `msg` matches `template`: the share of the template's literal characters found
/// in order in the message; or, for a fragment of a log line, the share of the message's words
/// that the template contains (at least four of them, nearly all).
fn score(msg: &str, template: &str) -> f64 {
    let ps = pieces(template);
    let total: usize = ps.iter().map(|p| p.trim().len()).sum();
    if total == 0 {
        return 0.0;
    }
    let mut at = 0;
    let mut matched = 0;
    for p in &ps {
        let p = p.trim();
        if let Some(i) = msg[at..].find(p) {
            at += i + p.len();
            matched += p.len();
        }
    }
    let ordered = matched as f64 / total as f64;
    let literal = ps.join(" ");
    let tw = words(&literal);
    // Placeholders a user pasted from the source (`{info.page_size}`) are not words of the message.
    let stripped: String = pieces(msg).join(" ");
    let mw = words(&stripped);
    let shared = mw.iter().filter(|w| tw.binary_search(w).is_ok()).count();
    let fragment = if shared >= 4 && shared * 10 >= mw.len() * 9 {
        // Scale into [0.5, 0.9]: a fragment never outranks a full match.
        0.5 + 0.4 * (shared as f64 / tw.len().max(1) as f64)
    } else {
        0.0
    };
    ordered.max(fragment)
}

/// Rules and causes whose SGLang texts match `message`, best first (a rule before a cause of the
/// same score). Matches below `0.5` are dropped.
pub fn explain(message: &str) -> Vec<Explanation> {
    let msg = normalize(message);
    let mut out: Vec<Explanation> = Vec::new();
    let known = RULES.iter().map(|r| Known::Rule(r)).chain(CAUSES.iter().map(Known::Cause));
    for known in known {
        let best = known.sglang_errors().iter().map(|t| (score(&msg, t), *t)).max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((s, t)) = best {
            if s >= 0.5 {
                out.push(Explanation { known, matched: t, score: s });
            }
        }
    }
    let cause = |e: &Explanation| matches!(e.known, Known::Cause(_));
    // Codes are unique.
    crate::sort::sort_by(&mut out, |a, b| {
        b.score.total_cmp(&a.score).then(cause(a).cmp(&cause(b))).then(a.known.code().cmp(b.known.code()))
    });
    out
}

/// A known message found in a log excerpt.
#[derive(Clone, Debug)]
pub struct Found {
    /// 1-based line of the excerpt.
    pub line: usize,
    /// That line, trimmed.
    pub text: String,
    /// The rules and causes that match it, best first.
    pub explanations: Vec<Explanation>,
}

/// How well a line of a longer excerpt must match: a whole SGLang text, not a few of its words
/// (an excerpt's other lines, a traceback's frames, would otherwise match by chance).
const IN_EXCERPT: f64 = 0.9;

/// Every known message in a log excerpt (several lines, a traceback between them), in the order
/// they appear, each rule or cause once: at the first line it matches whole. A single line is explained
/// as [`explain`] does, fragments included.
pub fn explain_log(text: &str) -> Vec<Found> {
    let lines: Vec<(usize, &str)> =
        text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty()).collect();
    if let [(line, one)] = lines[..] {
        let explanations = explain(one);
        return if explanations.is_empty() {
            Vec::new()
        } else {
            vec![Found { line, text: one.to_owned(), explanations }]
        };
    }
    let mut seen: Vec<&'static str> = Vec::new();
    let mut out = Vec::new();
    for (line, l) in lines {
        let explanations: Vec<Explanation> =
            explain(l).into_iter().filter(|e| e.score >= IN_EXCERPT && !seen.contains(&e.known.code())).collect();
        if explanations.is_empty() {
            continue;
        }
        seen.extend(explanations.iter().map(|e| e.known.code()));
        out.push(Found { line, text: l.to_owned(), explanations });
    }
    out
}

/// One answer to what a user pasted: a rule or cause, the SGLang text it matched (none when the
/// user named it), how well, and, in a log excerpt, the line it was found on.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The rule or cause.
    pub known: Known,
    /// The SGLang text that matched; `None` when the text named the rule or cause.
    pub matched: Option<&'static str>,
    /// How well, 0..=1.
    pub score: f64,
    /// In an excerpt of several lines: the 1-based line and its text.
    pub line: Option<(usize, String)>,
}

/// What `pdlaunch explain` and the app's Explain tab answer for `text`: the rule or cause it names
/// (a code or a name), else the rules and causes its messages match ([`explain_log`]), each under
/// its line when the text has several.
pub fn answer(text: &str) -> Vec<Answer> {
    if let Some(known) = Known::find(text.trim()) {
        return vec![Answer { known, matched: None, score: 1.0, line: None }];
    }
    let excerpt = text.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    explain_log(text)
        .into_iter()
        .flat_map(|f| {
            let line = excerpt.then(|| (f.line, f.text.clone()));
            f.explanations.into_iter().map(move |e| Answer {
                known: e.known,
                matched: Some(e.matched),
                score: e.score,
                line: line.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_the_named_rule_or_the_matches_under_their_lines() {
        let named = answer(" pd001 ");
        assert_eq!(
            (named.len(), named[0].known.code(), named[0].matched, named[0].line.clone()),
            (1, "PD001", None, None)
        );
        let one = answer(SEED);
        assert_eq!(one[0].known.code(), "PD001");
        assert!(one[0].matched.is_some() && one[0].line.is_none());
        let log = format!("\nINFO start\n{SEED}\n");
        let lines: Vec<_> = answer(&log).into_iter().map(|a| a.line.map(|(n, _)| n)).collect();
        assert_eq!(lines[0], Some(3));
        assert!(answer("nothing known here").is_empty());
    }

    #[test]
    fn a_log_excerpt_explains_each_known_message_once_in_order() {
        let log = "\
[2026-12-02 10:00:01] INFO server_args=ServerArgs(model_path='m', page_size=1, ...)
Traceback (most recent call last):
  File \"/usr/lib/python3/site-packages/sglang/srt/disaggregation/decode.py\", line 3480, in process_decode_queue
    self.polling_count = (self.polling_count + 1) % self.polling_interval
ZeroDivisionError: integer modulo by zero
[2026-12-02 10:00:02] ERROR Prefill server does not support 'fake' as the transfer backend
Traceback (most recent call last):
  File \"/usr/lib/python3/site-packages/sglang/srt/disaggregation/decode.py\", line 512, in _connect
    raise RuntimeError(
RuntimeError: Page size mismatch: prefill server has page_size=64, but decode server has page_size=1. \
Both servers must use the same --page-size value.
[2026-12-02 10:00:03] ERROR Page size mismatch: prefill server has page_size=64, but decode server has page_size=1.
";
        let found = explain_log(log);
        let codes: Vec<&str> = found.iter().map(|f| f.explanations[0].known.code()).collect();
        assert_eq!(codes, ["PD052", "PD013", "PD001"], "{found:#?}");
        assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), [5, 6, 10]);
        assert!(found[2].text.starts_with("RuntimeError: Page size mismatch"));
        // One line is explained as before, a fragment too; nothing known, nothing found.
        assert_eq!(
            explain_log("page size mismatch: prefill server has page_size=")[0].explanations[0].known.code(),
            "PD001"
        );
        assert!(explain_log("INFO all good\nINFO still good\n").is_empty());
        assert!(explain_log("").is_empty());
    }

    const SEED: &str = "RuntimeError: Page size mismatch: prefill server has page_size=64, but decode server \
        has page_size=1. Both servers must use the same --page-size value.";

    #[test]
    fn the_seed_message_names_pd001() {
        let e = explain(SEED);
        assert_eq!(e[0].known.code(), "PD001");
        assert!(e[0].score > 0.99);
    }

    #[test]
    fn the_template_form_and_a_fragment_match() {
        assert_eq!(
            explain("Page size mismatch: prefill server has page_size={info.page_size}")[0].known.code(),
            "PD001"
        );
        assert_eq!(explain("page size mismatch: prefill server has page_size=")[0].known.code(), "PD001");
    }

    #[test]
    fn unrelated_text_matches_nothing() {
        assert!(explain("Segmentation fault (core dumped) in libfoo").is_empty());
        assert!(explain("").is_empty());
    }
}
