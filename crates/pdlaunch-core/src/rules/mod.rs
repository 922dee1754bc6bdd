//! The validator: a registry of rules, one rule per file, each with a stable code. A rule reads a
//! [`Context`] (every server as SGLang will see it, the router, the model) and returns findings
//! that name the offending values on both sides, quote what SGLang would do, and say how to fix it.
//!
//! The same registry serves `pdlaunch check`, `explain`, the linter and the web app.

use serde::Serialize;

use crate::deployment::{Deployment, Gpu, Role};
use crate::effective::{ModelFacts, ServerView};
use crate::plan::{Origin, Plan};
use crate::release::{Release, RouterRelease};
use crate::spec::{parse_argv, Parsed};
pub use fleet::Fleet;
pub use material::Material;

pub mod fleet;
pub mod material;

/// Declares each rule's module and lists its `RULE` in [`RULES`], from one list of modules.
macro_rules! rules {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every rule, in code order. Codes are stable: never renumber, only append.
        pub static RULES: &[&Rule] = &[$(&$module::RULE),*];

        /// The module of each rule, in the order of [`RULES`].
        #[cfg(test)]
        static MODULES: &[&str] = &[$(stringify!($module)),*];
    };
}

rules! {
    pd001_page_size_mismatch,
    pd002_kv_cache_dtype_mismatch,
    pd003_kv_cache_dtype_spelling,
    pd004_kv_element_type_mismatch,
    pd005_shared_setting_mismatch,
    pd006_should_match_setting,
    pd007_attn_tp_divisibility,
    pd008_hetero_tp_unsupported,
    pd009_hetero_tp_staging_buffer,
    pd010_decode_pp,
    pd011_decode_context_parallel,
    pd012_dcp_pairing,
    pd013_fake_backend_on_prefill,
    pd014_decode_hicache_without_radix,
    pd015_decode_offload_without_storage,
    pd016_chunked_prefill_page_multiple,
    pd017_bootstrap_port_link,
    pd018_loopback_with_remote_peer,
    pd019_port_collision,
    pd020_gpu_topology,
    pd021_deepep_normal_on_decode,
    pd022_speculative_one_side,
    pd023_kv_canary_one_side,
    pd024_invalid_argument,
    pd025_field_not_in_release,
    pd026_deprecated_flag,
    pd027_extra_arg_overrides_field,
    pd028_dp_attention_divisibility,
    pd029_multi_node_dp,
    pd030_moe_dense_tp,
    pd031_pp_with_speculative,
    pd032_staging_buffer_misuse,
    pd033_env_contract_mismatch,
    pd034_ep_size_overridden,
    pd035_served_name_colon,
    pd036_mixed_gpu_auto_defaults,
    pd037_missing_disaggregation_mode,
    pd038_kv_heads_divisibility,
    pd039_page_size_set_by_model,
    pd040_decode_kv_capacity,
    pd041_repeated_flag,
    pd042_config_equals_form,
    pd043_config_file_key,
    pd044_unknown_value,
    pd045_incomplete_deployment,
    pd046_node_args_mismatch,
    pd047_srun_same_node_rank,
    pd048_node_ranks,
    pd049_service_discovery_misses,
    pd050_kubernetes_refused,
    pd051_prefill_pods_behind_one_address,
    pd052_decode_polling_interval_zero,
    pd053_rbg_refused,
    pd054_dynamo_refused,
    pd055_broken_continuation,
    pd056_model_path_mismatch,
    pd057_fleet_drift,
    pd058_bootstrap_info_mismatch,
    pd059_server_not_answering,
    pd060_router_worker_gone,
    pd063_state_layout_mismatch,
    pd064_dsa_cache_layer_split,
    pd065_dspark_pairing,
    pd066_hisparse_pairing,
    pd067_model_setting_refused_in_pd,
    pd068_hetero_tp_state_transfer,
    pd069_staging_pool_fit,
    pd080_unified_memory_unsupported,
    pd081_unified_memory_pairing,
    pd082_kv_cache_sharding,
    pd083_refused_on_pd_server,
    pd084_decode_host_pool,
    pd085_pd_config_values,
    pd086_pd_environment_values,
}

/// The rule with this code (case-insensitive), or with this name.
pub fn rule(code_or_name: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// SGLang fails, hangs or corrupts KV.
    Error,
    /// Likely wrong, slow, or inferred to fail.
    Warning,
    /// Information: a rule could not run, or an assumption was made.
    Note,
}

