//! Unit tests of the checks, on small manifests linted with [`crate::lint::lint_str`].

use crate::findings::Severity;
use crate::lint::{lint, lint_str, Config, Input, LintResult};

/// The results of `rule` when `text` is linted as one file.
fn hits(text: &str, rule: &str) -> Vec<LintResult> {
    lint_str("t.yaml", text)
        .results
        .into_iter()
        .filter(|r| r.rule == rule)
        .collect()
}

/// The results of `rule` when `text` is linted for Karpenter `release`.
fn hits_for(text: &str, rule: &str, release: &str) -> Vec<LintResult> {
    let mut config = Config::default();
    config.karpenter_version = Some(release.parse().unwrap());
    lint(&[Input::new("t.yaml", text)], &config)
        .results
        .into_iter()
        .filter(|r| r.rule == rule)
        .collect()
}

#[test]
fn node_overlay_is_current_at_v1alpha1() {
    // karpenter.sh_nodeoverlays.yaml (v1.14.1) serves NodeOverlay only as v1alpha1.
    let overlay = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: cheaper\nspec:\n  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [spot]\n  priceAdjustment: \"-10%\"\n";
    assert!(hits(overlay, "deprecated-api-version").is_empty());
    let node_pool = "apiVersion: karpenter.sh/v1alpha1\nkind: NodePool\nmetadata:\n  name: old\n";
    let h = hits(node_pool, "deprecated-api-version");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].severity, Severity::Critical);
    // No other version of NodeOverlay has ever been served, karpenter.sh/v1 included.
    let h = hits(&overlay.replace("v1alpha1", "v1"), "deprecated-api-version");
    assert_eq!(h.len(), 1);
    assert!(h[0].message.contains("does not serve"), "{}", h[0].message);
}

fn node_class(alias: &str) -> String {
    format!("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: c\nspec:\n  role: KarpenterNodeRole\n  subnetSelectorTerms:\n    - tags: {{karpenter.sh/discovery: prod}}\n  securityGroupSelectorTerms:\n    - tags: {{karpenter.sh/discovery: prod}}\n  amiSelectorTerms:\n    - alias: {alias}\n")
}

#[test]
fn windows_aliases_can_only_be_latest_so_they_are_not_flagged() {
    // The CRD's CEL: windows2019, windows2022 and windows2025 may only specify 'latest'.
    for family in ["windows2019", "windows2022", "windows2025"] {
        let text = node_class(&format!("{family}@latest"));
        assert!(hits(&text, "ami-alias-latest").is_empty(), "{family}");
    }
    for family in ["al2", "al2023", "bottlerocket"] {
        let text = node_class(&format!("{family}@latest"));
        assert_eq!(hits(&text, "ami-alias-latest").len(), 1, "{family}");
    }
}

fn node_pool(disruption: &str, requirements: &str) -> String {
    format!("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: p\nspec:\n  limits: {{cpu: \"100\"}}\n{disruption}  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n      requirements:\n{requirements}")
}

const TWO_FAMILIES: &str = "        - key: karpenter.k8s.aws/instance-family\n          operator: In\n          values: [m5, m6i]\n";

#[test]
fn a_pool_without_a_capacity_type_requirement_can_launch_spot() {
    // Karpenter has no default: an undefined capacity-type admits every capacity type,
    // and the AWS provider launches reserved, then spot, before on-demand.
    let text = node_pool("", TWO_FAMILIES);
    for rule in [
        "spot-too-few-families",
        "spot-too-few-instance-types",
        "missing-min-values",
    ] {
        let h = hits(&text, rule);
        assert_eq!(h.len(), 1, "{rule}");
        assert!(h[0].message.contains("capacity-type"), "{}", h[0].message);
    }
    // Not spot-only: no on-demand fallback is needed.
    assert!(hits(&text, "spot-without-on-demand-fallback").is_empty());
    // An explicit on-demand pool stays out of the spot rules.
    let on_demand = format!("        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n{TWO_FAMILIES}");
    let text = node_pool("", &on_demand);
    assert!(hits(&text, "spot-too-few-families").is_empty());
    assert!(hits(&text, "missing-min-values").is_empty());
}

const ON_DEMAND: &str = "        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n";

