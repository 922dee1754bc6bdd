//! SGLang 0.5.23's PD error catalogue (`catalogue/pd-errors-0.5.23.jsonl`, see its README) against
//! pdlaunch: every configuration-caused entry (`pair`, `model`, `single` on a PD server) and every
//! PD `environment` entry says which rule prevents it, or which environment cause explains it, or
//! why none does. These tests check each annotation against the code:
//! - a named rule or cause exists, and `explain` of the entry's message (placeholders filled) names
//!   it first;
//! - a `prevented` entry's `case` makes the rule fire on the base 1P1D below, which alone does not;
//! - the coverage figures reach the floors.
//!
//! A `case` is `{"prefill": ARGS, "decode": ARGS, "model": PRESET, "prefill_env": VARS,
//! "decode_env": VARS}`, each optional: SGLang arguments appended to one side's command, a
//! built-in model (`model.preset`) the linter is told of, and `NAME=value` words written before
//! one side's `python` (the variables SGLang reads).

// A native test: the standard sorts, which `clippy.toml` keeps out of the browser app, are fine.
#![allow(clippy::disallowed_methods)]

use pdlaunch_core::causes::CAUSES;
use pdlaunch_core::deployment::Gpu;
use pdlaunch_core::explain::{explain, explain_log};
use pdlaunch_core::lint::{lint, Input, Options};
use pdlaunch_core::rules::{Severity, RULES};
use serde_json::Value;

const CATALOGUE: &str = include_str!("catalogue/pd-errors-0.5.23.jsonl");

/// The keys of an entry, in their order; the last five are optional.
const KEYS: &[&str] = &[
    "file",
    "line",
    "text",
    "class",
    "pd",
    "when",
    "flags",
    "cause",
    "rule",
    "prevented",
    "reason",
    "case",
    "reclassified",
    "sample",
];

/// The keys of a `case`.
const CASE_KEYS: &[&str] = &["prefill", "decode", "model", "prefill_env", "decode_env"];

/// One line of the catalogue.
struct Entry {
    /// 1-based line in the file.
    line: usize,
    raw: &'static str,
    v: Value,
}

impl Entry {
    fn str(&self, key: &str) -> Option<&str> {
        self.v.get(key).and_then(Value::as_str)
    }
    fn class(&self) -> &str {
        self.str("class").unwrap_or_default()
    }
    fn pd(&self) -> bool {
        self.v["pd"] == true
    }
    /// One of the configuration-caused entries: `pair`, `model`, or `single` on a PD server.
    fn configuration(&self) -> bool {
        self.pd() && matches!(self.class(), "pair" | "model" | "single")
    }
    /// One of the PD `environment` entries.
    fn environment(&self) -> bool {
        self.class() == "environment" && self.pd()
    }
    fn rule(&self) -> Option<&str> {
        self.str("rule")
    }
    fn prevented(&self) -> bool {
        self.v["prevented"] == true
    }
    /// The message as SGLang prints it: the `sample`, else the text with every `{...}` filled.
    fn message(&self) -> String {
        self.str("sample").map_or_else(|| fill(self.str("text").unwrap_or_default()), str::to_owned)
    }
    fn at(&self) -> String {
        format!(
            "line {} ({}:{}: {:.70})",
            self.line,
            self.str("file").unwrap_or_default(),
            self.v["line"],
            self.str("text").unwrap_or_default()
        )
    }
}

fn entries() -> Vec<Entry> {
    CATALOGUE
        .lines()
        .enumerate()
        .map(|(i, raw)| {
            let v = serde_json::from_str(raw).unwrap_or_else(|e| panic!("catalogue line {}: {e}", i + 1));
            Entry { line: i + 1, raw, v }
        })
        .collect()
}

