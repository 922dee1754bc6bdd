//! The one flag table. Every SGLang server and router flag pdlaunch emits is declared here once:
//! its spellings, value kind, choices, default, how it relates across the prefill and decode
//! sides, the releases it exists in, and the deployment field it renders from. The renderer, the
//! JSON Schema's descriptions, `explain`, the validator and the web form all read this table, and
//! `tests::flag_table_agrees_with_specs` checks it against SGLang's own argparse specs for every
//! known release.

use crate::deployment::{Deployment, HiCache, Instance, Node, Role, Speculative};
use crate::release::{Release, RouterRelease, RouterReleases, ServerReleases};

/// How a flag's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `store_true`: present or absent.
    Switch,
    /// One integer.
    Int,
    /// One float.
    Float,
    /// One string.
    Str,
    /// Several values after one flag.
    List,
    /// Repeatable flag with one or more values each time (`action="append"`).
    Append,
}

/// A flag's default, as argparse declares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dflt {
    None,
    Switch(bool),
    Int(i64),
    Float(f64),
    Str(&'static str),
}

/// How a flag relates across the two sides of a PD deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// Must be equal on prefill and decode; rendered once from a shared field.
    MustMatch,
    /// Should be equal for predictable behaviour; rendered once from a shared field.
    ShouldMatch,
    /// The two sides are constrained against each other (e.g. TP divisibility), not equal.
    Related,
    /// Chosen per side.
    PerSide,
    /// Chosen per instance (ports, rendezvous).
    PerInstance,
    /// Chosen per node (host, GPUs, RDMA device, node rank).
    PerNode,
    /// Meaningful on prefill servers only.
    PrefillOnly,
    /// Meaningful on decode servers only.
    DecodeOnly,
    /// Must agree with another component (router, bootstrap).
    Link,
    /// A router flag.
    Router,
}

impl Relation {
    /// Short human description, used in schema descriptions and form help.
    pub fn describe(self) -> &'static str {
        match self {
            Relation::MustMatch => "must match on prefill and decode (rendered once, on both)",
            Relation::ShouldMatch => "should match on prefill and decode (rendered once, on both)",
            Relation::Related => "constrained across prefill and decode",
            Relation::PerSide => "per side",
            Relation::PerInstance => "per instance",
            Relation::PerNode => "per node",
            Relation::PrefillOnly => "prefill only",
            Relation::DecodeOnly => "decode only",
            Relation::Link => "links prefill, decode and router",
            Relation::Router => "router",
        }
    }
}

/// One SGLang (or router) flag.
#[derive(Debug)]
pub struct Flag {
    /// Main spelling in the newest release that has the flag.
    pub name: &'static str,
    /// Other spellings argparse accepts for the same destination.
    pub aliases: &'static [&'static str],
    /// argparse destination (the `ServerArgs` field).
    pub dest: &'static str,
    /// Value kind.
    pub kind: Kind,
    /// Allowed values (empty when unrestricted); a subset of every release's choices is not
    /// required, but each value pdlaunch can emit must exist in the target release.
    pub choices: &'static [&'static str],
    /// argparse default in the newest release that has the flag.
    pub default: Dflt,
    /// Relation across sides.
    pub relation: Relation,
    /// The releases that accept this spelling: server releases for a server flag, router
    /// releases for a router flag.
    pub releases: Releases,
    /// Deployment field it renders from, as `Definition.property` in the JSON Schema; empty when
    /// derived from the topology. The one spelling of the field: [`Flag::path`] makes the
    /// deployment paths of findings and plan origins from it, and `tests::bindings_touch_their_field`
    /// checks that [`Flag::bind`] reaches that very field.
    pub field: &'static str,
    /// How the value goes from the deployment field to argv and back.
    pub bind: Binding,
    /// Why it matters for PD.
    pub doc: &'static str,
}

/// The releases that accept a flag: the program's own kind of release, so a server flag's set
/// never answers for a router release or the other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Releases {
    /// A flag of `sglang.launch_server`.
    Server(ServerReleases),
    /// A flag of `sglang_router.launch_router`.
    Router(RouterReleases),
}

impl Releases {
    /// True when the set holds every known release of its program.
    pub fn is_all(self) -> bool {
        match self {
            Releases::Server(s) => s.is_all(),
            Releases::Router(r) => r.is_all(),
        }
    }
}

/// Every server release.
const ALL: Releases = Releases::Server(ServerReleases::ALL);
/// Every router release.
const ROUTER_ALL: Releases = Releases::Router(RouterReleases::ALL);
/// Server release `first` and every newer one.
const fn since(first: Release) -> Releases {
    Releases::Server(ServerReleases::since(first))
}
/// Every server release up to `last`, included.
const fn until(last: Release) -> Releases {
    Releases::Server(ServerReleases::until(last))
}
/// Server releases `first` to `last`, both included.
const fn between(first: Release, last: Release) -> Releases {
    Releases::Server(ServerReleases::between(first, last))
}
/// Router release `first` and every newer one.
const fn router_since(first: RouterRelease) -> Releases {
    Releases::Router(RouterReleases::since(first))
}

impl Flag {
    /// True when server `release` accepts this flag (never for a router flag).
    pub fn in_release(&self, release: Release) -> bool {
        matches!(self.releases, Releases::Server(s) if s.contains(release))
    }
    /// True when router `release` accepts this flag (never for a server flag).
    pub fn in_router_release(&self, release: RouterRelease) -> bool {
        matches!(self.releases, Releases::Router(r) if r.contains(release))
    }
    /// Every spelling.
    pub fn spellings(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
    /// The releases that accept this flag, as text (e.g. `0.5.19, 0.5.23`).
    pub fn release_list(&self) -> String {
        match self.releases {
            Releases::Server(s) => s.iter().map(Release::as_str).collect::<Vec<_>>().join(", "),
            Releases::Router(r) => r.iter().map(RouterRelease::as_str).collect::<Vec<_>>().join(", "),
        }
    }
}

/// Which server of a deployment a field is read for: the side, and the instance and node for the
/// per-instance and per-node fields (`Instance.*`, `Node.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// The side.
    pub role: Role,
    /// Instance index within the side.
    pub instance: usize,
    /// Node rank within the instance.
    pub node: usize,
}

/// A flag's value as a command line carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// A switch, present (`true`) or, read back from argv, given as off.
    Switch(bool),
    /// The one value after the flag.
    Text(String),
}

/// The servers a spelling is for, when a field renders through different flags per side
/// (`--cuda-graph-max-bs-prefill` on the prefill, `--cuda-graph-max-bs-decode` on the decode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sides {
    /// Either side.
    Both,
    /// Prefill servers only.
    Prefill,
    /// Decode servers only.
    Decode,
}

impl Sides {
    /// True when this spelling is for servers of `role`.
    pub fn has(self, role: Role) -> bool {
        match self {
            Sides::Both => true,
            Sides::Prefill => role == Role::Prefill,
            Sides::Decode => role == Role::Decode,
        }
    }
}

/// A flag's way from its deployment field ([`Flag::field`]) to argv and back: function pointers,
/// one pair per flag, so that no code is generated per flag beyond its two small bodies.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    /// The value the server at `At` renders the flag with, `None` when it renders nothing (an
    /// unset field, a switch that is off, a size of 1). `None` as a whole for the flags whose
    /// argv the plan derives from the topology, the release or several fields; each says so in
    /// its doc comment.
    pub get: Option<fn(&Deployment, At) -> Option<Written>>,
    /// Stores a value read from a server's argv into the field (the linter's reconstruction);
    /// false when the field cannot hold it (a choice it does not know, a negative count). `None`
    /// for the flags reconstruction reads back with code of its own, or not at all.
    pub set: Option<fn(&mut Deployment, At, &Written) -> bool>,
    /// The servers this spelling is for.
    pub on: Sides,
}

impl Flag {
    /// The deployment path of the field this flag renders from, for the server at `at`
    /// (`shared.page_size`, `decode.instances[0].nodes[1].ib_device`); `None` for a flag no field
    /// renders.
    pub fn path(&self, at: At) -> Option<String> {
        field_path(self.field, at.role.as_str(), at.instance, at.node)
    }
    /// How many values of its field a deployment holds; `None` for a flag no field renders.
    pub fn reach(&self) -> Option<Reach> {
        let (definition, _) = self.field.split_once('.')?;
        Some(match definition {
            "Model" | "Shared" | "Speculative" => Reach::Both,
            "Side" | "HiCache" => Reach::Side,
            "Instance" => Reach::Instance,
            "Node" => Reach::Node,
            "Router" => Reach::Router,
            _ => return None,
        })
    }
    /// True when the field is per instance or per node (ports, NICs), not the same on every
    /// server of a side.
    pub fn per_process(&self) -> bool {
        matches!(self.reach(), Some(Reach::Instance | Reach::Node))
    }
}

/// How many values of a flag's field a deployment holds, read from the field's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// One for both sides (`Model`, `Shared`, `Speculative`).
    Both,
    /// One per side (`Side`, `HiCache`).
    Side,
    /// One per instance of a side (`Instance`).
    Instance,
    /// One per node of an instance (`Node`).
    Node,
    /// The router's one (`Router`).
    Router,
}

// The small conversions the bindings are written with.

