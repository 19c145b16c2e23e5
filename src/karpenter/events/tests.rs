use super::*;
use proptest::prelude::*;

const OVERHEAD: &str = r#"{"cpu":"605m","memory":"1288Mi","pods":"12"}"#;

fn seg(
    category: Category,
    nodepool: Option<&str>,
    message: &str,
    subject: Option<&str>,
) -> Segment {
    Segment {
        category,
        nodepool: nodepool.map(str::to_string),
        message: message.to_string(),
        subject: subject.map(str::to_string),
    }
}

#[test]
fn wrapped_v1_0_names_each_pool() {
    let msg = format!(
            "Failed to schedule pod, incompatible with nodepool \"gpu\", daemonset overhead={OVERHEAD}, did not tolerate nvidia.com/gpu=1:NoSchedule; \
             incompatible with nodepool \"app\", daemonset overhead={OVERHEAD}, incompatible requirements, label \"eks.amazonaws.com/nodegroup\" does not have known values"
        );
    let parsed = parse_failed_scheduling(&msg);
    assert_eq!(parsed.format, MessageFormat::Wrapped);
    assert_eq!(
            parsed.segments,
            vec![
                seg(Category::Taints, Some("gpu"), "did not tolerate nvidia.com/gpu=1:NoSchedule", Some("nvidia.com/gpu=1:NoSchedule")),
                seg(
                    Category::Requirements,
                    Some("app"),
                    "incompatible requirements, label \"eks.amazonaws.com/nodegroup\" does not have known values",
                    Some("eks.amazonaws.com/nodegroup"),
                ),
            ]
        );
}

#[test]
fn wrapped_several_taints_and_limits_keep_their_pools() {
    let msg = "Failed to schedule pod, incompatible with nodepool \"gpu\", daemonset overhead={}, did not tolerate nvidia.com/gpu:NoSchedule; did not tolerate dedicated=ml:NoExecute; \
                   incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"200m\"}, no instance type satisfied resources {\"cpu\":\"64\"} and requirements karpenter.sh/capacity-type In [on-demand spot], karpenter.sh/nodepool In [default] (no instance type has enough resources); \
                   all available instance types exceed limits for nodepool: \"batch\"";
    let parsed = parse_failed_scheduling(msg);
    assert_eq!(parsed.format, MessageFormat::Wrapped);
    let got: Vec<_> = parsed
        .segments
        .iter()
        .map(|s| (s.category, s.nodepool.as_deref(), s.subject.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Category::Taints,
                Some("gpu"),
                Some("nvidia.com/gpu:NoSchedule")
            ),
            (
                Category::Taints,
                Some("gpu"),
                Some("dedicated=ml:NoExecute")
            ),
            (Category::InstanceTypes, Some("default"), None),
            (Category::Limits, Some("batch"), None),
        ]
    );
}

#[test]
fn v1_3_limits_alone_is_the_wrapped_era() {
    let parsed = parse_failed_scheduling(
        "Failed to schedule pod, all available instance types exceed limits for nodepool \"batch\"",
    );
    assert_eq!(parsed.format, MessageFormat::Wrapped);
    assert_eq!(parsed.segments[0].category, Category::Limits);
    assert_eq!(parsed.segments[0].nodepool.as_deref(), Some("batch"));
}

