//! The deployment's `kubernetes` section, read and checked: Kubernetes' own name rules, taints
//! written as `kubectl taint` writes them, and Secret references. The renderer writes what this
//! reads; the linter writes manifests' pod settings back in the same words.

use super::RenderError;
use crate::deployment::{Kubernetes, Role};

/// Where the server pods' Hugging Face cache is mounted (the images run as root and set no
/// `HF_HOME`).
pub const MODEL_CACHE_MOUNT: &str = "/root/.cache/huggingface";

/// The taint effects a toleration may name.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// The `kubernetes` section, checked.
#[derive(Debug, Default)]
pub struct Cluster {
    pub namespace: Option<String>,
    /// Each side's node labels and tolerated taints, the shared ones merged in (by `Role`).
    pub placement: [Placement; 2],
    /// (variable, Secret, key)
    pub secret_env: Vec<(String, String, String)>,
    pub model_cache: Option<Volume>,
    pub image_pull_secrets: Vec<String>,
    pub router_replicas: u32,
    pub exclusive_topology: Option<String>,
    pub labels: Vec<(String, String)>,
    pub pod_annotations: Vec<(String, String)>,
}

/// Whether a label or annotation key is one pdlaunch, LeaderWorkerSet or RoleBasedGroup writes
/// itself: the router's selectors and the linter read those.
pub fn is_reserved(key: &str) -> bool {
    key.starts_with("app.kubernetes.io/")
        || key.starts_with("leaderworkerset.sigs.k8s.io/")
        || key.starts_with("rbg.workloads.x-k8s.io/")
        || key.starts_with("sglang.ai/")
}

/// The nodes one side's pods run on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub node_selector: Vec<(String, String)>,
    pub tolerations: Vec<Toleration>,
}

/// A volume of the pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Volume {
    /// A PersistentVolumeClaim, by name.
    Claim(String),
    /// A path on the node.
    Host(String),
}

/// A taint the pods tolerate: a key, a value (any when `None`) and an effect (any when `None`).
/// Ordered by key, value and effect: the pods list them in that order, wherever they were
/// written (Kubernetes reads them as a set).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Toleration {
    pub key: String,
    pub value: Option<String>,
    pub effect: Option<String>,
}

impl Toleration {
    /// Reads `key=value:Effect`, `key:Effect`, `key=value` or `key`.
    pub fn parse(text: &str) -> Option<Toleration> {
        let (rest, effect) = match text.rsplit_once(':') {
            Some((rest, effect)) => (rest, Some(EFFECTS.iter().find(|e| **e == effect)?.to_string())),
            None => (text, None),
        };
        let (key, value) = match rest.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (rest, None),
        };
        let ok = is_label_key(key) && value.is_none_or(is_label_value);
        ok.then(|| Toleration { key: key.to_owned(), value: value.map(str::to_owned), effect })
    }

    /// The toleration of a manifest (`operator` `Equal` or `Exists`), when it can be written
    /// back in this form.
    pub fn from_manifest(
        key: &str,
        operator: Option<&str>,
        value: Option<&str>,
        effect: Option<&str>,
    ) -> Option<Toleration> {
        let value = match (operator.unwrap_or("Equal"), value) {
            ("Exists", None | Some("")) => None,
            ("Equal", Some(v)) => Some(v.to_owned()),
            _ => return None,
        };
        let effect = effect.filter(|e| !e.is_empty()).map(str::to_owned);
        let t = Toleration { key: key.to_owned(), value, effect };
        (Toleration::parse(&t.to_string()).as_ref() == Some(&t)).then_some(t)
    }
}

impl std::fmt::Display for Toleration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.key)?;
        if let Some(v) = &self.value {
            write!(f, "={v}")?;
        }
        if let Some(e) = &self.effect {
            write!(f, ":{e}")?;
        }
        Ok(())
    }
}

