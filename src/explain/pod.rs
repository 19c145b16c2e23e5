//! `why pod`: one pod's state, each NodePool's verdict in Karpenter's order, Karpenter's
//! event as evidence, and what to change. The CLI, the dashboard's pane and API, and the
//! TUI all answer through it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::text::{clean, requests_line, verdict_table, Style};
use super::NotFound;
use crate::analysis::provisioning::{self, PodDiagnosis, PoolSet, Reason};
use crate::analysis::{ago, Pass};
use crate::findings::Finding;
use crate::karpenter::events::{Category, MessageFormat, NominationTarget};
use crate::model::{Cluster, ObjectKind};

/// What `kelp why pod` answers (and the dashboard's pod pane and API).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAnswer {
    pub pod: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Arc<PodDiagnosis>>,
    pub advice: Vec<String>,
    pub findings: Vec<Finding>,
    /// The release it was judged against, as the pass detected it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub karpenter: Option<crate::karpenter::version::Detected>,
}

/// Explain one pod; an error when it does not exist.
pub fn pod_answer(c: &Cluster, pass: &Pass, ns: &str, name: &str) -> Result<PodAnswer, NotFound> {
    let Some(pod) = c.pods.get(&(ns.to_string(), name.to_string())) else {
        return Err(NotFound::Pod(format!("{ns}/{name}")));
    };
    let pending = pass.diagnosis(ns, name);
    let gates = &pod.spec.scheduling_gates;
    // Nominated by Karpenter after it failed to place the pod: capacity is on its way.
    let events = provisioning::pending::PodEvents::of(c, pod);
    let nominated = events
        .nominated_since_failure(pass.now)
        .filter(|_| pod.spec.node_name.is_none());
    // The claims launched for it do not count against it (Karpenter does not weigh a pod
    // against the capacity it is launching for that very pod).
    let usages = match (nominated, events.nominated) {
        (Some(_), Some(e)) => {
            let claims: Vec<&str> = crate::karpenter::events::parse_nominated(&e.message)
                .into_iter()
                .filter_map(|t| match t {
                    NominationTarget::NodeClaim(n) => c.nodeclaims.get(&n).map(|cl| &**cl),
                    NominationTarget::Node(n) => {
                        c.nodes.get(&n).and_then(|node| c.nodeclaim_for_node(node))
                    }
                })
                .map(|claim| claim.metadata.name.as_str())
                .collect();
            provisioning::usages_without(c, &pass.pools, &claims)
        }
        _ => pass.pools.clone(),
    };
    let diagnosis = match pending {
        Some(d) => Some(d.clone()),
        // A gated pod is no one's to place yet: no pool's verdict means anything.
        None if !gates.is_empty() => None,
        None if pod.spec.node_name.is_none()
            && pod.status.phase.as_deref().unwrap_or("Pending") == "Pending" =>
        {
            // Not (yet) marked unschedulable, or nominated: evaluate anyway, it is still useful.
            Some(Arc::new(provisioning::diagnose(
                c,
                &PoolSet::with_usage(c, &usages)
                    .with_instance_type_events(c, pass.now)
                    .with_catalog(pass.catalog.as_ref()),
                pod,
                pass.now,
            )))
        }
        None => None,
    };
    let state = match (&pod.spec.node_name, pod.status.phase.as_deref()) {
        (Some(n), phase) => format!("{} on node {n}", phase.unwrap_or("Scheduled")),
        (None, _) if !gates.is_empty() => format!(
            "Pending: held by scheduling gate{} {}; neither kube-scheduler nor Karpenter acts on it until {} removed",
            if gates.len() == 1 { "" } else { "s" },
            gates.join(", "),
            if gates.len() == 1 { "it is" } else { "they are" },
        ),
        (None, _) if pending.is_some() => "Pending: unschedulable".into(),
        (None, _) if nominated.is_some() => format!(
            "Pending: unschedulable; Karpenter nominated it {} ago, capacity is on its way",
            nominated.map(|t| ago(pass.now, t)).unwrap_or_default()
        ),
        (None, _) if pod.status.nominated_node_name.is_some() => format!(
            "Pending: nominated to {}",
            pod.status.nominated_node_name.clone().unwrap_or_default()
        ),
        (None, phase) if provisioning::pending::is_unschedulable(pod) => {
            format!("{}: unschedulable", phase.unwrap_or("Pending"))
        }
        (None, phase) => format!(
            "{}: not marked unschedulable by the scheduler yet",
            phase.unwrap_or("Pending")
        ),
    };
    let advice = if !gates.is_empty() {
        vec![format!(
            "remove the gate{} when the pod may be scheduled (usually the controller that set {} does): kubectl get pod -n {ns} {name} -o jsonpath='{{.spec.schedulingGates}}'",
            if gates.len() == 1 { "" } else { "s" },
            if gates.len() == 1 { "it" } else { "them" },
        )]
    } else if nominated.is_some() && pending.is_none() {
        vec!["wait for the launched node: the pod binds once it registers and is initialised; if it stays nominated, look at the NodeClaim's conditions (a startup taint never removed, a node that never gets Ready)".into()]
    } else {
        diagnosis.as_deref().map(pod_advice).unwrap_or_default()
    };
    let mine: Vec<Finding> = pass
        .report
        .findings
        .iter()
        .filter(|f| {
            f.object.kind == ObjectKind::Pod
                && f.object.name == name
                && f.object.namespace.as_deref() == Some(ns)
        })
        .map(|f| (**f).clone())
        .collect();
    Ok(PodAnswer {
        pod: format!("{ns}/{name}"),
        state,
        diagnosis,
        advice,
        findings: mine,
        karpenter: pass.report.karpenter.version.clone(),
    })
}

