//! The lint rules: id, default severity, and the words `kelp lint --explain`, SARIF's rule
//! help and docs/lint.md are made from (why it matters, how to fix it, what kelp can and
//! cannot tell offline, and a bad and a good example).

use crate::findings::Severity;

/// One rule's description. The checks themselves live in `checks`.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// One line: what the rule flags.
    pub summary: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    /// What is approximate or assumed offline, if anything.
    pub offline: Option<&'static str>,
    pub bad: &'static str,
    pub good: &'static str,
}

pub const PARSE_ERROR: &str = "parse-error";

pub const RULES: &[Rule] = &[
    Rule {
        id: PARSE_ERROR,
        severity: Severity::Critical,
        summary: "A manifest file is not valid YAML or JSON",
        why: "A file that does not parse cannot be applied, and kelp cannot check anything in it.",
        fix: "Fix the syntax at the reported line (indentation, an unclosed bracket or quote, a tab used for indentation).",
        offline: None,
        bad: "spec:\n  limits:\n    cpu: [100\n",
        good: "spec:\n  limits:\n    cpu: \"100\"\n",
    },
    Rule {
        id: "deprecated-api-version",
        severity: Severity::Critical,
        summary: "A Karpenter object uses a removed API (v1beta1, v1alpha5, Provisioner, AWSNodeTemplate)",
        why: "Karpenter v1.1 and later serve NodePool and NodeClaim only as karpenter.sh/v1 and EC2NodeClass only as karpenter.k8s.aws/v1. A v1beta1 NodePool or EC2NodeClass, and the v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate and Machine kinds, are rejected by the API server or silently ignored. NodeOverlay is the exception: it is served only as karpenter.sh/v1alpha1, which is current and passes; any other version of it, karpenter.sh/v1 included, has never been served.",
        fix: "Migrate to v1: Provisioner becomes a karpenter.sh/v1 NodePool, AWSNodeTemplate becomes a karpenter.k8s.aws/v1 EC2NodeClass, and a v1beta1 NodePool/EC2NodeClass moves to v1 (nodeClassRef gains group and kind, expireAfter moves into spec.template.spec, consolidationPolicy WhenUnderutilized becomes WhenEmptyOrUnderutilized).",
        offline: None,
        bad: "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: default\n",
        good: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\n",
    },
    Rule {
        id: "nodepool-missing-limits",
        severity: Severity::Warning,
        summary: "A NodePool has no spec.limits",
        why: "Without limits a NodePool can grow without bound: a runaway Deployment, a bad HPA or a pod stuck in a crash-and-reschedule loop turns into an unbounded EC2 bill.",
        fix: "Set spec.limits to the most the pool should ever hold, at least cpu (and memory); kelp doctor warns when usage nears them.",
        offline: None,
        bad: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: general\nspec:\n  template:\n    spec: {...}\n",
        good: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: general\nspec:\n  limits:\n    cpu: \"400\"\n    memory: 1600Gi\n  template:\n    spec: {...}\n",
    },
    Rule {
        id: "consolidate-after-too-short",
        severity: Severity::Warning,
        summary: "WhenEmptyOrUnderutilized or Balanced consolidation with consolidateAfter under 5m",
        why: "With WhenEmptyOrUnderutilized (the default policy) or Balanced, both of which consolidate underutilized nodes, and a short consolidateAfter (0s when spec.disruption is left out), Karpenter replaces nodes as soon as a pod leaves (Balanced only when the move scores high enough), so bursty workloads churn nodes: pods are evicted again and again and new nodes pay their start-up cost each time.",
        fix: "Set spec.disruption.consolidateAfter to 5m or more (e.g. 10m), or use consolidationPolicy WhenEmpty for pools whose pods should not be moved.",
        offline: Some("A missing consolidationPolicy is read as WhenEmptyOrUnderutilized, and a missing spec.disruption as consolidateAfter 0s, Karpenter v1's defaults. A spec.disruption without consolidateAfter is defaulted to 0s from Karpenter v1.15; up to v1.14 the API server rejects it instead (disruption-missing-consolidate-after), so it is not this rule's. consolidateAfter: Never passes."),
        bad: "spec:\n  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 30s\n",
        good: "spec:\n  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 10m\n",
    },
    Rule {
        id: "disruption-missing-consolidate-after",
        severity: Severity::Critical,
        summary: "A NodePool sets spec.disruption without consolidateAfter, which the API server rejects up to Karpenter v1.14",
        why: "The NodePool CRD defaults a missing spec.disruption to consolidateAfter: 0s, but up to Karpenter v1.14, once spec.disruption is written, consolidateAfter is required in it: the API server rejects the NodePool (spec.disruption.consolidateAfter: Required value), whatever the consolidationPolicy, static pools included. From v1.15 the field is optional there and defaulted to 0s.",
        fix: "Set spec.disruption.consolidateAfter: a duration such as 10m (how long a node must be empty or underutilized before Karpenter consolidates it), or Never to turn consolidation off; or leave spec.disruption out to take every default (consolidateAfter 0s included).",
        offline: Some("Checked for the release given by --karpenter-version or karpenterVersion in .kelp.yaml; by default the newest kelp knows (v1.15), where it never fires. spec.disruption: null counts as left out: the API server drops the null and applies the default."),
        bad: "spec:\n  disruption:\n    consolidationPolicy: WhenEmpty\n    budgets:\n      - nodes: \"10%\"\n",
        good: "spec:\n  disruption:\n    consolidationPolicy: WhenEmpty\n    consolidateAfter: 10m\n    budgets:\n      - nodes: \"10%\"\n",
    },
    Rule {
        id: "spot-too-few-families",
        severity: Severity::Warning,
        summary: "Spot is allowed but fewer than 3 instance families are",
        why: "Spot capacity is reclaimed per instance pool. With one or two families Karpenter has few pools to choose from, so interruptions come often and launches fail with insufficient capacity; spread across families it can pick the deepest, cheapest pools.",
        fix: "Widen the pool: allow at least 3 instance families (for example instance-category In [c, m, r] with instance-generation Gt 5), or drop spot from this pool.",
        offline: Some("kelp counts families from the pool's requirements (instance-type, instance-family, instance-category, instance-generation, instance-size, instance-cpu, kubernetes.io/arch) against a built-in table of common EC2 families. It cannot see regional availability, and says nothing when the pool names a category or generation the table does not know. A pool without a karpenter.sh/capacity-type requirement allows spot: Karpenter has no default, so it admits every capacity type the instance types offer, and the AWS provider launches reserved, then spot, before on-demand."),
        bad: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot]\n  - key: karpenter.k8s.aws/instance-family\n    operator: In\n    values: [m5, m6i]\n",
        good: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot]\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n  - key: karpenter.k8s.aws/instance-generation\n    operator: Gt\n    values: [\"5\"]\n",
    },
    Rule {
        id: "spot-too-few-instance-types",
        severity: Severity::Warning,
        summary: "Spot is allowed but the requirements leave fewer than about 20 instance types",
        why: "Karpenter picks spot capacity with the price-capacity-optimized strategy across the types a pool allows. A short list (a few sizes of a few families) leaves it few pools, so spot launches fail or are interrupted far more often.",
        fix: "Allow more sizes and families: loosen instance-size / instance-cpu bounds, add families or categories, or list 20 or more instance types.",
        offline: Some("The count comes from kelp's built-in table of common EC2 types (sizes and vCPUs follow AWS's naming pattern), filtered by the pool's requirements; unknown instance types the pool lists count as allowed. It is an estimate: kelp stays silent when it cannot count (an unknown family, category or generation). Requirements on keys the table lacks (memory, GPU, network) only make the real set smaller. A pool without a capacity-type requirement allows spot (Karpenter has no default)."),
        bad: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot]\n  - key: node.kubernetes.io/instance-type\n    operator: In\n    values: [m5.large, m5.xlarge, c5.large, c5.xlarge, r5.large]\n",
        good: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot]\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n  - key: karpenter.k8s.aws/instance-cpu\n    operator: In\n    values: [\"4\", \"8\", \"16\"]\n",
    },
    Rule {
        id: "missing-min-values",
        severity: Severity::Info,
        summary: "A spot NodePool sets no minValues on its instance requirements",
        why: "Without minValues Karpenter may launch spot nodes when only one or two instance types still fit, concentrating interruptions. minValues makes it keep a floor of flexibility (e.g. at least 5 families) or not launch at all.",
        fix: "Add minValues to the instance-family or instance-type requirement (e.g. `key: karpenter.k8s.aws/instance-family`, `operator: Exists`, `minValues: 5`).",
        offline: Some("A pool without a karpenter.sh/capacity-type requirement counts as spot: Karpenter has no default, so it admits every capacity type, and the AWS provider launches spot before on-demand."),
        bad: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot, on-demand]\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n",
        good: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot, on-demand]\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n  - key: karpenter.k8s.aws/instance-family\n    operator: Exists\n    minValues: 5\n",
    },
    Rule {
        id: "budget-blocks-all",
        severity: Severity::Warning,
        summary: "A disruption budget of \"0\" with no schedule blocks every disruption reason",
        why: "nodes: \"0\" without a schedule is active all the time; without reasons it covers Underutilized, Empty and Drifted. Karpenter then never consolidates or replaces drifted nodes (AMI updates never roll out) and only expireAfter still recycles nodes.",
        fix: "Give the blocking budget a schedule and duration (a freeze window, e.g. business hours), or limit it to some reasons (e.g. reasons: [Underutilized]) so drift still rolls out.",
        offline: None,
        bad: "spec:\n  disruption:\n    budgets:\n      - nodes: \"0\"\n",
        good: "spec:\n  disruption:\n    budgets:\n      - nodes: \"10%\"\n      - nodes: \"0\"\n        schedule: \"0 9 * * mon-fri\"\n        duration: 8h\n",
    },
    Rule {
        id: "expire-after-never",
        severity: Severity::Warning,
        summary: "expireAfter: Never: nodes live forever",
        why: "Nodes that never expire keep old AMIs, kernels and kubelet versions until something else disrupts them, and long-lived nodes accumulate drift and leaks. A finite expireAfter (the default is 720h) guarantees rotation.",
        fix: "Set spec.template.spec.expireAfter to a duration (e.g. 720h), and terminationGracePeriod so expiry cannot hang on a blocked drain.",
        offline: None,
        bad: "spec:\n  template:\n    spec:\n      expireAfter: Never\n",
        good: "spec:\n  template:\n    spec:\n      expireAfter: 720h\n      terminationGracePeriod: 48h\n",
    },
    Rule {
        id: "burstable-instances-allowed",
        severity: Severity::Warning,
        summary: "The requirements allow burstable (t*) instance types",
        why: "Burstable types (t2, t3, t3a, t4g) run on CPU credits: Karpenter sizes nodes by their nominal vCPUs, but a busy node is throttled to its baseline once credits run out, so pods slow down for no visible reason.",
        fix: "Exclude them, e.g. `key: karpenter.k8s.aws/instance-category`, `operator: NotIn`, `values: [t]`, or list categories with In.",
        offline: Some("kelp checks the pool's requirements against its built-in table of EC2 families."),
        bad: "requirements:\n  - key: kubernetes.io/arch\n    operator: In\n    values: [amd64]\n",
        good: "requirements:\n  - key: kubernetes.io/arch\n    operator: In\n    values: [amd64]\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n  - key: karpenter.k8s.aws/instance-generation\n    operator: Gt\n    values: [\"4\"]\n",
    },
    Rule {
        id: "old-generation-allowed",
        severity: Severity::Warning,
        summary: "The requirements allow old-generation instance types (generation 4 or older: m4, c4, r4, ...)",
        why: "Generation 4 and older compute, general-purpose and memory types (and other Xen-era families) run on older CPUs and the Xen hypervisor: slower per dollar, without Nitro features, and being retired. Karpenter may still pick them when they are cheapest on paper.",
        fix: "Add `key: karpenter.k8s.aws/instance-generation`, `operator: Gt`, `values: [\"4\"]` (or list newer families, or exclude the old ones with instance-family NotIn).",
        offline: Some("kelp checks the pool's requirements against its built-in table of EC2 families and flags c, m and r families of generation 4 or older (c3, c4, m3, m4, r3, r4) and the Xen-era t2, d2, i3, x1 and x1e. The generation digit means little across categories (i4i, d3, x2gd are current), so other families, accelerated ones included, are left alone."),
        bad: "requirements:\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n",
        good: "requirements:\n  - key: karpenter.k8s.aws/instance-category\n    operator: In\n    values: [c, m, r]\n  - key: karpenter.k8s.aws/instance-generation\n    operator: Gt\n    values: [\"4\"]\n",
    },
    Rule {
        id: "ami-alias-latest",
        severity: Severity::Warning,
        summary: "An EC2NodeClass selects its AMI with an @latest alias",
        why: "alias: al2023@latest (or bottlerocket@latest) follows every new AMI release: each release drifts every node of the class and Karpenter replaces them all, untested, at a time nobody chose. In production, pin a version and roll it forward deliberately.",
        fix: "Pin the alias to a version (e.g. al2023@v20250715) or select AMIs by id, and bump it through your normal change process. Use .kelp.yaml to ignore this rule for development environments.",
        offline: Some("kelp cannot tell production from development: it flags every @latest alias of al2, al2023 and bottlerocket; ignore the rule per path in .kelp.yaml. Windows aliases (windows2019, windows2022, windows2025) pass: the API server accepts them only at @latest, so there is no version to pin (select AMIs by id or tags to pin Windows)."),
        bad: "spec:\n  amiSelectorTerms:\n    - alias: al2023@latest\n",
        good: "spec:\n  amiSelectorTerms:\n    - alias: al2023@v20250715\n",
    },
    Rule {
        id: "imds-not-locked",
        severity: Severity::Warning,
        summary: "IMDS is not locked down: httpTokens not required, or hop limit above 1",
        why: "IMDSv1 (httpTokens: optional) answers unauthenticated requests, the classic SSRF path to a node's IAM credentials; a hop limit above 1 lets every pod reach the node's instance metadata and role.",
        fix: "Set spec.metadataOptions.httpTokens: required and httpPutResponseHopLimit: 1 (Karpenter v1's defaults), and give pods their own IAM roles (Pod Identity or IRSA).",
        offline: Some("A missing metadataOptions passes: Karpenter v1 defaults it to required tokens and hop limit 1."),
        bad: "spec:\n  metadataOptions:\n    httpTokens: optional\n    httpPutResponseHopLimit: 2\n",
        good: "spec:\n  metadataOptions:\n    httpEndpoint: enabled\n    httpTokens: required\n    httpPutResponseHopLimit: 1\n",
    },
    Rule {
        id: "ebs-not-encrypted",
        severity: Severity::Warning,
        summary: "A block device mapping's EBS volume is not encrypted",
        why: "Once an EC2NodeClass sets blockDeviceMappings, Karpenter's encrypted default is gone: a volume without encrypted: true is encrypted only if the account turned on EBS encryption by default. Node root volumes hold container images, logs and emptyDir data.",
        fix: "Set ebs.encrypted: true on every mapping (and kmsKeyID for a customer-managed key).",
        offline: Some("kelp cannot see the account's EBS-encryption-by-default setting; it asks for encrypted: true in the manifest."),
        bad: "spec:\n  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100Gi\n        volumeType: gp3\n",
        good: "spec:\n  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100Gi\n        volumeType: gp3\n        encrypted: true\n",
    },
    Rule {
        id: "nodeclassref-incomplete",
        severity: Severity::Critical,
        summary: "A NodePool's nodeClassRef is missing, or lacks group, kind or name",
        why: "karpenter.sh/v1 requires spec.template.spec.nodeClassRef with group, kind and name; without them the API server rejects the NodePool (a v1beta1-style ref with only a name is the usual cause).",
        fix: "Set all three, e.g. group: karpenter.k8s.aws, kind: EC2NodeClass, name: default.",
        offline: None,
        bad: "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: default\n",
        good: "spec:\n  template:\n    spec:\n      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n",
    },
    Rule {
        id: "nodeclass-not-found",
        severity: Severity::Warning,
        summary: "A NodePool references an EC2NodeClass that is not among the linted manifests",
        why: "A NodePool whose node class does not exist is never Ready (NodeClassReady=False, NodeClassNotFound): Karpenter launches nothing from it, and pods that only fit it stay Pending.",
        fix: "Fix the name in nodeClassRef, or add the EC2NodeClass to the manifests.",
        offline: Some("Only checked when the linted set contains at least one node class of that kind: kelp then assumes the classes are managed alongside the pools. Ignore the rule in .kelp.yaml if they live elsewhere."),
        bad: "# nodepool.yaml\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: defualt}\n# nodeclass.yaml\nkind: EC2NodeClass\nmetadata:\n  name: default\n",
        good: "# nodepool.yaml\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n# nodeclass.yaml\nkind: EC2NodeClass\nmetadata:\n  name: default\n",
    },
    Rule {
        id: "startup-taint-without-remover",
        severity: Severity::Warning,
        summary: "A startupTaint that nothing in the manifests is seen to remove",
        why: "Karpenter puts startupTaints on new nodes and expects another agent (a CNI, a CSI driver, a device plugin) to remove them. Until it does, the node is not Initialized: pods wait, and Karpenter neither counts the node nor consolidates it. A startup taint under karpenter.sh/ is never removed by Karpenter itself.",
        fix: "Make sure an agent removes the taint: deploy it (its DaemonSet must tolerate the taint) or drop the startupTaint.",
        offline: Some("Heuristic: the taint passes when a DaemonSet or other workload in the linted set tolerates its key by name, or tolerates every taint with a keyless operator: Exists (of the taint's effect, if it names one): the agent must run on the tainted node to remove it. Taints under karpenter.sh/ always fail. kelp cannot see agents installed outside the manifests: suppress with `# kelp:ignore startup-taint-without-remover` where you know one runs."),
        bad: "spec:\n  template:\n    spec:\n      startupTaints:\n        - key: karpenter.sh/not-ready\n          effect: NoSchedule\n",
        good: "spec:\n  template:\n    spec:\n      startupTaints:\n        - key: node.cilium.io/agent-not-ready\n          value: \"true\"\n          effect: NoExecute\n# and the Cilium agent DaemonSet, which tolerates node.cilium.io/agent-not-ready\n",
    },
    Rule {
        id: "nodepool-weight-tie",
        severity: Severity::Warning,
        summary: "Two NodePools with the same weight whose requirements overlap",
        why: "Karpenter tries pools by weight, highest first, and breaks ties by name. When two overlapping pools share a weight, which one a pod lands on depends on their names, not on intent, and renaming a pool silently changes where capacity comes from.",
        fix: "Give the preferred pool a higher spec.weight, or make the pools' requirements disjoint (e.g. different capacity types or a dedicated label and taint).",
        offline: Some("Overlap is computed with Karpenter's requirement semantics on spec.template.spec.requirements: two pools overlap when every key both define shares at least one value. A missing weight counts as 0."),
        bad: "# two pools, both without spec.weight, both allowing amd64 on-demand\n",
        good: "# the preferred pool gets spec.weight: 50, the other keeps 0\n",
    },
    Rule {
        id: "spot-without-on-demand-fallback",
        severity: Severity::Warning,
        summary: "A spot-only NodePool has no on-demand pool to fall back to",
        why: "When spot capacity runs out (a regional shortage, an interruption wave), a spot-only pool cannot launch and its pods stay Pending. A pool that allows both spot and on-demand, or a lower-weight on-demand pool with overlapping requirements, lets Karpenter fall back.",
        fix: "Allow on-demand in the same pool (capacity-type In [spot, on-demand]: Karpenter prefers spot), or add an on-demand pool whose requirements overlap and whose taints the same pods tolerate.",
        offline: Some("Cross-file: every NodePool in the linted set is a candidate fallback. A fallback must allow on-demand, overlap the spot pool's other requirements, and carry no taint the spot pool lacks."),
        bad: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot]\n# and no other pool allows on-demand\n",
        good: "requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [spot, on-demand]\n",
    },
    Rule {
        id: "do-not-disrupt-without-grace-period",
        severity: Severity::Warning,
        summary: "Pods annotated karpenter.sh/do-not-disrupt: \"true\" may land on a NodePool without terminationGracePeriod",
        why: "A do-not-disrupt pod holds its node for as long as it runs: a drifted node (AMI and config updates) is never replaced, and an expired node, which Karpenter deletes anyway, waits in its drain for the pod for ever. A terminationGracePeriod on the NodeClaim bounds both: drift goes ahead, and the pod is deleted when the period ends. Consolidation stays held whatever the period. A NodeClaim keeps the period it was created with, so setting it on the NodePool helps the nodes created after.",
        fix: "Set spec.template.spec.terminationGracePeriod (e.g. 24h) on the NodePools these pods can run on, or give the annotation a duration (Karpenter v1.12+, e.g. \"4h\").",
        offline: Some("kelp checks Pods and the pod templates of Deployments, StatefulSets, ReplicaSets, DaemonSets, Jobs and CronJobs against the NodePools in the linted set whose taints and requirements admit them; with no NodePool in the set it says nothing."),
        bad: "# Deployment\n  template:\n    metadata:\n      annotations:\n        karpenter.sh/do-not-disrupt: \"true\"\n# NodePool without spec.template.spec.terminationGracePeriod\n",
        good: "# the NodePool\n  template:\n    spec:\n      terminationGracePeriod: 24h\n",
    },
];