/// Checks the section; the error names the field and says what it must be.
pub fn cluster(k: &Kubernetes) -> Result<Cluster, RenderError> {
    let mut out = Cluster::default();
    if let Some(ns) = &k.namespace {
        if !is_label(ns) {
            return Err(RenderError::at(
                "kubernetes.namespace",
                format_args!(
                    "({ns:?}) is not a namespace name: at most 63 lowercase letters, digits \
                 and `-`, starting and ending with a letter or digit"
                ),
            ));
        }
        out.namespace = Some(ns.clone());
    }
    let shared = placement("", &k.node_selector, &k.tolerations)?;
    for role in Role::BOTH {
        let own = k.side(role);
        let mut merged = placement(&format!("{role}."), &own.node_selector, &own.tolerations)?;
        for (key, value) in &shared.node_selector {
            if !merged.node_selector.iter().any(|(k, _)| k == key) {
                merged.node_selector.push((key.clone(), value.clone()));
            }
        }
        crate::sort::sort(&mut merged.node_selector);
        merged.tolerations.extend(shared.tolerations.iter().cloned());
        crate::sort::sort(&mut merged.tolerations);
        merged.tolerations.dedup();
        out.placement[role as usize] = merged;
    }
    for (var, from) in &k.secret_env {
        let (secret, key) = secret_ref(var, from)?;
        out.secret_env.push((var.clone(), secret.to_owned(), key.to_owned()));
    }
    if let Some(cache) = &k.model_cache {
        out.model_cache = Some(if cache.starts_with('/') {
            Volume::Host(cache.clone())
        } else if is_subdomain(cache) {
            Volume::Claim(cache.clone())
        } else {
            return Err(RenderError::at(
                "kubernetes.model_cache",
                format_args!(
                    "({cache:?}) is neither an absolute path on the node nor a \
                 PersistentVolumeClaim's name (lowercase letters, digits, `-` and `.`)"
                ),
            ));
        });
    }
    if k.router_replicas == 0 {
        return Err(RenderError::at(
            "kubernetes.router_replicas",
            format_args!("is 0: the router's Service would reach no router; use 1 or more"),
        ));
    }
    out.router_replicas = k.router_replicas;
    if let Some(key) = &k.exclusive_topology {
        if !is_label_key(key) {
            return Err(RenderError::at(
                "kubernetes.exclusive_topology",
                format_args!(
                    "({key:?}) is not a node label key: an optional DNS prefix and `/`, \
                 then at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit"
                ),
            ));
        }
        out.exclusive_topology = Some(key.clone());
    }
    for (key, value) in &k.labels {
        if is_reserved(key) {
            return Err(RenderError::at(
                format!("kubernetes.labels.{key}"),
                format_args!(
                    "is a label pdlaunch or its controllers write themselves (the router and the \
                 linter read them); choose another key"
                ),
            ));
        }
        if !is_label_key(key) || !is_label_value(value) {
            return Err(RenderError::at(
                format!("kubernetes.labels.{key}"),
                format_args!(
                    "({value:?}) is not a Kubernetes label: a key of an optional DNS prefix and \
                 `/` then at most 63 letters, digits, `-`, `_` and `.`, and a value of at most 63 of them, each \
                 starting and ending with a letter or digit"
                ),
            ));
        }
        out.labels.push((key.clone(), value.clone()));
    }
    for (key, value) in &k.pod_annotations {
        if is_reserved(key) || !is_label_key(key) {
            return Err(RenderError::at(
                "kubernetes.pod_annotations",
                format_args!(
                    "key {key:?} is not one to set here: an annotation key is an optional \
                 DNS prefix and `/`, then at most 63 letters, digits, `-`, `_` and `.`, and the `app.kubernetes.io/`, \
                 `leaderworkerset.sigs.k8s.io/`, `rbg.workloads.x-k8s.io/` and `sglang.ai/` ones are written by pdlaunch or \
                 its controllers"
                ),
            ));
        }
        out.pod_annotations.push((key.clone(), value.clone()));
    }
    for (i, s) in k.image_pull_secrets.iter().enumerate() {
        if !is_subdomain(s) {
            return Err(RenderError::at(
                format!("kubernetes.image_pull_secrets[{i}]"),
                format_args!(
                    "({s:?}) is not a Secret's name: lowercase letters, digits, \
                 `-` and `.`, starting and ending with a letter or digit"
                ),
            ));
        }
        out.image_pull_secrets.push(s.clone());
    }
    Ok(out)
}

/// One `secret_env` entry, `var: <secret>/<key>`, checked: the Secret and the key.
pub fn secret_ref<'a>(var: &str, from: &'a str) -> Result<(&'a str, &'a str), RenderError> {
    if !is_variable(var) {
        return Err(RenderError::at(
            "kubernetes.secret_env",
            format_args!("names the variable {var:?}: use letters, digits and `_`, not starting with a digit"),
        ));
    }
    match from.split_once('/') {
        Some((secret, key)) if is_subdomain(secret) && is_secret_key(key) => Ok((secret, key)),
        _ => Err(RenderError::at(
            format!("kubernetes.secret_env.{var}"),
            format_args!(
                "({from:?}) is not `<secret>/<key>`: a Secret's name (lowercase letters, \
             digits, `-` and `.`) and one of its keys (letters, digits, `-`, `_` and `.`)"
            ),
        )),
    }
}

