//! The detail pane: describe, yaml and events for one NodePool, NodeClaim, Node or Pod,
//! and what its yaml tab masks.

use serde::Serialize;
use serde_json::Value;

use crate::analysis::provisioning::claim_pool;
use crate::analysis::{ago, Pass};
use crate::explain::{self as why, text::Style};
use crate::model::{Cluster, ObjectKind};

pub const TABS: [&str; 3] = ["describe", "yaml", "events"];
/// The pane's tabs when serve keeps a history: the object's rows in it, too.
pub const TABS_WITH_HISTORY: [&str; 4] = ["describe", "yaml", "events", "history"];

/// One row of the object's history, as the pane shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryLine {
    pub at: String,
    pub object: String,
    pub what: String,
    pub details: String,
    pub message: String,
}

impl HistoryLine {
    pub fn of(r: &crate::history::Record) -> Self {
        let object = match &r.object.namespace {
            Some(ns) => format!("{}/{ns}/{}", r.object.kind, r.object.name),
            None => format!("{}/{}", r.object.kind, r.object.name),
        };
        let mut at = r.at.format("%Y-%m-%d %H:%M:%S").to_string();
        if let Some(until) = r.until.filter(|u| *u != r.at) {
            at.push_str(&until.format(" – %H:%M:%S").to_string());
        }
        HistoryLine {
            at,
            object,
            what: r.what.clone(),
            details: r
                .details
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "code" | "object"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            message: r.message.clone(),
        }
    }
}

/// What the History tab asks the store about a selection (None: a kind it has no rows for).
pub fn history_ask(sel: &Selection) -> Option<crate::history::Ask> {
    use crate::history::Ask;
    Some(match sel.kind {
        ObjectKind::Node => Ask::Node(sel.name.clone()),
        ObjectKind::NodeClaim => Ask::NodeClaim(sel.name.clone()),
        ObjectKind::NodePool => Ask::NodePool(sel.name.clone()),
        ObjectKind::Pod => Ask::Pod(sel.namespace.clone(), sel.name.clone()),
        _ => return None,
    })
}

/// Which object the pane shows, parsed from `Kind/name` or `Kind/namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    pub kind: ObjectKind,
    pub namespace: Option<String>,
    pub name: String,
}

/// The API path of one object the pane shows, for the live yaml tab (each name
/// percent-encoded); None for a kind the pane does not show.
fn api_path(kind: ObjectKind, namespace: Option<&str>, name: &str) -> Option<String> {
    let name = super::urlencode(name);
    let namespace = namespace.map(super::urlencode);
    Some(match kind {
        ObjectKind::NodePool => format!("/apis/karpenter.sh/v1/nodepools/{name}"),
        ObjectKind::NodeClaim => format!("/apis/karpenter.sh/v1/nodeclaims/{name}"),
        ObjectKind::Node => format!("/api/v1/nodes/{name}"),
        ObjectKind::Pod => format!(
            "/api/v1/namespaces/{}/pods/{name}",
            namespace.as_deref().unwrap_or("default")
        ),
        _ => return None,
    })
}

/// Whether `s` can be the name (or namespace, up to 63 bytes) of an object kelp shows.
/// The API server accepts only DNS-1123 names for these kinds, but a dump can hold any
/// name, so this takes every name that fits in one URL path segment of the API (as the
/// API server's own path rule: not `.` or `..`, no `/` or `%`), without control
/// characters, up to 253 bytes.
fn check_name(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    if s.len() > max {
        return Err(format!("the {what} is longer than {max} bytes"));
    }
    if s == "." || s == ".." {
        return Err(format!("{s:?} is not a {what}"));
    }
    if let Some(c) = s.chars().find(|c| *c == '/' || *c == '%' || c.is_control()) {
        return Err(format!(
            "the {what} {s:?} holds {c:?}, which no Kubernetes object name can"
        ));
    }
    Ok(())
}

