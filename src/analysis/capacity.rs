//! Capacity: offerings Karpenter cannot get (insufficient-capacity events and the AWS
//! provider's offering-availability metric), and prices for cost views.

use std::collections::{BTreeMap, HashMap};

use chrono::Duration;
use serde::Serialize;

use super::provisioning::{claim_pool, LAUNCH_ERRORS};
use super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::{self, LaunchError};
use crate::karpenter::labels;
use crate::model::*;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferingRef {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub source: String,
}

/// Every launch-error event (a reason in [`LAUNCH_ERRORS`]) with its message parsed, by
/// event id: parsed once per pass, and read by the findings here and in provisioning and by
/// the dashboard's insufficient-capacity panel.
pub fn launch_errors(c: &Cluster) -> HashMap<String, LaunchError> {
    c.events
        .values()
        .filter(|e| LAUNCH_ERRORS.contains(&e.reason.as_str()))
        .map(|e| (e.id.clone(), events::parse_launch_error(&e.message)))
        .collect()
}

pub fn findings(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    // Events, per pool.
    let mut by_pool: BTreeMap<Option<String>, (Vec<OfferingRef>, Vec<String>)> = BTreeMap::new();
    for e in c.events.values() {
        if !(e.from_karpenter()
            && e.reason == "InsufficientCapacityError"
            && ctx.within(e.seen(), Duration::hours(1)))
        {
            continue;
        }
        let Some(parsed) = ctx.launch_errors.get(&e.id) else {
            continue;
        };
        let pool = claim_pool(c, &e.regarding.name);
        let entry = by_pool.entry(pool).or_default();
        entry.1.push(e.regarding.name.clone());
        let types = if parsed.instance_types.is_empty() {
            vec![String::new()]
        } else {
            parsed.instance_types.clone()
        };
        let zones = if parsed.zones.is_empty() {
            vec![String::new()]
        } else {
            parsed.zones.clone()
        };
        for t in &types {
            for z in &zones {
                let o = OfferingRef {
                    instance_type: t.clone(),
                    zone: z.clone(),
                    capacity_type: parsed.capacity_type.clone().unwrap_or_default(),
                    source: "event".into(),
                };
                if !entry.0.contains(&o) {
                    entry.0.push(o);
                }
            }
        }
    }
    for (pool, (mut offerings, mut claims)) in by_pool {
        offerings.sort();
        claims.sort();
        claims.dedup();
        let object = match &pool {
            Some(p) => ObjectRef::cluster(ObjectKind::NodePool, p),
            None => ObjectRef::cluster(ObjectKind::NodeClaim, &claims[0]),
        };
        out.push(
            Finding::new(
                Code::InsufficientCapacity,
                Severity::Warning,
                object,
                format!(
                    "{} launch(es) failed for insufficient capacity in the last hour; widen instance families, sizes, zones or capacity types so Karpenter has alternatives",
                    claims.len()
                ),
            )
            .pool(pool.as_deref())
            .details(serde_json::json!({"offerings": offerings, "nodeclaims": claims})),
        );
    }
    // The AWS provider's availability metric.
    if let Some(m) = &c.metrics {
        let unavailable: Vec<OfferingRef> = m
            .offerings
            .iter()
            .filter(|o| o.available == Some(false))
            .map(|o| OfferingRef {
                instance_type: o.instance_type.clone(),
                zone: o.zone.clone(),
                capacity_type: o.capacity_type.clone(),
                source: "metrics".into(),
            })
            .collect();
        if !unavailable.is_empty() {
            let mut types: Vec<&str> = unavailable
                .iter()
                .map(|o| o.instance_type.as_str())
                .collect();
            types.dedup();
            out.push(
                Finding::new(
                    Code::InsufficientCapacity,
                    Severity::Info,
                    ObjectRef::cluster(
                        ObjectKind::Offering,
                        "karpenter_cloudprovider_instance_type_offering_available",
                    ),
                    format!(
                        "{} offerings are currently unavailable to Karpenter ({}{})",
                        unavailable.len(),
                        types.iter().take(5).copied().collect::<Vec<_>>().join(", "),
                        if types.len() > 5 { ", ..." } else { "" }
                    ),
                )
                .details(serde_json::json!({"offerings": unavailable})),
            );
        }
    }
    out
}

/// A node's hourly price: the controller's offering price for its type, zone and
/// capacity type, else the kwok provider's node label.
pub fn node_price(c: &Cluster, node: &Node) -> Option<f64> {
    let from_metrics = c.metrics.as_ref().and_then(|m| {
        let (t, z, ct) = (node.instance_type()?, node.zone()?, node.capacity_type()?);
        m.offering(t, z, ct).and_then(|o| o.price)
    });
    from_metrics.or_else(|| node.metadata.labels.get(labels::KWOK_PRICE)?.parse().ok())
}