impl Severity {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// A validation rule.
#[derive(Debug)]
pub struct Rule {
    /// Stable code, `PD001`...
    pub code: &'static str,
    /// Kebab-case name.
    pub name: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// One line: what it checks.
    pub summary: &'static str,
    /// Why it matters: what SGLang does when it is broken.
    pub explanation: &'static str,
    /// SGLang's own error texts or log lines this rule prevents, verbatim (with `{...}` where
    /// SGLang interpolates a value), or a symptom in plain words; `explain` matches these.
    pub sglang_errors: &'static [&'static str],
    /// The general fix.
    pub fix: &'static str,
    /// The check, and what it reads.
    pub check: Check,
}

impl Rule {
    /// True when only written commands can break it (a repeated flag, a `${VAR}`, nodes started
    /// differently): a rendered deployment cannot, so `check` of a deployment does not run it,
    /// and only `lint` reports it.
    pub fn lint_only(&self) -> bool {
        matches!(self.check, Check::Commands(_) | Check::Material(_))
    }
    /// True when only running servers show it (one that does not answer, what a bootstrap server
    /// publishes, a router's stale worker): `pdlaunch probe` alone reports it.
    pub fn probe_only(&self) -> bool {
        matches!(self.check, Check::Fleet(_))
    }
}

/// What a rule's check reads, which says where it runs.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// The servers and the router as SGLang will see them: run on a rendered deployment and on
    /// linted commands alike.
    Deployment(fn(&Context) -> Vec<Finding>),
    /// The same views, but only written commands can break it (a repeated flag, nodes started
    /// with different arguments): a rendered deployment cannot, so `check` leaves it out.
    Commands(fn(&Context) -> Vec<Finding>),
    /// The written material itself ([`Material`]: the words, the objects around the commands,
    /// the Services, the `--config` files, the values unknown until run time), which only the
    /// linter has. It adds its findings to `found`, which holds those of the views' checks, and
    /// withdraws those that the material shows to be wrong (a Service that forwards the decodes'
    /// port to the one the prefill binds links them).
    Material(fn(&Material, &mut Vec<Finding>)),
    /// A deployment's views, and in linted material also what only the material shows.
    DeploymentAndMaterial(fn(&Context) -> Vec<Finding>, fn(&Material, &mut Vec<Finding>)),
    /// What a probe of running servers saw besides their views ([`Fleet`]): which answered, the
    /// releases they report, their bootstrap info, the router's workers, the deployment to
    /// compare with.
    Fleet(fn(&Fleet) -> Vec<Finding>),
}

impl Check {
    /// The check of the servers' and router's views, when it has one and `deployment` (a
    /// rendered deployment's context) does not leave it out.
    fn of_views(self, deployment: bool) -> Option<fn(&Context) -> Vec<Finding>> {
        match self {
            Check::Deployment(f) | Check::DeploymentAndMaterial(f, _) => Some(f),
            Check::Commands(f) => (!deployment).then_some(f),
            Check::Material(_) | Check::Fleet(_) => None,
        }
    }
    /// The check of the written material, when it has one.
    pub(crate) fn of_material(self) -> Option<fn(&Material, &mut Vec<Finding>)> {
        match self {
            Check::Material(f) | Check::DeploymentAndMaterial(_, f) => Some(f),
            Check::Deployment(_) | Check::Commands(_) | Check::Fleet(_) => None,
        }
    }
}

/// Where a finding points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The process, e.g. `decode[0]`, or `router`.
    pub process: String,
    /// The flag concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
    /// Where to change it.
    pub origin: Origin,
}

/// One problem found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Rule code.
    pub code: &'static str,
    /// Rule name.
    pub rule: &'static str,
    /// Severity.
    pub severity: Severity,
    /// What is wrong, naming the values on each side.
    pub message: String,
    /// How to fix this instance.
    pub fix: String,
    /// SGLang's own error or symptom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sglang_error: Option<&'static str>,
    /// The places concerned.
    pub locations: Vec<Location>,
    /// A value the rule knows would resolve the finding, for the one-click fix to try first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Suggestion>,
}

/// A deployment field and the value a rule suggests for it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    /// The field path (`model.preset`).
    pub path: String,
    /// The value to set.
    pub value: serde_json::Value,
}