const SEL_FORMS: &str = "NodePool/NAME, NodeClaim/NAME, Node/NAME or Pod/NAMESPACE/NAME";

impl Selection {
    /// `Kind/name` or `Pod/namespace/name` (already percent-decoded), or why it is not.
    pub fn parse(s: &str) -> Result<Selection, String> {
        let (kind, rest) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not one of {SEL_FORMS}"))?;
        let kind = match ObjectKind::parse(kind) {
            Some(
                k @ (ObjectKind::NodePool
                | ObjectKind::NodeClaim
                | ObjectKind::Node
                | ObjectKind::Pod),
            ) => k,
            _ => {
                return Err(format!(
                    "{kind:?} is not a kind the pane shows: use {SEL_FORMS}"
                ))
            }
        };
        match (kind, rest.split_once('/')) {
            (ObjectKind::Pod, Some((ns, name))) => {
                check_name("namespace", ns, 63)?;
                check_name("name", name, 253)?;
                Ok(Selection {
                    kind,
                    namespace: Some(ns.into()),
                    name: name.into(),
                })
            }
            (ObjectKind::Pod, None) => Err(format!("a Pod is Pod/NAMESPACE/NAME, not {s:?}")),
            (_, Some(_)) => Err(format!(
                "a {} is {}/NAME (a name holds no '/'), not {s:?}",
                kind.as_str(),
                kind.as_str()
            )),
            (_, None) => {
                check_name("name", rest, 253)?;
                Ok(Selection {
                    kind,
                    namespace: None,
                    name: rest.into(),
                })
            }
        }
    }
    pub fn key(&self) -> String {
        crate::view::select_key(self.kind.as_str(), self.namespace.as_deref(), &self.name)
    }
    /// The object's path on the API server.
    pub fn api_path(&self) -> Option<String> {
        api_path(self.kind, self.namespace.as_deref(), &self.name)
    }
}

