//! SGLang's own argparse specs (embedded, one per release) and a faithful simulation of how
//! argparse reads an argv with them: aliases, `--flag=value`, unique-prefix abbreviations,
//! `nargs`, choices, types and "last one wins".
//!
//! Spellings and destinations are looked up in a small open-addressing index keyed by length and
//! first and last bytes; each option use keeps its option's index.

use std::borrow::Cow;

use serde::Deserialize;

use crate::fast_hash::{FastMap, NameIndex};

/// One argparse option as SGLang declares it.
#[derive(Clone, Debug, Deserialize)]
pub struct SpecFlag {
    /// Every spelling; the first is the main one.
    pub flags: Vec<String>,
    /// The attribute the option stores into.
    pub dest: String,
    /// The argparse action class name (`_StoreAction`, `_StoreTrueAction`, ...).
    pub action: String,
    /// The converter's name (`int`, `float`, `str`, or a SGLang helper), if any.
    #[serde(rename = "type")]
    pub ty: Option<String>,
    /// Allowed values, when restricted.
    pub choices: Option<Vec<serde_json::Value>>,
    /// The parser default.
    pub default: serde_json::Value,
    /// argparse `nargs` (`null`, `0`, `"+"`, `"*"`, `"?"`, `1`).
    pub nargs: serde_json::Value,
}

impl SpecFlag {
    /// How many values the option takes after its name.
    pub fn arity(&self) -> Arity {
        if self.action.contains("StoreTrue")
            || self.action.contains("StoreFalse")
            || self.action.contains("StoreConst")
            || self.action.contains("BooleanOptional")
        {
            return Arity::Zero;
        }
        match &self.nargs {
            serde_json::Value::String(s) if s == "+" => Arity::OneOrMore,
            serde_json::Value::String(s) if s == "*" => Arity::ZeroOrMore,
            serde_json::Value::String(s) if s == "?" => Arity::Optional,
            serde_json::Value::Number(n) if n.as_u64() == Some(0) => Arity::Zero,
            _ => Arity::One,
        }
    }

    /// True when argparse marks the option deprecated (SGLang's `Deprecated*Action`).
    pub fn is_deprecated(&self) -> bool {
        self.action.starts_with("Deprecated")
    }

    /// The allowed values as strings, if restricted.
    pub fn choice_strings(&self) -> Option<Vec<String>> {
        self.choices.as_ref().map(|c| c.iter().map(json_to_arg).collect())
    }
}

/// Number of values an option consumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Zero,
    One,
    Optional,
    OneOrMore,
    ZeroOrMore,
}

/// Destinations SGLang renamed: (old name in releases before 0.5.19, name since). Reading an argv
/// reports the new name, so rules ask for one name whatever the release.
pub const DEST_RENAMES: &[(&str, &str)] = &[
    ("tensor_parallel_size", "tp_size"),
    ("pipeline_parallel_size", "pp_size"),
    ("data_parallel_size", "dp_size"),
    ("expert_parallel_size", "ep_size"),
    ("attention_context_parallel_size", "attn_cp_size"),
];

/// The current name of a destination.
pub fn canonical_dest(dest: &str) -> &str {
    DEST_RENAMES.iter().find(|(old, _)| *old == dest).map_or(dest, |(_, new)| new)
}

/// The full option list of one release of one program.
#[derive(Debug)]
pub struct Spec {
    /// The options in declaration order.
    pub flags: Vec<SpecFlag>,
    /// What parsing and the rules need of each option, worked out once.
    meta: Vec<FlagMeta>,
    /// Every spelling: its option, and its place in that option's `flags`.
    by_spelling: NameIndex<(usize, usize)>,
    /// Every spelling, sorted, for prefix abbreviations and suggestions.
    spellings: Vec<(String, usize)>,
    /// First option of each destination, by its current name (rules ask for defaults often).
    by_dest: NameIndex<usize>,
}

/// Facts about one option derived from its declaration, computed when the spec is read.
#[derive(Debug)]
struct FlagMeta {
    arity: Arity,
    choices: Option<Vec<String>>,
    append: bool,
    /// The current name of its destination.
    dest: String,
    /// The default as it would be written on a command line (`None` for a `null` default).
    default: Option<String>,
}