#[test]
fn flat_v1_5_names_only_limit_pools() {
    let msg = "Failed to schedule pod, did not tolerate taint (taint=msp.stripe.io/availability-tier=A400:NoSchedule); did not tolerate taint (taint=CriticalAddonsOnly:NoSchedule); \
                   incompatible requirements, label \"zone\" does not have known values (typo of \"topology.kubernetes.io/zone\"?); \
                   no instance type met the scheduling requirements or had a required offering, requirements=coder In [workspace], karpenter.sh/nodepool In [coder-workspace], topology.kubernetes.io/zone DoesNotExist, resources={\"cpu\":\"4180m\",\"memory\":\"6264Mi\",\"pods\":\"7\"}; \
                   all available instance types exceed limits for nodepool (NodePool=batch); node limits have been exhausted for nodepool (NodePool=static)";
    let parsed = parse_failed_scheduling(msg);
    assert_eq!(parsed.format, MessageFormat::Flat);
    let got: Vec<_> = parsed
        .segments
        .iter()
        .map(|s| (s.category, s.nodepool.as_deref(), s.subject.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Category::Taints,
                None,
                Some("msp.stripe.io/availability-tier=A400:NoSchedule")
            ),
            (
                Category::Taints,
                None,
                Some("CriticalAddonsOnly:NoSchedule")
            ),
            (Category::Requirements, None, Some("zone")),
            (Category::InstanceTypes, None, None),
            (Category::Limits, Some("batch"), None),
            (Category::Limits, Some("static"), None),
        ]
    );
    assert_eq!(
            parsed.segments[2].message,
            "incompatible requirements, label \"zone\" does not have known values (typo of \"topology.kubernetes.io/zone\"?)"
        );
}

#[test]
fn min_values_with_curly_apostrophes_names_its_pool() {
    let parsed = parse_failed_scheduling(
            "Failed to schedule pod, pod didn’t schedule because NodePool couldn’t meet minValues requirements, minValues requirement is not met for label(s) (label(s)=[karpenter.k8s.aws/instance-family]) (NodePool=spot-pool)",
        );
    assert_eq!(parsed.format, MessageFormat::Flat);
    assert_eq!(parsed.segments.len(), 1);
    assert_eq!(parsed.segments[0].category, Category::InstanceTypes);
    assert_eq!(parsed.segments[0].nodepool.as_deref(), Some("spot-pool"));
    let quoted = parse_failed_scheduling("Failed to schedule pod, pod didn’t schedule because NodePool \"spot\" couldn’t meet minValues requirements, min requirement not met for karpenter.k8s.aws/instance-family");
    assert_eq!(quoted.format, MessageFormat::Wrapped);
    assert_eq!(quoted.segments[0].nodepool.as_deref(), Some("spot"));
}

#[test]
fn categories_of_the_other_reason_phrases() {
    let cases = [
            ("incompatible requirements, key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-west-2d] not in topology.kubernetes.io/zone In [us-west-2a us-west-2b]", Category::Requirements, Some("topology.kubernetes.io/zone")),
            ("incompatible volume requirements, key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-west-2d] not in topology.kubernetes.io/zone In [us-west-2a]", Category::Volumes, None),
            ("failed to validate pvc, provisioner is not supported (PersistentVolumeClaim=default/data, Provisioner=x, StorageClass=gp2)", Category::Volumes, None),
            ("unsatisfiable topology constraint for pod anti-affinity, key=kubernetes.io/hostname (counts = map[], podDomains = kubernetes.io/hostname Exists, nodeDomains = kubernetes.io/hostname In [a b]", Category::Topology, None),
            ("no instance type has enough resources (CPU request >= 1 Million, m vs M typo?), requirements=kubernetes.io/arch In [amd64], resources={\"cpu\":\"2M\"}", Category::InstanceTypes, None),
            ("nodepool requirements filtered out all available instance types", Category::InstanceTypes, None),
            ("key foo has an unsupported operator Foo not in [In NotIn Exists DoesNotExist Gt Lt]", Category::Validation, None),
            ("configured to not run on a Karpenter provisioned node via the karpenter.sh/nodepool DoesNotExist requirement", Category::Validation, None),
            ("pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter", Category::Other, None),
            ("checking host port usage, host port 80 is in use", Category::Other, None),
        ];
    for (text, category, subject) in cases {
        let parsed = parse_failed_scheduling(&format!("Failed to schedule pod, {text}"));
        assert_eq!(
            parsed.segments,
            vec![seg(category, None, text, subject)],
            "{text}"
        );
    }
}

