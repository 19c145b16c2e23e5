//! Words for the dashboard's cells: a pending pod's one-line verdict, each pool's reason and
//! what to change, a budget's label, and the worst finding per object (row severity marks).

use std::collections::BTreeMap;

use crate::analysis::provisioning::{PodDiagnosis, PoolVerdict, Verdict};
use crate::findings::{Report, Severity};
use crate::karpenter::events::Category;

/// The short name of a rejection's kind, as counted in the one-line verdict.
pub fn category_word(c: Category) -> &'static str {
    match c {
        Category::NodepoolNotReady => "not ready",
        Category::Limits => "limits",
        Category::Taints => "taints",
        Category::Requirements => "requirements",
        Category::Volumes => "volumes",
        Category::Topology => "topology",
        Category::InstanceTypes => "instance types",
        Category::Validation => "validation",
        Category::Other => "other",
    }
}

/// One line per pending pod: `6 pools rejected: 2 taints, 2 requirements, 1 limits, 1 not ready`,
/// or which pools can take it.
pub fn verdict_line(d: &PodDiagnosis) -> String {
    if d.nodepools.is_empty() {
        return "no NodePools: Karpenter cannot provision for it".into();
    }
    let compatible: Vec<&str> = d.compatible().map(|v| v.name.as_str()).collect();
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    let mut rejected = 0;
    let mut unknown = 0;
    for v in d.nodepools.iter() {
        match v.verdict {
            Verdict::Rejected => {
                rejected += 1;
                let w = v
                    .reasons
                    .first()
                    .map(|r| category_word(r.category))
                    .unwrap_or("other");
                match counts.iter_mut().find(|(k, _)| *k == w) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((w, 1)),
                }
            }
            Verdict::Unknown => unknown += 1,
            Verdict::Compatible => {}
        }
    }
    // Most frequent first; equal counts in the order pools were judged.
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let plural = |n: usize| if n == 1 { "pool" } else { "pools" };
    let mut parts = Vec::new();
    if !compatible.is_empty() {
        parts.push(format!("fits {}", compatible.join(", ")));
    }
    if rejected > 0 {
        let by: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
        parts.push(format!(
            "{rejected} {} rejected: {}",
            plural(rejected),
            by.join(", ")
        ));
    }
    if unknown > 0 {
        parts.push(format!("{unknown} {} cannot tell", plural(unknown)));
    }
    parts.join("; ")
}

/// A pool's reason in words (the first reason, without the instance-type dump).
pub fn reason_words(v: &PoolVerdict) -> String {
    match v.verdict {
        Verdict::Compatible => match v
            .launch
            .as_ref()
            .and_then(crate::analysis::provisioning::describe_launch)
        {
            Some(l) => format!("can take this pod: would launch {l}"),
            None => "can take this pod by kelp's checks (instance types not checked: no catalogue)"
                .into(),
        },
        _ => match v.reasons.first() {
            Some(r) => {
                let m = crate::karpenter::events::without_requirements(&r.message);
                format!("{}: {m}", category_word(r.category))
            }
            None => "cannot tell".into(),
        },
    }
}

/// What would let this pool take the pod (the same advice as `kelp why pod`'s "What to change").
pub fn advice(v: &PoolVerdict) -> String {
    if v.verdict == Verdict::Compatible {
        return "nothing: if no node launches, read Karpenter's event and logs".into();
    }
    let Some(r) = v.reasons.first() else {
        return "run kelp why pod for the whole story".into();
    };
    crate::explain::change_for(r).unwrap_or_else(|| "read the reason and Karpenter's event".into())
}

/// A budget in words: `0 nodes · 0 6 * * * for 8h · Drifted`.
pub fn budget_label(nodes: &str, schedule: &str, duration: &str, reasons: &str) -> String {
    let count = if nodes.ends_with('%') {
        format!("{nodes} of nodes")
    } else if nodes == "1" {
        "1 node".into()
    } else {
        format!("{nodes} nodes")
    };
    let mut parts = vec![count];
    if !schedule.is_empty() {
        if duration.is_empty() {
            parts.push(format!("at {schedule}"));
        } else {
            parts.push(format!("{schedule} for {duration}"));
        }
    }
    parts.push(if reasons == "all" {
        "all reasons".into()
    } else {
        reasons.to_string()
    });
    parts.join(" · ")
}

/// The worst severity of the findings about each object, by selection key (`Kind/ns/name`).
pub fn worst_by_object(report: &Report) -> BTreeMap<String, Severity> {
    let mut out: BTreeMap<String, Severity> = BTreeMap::new();
    for f in &report.findings {
        let key = super::select_key(
            f.object.kind.as_str(),
            f.object.namespace.as_deref(),
            &f.object.name,
        );
        let e = out.entry(key).or_insert(f.severity);
        if f.severity > *e {
            *e = f.severity;
        }
    }
    out
}

/// The worst of some severities (none without findings): a row's mark.
pub fn worst(sevs: impl IntoIterator<Item = Option<Severity>>) -> Option<Severity> {
    sevs.into_iter().flatten().max()
}

/// A row's worst severity as the JSON API has always written it: its name, or "" for none.
pub fn severity_or_empty<S: serde::Serializer>(
    sev: &Option<Severity>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(sev.map_or("", Severity::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_labels_name_the_node_count() {
        assert_eq!(
            budget_label("0", "0 6 * * *", "8h", "Drifted"),
            "0 nodes · 0 6 * * * for 8h · Drifted"
        );
        assert_eq!(
            budget_label("20%", "", "", "all"),
            "20% of nodes · all reasons"
        );
        assert_eq!(budget_label("1", "", "", "Empty"), "1 node · Empty");
    }
}