fn shown<T: std::fmt::Display>(v: Option<&T>) -> Option<Written> {
    v.map(|v| Written::Text(v.to_string()))
}
fn switch(on: bool) -> Option<Written> {
    on.then_some(Written::Switch(true))
}
/// A size SGLang defaults to 1 is written only when larger.
fn above_one(n: u32) -> Option<Written> {
    (n > 1).then(|| Written::Text(n.to_string()))
}
fn text(v: &Written) -> Option<String> {
    match v {
        Written::Text(t) => Some(t.clone()),
        Written::Switch(_) => None,
    }
}
fn on_off(v: &Written) -> Option<bool> {
    match v {
        Written::Switch(b) => Some(*b),
        Written::Text(_) => None,
    }
}
/// An integer as argparse reads it (`human_readable_int` included), if the field's type holds it.
fn int<T: TryFrom<i64>>(v: &Written) -> Option<T> {
    match v {
        Written::Text(t) => crate::spec::parse_human_int(t).and_then(|n| T::try_from(n).ok()),
        Written::Switch(_) => None,
    }
}
fn float(v: &Written) -> Option<f64> {
    match v {
        Written::Text(t) => crate::float::parse(t).filter(|x| x.is_finite()),
        Written::Switch(_) => None,
    }
}
/// The speculation a server at `at` renders: none on a prefill when it is the decode's only.
fn speculative(d: &Deployment, at: At) -> Option<&Speculative> {
    d.shared.speculative.as_ref().filter(|s| !(s.decode_only && at.role == Role::Prefill))
}
/// The algorithm starts a speculation; its other fields need one started.
fn set_algorithm(d: &mut Deployment, algorithm: String) {
    match &mut d.shared.speculative {
        Some(s) => s.algorithm = algorithm,
        None => {
            d.shared.speculative = Some(Speculative {
                algorithm,
                decode_only: false,
                draft_model_path: None,
                num_steps: None,
                eagle_topk: None,
                num_draft_tokens: None,
                draft_kv_cache_dtype: None,
                draft_attention_backend: None,
            })
        }
    }
}
fn hicache_mut(d: &mut Deployment, at: At) -> &mut HiCache {
    d.side_mut(at.role).hicache.get_or_insert(HiCache {
        ratio: None,
        size: None,
        storage_backend: None,
        write_policy: None,
    })
}
fn instance(d: &Deployment, at: At) -> Option<&Instance> {
    d.side(at.role).instances.get(at.instance)
}
fn node(d: &Deployment, at: At) -> Option<&Node> {
    instance(d, at)?.nodes.get(at.node)
}
fn instance_mut(d: &mut Deployment, at: At) -> Option<&mut Instance> {
    d.side_mut(at.role).instances.get_mut(at.instance)
}
fn node_mut(d: &mut Deployment, at: At) -> Option<&mut Node> {
    instance_mut(d, at)?.nodes.get_mut(at.node)
}

impl PartialEq for Flag {
    fn eq(&self, other: &Flag) -> bool {
        self.name == other.name && self.dest == other.dest
    }
}

/// The first of `candidates` that `release` accepts: how a field picks its spelling per release.
pub fn first_available(candidates: &[&'static Flag], release: Release) -> Option<&'static Flag> {
    candidates.iter().copied().find(|f| f.in_release(release))
}

/// The modeled server flag with this spelling (main name or alias).
pub fn server_flag(spelling: &str) -> Option<&'static Flag> {
    SERVER_FLAGS.iter().copied().find(|f| f.spellings().any(|s| s == spelling))
}

/// The modeled server flags that store into `dest`.
pub fn server_flags_for_dest(dest: &str) -> impl Iterator<Item = &'static Flag> + '_ {
    SERVER_FLAGS.iter().copied().filter(move |f| f.dest == dest)
}

/// A flag SGLang removed, with what replaces it.
#[derive(Debug)]
pub struct RemovedFlag {
    /// The old spelling.
    pub name: &'static str,
    /// The first release in which passing it is an error.
    pub removed_in: &'static str,
    /// What to write instead.
    pub replacement: &'static str,
}

/// Flags SGLang removed; passing them is "unrecognized arguments".
pub static REMOVED_FLAGS: &[RemovedFlag] = &[
    RemovedFlag {
        name: "--enable-deepep-moe",
        removed_in: "0.5.6",
        replacement: "`--moe-a2a-backend deepep` (the `moe_a2a_backend: deepep` side field)",
    },
    RemovedFlag {
        name: "--disaggregation-decode-tp",
        removed_in: "0.5.10",
        replacement: "nothing: set the decode side's own `--tp-size` (`decode.tp`)",
    },
    RemovedFlag {
        name: "--disaggregation-decode-dp",
        removed_in: "0.5.10",
        replacement: "nothing: set the decode side's own `--dp-size` (`decode.dp`/`decode.attn_dp`)",
    },
    RemovedFlag {
        name: "--disaggregation-prefill-pp",
        removed_in: "0.5.10",
        replacement: "nothing: the decode reads the prefill PP from the bootstrap server",
    },
    RemovedFlag {
        name: "--pdlb-url",
        removed_in: "0.5.3",
        replacement: "the router (`python -m sglang_router.launch_router --pd-disaggregation`)",
    },
    RemovedFlag {
        name: "--disaggregation-decode-enable-fake-auto",
        removed_in: "0.5.10",
        replacement: "`--disaggregation-transfer-backend fake` on the decode side",
    },
];

/// The removed flag with this spelling.
pub fn removed_flag(spelling: &str) -> Option<&'static RemovedFlag> {
    REMOVED_FLAGS.iter().find(|r| r.name == spelling)
}

/// `--model-path`: Weights to serve. Not checked by SGLang; a mismatch silently corrupts KV.
pub static MODEL_PATH: Flag = Flag {
    name: "--model-path",
    aliases: &["--model"],
    dest: "model_path",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.path",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.model.path))),
        set: Some(|d, _, v| text(v).map(|x| d.model.path = x).is_some()),
        on: Sides::Both,
    },
    doc: "Weights to serve. Not checked by SGLang; a mismatch silently corrupts KV.",
};

