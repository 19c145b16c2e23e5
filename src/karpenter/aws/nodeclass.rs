//! The AWS provider's EC2NodeClass rules (karpenter-provider-aws v1.15): the conditions
//! its Ready depends on and what each reason its controllers write means; the drift
//! reasons, core's and the provider's, in the order they are checked; and the static
//! drift of an EC2NodeClass change (`karpenter.k8s.aws/ec2nodeclass-hash`, hash version
//! v6): which fields its hash reads, and how (hashstructure v2 with slices as sets, zero
//! values ignored, nil as zero).

use serde_json::{Map, Value};

/// The conditions an EC2NodeClass's Ready depends on, in the provider's order
/// (`CapacityReservationsReady` only where capacity reservations are enabled).
pub const CONDITIONS: &[&str] = &[
    "AMIsReady",
    "SubnetsReady",
    "SecurityGroupsReady",
    "InstanceProfileReady",
    "ValidationSucceeded",
    "PlacementGroupReady",
    "CapacityReservationsReady",
];

/// Each reason the provider's EC2NodeClass controllers set a condition False (or
/// Unknown) with, and what to do about it.
pub const REASONS: &[(&str, &str, &str)] = &[
    ("AMIsReady", "AMINotFound", "amiSelectorTerms match no AMI the controller can see: check each term's id, name, owner and tags, and that the AMI is in this region"),
    ("AMIsReady", "UnsupportedAlias", "the alias names an AMI family or version the controller cannot resolve: check amiSelectorTerms' alias (family@latest or family@vYYYYMMDD)"),
    ("SubnetsReady", "SubnetsNotFound", "subnetSelectorTerms match no subnet: check the terms' tags (e.g. karpenter.sh/discovery) or ids, and that the controller may call ec2:DescribeSubnets"),
    ("SecurityGroupsReady", "SecurityGroupsNotFound", "securityGroupSelectorTerms match no security group: check the terms' tags, ids or names, and that the controller may call ec2:DescribeSecurityGroups"),
    ("PlacementGroupReady", "PlacementGroupNotFound", "placementGroupSelector names a placement group that does not exist in this region"),
    ("PlacementGroupReady", "PlacementGroupResolutionFailed", "the controller could not look up the placement group: check its ec2:DescribePlacementGroups permission"),
    ("ValidationSucceeded", "DependenciesNotReady", "waiting for the AMIs, the instance profile, the security groups and the subnets to resolve: see the condition among them that is not True"),
    ("ValidationSucceeded", "CreateFleetAuthCheckFailed", "the controller is not authorized to call ec2:CreateFleet for this class (a dry run failed): check its IAM policy and any tag conditions"),
    ("ValidationSucceeded", "CreateLaunchTemplateAuthCheckFailed", "the controller is not authorized to call ec2:CreateLaunchTemplate for this class (a dry run failed): check its IAM policy and any tag conditions"),
    ("ValidationSucceeded", "RunInstancesAuthCheckFailed", "the controller is not authorized to call ec2:RunInstances for this class (a dry run failed): check its IAM policy, any tag conditions and iam:PassRole on the node role"),
    ("ValidationSucceeded", "InstanceProfileNotFound", "the instance profile named in spec.instanceProfile (or made for spec.role) does not exist yet"),
    ("ValidationSucceeded", "TagValidationFailed", "spec.tags uses a key the controller owns (kubernetes.io/cluster/..., karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name): remove it"),
    ("ValidationSucceeded", "InvalidKubeletConfiguration", "spec.kubelet does not read as a kubelet configuration: fix the named field"),
    ("ValidationSucceeded", "UnsupportedKubeletConfiguration", "spec.kubelet sets a field this AMI family cannot pass to its kubelet: only AL2023 takes arbitrary kubelet settings"),
    ("ValidationSucceeded", "KubeletExpressionsDisabled", "spec.kubelet holds a CEL expression but the controller's NodeClassCEL feature gate is off: turn it on or write a value"),
    ("ValidationSucceeded", "KubeletExpressionInvalid", "a CEL expression in spec.kubelet does not compile: fix it"),
    ("ValidationSucceeded", "KubeletExpressionEvaluationFailed", "a CEL expression in spec.kubelet fails or goes negative for some instance type: fix it"),
    ("ValidationSucceeded", "DryRunDisabled", "the controller's dry-run validation is off, so it cannot validate this class"),
    ("ValidationSucceeded", "UserDataSizeLimitExceeded", "ec2:CreateLaunchTemplate rejected the rendered user data as too large: shorten spec.userData"),
    ("ValidationSucceeded", "NVIDIAConsumableCapacityInvalid", "the NVIDIA consumable-capacity annotation does not read: fix its value"),
    ("ValidationSucceeded", "DRADisabled", "the NVIDIA consumable-capacity annotation asks for GPU sharing but the controller's DRANVIDIAGPU feature gate is off"),
    ("ValidationSucceeded", "ClusterCIDRResolutionFailed", "the controller could not find the cluster's service CIDR (eks:DescribeCluster): check its permission, or set it"),
    ("*", "AwaitingReconciliation", "the controller has not reconciled this condition yet: is it running, and can it reach AWS?"),
    ("Ready", "UnhealthyDependents", "a condition Ready depends on is False: see it"),
    ("Ready", "ReconcilingDependents", "a condition Ready depends on is not settled yet"),
];