/// The embedded specs of every release, deduplicated: each distinct option declaration once in a
/// pool, and per release the pool indices of its options in declaration order. Generated from the
/// per-release files in `spec/` by the `bundle_is_current` test (run it with
/// `PDLAUNCH_UPDATE_SPECS=1` after adding a release).
///
/// A line format, read by [`read_bundle`] (smaller than JSON, and read without a derived
/// deserializer, which the browser app would carry):
/// - `[server]` or `[router]` starts a program's part;
/// - `@VERSION RANGES` lists a release's pool indices in declaration order, as `A` or `A-B`
///   (inclusive) separated by spaces;
/// - any other line is the next pool entry: seven tab-separated fields `spellings`, `dest`,
///   `action`, `type`, `choices`, `default`, `nargs`. Spellings are separated by spaces, and
///   empty means the one spelling `--` + dest with `-` for `_`; an empty type is none; choices,
///   default and nargs are JSON, and an empty choices or nargs is `null`.
const BUNDLE: &str = include_str!("../spec/bundle.txt");

/// One program's part of [`BUNDLE`].
#[derive(Default)]
struct ProgramSpecs {
    /// Distinct declarations.
    pool: Vec<SpecFlag>,
    /// Release version -> indices into `pool`.
    releases: std::collections::BTreeMap<String, Vec<usize>>,
}

#[derive(Default)]
struct Bundle {
    server: ProgramSpecs,
    router: ProgramSpecs,
}

/// Reads [`BUNDLE`]'s format. The text ships inside the crate and a test reads it back against
/// the per-release files, so a malformed line is a build bug.
fn read_bundle(text: &str) -> Bundle {
    let json = |t: &str| -> serde_json::Value { serde_json::from_str(t).expect("JSON in the spec bundle") };
    let mut bundle = Bundle::default();
    let mut part = &mut bundle.server;
    for line in text.lines() {
        if line == "[server]" {
            part = &mut bundle.server;
        } else if line == "[router]" {
            part = &mut bundle.router;
        } else if let Some(rest) = line.strip_prefix('@') {
            let (version, ranges) = rest.split_once(' ').unwrap_or((rest, ""));
            let mut indices = Vec::new();
            for range in ranges.split(' ').filter(|r| !r.is_empty()) {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                let index = |t: &str| t.parse::<usize>().expect("a pool index in the spec bundle");
                indices.extend(index(a)..=index(b));
            }
            part.releases.insert(version.to_owned(), indices);
        } else {
            let mut f = line.split('\t');
            let mut field = || f.next().expect("seven fields per spec bundle entry");
            let (spellings, dest, action, ty) = (field(), field(), field(), field());
            let (choices, default, nargs) = (field(), field(), field());
            let flags = match spellings {
                "" => vec![format!("--{}", dest.replace('_', "-"))],
                s => s.split(' ').map(str::to_owned).collect(),
            };
            part.pool.push(SpecFlag {
                flags,
                dest: dest.to_owned(),
                action: action.to_owned(),
                ty: (!ty.is_empty()).then(|| ty.to_owned()),
                choices: (!choices.is_empty()).then(|| match json(choices) {
                    serde_json::Value::Array(a) => a,
                    other => panic!("spec bundle choices are a list, not {other}"),
                }),
                default: json(default),
                nargs: if nargs.is_empty() { serde_json::Value::Null } else { json(nargs) },
            });
        }
    }
    bundle
}

/// Which program's argparse spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Program {
    /// `python -m sglang.launch_server`.
    Server,
    /// `python -m sglang_router.launch_router`.
    Router,
}

fn bundle() -> &'static Bundle {
    static CELL: std::sync::OnceLock<Bundle> = std::sync::OnceLock::new();
    CELL.get_or_init(|| read_bundle(BUNDLE))
}

impl Spec {
    /// The spec of one release of one program. The bundle ships inside the crate and has an entry
    /// for every known release (a test checks), so a failure is a build bug.
    pub(crate) fn embedded(program: Program, version: &str) -> Spec {
        let part = match program {
            Program::Server => &bundle().server,
            Program::Router => &bundle().router,
        };
        let indices = part.releases.get(version).expect("every known release is in the spec bundle");
        Spec::from_flags(indices.iter().map(|&i| part.pool[i].clone()).collect())
    }