/// `--tokenizer-path`: Both sides tokenize every request; the decode pre-allocates KV from its own count.
pub static TOKENIZER_PATH: Flag = Flag {
    name: "--tokenizer-path",
    aliases: &[],
    dest: "tokenizer_path",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.tokenizer",
    bind: Binding {
        get: Some(|d, _| shown(d.model.tokenizer.as_ref())),
        set: Some(|d, _, v| text(v).map(|x| d.model.tokenizer = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Both sides tokenize every request; the decode pre-allocates KV from its own count.",
};

/// `--tokenizer-mode`: Tokenizer mode.
pub static TOKENIZER_MODE: Flag = Flag {
    name: "--tokenizer-mode",
    aliases: &[],
    dest: "tokenizer_mode",
    kind: Kind::Str,
    choices: crate::choices::TokenizerMode::NAMES,
    default: Dflt::Str("auto"),
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.tokenizer_mode",
    bind: Binding {
        get: Some(|d, _| shown(d.model.tokenizer_mode.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::TokenizerMode::parse(&t))
                .map(|x| d.model.tokenizer_mode = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Tokenizer mode.",
};

/// `--revision`: Weights revision.
pub static REVISION: Flag = Flag {
    name: "--revision",
    aliases: &[],
    dest: "revision",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.revision",
    bind: Binding {
        get: Some(|d, _| shown(d.model.revision.as_ref())),
        set: Some(|d, _, v| text(v).map(|x| d.model.revision = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Weights revision.",
};

/// `--trust-remote-code`: Model code must load identically.
pub static TRUST_REMOTE_CODE: Flag = Flag {
    name: "--trust-remote-code",
    aliases: &[],
    dest: "trust_remote_code",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.trust_remote_code",
    bind: Binding {
        get: Some(|d, _| switch(d.model.trust_remote_code)),
        set: Some(|d, _, v| on_off(v).map(|x| d.model.trust_remote_code = x).is_some()),
        on: Sides::Both,
    },
    doc: "Model code must load identically.",
};

/// `--dtype`: With `--kv-cache-dtype auto` the KV element type is the model dtype.
pub static DTYPE: Flag = Flag {
    name: "--dtype",
    aliases: &[],
    dest: "dtype",
    kind: Kind::Str,
    choices: crate::choices::ModelDtype::NAMES,
    default: Dflt::Str("auto"),
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.dtype",
    bind: Binding {
        get: Some(|d, _| shown(d.model.dtype.as_ref())),
        set: Some(|d, _, v| {
            text(v).and_then(|t| crate::choices::ModelDtype::parse(&t)).map(|x| d.model.dtype = Some(x)).is_some()
        }),
        on: Sides::Both,
    },
    doc: "With `--kv-cache-dtype auto` the KV element type is the model dtype.",
};

/// `--quantization`: The resolved quantization decides what `auto` KV dtype means.
pub static QUANTIZATION: Flag = Flag {
    name: "--quantization",
    aliases: &[],
    dest: "quantization",
    kind: Kind::Str,
    choices: crate::choices::Quantization::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.quantization",
    bind: Binding {
        get: Some(|d, _| shown(d.model.quantization.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::Quantization::parse(&t))
                .map(|x| d.model.quantization = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "The resolved quantization decides what `auto` KV dtype means.",
};

/// `--context-length`: A prefill accepting longer prompts than the decode can hold aborts requests.
pub static CONTEXT_LENGTH: Flag = Flag {
    name: "--context-length",
    aliases: &[],
    dest: "context_length",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::ShouldMatch,
    releases: ALL,
    field: "Model.context_length",
    bind: Binding {
        get: Some(|d, _| shown(d.model.context_length.as_ref())),
        set: Some(|d, _, v| int(v).map(|x| d.model.context_length = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "A prefill accepting longer prompts than the decode can hold aborts requests.",
};

/// `--served-model-name`: Clients and the gateway see this name.
pub static SERVED_MODEL_NAME: Flag = Flag {
    name: "--served-model-name",
    aliases: &[],
    dest: "served_model_name",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::ShouldMatch,
    releases: ALL,
    field: "Model.served_name",
    bind: Binding {
        get: Some(|d, _| shown(d.model.served_name.as_ref())),
        set: Some(|d, _, v| text(v).map(|x| d.model.served_name = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Clients and the gateway see this name.",
};

/// `--chat-template`: Chat requests are templated on each side independently.
pub static CHAT_TEMPLATE: Flag = Flag {
    name: "--chat-template",
    aliases: &[],
    dest: "chat_template",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Model.chat_template",
    bind: Binding {
        get: Some(|d, _| shown(d.model.chat_template.as_ref())),
        set: Some(|d, _, v| text(v).map(|x| d.model.chat_template = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Chat requests are templated on each side independently.",
};

/// `--page-size`: Checked by SGLang on the first request: "Page size mismatch".
pub static PAGE_SIZE: Flag = Flag {
    name: "--page-size",
    aliases: &[],
    dest: "page_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.page_size",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.shared.page_size))),
        set: Some(|d, _, v| int(v).map(|x| d.shared.page_size = x).is_some()),
        on: Sides::Both,
    },
    doc: "Checked by SGLang on the first request \"Page size mismatch\".",
};

/// `--kv-cache-dtype`: Checked by SGLang as a string: "KV cache dtype mismatch".
pub static KV_CACHE_DTYPE: Flag = Flag {
    name: "--kv-cache-dtype",
    aliases: &[],
    dest: "kv_cache_dtype",
    kind: Kind::Str,
    choices: crate::choices::KvCacheDtype::NAMES,
    default: Dflt::Str("auto"),
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.kv_cache_dtype",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.shared.kv_cache_dtype))),
        set: Some(|d, _, v| {
            text(v).and_then(|t| crate::choices::KvCacheDtype::parse(&t)).map(|x| d.shared.kv_cache_dtype = x).is_some()
        }),
        on: Sides::Both,
    },
    doc: "Checked by SGLang as a string: \"KV cache dtype mismatch\".",
};

/// `--disaggregation-transfer-backend`: Both sides must speak the same transfer engine.
pub static TRANSFER_BACKEND: Flag = Flag {
    name: "--disaggregation-transfer-backend",
    aliases: &[],
    dest: "disaggregation_transfer_backend",
    kind: Kind::Str,
    choices: crate::choices::TransferBackend::NAMES,
    default: Dflt::Str("mooncake"),
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.transfer_backend",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.shared.transfer_backend))),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::TransferBackend::parse(&t))
                .map(|x| d.shared.transfer_backend = x)
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Both sides must speak the same transfer engine.",
};

/// `--attention-backend`: Can snap the page size (flashmla 64, cutlass_mla 128, trtllm_* 64...).
pub static ATTENTION_BACKEND: Flag = Flag {
    name: "--attention-backend",
    aliases: &[],
    dest: "attention_backend",
    kind: Kind::Str,
    choices: crate::choices::AttentionBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.attention_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.attention_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::AttentionBackend::parse(&t))
                .map(|x| d.shared.attention_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Can snap the page size (flashmla 64, cutlass_mla 128, trtllm_* 64...).",
};

/// `--prefill-attention-backend`: Page-size snaps read it on either server.
pub static PREFILL_ATTENTION_BACKEND: Flag = Flag {
    name: "--prefill-attention-backend",
    aliases: &[],
    dest: "prefill_attention_backend",
    kind: Kind::Str,
    choices: crate::choices::AttentionBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.prefill_attention_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.prefill_attention_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::AttentionBackend::parse(&t))
                .map(|x| d.shared.prefill_attention_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Page-size snaps read it on either server.",
};

/// `--decode-attention-backend`: Page-size snaps read it even on a prefill server.
pub static DECODE_ATTENTION_BACKEND: Flag = Flag {
    name: "--decode-attention-backend",
    aliases: &[],
    dest: "decode_attention_backend",
    kind: Kind::Str,
    choices: crate::choices::AttentionBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Shared.decode_attention_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.decode_attention_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::AttentionBackend::parse(&t))
                .map(|x| d.shared.decode_attention_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Page-size snaps read it even on a prefill server.",
};

/// `--dsa-prefill-backend`: Decides the fp8 MLA row size (576 B for trtllm, 656 B otherwise).
pub static DSA_PREFILL_BACKEND: Flag = Flag {
    name: "--dsa-prefill-backend",
    aliases: &[],
    dest: "dsa_prefill_backend",
    kind: Kind::Str,
    choices: crate::choices::DsaBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.dsa_prefill_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.dsa_prefill_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::DsaBackend::parse(&t))
                .map(|x| d.shared.dsa_prefill_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Decides the fp8 MLA row size (576 B for trtllm, 656 B otherwise).",
};

/// `--dsa-decode-backend`: Decides the fp8 MLA row size (576 B for trtllm, 656 B otherwise).
pub static DSA_DECODE_BACKEND: Flag = Flag {
    name: "--dsa-decode-backend",
    aliases: &[],
    dest: "dsa_decode_backend",
    kind: Kind::Str,
    choices: crate::choices::DsaBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.dsa_decode_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.dsa_decode_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::DsaBackend::parse(&t))
                .map(|x| d.shared.dsa_decode_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Decides the fp8 MLA row size (576 B for trtllm, 656 B otherwise).",
};

/// `--nsa-prefill-backend`: Spelling of `--dsa-prefill-backend` before 0.5.19.
pub static NSA_PREFILL_BACKEND: Flag = Flag {
    name: "--nsa-prefill-backend",
    aliases: &[],
    dest: "dsa_prefill_backend",
    kind: Kind::Str,
    choices: crate::choices::DsaBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: between(Release::V0_5_6, Release::V0_5_19),
    field: "Shared.dsa_prefill_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.dsa_prefill_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::DsaBackend::parse(&t))
                .map(|x| d.shared.dsa_prefill_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Spelling of `--dsa-prefill-backend` before 0.5.19.",
};

/// `--nsa-decode-backend`: Spelling of `--dsa-decode-backend` before 0.5.19.
pub static NSA_DECODE_BACKEND: Flag = Flag {
    name: "--nsa-decode-backend",
    aliases: &[],
    dest: "dsa_decode_backend",
    kind: Kind::Str,
    choices: crate::choices::DsaBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: between(Release::V0_5_6, Release::V0_5_19),
    field: "Shared.dsa_decode_backend",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.dsa_decode_backend.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::DsaBackend::parse(&t))
                .map(|x| d.shared.dsa_decode_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Spelling of `--dsa-decode-backend` before 0.5.19.",
};

/// `--speculative-algorithm`: A prefill that speculates ships its draft top-k and hidden states; a decode may speculate alone.
pub static SPECULATIVE_ALGORITHM: Flag = Flag {
    name: "--speculative-algorithm",
    aliases: &[],
    dest: "speculative_algorithm",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Speculative.algorithm",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(Some(&s.algorithm)))),
        set: Some(|d, _, v| text(v).map(|a| set_algorithm(d, a)).is_some()),
        on: Sides::Both,
    },
    doc: "A prefill that speculates ships its draft top-k and hidden states; a decode may speculate alone.",
};

/// `--speculative-draft-model-path`: Draft KV geometry must match.
pub static SPECULATIVE_DRAFT_MODEL_PATH: Flag = Flag {
    name: "--speculative-draft-model-path",
    aliases: &["--speculative-draft-model"],
    dest: "speculative_draft_model_path",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Speculative.draft_model_path",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.draft_model_path.as_ref()))),
        set: Some(|d, _, v| {
            text(v).is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.draft_model_path = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Draft KV geometry must match.",
};

/// `--speculative-num-steps`: Draft steps.
pub static SPECULATIVE_NUM_STEPS: Flag = Flag {
    name: "--speculative-num-steps",
    aliases: &[],
    dest: "speculative_num_steps",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Speculative.num_steps",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.num_steps.as_ref()))),
        set: Some(|d, _, v| {
            int(v).is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.num_steps = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Draft steps.",
};

/// `--speculative-eagle-topk`: Top-k travels in fixed-width aux slots.
pub static SPECULATIVE_EAGLE_TOPK: Flag = Flag {
    name: "--speculative-eagle-topk",
    aliases: &[],
    dest: "speculative_eagle_topk",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Speculative.eagle_topk",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.eagle_topk.as_ref()))),
        set: Some(|d, _, v| {
            int(v).is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.eagle_topk = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Top-k travels in fixed-width aux slots.",
};

/// `--speculative-num-draft-tokens`: Draft tokens.
pub static SPECULATIVE_NUM_DRAFT_TOKENS: Flag = Flag {
    name: "--speculative-num-draft-tokens",
    aliases: &[],
    dest: "speculative_num_draft_tokens",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: ALL,
    field: "Speculative.num_draft_tokens",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.num_draft_tokens.as_ref()))),
        set: Some(|d, _, v| {
            int(v).is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.num_draft_tokens = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Draft tokens.",
};

/// `--speculative-draft-kv-cache-dtype`: Draft KV element type.
pub static SPECULATIVE_DRAFT_KV_CACHE_DTYPE: Flag = Flag {
    name: "--speculative-draft-kv-cache-dtype",
    aliases: &[],
    dest: "speculative_draft_kv_cache_dtype",
    kind: Kind::Str,
    choices: crate::choices::KvCacheDtype::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Speculative.draft_kv_cache_dtype",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.draft_kv_cache_dtype.as_ref()))),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::KvCacheDtype::parse(&t))
                .is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.draft_kv_cache_dtype = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Draft KV element type.",
};

/// `--speculative-draft-attention-backend`: Can snap the page size (trtllm_mha).
pub static SPECULATIVE_DRAFT_ATTENTION_BACKEND: Flag = Flag {
    name: "--speculative-draft-attention-backend",
    aliases: &[],
    dest: "speculative_draft_attention_backend",
    kind: Kind::Str,
    choices: crate::choices::AttentionBackend::NAMES,
    default: Dflt::None,
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_10),
    field: "Speculative.draft_attention_backend",
    bind: Binding {
        get: Some(|d, at| speculative(d, at).and_then(|s| shown(s.draft_attention_backend.as_ref()))),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::AttentionBackend::parse(&t))
                .is_some_and(|x| d.shared.speculative.as_mut().map(|s| s.draft_attention_backend = Some(x)).is_some())
        }),
        on: Sides::Both,
    },
    doc: "Can snap the page size (trtllm_mha).",
};

/// `--kv-canary`: Adds KV regions; one-sided canaries shift the layout.
pub static KV_CANARY: Flag = Flag {
    name: "--kv-canary",
    aliases: &[],
    dest: "kv_canary",
    kind: Kind::Str,
    choices: crate::choices::KvCanary::NAMES,
    default: Dflt::Str("none"),
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.kv_canary",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.kv_canary.as_ref())),
        set: Some(|d, _, v| {
            text(v).and_then(|t| crate::choices::KvCanary::parse(&t)).map(|x| d.shared.kv_canary = Some(x)).is_some()
        }),
        on: Sides::Both,
    },
    doc: "Adds KV regions; one-sided canaries shift the layout.",
};

/// `--kv-canary-real-data`: Real-KV canary checks.
pub static KV_CANARY_REAL_DATA: Flag = Flag {
    name: "--kv-canary-real-data",
    aliases: &[],
    dest: "kv_canary_real_data",
    kind: Kind::Str,
    choices: crate::choices::KvCanaryRealData::NAMES,
    default: Dflt::Str("none"),
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.kv_canary_real_data",
    bind: Binding {
        get: Some(|d, _| shown(d.shared.kv_canary_real_data.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::KvCanaryRealData::parse(&t))
                .map(|x| d.shared.kv_canary_real_data = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Real-KV canary checks.",
};

/// `--enable-unified-memory`: Whole-envelope KV path.
pub static ENABLE_UNIFIED_MEMORY: Flag = Flag {
    name: "--enable-unified-memory",
    aliases: &[],
    dest: "enable_unified_memory",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.enable_unified_memory",
    bind: Binding {
        get: Some(|d, _| switch(d.shared.enable_unified_memory)),
        set: Some(|d, _, v| on_off(v).map(|x| d.shared.enable_unified_memory = x).is_some()),
        on: Sides::Both,
    },
    doc: "Whole-envelope KV path.",
};

/// `--enable-page-major-kv-layout`: Changes the KV layout; nothing checks it outside unified memory.
pub static ENABLE_PAGE_MAJOR_KV_LAYOUT: Flag = Flag {
    name: "--enable-page-major-kv-layout",
    aliases: &[],
    dest: "enable_page_major_kv_layout",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::MustMatch,
    releases: since(Release::V0_5_19),
    field: "Shared.enable_page_major_kv_layout",
    bind: Binding {
        get: Some(|d, _| switch(d.shared.enable_page_major_kv_layout)),
        set: Some(|d, _, v| on_off(v).map(|x| d.shared.enable_page_major_kv_layout = x).is_some()),
        on: Sides::Both,
    },
    doc: "Changes the KV layout; nothing checks it outside unified memory.",
};

/// `--disaggregation-mode`: Rendered from the side: `prefill` or `decode`.
/// The plan writes it from the side.
pub static DISAGGREGATION_MODE: Flag = Flag {
    name: "--disaggregation-mode",
    aliases: &[],
    dest: "disaggregation_mode",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::Str("null"),
    relation: Relation::PerSide,
    releases: ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Rendered from the side: `prefill` or `decode`.",
};

/// `--host`: The prefill bootstrap server binds here; a remote decode cannot reach 127.0.0.1.
/// The plan writes it: the side's `bind_host`, else the node's own host.
pub static HOST: Flag = Flag {
    name: "--host",
    aliases: &[],
    dest: "host",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::Str("127.0.0.1"),
    relation: Relation::PerNode,
    releases: ALL,
    field: "Side.bind_host",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "The prefill bootstrap server binds here; a remote decode cannot reach 127.0.0.1.",
};

/// `--port`: HTTP port; the router is rendered from it.
/// The plan writes it: the instance's port or a default that keeps colocated instances apart.
pub static PORT: Flag = Flag {
    name: "--port",
    aliases: &[],
    dest: "port",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(30000),
    relation: Relation::PerInstance,
    releases: ALL,
    field: "Instance.port",
    bind: Binding {
        get: None,
        set: Some(|d, at, v| int(v).is_some_and(|x| instance_mut(d, at).map(|s| s.port = Some(x)).is_some())),
        on: Sides::Both,
    },
    doc: "HTTP port; the router is rendered from it.",
};

/// `--disaggregation-bootstrap-port`: Prefill binds it; the router and decode are rendered from the same value.
/// The plan writes it: the prefill's own (or default) port, the first prefill's on a decode.
pub static BOOTSTRAP_PORT: Flag = Flag {
    name: "--disaggregation-bootstrap-port",
    aliases: &[],
    dest: "disaggregation_bootstrap_port",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(8998),
    relation: Relation::Link,
    releases: ALL,
    field: "Instance.bootstrap_port",
    bind: Binding {
        get: None,
        set: Some(|d, at, v| int(v).is_some_and(|x| instance_mut(d, at).map(|s| s.bootstrap_port = Some(x)).is_some())),
        on: Sides::Both,
    },
    doc: "Prefill binds it; the router and decode are rendered from the same value.",
};

/// `--disaggregation-ib-device`: RDMA device(s) of the node.
pub static IB_DEVICE: Flag = Flag {
    name: "--disaggregation-ib-device",
    aliases: &[],
    dest: "disaggregation_ib_device",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerNode,
    releases: ALL,
    field: "Node.ib_device",
    bind: Binding {
        get: Some(|d, at| node(d, at).and_then(|s| shown(s.ib_device.as_ref()))),
        set: Some(|d, at, v| text(v).is_some_and(|x| node_mut(d, at).map(|s| s.ib_device = Some(x)).is_some())),
        on: Sides::Both,
    },
    doc: "RDMA device(s) of the node.",
};

/// `--dist-init-addr`: Multi-node rendezvous on node 0; SGLang uses the port and the next six.
/// The plan writes it, with `--nnodes` and `--node-rank`, for instances of several nodes: node 0's host and the instance's port.
pub static DIST_INIT_ADDR: Flag = Flag {
    name: "--dist-init-addr",
    aliases: &["--nccl-init-addr"],
    dest: "dist_init_addr",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerInstance,
    releases: ALL,
    field: "Instance.dist_init_port",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Multi-node rendezvous on node 0; SGLang uses the port and the next six.",
};

/// `--nnodes`: Rendered from the number of nodes of the instance.
/// The plan writes it beside `--dist-init-addr`.
pub static NNODES: Flag = Flag {
    name: "--nnodes",
    aliases: &[],
    dest: "nnodes",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::PerInstance,
    releases: ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Rendered from the number of nodes of the instance.",
};

/// `--node-rank`: Rendered from the node position.
/// The plan writes it beside `--dist-init-addr`.
pub static NODE_RANK: Flag = Flag {
    name: "--node-rank",
    aliases: &[],
    dest: "node_rank",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(0),
    relation: Relation::PerNode,
    releases: ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Rendered from the node position.",
};

/// `--base-gpu-id`: First GPU index on the node.
/// The plan writes it: the node's `base_gpu_id`, else after the GPUs of the processes before it on the host.
pub static BASE_GPU_ID: Flag = Flag {
    name: "--base-gpu-id",
    aliases: &[],
    dest: "base_gpu_id",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(0),
    relation: Relation::PerNode,
    releases: ALL,
    field: "Node.base_gpu_id",
    bind: Binding {
        get: None,
        set: Some(|d, at, v| int(v).is_some_and(|x| node_mut(d, at).map(|s| s.base_gpu_id = Some(x)).is_some())),
        on: Sides::Both,
    },
    doc: "First GPU index on the node.",
};

/// `--nccl-port`: Colocated servers need distinct values.
pub static NCCL_PORT: Flag = Flag {
    name: "--nccl-port",
    aliases: &[],
    dest: "nccl_port",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerInstance,
    releases: ALL,
    field: "Instance.nccl_port",
    bind: Binding {
        get: Some(|d, at| instance(d, at).and_then(|s| shown(s.nccl_port.as_ref()))),
        set: Some(|d, at, v| int(v).is_some_and(|x| instance_mut(d, at).map(|s| s.nccl_port = Some(x)).is_some())),
        on: Sides::Both,
    },
    doc: "Colocated servers need distinct values.",
};

/// `--tp-size`: Attention TP (tp / attn_dp / attn_cp) must divide across sides.
pub static TP_SIZE: Flag = Flag {
    name: "--tp-size",
    aliases: &["--tensor-parallel-size"],
    dest: "tp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::Related,
    releases: ALL,
    field: "Side.tp",
    bind: Binding {
        get: Some(|d, at| shown(Some(&d.side(at.role).tp))),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).tp = x).is_some()),
        on: Sides::Both,
    },
    doc: "Attention TP (tp / attn_dp / attn_cp) must divide across sides.",
};

/// `--dp-size`: Data-parallel replicas (before 0.5.23 also the DP-attention width).
/// The plan writes it with `--attn-dp-size`/`--enable-dp-attention`: the DP-attention spelling depends on the release.
pub static DP_SIZE: Flag = Flag {
    name: "--dp-size",
    aliases: &["--data-parallel-size"],
    dest: "dp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.dp",
    bind: Binding {
        get: None,
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).dp = x).is_some()),
        on: Sides::Both,
    },
    doc: "Data-parallel replicas (before 0.5.23 also the DP-attention width).",
};

/// `--attn-dp-size`: DP-attention width.
/// The plan writes it with `--dp-size`.
pub static ATTN_DP_SIZE: Flag = Flag {
    name: "--attn-dp-size",
    aliases: &["--attention-data-parallel-size"],
    dest: "attn_dp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::PerSide,
    releases: since(Release::V0_5_23),
    field: "Side.attn_dp",
    bind: Binding {
        get: None,
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).attn_dp = x).is_some()),
        on: Sides::Both,
    },
    doc: "DP-attention width.",
};

/// `--enable-dp-attention`: DP attention before 0.5.23 (`--dp-size N --enable-dp-attention`).
/// The plan writes it with `--dp-size`.
pub static ENABLE_DP_ATTENTION: Flag = Flag {
    name: "--enable-dp-attention",
    aliases: &[],
    dest: "enable_dp_attention",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.attn_dp",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "DP attention before 0.5.23 (`--dp-size N --enable-dp-attention`).",
};

/// `--pp-size`: Decode PP must equal the prefill PP or be 1.
pub static PP_SIZE: Flag = Flag {
    name: "--pp-size",
    aliases: &["--pipeline-parallel-size"],
    dest: "pp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::Related,
    releases: ALL,
    field: "Side.pp",
    bind: Binding {
        get: Some(|d, at| above_one(d.side(at.role).pp)),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).pp = x).is_some()),
        on: Sides::Both,
    },
    doc: "Decode PP must equal the prefill PP or be 1.",
};

/// `--ep-size`: Forced to tp when an all-to-all backend is set.
pub static EP_SIZE: Flag = Flag {
    name: "--ep-size",
    aliases: &["--expert-parallel-size", "--ep"],
    dest: "ep_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.ep",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).ep.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).ep = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Forced to tp when an all-to-all backend is set.",
};

/// `--moe-a2a-backend`: MoE all-to-all backend.
pub static MOE_A2A_BACKEND: Flag = Flag {
    name: "--moe-a2a-backend",
    aliases: &[],
    dest: "moe_a2a_backend",
    kind: Kind::Str,
    choices: crate::choices::MoeA2aBackend::NAMES,
    default: Dflt::Str("none"),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.moe_a2a_backend",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).moe_a2a_backend.as_ref())),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::MoeA2aBackend::parse(&t))
                .map(|x| d.side_mut(at.role).moe_a2a_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "MoE all-to-all backend.",
};

/// `--deepep-mode`: `normal` disables CUDA graphs: use it on prefill, not decode.
pub static DEEPEP_MODE: Flag = Flag {
    name: "--deepep-mode",
    aliases: &[],
    dest: "deepep_mode",
    kind: Kind::Str,
    choices: crate::choices::DeepepMode::NAMES,
    default: Dflt::Str("auto"),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.deepep_mode",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).deepep_mode.as_ref())),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::DeepepMode::parse(&t))
                .map(|x| d.side_mut(at.role).deepep_mode = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "`normal` disables CUDA graphs: use it on prefill, not decode.",
};

/// `--moe-dense-tp-size`: Must be 1 or tp.
pub static MOE_DENSE_TP_SIZE: Flag = Flag {
    name: "--moe-dense-tp-size",
    aliases: &[],
    dest: "moe_dense_tp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.moe_dense_tp",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).moe_dense_tp.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).moe_dense_tp = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Must be 1 or tp.",
};

/// `--enable-dp-lm-head`: Needs DP attention.
pub static ENABLE_DP_LM_HEAD: Flag = Flag {
    name: "--enable-dp-lm-head",
    aliases: &[],
    dest: "enable_dp_lm_head",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.enable_dp_lm_head",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).enable_dp_lm_head)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).enable_dp_lm_head = x).is_some()),
        on: Sides::Both,
    },
    doc: "Needs DP attention.",
};

/// `--attn-cp-size`: The decode must have attention CP 1.
pub static ATTN_CP_SIZE: Flag = Flag {
    name: "--attn-cp-size",
    aliases: &["--attention-context-parallel-size"],
    dest: "attn_cp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::PrefillOnly,
    releases: since(Release::V0_5_10),
    field: "Side.attn_cp",
    bind: Binding {
        get: Some(|d, at| above_one(d.side(at.role).attn_cp)),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).attn_cp = x).is_some()),
        on: Sides::Both,
    },
    doc: "The decode must have attention CP 1.",
};

/// `--enable-prefill-cp`: Rejected on decode.
pub static ENABLE_PREFILL_CP: Flag = Flag {
    name: "--enable-prefill-cp",
    aliases: &[],
    dest: "enable_prefill_cp",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PrefillOnly,
    releases: since(Release::V0_5_19),
    field: "Side.enable_prefill_cp",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).enable_prefill_cp)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).enable_prefill_cp = x).is_some()),
        on: Sides::Both,
    },
    doc: "Rejected on decode.",
};

