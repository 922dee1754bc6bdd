//! Running servers' own answers turned into the rules' views and findings: what `pdlaunch probe`
//! checks, and the app's Lint tab for pasted `/server_info` documents.
//!
//! SGLang's `GET /server_info` (`/get_server_info` before 0.5.23) returns the server's arguments
//! after SGLang's own resolution (page-size snaps, dtype rewrites), the `launch_command` it was
//! given and its `version`; a prefill's bootstrap server answers [`ROUTE_QUERY`] with what the
//! decodes will pair with; the router lists its workers at [`WORKERS_PATH`]. The caller fetches
//! these (the core does no I/O) and hands over the bodies; this module reads them, with a clear
//! error for each thing that is not what SGLang sends, builds each server's [`ServerView`] from
//! the values it reports (one `--flag value` per reported value that is not argparse's default, so
//! the rules read them as they read a command line, with `server_info.<field>` as their place),
//! and runs the registry: the view rules (PD001, PD002, PD008...) on the live fleet, and the
//! fleet's own rules (PD057 to PD060).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::deployment::{Deployment, Role};
use crate::effective::{ModelFacts, ServerView};
use crate::plan::Origin;
use crate::release::Release;
use crate::rules::fleet::{Fleet, Probed, RouteInfo};
use crate::rules::{split_url, Context, Finding};
use crate::spec::{canonical_dest, json_to_arg, Arity};

/// The paths a server's info is asked at, in order: 0.5.23's name, then the deprecated alias
/// (the only one older releases answer).
pub const INFO_PATHS: [&str; 2] = ["/server_info", "/get_server_info"];
/// What a decode asks a prefill's bootstrap server for before pairing
/// (`try_ensure_parallel_info` in SGLang's `disaggregation/common/conn.py`).
pub const ROUTE_QUERY: &str = "/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1";
/// Where sglang-router 0.3 lists its workers.
pub const WORKERS_PATH: &str = "/workers";

/// A server's `/server_info`, read.
#[derive(Clone, Debug)]
pub struct Info {
    fields: Map<String, Value>,
}

/// Fields the rules read, and the JSON type SGLang reports each as: a document whose field has
/// another type is refused with its name (a proxy's page, another program, a hostile payload).
const TYPED: &[(&str, Kind)] = &[
    ("page_size", Kind::Int),
    ("tp_size", Kind::Int),
    ("pp_size", Kind::Int),
    ("dp_size", Kind::Int),
    ("attn_dp_size", Kind::Int),
    ("attn_cp_size", Kind::Int),
    ("port", Kind::Int),
    ("disaggregation_bootstrap_port", Kind::Int),
    ("kv_cache_dtype", Kind::Str),
    ("model_path", Kind::Str),
    ("disaggregation_mode", Kind::Str),
    ("disaggregation_transfer_backend", Kind::Str),
    ("attention_backend", Kind::Str),
    ("version", Kind::Str),
    ("launch_command", Kind::Str),
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Str,
}

/// The first error of a document read as JSON, in a sentence.
fn json_error(what: &str, e: &serde_json::Error) -> String {
    format!("{what} is not JSON ({e})")
}

