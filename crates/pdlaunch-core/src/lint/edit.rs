//! Fixes for linted material: text edits of the files themselves (a value replaced, a flag added
//! or a repeated one removed), written in the file's own syntax (shell words, YAML list items in
//! block or flow style keeping their quoting, `--config` keys). Each edit is simulated on the
//! server before it is offered: a page-size fix must make both sides resolve to the same value.
//!
//! Only values that need no quoting are written (digits, names, URLs), so an edit is valid in any
//! layer it lands in (a `bash -c "…"` string inside a YAML scalar included). A word several
//! servers share (one variable used by both sides) is not edited: that would move the drift.
//!
//! Fixes of a deployment description (the web app's one-click fixes) are
//! [`crate::deployment_fix`].

use super::launch::Launch;
use super::{Group, LintFinding, Linted, ServerEntry};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::read::source::{is_plain, Embed, SourceFile, Word};
use crate::yaml_value;

/// One text edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// Index of the file.
    pub file: usize,
    /// Byte range replaced.
    pub start: usize,
    /// End of the range.
    pub end: usize,
    /// New text.
    pub text: String,
    /// The finding it fixes (`PD001: ...`).
    pub why: String,
}

/// A corrected file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedFile {
    /// File name.
    pub name: String,
    /// The original text.
    pub before: String,
    /// The corrected text.
    pub after: String,
    /// What was fixed, one line per edit.
    pub fixes: Vec<String>,
}

/// Every edit the findings allow, without overlaps.
pub fn edits(linted: &Linted) -> Vec<Edit> {
    let mut out: Vec<Edit> = Vec::new();
    for f in joins_first(linted) {
        let e = edits_for(f, linted);
        // All of a finding's edits, or none.
        if e.iter().all(|x| !out.iter().any(|o| overlaps(o, x))) {
            out.extend(e);
        }
    }
    crate::sort::sort_by_key(&mut out, |e| (e.file, e.start, e.end));
    out
}

/// The findings, broken continuations (PD055) first: the other findings of a server whose
/// arguments were cut off read what it gets without them, and their fixes would add flags at
/// the break.
fn joins_first(linted: &Linted) -> impl Iterator<Item = &LintFinding> {
    let join = |f: &&LintFinding| f.finding.code == "PD055";
    linted.findings.iter().filter(join).chain(linted.findings.iter().filter(move |f| !join(f)))
}

fn overlaps(a: &Edit, b: &Edit) -> bool {
    a.file == b.file && (a.start < b.end && b.start < a.end || a.start == b.start)
}

/// The edits that fix one finding of `linted`, described for people (`file:line: ...`).
pub fn describe(linted: &Linted, f: &LintFinding) -> Vec<String> {
    let edits = edits_for(f, linted);
    edits
        .iter()
        .map(|e| {
            let file = &linted.files[e.file];
            let (line, col) = file.position(e.start);
            let old = file.text.get(e.start..e.end).unwrap_or("");
            let what = match (old.is_empty(), e.text.trim().is_empty()) {
                (true, _) => format!("insert `{}`", e.text.trim()),
                (false, true) => format!("delete `{}`", old.trim()),
                (false, false) => format!("replace `{}` with `{}`", old.trim(), e.text.trim()),
            };
            format!("{}:{line}:{col}: {what}", file.name)
        })
        .collect()
}

/// Applies edits to a text (edits of other files are ignored).
fn apply(text: &str, file: usize, edits: &[Edit]) -> String {
    let mut after = text.to_owned();
    let mut mine: Vec<&Edit> = edits.iter().filter(|e| e.file == file).collect();
    crate::sort::sort_by_key(&mut mine, |e| (e.start, e.end));
    for e in mine.iter().rev() {
        if e.start <= e.end && e.end <= after.len() && after.is_char_boundary(e.start) && after.is_char_boundary(e.end)
        {
            after.replace_range(e.start..e.end, &e.text);
        }
    }
    after
}