/// `--dcp-size`: Equal on both sides, or prefill 1 with decode >1 for MLA.
pub static DCP_SIZE: Flag = Flag {
    name: "--dcp-size",
    aliases: &["--decode-context-parallel-size"],
    dest: "dcp_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::Related,
    releases: since(Release::V0_5_19),
    field: "Side.dcp",
    bind: Binding {
        get: Some(|d, at| above_one(d.side(at.role).dcp)),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).dcp = x).is_some()),
        on: Sides::Both,
    },
    doc: "Equal on both sides, or prefill 1 with decode >1 for MLA.",
};

/// `--mem-fraction-static`: Memory for weights and KV.
pub static MEM_FRACTION_STATIC: Flag = Flag {
    name: "--mem-fraction-static",
    aliases: &[],
    dest: "mem_fraction_static",
    kind: Kind::Float,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.mem_fraction_static",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).mem_fraction_static.as_ref())),
        set: Some(|d, at, v| float(v).map(|x| d.side_mut(at.role).mem_fraction_static = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Memory for weights and KV.",
};

/// `--max-running-requests`: Concurrent requests.
pub static MAX_RUNNING_REQUESTS: Flag = Flag {
    name: "--max-running-requests",
    aliases: &[],
    dest: "max_running_requests",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.max_running_requests",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).max_running_requests.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).max_running_requests = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Concurrent requests.",
};

/// `--chunked-prefill-size`: Must be a multiple of the page size (per DP rank).
pub static CHUNKED_PREFILL_SIZE: Flag = Flag {
    name: "--chunked-prefill-size",
    aliases: &[],
    dest: "chunked_prefill_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PrefillOnly,
    releases: ALL,
    field: "Side.chunked_prefill_size",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).chunked_prefill_size.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).chunked_prefill_size = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Must be a multiple of the page size (per DP rank).",
};