/// A short quote of a JSON value for an error message.
fn quote(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        let cut = (0..=40).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

impl Info {
    /// Reads a `/server_info` body; the error says what is wrong with it.
    pub fn read(body: &str) -> Result<Info, String> {
        let value: Value = serde_json::from_str(body).map_err(|e| json_error("the answer", &e))?;
        Info::from_value(value)
    }

    /// [`Info::read`] of a document already parsed.
    pub fn from_value(value: Value) -> Result<Info, String> {
        let Value::Object(fields) = value else {
            return Err(format!("the answer is {}, not SGLang's server info (a JSON object)", kind_of(&value)));
        };
        if !fields.contains_key("disaggregation_mode") && !fields.contains_key("model_path") {
            return Err(
                "the answer has neither `model_path` nor `disaggregation_mode`: not SGLang's server info".into()
            );
        }
        for (key, kind) in TYPED {
            let Some(v) = fields.get(*key) else { continue };
            let ok = match kind {
                Kind::Int => v.is_null() || v.as_i64().is_some(),
                Kind::Str => v.is_null() || v.is_string(),
            };
            if !ok {
                let want = if *kind == Kind::Int { "an integer" } else { "a string" };
                return Err(format!("`{key}` is {} where SGLang reports {want}", quote(v)));
            }
        }
        match fields.get("disaggregation_mode").and_then(Value::as_str) {
            None | Some("null" | "prefill" | "decode") => {}
            Some(other) => return Err(format!("`disaggregation_mode` is \"{other}\", not prefill, decode or null")),
        }
        Ok(Info { fields })
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// The SGLang version the server reports.
    pub fn version(&self) -> Option<&str> {
        self.str("version")
    }

    /// The role its `disaggregation_mode` says.
    pub fn role(&self) -> Option<Role> {
        match self.str("disaggregation_mode") {
            Some("prefill") => Some(Role::Prefill),
            Some("decode") => Some(Role::Decode),
            _ => None,
        }
    }

    /// The `launch_command` it was started with.
    pub fn launch_command(&self) -> Option<&str> {
        self.str("launch_command")
    }

    /// Its bootstrap port, when it is a prefill.
    pub fn bootstrap_port(&self) -> Option<u16> {
        let p = self.fields.get("disaggregation_bootstrap_port")?.as_i64()?;
        (self.role() == Some(Role::Prefill)).then(|| u16::try_from(p).ok()).flatten()
    }

    /// The release whose argparse spec reads its values: the known release of its version, else
    /// the newest before it, else the newest.
    pub fn release(&self) -> Release {
        self.version().and_then(Release::for_version).map_or(Release::LATEST, |(r, _)| r)
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The URL of the bootstrap info of the prefill at `url`: its host, its reported bootstrap port
/// (`port` overrides it: the router's entry for the prefill).
pub fn route_url(url: &str, info: &Info, port: Option<u16>) -> Option<String> {
    let port = port.or_else(|| info.bootstrap_port())?;
    let (host, _) = split_url(url)?;
    let scheme = url.split_once("://").map_or("http", |(s, _)| s);
    Some(format!("{scheme}://{}{ROUTE_QUERY}", crate::plan::host_port(&host, port)))
}

/// Reads a bootstrap server's answer to [`ROUTE_QUERY`] (SGLang's `PrefillServerInfo`).
pub fn read_route(body: &str) -> Result<RouteInfo, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| json_error("the bootstrap info", &e))?;
    let Value::Object(m) = v else {
        return Err(format!("the bootstrap info is {}, not a JSON object", kind_of(&v)));
    };
    let size = |key: &str| -> Result<u32, String> {
        match m.get(key) {
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("the bootstrap info's `{key}` is {} where SGLang sends a size", quote(v))),
            None => Err(format!("the bootstrap info has no `{key}`")),
        }
    };
    let (attn_tp_size, attn_cp_size, dp_size, pp_size) =
        (size("attn_tp_size")?, size("attn_cp_size")?, size("dp_size")?, size("pp_size")?);
    let page_size = match m.get("page_size") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            format!("the bootstrap info's `page_size` is {} where SGLang sends an integer", quote(v))
        })?),
    };
    let kv_cache_dtype = match m.get("kv_cache_dtype") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => {
            return Err(format!("the bootstrap info's `kv_cache_dtype` is {} where SGLang sends a string", quote(v)))
        }
    };
    Ok(RouteInfo { attn_tp_size, attn_cp_size, dp_size, pp_size, page_size, kv_cache_dtype })
}

/// One worker of the router's list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    /// Its URL.
    pub url: String,
    /// Prefill or decode (`worker_type`).
    pub role: Option<Role>,
    /// A prefill's bootstrap port as the router knows it.
    pub bootstrap_port: Option<u16>,
    /// The router's id of it.
    pub id: Option<String>,
}

