//! The dashboard's insufficient-capacity panel: the offerings the controller reports
//! unavailable, and InsufficientCapacityError events grouped, each cell filled from the
//! event, the claim or the pool.

use std::collections::BTreeMap;

use super::{Capacity, IceRow, OfferingRow};
use crate::analysis::provisioning::claim_pool;
use crate::analysis::{ago, Pass};
use crate::karpenter::events::Reason;
use crate::karpenter::labels;
use crate::model::Cluster;

pub(super) fn capacity_panel(c: &Cluster, pass: &Pass) -> Capacity {
    let unavailable = c
        .metrics
        .iter()
        .flat_map(|m| &m.offerings)
        .filter(|o| o.available == Some(false))
        .map(|o| OfferingRow {
            instance_type: o.instance_type.clone(),
            zone: o.zone.clone(),
            capacity_type: o.capacity_type.clone(),
        })
        .collect();
    let mut errors: BTreeMap<(String, String, String, String), IceRow> = BTreeMap::new();
    for e in c.events.values() {
        if !e.is(Reason::InsufficientCapacityError) {
            continue;
        }
        // The message as the analysis pass over this same model parsed it (it parses every
        // launch error).
        let Some(parsed) = pass.launch_errors.get(&e.id) else {
            continue;
        };
        let claim = c.nodeclaims.get(&e.regarding.name);
        let label = |k: &str| {
            claim
                .and_then(|cl| cl.metadata.labels.get(k).cloned())
                .unwrap_or_default()
        };
        // A launch that failed leaves a claim with its requirements, not its labels:
        // take the single value of a requirement when there is one.
        let req = |k: &str| {
            claim
                .and_then(|cl| {
                    cl.spec
                        .requirements
                        .iter()
                        .find(|r| r.key == k && r.values.len() == 1)
                        .map(|r| r.values[0].clone())
                })
                .unwrap_or_default()
        };
        let pick = |k: &str| {
            let v = label(k);
            if v.is_empty() {
                req(k)
            } else {
                v
            }
        };
        // The claim is usually gone (Karpenter deletes it after the error): the message
        // names the type and zone (AWS fleet errors), the claim's name its pool.
        let msg_type = parsed.instance_types.first().cloned();
        let msg_zone = parsed.zones.first().cloned();
        let or = |v: String, alt: Option<String>| {
            if v.is_empty() {
                alt.unwrap_or_default()
            } else {
                v
            }
        };
        let nodepool = claim_pool(c, &e.regarding.name).unwrap_or_default();
        // Neither the claim nor the message names it: what the pool allows (`any` if anything).
        let allowed = |k: &str| {
            let pool = c.nodepools.get(&nodepool);
            let values: Vec<String> = pool
                .iter()
                .flat_map(|p| p.spec.template.spec.requirements.iter())
                .filter(|r| r.key == k && r.operator == "In")
                .flat_map(|r| r.values.iter().cloned())
                .collect();
            match values.len() {
                0 => "any".to_string(),
                1..=3 => format!("any of {}", values.join(", ")),
                n => format!("any of {n}"),
            }
        };
        let fill = |v: String, k: &str| if v.is_empty() { allowed(k) } else { v };
        let key = (
            fill(
                or(pick(labels::INSTANCE_TYPE), msg_type),
                labels::INSTANCE_TYPE,
            ),
            fill(or(pick(labels::ZONE), msg_zone), labels::ZONE),
            fill(
                or(pick(labels::CAPACITY_TYPE), parsed.capacity_type.clone()),
                labels::CAPACITY_TYPE,
            ),
            nodepool,
        );
        let row = errors.entry(key.clone()).or_insert_with(|| IceRow {
            instance_type: key.0.clone(),
            zone: key.1.clone(),
            capacity_type: key.2.clone(),
            nodepool: key.3.clone(),
            count: 0,
            last: String::new(),
            message: e.message.clone(),
        });
        row.count += i64::from(e.count.max(1));
        if let Some(t) = e.seen() {
            row.last = format!("{} ago", ago(pass.now, t));
        }
    }
    Capacity {
        unavailable,
        errors: errors.into_values().collect(),
    }
}