/// What a condition's reason means and what to do, if the provider sets it.
pub fn advice(condition: &str, reason: &str) -> Option<&'static str> {
    REASONS
        .iter()
        .find(|(c, r, _)| (*c == condition || *c == "*") && *r == reason)
        .map(|(_, _, a)| *a)
}

/// Every drift reason a NodeClaim's Drifted condition can carry on AWS, in the order
/// Karpenter checks them (the first that holds is the one it sets), with what it means.
pub const DRIFT_REASONS: &[(&str, &str)] = &[
    (
        "NodePoolDrifted",
        "the NodePool's template changed since the node was launched",
    ),
    (
        "RequirementsDrifted",
        "the node's labels no longer meet the NodePool's requirements",
    ),
    (
        "InstanceTypeNotFound",
        "its instance type, or an offering in its zone and capacity type, is no longer offered",
    ),
    (
        "NodeClassDrift",
        "a field of the EC2NodeClass that its hash reads changed since the node was launched",
    ),
    (
        "AMIDrift",
        "the node's AMI is no longer among the EC2NodeClass's resolved AMIs for its instance type",
    ),
    (
        "SecurityGroupDrift",
        "the instance's security groups are not exactly the EC2NodeClass's resolved ones",
    ),
    (
        "SubnetDrift",
        "the instance's subnet is not among the EC2NodeClass's resolved subnets",
    ),
    (
        "CapacityReservationDrift",
        "the instance's capacity reservation is not among the EC2NodeClass's resolved ones",
    ),
    (
        "PlacementGroupDrift",
        "the instance's placement group is not the one the EC2NodeClass resolves to",
    ),
];

/// What a drift reason means, if kelp knows it.
pub fn drift_meaning(reason: &str) -> Option<&'static str> {
    DRIFT_REASONS
        .iter()
        .find(|(r, _)| *r == reason)
        .map(|(_, m)| *m)
}

/// The family an EC2NodeClass resolves to (`AMIFamily()`): `spec.amiFamily` as written,
/// else the family of its first alias term (the provider's spelling), else Custom. An
/// alias of a family the provider does not know (validation forbids it) is kept as is.
pub fn ami_family_name(spec: &Value) -> String {
    if let Some(f) = spec.get("amiFamily").and_then(Value::as_str) {
        return f.to_string();
    }
    let alias = spec
        .get("amiSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|t| {
            t.get("alias")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
        });
    let Some(alias) = alias else {
        return "Custom".to_string();
    };
    let family = alias.split('@').next().unwrap_or_default();
    [
        "AL2",
        "AL2023",
        "Bottlerocket",
        "Windows2019",
        "Windows2022",
        "Windows2025",
    ]
    .into_iter()
    .find(|f| f.to_ascii_lowercase() == family)
    .map_or_else(|| family.to_string(), str::to_string)
}

