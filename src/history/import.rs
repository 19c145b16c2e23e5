//! A history rebuilt from Karpenter's own controller log (its JSON lines), for a cluster
//! where serve never ran: a NodeClaim's creation (pool, requests), launch (type, zone,
//! capacity type), registration (node), initialization and deletion; each disruption
//! command (its reason, decision, savings and replacements) per node it disrupts; and a
//! pod Karpenter could not schedule, with its error (one row per pod and error, from the
//! first line to the last). Keys are the ones a live serve writes, so an import into a
//! store serve also wrote adds what serve missed and repeats nothing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::record::{fnv, Kind, Record, Subject};
use super::recorder::step_key;

/// What one log line adds (none for the lines that say nothing of the kinds above, and
/// for a line that is not JSON).
pub fn parse_line(line: &str) -> Vec<Record> {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    let Some(at) = v["time"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.to_utc())
    else {
        return Vec::new();
    };
    let name = |k: &str| v[k]["name"].as_str().map(str::to_string);
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let claim_step = |step: &str| -> Option<Record> {
        let claim = name("NodeClaim")?;
        let mut r = Record::new(
            step_key(&claim, step, at),
            at,
            Kind::NodeClaim,
            step,
            Subject {
                kind: "NodeClaim".into(),
                namespace: None,
                name: claim.clone(),
            },
        );
        r.nodeclaim = Some(claim);
        r.node = name("Node");
        r.nodepool = name("NodePool");
        Some(r)
    };
    let one = |r: Option<Record>| r.into_iter().collect::<Vec<_>>();
    match v["message"].as_str().unwrap_or_default() {
        "created nodeclaim" => one(claim_step("created").map(|r| {
            let requests = v["requests"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, q)| format!("{k}={}", q.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            r.detail("requests", requests)
                .detail("instanceTypes", text("instance-types"))
        })),
        "launched nodeclaim" => one(claim_step("launched").map(|r| {
            r.detail("instanceType", text("instance-type"))
                .detail("zone", text("zone"))
                .detail("capacityType", text("capacity-type"))
                .detail("providerID", text("provider-id"))
        })),
        "registered nodeclaim" => one(claim_step("registered")),
        "initialized nodeclaim" => one(claim_step("initialized")),
        "deleted nodeclaim" => one(claim_step("deleted")),
        "disrupting node(s)" => disrupting(&v, at),
        "could not schedule pod" => {
            let (Some(pod), Some(ns)) = (v["Pod"]["name"].as_str(), v["Pod"]["namespace"].as_str())
            else {
                return Vec::new();
            };
            let error = text("error");
            let mut r = Record::new(
                format!("log/could-not-schedule/{ns}/{pod}/{:016x}", fnv(&error)),
                at,
                Kind::Pod,
                "could not schedule",
                Subject {
                    kind: "Pod".into(),
                    namespace: Some(ns.into()),
                    name: pod.into(),
                },
            );
            r.message = error;
            vec![r]
        }
        _ => Vec::new(),
    }
}

/// `disrupting node(s)`: one row per node the command disrupts.
fn disrupting(v: &Value, at: DateTime<Utc>) -> Vec<Record> {
    let command = v["command"].as_str().unwrap_or_default();
    // "Underutilized/<id>: delete: nodepools=[p]: [node] (savings: $0.03)"
    let (reason, id) = command
        .split_once(':')
        .map(|(head, _)| head.split_once('/').unwrap_or((head, "")))
        .unwrap_or_default();
    let savings = command
        .rsplit_once("(savings: $")
        .and_then(|(_, s)| s.strip_suffix(')'))
        .unwrap_or_default();
    let replacements = v["replacement-node-count"].as_u64().unwrap_or(0);
    let mut out = Vec::new();
    for d in v["disrupted-nodes"].as_array().into_iter().flatten() {
        let claim = d["NodeClaim"]["name"].as_str().unwrap_or_default();
        let node = d["Node"]["name"].as_str();
        if claim.is_empty() {
            continue;
        }
        let mut r = Record::new(
            format!("log/disrupting/{id}/{claim}"),
            at,
            Kind::NodeClaim,
            "disruption decided",
            Subject {
                kind: "NodeClaim".into(),
                namespace: None,
                name: claim.into(),
            },
        )
        .detail("reason", reason)
        .detail("decision", v["decision"].as_str().unwrap_or_default())
        .detail("savingsPerHour", savings)
        .detail("replacements", replacements.to_string())
        .detail(
            "instanceType",
            d["instance-type"].as_str().unwrap_or_default(),
        )
        .detail(
            "capacityType",
            d["capacity-type"].as_str().unwrap_or_default(),
        );
        r.nodeclaim = Some(claim.into());
        r.node = node.map(str::to_string);
        r.message = command.to_string();
        out.push(r);
    }
    out
}

/// Every row of a whole log, a later line about the same key updating the row (its end).
pub fn parse_log(text: &str) -> Vec<Record> {
    let mut by_key: BTreeMap<String, Record> = BTreeMap::new();
    for line in text.lines() {
        for r in parse_line(line) {
            match by_key.get_mut(&r.key) {
                Some(first) if r.at > first.at => first.until = Some(r.at),
                Some(_) => {}
                None => {
                    by_key.insert(r.key.clone(), r);
                }
            }
        }
    }
    let mut rows: Vec<Record> = by_key.into_values().collect();
    rows.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.key.cmp(&b.key)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/logs/karpenter-v1.15.0-consolidation.log"
        ))
        .unwrap()
    }

    #[test]
    fn a_real_log_gives_each_claims_life_and_each_disruption() {
        let text = fixture();
        let rows = parse_log(&text);
        let count = |what: &str| rows.iter().filter(|r| r.what == what).count();
        let lines = |m: &str| text.matches(&format!("\"message\":\"{m}\"")).count();
        assert_eq!(count("created"), lines("created nodeclaim"));
        assert_eq!(count("launched"), lines("launched nodeclaim"));
        assert_eq!(count("deleted"), lines("deleted nodeclaim"));
        assert!(count("created") >= 4);
        // The claim single-node consolidation deleted: why, how, for how much.
        let decided: Vec<&Record> = rows
            .iter()
            .filter(|r| r.what == "disruption decided" && r.details["reason"] == "Underutilized")
            .collect();
        assert!(!decided.is_empty(), "{rows:#?}");
        let d = decided[0];
        assert_eq!(d.details["decision"], "delete");
        assert_eq!(d.details["savingsPerHour"], "0.03");
        assert_eq!(d.details["replacements"], "0");
        assert!(d.node.as_deref().is_some_and(|n| n.starts_with("kwok-")));
        let claim = d.nodeclaim.clone().unwrap();
        let life: Vec<&str> = rows
            .iter()
            .filter(|r| r.nodeclaim.as_deref() == Some(claim.as_str()))
            .map(|r| r.what.as_str())
            .collect();
        assert_eq!(
            life,
            [
                "created",
                "launched",
                "registered",
                "initialized",
                "disruption decided",
                "deleted"
            ],
            "{claim}"
        );
        let launched = rows
            .iter()
            .find(|r| r.what == "launched" && r.nodeclaim.as_deref() == Some(claim.as_str()))
            .unwrap();
        assert_eq!(launched.details["instanceType"], "c-1x-amd64-linux");
        assert_eq!(launched.details["capacityType"], "on-demand");
        // The keys are a live serve's: the same claim step imported twice is one row.
        assert_eq!(launched.key, format!("nodeclaim/{claim}/launched"));
    }

    #[test]
    fn lines_that_are_not_karpenters_say_nothing() {
        for line in [
            "",
            "==== 2026-12-07T11:15:08+0000 starting karpenter ====",
            "{\"message\":\"created nodeclaim\"}",
            "{\"time\":\"2026-12-07T11:15:48.070Z\",\"message\":\"created nodeclaim\"}",
            "[1,2,3]",
        ] {
            assert!(parse_line(line).is_empty(), "{line}");
        }
    }
}