/// `--max-prefill-tokens`: Prefill batch budget.
pub static MAX_PREFILL_TOKENS: Flag = Flag {
    name: "--max-prefill-tokens",
    aliases: &[],
    dest: "max_prefill_tokens",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(16384),
    relation: Relation::PrefillOnly,
    releases: ALL,
    field: "Side.max_prefill_tokens",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).max_prefill_tokens.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).max_prefill_tokens = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Prefill batch budget.",
};

/// `--cuda-graph-max-bs-decode`: Largest decode batch in a CUDA graph.
pub static CUDA_GRAPH_MAX_BS_DECODE: Flag = Flag {
    name: "--cuda-graph-max-bs-decode",
    aliases: &[],
    dest: "cuda_graph_max_bs_decode",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_19),
    field: "Side.cuda_graph_max_bs",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).cuda_graph_max_bs.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).cuda_graph_max_bs = Some(x)).is_some()),
        on: Sides::Decode,
    },
    doc: "Largest decode batch in a CUDA graph.",
};

/// `--cuda-graph-max-bs-prefill`: Largest prefill batch in a CUDA graph.
pub static CUDA_GRAPH_MAX_BS_PREFILL: Flag = Flag {
    name: "--cuda-graph-max-bs-prefill",
    aliases: &[],
    dest: "cuda_graph_max_bs_prefill",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PrefillOnly,
    releases: since(Release::V0_5_19),
    field: "Side.cuda_graph_max_bs",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).cuda_graph_max_bs.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).cuda_graph_max_bs = Some(x)).is_some()),
        on: Sides::Prefill,
    },
    doc: "Largest prefill batch in a CUDA graph.",
};

/// `--cuda-graph-max-bs`: Spelling before 0.5.19 (deprecated alias in 0.5.19).
pub static CUDA_GRAPH_MAX_BS: Flag = Flag {
    name: "--cuda-graph-max-bs",
    aliases: &[],
    dest: "cuda_graph_max_bs_decode",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::DecodeOnly,
    releases: until(Release::V0_5_19),
    field: "Side.cuda_graph_max_bs",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).cuda_graph_max_bs.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).cuda_graph_max_bs = Some(x)).is_some()),
        on: Sides::Decode,
    },
    doc: "Spelling before 0.5.19 (deprecated alias in 0.5.19).",
};

/// `--disable-decode-cuda-graph`: No decode CUDA graphs.
pub static DISABLE_DECODE_CUDA_GRAPH: Flag = Flag {
    name: "--disable-decode-cuda-graph",
    aliases: &[],
    dest: "disable_decode_cuda_graph",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_19),
    field: "Side.disable_cuda_graph",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).disable_cuda_graph)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).disable_cuda_graph = x).is_some()),
        on: Sides::Decode,
    },
    doc: "No decode CUDA graphs.",
};