/// `kelp why pod` as text.
pub fn pod_text(c: &Cluster, now: DateTime<Utc>, answer: &PodAnswer, s: Style) -> String {
    let mut out = format!(
        "{} {}: {}\n",
        s.bold("Pod"),
        s.bold(&clean(&answer.pod)),
        answer.state
    );
    if let Some(d) = answer.diagnosis.as_deref() {
        out.push_str(&format!(
            "Pending for {} · requests {}\n\n",
            d.pending_for,
            requests_line(&d.requests)
        ));
        if d.nodepools.is_empty() {
            out.push_str("There are no NodePools.\n");
        } else {
            let weight = |name: &str| {
                c.nodepools
                    .get(name)
                    .and_then(|p| p.spec.weight)
                    .unwrap_or(0)
            };
            out.push_str(&verdict_table(
                d.nodepools.iter().map(|v| (&**v, weight(&v.name))),
                s,
            ));
            // Karpenter tries the pools in this order: the first compatible one launches.
            if let Some((v, l)) = d
                .compatible()
                .next()
                .and_then(|v| Some((v, provisioning::describe_launch(v.launch.as_ref()?)?)))
            {
                out.push_str(&format!(
                    "\n{} (NodePool {}): {l}\n",
                    s.bold("Karpenter would launch"),
                    clean(&v.name)
                ));
            }
        }
        out.push('\n');
        match &d.event {
            Some(e) => {
                out.push_str(&format!(
                    "{} ({}, {} format, last seen {}):\n  {}\n",
                    s.bold("Karpenter's event"),
                    clean(&e.reason),
                    match e.format {
                        MessageFormat::Wrapped => "v1.0-v1.4",
                        MessageFormat::Flat => "v1.5+",
                        MessageFormat::Unknown => "unrecognised",
                    },
                    e.last_seen
                        .map(|t| ago(now, t) + " ago")
                        .unwrap_or_else(|| "?".into()),
                    clean(&e.message)
                ));
            }
            None => out.push_str(&format!(
                "{}: no scheduling event found yet\n",
                s.bold("Karpenter's event")
            )),
        }
        if let Some(m) = &d.scheduler {
            out.push_str(&format!("{}: {}\n", s.bold("kube-scheduler"), clean(m)));
        }
    }
    if !answer.advice.is_empty() {
        out.push_str(&format!("\n{}\n", s.bold("What to change")));
        for a in &answer.advice {
            out.push_str(&format!("  - {}\n", clean(a)));
        }
    }
    out.push('\n');
    out.push_str(&s.dim(&super::text::karpenter_line(answer.karpenter.as_ref())));
    out
}

/// One suggestion per pool: what would let that pool take the pod.
fn pod_advice(d: &PodDiagnosis) -> Vec<String> {
    let mut out = Vec::new();
    if d.compatible().next().is_some() {
        let names: Vec<&str> = d.compatible().map(|v| v.name.as_str()).collect();
        out.push(format!(
            "{} can take this pod by kelp's checks: if nothing launches, read Karpenter's event and logs (instance types, topology spread, volumes), and check the controller is running",
            names.join(", ")
        ));
        return out;
    }
    for v in d.nodepools.iter() {
        let Some(r) = v.reasons.first() else { continue };
        let tip = change_for(r).unwrap_or_else(|| r.message.clone());
        out.push(format!("to use {}: {tip}", v.name));
    }
    out
}