/// `text` with every `{...}` placeholder (braces nested within it too) replaced by `7`.
fn fill(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    out.push('7');
                }
                depth += 1;
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The harness's base, `rules::testing::pd_script(p, d)` of the core's rule tests: a docs-style
/// 1P1D of Llama-3.1-8B on one machine, the prefill on the GPUs from 0, the decode from 4, and a
/// router; `pe`/`de` are variables set before each side's `python`.
fn pd_script(p: &str, d: &str, pe: &str, de: &str) -> String {
    let env = |e: &str| if e.is_empty() { String::new() } else { format!("{e} ") };
    format!(
        "{}python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode prefill \
         --port 30000 --disaggregation-ib-device mlx5_roce0{p} &\n\
         {}python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode decode \
         --port 30001 --base-gpu-id 4 --disaggregation-ib-device mlx5_roce0{d} &\n\
         python -m sglang_router.launch_router --pd-disaggregation --prefill http://127.0.0.1:30000 \
         --decode http://127.0.0.1:30001 --host 0.0.0.0 --port 8000\n",
        env(pe),
        env(de)
    )
}

/// The codes that fire (errors and warnings; a note says a rule could not run) when `script` is
/// linted on H100s, the model named `preset` when one is.
fn firing(script: &str, preset: Option<&str>) -> Vec<&'static str> {
    let opts = Options { gpu: Some(Gpu::H100), model_preset: preset.map(str::to_owned), ..Default::default() };
    let linted = lint(&[Input::new("launch.sh", script)], &opts);
    let mut codes: Vec<&str> =
        linted.findings.iter().filter(|f| f.finding.severity != Severity::Note).map(|f| f.finding.code).collect();
    codes.sort();
    codes.dedup();
    codes
}

/// Whether the entry's case makes its rule fire, where the base alone does not; `Err` says why not.
fn case_holds(e: &Entry) -> Result<(), String> {
    let code = e.rule().ok_or("no rule")?;
    let case = e.v.get("case").filter(|c| c.is_object()).ok_or("no case")?;
    let part = |k: &str| case.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let words = |k: &str| {
        let s = part(k);
        if s.is_empty() {
            s
        } else {
            format!(" {s}")
        }
    };
    let model = case.get("model").and_then(Value::as_str);
    let base = pd_script("", "", "", "");
    let with = pd_script(&words("prefill"), &words("decode"), &part("prefill_env"), &part("decode_env"));
    let (without, fired) = (firing(&base, model), firing(&with, model));
    if without.contains(&code) {
        return Err(format!("{code} fires on the base alone (model {model:?})"));
    }
    if !fired.contains(&code) {
        return Err(format!("{code} does not fire with the case; fired: {fired:?}\n{with}"));
    }
    Ok(())
}

/// The code `explain` names first for the entry's message.
fn explained_as(e: &Entry) -> Option<&'static str> {
    explain(&e.message()).first().map(|x| x.known.code())
}

/// An entry that carries the annotation fields but none of their values yet (the copy's first
/// state: no rule, not prevented, an empty reason).
fn unannotated(v: &Value) -> bool {
    v["rule"].is_null() && v["prevented"] == false && v["reason"].as_str().is_none_or(str::is_empty)
}

fn is_code(code: &str) -> bool {
    RULES.iter().any(|r| r.code == code) || CAUSES.iter().any(|c| c.code == code)
}

