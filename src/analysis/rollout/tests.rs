use serde_json::{json, Value};

use super::*;

const NOW: &str = "2026-12-07T12:00:00Z";

fn now() -> DateTime<Utc> {
    NOW.parse().unwrap()
}

fn capture(release: &str) -> (Cluster, Value) {
    let path = format!(
        "{}/tests/fixtures/real/{release}/cluster.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Cluster::default();
    crate::source::load_str(&path, &text, &mut c).unwrap();
    (c, serde_json::from_str(&text).unwrap())
}

fn raw_pool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "NodePool" && o["metadata"]["name"] == name)
        .unwrap()
}

/// A pool proposed from its raw manifest (the template hashed as kelp hashes a change).
fn proposed(raw: &Value) -> Proposed {
    let pool: NodePool = serde_json::from_value(raw.clone()).unwrap();
    Proposed {
        hash: hash::template_hash(&hash::with_defaults(&raw["spec"]["template"])),
        pool,
    }
}

/// `pool` of the capture with a new template label (`team: payments`): every node drifts.
fn relabelled(list: &Value, pool: &str) -> Value {
    let mut raw = raw_pool(list, pool).clone();
    raw["spec"]["template"]["metadata"]["labels"]["team"] = json!("payments");
    raw
}

/// One more requirement on a raw pool's template.
fn require(raw: &mut Value, requirement: Value) {
    raw["spec"]["template"]["spec"]["requirements"]
        .as_array_mut()
        .expect("the captured pool has requirements")
        .push(requirement);
}

fn by_claim(i: &Impact) -> BTreeMap<&str, &NodeImpact> {
    i.nodes.iter().map(|n| (n.nodeclaim.as_str(), n)).collect()
}

use std::collections::BTreeMap;

/// The pools proposed as they are: kelp's prediction is exactly the Drifted condition the
/// real Karpenter set on each claim (the capture's cap-drift pool was changed once, so five
/// of its claims carry the old hash and one the new; cap-budget and cap-stuck likewise).
#[test]
fn the_pools_as_they_are_predict_every_drifted_condition_karpenter_set() {
    for release in ["karpenter-v1.15.0", "karpenter-v1.14.1"] {
        let (c, list) = capture(release);
        let all: Vec<Proposed> = c
            .nodepools
            .keys()
            .map(|name| proposed(raw_pool(&list, name)))
            .collect();
        let impact = impact(&c, &all, now());
        let mut drifted = 0;
        for n in &impact.nodes {
            let claim = &c.nodeclaims[&n.nodeclaim];
            let karpenter = condition(&claim.status.conditions, "Drifted")
                .filter(|c| c.is_true())
                .and_then(|c| c.reason.clone());
            let kelp = n.drift.map(|d| format!("{d:?}"));
            assert_eq!(kelp, karpenter, "{release} {}", n.nodeclaim);
            assert!(n.unknown.is_none(), "{n:?}");
            drifted += usize::from(kelp.is_some());
        }
        assert!(drifted >= 5, "{release}: {drifted}");
        assert_eq!(impact.nodes.len(), c.nodeclaims.len());
    }
}

#[test]
fn a_template_label_drifts_every_node_and_a_limit_drifts_none() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = raw_pool(&list, "cap-limits").clone();
    raw["spec"]["limits"] = json!({"cpu": "1000"});
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(
        i.nodepools[0].changes,
        vec![FieldChange {
            field: "spec.limits".into(),
            drifts: "nothing"
        }]
    );
    assert_eq!(i.drifting(), 0);
    assert!(i.nodepools[0].waves.is_none());
    assert_eq!(i.nodepools[0].hash_now, i.nodepools[0].hash_after);

    raw["spec"]["template"]["metadata"]["labels"]["team"] = json!("payments");
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(i.nodes.len(), 1);
    assert_eq!(i.nodes[0].drift, Some(DriftReason::NodePoolDrifted));
    assert_eq!(
        i.nodes[0].name,
        c.nodeclaims["cap-limits-k9qsw"]
            .status
            .node_name
            .clone()
            .unwrap()
    );
    assert!(i.nodepools[0]
        .changes
        .iter()
        .any(|f| f.field == "spec.template.metadata.labels" && f.drifts == "static"));
    assert_ne!(i.nodepools[0].hash_now, i.nodepools[0].hash_after);
}