/// `--disable-prefill-cuda-graph`: No prefill CUDA graphs.
pub static DISABLE_PREFILL_CUDA_GRAPH: Flag = Flag {
    name: "--disable-prefill-cuda-graph",
    aliases: &[],
    dest: "disable_prefill_cuda_graph",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PrefillOnly,
    releases: since(Release::V0_5_19),
    field: "Side.disable_cuda_graph",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).disable_cuda_graph)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).disable_cuda_graph = x).is_some()),
        on: Sides::Prefill,
    },
    doc: "No prefill CUDA graphs.",
};

/// `--disable-cuda-graph`: Spelling before 0.5.19.
pub static DISABLE_CUDA_GRAPH: Flag = Flag {
    name: "--disable-cuda-graph",
    aliases: &[],
    dest: "disable_cuda_graph",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.disable_cuda_graph",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).disable_cuda_graph)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).disable_cuda_graph = x).is_some()),
        on: Sides::Both,
    },
    doc: "Spelling before 0.5.19.",
};

/// `--load-balance-method`: `auto` is follow_bootstrap_room on prefill, round_robin on decode.
pub static LOAD_BALANCE_METHOD: Flag = Flag {
    name: "--load-balance-method",
    aliases: &[],
    dest: "load_balance_method",
    kind: Kind::Str,
    choices: crate::choices::LoadBalanceMethod::NAMES,
    default: Dflt::Str("auto"),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.load_balance_method",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).load_balance_method.as_ref())),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::LoadBalanceMethod::parse(&t))
                .map(|x| d.side_mut(at.role).load_balance_method = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "`auto` is follow_bootstrap_room on prefill, round_robin on decode.",
};

/// `--enable-hierarchical-cache`: On decode it needs the decode radix cache.
pub static ENABLE_HIERARCHICAL_CACHE: Flag = Flag {
    name: "--enable-hierarchical-cache",
    aliases: &["--enable-hicache"],
    dest: "enable_hierarchical_cache",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.hicache",
    bind: Binding {
        get: Some(|d, at| {
            switch(
                d.side(at.role).hicache.is_some()
                    && (!d.side(at.role).decode_offload_kvcache || at.role == Role::Prefill),
            )
        }),
        set: Some(|d, at, _| {
            hicache_mut(d, at);
            true
        }),
        on: Sides::Both,
    },
    doc: "On decode it needs the decode radix cache.",
};

/// `--hicache-ratio`: Host/device cache ratio.
pub static HICACHE_RATIO: Flag = Flag {
    name: "--hicache-ratio",
    aliases: &[],
    dest: "hicache_ratio",
    kind: Kind::Float,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: ALL,
    field: "HiCache.ratio",
    bind: Binding {
        get: Some(|d, at| d.side(at.role).hicache.as_ref().and_then(|s| shown(s.ratio.as_ref()))),
        set: Some(|d, at, v| float(v).map(|x| hicache_mut(d, at).ratio = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Host/device cache ratio.",
};

/// `--hicache-size`: Host cache size (GB).
pub static HICACHE_SIZE: Flag = Flag {
    name: "--hicache-size",
    aliases: &[],
    dest: "hicache_size",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(0),
    relation: Relation::PerSide,
    releases: ALL,
    field: "HiCache.size",
    bind: Binding {
        get: Some(|d, at| d.side(at.role).hicache.as_ref().and_then(|s| shown(s.size.as_ref()))),
        set: Some(|d, at, v| int(v).map(|x| hicache_mut(d, at).size = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Host cache size (GB).",
};

/// `--hicache-storage-backend`: Storage tier; decode offload needs one.
pub static HICACHE_STORAGE_BACKEND: Flag = Flag {
    name: "--hicache-storage-backend",
    aliases: &[],
    dest: "hicache_storage_backend",
    kind: Kind::Str,
    choices: crate::choices::HicacheStorageBackend::NAMES,
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: ALL,
    field: "HiCache.storage_backend",
    bind: Binding {
        get: Some(|d, at| d.side(at.role).hicache.as_ref().and_then(|s| shown(s.storage_backend.as_ref()))),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::HicacheStorageBackend::parse(&t))
                .map(|x| hicache_mut(d, at).storage_backend = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Storage tier; decode offload needs one.",
};

/// `--hicache-write-policy`: Write policy.
pub static HICACHE_WRITE_POLICY: Flag = Flag {
    name: "--hicache-write-policy",
    aliases: &[],
    dest: "hicache_write_policy",
    kind: Kind::Str,
    choices: crate::choices::HicacheWritePolicy::NAMES,
    default: Dflt::Str("write_through"),
    relation: Relation::PerSide,
    releases: ALL,
    field: "HiCache.write_policy",
    bind: Binding {
        get: Some(|d, at| d.side(at.role).hicache.as_ref().and_then(|s| shown(s.write_policy.as_ref()))),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::HicacheWritePolicy::parse(&t))
                .map(|x| hicache_mut(d, at).write_policy = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Write policy.",
};

/// `--disaggregation-decode-enable-radix-cache`: Radix cache on decode.
pub static DECODE_RADIX_CACHE: Flag = Flag {
    name: "--disaggregation-decode-enable-radix-cache",
    aliases: &[],
    dest: "disaggregation_decode_enable_radix_cache",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_19),
    field: "Side.decode_radix_cache",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).decode_radix_cache)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).decode_radix_cache = x).is_some()),
        on: Sides::Both,
    },
    doc: "Radix cache on decode.",
};

/// `--disaggregation-decode-enable-offload-kvcache`: Needs `--hicache-storage-backend`.
pub static DECODE_OFFLOAD_KVCACHE: Flag = Flag {
    name: "--disaggregation-decode-enable-offload-kvcache",
    aliases: &[],
    dest: "disaggregation_decode_enable_offload_kvcache",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_3),
    field: "Side.decode_offload_kvcache",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).decode_offload_kvcache)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).decode_offload_kvcache = x).is_some()),
        on: Sides::Both,
    },
    doc: "Needs `--hicache-storage-backend`.",
};

/// `--disaggregation-decode-retraction-backup`: Retracted KV backup.
pub static DECODE_RETRACTION_BACKUP: Flag = Flag {
    name: "--disaggregation-decode-retraction-backup",
    aliases: &[],
    dest: "disaggregation_decode_retraction_backup",
    kind: Kind::Str,
    choices: crate::choices::RetractionBackup::NAMES,
    default: Dflt::None,
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_19),
    field: "Side.decode_retraction_backup",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).decode_retraction_backup.as_ref())),
        set: Some(|d, at, v| {
            text(v)
                .and_then(|t| crate::choices::RetractionBackup::parse(&t))
                .map(|x| d.side_mut(at.role).decode_retraction_backup = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Retracted KV backup.",
};

/// `--num-reserved-decode-tokens`: Reserved tokens per decode request.
pub static NUM_RESERVED_DECODE_TOKENS: Flag = Flag {
    name: "--num-reserved-decode-tokens",
    aliases: &[],
    dest: "num_reserved_decode_tokens",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(512),
    relation: Relation::DecodeOnly,
    releases: ALL,
    field: "Side.num_reserved_decode_tokens",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).num_reserved_decode_tokens.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).num_reserved_decode_tokens = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Reserved tokens per decode request.",
};

/// `--disaggregation-decode-polling-interval`: how often the decode polls arriving KV.
pub static DECODE_POLLING_INTERVAL: Flag = Flag {
    name: "--disaggregation-decode-polling-interval",
    aliases: &[],
    dest: "disaggregation_decode_polling_interval",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(1),
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_3),
    field: "Side.decode_polling_interval",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).decode_polling_interval.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).decode_polling_interval = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Scheduler iterations between the decode's polls of requests whose KV is arriving.",
};

/// `--disaggregation-decode-extra-slots`: Extra pre-allocation slots.
pub static DECODE_EXTRA_SLOTS: Flag = Flag {
    name: "--disaggregation-decode-extra-slots",
    aliases: &[],
    dest: "disaggregation_decode_extra_slots",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::None,
    relation: Relation::DecodeOnly,
    releases: since(Release::V0_5_19),
    field: "Side.decode_extra_slots",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).decode_extra_slots.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).decode_extra_slots = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Extra pre-allocation slots.",
};

/// `--optimistic-prefill-attempts`: Optimistic prefill.
pub static OPTIMISTIC_PREFILL_ATTEMPTS: Flag = Flag {
    name: "--optimistic-prefill-attempts",
    aliases: &[],
    dest: "optimistic_prefill_attempts",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(0),
    relation: Relation::PrefillOnly,
    releases: since(Release::V0_5_19),
    field: "Side.optimistic_prefill_attempts",
    bind: Binding {
        get: Some(|d, at| shown(d.side(at.role).optimistic_prefill_attempts.as_ref())),
        set: Some(|d, at, v| int(v).map(|x| d.side_mut(at.role).optimistic_prefill_attempts = Some(x)).is_some()),
        on: Sides::Both,
    },
    doc: "Optimistic prefill.",
};

/// `--enable-metrics`: Prometheus metrics.
pub static ENABLE_METRICS: Flag = Flag {
    name: "--enable-metrics",
    aliases: &[],
    dest: "enable_metrics",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::PerSide,
    releases: ALL,
    field: "Side.enable_metrics",
    bind: Binding {
        get: Some(|d, at| switch(d.side(at.role).enable_metrics)),
        set: Some(|d, at, v| on_off(v).map(|x| d.side_mut(at.role).enable_metrics = x).is_some()),
        on: Sides::Both,
    },
    doc: "Prometheus metrics.",
};

/// `--config`: YAML file of server flags (sglang-config output); must be followed by its path as a separate token.
/// Written by the `sglang-config` format, not from a field.
pub static CONFIG: Flag = Flag {
    name: "--config",
    aliases: &[],
    dest: "config",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::PerSide,
    releases: since(Release::V0_5_3),
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "YAML file of server flags (sglang-config output); must be followed by its path as a separate token.",
};