#[test]
fn every_annotation_is_well_formed() {
    let all = entries();
    let mut problems = Vec::new();
    for e in &all {
        let Some(obj) = e.v.as_object() else {
            problems.push(format!("{}: not an object", e.at()));
            continue;
        };
        // Known keys, in the file's order (so that two branches' edits merge line by line).
        let positions: Vec<usize> = obj
            .keys()
            .map(|k| match KEYS.iter().position(|x| x == k) {
                Some(_) => e.raw.find(&format!("\"{k}\":")).unwrap_or(usize::MAX),
                None => {
                    problems.push(format!("{}: unknown key `{k}`", e.at()));
                    usize::MAX
                }
            })
            .collect();
        let mut order: Vec<(&str, usize)> = KEYS.iter().filter(|k| obj.contains_key(**k)).map(|k| (*k, 0)).collect();
        for (k, at) in order.iter_mut() {
            *at = e.raw.find(&format!("\"{k}\":")).unwrap_or(usize::MAX);
        }
        if order.windows(2).any(|w| w[0].1 > w[1].1) || positions.contains(&usize::MAX) {
            problems.push(format!("{}: keys out of order: {:?}", e.at(), obj.keys().collect::<Vec<_>>()));
        }
        let annotated = obj.contains_key("rule");
        // An entry moved out of the counted classes keeps what was found about it.
        let counted = e.configuration() || e.environment();
        if counted != annotated && !(annotated && obj.contains_key("reclassified")) {
            problems.push(format!(
                "{}: class {} (pd {}) {} annotated",
                e.at(),
                e.class(),
                e.pd(),
                if annotated { "is" } else { "is not" }
            ));
        }
        if let Some(r) = obj.get("reclassified") {
            let from = r.get("from").and_then(Value::as_str);
            let why = r.get("why").and_then(Value::as_str).unwrap_or_default();
            if from.is_none() || from == Some(e.class()) || why.len() < 20 {
                problems.push(format!("{}: `reclassified` needs the old class and why the code shows another", e.at()));
            }
        }
        if !annotated {
            continue;
        }
        let rule = &obj["rule"];
        let prevented = &obj["prevented"];
        // Not yet annotated: the floor test counts these.
        if unannotated(&e.v) {
            continue;
        }
        let reason = obj.get("reason").and_then(Value::as_str).filter(|r| r.trim().len() >= 20);
        match rule.as_str() {
            Some(code) if !is_code(code) => problems.push(format!("{}: `{code}` is no rule or cause", e.at())),
            Some(code) if code.starts_with("ENV") && !e.environment() => {
                problems.push(format!("{}: environment cause {code} on a {} entry", e.at(), e.class()))
            }
            Some(_) => {}
            None if rule.is_null() => {}
            None => problems.push(format!("{}: `rule` is neither a code nor null", e.at())),
        }
        if !prevented.is_boolean() {
            problems.push(format!("{}: `prevented` is not a boolean", e.at()));
        }
        let needs_reason = rule.is_null() || *prevented != true;
        match (needs_reason, reason.is_some(), obj.get("reason").is_some_and(|r| !r.is_null())) {
            (true, false, _) => problems.push(format!("{}: a `reason` sentence is needed", e.at())),
            (false, _, true) => problems.push(format!("{}: a prevented entry needs no `reason`", e.at())),
            _ => {}
        }
        if *prevented == true {
            match (rule.as_str(), obj.get("case")) {
                (Some(c), _) if c.starts_with("ENV") => {
                    problems.push(format!("{}: an environment cause prevents nothing", e.at()))
                }
                (_, Some(Value::Object(case))) => {
                    for (k, v) in case {
                        if !CASE_KEYS.contains(&k.as_str()) || !v.is_string() {
                            problems
                                .push(format!("{}: case key `{k}` is not one of {CASE_KEYS:?} with a string", e.at()));
                        }
                    }
                    if let Some(m) = case.get("model").and_then(Value::as_str) {
                        if pdlaunch_core::model::preset(m).is_none() {
                            problems.push(format!("{}: case model `{m}` is no preset", e.at()));
                        }
                    }
                }
                _ => problems.push(format!("{}: a prevented entry needs its `case`", e.at())),
            }
        } else if obj.contains_key("case") {
            problems.push(format!("{}: a `case` on an entry not prevented", e.at()));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn explain_names_the_rule_of_each_entry() {
    let mut wrong = Vec::new();
    for e in entries() {
        let Some(code) = e.rule() else { continue };
        let got = explained_as(&e);
        if got != Some(code) {
            let others: Vec<String> =
                explain(&e.message()).iter().take(3).map(|x| format!("{} {:.2}", x.known.code(), x.score)).collect();
            wrong.push(format!("{}: annotated {code}, explain names {others:?}", e.at()));
        }
    }
    assert!(wrong.is_empty(), "{} entries:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn each_prevented_entry_fires_with_its_case_and_not_without() {
    let mut wrong = Vec::new();
    let mut ran = 0;
    for e in entries().iter().filter(|e| e.prevented()) {
        ran += 1;
        if let Err(why) = case_holds(e) {
            wrong.push(format!("{}: {why}", e.at()));
        }
    }
    assert!(wrong.is_empty(), "{} of {ran} cases:\n{}", wrong.len(), wrong.join("\n"));
    assert!(ran > 0, "no case ran");
}

/// The figures, each a count of entries whose annotation holds (explain names the rule; the case
/// fires), over the entries the catalogue counts; and the lines of those not annotated yet.
struct Coverage {
    unannotated: Vec<usize>,
    configuration: usize,
    explained: usize,
    prevented: usize,
    environment: usize,
    environment_explained: usize,
}

fn coverage() -> Coverage {
    let all = entries();
    let holds = |e: &&&Entry| e.rule().is_some() && explained_as(e) == e.rule();
    let config: Vec<&Entry> = all.iter().filter(|e| e.configuration()).collect();
    let env: Vec<&Entry> = all.iter().filter(|e| e.environment()).collect();
    Coverage {
        unannotated: config.iter().chain(&env).filter(|e| unannotated(&e.v)).map(|e| e.line).collect(),
        configuration: config.len(),
        explained: config.iter().filter(holds).count(),
        prevented: config.iter().filter(|e| e.prevented() && case_holds(e).is_ok()).count(),
        environment: env.len(),
        environment_explained: env.iter().filter(holds).count(),
    }
}

/// The coverage, printed on every run (the floors are the next test's): every entry that names a
/// rule or cause is explained by it, every one that claims prevention is prevented.
#[test]
fn coverage_is_printed_and_every_claim_holds() {
    let c = coverage();
    eprintln!(
        "catalogue coverage: configuration-caused: explained {}/{}, prevented {}/{}; environment: explained {}/{}",
        c.explained, c.configuration, c.prevented, c.configuration, c.environment_explained, c.environment
    );
    let all = entries();
    let claims = |f: &dyn Fn(&Entry) -> bool, env: bool| {
        all.iter().filter(|e| if env { e.environment() } else { e.configuration() }).filter(|e| f(e)).count()
    };
    let named = |e: &Entry| e.rule().is_some();
    assert_eq!(c.explained, claims(&named, false), "an entry's rule does not explain it");
    assert_eq!(c.environment_explained, claims(&named, true), "an entry's cause does not explain it");
    assert_eq!(c.prevented, claims(&|e: &Entry| e.prevented(), false), "an entry's case does not hold");
}

/// Whole percent of `n`, rounded up.
fn share(n: usize, percent: usize) -> usize {
    (n * percent).div_ceil(100)
}

#[test]
fn coverage_reaches_the_floors() {
    let c = coverage();
    let figures = format!(
        "configuration-caused: explained {}/{}, prevented {}/{}; environment: explained {}/{}",
        c.explained, c.configuration, c.prevented, c.configuration, c.environment_explained, c.environment
    );
    eprintln!("catalogue coverage: {figures}");
    let floors = [
        ("explained", c.explained, share(c.configuration, 90)),
        ("prevented", c.prevented, share(c.configuration, 70)),
        ("environment explained", c.environment_explained, share(c.environment, 80)),
    ];
    let mut short: Vec<String> = floors
        .iter()
        .filter(|(_, n, floor)| n < floor)
        .map(|(what, n, floor)| format!("{what} {n} < {floor}"))
        .collect();
    if !c.unannotated.is_empty() {
        short.push(format!("{} entries not annotated (lines {:?})", c.unannotated.len(), c.unannotated));
    }
    assert!(short.is_empty(), "below the floors: {} ({figures})", short.join(", "));
}

/// Whether `message` is explained by `code` first and, where the catalogue holds the text that
/// matched, its entry names `code` as prevented; the problems found.
fn explained_and_prevented_by(message: &str, code: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let found = explain(message);
    let got: Vec<&str> = found.iter().map(|x| x.known.code()).collect();
    if got.first() != Some(&code) {
        wrong.push(format!("{message:.60}: want {code}, explain names {got:?}"));
    }
    let matched = found.first().map(|x| x.matched);
    for e in entries().iter().filter(|e| matched == e.str("text")) {
        if e.rule() != Some(code) || !e.prevented() {
            wrong.push(format!("{}: should name {code} as prevented", e.at()));
        }
    }
    wrong
}

/// The errors the seed page (SGLang's page-size mismatch) lists as related: each is explained by
/// the rule that prevents it, and where the catalogue holds it, its entry names that rule as
/// prevented. (The fifth, the unified-memory envelope's, is PD081's: see the next test.)
#[test]
fn the_seed_pages_related_errors_are_explained_by_the_rules_that_prevent_them() {
    let related = [
        (
            "KV cache dtype mismatch: prefill server has kv_cache_dtype=fp8_e4m3, but decode server has \
             kv_cache_dtype=auto. Both servers must use the same --kv-cache-dtype value.",
            "PD002",
        ),
        ("kv-canary: RealKvSource.page_size must be >= 1, got 0", "PD016"),
        ("PD DCP source/destination KV geometry differs: src=1152, dst=576", "PD012"),
        ("PD decode DCP currently requires prefill attention CP=1, got 2.", "PD012"),
    ];
    let mut wrong: Vec<String> = related.iter().flat_map(|(m, code)| explained_and_prevented_by(m, code)).collect();
    // The page size the canary reads is the pool's: zero on the decode is found before launch.
    let zero = pd_script("", " --page-size 0 --kv-canary raise", "", "");
    if !firing(&zero, None).contains(&"PD016") {
        wrong.push("a decode with --page-size 0 and the KV canary is not reported by PD016".into());
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_seed_pages_whole_envelope_error_is_explained_by_pd081() {
    let message = "PD KV layout mismatch on the whole-envelope path: prefill has 2 KV region(s) with \
        item_lens=[1024, 1024], decode has 1 with item_len=2048. With --enable-unified-memory both sides must \
        enable it and use the same page size and model spec.";
    let wrong = explained_and_prevented_by(message, "PD081");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A log excerpt with three different errors, a traceback between them and one repeated, gives
/// three explanations in the order the errors appear: two rules and an environment cause.
#[test]
fn a_log_excerpt_gives_one_explanation_per_error_in_order() {
    let log = "\
[2026-12-02 10:00:01 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File \"/usr/lib/python3/dist-packages/sglang/srt/disaggregation/nixl/conn.py\", line 1887, in _poll
    raise RuntimeError(
RuntimeError: NIXL transfer encountered ERR room=8412
[2026-12-02 10:00:02] Traceback (most recent call last):
  File \"/usr/lib/python3/dist-packages/sglang/srt/disaggregation/common/conn.py\", line 1331, in try_ensure_parallel_info
    raise RuntimeError(
RuntimeError: KV cache dtype mismatch: prefill server has kv_cache_dtype=fp8_e4m3, but decode server has \
kv_cache_dtype=auto. Both servers must use the same --kv-cache-dtype value.
[2026-12-02 10:00:03] NIXL transfer encountered ERR room=8413
ValueError: SGLANG_DISAGG_STAGING_BUFFER is designed for non-MLA models (e.g. GQA, MHA). MLA models should not set this flag.
";
    let found = explain_log(log);
    let codes: Vec<&str> = found.iter().map(|f| f.explanations[0].known.code()).collect();
    assert_eq!(codes, ["ENV004", "PD002", "PD032"], "{found:#?}");
    assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), [4, 8, 10]);
}