/// Reads the router's answer to [`WORKERS_PATH`] (`{"workers": [{"url", "worker_type",
/// "bootstrap_port", "id"}...]}`).
pub fn read_workers(body: &str) -> Result<Vec<Worker>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| json_error("the router's worker list", &e))?;
    let Some(list) = v.get("workers").and_then(Value::as_array) else {
        return Err("the router's answer has no `workers` list (is it sglang-router 0.3 or later?)".into());
    };
    list.iter()
        .map(|w| {
            let url = w
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a worker of the router's list has no `url`: {}", quote(w)))?;
            let role = match w.get("worker_type").and_then(Value::as_str) {
                Some("prefill") => Some(Role::Prefill),
                Some("decode") => Some(Role::Decode),
                _ => None,
            };
            Ok(Worker {
                url: url.trim_end_matches('/').to_owned(),
                role,
                bootstrap_port: w.get("bootstrap_port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()),
                id: w.get("id").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

/// A server as the probe saw it.
#[derive(Clone, Debug)]
pub struct Server {
    /// The URL it was probed at (the place of its findings).
    pub url: String,
    /// The role it was given (`--prefill`, `--decode`, the router's `worker_type`).
    pub role: Option<Role>,
    /// The router's id of it, when the router listed it.
    pub worker: Option<Option<String>>,
    /// Its server info, or why there is none.
    pub info: Result<Info, String>,
    /// A prefill's bootstrap info: the URL asked and its answer.
    pub route: Option<(String, Result<RouteInfo, String>)>,
}

/// Options whose reported value is no argument the server was given (the `--config` file's
/// options are reported one by one).
const NOT_ARGUMENTS: &[&str] = &["config"];

/// The view of the server at `url` from the values it reports: each reported option whose value is
/// not its argparse default becomes `--flag value`, placed at `server_info.<field>`.
pub fn view(url: &str, info: &Info, release: Release) -> ServerView {
    let spec = release.spec();
    let mut tokens = Vec::new();
    let mut origins = Vec::new();
    for flag in &spec.flags {
        if flag.is_deprecated() || NOT_ARGUMENTS.contains(&flag.dest.as_str()) {
            continue;
        }
        let key = if info.fields.contains_key(&flag.dest) { flag.dest.as_str() } else { canonical_dest(&flag.dest) };
        let Some(value) = info.fields.get(key) else { continue };
        if value.is_null() || *value == flag.default {
            continue;
        }
        let written: Vec<String> = match (flag.arity(), value) {
            (Arity::Zero, Value::Bool(on)) => {
                let store_true = flag.action.contains("StoreTrue");
                let store_false = flag.action.contains("StoreFalse");
                if (store_true && *on) || (store_false && !*on) {
                    vec![]
                } else if flag.action.contains("BooleanOptional") {
                    let no = flag.flags.iter().find(|f| f.starts_with("--no-"));
                    match (on, no) {
                        (true, _) => vec![],
                        (false, Some(_)) => vec![],
                        _ => continue,
                    }
                } else {
                    continue;
                }
            }
            (Arity::Zero, _) => continue,
            (Arity::OneOrMore | Arity::ZeroOrMore, Value::Array(items)) if !items.is_empty() => {
                items.iter().map(json_to_arg).collect()
            }
            (Arity::OneOrMore | Arity::ZeroOrMore, Value::Array(_)) => continue,
            (_, v) => vec![json_to_arg(v)],
        };
        let text_default = json_to_arg(&flag.default);
        if written.len() == 1 && written[0] == text_default {
            continue;
        }
        if let (Some(choices), [one]) = (flag.choice_strings(), written.as_slice()) {
            // A resolved value argparse would not take (SGLang's resolution writes past its
            // choices): the rules could only call it invalid, which the server is not.
            if !choices.contains(one) {
                continue;
            }
        }
        let spelling = match (flag.arity(), value) {
            (Arity::Zero, Value::Bool(false)) if flag.action.contains("BooleanOptional") => {
                flag.flags.iter().find(|f| f.starts_with("--no-")).cloned().unwrap_or_else(|| flag.flags[0].clone())
            }
            _ => flag.flags[0].clone(),
        };
        let origin = Origin::Field { path: format!("server_info.{key}") };
        tokens.push(spelling);
        origins.push(origin.clone());
        for w in written {
            tokens.push(w);
            origins.push(origin.clone());
        }
    }
    let host = split_url(url).map(|(h, _)| h).unwrap_or_else(|| url.to_owned());
    let mut v = ServerView::new(url.to_owned(), host, tokens, origins, BTreeMap::new(), None, release);
    // Each URL is its own process on its own machine as far as the probe knows: two servers that
    // answer were able to bind their ports.
    v.pod = Some(url.to_owned());
    v
}

/// Runs the registry on a probed fleet: the views of the servers that answered, the fleet's rules,
/// and with `against` (a deployment's file name and the deployment) the drift from it.
pub fn check(
    servers: Vec<Server>,
    router: Option<(String, Result<(), String>)>,
    against: Option<(&str, &Deployment)>,
) -> Vec<Finding> {
    let mut views = Vec::new();
    let mut probed = Vec::new();
    for s in servers {
        let (answer, version) = match &s.info {
            Ok(info) => {
                let mut v = view(&s.url, info, info.release());
                // The role the server reports wins; the one it was given stands in for a missing one.
                if v.role.is_none() {
                    v.role = s.role;
                }
                v.instance = views.len();
                views.push(v);
                (Ok(views.len() - 1), info.version().map(str::to_owned))
            }
            Err(why) => (Err(why.clone()), None),
        };
        probed.push(Probed {
            url: s.url,
            role: s.role,
            from_router: s.worker.is_some(),
            worker_id: s.worker.flatten(),
            answer,
            version,
            route: s.route,
        });
    }
    // Prefills first, as the rules expect.
    let prefill = |i: &usize| views[*i].role == Some(Role::Prefill);
    let order: Vec<usize> = (0..views.len()).filter(prefill).chain((0..views.len()).filter(|i| !prefill(i))).collect();
    let mut at = vec![0; views.len()];
    for (new, &old) in order.iter().enumerate() {
        at[old] = new;
    }
    let mut slots: Vec<Option<ServerView>> = views.into_iter().map(Some).collect();
    let views: Vec<ServerView> = order.iter().map(|&i| slots[i].take().expect("each view once")).collect();
    for p in &mut probed {
        if let Ok(i) = &mut p.answer {
            *i = at[*i];
        }
    }
    let planned = against.map(|(file, d)| {
        let plan = crate::plan::plan(d);
        (file.to_owned(), Context::from_deployment(d, &plan))
    });
    let model = match &planned {
        Some((_, ctx)) => ctx.model.clone(),
        None => model_of(&views),
    };
    let release = most_common(views.iter().map(|v| v.release)).unwrap_or(Release::LATEST);
    let ctx = Context { servers: views, router: None, model, release, deployment: None, dropped: Vec::new() };
    let fleet = Fleet { ctx, servers: probed, router, planned };
    crate::rules::run_fleet(&fleet)
}

/// The model facts of the model the servers report, when a preset knows it.
fn model_of(views: &[ServerView]) -> ModelFacts {
    let geometry = views
        .iter()
        .find_map(|v| v.value("model_path"))
        .and_then(|p| crate::model::preset_for_path(&p))
        .map(|p| p.geometry());
    ModelFacts { geometry }
}

fn most_common<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: Vec<(T, usize)> = Vec::new();
    for x in items {
        match counts.iter_mut().find(|(k, _)| *k == x) {
            Some((_, n)) => *n += 1,
            None => counts.push((x, 1)),
        }
    }
    counts.iter().rev().max_by_key(|(_, n)| *n).map(|(k, _)| *k)
}

/// Pasted `/server_info` documents (one, several one after another, or a JSON array of them),
/// checked as a probe of those servers: each is named `document N` (its `host:port` when it
/// reports them).
pub fn check_pasted(text: &str) -> Result<Vec<Finding>, String> {
    let mut docs = Vec::new();
    for (i, v) in serde_json::Deserializer::from_str(text).into_iter::<Value>().enumerate() {
        match v.map_err(|e| json_error(&format!("document {}", i + 1), &e))? {
            Value::Array(items) => docs.extend(items),
            other => docs.push(other),
        }
    }
    if docs.is_empty() {
        return Err("no /server_info document: paste the JSON a server's /server_info returned".into());
    }
    let servers = docs
        .into_iter()
        .enumerate()
        .map(|(i, doc)| {
            let info = Info::from_value(doc).map_err(|e| format!("document {}: {e}", i + 1))?;
            let port = info.fields.get("port").and_then(Value::as_i64);
            let host = info.str("host").filter(|h| !h.is_empty() && *h != "0.0.0.0");
            let url = match (host, port) {
                (Some(h), Some(p)) => format!("document {} ({h}:{p})", i + 1),
                (None, Some(p)) => format!("document {} (port {p})", i + 1),
                _ => format!("document {}", i + 1),
            };
            Ok(Server { url, role: info.role(), worker: None, info: Ok(info), route: None })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(check(servers, None, None))
}

#[cfg(test)]
mod tests;