impl Finding {
    /// A finding of `rule` at its default severity, quoting its first SGLang error.
    pub fn new(rule: &'static Rule, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            code: rule.code,
            rule: rule.name,
            severity: rule.severity,
            message: message.into(),
            fix: fix.into(),
            sglang_error: rule.sglang_errors.first().copied(),
            locations: Vec::new(),
            suggestion: None,
        }
    }
    /// Overrides the severity.
    pub fn severity(mut self, s: Severity) -> Finding {
        self.severity = s;
        self
    }
    /// Adds the location of `dest` on `server`: its last occurrence, or [`Origin::Default`] when
    /// the flag is absent and SGLang's default applies.
    pub fn at(mut self, server: &ServerView, dest: &str) -> Finding {
        let origin = server.origin(dest).cloned().unwrap_or(Origin::Default);
        let flag = server.spec().by_dest(dest).map(|f| f.flags[0].clone());
        self.locations.push(Location { process: server.label.clone(), flag, origin });
        self
    }
    /// Adds a location given by hand.
    pub fn at_origin(mut self, process: impl Into<String>, flag: Option<&str>, origin: Origin) -> Finding {
        self.locations.push(Location { process: process.into(), flag: flag.map(str::to_owned), origin });
        self
    }
    /// A format's refusal of the deployment as a finding of `rule`, placed at the field the
    /// refusal names (PD050, PD053, PD054), under the format's name.
    pub(crate) fn refusal(rule: &'static Rule, format: &str, why: crate::render::RenderError) -> Finding {
        let finding = Finding::new(rule, why.message, rule.fix);
        match why.field {
            Some(path) => finding.at_origin(format, None, Origin::Field { path }),
            None => finding,
        }
    }
    /// Suggests `value` for the deployment field `path`, and points at the field.
    /// Only a deployment has fields: when linting command lines, the finding is left as it is.
    pub fn suggest(mut self, ctx: &Context, path: &str, value: impl Into<serde_json::Value>) -> Finding {
        if ctx.deployment.is_none() {
            return self;
        }
        let origin = Origin::Field { path: path.into() };
        if !self.locations.iter().any(|l| l.origin == origin) {
            self = self.at_origin(path.split('.').next().unwrap_or(path), None, origin);
        }
        self.suggestion = Some(Suggestion { path: path.into(), value: value.into() });
        self
    }
    /// For a note that a rule skipped for want of the model's geometry: when the deployment's
    /// `model.path` names a built-in model and neither `model.geometry` nor `model.preset` is set,
    /// the fix names that preset and suggests it. Linted commands have neither field: the fix says
    /// how to name the model to the linter.
    pub fn or_preset(mut self, ctx: &Context) -> Finding {
        let Some(m) = ctx.deployment.map(|d| &d.model) else {
            if ctx.model.geometry.is_none() {
                self.fix = "name the model to the linter: a built-in one (`--model NAME` on the command line, \
                            \"Model\" in the app; `pdlaunch model --list`), or a Hugging Face id it knows in \
                            `--model-path`"
                    .to_owned();
            }
            return self;
        };
        if m.geometry.is_some() || m.preset.is_some() {
            return self;
        }
        let Some(p) = crate::model::preset_for_path(&m.path) else { return self };
        self.fix = format!("set `model.preset` to `{}`, the built-in model that `model.path` names", p.name);
        self.suggest(ctx, "model.preset", p.name)
    }
}

/// The router as the rules see it.
#[derive(Clone, Debug)]
pub struct RouterView {
    /// Listen host.
    pub host: String,
    /// Listen port.
    pub port: u16,
    /// Prefill entries: URL host, URL port, bootstrap port given (if any), origin.
    pub prefills: Vec<RouterEntry>,
    /// Decode entries (bootstrap port always `None`).
    pub decodes: Vec<RouterEntry>,
    /// The router argv after the module.
    pub tokens: Vec<String>,
    /// What argparse read.
    pub parsed: Parsed,
    /// Origin of each token.
    pub origins: Vec<Origin>,
    /// The router release.
    pub release: RouterRelease,
}

/// One `--prefill`/`--decode` entry of the router.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterEntry {
    /// Host from the URL.
    pub host: String,
    /// Port from the URL.
    pub port: u16,
    /// Bootstrap port after the URL.
    pub bootstrap_port: Option<u16>,
    /// Where it came from.
    pub origin: Origin,
    /// True for a pod the router finds by its labels (`--service-discovery`): the host is the
    /// pod, the port the router's discovery port, the bootstrap port the pod's annotation.
    pub discovered: bool,
    /// The pod port that a Service the host names forwards `port` to, when it is another.
    pub forwarded: Option<u16>,
}