/// Every server flag pdlaunch models, in rendering order: the plan writes each server's argv by
/// walking this list. A field that several spellings carry renders once, where its first
/// spelling for the server's side stands, through the first of them the release accepts.
pub static SERVER_FLAGS: &[&Flag] = &[
    &MODEL_PATH,
    &TOKENIZER_PATH,
    &TOKENIZER_MODE,
    &REVISION,
    &TRUST_REMOTE_CODE,
    &DTYPE,
    &QUANTIZATION,
    &CONTEXT_LENGTH,
    &SERVED_MODEL_NAME,
    &CHAT_TEMPLATE,
    &DISAGGREGATION_MODE,
    &TRANSFER_BACKEND,
    &BOOTSTRAP_PORT,
    &IB_DEVICE,
    &HOST,
    &PORT,
    &DIST_INIT_ADDR,
    &NNODES,
    &NODE_RANK,
    &BASE_GPU_ID,
    &NCCL_PORT,
    &TP_SIZE,
    &DP_SIZE,
    &ATTN_DP_SIZE,
    &ENABLE_DP_ATTENTION,
    &PP_SIZE,
    &EP_SIZE,
    &ATTN_CP_SIZE,
    &ENABLE_PREFILL_CP,
    &DCP_SIZE,
    &MOE_A2A_BACKEND,
    &DEEPEP_MODE,
    &MOE_DENSE_TP_SIZE,
    &ENABLE_DP_LM_HEAD,
    &PAGE_SIZE,
    &KV_CACHE_DTYPE,
    &ATTENTION_BACKEND,
    &PREFILL_ATTENTION_BACKEND,
    &DECODE_ATTENTION_BACKEND,
    &DSA_PREFILL_BACKEND,
    &DSA_DECODE_BACKEND,
    &NSA_PREFILL_BACKEND,
    &NSA_DECODE_BACKEND,
    &SPECULATIVE_ALGORITHM,
    &SPECULATIVE_DRAFT_MODEL_PATH,
    &SPECULATIVE_NUM_STEPS,
    &SPECULATIVE_EAGLE_TOPK,
    &SPECULATIVE_NUM_DRAFT_TOKENS,
    &SPECULATIVE_DRAFT_KV_CACHE_DTYPE,
    &SPECULATIVE_DRAFT_ATTENTION_BACKEND,
    &KV_CANARY,
    &KV_CANARY_REAL_DATA,
    &ENABLE_UNIFIED_MEMORY,
    &ENABLE_PAGE_MAJOR_KV_LAYOUT,
    &MEM_FRACTION_STATIC,
    &MAX_RUNNING_REQUESTS,
    &CHUNKED_PREFILL_SIZE,
    &MAX_PREFILL_TOKENS,
    &CUDA_GRAPH_MAX_BS_DECODE,
    &CUDA_GRAPH_MAX_BS_PREFILL,
    &CUDA_GRAPH_MAX_BS,
    &DISABLE_DECODE_CUDA_GRAPH,
    &DISABLE_PREFILL_CUDA_GRAPH,
    &DISABLE_CUDA_GRAPH,
    &LOAD_BALANCE_METHOD,
    &ENABLE_HIERARCHICAL_CACHE,
    &HICACHE_RATIO,
    &HICACHE_SIZE,
    &HICACHE_STORAGE_BACKEND,
    &HICACHE_WRITE_POLICY,
    &DECODE_RADIX_CACHE,
    &DECODE_OFFLOAD_KVCACHE,
    &DECODE_RETRACTION_BACKUP,
    &NUM_RESERVED_DECODE_TOKENS,
    &DECODE_EXTRA_SLOTS,
    &DECODE_POLLING_INTERVAL,
    &OPTIMISTIC_PREFILL_ATTEMPTS,
    &ENABLE_METRICS,
    &CONFIG,
];

/// `--pd-disaggregation`: PD mode; always rendered.
pub static R_PD_DISAGGREGATION: Flag = Flag {
    name: "--pd-disaggregation",
    aliases: &[],
    dest: "pd_disaggregation",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "PD mode; always rendered.",
};

/// `--prefill`: One per prefill instance: URL and bootstrap port, both rendered from the prefill side.
pub static R_PREFILL: Flag = Flag {
    name: "--prefill",
    aliases: &[],
    dest: "prefill",
    kind: Kind::Append,
    choices: &[],
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "One per prefill instance: URL and bootstrap port, both rendered from the prefill side.",
};

/// `--decode`: One per decode instance: URL rendered from the decode side.
pub static R_DECODE: Flag = Flag {
    name: "--decode",
    aliases: &[],
    dest: "decode",
    kind: Kind::Append,
    choices: &[],
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "One per decode instance: URL rendered from the decode side.",
};

/// `--host`: Router listen address.
pub static R_HOST: Flag = Flag {
    name: "--host",
    aliases: &[],
    dest: "host",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::Str("0.0.0.0"),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "Router.host",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.router.host))),
        set: Some(|d, _, v| text(v).map(|x| d.router.host = x).is_some()),
        on: Sides::Both,
    },
    doc: "Router listen address.",
};

/// `--port`: Router port; its default (30000) collides with SGLang servers.
pub static R_PORT: Flag = Flag {
    name: "--port",
    aliases: &[],
    dest: "port",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(30000),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "Router.port",
    bind: Binding {
        get: Some(|d, _| shown(Some(&d.router.port))),
        set: Some(|d, _, v| int(v).map(|x| d.router.port = x).is_some()),
        on: Sides::Both,
    },
    doc: "Router port; its default (30000) collides with SGLang servers.",
};

/// `--policy`: Policy for both pools.
pub static R_POLICY: Flag = Flag {
    name: "--policy",
    aliases: &[],
    dest: "policy",
    kind: Kind::Str,
    choices: crate::choices::RouterPolicy::NAMES,
    default: Dflt::Str("cache_aware"),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "Router.policy",
    bind: Binding {
        get: Some(|d, _| shown(d.router.policy.as_ref())),
        set: Some(|d, _, v| {
            text(v).and_then(|t| crate::choices::RouterPolicy::parse(&t)).map(|x| d.router.policy = Some(x)).is_some()
        }),
        on: Sides::Both,
    },
    doc: "Policy for both pools.",
};