/// What to change so that a pool's first rejection reason goes away; None for a reason
/// kelp has no advice for (callers fall back to the reason itself). `why pod`'s "What to
/// change" and the dashboard's expanded verdicts share it.
pub fn change_for(r: &Reason) -> Option<String> {
    Some(match r.category {
        Category::Taints => format!(
            "add a toleration for {}",
            r.message.trim_start_matches("did not tolerate taint ")
        ),
        Category::Requirements => "change the pod's nodeSelector/affinity, or add the label to the pool's requirements or template labels".into(),
        Category::Limits => "raise the pool's spec.limits or free capacity in it".into(),
        Category::NodepoolNotReady => "fix the pool's readiness (see its conditions)".into(),
        Category::InstanceTypes => "widen the pool's instance types or lower the pod's requests".into(),
        Category::Validation => "fix the pod's scheduling constraints (Karpenter rejects them before trying any pool)".into(),
        Category::Topology => "relax the pod's topology spread or (anti-)affinity".into(),
        Category::Volumes => "check the zones of the pod's volumes against the pool's zones".into(),
        Category::Other => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-21T10:00:00Z";

    fn answer(extra: &str) -> PodAnswer {
        answer_with(|y| y.to_string(), extra)
    }

    /// As [`answer`], the cluster's text passed through `edit` first.
    fn answer_with(edit: impl Fn(&str) -> String, extra: &str) -> PodAnswer {
        let yaml = format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec: {{template: {{spec: {{requirements: []}}}}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: web, namespace: shop, creationTimestamp: "2026-11-21T09:50:00Z"}}
spec:
  containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]
{extra}"#
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &edit(&yaml), &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        let pass = crate::analysis::run(&c, now);
        pod_answer(&c, &pass, "shop", "web").unwrap()
    }

    #[test]
    fn a_gated_pod_is_nobodys_to_place_and_says_which_gates() {
        let a = answer(
            "  schedulingGates: [{name: example.com/quota}, {name: example.com/warmup}]\nstatus:\n  phase: Pending\n  conditions: [{type: PodScheduled, status: \"False\", reason: SchedulingGated}]\n",
        );
        assert!(
            a.state
                .contains("scheduling gates example.com/quota, example.com/warmup"),
            "{}",
            a.state
        );
        assert!(a.diagnosis.is_none(), "no pool's verdict for a gated pod");
        assert_eq!(a.advice.len(), 1);
        assert!(
            a.advice[0].starts_with("remove the gates"),
            "{:?}",
            a.advice
        );
        assert!(!a.advice[0].contains("controller is running"));
    }

    /// An unschedulable pod, and Karpenter's nomination of it to a NodeClaim 2 minutes ago.
    const NOMINATED: &str = r#"status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, lastTransitionTime: "2026-11-21T09:50:01Z"}]
---
apiVersion: v1
kind: Event
metadata: {name: web.1, namespace: shop}
involvedObject: {kind: Pod, namespace: shop, name: web}
reason: Nominated
message: "Pod should schedule on: nodeclaim/default-x7k2p"
source: {component: karpenter}
type: Normal
lastTimestamp: "2026-11-21T09:58:00Z"
"#;

    #[test]
    fn an_unschedulable_pod_karpenter_nominated_is_said_to_be_on_its_way() {
        let a = answer(NOMINATED);
        assert!(
            a.state
                .starts_with("Pending: unschedulable; Karpenter nominated it 2m ago"),
            "{}",
            a.state
        );
        assert!(
            a.advice[0].starts_with("wait for the launched node"),
            "{:?}",
            a.advice
        );
        // Its own claim, launched for it, is not counted against it: the pool fits.
        let own = &format!(
            "{NOMINATED}{}",
            r#"---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-x7k2p, labels: {karpenter.sh/nodepool: default}}
status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}}
"#
        );
        let limited = |yaml: &str| {
            yaml.replace(
                "spec: {template: {spec: {requirements: []}}}\nstatus: {conditions: [{type: Ready, status: \"True\"}]}",
                "spec: {limits: {cpu: \"4\"}, template: {spec: {requirements: []}}}\nstatus: {resources: {cpu: \"4\"}, conditions: [{type: Ready, status: \"True\"}]}",
            )
        };
        let a = answer_with(limited, own);
        let d = a.diagnosis.expect("judged");
        assert_eq!(
            d.nodepools[0].verdict,
            provisioning::Verdict::Compatible,
            "{:?}",
            d.nodepools[0]
        );
        // Without the nomination the same pool is full.
        let a = answer_with(limited, &own.replace("reason: Nominated", "reason: Other"));
        assert_ne!(
            a.diagnosis.expect("judged").nodepools[0].verdict,
            provisioning::Verdict::Compatible
        );
        // Without the nomination: unschedulable, and pools judged.
        let a = answer(
            "status:\n  phase: Pending\n  conditions: [{type: PodScheduled, status: \"False\", reason: Unschedulable}]\n",
        );
        assert_eq!(a.state, "Pending: unschedulable");
        assert!(a.diagnosis.is_some());
    }
}