impl RouterEntry {
    /// The port the server behind the entry listens on: the entry's, or the one its Service
    /// forwards it to.
    pub fn server_port(&self) -> u16 {
        self.forwarded.unwrap_or(self.port)
    }
    /// A prefill entry as the router is given it: `--prefill http://host:port [bootstrap]`.
    pub fn prefill_flag(&self) -> String {
        let url = format!("http://{}", crate::plan::host_port(&self.host, self.port));
        match self.bootstrap_port {
            Some(b) => format!("--prefill {url} {b}"),
            None => format!("--prefill {url}"),
        }
    }
}

/// Everything the rules look at.
#[derive(Clone, Debug)]
pub struct Context<'a> {
    /// Every server, prefill first.
    pub servers: Vec<ServerView>,
    /// The router, when there is one.
    pub router: Option<RouterView>,
    /// Model facts.
    pub model: ModelFacts,
    /// Target release.
    pub release: Release,
    /// The deployment, when checking one (absent when linting command lines).
    pub deployment: Option<&'a Deployment>,
    /// The deployment's set fields that the renderer left out (none when linting).
    pub dropped: Vec<crate::plan::Dropped>,
}

impl<'a> Context<'a> {
    /// The context of a rendered deployment.
    pub fn from_deployment(d: &'a Deployment, plan: &Plan) -> Context<'a> {
        let servers = plan
            .servers
            .iter()
            .map(|p| {
                let mut v = ServerView::new(
                    p.label(),
                    p.host.clone(),
                    p.arg_tokens(),
                    p.token_origins().into_iter().cloned().collect(),
                    p.env.clone(),
                    d.side(p.role).gpu,
                    d.sglang_version,
                );
                v.gpus = Some(p.gpus);
                v.instance = p.instance;
                v.node = p.node;
                v
            })
            .collect();
        let tokens = plan.router.arg_tokens();
        let origins: Vec<Origin> =
            plan.router.args.iter().flat_map(|a| a.tokens.iter().map(move |_| a.origin.clone())).collect();
        let entry = |url: &str, port: Option<u16>, origin: Origin| {
            let (host, p) = split_url(url).unwrap_or_default();
            RouterEntry { host, port: p, bootstrap_port: port, origin, discovered: false, forwarded: None }
        };
        let router = RouterView {
            host: plan.router.host.clone(),
            port: plan.router.port,
            prefills: plan
                .router
                .prefills
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    entry(&e.url, e.bootstrap_port, Origin::Field { path: format!("prefill.instances[{i}]") })
                })
                .collect(),
            decodes: plan
                .router
                .decodes
                .iter()
                .enumerate()
                .map(|(i, u)| entry(u, None, Origin::Field { path: format!("decode.instances[{i}]") }))
                .collect(),
            parsed: parse_argv(d.router_version.spec(), &tokens),
            tokens,
            origins,
            release: d.router_version,
        };
        Context {
            servers,
            router: Some(router),
            model: ModelFacts::from_model(&d.model),
            release: d.sglang_version,
            deployment: Some(d),
            dropped: plan.dropped.clone(),
        }
    }

    /// Servers of one role.
    pub fn role(&self, role: Role) -> impl Iterator<Item = &ServerView> {
        self.servers.iter().filter(move |s| s.role == Some(role))
    }

    /// Node-0 servers of one role (one per instance): the ones that talk to the peer side.
    pub fn heads(&self, role: Role) -> impl Iterator<Item = &ServerView> {
        self.role(role).filter(|s| s.node == 0)
    }

    /// The servers of each instance (its nodes), instances in order of their first server.
    pub fn instances(&self) -> Vec<Vec<&ServerView>> {
        let mut index: crate::fast_hash::FastMap<(Option<Role>, usize), usize> = Default::default();
        let mut out: Vec<Vec<&ServerView>> = Vec::new();
        for s in &self.servers {
            let i = *index.entry((s.role, s.instance)).or_insert(out.len());
            if i == out.len() {
                out.push(Vec::new());
            }
            out[i].push(s);
        }
        out
    }

    /// Every (prefill head, decode head) pair.
    pub fn pairs(&self) -> Vec<(&ServerView, &ServerView)> {
        let mut out = Vec::new();
        for p in self.heads(Role::Prefill) {
            for d in self.heads(Role::Decode) {
                out.push((p, d));
            }
        }
        out
    }

    /// The GPU of a side, when all its servers agree on one.
    pub fn gpu(&self, role: Role) -> Option<Gpu> {
        self.role(role).next().and_then(|s| s.gpu)
    }
}