    /// Builds the lookup tables over a release's options.
    fn from_flags(flags: Vec<SpecFlag>) -> Spec {
        let mut by_spelling = FastMap::default();
        let mut by_dest: FastMap<String, usize> = FastMap::default();
        for (i, f) in flags.iter().enumerate() {
            for (j, s) in f.flags.iter().enumerate() {
                by_spelling.insert(s.clone(), (i, j));
            }
            by_dest.entry(canonical_dest(&f.dest).to_owned()).or_insert(i);
        }
        // Old destination names find the option directly (rules ask by either name).
        for (old, new) in DEST_RENAMES {
            if let Some(&i) = by_dest.get(*new) {
                by_dest.entry((*old).to_owned()).or_insert(i);
            }
        }
        let mut spellings: Vec<(String, usize)> = by_spelling.iter().map(|(k, &(i, _))| (k.clone(), i)).collect();
        crate::sort::sort(&mut spellings);
        let meta = flags
            .iter()
            .map(|f| FlagMeta {
                arity: f.arity(),
                choices: f.choice_strings(),
                append: f.action.contains("Append"),
                dest: canonical_dest(&f.dest).to_owned(),
                default: (!f.default.is_null()).then(|| json_to_arg(&f.default)),
            })
            .collect();
        let by_spelling = NameIndex::new(by_spelling.into_iter().collect());
        let by_dest = NameIndex::new(by_dest.into_iter().collect());
        Spec { flags, meta, by_spelling, spellings, by_dest }
    }

    /// The default of the option that stores into `dest`, as written on a command line; `None`
    /// when the option is unknown or its default is `null`.
    pub fn default_text(&self, dest: &str) -> Option<&str> {
        self.by_dest.get(dest).and_then(|&i| self.meta[i].default.as_deref())
    }

    /// The option with exactly this spelling.
    pub fn get(&self, spelling: &str) -> Option<&SpecFlag> {
        self.by_spelling.get(spelling).map(|&(i, _)| &self.flags[i])
    }

    /// The option that stores into `dest` (current or pre-rename name).
    pub fn by_dest(&self, dest: &str) -> Option<&SpecFlag> {
        self.by_dest.get(dest).map(|&i| &self.flags[i])
    }

    /// Resolves a spelling the way argparse does: exact, else a unique prefix of a long option.
    pub fn resolve(&self, spelling: &str) -> Result<&SpecFlag, LookupError> {
        self.resolve_index(spelling).map(|i| &self.flags[i])
    }

    /// [`Self::resolve`], as an index into [`Self::flags`].
    fn resolve_index(&self, spelling: &str) -> Result<usize, LookupError> {
        if let Some(&(i, _)) = self.by_spelling.get(spelling) {
            return Ok(i);
        }
        if spelling.starts_with("--") && spelling.len() > 2 {
            // The spellings starting with `spelling` form one run of the sorted list.
            let from = self.spellings.partition_point(|(k, _)| k.as_str() < spelling);
            let hits = &self.spellings[from..];
            let n = hits.iter().take_while(|(k, _)| k.starts_with(spelling)).count();
            let hits = &hits[..n];
            let mut dests = std::collections::BTreeSet::new();
            dests.extend(hits.iter().map(|&(_, i)| i));
            match dests.len() {
                1 => return Ok(*dests.iter().next().expect("one element")),
                0 => {}
                _ => return Err(LookupError::Ambiguous(hits.iter().map(|(k, _)| k.clone()).collect())),
            }
        }
        Err(LookupError::Unknown { suggestion: self.suggest(spelling) })
    }

    /// The closest known spelling, for "did you mean".
    pub fn suggest(&self, spelling: &str) -> Option<String> {
        let limit = (spelling.len() / 4).max(2);
        let chars = spelling.chars().count();
        self.spellings
            .iter()
            // The distance is at least the difference in length: skip what cannot be close.
            .filter(|(k, _)| k.chars().count().abs_diff(chars) <= limit)
            .map(|(k, _)| (edit_distance(spelling, k), k))
            .filter(|(d, _)| *d <= limit)
            .min()
            .map(|(_, k)| k.clone())
    }
}

/// Why a spelling did not resolve to one option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupError {
    Unknown { suggestion: Option<String> },
    Ambiguous(Vec<String>),
}

/// A value argparse stored.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A flag without a value (`store_true` and friends): `true` for `--x`, `false` for `--no-x`.
    Switch(bool),
    /// One value.
    One(String),
    /// Several values (`nargs="+"` / `"*"`), or the appended groups of an `append` action.
    Many(Vec<String>),
}