/// Node labels and taints, checked; `side` (`prefill.` or empty) places their fields.
fn placement(
    side: &str,
    selector: &std::collections::BTreeMap<String, String>,
    tolerations: &[String],
) -> Result<Placement, RenderError> {
    let mut out = Placement::default();
    for (key, value) in selector {
        if !is_label_key(key) {
            return Err(RenderError::at(
                format!("kubernetes.{side}node_selector"),
                format_args!(
                "key {key:?} is not a Kubernetes label key: an optional DNS prefix \
                 and `/`, then at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit"
            ),
            ));
        }
        if !is_label_value(value) {
            return Err(RenderError::at(
                format!("kubernetes.{side}node_selector.{key}"),
                format_args!(
                    "({value:?}) is not a Kubernetes label value: at most 63 \
                 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit"
                ),
            ));
        }
        out.node_selector.push((key.clone(), value.clone()));
    }
    for (i, t) in tolerations.iter().enumerate() {
        out.tolerations.push(Toleration::parse(t).ok_or_else(|| {
            RenderError::at(
                format!("kubernetes.{side}tolerations[{i}]"),
                format_args!(
                    "({t:?}) is not a taint: write `key=value:Effect`, `key:Effect` \
                 or `key`, with a label key and the effect {}",
                    EFFECTS.join(", ")
                ),
            )
        })?);
    }
    Ok(out)
}