/// Splits `http://host:port[/...]` into host and port (default 80).
pub fn split_url(url: &str) -> Option<(String, u16)> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split('/').next()?;
    let hostport = hostport.split('@').next().unwrap_or(hostport);
    if let Some(v6) = hostport.strip_prefix('[') {
        let (h, p) = v6.split_once(']')?;
        let port = p.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(80);
        return Some((h.to_owned(), port));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((hostport.to_owned(), 80)),
    }
}

/// Servers grouped by a key, in first-seen order, so that one finding covers every process a
/// single setting affects (the nodes and instances of a side share their origins). Servers whose
/// key is `None` are left out. Shared by the per-server rules.
pub(crate) fn group<'a, K: PartialEq>(
    servers: impl IntoIterator<Item = &'a ServerView>,
    key: impl Fn(&ServerView) -> Option<K>,
) -> Vec<(K, Vec<&'a ServerView>)> {
    let mut groups: Vec<(K, Vec<&'a ServerView>)> = Vec::new();
    for s in servers {
        let Some(k) = key(s) else { continue };
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(s),
            None => groups.push((k, vec![s])),
        }
    }
    groups
}

/// Where a pair's per-side values of `dest` come from, other than the shared field `field` that
/// renders them once (e.g. `decode.extra_args[2]`, `run-decode.sh:4:3`): what a fix removes.
pub(crate) fn overrides(p: &ServerView, d: &ServerView, dest: &str, field: Option<&str>) -> Vec<String> {
    [p, d]
        .iter()
        .filter_map(|s| s.origin(dest))
        .map(ToString::to_string)
        .filter(|o| Some(o.as_str()) != field)
        .collect()
}

/// SGLang's error when the KV-cache dtype strings differ (PD002 reports it; PD003 explains the
/// spelling-only case).
pub(crate) const KV_DTYPE_MISMATCH_ERROR: &str = "KV cache dtype mismatch: prefill server has kv_cache_dtype={info.kv_cache_dtype}, but decode server has kv_cache_dtype={self.kv_cache_dtype_str}. Both servers must use the same --kv-cache-dtype value.";

/// The divisors of `n` in ascending order, found among the pairs `k`, `n / k` with `k` up to the
/// square root of `n` (a size can be as large as `u32::MAX`).
pub(crate) fn divisors(n: u32) -> Vec<u32> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut k = 1u32;
    while k.checked_mul(k).is_some_and(|square| square <= n) {
        if n.is_multiple_of(k) {
            low.push(k);
            if n / k != k {
                high.push(n / k);
            }
        }
        k += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

/// The labels of some servers, comma-separated.
pub(crate) fn labels(servers: &[&ServerView]) -> String {
    servers.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(", ")
}

/// Runs every rule; findings come out errors first, then by code, without duplicates.
pub fn run(ctx: &Context) -> Vec<Finding> {
    let deployment = ctx.deployment.is_some();
    let mut out = unique(RULES.iter().filter_map(|r| r.check.of_views(deployment)).flat_map(|check| check(ctx)));
    crate::sort::sort_by(&mut out, |a, b| a.severity.cmp(&b.severity).then(a.code.cmp(b.code)));
    out
}

/// Runs every rule on a probed fleet: those of the views on the servers that answered (as on linted
/// commands, which they are closest to: no deployment fields behind them), and those of the fleet;
/// findings come out as [`run`]'s do.
pub fn run_fleet(fleet: &Fleet) -> Vec<Finding> {
    let of_views = RULES.iter().filter_map(|r| r.check.of_views(false)).flat_map(|check| check(&fleet.ctx));
    let of_fleet = RULES.iter().filter_map(|r| match r.check {
        Check::Fleet(f) => Some(f(fleet)),
        _ => None,
    });
    let mut out = unique(of_views.chain(of_fleet.flatten()));
    crate::sort::sort_by(&mut out, |a, b| a.severity.cmp(&b.severity).then(a.code.cmp(b.code)));
    out
}

/// The findings in order, each (code and message) once.
fn unique(all: impl IntoIterator<Item = Finding>) -> Vec<Finding> {
    crate::fast_hash::unique_by(
        all,
        |f| crate::fast_hash::hash_one((f.code, &f.message)),
        |a, b| a.code == b.code && a.message == b.message,
    )
}

/// The result of checking a deployment.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Findings, errors first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Number of findings of a severity.
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
    /// True when no finding is an error.
    pub fn is_clean(&self) -> bool {
        self.count(Severity::Error) == 0
    }
}

