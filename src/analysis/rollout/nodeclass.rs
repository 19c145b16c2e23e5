//! The impact of an EC2NodeClass change, as the AWS provider judges drift after
//! Karpenter's own checks: its static drift first (`NodeClassDrift`: a field its hash
//! reads changed, [`crate::karpenter::aws::nodeclass::static_drift`]), then drift against
//! what the class resolves to in EC2 (AMIs, subnets, security groups, capacity
//! reservations), which kelp cannot resolve offline: a change to those selectors makes
//! the answer "unknown", naming the reason it may bring.

use serde::Serialize;
use serde_json::Value;

use super::FieldChange;
use crate::karpenter::aws::nodeclass::{ami_family_name, hashed, static_drift};
use crate::model::{Cluster, NodeClaim, NodeClass};

/// The annotations the provider stamps on an EC2NodeClass and on each NodeClaim launched
/// from it.
pub const CLASS_HASH: &str = "karpenter.k8s.aws/ec2nodeclass-hash";
pub const CLASS_HASH_VERSION: &str = "karpenter.k8s.aws/ec2nodeclass-hash-version";

/// An EC2NodeClass as a change would leave it: its spec with the API server's defaults.
#[derive(Debug, Clone)]
pub struct ProposedClass {
    pub name: String,
    pub spec: Value,
}

/// What the change does to one EC2NodeClass.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassImpact {
    pub name: String,
    /// Not in the cluster yet: no node was launched from it.
    pub new: bool,
    pub changes: Vec<FieldChange>,
    /// Whether the change moves the class's hash (every node launched from it drifts).
    pub hash_changes: bool,
    /// The NodePools that launch from it, whose nodes are judged.
    pub nodepools: Vec<String>,
}

/// A class change, worked out once: what it changes, and whether its hash moves.
pub struct ClassChange<'a> {
    pub proposed: &'a ProposedClass,
    pub current: Option<&'a NodeClass>,
    pub hash_changes: bool,
    /// Fields EC2 resolves that changed, with the drift reason each may bring.
    pub resolved: Vec<(&'static str, &'static str)>,
    pub changes: Vec<FieldChange>,
}

/// Selectors the provider resolves against EC2, and the drift each may bring.
const RESOLVED: &[(&str, &str)] = &[
    ("amiSelectorTerms", "AMIDrift"),
    ("securityGroupSelectorTerms", "SecurityGroupDrift"),
    ("subnetSelectorTerms", "SubnetDrift"),
    (
        "capacityReservationSelectorTerms",
        "CapacityReservationDrift",
    ),
];

impl<'a> ClassChange<'a> {
    pub fn new(c: &'a Cluster, proposed: &'a ProposedClass) -> Self {
        let current = c
            .nodeclasses
            .get(&("EC2NodeClass".to_string(), proposed.name.clone()));
        let empty = Value::Object(Default::default());
        let now = current.map_or(&empty, |n| &n.spec);
        let after = &proposed.spec;
        let field = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
        let mut changes = Vec::new();
        let mut resolved = Vec::new();
        let mut keys: Vec<&String> = now
            .as_object()
            .into_iter()
            .chain(after.as_object())
            .flat_map(|m| m.keys())
            .collect();
        keys.sort();
        keys.dedup();
        let (hashed_now, hashed_after) = (hashed(now), hashed(after));
        for key in keys {
            let (a, b) = (field(now, key), field(after, key));
            if a == b {
                continue;
            }
            let drifts = if let Some(&(k, reason)) = RESOLVED.iter().find(|(k, _)| k == key) {
                resolved.push((k, reason));
                // An alias of another family also moves the hash (AMIFamily() is in it).
                if k == "amiSelectorTerms" && ami_family_name(now) != ami_family_name(after) {
                    "static"
                } else {
                    "provider"
                }
            } else if key == "ipPrefixCount" {
                "nothing"
            } else if key == "amiFamily" {
                if ami_family_name(now) != ami_family_name(after) {
                    "static"
                } else {
                    "nothing"
                }
            } else if key == "kubelet" {
                if hashed_now["kubelet"] != hashed_after["kubelet"] {
                    "static"
                } else {
                    "nothing"
                }
            } else if hashed_now["spec"].get(key) != hashed_after["spec"].get(key) {
                "static"
            } else {
                // Spelled differently, hashed the same (a zero value, the order of a set).
                "nothing"
            };
            changes.push(FieldChange {
                field: format!("spec.{key}"),
                drifts,
            });
        }
        ClassChange {
            proposed,
            current,
            hash_changes: current.is_some() && static_drift(now, after),
            resolved,
            changes,
        }
    }

    /// The provider's drift for one claim launched from the class, after Karpenter's own
    /// checks found none: `Ok(true)` for NodeClassDrift, `Ok(false)` for none, `Err(why)`
    /// when it turns on what EC2 resolves.
    pub fn judge(&self, claim: &NodeClaim) -> Result<bool, String> {
        if self.hash_changes && self.stamped_current(claim) {
            return Ok(true);
        }
        let reserved = claim.metadata.labels.get("karpenter.sh/capacity-type")
            == Some(&"reserved".to_string());
        let open: Vec<&str> = self
            .resolved
            .iter()
            .filter(|(k, _)| *k != "capacityReservationSelectorTerms" || reserved)
            .map(|(_, r)| *r)
            .collect();
        if open.is_empty() {
            Ok(false)
        } else {
            Err(format!(
                "{} turns on what EC2 resolves the new selectors to",
                open.join(", ")
            ))
        }
    }

    /// Whether the claim carries the class's current hash at its hash version: only such
    /// a claim is judged on the hash (one without, or at another version, never is).
    fn stamped_current(&self, claim: &NodeClaim) -> bool {
        let Some(class) = self.current else {
            return false;
        };
        let on = |m: &crate::model::Meta, k: &str| m.annotation(k).map(str::to_string);
        let (claim_hash, claim_version) = (
            on(&claim.metadata, CLASS_HASH),
            on(&claim.metadata, CLASS_HASH_VERSION),
        );
        let (class_hash, class_version) = (
            on(&class.metadata, CLASS_HASH),
            on(&class.metadata, CLASS_HASH_VERSION),
        );
        match (claim_hash, claim_version, class_hash, class_version) {
            (Some(h), Some(v), Some(ch), Some(cv)) => v == cv && h == ch,
            _ => false,
        }
    }

    pub fn impact(&self, nodepools: Vec<String>) -> ClassImpact {
        ClassImpact {
            name: self.proposed.name.clone(),
            new: self.current.is_none(),
            changes: self.changes.clone(),
            hash_changes: self.hash_changes,
            nodepools,
        }
    }
}