/// Spec fields the hash does not read as fields (the kubelet is read as its JSON text).
const IGNORED: &[&str] = &[
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "ipPrefixCount",
    "amiSelectorTerms",
    "amiFamily",
    "kubelet",
];

/// Fields that are Go values, not pointers: their zero value is not hashed, as if unset.
const VALUE_FIELDS: &[&str] = &[
    "role",
    "rootVolume",
    "enabled",
    "networkCardIndex",
    "deviceIndex",
    "interfaceType",
];

/// Maps (hashed key by key, whatever their values), not structs.
const MAPS: &[&str] = &["tags"];

/// Quantities: hashed by their value and their format (binary, decimal, exponent), not
/// their spelling (`20Gi` is `20480Mi`, but not `21474836480`).
const QUANTITIES: &[&str] = &["volumeSize"];

/// What of an EC2NodeClass's spec its hash reads, in a form where two specs hash alike
/// exactly when this is equal.
pub fn hashed(spec: &Value) -> Value {
    let mut fields = Map::new();
    if let Some(obj) = spec.as_object() {
        for (k, v) in obj {
            if IGNORED.contains(&k.as_str()) {
                continue;
            }
            if let Some(v) = normal(k, v) {
                fields.insert(k.clone(), v);
            }
        }
    }
    let kubelet = spec
        .get("kubelet")
        .filter(|k| k.as_object().is_some_and(|m| !m.is_empty()))
        .cloned()
        .unwrap_or(Value::Null);
    serde_json::json!({
        "spec": fields,
        "amiFamily": ami_family_name(spec),
        "kubelet": kubelet,
    })
}

/// A field's value as the hash sees it; None where it is not hashed at all.
fn normal(key: &str, v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        _ if VALUE_FIELDS.contains(&key) && is_zero(v) => None,
        _ if MAPS.contains(&key) => Some(v.clone()),
        Value::String(q) if QUANTITIES.contains(&key) => Some(quantity(q)),
        Value::Object(m) => Some(Value::Object(
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), normal(k, v)?)))
                .collect(),
        )),
        Value::Array(items) => {
            // A set: order does not count.
            let mut items: Vec<Value> = items.iter().filter_map(|i| normal("", i)).collect();
            items.sort_by_cached_key(Value::to_string);
            Some(Value::Array(items))
        }
        _ => Some(v.clone()),
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn quantity(q: &str) -> Value {
    let format = if q.ends_with("Ki")
        || q.ends_with("Mi")
        || q.ends_with("Gi")
        || q.ends_with("Ti")
        || q.ends_with("Pi")
        || q.ends_with("Ei")
    {
        "BinarySI"
    } else if q.rfind(['e', 'E']).is_some_and(|i| {
        i + 1 < q.len()
            && q[i + 1..]
                .trim_start_matches(['+', '-'])
                .chars()
                .all(|c| c.is_ascii_digit())
    }) {
        "DecimalExponent"
    } else {
        "DecimalSI"
    };
    match super::super::resources::quantity_value(q) {
        Ok(v) => serde_json::json!({"value": v, "format": format}),
        // A spelling that does not read: compared as written.
        Err(_) => Value::String(q.to_string()),
    }
}

/// Whether changing an EC2NodeClass's spec from `before` to `after` changes its hash,
/// which drifts every NodeClaim launched from it (NodeClassDrift).
pub fn static_drift(before: &Value, after: &Value) -> bool {
    hashed(before) != hashed(after)
}

/// The API server's defaults for an EC2NodeClass spec (the CRD's): `metadataOptions`,
/// whole or field by field. A manifest is compared as the cluster will store it.
pub fn with_defaults(spec: &mut Value) {
    let Some(obj) = spec.as_object_mut() else {
        return;
    };
    let defaults = [
        ("httpEndpoint", serde_json::json!("enabled")),
        ("httpProtocolIPv6", serde_json::json!("disabled")),
        ("httpPutResponseHopLimit", serde_json::json!(1)),
        ("httpTokens", serde_json::json!("required")),
    ];
    let meta = obj
        .entry("metadataOptions")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(m) = meta.as_object_mut() {
        for (k, v) in defaults {
            m.entry(k).or_insert(v);
        }
    }
}