/// Renders and validates a deployment.
pub fn check(d: &Deployment) -> Report {
    let plan = crate::plan::plan(d);
    let ctx = Context::from_deployment(d, &plan);
    Report { findings: run(&ctx) }
}

/// Helpers for rule tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The single-node Llama 1P1D example as a starting point.
    pub fn llama() -> Deployment {
        crate::examples::example("llama-1p1d").expect("example exists")
    }

    /// The multi-node DeepSeek example.
    pub fn deepseek() -> Deployment {
        crate::examples::example("deepseek-v3-dp-deepep").expect("example exists")
    }

    /// Codes of the findings of `d`.
    pub fn codes(d: &Deployment) -> Vec<&'static str> {
        check(d).findings.iter().map(|f| f.code).collect()
    }

    /// The findings of one rule for `d`.
    pub fn findings(d: &Deployment, code: &str) -> Vec<Finding> {
        check(d).findings.into_iter().filter(|f| f.code == code).collect()
    }

    /// Lints `files` (name and text) with no options, as `pdlaunch lint` does; a name
    /// `config:PATH` is an SGLang `--config` file that a command refers to.
    pub fn lint(files: &[(&str, &str)]) -> crate::lint::Linted {
        let inputs: Vec<crate::lint::Input> = files
            .iter()
            .map(|(n, t)| match n.strip_prefix("config:") {
                Some(c) => crate::lint::Input::config(c, *t),
                None => crate::lint::Input::new(*n, *t),
            })
            .collect();
        crate::lint::lint(&inputs, &Default::default())
    }

    /// A two-node prefill and decode written out once per node, and their router; `p1` is added
    /// to the prefill's second node, whose `--node-rank` is `rank1`.
    pub fn two_node_job(rank1: &str, p1: &str) -> String {
        let node = |mode: &str, rank: &str, host: &str, rdv: &str, extra: &str| {
            format!(
                "python3 -m sglang.launch_server --model-path m --disaggregation-mode {mode} --tp 16 --nnodes 2 \
                 --node-rank {rank} --dist-init-addr {rdv}:5000 --host {host} --port 30000{extra}\n"
            )
        };
        [
            node("prefill", "0", "h1", "h1", ""),
            node("prefill", rank1, "h2", "h1", p1),
            node("decode", "0", "h3", "h3", ""),
            node("decode", "1", "h4", "h3", ""),
            "python3 -m sglang_router.launch_router --pd-disaggregation --prefill http://h1:30000 --decode \
             http://h3:30000 --port 8000\n"
                .to_owned(),
        ]
        .concat()
    }

    /// The messages of the findings of rule `code` when `files` are linted.
    pub fn linted(files: &[(&str, &str)], code: &str) -> Vec<String> {
        let l = lint(files);
        l.findings.into_iter().filter(|f| f.finding.code == code).map(|f| f.finding.message).collect()
    }

    /// A docs-style 1P1D on one machine, as a script; `p`/`d` are the extra prefill/decode
    /// arguments.
    pub fn pd_script(p: &str, d: &str) -> String {
        format!(
            "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode prefill \
             --port 30000 --disaggregation-ib-device mlx5_roce0{p} &\n\
             python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disaggregation-mode decode \
             --port 30001 --base-gpu-id 4 --disaggregation-ib-device mlx5_roce0{d} &\n\
             python -m sglang_router.launch_router --pd-disaggregation --prefill http://127.0.0.1:30000 \
             --decode http://127.0.0.1:30001 --host 0.0.0.0 --port 8000\n"
        )
    }

    /// The findings of [`pd_script`]`(prefill, decode)` linted as the catalogue's cases are: on
    /// H100s, with `model_preset` naming the model when the path does not.
    pub fn lint_findings(prefill: &str, decode: &str, model_preset: Option<&str>) -> Vec<Finding> {
        let opts = crate::lint::Options {
            gpu: Some(crate::deployment::Gpu::H100),
            model_preset: model_preset.map(str::to_owned),
            ..Default::default()
        };
        let input = crate::lint::Input::new("pd.sh", pd_script(prefill, decode));
        crate::lint::lint(&[input], &opts).findings.into_iter().map(|f| f.finding).collect()
    }

    /// The codes of [`lint_findings`].
    pub fn lint_case(prefill: &str, decode: &str, model_preset: Option<&str>) -> Vec<&'static str> {
        lint_findings(prefill, decode, model_preset).iter().map(|f| f.code).collect()
    }

    /// A server launched with `args` (space-separated) on `host`, as lint input gives one: no
    /// deployment fields behind it, the latest release.
    pub fn server(label: &str, host: &str, args: &str, gpu: Option<crate::deployment::Gpu>) -> ServerView {
        let tokens: Vec<String> = args.split(' ').map(str::to_owned).collect();
        let origins = vec![crate::plan::Origin::Derived; tokens.len()];
        ServerView::new(
            label.into(),
            host.into(),
            tokens,
            origins,
            Default::default(),
            gpu,
            crate::release::Release::LATEST,
        )
    }
}