#[test]
fn a_narrowed_requirement_drifts_only_the_nodes_outside_it() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = raw_pool(&list, "cap-drift").clone();
    require(
        &mut raw,
        json!({"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["test-zone-c"]}),
    );
    let i = impact(&c, &[proposed(&raw)], now());
    let n = by_claim(&i);
    // The one claim on the current hash is in zone c: requirement drift, with the label.
    assert_eq!(
        n["cap-drift-x276c"].drift,
        Some(DriftReason::RequirementsDrifted)
    );
    assert!(
        n["cap-drift-x276c"].because[0].contains("topology.kubernetes.io/zone"),
        "{:?}",
        n["cap-drift-x276c"]
    );
    // The others were already drifted by the hash, which Karpenter checks first.
    assert_eq!(
        n["cap-drift-9rn9l"].drift,
        Some(DriftReason::NodePoolDrifted)
    );
    assert_eq!(
        n["cap-drift-9rn9l"].already.as_deref(),
        Some("NodePoolDrifted")
    );
    // Requirements are not hashed.
    assert_eq!(i.nodepools[0].hash_now, i.nodepools[0].hash_after);
    assert_eq!(
        i.nodepools[0].changes,
        vec![FieldChange {
            field: "spec.template.spec.requirements".into(),
            drifts: "requirements"
        }]
    );
}

#[test]
fn an_undefined_custom_key_drifts_but_notin_of_it_does_not() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = raw_pool(&list, "cap-limits").clone();
    require(
        &mut raw,
        json!({"key": "example.com/team", "operator": "NotIn", "values": ["x"]}),
    );
    assert_eq!(impact(&c, &[proposed(&raw)], now()).drifting(), 0);
    require(
        &mut raw,
        json!({"key": "example.com/tier", "operator": "Exists"}),
    );
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(i.nodes[0].drift, Some(DriftReason::RequirementsDrifted));
}

#[test]
fn an_unhashable_template_is_unknown_unless_requirements_decide() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = raw_pool(&list, "cap-limits").clone();
    raw["spec"]["template"]["spec"]["taints"] =
        json!([{"key": "k", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}]);
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(i.nodes[0].drift, None);
    assert!(
        i.nodes[0].unknown.as_deref().unwrap().contains("timeAdded"),
        "{:?}",
        i.nodes[0]
    );
    assert!(i.nodepools[0].hash_unknown.is_some());
    require(
        &mut raw,
        json!({"key": "example.com/tier", "operator": "Exists"}),
    );
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(i.nodes[0].drift, Some(DriftReason::RequirementsDrifted));
    assert!(i.nodes[0].unknown.is_none());
}

#[test]
fn waves_follow_the_budgets_and_a_closed_window_says_when_it_opens() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = relabelled(&list, "cap-drift");
    raw["spec"]["disruption"]["budgets"] = json!([{"nodes": "1"}]);
    let i = impact(&c, &[proposed(&raw)], now());
    let p = &i.nodepools[0];
    assert_eq!(p.drifting, 6);
    let w = p.waves.as_ref().unwrap();
    // Four of the six are held by blockers of their own (a do-not-disrupt pod, a PDB, the
    // node's annotation, two PDBs; the 2h do-not-disrupt has run out by now): the waves and
    // the ETA are the other two's.
    assert_eq!(w.blocked_nodes, 4);
    assert_eq!((w.per_wave, w.count), (Some(1), 2));
    assert_eq!(w.eta_seconds, Some(2 * WAVE_TIME.num_seconds()));
    let slow = impact_with(&c, &[proposed(&raw)], now(), Duration::minutes(5));
    assert_eq!(
        slow.nodepools[0].waves.as_ref().unwrap().eta_seconds,
        Some(2 * 300)
    );
    raw["spec"]["disruption"]["budgets"] = json!([{"nodes": "2"}]);
    let w = impact(&c, &[proposed(&raw)], now()).nodepools[0]
        .waves
        .clone()
        .unwrap();
    assert_eq!((w.per_wave, w.count), (Some(2), 1));
    // No drift from 17:00 to 09:00: at 18:30 nothing may start, and the window opens at
    // 09:00 the next morning.
    raw["spec"]["disruption"]["budgets"] = json!([
        {"nodes": "0", "schedule": "0 17 * * *", "duration": "16h"},
        {"nodes": "3"}
    ]);
    let evening: DateTime<Utc> = "2026-12-07T18:30:00Z".parse().unwrap();
    let w = impact(&c, &[proposed(&raw)], evening).nodepools[0]
        .waves
        .clone()
        .unwrap();
    assert_eq!(w.allowed_now, 0);
    assert_eq!(w.opens_at, Some("2026-12-08T09:00:00Z".parse().unwrap()));
    assert!(w.blocked.is_none());
    // 14.5 hours' wait, then one wave for the two free nodes.
    assert_eq!(
        w.eta_seconds,
        Some(14 * 3600 + 1800 + WAVE_TIME.num_seconds())
    );
    // Budgets that never allow drift block the rollout.
    raw["spec"]["disruption"]["budgets"] = json!([{"nodes": "0", "reasons": ["Drifted"]}]);
    let w = impact(&c, &[proposed(&raw)], now()).nodepools[0]
        .waves
        .clone()
        .unwrap();
    assert!(w.blocked.is_some(), "{w:?}");
    assert_eq!(w.eta_seconds, None);
}