impl ArgValue {
    /// The value as one string (several values joined by spaces).
    pub fn as_text(&self) -> String {
        self.text().into_owned()
    }

    /// [`Self::as_text`], borrowed unless values are joined.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            ArgValue::Switch(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
            ArgValue::One(s) => Cow::Borrowed(s),
            ArgValue::Many(v) => Cow::Owned(v.join(" ")),
        }
    }
}

/// One option occurrence in an argv.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgUse {
    /// The attribute it stores into.
    pub dest: &'static str,
    /// The spelling as written (without `=value`): borrowed from the spec unless abbreviated.
    pub spelling: Cow<'static, str>,
    /// The main spelling of the option.
    pub canonical: &'static str,
    /// The option's index in the spec's [`Spec::flags`] (what rules look it up by).
    pub flag: usize,
    /// What it stores.
    pub value: ArgValue,
    /// Index of the option token in the argv.
    pub index: usize,
}

/// A problem argparse (or SGLang right after it) would report.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgProblem {
    /// Index of the offending token in the argv.
    pub index: usize,
    /// The token.
    pub token: String,
    /// What is wrong, in argparse's terms.
    pub kind: ArgProblemKind,
}

/// The kinds of [`ArgProblem`].
#[derive(Clone, Debug, PartialEq)]
pub enum ArgProblemKind {
    Unknown { suggestion: Option<String> },
    Ambiguous(Vec<String>),
    MissingValue,
    BadChoice { value: String, choices: Vec<String> },
    BadType { value: String, ty: String },
    Positional,
    UnexpectedValue,
}

impl std::fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.token;
        match &self.kind {
            ArgProblemKind::Unknown { suggestion: Some(s) } => {
                write!(f, "unrecognized argument `{t}` (did you mean `{s}`?)")
            }
            ArgProblemKind::Unknown { suggestion: None } => write!(f, "unrecognized argument `{t}`"),
            ArgProblemKind::Ambiguous(c) => {
                write!(f, "ambiguous option `{t}` could match {}", c.join(", "))
            }
            ArgProblemKind::MissingValue => write!(f, "`{t}` expects a value"),
            ArgProblemKind::BadChoice { value, choices } => {
                write!(f, "`{t}`: invalid choice `{value}` (choose from {})", choices.join(", "))
            }
            ArgProblemKind::BadType { value, ty } => write!(f, "`{t}`: invalid {ty} value `{value}`"),
            ArgProblemKind::Positional => write!(f, "unrecognized positional argument `{t}`"),
            ArgProblemKind::UnexpectedValue => write!(f, "`{t}` takes no value"),
        }
    }
}

/// The result of reading an argv.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Every option occurrence, in order.
    pub uses: Vec<ArgUse>,
    /// Everything argparse would reject.
    pub problems: Vec<ArgProblem>,
}

impl Parsed {
    /// The value argparse ends up with for `dest` (the last occurrence wins; `append` accumulates).
    pub fn get(&self, dest: &str) -> Option<&ArgValue> {
        self.uses.iter().rev().find(|u| u.dest == dest).map(|u| &u.value)
    }

    /// The last occurrence of `dest`.
    pub fn last_use(&self, dest: &str) -> Option<&ArgUse> {
        self.uses.iter().rev().find(|u| u.dest == dest)
    }

    /// Every occurrence of `dest`.
    pub fn all<'a>(&'a self, dest: &'a str) -> impl Iterator<Item = &'a ArgUse> + 'a {
        self.uses.iter().filter(move |u| u.dest == dest)
    }
}

fn looks_like_option(tok: &str) -> bool {
    // `--x` is never a number; only `-…` needs the (slower) number test.
    tok.starts_with("--") && tok.len() > 2
        || tok.starts_with('-') && tok.len() > 1 && crate::float::parse(tok).is_none()
}