#[cfg(test)]
mod edge_values {
    use serde_json::{json, Value};

    use crate::load::{parse_deployment, Syntax};
    use crate::picture::render;
    use crate::render::Format;

    #[test]
    fn divisors_agree_with_trial_division() {
        for n in 0..500u32 {
            let naive: Vec<u32> = (1..=n).filter(|d| n.is_multiple_of(*d)).collect();
            assert_eq!(super::divisors(n), naive, "{n}");
        }
        assert_eq!(
            super::divisors(u32::MAX),
            [
                1, 3, 5, 15, 17, 51, 85, 255, 257, 771, 1285, 3855, 4369, 13107, 21845, 65535, 65537, 196611, 327685,
                983055, 1114129, 3342387, 5570645, 16711935, 16843009, 50529027, 84215045, 252645135, 286331153,
                858993459, 1431655765, 4294967295
            ]
        );
    }

    /// Every numeric field the schema declares, at zero, one, its largest values and fractions,
    /// in every example where its object exists: a deployment the loader accepts renders (the
    /// picture formats too) and is checked without a panic.
    #[test]
    fn numeric_fields_at_their_edges_never_panic() {
        let schema = crate::schema::schema_value(crate::schema::Dialect::Draft07);
        let numeric = |def: &str| -> Vec<String> {
            let props = schema["definitions"][def]["properties"].as_object().cloned().unwrap_or_default();
            props
                .into_iter()
                .filter(|(_, p)| {
                    let t = p["type"].to_string();
                    t.contains("integer") || t.contains("number")
                })
                .map(|(k, _)| k)
                .collect()
        };
        let objects: &[(&str, &str)] = &[
            ("/shared", "Shared"),
            ("/shared/speculative", "Speculative"),
            ("/model", "Model"),
            ("/model/geometry", "Geometry"),
            ("/router", "Router"),
            ("/prefill", "Side"),
            ("/decode", "Side"),
            ("/prefill/hicache", "HiCache"),
            ("/decode/hicache", "HiCache"),
            ("/prefill/instances/0", "Instance"),
            ("/decode/instances/0", "Instance"),
            ("/prefill/instances/0/nodes/0", "Node"),
            ("/decode/instances/0/nodes/0", "Node"),
        ];
        let edges = [
            json!(0),
            json!(1),
            json!(-1),
            json!(u32::MAX),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(0.5),
            json!(1e300),
        ];
        let (mut accepted, mut tried, mut failed) = (0, 0, Vec::new());
        for e in crate::examples::EXAMPLES {
            let base: Value = crate::load::to_value(&parse_deployment(e.yaml, e.name, Syntax::Yaml).unwrap());
            for (at, def) in objects {
                if !base.pointer(at).is_some_and(Value::is_object) {
                    continue;
                }
                let fields = numeric(def);
                assert!(!fields.is_empty(), "{def} has no numeric field");
                for field in fields {
                    for edge in &edges {
                        let mut d = base.clone();
                        d.pointer_mut(at).unwrap()[field.as_str()] = edge.clone();
                        tried += 1;
                        let Ok(d) = parse_deployment(&d.to_string(), e.name, Syntax::Json) else {
                            continue;
                        };
                        accepted += 1;
                        let run = std::panic::catch_unwind(|| {
                            let _ = super::check(&d);
                            for format in Format::ALL {
                                let _ = render(&d, format);
                            }
                        });
                        if run.is_err() {
                            failed.push(format!("{}: {at}/{field} = {edge}", e.name));
                        }
                    }
                }
            }
        }
        assert!(failed.is_empty(), "{} edited deployments panicked: {}", failed.len(), failed.join("; "));
        assert!(accepted > 100, "only {accepted} of {tried} edited deployments were accepted");
        eprintln!("numeric edges: {accepted} of {tried} edited deployments accepted, checked and rendered");
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// The list of modules is the registry: each rule's module is named by its code and name, and
    /// the codes rise from PD001 (a family may start at a round number, leaving codes free before
    /// it), so a rule listed out of order or under another code shows here.
    #[test]
    fn each_module_is_its_rules_code_and_name_in_code_order() {
        assert_eq!(MODULES.len(), RULES.len());
        assert_eq!(RULES[0].code, "PD001");
        let number = |code: &str| code.strip_prefix("PD").and_then(|n| n.parse::<u32>().ok());
        for (module, pair) in MODULES.iter().skip(1).zip(RULES.windows(2)) {
            let (before, rule) = (number(pair[0].code), number(pair[1].code));
            assert!(before.is_some() && rule > before, "{module}: {} after {}", pair[1].code, pair[0].code);
        }
        for (module, rule) in MODULES.iter().zip(RULES) {
            assert_eq!(rule.code.len(), 5, "{module}");
            let want = format!("{}_{}", rule.code.to_ascii_lowercase(), rule.name.replace('-', "_"));
            assert_eq!(*module, want);
        }
    }
}

#[cfg(test)]
mod unique_tests {
    use super::*;