#[test]
fn a_new_pool_has_nothing_to_drift() {
    let (c, list) = capture("karpenter-v1.15.0");
    let mut raw = raw_pool(&list, "cap-limits").clone();
    raw["metadata"]["name"] = json!("brand-new");
    let i = impact(&c, &[proposed(&raw)], now());
    assert!(i.nodepools[0].new);
    assert_eq!(i.nodepools[0].nodes, 0);
    assert!(i.nodes.is_empty());
}

#[test]
fn pods_a_change_leaves_without_a_pool_are_stranded_and_pending_answers_move() {
    let (c, list) = capture("karpenter-v1.15.0");
    // The pods on cap-drift's nodes select its template label: renamed, no pool takes them.
    let mut raw = raw_pool(&list, "cap-drift").clone();
    raw["spec"]["template"]["metadata"]["labels"]["capture.kelp.dev/scenario"] = json!("drift-v2");
    let i = impact(&c, &[proposed(&raw)], now());
    assert_eq!(i.drifting(), 6);
    assert!(!i.pods.stranded.is_empty(), "{:?}", i.pods);
    for s in &i.pods.stranded {
        assert_eq!(
            (s.before.as_str(), s.after.as_str()),
            ("cap-drift", "nowhere"),
            "{s:?}"
        );
        assert!(
            s.node.as_deref().unwrap().starts_with("kwok-cap-drift-"),
            "{s:?}"
        );
    }
    assert!(i.pods.moving.is_empty());
    // The label kept: they stay with their pool (neither stranded nor moving).
    let mut same = raw_pool(&list, "cap-drift").clone();
    same["spec"]["template"]["metadata"]["labels"]["team"] = json!("payments");
    let i = impact(&c, &[proposed(&same)], now());
    assert!(
        i.pods.stranded.is_empty() && i.pods.moving.is_empty(),
        "{:?}",
        i.pods
    );
    // A limit raised: the pod cap-limits had no room for would now launch there.
    let mut limits = raw_pool(&list, "cap-limits").clone();
    limits["spec"]["limits"] = json!({"cpu": "1000"});
    let i = impact(&c, &[proposed(&limits)], now());
    assert_eq!(
        i.pods.pending,
        vec![PodChange {
            pod: "cap-limits/second".into(),
            pods: 1,
            node: None,
            before: "nowhere".into(),
            after: "cap-limits".into(),
        }]
    );
}

#[test]
fn the_cost_weighs_the_drifting_nodes_against_their_replacements() {
    let (c, list) = capture("karpenter-v1.15.0");
    let raw = relabelled(&list, "cap-drift");
    let i = impact(&c, &[proposed(&raw)], now());
    let cost = i.nodepools[0].cost.as_ref().unwrap();
    // Every kwok node carries its price; the kwok types price the replacements.
    assert_eq!(
        (cost.priced, cost.replaced, cost.unknown),
        (6, 6, 0),
        "{cost:?}"
    );
    assert!(
        cost.drifting_per_hour > 0.0 && cost.replacements_per_hour > 0.0,
        "{cost:?}"
    );
    // A replacement is never dearer than the node it replaces here: the pods fit the
    // smallest types the pool allows.
    assert!(
        cost.replacements_per_hour <= cost.drifting_per_hour,
        "{cost:?}"
    );
    // Nothing drifts: no cost.
    let mut limits = raw_pool(&list, "cap-limits").clone();
    limits["spec"]["limits"] = json!({"cpu": "1000"});
    assert!(impact(&c, &[proposed(&limits)], now()).nodepools[0]
        .cost
        .is_none());
}