/// The corrected texts of the files that change: one finding is fixed at a time and the result
/// linted again, until no finding has a fix (fixes interact: matching an attention backend can
/// change the page size the other fix chose).
pub fn fix_all(inputs: &[super::Input], opts: &super::Options) -> Vec<FixedFile> {
    let mut current: Vec<super::Input> = inputs.to_vec();
    let mut fixes: Vec<Vec<String>> = vec![Vec::new(); inputs.len()];
    let mut seen: Vec<Vec<String>> = Vec::new();
    for _ in 0..64 {
        let linted = super::lint(&current, opts);
        let next = joins_first(&linted).map(|f| edits_for(f, &linted)).find(|e| !e.is_empty());
        let Some(edits) = next else { break };
        let texts: Vec<String> = current.iter().enumerate().map(|(i, inp)| apply(&inp.text, i, &edits)).collect();
        if seen.contains(&texts) {
            break;
        }
        seen.push(texts.clone());
        for e in &edits {
            if !fixes[e.file].contains(&e.why) {
                fixes[e.file].push(e.why.clone());
            }
        }
        for (inp, t) in current.iter_mut().zip(texts) {
            inp.text = t;
        }
    }
    inputs
        .iter()
        .zip(current)
        .zip(fixes)
        .filter(|((before, after), _)| before.text != after.text)
        .map(|((before, after), fixes)| FixedFile {
            name: before.name.clone(),
            before: before.text.clone(),
            after: after.text,
            fixes,
        })
        .collect()
}

/// The edits that fix finding `f` of `linted`, each saying which finding it fixes.
fn edits_for(f: &LintFinding, linted: &Linted) -> Vec<Edit> {
    let (group, files, launches) = (&linted.groups[f.group], &linted.files[..], &linted.launches[..]);
    let server = |i: usize| f.finding.locations.get(i).and_then(|l| group.server(&l.process));
    let shared_ok = |edits: &[Edit]| edits.iter().all(|e| !shared_word(&linted.groups, files, launches, e));
    let result = match f.finding.code {
        "PD001" => server(0).zip(server(1)).and_then(|(p, d)| page_size(group, p, d, files)),
        "PD002" | "PD003" => server(0).zip(server(1)).and_then(|(p, d)| {
            let want = p.view.value("kv_cache_dtype").unwrap_or_else(|| "auto".into());
            set_value(d, "kv_cache_dtype", &want, files)
        }),
        "PD005" | "PD006" => server(0).zip(server(1)).and_then(|(p, d)| {
            let flag = f.finding.locations[0].flag.as_deref()?;
            let dest = p.view.spec().resolve(flag).ok()?.dest.clone();
            // The decode follows the prefill, or (when its text is shared) the other way round.
            match_value(p, d, &dest, files).filter(|e| shared_ok(e)).or_else(|| match_value(d, p, &dest, files))
        }),
        "PD017" => bootstrap(f, group, files),
        "PD021" => {
            let mut v = Vec::new();
            for l in &f.finding.locations {
                if l.flag.as_deref() != Some("--deepep-mode") {
                    continue;
                }
                let Some(s) = group.server(&l.process) else { continue };
                match set_value(s, "deepep_mode", "low_latency", files) {
                    Some(e) => v.extend(e),
                    None => return Vec::new(),
                }
            }
            Some(v)
        }
        "PD037" => {
            let mut v = Vec::new();
            for l in &f.finding.locations {
                let Some(s) = group.server(&l.process) else { continue };
                let Some(role) = s.intended else { return Vec::new() };
                match set_value(s, "disaggregation_mode", role.as_str(), files) {
                    Some(e) => v.extend(e),
                    None => return Vec::new(),
                }
            }
            Some(v)
        }
        "PD041" => repeated(f, linted),
        "PD046" => node_args(f, group, files),
        "PD042" => server(0).and_then(|s| config_equals(s, files)),
        "PD055" => continuations(f, group, linted),
        _ => None,
    };
    match result {
        // Nodes started by one command give the same edit once each: keep one. Joining lines
        // changes no word, so it moves no drift to another server.
        Some(e) if f.finding.code == "PD055" || shared_ok(&e) => {
            let why = format!("{}: {}", f.finding.code, f.finding.message);
            let once = e.iter().enumerate().filter(|(i, x)| !e[..*i].contains(x));
            once.map(|(_, x)| Edit { why: why.clone(), ..x.clone() }).collect()
        }
        _ => Vec::new(),
    }
}

/// Joins the lines of every broken continuation of the command the finding names; all of them,
/// or none.
fn continuations(f: &LintFinding, group: &Group, linted: &Linted) -> Option<Vec<Edit>> {
    let label = &f.finding.locations.first()?.process;
    let launch = match label.as_str() {
        "router" => group.router.as_ref()?.launch,
        l => group.server(l)?.launch,
    };
    let why = format!("{}: {}", f.finding.code, f.finding.message);
    let mut out = Vec::new();
    for b in &linted.launches[launch].breaks {
        out.extend(super::continuation::fix(b, &linted.files, &why)?);
    }
    Some(out)
}