/// Whether the model holds the selected object.
pub fn exists(c: &Cluster, sel: &Selection) -> bool {
    match sel.kind {
        ObjectKind::Pod => c
            .pods
            .contains_key(&(sel.namespace.clone().unwrap_or_default(), sel.name.clone())),
        ObjectKind::Node => c.nodes.contains_key(&sel.name),
        ObjectKind::NodeClaim => c.nodeclaims.contains_key(&sel.name),
        ObjectKind::NodePool => c.nodepools.contains_key(&sel.name),
        _ => false,
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine {
    pub ago: String,
    pub type_: String,
    pub reason: String,
    pub source: String,
    pub count: i32,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pane {
    pub kind: &'static str,
    pub title: String,
    pub select: String,
    pub tab: &'static str,
    pub describe: String,
    pub yaml: String,
    pub yaml_note: String,
    pub events: Vec<EventLine>,
    /// The object's rows in serve's history (the last 7 days, newest last), when it keeps one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<HistoryLine>>,
}

/// The pane for `sel`, or None when the object does not exist. `live_yaml` is the full
/// object as the API server returned it (managedFields removed), when there is one.
pub fn pane(
    c: &Cluster,
    pass: &Pass,
    sel: &Selection,
    tab: &str,
    live_yaml: Option<String>,
) -> Option<Pane> {
    let now = pass.now;
    let s = Style::plain();
    let (uid, describe, trimmed) = match sel.kind {
        ObjectKind::Pod => {
            let ns = sel.namespace.as_deref().unwrap_or_default();
            let pod = c.pods.get(&(ns.to_string(), sel.name.clone()))?;
            let text = why::pod_answer(c, pass, ns, &sel.name)
                .map(|a| why::pod_text(c, now, &a, s))
                .unwrap_or_else(|e| e.to_string());
            (pod.metadata.uid.clone(), text, yaml_of(pod, "v1", "Pod"))
        }
        ObjectKind::Node => {
            let node = c.nodes.get(&sel.name)?;
            let text = why::node_answer(c, pass, &sel.name)
                .map(|a| why::node_text(c, now, &a, s))
                .unwrap_or_else(|e| e.to_string());
            (node.metadata.uid.clone(), text, yaml_of(node, "v1", "Node"))
        }
        ObjectKind::NodeClaim => {
            let claim = c.nodeclaims.get(&sel.name)?;
            let mut text = format!("NodeClaim {}\n", claim.metadata.name);
            let field = |k: &str, v: String| format!("  {k:<14} {v}\n");
            text.push_str(&field(
                "NodePool",
                claim_pool(c, &claim.metadata.name).unwrap_or_else(|| "-".into()),
            ));
            text.push_str(&field(
                "Node",
                claim.status.node_name.clone().unwrap_or_else(|| "-".into()),
            ));
            text.push_str(&field(
                "ProviderID",
                claim
                    .status
                    .provider_id
                    .clone()
                    .unwrap_or_else(|| "-".into()),
            ));
            text.push_str(&field(
                "ImageID",
                claim.status.image_id.clone().unwrap_or_else(|| "-".into()),
            ));
            text.push_str(&field(
                "Age",
                claim
                    .metadata
                    .creation_timestamp
                    .map(|t| ago(now, t))
                    .unwrap_or_else(|| "-".into()),
            ));
            text.push_str("Conditions:\n");
            for cnd in &claim.status.conditions {
                text.push_str(&format!(
                    "  {:<16} {:<7} {} {}\n",
                    cnd.type_,
                    cnd.status,
                    cnd.reason.as_deref().unwrap_or(""),
                    cnd.message.as_deref().unwrap_or("")
                ));
            }
            if claim.status.node_name.is_some() {
                if let Ok(a) = why::node_answer(c, pass, &sel.name) {
                    text.push('\n');
                    text.push_str(&why::node_text(c, now, &a, s));
                }
            }
            (
                claim.metadata.uid.clone(),
                text,
                yaml_of(claim, "karpenter.sh/v1", "NodeClaim"),
            )
        }
        ObjectKind::NodePool => {
            let pool = c.nodepools.get(&sel.name)?;
            let mut text = format!("NodePool {}\n", pool.metadata.name);
            for cnd in &pool.status.conditions {
                text.push_str(&format!(
                    "  {:<24} {:<7} {} {}\n",
                    cnd.type_,
                    cnd.status,
                    cnd.reason.as_deref().unwrap_or(""),
                    cnd.message.as_deref().unwrap_or("")
                ));
            }
            let mine: Vec<_> = pass
                .report
                .findings
                .iter()
                .filter(|f| {
                    f.nodepool.as_deref() == Some(sel.name.as_str())
                        || (f.object.kind == ObjectKind::NodePool && f.object.name == sel.name)
                })
                .collect();
            text.push_str(&format!("\nFindings ({}):\n", mine.len()));
            for f in mine.iter().take(50) {
                text.push_str(&format!(
                    "  {:<8} {:<28} {}: {}\n",
                    f.severity, f.code, f.object, f.message
                ));
            }
            (
                pool.metadata.uid.clone(),
                text,
                yaml_of(pool, "karpenter.sh/v1", "NodePool"),
            )
        }
        // The pane shows only the kinds a selection parses to.
        _ => return None,
    };
    let (yaml, yaml_note) = match live_yaml {
        Some(y) => (y, String::new()),
        None => (
            trimmed.unwrap_or_default(),
            "The fields kelp keeps of this object (from a dump, or when the API server could not be asked).".into(),
        ),
    };
    let events = c
        .events_for(sel.kind, sel.namespace.as_deref(), &sel.name, &uid)
        .into_iter()
        .take(100)
        .map(|e| EventLine {
            ago: e
                .seen()
                .map(|t| format!("{} ago", ago(now, t)))
                .unwrap_or_default(),
            type_: e.type_.clone(),
            reason: e.reason.clone(),
            source: e.source.clone(),
            count: e.count,
            message: e.message.clone(),
        })
        .collect();
    Some(Pane {
        kind: sel.kind.as_str(),
        title: match &sel.namespace {
            Some(ns) => format!("{ns}/{}", sel.name),
            None => sel.name.clone(),
        },
        select: sel.key(),
        tab: TABS_WITH_HISTORY
            .iter()
            .find(|t| **t == tab)
            .copied()
            .unwrap_or("describe"),
        describe,
        yaml,
        yaml_note,
        events,
        history: None,
    })
}

/// What the yaml tab says of masked values.
pub const MASK_NOTE: &str = "Values that can hold secrets are masked: env values, HTTP header values of probes and hooks, secret-looking command-line arguments and annotations, and the last-applied-configuration annotation (a copy of the whole object).";

/// The yaml of an object kelp keeps, masked as the live one is, with its apiVersion and kind
/// first (the model does not keep them), so that it can be applied as it is.
fn yaml_of<T: Serialize>(o: &T, api_version: &str, kind: &str) -> Option<String> {
    let mut v = serde_json::to_value(o).ok()?;
    if let Value::Object(fields) = v {
        let mut m = serde_json::Map::new();
        m.insert("apiVersion".into(), Value::String(api_version.into()));
        m.insert("kind".into(), Value::String(kind.into()));
        m.extend(
            fields
                .into_iter()
                .filter(|(k, _)| k != "apiVersion" && k != "kind"),
        );
        v = Value::Object(m);
    }
    strip_for_yaml(&mut v);
    serde_norway::to_string(&v).ok()
}

/// Remove what the yaml tab never shows (managedFields) and mask what can be a secret.
pub fn strip_for_yaml(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.remove("managedFields");
    }
    mask_secrets(v);
}

fn mask(v: &mut Value) {
    let n = match &*v {
        Value::String(s) => s.chars().count(),
        Value::Null => return,
        other => other.to_string().len(),
    };
    *v = Value::String(format!("<masked: {n} chars>"));
}

/// A name that says its value is a secret (a flag, an annotation key).
fn secret_shaped(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('_', "-");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "api-key",
        "credential",
        "private-key",
        "access-key",
    ]
    .iter()
    .any(|w| n.contains(w))
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Mask, anywhere in an object: `env[].value` (containers, init and ephemeral containers,
/// pod templates), `httpHeaders[].value` (probes, lifecycle hooks), the value of a
/// secret-looking `--flag=value` (or the word after a bare one) in `args` and `command`,
/// and annotations that are secret-looking or the last-applied configuration.
pub fn mask_secrets(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                match (k.as_str(), child) {
                    ("env" | "httpHeaders", Value::Array(items)) => {
                        for it in items {
                            if let Some(val) = it.get_mut("value") {
                                mask(val);
                            }
                        }
                    }
                    ("args" | "command", Value::Array(items)) => mask_args(items),
                    ("annotations", Value::Object(a)) => {
                        for (ak, av) in a.iter_mut() {
                            if ak == LAST_APPLIED || secret_shaped(ak) {
                                mask(av);
                            }
                        }
                    }
                    (_, child) => mask_secrets(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        _ => {}
    }
}

fn mask_args(items: &mut [Value]) {
    let mut next_is_secret = false;
    for it in items {
        let Value::String(s) = it else {
            next_is_secret = false;
            continue;
        };
        if std::mem::take(&mut next_is_secret) && !s.starts_with('-') {
            mask(it);
            continue;
        }
        if !s.starts_with('-') {
            continue;
        }
        match s.split_once('=') {
            Some((flag, value)) if secret_shaped(flag) => {
                *s = format!("{flag}=<masked: {} chars>", value.chars().count());
            }
            Some(_) => {}
            None => next_is_secret = secret_shaped(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_kubernetes_or_a_dump_can_hold_are_selections() {
        for (s, ns, name) in [
            ("Pod/ml/trainer-0", Some("ml"), "trainer-0"),
            (
                "Node/ip-10-0-1-2.us-west-2.compute.internal",
                None,
                "ip-10-0-1-2.us-west-2.compute.internal",
            ),
            ("NodePool/Team_A+gpu", None, "Team_A+gpu"),
            ("Pod/web/café #1?&=", Some("web"), "café #1?&="),
            ("NodeClaim/a:b@c~d", None, "a:b@c~d"),
        ] {
            let sel = Selection::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!((sel.namespace.as_deref(), sel.name.as_str()), (ns, name));
            assert_eq!(sel.key(), s);
        }
        let long = format!("Node/{}", "a".repeat(253));
        assert!(Selection::parse(&long).is_ok());
    }

    #[test]
    fn what_is_not_a_name_is_refused_with_a_reason() {
        for (s, why) in [
            ("Secret/x", "not a kind"),
            ("Pod/x", "Pod/NAMESPACE/NAME"),
            ("Node/a/b", "holds no '/'"),
            ("Node/", "empty"),
            ("Node/..", "not a name"),
            ("Pod/ns/a/b", "'/'"),
            ("Node/a%2Fb", "'%'"),
            ("Node/a\nb", "which no Kubernetes"),
            ("Node", "is not one of"),
        ] {
            let e = Selection::parse(s).unwrap_err();
            assert!(e.contains(why), "{s:?}: {e}");
        }
        assert!(Selection::parse(&format!("Node/{}", "a".repeat(254))).is_err());
        assert!(Selection::parse(&format!("Pod/{}/x", "a".repeat(64))).is_err());
    }

    #[test]
    fn api_paths_encode_names() {
        let sel = Selection::parse("Pod/web/a b?c#d").unwrap();
        assert_eq!(
            sel.api_path().as_deref(),
            Some("/api/v1/namespaces/web/pods/a%20b%3Fc%23d")
        );
        let sel = Selection::parse("NodePool/general").unwrap();
        assert_eq!(
            sel.api_path().as_deref(),
            Some("/apis/karpenter.sh/v1/nodepools/general")
        );
    }

    #[test]
    fn secrets_are_masked_wherever_a_pod_keeps_them() {
        let mut v = serde_json::json!({
            "metadata": {
                "name": "p",
                "managedFields": [{"manager": "kubectl"}],
                "labels": {"env": "prod"},
                "annotations": {
                    LAST_APPLIED: "{\"spec\":{\"containers\":[{\"env\":[{\"value\":\"hunter2\"}]}]}}",
                    "example.com/api-token": "hunter2",
                    "karpenter.sh/do-not-disrupt": "true"
                }
            },
            "spec": {
                "containers": [{
                    "name": "a",
                    "env": [
                        {"name": "DB_PASSWORD", "value": "hunter2"},
                        {"name": "FROM", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                    ],
                    "args": ["--port=80", "--db-password=hunter2", "--token", "hunter2", "--verbose", "run"],
                    "livenessProbe": {"httpGet": {"path": "/", "httpHeaders": [{"name": "Authorization", "value": "Bearer hunter2"}]}}
                }],
                "initContainers": [{"name": "i", "env": [{"name": "K", "value": "hunter2"}]}],
                "ephemeralContainers": [{"name": "e", "env": [{"name": "K", "value": "hunter2"}], "command": ["sh", "--password=hunter2"]}]
            }
        });
        strip_for_yaml(&mut v);
        let out = serde_json::to_string(&v).unwrap();
        assert!(!out.contains("hunter2"), "{out}");
        assert!(!out.contains("managedFields"));
        let c = &v["spec"]["containers"][0];
        assert_eq!(c["env"][0]["value"], "<masked: 7 chars>");
        assert_eq!(c["env"][1]["valueFrom"]["secretKeyRef"]["name"], "s");
        assert_eq!(
            c["args"],
            serde_json::json!([
                "--port=80",
                "--db-password=<masked: 7 chars>",
                "--token",
                "<masked: 7 chars>",
                "--verbose",
                "run"
            ])
        );
        assert_eq!(v["metadata"]["labels"]["env"], "prod");
        assert_eq!(
            v["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
            "true"
        );
    }
}