/// Reads `argv` (the arguments after the program) as argparse would with `spec`.
pub fn parse_argv(spec: &'static Spec, argv: &[String]) -> Parsed {
    // Most options take one value: about one use per two tokens (no allocation for no tokens).
    let mut out = Parsed { uses: Vec::with_capacity(argv.len().div_ceil(2)), ..Parsed::default() };
    let mut i = 0;
    while i < argv.len() {
        let tok = &argv[i];
        if !looks_like_option(tok) {
            out.problems.push(ArgProblem { index: i, token: tok.clone(), kind: ArgProblemKind::Positional });
            i += 1;
            continue;
        }
        // Most tokens are exact spellings (none holds `=`); only other long options are split at
        // an inline `=value`. `exact` is the spelling's place in its option's `flags`.
        let (name, inline, found) = match spec.by_spelling.get(tok.as_str()) {
            Some(&(k, j)) => (tok.as_str(), None, Ok((k, Some(j)))),
            None => {
                let eq = if tok.starts_with("--") { memchr::memchr(b'=', tok.as_bytes()) } else { None };
                let (name, inline) = match eq {
                    Some(eq) => (&tok[..eq], Some(&tok[eq + 1..])),
                    None => (tok.as_str(), None),
                };
                (name, inline, spec.resolve_index(name).map(|k| (k, None)))
            }
        };
        let (k, exact) = match found {
            Ok(found) => found,
            Err(e) => {
                let kind = match e {
                    LookupError::Unknown { suggestion } => ArgProblemKind::Unknown { suggestion },
                    LookupError::Ambiguous(c) => ArgProblemKind::Ambiguous(c),
                };
                out.problems.push(ArgProblem { index: i, token: name.to_owned(), kind });
                i += 1;
                // Skip the values of the unknown option so they are not reported twice.
                while i < argv.len() && !looks_like_option(&argv[i]) {
                    i += 1;
                }
                continue;
            }
        };
        let (flag, meta) = (&spec.flags[k], &spec.meta[k]);
        let start = i;
        i += 1;
        let arity = meta.arity;
        // The values: the inline `=value`, or the tokens `values` of argv (no copies yet).
        let mut values = i..i;
        if inline.is_some() {
            if arity == Arity::Zero {
                out.problems.push(ArgProblem {
                    index: start,
                    token: name.to_owned(),
                    kind: ArgProblemKind::UnexpectedValue,
                });
                continue;
            }
        } else {
            match arity {
                Arity::Zero => {}
                Arity::One | Arity::Optional => {
                    if i < argv.len() && !looks_like_option(&argv[i]) {
                        i += 1;
                    }
                }
                Arity::OneOrMore | Arity::ZeroOrMore => {
                    while i < argv.len() && !looks_like_option(&argv[i]) {
                        i += 1;
                    }
                }
            }
            values.end = i;
        }
        let given: &[String] = &argv[values];
        let value_strs = || inline.into_iter().chain(given.iter().map(String::as_str));
        let needs_value = matches!(arity, Arity::One | Arity::OneOrMore);
        if needs_value && inline.is_none() && given.is_empty() {
            out.problems.push(ArgProblem { index: start, token: name.to_owned(), kind: ArgProblemKind::MissingValue });
            continue;
        }
        let mut bad = false;
        for v in value_strs() {
            if let Some(choices) = &meta.choices {
                if !choices.iter().any(|c| c == v) {
                    out.problems.push(ArgProblem {
                        index: start,
                        token: name.to_owned(),
                        kind: ArgProblemKind::BadChoice { value: v.to_owned(), choices: choices.clone() },
                    });
                    bad = true;
                    continue;
                }
            }
            if let Some(ty) = &flag.ty {
                if !type_accepts(ty, v) {
                    out.problems.push(ArgProblem {
                        index: start,
                        token: name.to_owned(),
                        kind: ArgProblemKind::BadType { value: v.to_owned(), ty: ty.clone() },
                    });
                    bad = true;
                }
            }
        }
        if bad {
            continue;
        }
        let value = match arity {
            Arity::Zero => ArgValue::Switch(!name.starts_with("--no-") || flag.flags[0].starts_with("--no-")),
            Arity::One | Arity::Optional if !meta.append => {
                ArgValue::One(value_strs().last().map(str::to_owned).unwrap_or_default())
            }
            _ => ArgValue::Many(value_strs().map(str::to_owned).collect()),
        };
        let dest = meta.dest.as_str();
        let value = if meta.append {
            // `append` keeps every group; flatten into one list of groups joined by a tab.
            let mut groups = match out.get(dest) {
                Some(ArgValue::Many(prev)) => prev.clone(),
                _ => Vec::new(),
            };
            groups.push(match value {
                ArgValue::Many(v) => v.join("\t"),
                other => other.as_text(),
            });
            ArgValue::Many(groups)
        } else {
            value
        };
        let spelling = match exact.or_else(|| flag.flags.iter().position(|f| f == name)) {
            Some(j) => Cow::Borrowed(flag.flags[j].as_str()),
            None => Cow::Owned(name.to_owned()),
        };
        out.uses.push(ArgUse { dest, spelling, canonical: flag.flags[0].as_str(), flag: k, value, index: start });
    }
    out
}