/// A DNS label (RFC 1123): what namespaces and the parts of most object names are.
pub fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&b.len()) && alnum(&b[0]) && alnum(&b[b.len() - 1]) && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// A DNS subdomain: the names of Secrets and claims.
pub fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// A label's name, or a label value that is not empty.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=63).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label key: `[prefix/]name`.
pub fn is_label_key(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// A label value (which may be empty).
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

/// A key of a Secret.
fn is_secret_key(s: &str) -> bool {
    (1..=253).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// An environment variable's name that every shell can also set.
fn is_variable(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && !b[0].is_ascii_digit() && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_read_as_kubectl_writes_them() {
        let t = |key: &str, value: Option<&str>, effect: Option<&str>| Toleration {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
        };
        for (text, want) in [
            ("nvidia.com/gpu:NoSchedule", t("nvidia.com/gpu", None, Some("NoSchedule"))),
            ("dedicated=llm:NoExecute", t("dedicated", Some("llm"), Some("NoExecute"))),
            ("dedicated=llm", t("dedicated", Some("llm"), None)),
            ("gpu", t("gpu", None, None)),
            ("gpu=:PreferNoSchedule", t("gpu", Some(""), Some("PreferNoSchedule"))),
        ] {
            assert_eq!(Toleration::parse(text), Some(want), "{text}");
            assert_eq!(Toleration::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", ":NoSchedule", "gpu:Sometimes", "gpu:noschedule", "a b", "gpu=x y", "-gpu", "a/b/c", "gpu:"] {
            assert_eq!(Toleration::parse(bad), None, "{bad:?}");
        }
        let m = Toleration::from_manifest;
        assert_eq!(m("gpu", Some("Exists"), None, Some("NoSchedule")), Some(t("gpu", None, Some("NoSchedule"))));
        assert_eq!(m("gpu", None, Some("a"), None), Some(t("gpu", Some("a"), None)));
        assert_eq!(m("gpu", Some("Exists"), Some("a"), None), None);
        assert_eq!(m("gpu", Some("Equal"), None, None), None);
        assert_eq!(m("", Some("Exists"), None, None), None);
        assert_eq!(m("gpu", Some("Exists"), None, Some("Never")), None);
    }

    #[test]
    fn names_follow_kubernetes() {
        assert!(is_label("llm") && is_label("0ps") && is_label(&"a".repeat(63)));
        assert!(!is_label("LLM") && !is_label("a.b") && !is_label("-a") && !is_label(&"a".repeat(64)));
        assert!(is_subdomain("hf-token") && is_subdomain("a.b-c.d") && !is_subdomain("a..b") && !is_subdomain(""));
        assert!(is_label_key("nvidia.com/gpu.product") && is_label_key("Role_1") && !is_label_key("a/"));
        assert!(!is_label_key("Nvidia.com/gpu") && !is_label_key("/x"));
        assert!(is_label_value("") && is_label_value("NVIDIA-H200") && !is_label_value("H200 SXM"));
    }

    #[test]
    fn a_bad_setting_names_its_field() {
        let bad = |f: fn(&mut Kubernetes), field: &str| {
            let mut k = Kubernetes::default();
            f(&mut k);
            let err = cluster(&k).unwrap_err();
            assert!(err.message.starts_with(&format!("`kubernetes.{field}")), "{err}");
            // The field the refusal carries is the one its message names first.
            assert_eq!(err.field.as_deref(), err.message[1..].split('`').next(), "{err}");
        };
        bad(|k| k.namespace = Some("LLM".into()), "namespace");
        bad(|k| drop(k.node_selector.insert("a b".into(), "x".into())), "node_selector` key");
        bad(|k| drop(k.node_selector.insert("gpu".into(), "H200 SXM".into())), "node_selector.gpu");
        bad(|k| k.tolerations = vec!["ok".into(), "gpu:Always".into()], "tolerations[1]");
        bad(|k| drop(k.secret_env.insert("HF TOKEN".into(), "hf/token".into())), "secret_env` names");
        bad(|k| drop(k.secret_env.insert("HF_TOKEN".into(), "hf-token".into())), "secret_env.HF_TOKEN");
        bad(|k| drop(k.secret_env.insert("HF_TOKEN".into(), "Hf/token".into())), "secret_env.HF_TOKEN");
        bad(|k| k.model_cache = Some("data/hf".into()), "model_cache");
        bad(|k| k.image_pull_secrets = vec!["Reg Cred".into()], "image_pull_secrets[0]");
        bad(|k| k.router_replicas = 0, "router_replicas");
        bad(|k| k.exclusive_topology = Some("rack id".into()), "exclusive_topology");
        bad(
            |k| drop(k.labels.insert("app.kubernetes.io/instance".into(), "x".into())),
            "labels.app.kubernetes.io/instance",
        );
        bad(|k| drop(k.labels.insert("team".into(), "a b".into())), "labels.team");
        bad(|k| drop(k.pod_annotations.insert("sglang.ai/bootstrap-port".into(), "1".into())), "pod_annotations");
        bad(|k| k.decode.tolerations = vec!["gpu:Always".into()], "decode.tolerations[0]");
        bad(|k| drop(k.prefill.node_selector.insert("gpu".into(), "H200 SXM".into())), "prefill.node_selector.gpu");
        let k = Kubernetes {
            namespace: Some("llm".into()),
            model_cache: Some("/data/hf".into()),
            secret_env: [("HF_TOKEN".to_owned(), "hf-token/token".to_owned())].into(),
            ..Kubernetes::default()
        };
        let c = cluster(&k).unwrap();
        assert_eq!(c.model_cache, Some(Volume::Host("/data/hf".into())));
        assert_eq!(c.secret_env, [("HF_TOKEN".into(), "hf-token".into(), "token".into())]);
    }

    #[test]
    fn a_side_adds_to_the_shared_placement_and_wins_a_key() {
        let mut k = Kubernetes {
            node_selector: [("gpu".to_owned(), "h200".to_owned()), ("pool".to_owned(), "a".to_owned())].into(),
            ..Kubernetes::default()
        };
        k.decode.node_selector = [("gpu".to_owned(), "h20".to_owned()), ("zone".to_owned(), "z1".to_owned())].into();
        k.tolerations = vec!["a".into(), "b:NoSchedule".into()];
        k.decode.tolerations = vec!["b:NoSchedule".into(), "c".into()];
        let c = cluster(&k).unwrap();
        let [prefill, decode] = &c.placement;
        let pairs = |p: &Placement| p.node_selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
        let taints = |p: &Placement| p.tolerations.iter().map(Toleration::to_string).collect::<Vec<_>>();
        assert_eq!(pairs(prefill), ["gpu=h200", "pool=a"]);
        assert_eq!(pairs(decode), ["gpu=h20", "pool=a", "zone=z1"]);
        assert_eq!(taints(prefill), ["a", "b:NoSchedule"]);
        assert_eq!(taints(decode), ["a", "b:NoSchedule", "c"]);
    }
}