/// A rule by id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Every rule id, for messages.
pub fn ids() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

/// The text of `kelp lint --explain RULE`.
pub fn explain(r: &Rule) -> String {
    let indent = |s: &str| s.lines().map(|l| format!("    {l}\n")).collect::<String>();
    let mut out = format!(
        "{} ({})\n{}\n\nWhy\n  {}\n\nFix\n  {}\n",
        r.id, r.severity, r.summary, r.why, r.fix
    );
    if let Some(o) = r.offline {
        out.push_str(&format!("\nWhat kelp can tell offline\n  {o}\n"));
    }
    out.push_str(&format!(
        "\nBad\n{}\nGood\n{}",
        indent(r.bad),
        indent(r.good)
    ));
    out
}

/// The help text SARIF carries for a rule (GitHub shows it beside each alert).
pub fn help_markdown(r: &Rule) -> String {
    let mut out = format!("**Why.** {}\n\n**Fix.** {}\n", r.why, r.fix);
    if let Some(o) = r.offline {
        out.push_str(&format!("\n**Offline.** {o}\n"));
    }
    out.push_str(&format!(
        "\nBad:\n\n```yaml\n{}```\n\nGood:\n\n```yaml\n{}```\n",
        r.bad, r.good
    ));
    out
}

pub fn help_text(r: &Rule) -> String {
    let mut out = format!("Why: {}\nFix: {}", r.why, r.fix);
    if let Some(o) = r.offline {
        out.push_str(&format!("\nOffline: {o}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_examples_end_with_newlines() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RULES {
            assert!(seen.insert(r.id), "duplicate {}", r.id);
            assert!(r.bad.ends_with('\n') && r.good.ends_with('\n'), "{}", r.id);
            assert!(explain(r).contains("Bad\n"));
        }
    }
}
