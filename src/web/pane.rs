//! The detail pane: describe, yaml and events for one NodePool, NodeClaim, Node or Pod.

use serde::Serialize;

use crate::analysis::{ago, Context};
use crate::cli::output::Style;
use crate::cli::why;
use crate::findings::Report;
use crate::model::Cluster;

pub const TABS: [&str; 3] = ["describe", "yaml", "events"];

/// Which object the pane shows, parsed from `Kind/name` or `Kind/namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    NodePool,
    NodeClaim,
    Node,
    Pod,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NodePool => "NodePool",
            Kind::NodeClaim => "NodeClaim",
            Kind::Node => "Node",
            Kind::Pod => "Pod",
        }
    }
    /// The API path of one object, for the live yaml tab.
    pub fn path(self, namespace: Option<&str>, name: &str) -> String {
        match self {
            Kind::NodePool => format!("/apis/karpenter.sh/v1/nodepools/{name}"),
            Kind::NodeClaim => format!("/apis/karpenter.sh/v1/nodeclaims/{name}"),
            Kind::Node => format!("/api/v1/nodes/{name}"),
            Kind::Pod => format!(
                "/api/v1/namespaces/{}/pods/{name}",
                namespace.unwrap_or("default")
            ),
        }
    }
}

impl Selection {
    pub fn parse(s: &str) -> Option<Selection> {
        let mut parts = s.splitn(3, '/');
        let kind = match parts.next()? {
            "NodePool" => Kind::NodePool,
            "NodeClaim" => Kind::NodeClaim,
            "Node" => Kind::Node,
            "Pod" => Kind::Pod,
            _ => return None,
        };
        let a = parts.next().filter(|s| !s.is_empty())?;
        let b = parts.next();
        let ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 253
                && s.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"-._:".contains(&c))
        };
        match (kind, b) {
            (Kind::Pod, Some(name)) if ok(a) && ok(name) => Some(Selection {
                kind,
                namespace: Some(a.into()),
                name: name.into(),
            }),
            (Kind::Pod, _) => None,
            (_, None) if ok(a) => Some(Selection {
                kind,
                namespace: None,
                name: a.into(),
            }),
            _ => None,
        }
    }
    pub fn key(&self) -> String {
        super::view::select_key(self.kind.as_str(), self.namespace.as_deref(), &self.name)
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
}

/// The pane for `sel`, or None when the object does not exist. `live_yaml` is the full
/// object as the API server returned it (managedFields removed), when there is one.
pub fn pane(
    c: &Cluster,
    ctx: &Context,
    report: &Report,
    sel: &Selection,
    tab: &str,
    live_yaml: Option<String>,
) -> Option<Pane> {
    let now = ctx.now;
    let s = Style::plain();
    let (uid, describe, trimmed) = match sel.kind {
        Kind::Pod => {
            let ns = sel.namespace.as_deref().unwrap_or_default();
            let pod = c.pods.get(&(ns.to_string(), sel.name.clone()))?;
            let text = why::pod_answer(ctx, &report.findings, ns, &sel.name)
                .map(|a| why::pod_text(ctx, &a, s))
                .unwrap_or_else(|e| e.to_string());
            (
                pod.metadata.uid.clone(),
                text,
                serde_norway::to_string(pod).ok(),
            )
        }
        Kind::Node => {
            let node = c.nodes.get(&sel.name)?;
            let text = why::node_answer(ctx, &report.findings, &sel.name)
                .map(|a| why::node_text(ctx, &a, s))
                .unwrap_or_else(|e| e.to_string());
            (
                node.metadata.uid.clone(),
                text,
                serde_norway::to_string(node).ok(),
            )
        }
        Kind::NodeClaim => {
            let claim = c.nodeclaims.get(&sel.name)?;
            let mut text = format!("NodeClaim {}\n", claim.metadata.name);
            let field = |k: &str, v: String| format!("  {k:<14} {v}\n");
            text.push_str(&field(
                "NodePool",
                claim
                    .metadata
                    .labels
                    .get(crate::karpenter::labels::NODEPOOL)
                    .cloned()
                    .unwrap_or_else(|| "-".into()),
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
                if let Ok(a) = why::node_answer(ctx, &report.findings, &sel.name) {
                    text.push('\n');
                    text.push_str(&why::node_text(ctx, &a, s));
                }
            }
            (
                claim.metadata.uid.clone(),
                text,
                serde_norway::to_string(claim).ok(),
            )
        }
        Kind::NodePool => {
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
            let mine: Vec<_> = report
                .findings
                .iter()
                .filter(|f| {
                    f.nodepool.as_deref() == Some(sel.name.as_str())
                        || (f.object.kind == "NodePool" && f.object.name == sel.name)
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
                serde_norway::to_string(pool).ok(),
            )
        }
    };
    let (yaml, yaml_note) = match live_yaml {
        Some(y) => (y, String::new()),
        None => (
            trimmed.unwrap_or_default(),
            "The fields kelp keeps of this object (from a dump, or when the API server could not be asked).".into(),
        ),
    };
    let events = c
        .events_for(sel.kind.as_str(), sel.namespace.as_deref(), &sel.name, &uid)
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
        tab: TABS
            .iter()
            .find(|t| **t == tab)
            .copied()
            .unwrap_or("describe"),
        describe,
        yaml,
        yaml_note,
        events,
    })
}

/// Remove what the yaml tab never shows.
pub fn strip_for_yaml(v: &mut serde_json::Value) {
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.remove("managedFields");
    }
}