/// `--prefill-policy`: Prefill policy.
pub static R_PREFILL_POLICY: Flag = Flag {
    name: "--prefill-policy",
    aliases: &[],
    dest: "prefill_policy",
    kind: Kind::Str,
    choices: crate::choices::RouterPolicy::NAMES,
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "Router.prefill_policy",
    bind: Binding {
        get: Some(|d, _| shown(d.router.prefill_policy.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::RouterPolicy::parse(&t))
                .map(|x| d.router.prefill_policy = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Prefill policy.",
};

/// `--decode-policy`: Decode policy.
pub static R_DECODE_POLICY: Flag = Flag {
    name: "--decode-policy",
    aliases: &[],
    dest: "decode_policy",
    kind: Kind::Str,
    choices: crate::choices::RouterPolicy::NAMES,
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "Router.decode_policy",
    bind: Binding {
        get: Some(|d, _| shown(d.router.decode_policy.as_ref())),
        set: Some(|d, _, v| {
            text(v)
                .and_then(|t| crate::choices::RouterPolicy::parse(&t))
                .map(|x| d.router.decode_policy = Some(x))
                .is_some()
        }),
        on: Sides::Both,
    },
    doc: "Decode policy.",
};

/// `--mini-lb`: Python mini load balancer (debugging only).
pub static R_MINI_LB: Flag = Flag {
    name: "--mini-lb",
    aliases: &[],
    dest: "mini_lb",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::Router,
    releases: router_since(RouterRelease::V0_2_1),
    field: "Router.mini_lb",
    bind: Binding {
        get: Some(|d, _| switch(d.router.mini_lb)),
        set: Some(|d, _, v| on_off(v).map(|x| d.router.mini_lb = x).is_some()),
        on: Sides::Both,
    },
    doc: "Python mini load balancer (debugging only).",
};

/// `--service-discovery`: the `kubernetes` format's router with `kubernetes.service_discovery`.
pub static R_SERVICE_DISCOVERY: Flag = Flag {
    name: "--service-discovery",
    aliases: &[],
    dest: "service_discovery",
    kind: Kind::Switch,
    choices: &[],
    default: Dflt::Switch(false),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Find the servers by their pods' labels instead of a fixed list (Kubernetes only).",
};

/// `--prefill-selector`: the labels of the prefill leader pods.
pub static R_PREFILL_SELECTOR: Flag = Flag {
    name: "--prefill-selector",
    aliases: &[],
    dest: "prefill_selector",
    kind: Kind::List,
    choices: &[],
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Labels (`key=value`) of the prefill pods service discovery registers.",
};

/// `--decode-selector`: the labels of the decode leader pods.
pub static R_DECODE_SELECTOR: Flag = Flag {
    name: "--decode-selector",
    aliases: &[],
    dest: "decode_selector",
    kind: Kind::List,
    choices: &[],
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "Labels (`key=value`) of the decode pods service discovery registers.",
};

/// `--service-discovery-port`: the HTTP port of every discovered pod.
pub static R_SERVICE_DISCOVERY_PORT: Flag = Flag {
    name: "--service-discovery-port",
    aliases: &[],
    dest: "service_discovery_port",
    kind: Kind::Int,
    choices: &[],
    default: Dflt::Int(80),
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "The HTTP port the router reaches every discovered pod at.",
};

/// `--service-discovery-namespace`: where the router watches pods.
pub static R_SERVICE_DISCOVERY_NAMESPACE: Flag = Flag {
    name: "--service-discovery-namespace",
    aliases: &[],
    dest: "service_discovery_namespace",
    kind: Kind::Str,
    choices: &[],
    default: Dflt::None,
    relation: Relation::Router,
    releases: ROUTER_ALL,
    field: "",
    bind: Binding { get: None, set: None, on: Sides::Both },
    doc: "The namespace whose pods the router watches.",
};

/// Every router flag pdlaunch models.
pub static ROUTER_FLAGS: &[&Flag] = &[
    &R_PD_DISAGGREGATION,
    &R_PREFILL,
    &R_DECODE,
    &R_HOST,
    &R_PORT,
    &R_POLICY,
    &R_PREFILL_POLICY,
    &R_DECODE_POLICY,
    &R_MINI_LB,
    &R_SERVICE_DISCOVERY,
    &R_PREFILL_SELECTOR,
    &R_DECODE_SELECTOR,
    &R_SERVICE_DISCOVERY_PORT,
    &R_SERVICE_DISCOVERY_NAMESPACE,
];

/// The deployment path of a schema field (`Definition.property`, as in [`Flag::field`]) on one
/// side's instance and node; `None` for an unknown definition.
pub fn field_path(field: &str, side: &str, instance: usize, node: usize) -> Option<String> {
    let (def, prop) = field.split_once('.')?;
    Some(match def {
        "Model" => format!("model.{prop}"),
        "Shared" => format!("shared.{prop}"),
        "Speculative" => format!("shared.speculative.{prop}"),
        "Side" => format!("{side}.{prop}"),
        "HiCache" => format!("{side}.hicache.{prop}"),
        "Instance" => format!("{side}.instances[{instance}].{prop}"),
        "Node" => format!("{side}.instances[{instance}].nodes[{node}].{prop}"),
        "Router" => format!("router.{prop}"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{json_to_arg, Spec};

    fn check_against(flag: &Flag, spec: &Spec, present: bool, label: &str, latest: bool, errors: &mut Vec<String>) {
        let found = spec.get(flag.name);
        if found.is_some() != present {
            errors.push(format!("{}: table says present={present} in {label}, spec disagrees", flag.name));
            return;
        }
        let Some(sf) = found else { return };
        if !latest {
            return;
        }
        let spec_aliases: Vec<&str> = sf.flags.iter().map(String::as_str).filter(|s| *s != flag.name).collect();
        if spec_aliases != flag.aliases {
            errors.push(format!("{}: aliases {:?} != spec {:?}", flag.name, flag.aliases, spec_aliases));
        }
        if sf.dest != flag.dest {
            errors.push(format!("{}: dest {} != spec {}", flag.name, flag.dest, sf.dest));
        }
        let default_ok = match (&flag.default, &sf.default) {
            (Dflt::None, serde_json::Value::Null) => true,
            (Dflt::None, serde_json::Value::String(s)) => s == "==SUPPRESS==",
            // The router's selectors default to an empty mapping: no labels.
            (Dflt::None, serde_json::Value::Object(m)) => m.is_empty(),
            (Dflt::Switch(b), serde_json::Value::Bool(s)) => b == s,
            (Dflt::Int(i), v) => v.as_i64() == Some(*i),
            (Dflt::Float(x), v) => v.as_f64() == Some(*x),
            (Dflt::Str(s), v) => json_to_arg(v) == *s,
            _ => false,
        };
        if !default_ok {
            errors.push(format!("{}: default {:?} != spec {}", flag.name, flag.default, sf.default));
        }
        let kind_ok = match flag.kind {
            Kind::Switch => sf.arity() == crate::spec::Arity::Zero,
            Kind::Int => matches!(sf.ty.as_deref(), Some("int" | "human_readable_int")),
            Kind::Float => sf.ty.as_deref() == Some("float"),
            Kind::Str => sf.arity() == crate::spec::Arity::One,
            Kind::List => matches!(sf.arity(), crate::spec::Arity::OneOrMore | crate::spec::Arity::ZeroOrMore),
            Kind::Append => sf.action.contains("Append"),
        };
        if !kind_ok {
            errors.push(format!("{}: kind {:?} disagrees with spec {} / {:?}", flag.name, flag.kind, sf.action, sf.ty));
        }
    }

    /// The table agrees with SGLang's specs: presence in every release; aliases, dest, kind and
    /// default in the newest release that has the flag.
    #[test]
    fn flag_table_agrees_with_specs() {
        let mut errors = Vec::new();
        for flag in SERVER_FLAGS {
            let newest = Release::ALL.iter().rev().find(|r| flag.in_release(**r)).copied();
            assert!(newest.is_some(), "{} exists in no release", flag.name);
            for r in Release::ALL {
                check_against(flag, r.spec(), flag.in_release(r), r.as_str(), Some(r) == newest, &mut errors);
            }
        }
        for flag in ROUTER_FLAGS {
            let newest = RouterRelease::ALL.iter().rev().find(|r| flag.in_router_release(**r)).copied();
            for r in RouterRelease::ALL {
                check_against(flag, r.spec(), flag.in_router_release(r), r.as_str(), Some(r) == newest, &mut errors);
            }
        }
        assert!(errors.is_empty(), "flag table drifted from the specs:\n{}", errors.join("\n"));
    }

    /// Every choice in the table is accepted by some release of some flag that shares its choice
    /// enum (an enum is the union over releases and spellings).
    #[test]
    fn every_choice_exists_in_some_release() {
        let accepted = |names: &[&str], choice: &str| {
            let server = SERVER_FLAGS.iter().filter(|f| std::ptr::eq(f.choices, names)).any(|f| {
                Release::ALL.iter().filter(|r| f.in_release(**r)).any(|r| {
                    r.spec().get(f.name).and_then(|x| x.choice_strings()).is_some_and(|c| c.iter().any(|x| x == choice))
                })
            });
            let router = ROUTER_FLAGS.iter().filter(|f| std::ptr::eq(f.choices, names)).any(|f| {
                RouterRelease::ALL.iter().any(|r| {
                    r.spec().get(f.name).and_then(|x| x.choice_strings()).is_some_and(|c| c.iter().any(|x| x == choice))
                })
            });
            server || router
        };
        for flag in SERVER_FLAGS.iter().chain(ROUTER_FLAGS.iter()) {
            for choice in flag.choices {
                // The router's `--policy` list is the union of the Python launcher's and the
                // gateway's; the per-release check happens when a deployment is validated.
                if flag.relation == Relation::Router && ["consistent_hashing", "prefix_hash"].contains(choice) {
                    continue;
                }
                assert!(accepted(flag.choices, choice), "{}: choice `{choice}` exists in no release", flag.name);
            }
        }
    }

    /// The leaf paths where two JSON documents differ, written as deployment paths.
    fn differences(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    let null = Value::Null;
                    differences(x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), &p, out);
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    differences(u, v, &format!("{path}[{i}]"), out);
                }
            }
            _ if a != b => out.push(path.to_owned()),
            _ => {}
        }
    }

    /// Each binding reaches the field its flag names: storing a value changes that field and no
    /// other (the deployment's JSON differs at [`Flag::path`] only), and the value renders back
    /// as it was read. So the field's spelling in `field`, the paths of findings and origins,
    /// and the accessors cannot drift apart.
    #[test]
    fn bindings_touch_their_field() {
        let mut base = crate::examples::example("deepseek-v3-dp-deepep").unwrap();
        let empty = crate::deployment::HiCache { ratio: None, size: None, storage_backend: None, write_policy: None };
        base.shared.speculative = None;
        set_algorithm(&mut base, "EAGLE".into());
        for role in Role::BOTH {
            base.side_mut(role).hicache = Some(empty.clone());
        }
        let mut checked = 0;
        for flag in SERVER_FLAGS.iter().chain(ROUTER_FLAGS.iter()) {
            if flag.bind.get.is_some() || flag.bind.set.is_some() {
                assert!(!flag.field.is_empty(), "{} is bound to no field", flag.name);
            }
            let Some(set) = flag.bind.set else { continue };
            let role = if flag.bind.on.has(Role::Decode) { Role::Decode } else { Role::Prefill };
            let at = At { role, instance: 0, node: 1 };
            let mut d = base.clone();
            if flag.name == "--enable-hierarchical-cache" {
                d.side_mut(role).hicache = None;
            }
            let (before, current) = (crate::load::to_value(&d), flag.bind.get.and_then(|get| get(&d, at)));
            let value = match flag.kind {
                Kind::Switch => Written::Switch(current.is_none()),
                Kind::Int => Written::Text("7".into()),
                Kind::Float => Written::Text("0.37".into()),
                _ => Written::Text(
                    flag.choices
                        .iter()
                        .find(|c| current != Some(Written::Text((**c).into())))
                        .map_or("sample".into(), |c| (*c).to_owned()),
                ),
            };
            assert!(set(&mut d, at, &value), "{}: {value:?} not stored", flag.name);
            let mut changed = Vec::new();
            differences(&before, &crate::load::to_value(&d), "", &mut changed);
            assert_eq!(changed, flag.path(at).into_iter().collect::<Vec<_>>(), "{}", flag.name);
            if let Some(get) = flag.bind.get.filter(|_| flag.kind != Kind::Switch) {
                assert_eq!(get(&d, at), Some(value), "{}", flag.name);
            }
            checked += 1;
        }
        assert!(checked > 60, "only {checked} bindings checked");
    }

    #[test]
    fn spellings_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in SERVER_FLAGS {
            for s in f.spellings() {
                assert!(seen.insert(s), "{s} declared twice");
            }
        }
    }

    #[test]
    fn removed_flags_are_gone_from_the_latest_release() {
        for r in REMOVED_FLAGS {
            assert!(Release::LATEST.spec().get(r.name).is_none(), "{} still exists", r.name);
        }
    }
}