#[test]
fn a_drifting_node_says_what_will_hold_its_replacement() {
    let (c, list) = capture("karpenter-v1.15.0");
    let raw = relabelled(&list, "cap-drift");
    let i = impact(&c, &[proposed(&raw)], now());
    let n = by_claim(&i);
    // The capture's blockers: a do-not-disrupt pod, a PDB allowing none, a node annotation.
    for (claim, words) in [
        ("cap-drift-9rn9l", "do-not-disrupt"),
        ("cap-drift-9tv29", "PDB"),
        ("cap-drift-kxngl", "the node has"),
    ] {
        assert!(
            n[claim].held_by.iter().any(|b| b.contains(words)),
            "{:?}",
            n[claim]
        );
    }
    // The node on the current hash has nothing of its own.
    assert!(
        n["cap-drift-x276c"].held_by.is_empty(),
        "{:?}",
        n["cap-drift-x276c"]
    );
}

#[test]
fn a_nomination_is_named_but_only_lasting_blockers_hold_a_node() {
    use crate::analysis::disruption::Blocker;
    use crate::karpenter::events::BlockerKind as K;
    let b = |kind| Blocker {
        kind,
        object: None,
        message: String::new(),
    };
    for k in [K::DoNotDisruptPod, K::DoNotDisruptNode, K::Pdb] {
        assert!(holds(&b(k)) && named(&b(k)), "{k:?}");
    }
    // A nomination passes in seconds (Karpenter's nomination window): named, not held.
    assert!(named(&b(K::Nominated)) && !holds(&b(K::Nominated)));
    // The budget is what the waves count.
    assert!(!named(&b(K::Budget)) && !holds(&b(K::Budget)));
}

/// An EC2NodeClass `default` (its hash stamped, version v6), a pool on it, and three
/// launched claims: one stamped with the class's hash, one stamped with an older one, one
/// not stamped at all.
const ON_A_CLASS: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata:
    name: default
    annotations: {karpenter.k8s.aws/ec2nodeclass-hash: "111", karpenter.k8s.aws/ec2nodeclass-hash-version: v6}
  spec:
    role: KarpenterNodeRole
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kelp}}]
    securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kelp}}]
    metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
    tags: {team: platform}
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: general}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, reserved]}]
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: stamped
    labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand}
    annotations: {karpenter.k8s.aws/ec2nodeclass-hash: "111", karpenter.k8s.aws/ec2nodeclass-hash-version: v6}
  status: {nodeName: n1, conditions: [{type: Launched, status: "True"}]}
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: older
    labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand}
    annotations: {karpenter.k8s.aws/ec2nodeclass-hash: "100", karpenter.k8s.aws/ec2nodeclass-hash-version: v6}
  status: {nodeName: n2, conditions: [{type: Launched, status: "True"}]}
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: unstamped
    labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: reserved}
  status: {nodeName: n3, conditions: [{type: Launched, status: "True"}]}
"#;

fn on_a_class() -> Cluster {
    let mut c = Cluster::default();
    crate::source::load_str("class.yaml", ON_A_CLASS, &mut c).unwrap();
    c
}

/// The class as a change leaves it: `edit` applied to its spec, the CRD's defaults in.
fn class_change(c: &Cluster, edit: impl FnOnce(&mut Value)) -> ProposedClass {
    let mut spec = c.nodeclasses[&("EC2NodeClass".into(), "default".into())]
        .spec
        .clone();
    edit(&mut spec);
    crate::karpenter::aws::nodeclass::with_defaults(&mut spec);
    ProposedClass {
        name: "default".into(),
        spec,
    }
}

#[test]
fn a_hashed_class_field_drifts_the_claims_stamped_with_its_hash() {
    let c = on_a_class();
    let change = class_change(&c, |s| s["tags"]["team"] = json!("data"));
    let i = impact_of(&c, &[], &[change], now(), WAVE_TIME);
    let class = &i.nodeclasses[0];
    assert!(class.hash_changes && !class.new);
    assert_eq!(class.nodepools, vec!["general"]);
    assert_eq!(
        class.changes,
        vec![FieldChange {
            field: "spec.tags".into(),
            drifts: "static"
        }]
    );
    let n = by_claim(&i);
    assert_eq!(n["stamped"].drift, Some(DriftReason::NodeClassDrift));
    // Stamped with another hash, or none: the hash does not judge them.
    assert_eq!(n["older"].drift, None);
    assert_eq!(n["unstamped"].drift, None);
    assert!(n.values().all(|n| n.unknown.is_none()));
    // The pool itself does not change, and its waves count the one drifting node.
    assert!(i.nodepools[0].changes.is_empty());
    assert_eq!(i.nodepools[0].drifting, 1);
}