#[test]
fn consolidate_after_defaults_to_0s_only_when_disruption_is_absent() {
    // No spec.disruption: the CRD defaults it to {consolidateAfter: 0s}.
    let text = node_pool("", ON_DEMAND);
    let h = hits(&text, "consolidate-after-too-short");
    assert_eq!(h.len(), 1);
    assert!(
        h[0].message.contains("spec.disruption is not set"),
        "{}",
        h[0].message
    );
    assert!(hits(&text, "disruption-missing-consolidate-after").is_empty());
    // spec.disruption without consolidateAfter: up to v1.14 required by the CRD, the API
    // server rejects the NodePool (whatever the policy, static or not).
    for disruption in [
        "  disruption:\n    budgets:\n      - nodes: \"10%\"\n",
        "  disruption:\n    consolidationPolicy: WhenEmpty\n",
        "  disruption: {}\n",
    ] {
        let text = node_pool(disruption, ON_DEMAND);
        for old in ["v1.9.0", "1.14", "v1.14.3"] {
            let short = hits_for(&text, "consolidate-after-too-short", old);
            assert!(short.is_empty(), "{disruption}");
            let h = hits_for(&text, "disruption-missing-consolidate-after", old);
            assert_eq!(h.len(), 1, "{disruption}");
            assert_eq!(h[0].severity, Severity::Critical);
            assert_eq!(h[0].line, 7, "at spec.disruption");
            assert!(h[0].message.contains("rejects"), "{}", h[0].message);
        }
        // From v1.15 (and by default, the newest release kelp knows) it is defaulted to 0s.
        for new in [Some("v1.15.0"), None] {
            let h = match new {
                Some(r) => hits_for(&text, "disruption-missing-consolidate-after", r),
                None => hits(&text, "disruption-missing-consolidate-after"),
            };
            assert!(h.is_empty(), "{disruption} {new:?}: {h:?}");
        }
        let short = hits(&text, "consolidate-after-too-short");
        let policy_consolidates = !disruption.contains("WhenEmpty\n");
        assert_eq!(
            short.len(),
            usize::from(policy_consolidates),
            "{disruption}"
        );
        if let Some(s) = short.first() {
            assert!(
                s.message
                    .contains("not set, and Karpenter v1.15 defaults it to 0s"),
                "{}",
                s.message
            );
            assert_eq!(s.line, 7, "at spec.disruption");
        }
    }
    // null is pruned before defaulting: the 0s default applies.
    let text = node_pool("  disruption: null\n", ON_DEMAND);
    assert!(hits(&text, "disruption-missing-consolidate-after").is_empty());
    assert_eq!(hits(&text, "consolidate-after-too-short").len(), 1);
}

fn gated_pool_and_agent(tolerations: &str) -> String {
    format!("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: gated\nspec:\n  limits: {{cpu: \"100\"}}\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n      startupTaints:\n        - key: example.com/agent-not-ready\n          value: \"true\"\n          effect: NoExecute\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  template:\n    spec:\n      tolerations:\n{tolerations}      containers:\n        - name: agent\n          image: example.com/agent:v1\n")
}

#[test]
fn a_keyless_exists_toleration_tolerates_every_startup_taint_of_its_effect() {
    let rule = "startup-taint-without-remover";
    // An empty key with operator Exists matches every key, value and (without an effect)
    // every effect.
    let all = gated_pool_and_agent("        - operator: Exists\n");
    assert!(hits(&all, rule).is_empty());
    let same_effect =
        gated_pool_and_agent("        - operator: Exists\n          effect: NoExecute\n");
    assert!(hits(&same_effect, rule).is_empty());
    // With another effect it does not tolerate this taint.
    let other_effect =
        gated_pool_and_agent("        - operator: Exists\n          effect: NoSchedule\n");
    assert_eq!(hits(&other_effect, rule).len(), 1);
    let unrelated =
        gated_pool_and_agent("        - key: example.com/other\n          operator: Exists\n");
    assert_eq!(hits(&unrelated, rule).len(), 1);
}

#[test]
fn balanced_consolidation_churns_on_a_short_consolidate_after_too() {
    // v1.14's Balanced policy consolidates underutilized (non-empty) nodes as well.
    let rule = "consolidate-after-too-short";
    let balanced = "  disruption:\n    consolidationPolicy: Balanced\n    consolidateAfter: 30s\n";
    let h = hits(&node_pool(balanced, ON_DEMAND), rule);
    assert_eq!(h.len(), 1);
    assert!(h[0].message.contains("Balanced"), "{}", h[0].message);
    let empty = "  disruption:\n    consolidationPolicy: WhenEmpty\n    consolidateAfter: 30s\n";
    assert!(hits(&node_pool(empty, ON_DEMAND), rule).is_empty());
}

#[test]
fn a_static_pool_without_a_grace_period_is_exposed_to_do_not_disrupt_pods_too() {
    // StaticDrift holds a node for a do-not-disrupt pod as Drift does (v1.14.1
    // disruption/staticdrift.go goes through the same candidate checks).
    let text = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: fixed\nspec:\n  replicas: 3\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: batch\n  annotations:\n    karpenter.sh/do-not-disrupt: \"true\"\nspec:\n  containers: [{name: c, image: busybox}]\n";
    let h = hits(text, "do-not-disrupt-without-grace-period");
    assert_eq!(h.len(), 1, "{h:?}");
    assert!(h[0].message.contains("fixed"), "{}", h[0].message);
}