#[test]
fn restricted_label_error_stays_one_segment() {
    let first = "using label karpenter.sh/foo is not allowed as it might interfere with the internal provisioning logic; specify a well known label: [kubernetes.io/arch], or a custom label that does not use a restricted domain: [karpenter.sh]";
    let second = "key foo with operator In must have a value defined";
    let parsed = parse_failed_scheduling(&format!("Failed to schedule pod, {first}; {second}"));
    assert_eq!(
        parsed.segments,
        vec![
            seg(Category::Validation, None, first, None),
            seg(Category::Validation, None, second, None)
        ]
    );
}

#[test]
fn foreign_message_is_unknown_but_still_read() {
    let parsed = parse_failed_scheduling("0/3 nodes are available: 3 Insufficient cpu.");
    assert_eq!(parsed.format, MessageFormat::Unknown);
    assert_eq!(
        parsed.segments,
        vec![seg(
            Category::Other,
            None,
            "0/3 nodes are available: 3 Insufficient cpu.",
            None
        )]
    );
    assert!(parse_failed_scheduling("").segments.is_empty());
}

#[test]
fn truncated_messages_keep_what_is_whole() {
    let cut_json = parse_failed_scheduling("Failed to schedule pod, incompatible with nodepool \"gpu\", daemonset overhead={\"cpu\":\"605m\",\"mem");
    assert_eq!(cut_json.format, MessageFormat::Wrapped);
    assert!(cut_json.segments.is_empty());
    assert!(
        parse_failed_scheduling("Failed to schedule pod, incompatible with nodepool \"gp")
            .segments
            .is_empty()
    );

    let cut_taint = parse_failed_scheduling(&format!(
            "Failed to schedule pod, incompatible with nodepool \"gpu\", daemonset overhead={OVERHEAD}, did not tolerate nvidia.com/gpu=1:NoSch"
        ));
    assert_eq!(
        cut_taint.segments,
        vec![seg(
            Category::Taints,
            Some("gpu"),
            "did not tolerate nvidia.com/gpu=1:NoSch",
            None
        )]
    );

    for (text, category) in [
        (
            "did not tolerate taint (taint=foo=bar:NoSche",
            Category::Taints,
        ),
        (
            "all available instance types exceed limits for nodepool (NodePool=bat",
            Category::Limits,
        ),
        (
            "incompatible requirements, label \"eks.amazonaws.com/nod",
            Category::Requirements,
        ),
    ] {
        let parsed = parse_failed_scheduling(&format!(
            "Failed to schedule pod, did not tolerate taint (taint=a:NoSchedule); {text}"
        ));
        assert_eq!(parsed.segments.len(), 2);
        assert_eq!(
            parsed.segments[1],
            seg(category, None, text, None),
            "{text}"
        );
    }
}

