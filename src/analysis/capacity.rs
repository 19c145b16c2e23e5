//! Capacity: offerings Karpenter cannot get (insufficient-capacity events and the AWS
//! provider's offering-availability metric), and prices for cost views.

use std::collections::{BTreeMap, HashMap};

use chrono::Duration;
use serde::Serialize;

use super::provisioning::{claim_pool, LAUNCH_ERRORS};
use super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Reason;
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

/// Every launch-error event about a NodeClaim (a reason in [`LAUNCH_ERRORS`]) with its
/// message parsed, by event id: parsed once per pass, and read by the findings here and in
/// provisioning and by the dashboard's insufficient-capacity panel. From v1.15 Karpenter
/// also tells each pod nominated to the claim (`InsufficientCapacityError` on the Pod,
/// "NodeClaim X nominated for this pod failed to launch: ..."): the same failure again,
/// so those are not counted twice.
pub fn launch_errors(c: &Cluster) -> HashMap<String, LaunchError> {
    c.events
        .values()
        .filter(|e| e.is_any(LAUNCH_ERRORS) && e.regarding.kind == ObjectKind::NodeClaim.as_str())
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
            && e.is(Reason::InsufficientCapacityError)
            && ctx.within(e.seen(), Duration::hours(1)))
        {
            continue;
        }
        let Some(parsed) = ctx.pass.launch_errors.get(&e.id) else {
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
            // With its ReservedCapacity gate on (the default), the AWS provider writes a
            // reserved offering for every type and zone, available 0 and priced 0 where
            // there is no reservation: no capacity is short there.
            .filter(|o| !(o.capacity_type == "reserved" && o.price.unwrap_or(0.0) == 0.0))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserved_offering_with_no_reservation_is_no_shortage() {
        let offering = |capacity_type: &str, price: Option<f64>| Offering {
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            capacity_type: capacity_type.into(),
            price,
            available: Some(false),
        };
        let mut c = Cluster::default();
        c.metrics = Some(ControllerMetrics {
            // The provider's placeholder: no reservation for this type and zone.
            offerings: vec![offering("reserved", Some(0.0))],
            ..Default::default()
        });
        let now = chrono::Utc::now();
        assert!(findings(&Context::new(&c, now)).is_empty());
        // A spot offering Karpenter cannot get, and a reservation it has used up, are.
        c.metrics = Some(ControllerMetrics {
            offerings: vec![
                offering("spot", Some(0.03)),
                offering("reserved", Some(0.09)),
            ],
            ..Default::default()
        });
        let found = findings(&Context::new(&c, now));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0]
            .message
            .starts_with("2 offerings are currently unavailable"));
    }

    #[test]
    fn a_launch_failure_told_to_the_pods_too_is_one_failure() {
        // v1.15 writes the claim's InsufficientCapacityError on the NodeClaim and on each
        // pod nominated to it.
        let event = |kind: &str, name: &str, message: &str| {
            let v = serde_json::json!({
                "metadata": {"name": format!("{name}.1"), "namespace": "default", "uid": format!("u-{name}")},
                "involvedObject": {"kind": kind, "name": name, "namespace": if kind == "Pod" { "default" } else { "" }},
                "reason": "InsufficientCapacityError", "type": "Warning", "message": message,
                "source": {"component": "karpenter"}, "count": 1,
                "lastTimestamp": "2026-11-21T09:59:00Z",
            });
            serde_json::from_value::<crate::model::event::CoreEvent>(v)
                .unwrap()
                .into()
        };
        let err = "creating instance, insufficient capacity, all requested instance types were unavailable during launch";
        let mut c = Cluster::default();
        c.apply_event(event(
            "NodeClaim",
            "default-abcde",
            &format!("NodeClaim default-abcde event: {err}"),
        ));
        c.apply_event(event(
            "Pod",
            "web-1",
            &format!("NodeClaim default-abcde nominated for this pod failed to launch: {err}"),
        ));
        let parsed = launch_errors(&c);
        assert_eq!(parsed.len(), 1, "{parsed:?}");
        assert!(parsed
            .keys()
            .all(|id| c.events[id].regarding.kind == "NodeClaim"));
    }
}