    #[test]
    fn repeats_are_dropped_before_and_after_the_index() {
        // 300 findings of 100 messages under two codes' worth of rules: the first of each stays,
        // in order, whether it was met while comparing one by one or through the index.
        let rule = RULES[0];
        let other = RULES[1];
        let all = (0..300).map(|i| {
            let r = if i % 7 == 0 { other } else { rule };
            Finding::new(r, format!("message {}", i % 100), "fix")
        });
        let out = unique(all);
        let mut want: Vec<(&str, String)> = Vec::new();
        for i in 0..300 {
            let r = if i % 7 == 0 { other } else { rule };
            let k = (r.code, format!("message {}", i % 100));
            if !want.contains(&k) {
                want.push(k);
            }
        }
        let got: Vec<(&str, String)> = out.iter().map(|f| (f.code, f.message.clone())).collect();
        assert_eq!(got, want);
        assert!(got.len() > 100, "both codes kept apart: {}", got.len());
    }
}

#[cfg(test)]
mod lint_only_tests {
    use super::testing::{deepseek, llama};
    use super::*;

    /// A rule marked `lint_only` is left out of `check`, so it must have nothing to say about a
    /// deployment, even one whose verbatim arguments repeat a flag or name a variable.
    #[test]
    fn lint_only_rules_find_nothing_in_a_deployment() {
        let mut repeated = llama();
        repeated.decode.extra_args =
            ["--page-size", "16", "--page-size", "32", "--host", "${HOST}"].map(Into::into).into();
        let mut all: Vec<Deployment> =
            crate::examples::EXAMPLES.iter().filter_map(|e| crate::examples::example(e.name)).collect();
        let mut nulled = llama();
        nulled.prefill.extra_args = ["--disaggregation-mode", "null", "--config=x.yaml"].map(Into::into).into();
        // Both are seen, by rules that check runs.
        assert!(check(&repeated).findings.iter().any(|f| f.code == "PD027"));
        assert!(check(&nulled).findings.iter().any(|f| f.code == "PD037"));
        all.extend([repeated, nulled, deepseek()]);
        let lint_only: Vec<&Rule> = RULES.iter().copied().filter(|r| r.lint_only()).collect();
        assert_eq!(lint_only.len(), 10);
        // Those that read the views: a rendered deployment's views give them nothing either.
        for d in &all {
            let plan = crate::plan::plan(d);
            let ctx = Context::from_deployment(d, &plan);
            for rule in &lint_only {
                let Check::Commands(check) = rule.check else { continue };
                let found = check(&ctx);
                assert!(found.is_empty(), "{} fired on a deployment: {found:?}", rule.code);
            }
        }
    }
}