#[test]
fn a_selector_ec2_resolves_is_unknown_and_one_no_hash_reads_drifts_nothing() {
    let c = on_a_class();
    let subnets = class_change(&c, |s| {
        s["subnetSelectorTerms"] = json!([{"id": "subnet-0123"}]);
    });
    let i = impact_of(&c, &[], &[subnets], now(), WAVE_TIME);
    assert!(!i.nodeclasses[0].hash_changes);
    assert_eq!(i.nodeclasses[0].changes[0].drifts, "provider");
    for n in &i.nodes {
        assert_eq!(n.drift, None);
        assert!(
            n.unknown.as_deref().unwrap().contains("SubnetDrift"),
            "{n:?}"
        );
    }
    // Capacity reservations only drift a node in one.
    let reservations = class_change(&c, |s| {
        s["capacityReservationSelectorTerms"] = json!([{"id": "cr-0123"}]);
    });
    let i = impact_of(&c, &[], &[reservations], now(), WAVE_TIME);
    let n = by_claim(&i);
    assert!(n["unstamped"].unknown.is_some());
    assert!(n["stamped"].unknown.is_none() && n["stamped"].drift.is_none());
    // Not hashed, not resolved: nothing.
    let prefixes = class_change(&c, |s| s["ipPrefixCount"] = json!(2));
    let i = impact_of(&c, &[], &[prefixes], now(), WAVE_TIME);
    assert_eq!(i.nodeclasses[0].changes[0].drifts, "nothing");
    assert!(i
        .nodes
        .iter()
        .all(|n| n.drift.is_none() && n.unknown.is_none()));
    // The CRD's defaults spelled out or left to the API server: the same class.
    let defaults = class_change(&c, |s| {
        s.as_object_mut().unwrap().remove("metadataOptions");
    });
    let i = impact_of(&c, &[], &[defaults], now(), WAVE_TIME);
    assert!(i.nodeclasses[0].changes.is_empty() && i.drifting() == 0);
}

#[test]
fn the_pools_own_drift_comes_before_its_classs() {
    let c = on_a_class();
    let mut raw = serde_json::to_value(&c.nodepools["general"]).unwrap();
    require(
        &mut raw,
        json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}),
    );
    raw["spec"]["template"]["spec"]["requirements"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let change = class_change(&c, |s| s["role"] = json!("OtherRole"));
    let i = impact_of(&c, &[proposed(&raw)], &[change], now(), WAVE_TIME);
    let n = by_claim(&i);
    assert_eq!(n["stamped"].drift, Some(DriftReason::RequirementsDrifted));
    assert_eq!(i.nodepools.len(), 1);
}

#[test]
fn a_launch_with_no_capacity_holds_the_pools_drifted_nodes_replacements() {
    let yaml = r#"
apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: general}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: general-old
    labels: {karpenter.sh/nodepool: general}
  status:
    nodeName: n1
    providerID: aws:///us-west-2a/i-1
    conditions: [{type: Launched, status: "True"}, {type: Initialized, status: "True"},
                 {type: Drifted, status: "True", reason: AMIDrift}]
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    labels: {karpenter.sh/nodepool: general, karpenter.sh/registered: "true", karpenter.sh/initialized: "true"}
  spec: {providerID: aws:///us-west-2a/i-1}
  status: {conditions: [{type: Ready, status: "True"}]}
- apiVersion: v1
  kind: Event
  metadata: {name: ice, namespace: default}
  reason: InsufficientCapacityError
  type: Warning
  source: {component: karpenter}
  involvedObject: {kind: NodeClaim, name: general-x7k2p, apiVersion: karpenter.sh/v1}
  message: 'NodeClaim general-x7k2p event: Failed to launch node, InsufficientInstanceCapacity'
  lastTimestamp: "2026-12-07T11:55:00Z"
"#;
    let mut c = Cluster::default();
    crate::source::load_str("ice.yaml", yaml, &mut c).unwrap();
    let pass = crate::analysis::run(&c, now());
    let pool = &c.nodepools["general"];
    let p = progress(&c, &pass.nodes, pool, now(), WAVE_TIME);
    assert_eq!(p.drifted, 1, "{p:?}");
    let why = p
        .no_capacity
        .as_deref()
        .expect("the launch's ICE holds the replacement");
    assert!(
        why.contains("general-x7k2p") && why.contains("5m ago"),
        "{why}"
    );
    assert!(p.held[0]
        .blockers
        .iter()
        .any(|b| b.starts_with("its replacement: ")));
    // Longer ago than 15 minutes, it holds nothing.
    let later = now() + Duration::minutes(30);
    let p = progress(&c, &pass.nodes, pool, later, WAVE_TIME);
    assert!(p.no_capacity.is_none());
}