#[test]
fn serialises_in_kebab_case_without_subject() {
    let parsed = parse_failed_scheduling("Failed to schedule pod, no instance type has the required offering, requirements=a In [b], resources={}");
    let json = serde_json::to_string(&parsed).unwrap_or_default();
    assert!(json.contains(r#""format":"flat""#), "{json}");
    assert!(json.contains(r#""category":"instance-types""#), "{json}");
    assert!(json.contains(r#""nodepool":null"#), "{json}");
    assert!(!json.contains("subject"), "{json}");
    assert_eq!(
        serde_json::to_string(&Category::NodepoolNotReady).unwrap_or_default(),
        r#""nodepool-not-ready""#
    );
    assert_eq!(
        serde_json::to_string(&BlockerKind::DoNotDisruptPod).unwrap_or_default(),
        r#""do-not-disrupt-pod""#
    );
}

#[test]
fn nominations() {
    assert_eq!(
        parse_nominated("Pod should schedule on: nodeclaim/default-abc, node/ip-1-2-3-4"),
        vec![
            NominationTarget::NodeClaim("default-abc".into()),
            NominationTarget::Node("ip-1-2-3-4".into())
        ]
    );
    assert_eq!(
        parse_nominated("Pod should schedule on: nodeclaim/default-abc"),
        vec![NominationTarget::NodeClaim("default-abc".into())]
    );
    assert_eq!(
        parse_nominated("Pod should schedule on node: ip-10-0-0-1"),
        vec![NominationTarget::Node("ip-10-0-0-1".into())]
    );
    assert_eq!(
        parse_nominated("Pod should schedule on: nodeclaim/, bogus"),
        vec![]
    );
    assert_eq!(parse_nominated("Status condition transitioned"), vec![]);
}

fn blocker(message: &str) -> (BlockerKind, Option<String>, Option<String>) {
    let parsed = parse_disruption_blocked(message);
    (parsed.kind, parsed.namespace, parsed.name)
}

fn some(ns: Option<&str>, name: Option<&str>) -> (Option<String>, Option<String>) {
    (ns.map(str::to_string), name.map(str::to_string))
}

#[test]
fn disruption_blockers_all_versions() {
    use BlockerKind::*;
    let cases: &[(&str, BlockerKind, Option<&str>, Option<&str>)] = &[
        (
            r#"Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=world-chain/builder-0)"#,
            DoNotDisruptPod,
            Some("world-chain"),
            Some("builder-0"),
        ),
        (
            r#"pod has "karpenter.sh/do-not-disrupt" annotation (Pod=a/b)"#,
            DoNotDisruptPod,
            Some("a"),
            Some("b"),
        ),
        (
            r#"Cannot disrupt Node: pod "default/web-0" has "karpenter.sh/do-not-disrupt" annotation"#,
            DoNotDisruptPod,
            Some("default"),
            Some("web-0"),
        ),
        (
            r#"(combined from similar events): Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=x/y)"#,
            DoNotDisruptPod,
            Some("x"),
            Some("y"),
        ),
        (
            "Pdb prevents pod evictions (PodDisruptionBudget=[kube-system/ebs-csi-controller])",
            Pdb,
            Some("kube-system"),
            Some("ebs-csi-controller"),
        ),
        (
            "Pdb prevents pod evictions (PodDisruptionBudget=kube-system/coredns)",
            Pdb,
            Some("kube-system"),
            Some("coredns"),
        ),
        (
            r#"Cannot disrupt NodeClaim: pdb "kube-system/coredns" prevents pod evictions"#,
            Pdb,
            Some("kube-system"),
            Some("coredns"),
        ),
        (
            r#"PDB "kube-system/coredns" prevents pod evictions"#,
            Pdb,
            Some("kube-system"),
            Some("coredns"),
        ),
        (
            "Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[ns/a ns/b])",
            Pdb,
            Some("ns"),
            Some("a"),
        ),
        (
            "Pdb prevents pod evictions (PodDisruptionBudget=[kube-system/ebs-cs",
            Pdb,
            None,
            None,
        ),
        (
            r#"Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation"#,
            DoNotDisruptNode,
            None,
            None,
        ),
        (
            r#"Cannot disrupt Node: disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation"#,
            DoNotDisruptNode,
            None,
            None,
        ),
        ("Node is nominated for a pending pod", Nominated, None, None),
        (
            "Cannot disrupt NodeClaim: state node is nominated for a pending pod",
            Nominated,
            None,
            None,
        ),
        ("Node isn't initialized", NotInitialized, None, None),
        (
            "Cannot disrupt Node: state node isn't initialized",
            NotInitialized,
            None,
            None,
        ),
        (
            "Nodeclaim does not have an associated node",
            NotInitialized,
            None,
            None,
        ),
        (
            "NodePool not found (NodePool=default)",
            NodepoolMissing,
            None,
            Some("default"),
        ),
        (
            r#"NodePool "gone" not found"#,
            NodepoolMissing,
            None,
            Some("gone"),
        ),
        (
            "No allowed disruptions for disruption reason Drifted due to blocking budget",
            Budget,
            None,
            None,
        ),
        (
            "No allowed disruptions due to blocking budget",
            Budget,
            None,
            None,
        ),
        (
            "Node is deleting or marked for deletion",
            Deleting,
            None,
            None,
        ),
        ("Node isn't managed by karpenter", Other, None, None),
        (
            "Node doesn't have required label (label=karpenter.sh/nodepool)",
            Other,
            None,
            None,
        ),
        (r#"Instance type "m5.large" not found"#, Other, None, None),
    ];
    for (message, kind, ns, name) in cases {
        let (ns, name) = some(*ns, *name);
        assert_eq!(blocker(message), (*kind, ns, name), "{message}");
    }
    assert_eq!(
        parse_disruption_blocked("Cannot disrupt Node: state node isn't initialized").message,
        "state node isn't initialized"
    );
}

#[test]
fn launch_error_insufficient_capacity_skips_suggested_zones() {
    let full = "NodeClaim gpu-l4-x7k2q event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient g6e.2xlarge capacity in the Availability Zone you requested (eu-central-1b). Our system will be working on provisioning additional capacity. You can currently get g6e.2xlarge capacity by not specifying an Availability Zone in your request or choosing eu-central-1a, eu-central-1c.";
    let cut = "NodeClaim mc-gpu-txjc8 event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient g6e.2xlarge capacity in the Availability Zone you requested (eu-central-1b). Our system will be working on provisioning additional capacity. You can currently get g6e.2xla...";
    for message in [full, cut] {
        let parsed = parse_launch_error(message);
        assert_eq!(parsed.code.as_deref(), Some("InsufficientInstanceCapacity"));
        assert_eq!(parsed.instance_types, vec!["g6e.2xlarge"]);
        assert_eq!(parsed.zones, vec!["eu-central-1b"]);
        assert_eq!(parsed.capacity_type, None);
        assert!(parsed.hint.is_some_and(|h| h.contains("widen")));
    }
}

#[test]
fn launch_error_codes_and_hints() {
    let unfulfillable = parse_launch_error("NodeClaim spot-p-d8rwv event: creating nodeclaim, creating instance, insufficient capacity, with fleet error(s), UnfulfillableCapacity: Unable to fulfill capacity due to your request configuration. Please adjust your request and try again. (aws-error-code=UnfulfillableCapacity, aws-operation-name=CreateFleet, aws-request-id=49c1...");
    assert_eq!(unfulfillable.code.as_deref(), Some("UnfulfillableCapacity"));

    let unavailable = parse_launch_error("NodeClaim default-abcde event: insufficient capacity, all requested instance types were unavailable during launch");
    assert_eq!(unavailable.code, None);
    assert!(unavailable.hint.is_some_and(|h| h.contains("widen")));

    let iam = parse_launch_error("creating instance failed, operation error EC2: CreateFleet, https response error StatusCode: 403, RequestID: 1f2e, api error UnauthorizedOperation: You are not authorized to perform this operation. Encoded authorization failure message: xyz");
    assert_eq!(iam.code.as_deref(), Some("UnauthorizedOperation"));
    assert!(iam.hint.is_some_and(|h| h.contains("IAM")));

    let subnet = parse_launch_error("launching nodeclaim, creating instance, with fleet error(s), InvalidParameterValue: Value (subnet-0abc) for parameter subnetId is invalid");
    assert_eq!(subnet.code.as_deref(), Some("InvalidParameterValue"));
    assert!(subnet.hint.is_some_and(|h| h.contains("discovery")));

    let spot = parse_launch_error("insufficient capacity, with fleet error(s), MaxSpotInstanceCountExceeded: Max spot instance count exceeded; VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU limit of 32 allows");
    assert_eq!(spot.code.as_deref(), Some("MaxSpotInstanceCountExceeded"));
    assert_eq!(spot.capacity_type.as_deref(), Some("spot"));
    assert!(spot.hint.is_some_and(|h| h.contains("spot instance quota")));

    let slr = parse_launch_error("with fleet error(s), AuthFailure.ServiceLinkedRoleCreationNotPermitted: The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances.");
    assert_eq!(
        slr.code.as_deref(),
        Some("AuthFailure.ServiceLinkedRoleCreationNotPermitted")
    );
    assert!(slr.hint.is_some_and(|h| h.contains("service-linked")));

    let unsupported = parse_launch_error("with fleet error(s), Unsupported: Your requested instance type (m7i.large) is not supported in your requested Availability Zone (us-east-1e). Please retry your request by not specifying an Availability Zone or choosing us-east-1a, us-east-1b.");
    assert_eq!(
        (unsupported.instance_types, unsupported.zones),
        (
            vec!["m7i.large".to_string()],
            vec!["us-east-1e".to_string()]
        )
    );

    let kv = parse_launch_error(
        r#"InsufficientCapacityError for {"instanceType": "c5.large", "availabilityZone": "test-zone-1a", "capacityType": "spot"}"#,
    );
    assert_eq!(kv.instance_types, vec!["c5.large"]);
    assert_eq!(kv.zones, vec!["test-zone-1a"]);
    assert_eq!(kv.capacity_type.as_deref(), Some("spot"));

    let not_ready = parse_launch_error(
        "NodeClaim default-x event: NodeClassRef not ready, EC2NodeClass default is not ready",
    );
    assert!(not_ready.hint.is_some_and(|h| h.contains("EC2NodeClass")));
    assert_eq!(parse_launch_error("something else entirely").hint, None);
}

#[test]
fn interruption_reasons() {
    for reason in [
        "SpotInterrupted",
        "InstanceTerminating",
        "SpotRebalanceRecommendation",
        "CapacityReservationInstanceInterrupted",
    ] {
        let reason = Reason::parse(reason).unwrap();
        assert!(SPOT_INTERRUPTION_REASONS.contains(&reason));
    }
    assert!(!SPOT_INTERRUPTION_REASONS.contains(&Reason::DisruptionBlocked));
}

const FRAGMENTS: &[&str] = &[
    "incompatible with nodepool \"",
    "gpu",
    "\", daemonset overhead=",
    "{\"cpu\":\"605m\",\"memory\":\"1288Mi\"}",
    "{",
    "}",
    "\"",
    ", ",
    "; ",
    "did not tolerate ",
    "taint (taint=a=b:NoSchedule)",
    "k:NoExecute",
    "all available instance types exceed limits for nodepool: \"",
    "(NodePool=",
    ")",
    "label \"",
    "\" does not have known values",
    "key ",
    " not in ",
    "no instance type has enough resources",
    "specify a well known label",
    "didn’t",
    "é",
    "İ",
];

fn check(input: &str) {
    let parsed = parse_failed_scheduling(input);
    for segment in &parsed.segments {
        assert!(!segment.message.is_empty());
        assert!(
            input.contains(&segment.message),
            "{:?} not in {input:?}",
            segment.message
        );
        if let Some(pool) = &segment.nodepool {
            assert!(input.contains(pool.as_str()));
        }
    }
}

proptest! {
    #[test]
    fn never_panics_and_segments_are_substrings(s in ".*") {
        check(&s);
        check(&format!("{FAILED_PREFIX}{s}"));
        prop_assert_ne!(parse_failed_scheduling(&format!("{FAILED_PREFIX}{s}")).format, MessageFormat::Unknown);
    }

    #[test]
    fn wrapper_fragments_never_panic(picks in prop::collection::vec(0..FRAGMENTS.len(), 0..24), cut in any::<prop::sample::Index>()) {
        let full: String = std::iter::once(FAILED_PREFIX)
            .chain(picks.iter().filter_map(|&i| FRAGMENTS.get(i).copied()))
            .collect();
        let boundaries: Vec<usize> = full.char_indices().map(|(i, _)| i).chain(std::iter::once(full.len())).collect();
        let at = boundaries.get(cut.index(boundaries.len())).copied().unwrap_or(full.len());
        check(&full);
        check(full.get(..at).unwrap_or(""));
    }

    #[test]
    fn other_parsers_never_panic(s in ".*") {
        let blocked = parse_disruption_blocked(&s);
        prop_assert!(s.contains(&blocked.message));
        let launch = parse_launch_error(&s);
        for found in launch.instance_types.iter().chain(&launch.zones) {
            prop_assert!(s.contains(found.as_str()));
        }
        for target in parse_nominated(&s) {
            let (NominationTarget::Node(name) | NominationTarget::NodeClaim(name)) = target;
            prop_assert!(s.contains(&name));
        }
    }
}