fn type_accepts(ty: &str, v: &str) -> bool {
    match ty {
        "int" => v.parse::<i64>().is_ok(),
        "float" => crate::float::parse(v).is_some(),
        "human_readable_int" => parse_human_int(v).is_some(),
        // `json.loads` and SGLang's `json_list_type` (`orjson.loads`): any JSON text, which
        // argparse rejects otherwise (`invalid loads value`, `Invalid JSON list`).
        "loads" | "json_list_type" => serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok(),
        _ => true,
    }
}

/// SGLang's `human_readable_int`: `4096`, `128k`, `1M`, `2.5k` (k = 1000, K/Ki = 1024).
pub fn parse_human_int(v: &str) -> Option<i64> {
    if let Ok(n) = v.parse::<i64>() {
        return Some(n);
    }
    let t = v.trim();
    let (num, mult) = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("K", 1024.0),
        ("k", 1000.0),
        ("M", 1e6),
        ("m", 1e6),
        ("G", 1e9),
        ("g", 1e9),
    ]
    .iter()
    .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n, *m)))?;
    let x = crate::float::parse(num)?;
    let r = x * mult;
    (r.is_finite() && r.fract() == 0.0).then_some(r as i64)
}

/// Renders a JSON spec value the way it would appear on a command line.
pub fn json_to_arg(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Levenshtein distance, for suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    /// The per-release spec files in `spec/`, read as JSON.
    fn raw_specs(program: Program) -> Vec<(String, serde_json::Value)> {
        let (prefix, versions): (&str, Vec<&str>) = match program {
            Program::Server => ("server", Release::ALL.iter().map(|r| r.as_str()).collect()),
            Program::Router => ("router", crate::release::RouterRelease::ALL.iter().map(|r| r.as_str()).collect()),
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec");
        versions
            .into_iter()
            .map(|v| {
                let path = dir.join(format!("{prefix}-args-{v}.json"));
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                (v.to_owned(), serde_json::from_str(&text).expect("spec file is JSON"))
            })
            .collect()
    }

    /// Deduplicates one program's per-release specs into a pool and index lists, written in
    /// [`BUNDLE`]'s format.
    fn bundle_part(program: Program, out: &mut String) {
        const FIELDS: [&str; 7] = ["flags", "dest", "action", "type", "choices", "default", "nargs"];
        let mut pool: Vec<String> = Vec::new();
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        out.push_str(match program {
            Program::Server => "[server]\n",
            Program::Router => "[router]\n",
        });
        for (version, file) in raw_specs(program) {
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            for flag in file["flags"].as_array().expect("a flags list") {
                let obj = flag.as_object().expect("a flag object");
                assert!(obj.keys().all(|k| FIELDS.contains(&k.as_str())), "unexpected key in {version}: {obj:?}");
                let entry = bundle_entry(obj);
                let next = pool.len();
                let i = *seen.entry(entry.clone()).or_insert(next);
                if i == next {
                    pool.push(entry);
                }
                match ranges.last_mut() {
                    Some((_, end)) if *end + 1 == i => *end = i,
                    _ => ranges.push((i, i)),
                }
            }
            out.push('@');
            out.push_str(&version);
            for (a, b) in ranges {
                out.push_str(&if a == b { format!(" {a}") } else { format!(" {a}-{b}") });
            }
            out.push('\n');
        }
        for entry in pool {
            out.push_str(&entry);
            out.push('\n');
        }
    }

    /// One declaration as a line of [`BUNDLE`]'s format.
    fn bundle_entry(obj: &serde_json::Map<String, serde_json::Value>) -> String {
        let text = |k: &str| -> String {
            let s = obj[k].as_str().unwrap_or_else(|| panic!("{k} is text: {obj:?}"));
            assert!(!s.is_empty() && !s.contains(['\t', '\n', ' ']), "{k} fits the bundle format: {obj:?}");
            s.to_owned()
        };
        let dest = text("dest");
        let flags: Vec<&str> =
            obj["flags"].as_array().expect("flags").iter().map(|f| f.as_str().expect("a spelling")).collect();
        assert!(!flags.is_empty() && flags.iter().all(|f| !f.is_empty() && !f.contains(['\t', '\n', ' '])), "{obj:?}");
        let spellings =
            if flags == [format!("--{}", dest.replace('_', "-"))] { String::new() } else { flags.join(" ") };
        let ty = if obj["type"].is_null() { String::new() } else { text("type") };
        let or_empty = |v: &serde_json::Value| if v.is_null() { String::new() } else { v.to_string() };
        [
            spellings,
            dest,
            text("action"),
            ty,
            or_empty(&obj["choices"]),
            obj["default"].to_string(),
            or_empty(&obj["nargs"]),
        ]
        .join("\t")
    }

    #[test]
    fn bundle_is_current() {
        let mut want = String::new();
        bundle_part(Program::Server, &mut want);
        bundle_part(Program::Router, &mut want);
        if std::env::var_os("PDLAUNCH_UPDATE_SPECS").is_some() {
            // The embedded copy is the file as it was built; the file itself must now be current.
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/bundle.txt");
            std::fs::write(&path, &want).expect("write spec/bundle.txt");
            assert!(
                std::fs::read_to_string(&path).expect("read spec/bundle.txt back") == want,
                "spec/bundle.txt was not written"
            );
        } else {
            assert!(BUNDLE == want, "spec/bundle.txt is stale: run this test with PDLAUNCH_UPDATE_SPECS=1");
        }
    }

    #[test]
    fn bundle_gives_back_every_release_exactly() {
        for program in [Program::Server, Program::Router] {
            for (version, file) in raw_specs(program) {
                let raw: Vec<SpecFlag> = serde_json::from_value(file["flags"].clone()).expect("flags");
                let spec = Spec::embedded(program, &version);
                assert_eq!(spec.flags.len(), raw.len(), "{version}");
                for (a, b) in spec.flags.iter().zip(&raw) {
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{version}");
                }
            }
        }
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn last_one_wins_across_aliases() {
        let p = parse_argv(Release::LATEST.spec(), &argv("--tp-size 2 --tensor-parallel-size 4"));
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.get("tp_size"), Some(&ArgValue::One("4".into())));
    }

    #[test]
    fn prefix_abbreviation_and_ambiguity() {
        let p = parse_argv(Release::LATEST.spec(), &argv("--tp 2 --pp 2"));
        assert_eq!(p.get("tp_size"), Some(&ArgValue::One("2".into())));
        assert!(matches!(p.problems[0].kind, ArgProblemKind::Ambiguous(_)), "{:?}", p.problems);
    }

    #[test]
    fn unknown_flag_suggests() {
        let p = parse_argv(Release::LATEST.spec(), &argv("--page-sise 16"));
        assert_eq!(p.problems[0].kind, ArgProblemKind::Unknown { suggestion: Some("--page-size".into()) });
    }

    #[test]
    fn choices_and_types() {
        let p = parse_argv(Release::LATEST.spec(), &argv("--kv-cache-dtype fp9 --page-size x --trust-remote-code"));
        assert_eq!(p.problems.len(), 2);
        assert_eq!(p.get("trust_remote_code"), Some(&ArgValue::Switch(true)));
    }

    #[test]
    fn equals_form_and_router_append() {
        let spec = crate::release::RouterRelease::LATEST.spec();
        let p =
            parse_argv(spec, &argv("--prefill http://a:1 8998 --prefill=http://b:2 --decode http://c:3 --port=8000"));
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.get("prefill"), Some(&ArgValue::Many(vec!["http://a:1\t8998".into(), "http://b:2".into()])));
        assert_eq!(p.get("port"), Some(&ArgValue::One("8000".into())));
    }

    #[test]
    fn renamed_destinations_read_under_their_current_name() {
        let p = parse_argv(Release::V0_5_10.spec(), &argv("--tp-size 4 --pp-size 2"));
        assert_eq!(p.get("tp_size"), Some(&ArgValue::One("4".into())));
        assert_eq!(p.get("pp_size"), Some(&ArgValue::One("2".into())));
        assert!(Release::V0_5_10.spec().by_dest("tp_size").is_some());
    }

    #[test]
    fn human_ints() {
        assert_eq!(parse_human_int("128k"), Some(128_000));
        assert_eq!(parse_human_int("4Ki"), Some(4096));
        assert_eq!(parse_human_int("x"), None);
    }
}