/// Gives the other nodes of a multi-node server the values of node 0 (the finding's first
/// location) for the options the finding names; all of them, or none.
fn node_args(f: &LintFinding, group: &Group, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let head = group.server(&f.finding.locations.first()?.process)?;
    let mut out: Vec<Edit> = Vec::new();
    for l in f.finding.locations.iter().filter(|l| l.process != head.view.label) {
        let node = group.server(&l.process)?;
        let dest = node.view.spec().resolve(l.flag.as_deref()?).ok()?.dest.clone();
        for e in match_value(head, node, &dest, files)? {
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    Some(out)
}

/// True when the edited word also feeds a server written elsewhere (through a shared variable or
/// config file, or a recipe's base that several variants share), in any deployment. Servers
/// that one command starts (the pods of a template, the tasks of an srun, a recipe role's
/// workers) take the edit together, as they must share their arguments.
/// An insertion belongs to the words of the line it follows.
fn shared_word(groups: &[Group], files: &[SourceFile], launches: &[Launch], e: &Edit) -> bool {
    let (start, end) = match e.start == e.end {
        true => (files[e.file].line_start(e.start.saturating_sub(1)), e.start),
        false => (e.start, e.end),
    };
    let mut users = groups
        .iter()
        .flat_map(|g| &g.servers)
        .filter(|s| s.words.iter().any(|w| w.file == e.file && w.start < end.max(start + 1) && start < w.end))
        .map(|s| {
            let l = &launches[s.launch];
            (l.file, l.at, l.scope.as_ref())
        });
    users.next().is_some_and(|first| users.any(|other| other != first))
}

/// The page size both sides keep: the larger effective value, checked by simulation.
fn page_size(group: &Group, p: &ServerEntry, d: &ServerEntry, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let pv = p.view.page_size(&group.model).value;
    let dv = d.view.page_size(&group.model).value;
    let target = pv.max(dv);
    let keeps = |s: &ServerEntry| {
        let mut tokens = s.view.tokens.clone();
        tokens.extend(["--page-size".to_owned(), target.to_string()]);
        let v = ServerView::new(
            String::new(),
            String::new(),
            tokens,
            vec![],
            s.view.env.clone(),
            s.view.gpu,
            s.view.release,
        );
        v.page_size(&group.model).value == target
    };
    if !keeps(p) || !keeps(d) {
        return None;
    }
    let mut out = Vec::new();
    for (s, v) in [(p, pv), (d, dv)] {
        if v != target {
            out.extend(set_value(s, "page_size", &target.to_string(), files)?);
        }
    }
    Some(out)
}

/// Makes `d`'s `dest` what `p` has (its value, its default, or its absence).
fn match_value(p: &ServerEntry, d: &ServerEntry, dest: &str, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let spec = d.view.spec();
    let flag = spec.by_dest(dest)?;
    if flag.arity() == crate::spec::Arity::Zero {
        return match (p.view.switch(dest), d.view.switch(dest)) {
            (true, false) => insert_tokens(d, &[flag.flags[0].clone()], files),
            (false, true) => remove_all(d, dest, files),
            _ => None,
        };
    }
    match p.view.value(dest) {
        Some(v) => set_value(d, dest, &v, files),
        None => remove_all(d, dest, files),
    }
}

/// Sets `dest` on a server: replaces the value of its last occurrence, or appends the option.
fn set_value(s: &ServerEntry, dest: &str, value: &str, files: &[SourceFile]) -> Option<Vec<Edit>> {
    if !is_plain(value) {
        return None;
    }
    match s.view.parsed.last_use(dest) {
        Some(u) => {
            let w = s.words.get(u.index)?;
            if w.is_symbolic() {
                return None;
            }
            if let Some((name, _)) = w.text.split_once('=').filter(|_| w.text.starts_with("--")) {
                return Some(vec![replace(w, &format!("{name}={value}"), files)?]);
            }
            let v = s.words.get(u.index + 1)?;
            if v.is_symbolic() {
                return None;
            }
            Some(vec![replace(v, value, files)?])
        }
        None => {
            let name = s.view.spec().by_dest(dest)?.flags[0].clone();
            insert_tokens(s, &[name, value.to_owned()], files)
        }
    }
}

/// Appends tokens after a server's last argument, in that word's syntax.
fn insert_tokens(s: &ServerEntry, tokens: &[String], files: &[SourceFile]) -> Option<Vec<Edit>> {
    if !tokens.iter().all(|t| is_plain(t)) {
        return None;
    }
    // The last word written on the command line itself (config-file words come first).
    let written = |w: &&Word| !matches!(w.embed, Embed::ConfigKey | Embed::ConfigValue | Embed::Generated);
    if let Some(last) = s.words.iter().rev().find(written) {
        return insert_after(last, tokens, files).map(|e| vec![e]);
    }
    // Only a mapping's keys are written (a `--config` file, a recipe's role): a new key goes
    // after the value of the last one written, at its indentation.
    let k = (0..s.words.len()).filter(|&k| s.words[k].embed == Embed::ConfigKey).max_by_key(|&k| s.words[k].start)?;
    let key = &s.words[k];
    let f = &files[key.file];
    let value_end =
        s.words[k..].iter().take_while(|w| w.file == key.file && w.embed != Embed::Generated).map(|w| w.end).max()?;
    let indent = &f.text[f.line_start(key.start)..key.start];
    let name = tokens.first()?.trim_start_matches("--");
    let value = tokens.get(1).map_or("true".to_owned(), |v| yaml_item(v, None));
    if !indent.bytes().all(|b| b == b' ') {
        // A flow mapping (`{tp-size: 4, page-size: 64}`): one more entry after the last value.
        let after = f.text.get(value_end..)?;
        let rest = after.trim_start_matches([' ', ']']);
        let at = value_end + after.len() - rest.len();
        let text = format!(", {name}: {value}");
        let edit = Edit { file: key.file, start: at, end: at, text, why: String::new() };
        return rest.starts_with(['}', ',']).then(|| vec![edit]);
    }
    let at = f.line_end(value_end);
    let nl = if at == f.text.len() && !f.text.ends_with('\n') { "\n" } else { "" };
    let text = format!("{nl}{indent}{name}: {value}\n");
    Some(vec![Edit { file: key.file, start: at, end: at, text, why: String::new() }])
}

fn insert_after(w: &Word, tokens: &[String], files: &[SourceFile]) -> Option<Edit> {
    let f = &files[w.file];
    let (start, text) = match &w.embed {
        Embed::Shell { .. } => (w.end, format!(" {}", tokens.join(" "))),
        Embed::YamlItem { flow: true, .. } => {
            (w.end, tokens.iter().map(|t| format!(", {}", yaml_item(t, None))).collect::<String>())
        }
        Embed::YamlItem { flow: false, indent } => {
            let at = f.line_end(w.end);
            let nl = if at == f.text.len() && !f.text.ends_with('\n') { "\n" } else { "" };
            let quote = f.text.as_bytes().get(w.start).copied().filter(|b| *b == b'"' || *b == b'\'');
            let lines: String =
                tokens.iter().map(|t| format!("{}- {}\n", " ".repeat(*indent), yaml_item(t, quote))).collect();
            (at, format!("{nl}{lines}"))
        }
        Embed::ConfigKey | Embed::ConfigValue | Embed::Generated => return None,
    };
    Some(Edit { file: w.file, start, end: start, text, why: String::new() })
}

/// A YAML scalar for `t`, by [`yaml_value`]'s rules: in the item's own quote style when it has
/// one, else plain unless YAML (1.2 or 1.1) would read it as something other than a string
/// (Kubernetes wants strings), then double-quoted as such items are written.
fn yaml_item(t: &str, quote: Option<u8>) -> String {
    match quote {
        Some(b'\'') => yaml_value::single_quoted(t),
        Some(_) => yaml_value::double_quoted(t),
        None if yaml_value::reads_plain(t) => t.to_owned(),
        None => yaml_value::double_quoted(t),
    }
}

fn replace(w: &Word, value: &str, files: &[SourceFile]) -> Option<Edit> {
    let f = &files[w.file];
    let raw = f.text.get(w.start..w.end)?;
    let text = match &w.embed {
        Embed::Generated => return None,
        Embed::Shell { .. } => value.to_owned(),
        Embed::YamlItem { .. } | Embed::ConfigValue | Embed::ConfigKey => {
            let q = raw.as_bytes().first().copied().filter(|b| *b == b'"' || *b == b'\'');
            match (&w.embed, q) {
                (Embed::ConfigValue, None) => value.to_owned(),
                (_, q) => yaml_item(value, q),
            }
        }
    };
    Some(Edit { file: w.file, start: w.start, end: w.end, text, why: String::new() })
}

/// Removes every occurrence of `dest` on a server.
fn remove_all(s: &ServerEntry, dest: &str, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let uses: Vec<usize> = s.view.parsed.uses.iter().filter(|u| u.dest == dest).map(|u| u.index).collect();
    let mut out = Vec::new();
    for i in uses {
        out.extend(remove_use(s, i, files)?);
    }
    Some(out)
}

/// Removes the option at token `i` and its values.
fn remove_use(s: &ServerEntry, i: usize, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let next = s.view.parsed.uses.iter().map(|u| u.index).filter(|&k| k > i).min().unwrap_or(s.words.len());
    let next = s.view.parsed.problems.iter().map(|p| p.index).filter(|&k| k > i).fold(next, usize::min);
    let ws = s.words.get(i..next)?;
    let first = ws.first()?;
    let last = ws.last()?;
    // A mapping's key and its values are one layer.
    fn layer(e: &Embed) -> &Embed {
        match e {
            Embed::ConfigValue => &Embed::ConfigKey,
            e => e,
        }
    }
    if ws.iter().any(|w| w.file != first.file || layer(&w.embed) != layer(&first.embed) || w.is_symbolic()) {
        return None;
    }
    let f = &files[first.file];
    // Deletes from the end of the word before the option through its last value, when the text
    // between that word and the option is only a separator `gap_ok` accepts.
    let remove_after_previous = |gap_ok: fn(&str) -> bool| {
        let prev =
            i.checked_sub(1).and_then(|k| s.words.get(k)).filter(|p| p.file == first.file && p.end <= first.start)?;
        let gap = f.text.get(prev.end..first.start)?;
        gap_ok(gap).then(|| {
            vec![Edit { file: first.file, start: prev.end, end: last.end, text: String::new(), why: String::new() }]
        })
    };
    match &first.embed {
        Embed::Shell { .. } => remove_after_previous(|gap| gap.bytes().all(|b| b.is_ascii_whitespace() || b == b'\\')),
        Embed::YamlItem { flow: false, .. } => {
            let mut out = Vec::new();
            for w in ws {
                let ls = f.line_start(w.start);
                let lead = f.text.get(ls..w.start)?;
                if lead.trim() != "-" || f.line_start(w.end.saturating_sub(1).max(w.start)) != ls {
                    return None;
                }
                out.push(Edit {
                    file: w.file,
                    start: ls,
                    end: f.line_end(w.end),
                    text: String::new(),
                    why: String::new(),
                });
            }
            Some(out)
        }
        Embed::YamlItem { flow: true, .. } => remove_after_previous(|gap| gap.trim() == ","),
        Embed::Generated => None,
        Embed::ConfigKey | Embed::ConfigValue => {
            // Whole lines only: the key starts its line and its value ends one (a key of a flow
            // mapping `{a: 1, b: 2}` shares its line and is left alone).
            let ls = f.line_start(first.start);
            let le = f.line_end(last.end.max(first.start));
            let tail = f.text.get(last.end.max(first.start)..le)?;
            let tail = tail.split_once(" #").map_or(tail, |(t, _)| t);
            if !f.text.get(ls..first.start)?.bytes().all(|b| b == b' ') || !tail.trim().is_empty() {
                return None;
            }
            Some(vec![Edit { file: first.file, start: ls, end: le, text: String::new(), why: String::new() }])
        }
    }
}

/// PD041: drops every occurrence but the last.
fn repeated(f: &LintFinding, linted: &Linted) -> Option<Vec<Edit>> {
    let (group, files, launches) = (&linted.groups[f.group], &linted.files[..], &linted.launches[..]);
    let label = &f.finding.locations.first()?.process;
    let s = group.server(label)?;
    let flag = f.finding.locations.first()?.flag.as_deref()?;
    let dest = s.view.spec().resolve(flag.split('=').next().unwrap_or(flag)).ok()?.dest.clone();
    let uses: Vec<&crate::spec::ArgUse> = s.view.parsed.uses.iter().filter(|u| u.dest == dest).collect();
    let removable = |i: usize| {
        remove_use(s, i, files).filter(|e| e.iter().all(|x| !shared_word(&linted.groups, files, launches, x)))
    };
    // With equal values any one occurrence may stay: keep one that cannot be removed (a shared
    // variable), else the last. Otherwise only the last counts, so the earlier ones go.
    let equal = uses.windows(2).all(|w| w[0].value == w[1].value);
    let keep = if equal {
        uses.iter().position(|u| removable(u.index).is_none()).unwrap_or(uses.len() - 1)
    } else {
        uses.len() - 1
    };
    let mut out = Vec::new();
    for (k, u) in uses.iter().enumerate() {
        if k != keep {
            out.extend(removable(u.index)?);
        }
    }
    Some(out)
}

/// PD017: the router entry gives (or falls back to) a port the prefill does not bind.
fn bootstrap(f: &LintFinding, group: &Group, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let r = group.router.as_ref()?;
    let entry_origin = &f.finding.locations.first()?.origin;
    let k = r.view.prefills.iter().position(|e| &e.origin == entry_origin)?;
    let p = f
        .finding
        .locations
        .iter()
        .filter_map(|l| group.server(&l.process))
        .find(|s| s.view.role == Some(Role::Prefill))?;
    let bound = p.view.bootstrap_port()?.to_string();
    // An entry from service discovery has no words to edit.
    let flag_at = *r.prefill_tokens.get(k)?;
    let url = r.words.get(flag_at + 1)?;
    match (r.view.prefills[k].bootstrap_port, r.words.get(flag_at + 2)) {
        (Some(_), Some(port)) if !port.is_symbolic() => Some(vec![replace(port, &bound, files)?]),
        (None, _) => Some(vec![insert_after(url, &[bound], files)?]),
        _ => None,
    }
}

/// PD042: `--config=FILE` becomes `--config FILE`.
fn config_equals(s: &ServerEntry, files: &[SourceFile]) -> Option<Vec<Edit>> {
    let u = s.view.parsed.uses.iter().find(|u| u.dest == "config")?;
    let w = s.words.get(u.index)?;
    let path = w.text.split_once('=')?.1;
    if !is_plain(path) {
        return None;
    }
    match &w.embed {
        Embed::Shell { .. } => Some(vec![Edit {
            file: w.file,
            start: w.start,
            end: w.end,
            text: format!("--config {path}"),
            why: String::new(),
        }]),
        Embed::YamlItem { .. } => {
            let mut e = replace(w, "--config", files)?;
            let ins = insert_after(w, &[path.to_owned()], files)?;
            e.why.clear();
            Some(vec![e, ins])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::yaml_item;

    /// Values a fix may write (plain shell words) that YAML reads as numbers, booleans or
    /// null. The writer this one replaced left the first ones plain (it knew decimal numbers and
    /// lower-case words only): `0x1F` read back as 31, `.inf` as infinity, `NULL` as null.
    #[test]
    fn written_items_read_back_as_the_same_string() {
        for t in [
            "0x1F",
            "0o17",
            "0b101",
            ".inf",
            "-.Inf",
            ".NaN",
            "NULL",
            "TRUE",
            "False",
            "1_000",
            "1:20",
            "0755",
            "64",
            "1e3",
            "yes",
            "Off",
            "~",
            "y",
            "plain",
            "fp8_e4m3",
            "10.0.0.1",
            "0.5.23",
            "--page-size",
        ] {
            for quote in [None, Some(b'\''), Some(b'"')] {
                let item = yaml_item(t, quote);
                let doc = format!("args:\n- {item}\n");
                let back: serde_yaml::Value = serde_yaml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
                assert_eq!(back["args"][0].as_str(), Some(t), "{t:?} in style {quote:?} written {item}");
                assert_eq!(crate::yaml_value::from_str(&doc).unwrap()["args"][0], t, "{doc}");
            }
        }
        // Quoting only where needed, double quotes as Kubernetes items are written, and the
        // item's own style kept.
        assert_eq!(yaml_item("fp8_e4m3", None), "fp8_e4m3");
        assert_eq!(yaml_item("64", None), "\"64\"");
        assert_eq!(yaml_item("0x1F", None), "\"0x1F\"");
        assert_eq!(yaml_item("64", Some(b'\'')), "'64'");
        assert_eq!(yaml_item("x", Some(b'"')), "\"x\"");
    }
}
