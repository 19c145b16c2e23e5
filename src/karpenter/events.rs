//! Parsers for the free text Karpenter writes into core/v1 Events.
//!
//! This module owns the text-level knowledge of Karpenter's event messages, for every v1.x shape
//! (v1.0 .. v1.14): `FailedScheduling` (split into categorised segments, in the v1.0-v1.4
//! wrapped format and the v1.5+ flat format), `Nominated`, `DisruptionBlocked` (node-, pod- and
//! NodePool-level blockers), launch failures on NodeClaims (`InsufficientCapacityError`, AWS
//! fleet and API errors) and the interruption event reasons. Every parser is total: any input,
//! truncated or foreign, yields a best-effort answer and never panics.

use regex::Regex;
use serde::Serialize;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Why a NodePool rejected a pod, as kelp's findings name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    NodepoolNotReady,
    Limits,
    Taints,
    Requirements,
    Volumes,
    Topology,
    InstanceTypes,
    Validation,
    Other,
}

/// The shape of a `FailedScheduling` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MessageFormat {
    /// v1.0-v1.4: each NodePool's errors wrapped in `incompatible with nodepool "x", ...`.
    Wrapped,
    /// v1.5+: no wrapper; only limit and minValues errors name their NodePool. (A v1.0-v1.4
    /// message in which no error names a NodePool, e.g. a validation error, reads the same.)
    Flat,
    /// Not a `Failed to schedule pod, ...` message.
    Unknown,
}

/// One reason out of a `FailedScheduling` message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub category: Category,
    /// Named by the wrapper (v1.0-v1.4), by `(NodePool=x)` or by the limits text; else `None`.
    pub nodepool: Option<String>,
    /// The segment's own text, trimmed, wrapper removed (always a substring of the input).
    pub message: String,
    /// Taints: the taint as `key=value:Effect` or `key:Effect`; requirements: the label key.
    #[serde(skip)]
    pub subject: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedScheduling {
    pub format: MessageFormat,
    pub segments: Vec<Segment>,
}

const FAILED_PREFIX: &str = "Failed to schedule pod, ";
const WRAPPER: &str = "incompatible with nodepool \"";

re!(OLD_LIMITS_POOL = r#"limits for nodepool:? "([^"]+)""#);
re!(QUOTED_MINVALUES_POOL = r#"NodePool "([^"]+)" couldn"#);
re!(STRUCTURED_POOL = r#"NodePool=([^\s,;()"\[\]]+)[\s,;)]"#);
re!(TAINT_STRUCTURED = r"did not tolerate taint \(taint=([^\s()]+)\)");
re!(TAINT_PLAIN = r"did not tolerate (\S+)");
re!(TAINT_SHAPE = r"^([^\s=:]+)(?:=([^\s:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$");
re!(LABEL_KEY = r#"label "([^"]+)" does not have known values"#);
re!(REQUIREMENT_KEY = r"(?:^|, )key ([^\s,]+), ");
re!(INVALID_VALUE = r"(?i)\binvalid value \S* ?for key ");

/// Splits a `FailedScheduling` message into categorised segments, one per error Karpenter joined
/// with `"; "`. In the wrapped format a segment without its own wrapper belongs to the NodePool
/// of the wrapper before it (one NodePool can contribute several errors, e.g. several taints).
pub fn parse_failed_scheduling(message: &str) -> FailedScheduling {
    let (body, prefixed) = match message.split_once(FAILED_PREFIX) {
        Some((_, body)) => (body, true),
        None => (message, false),
    };
    let format = if !prefixed {
        MessageFormat::Unknown
    } else if body.contains(WRAPPER)
        || OLD_LIMITS_POOL.is_match(body)
        || QUOTED_MINVALUES_POOL.is_match(body)
    {
        MessageFormat::Wrapped
    } else {
        MessageFormat::Flat
    };
    let parts = split_parts(body);
    let last = parts.len().saturating_sub(1);
    let mut current_pool: Option<String> = None;
    let mut segments = Vec::new();
    for (index, part) in parts.into_iter().enumerate() {
        let (wrapper_pool, text) = match part.strip_prefix(WRAPPER) {
            Some(rest) => {
                let (pool, text) = unwrap_nodepool(rest);
                current_pool = pool.clone();
                (pool, text)
            }
            None => (None, part),
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let (category, subject) = classify(text);
        let explicit = explicit_pool(text, index < last);
        let nodepool = explicit.or(wrapper_pool).or_else(|| {
            (format == MessageFormat::Wrapped && category != Category::Limits)
                .then(|| current_pool.clone())
                .flatten()
        });
        segments.push(Segment {
            category,
            nodepool,
            message: text.to_string(),
            subject,
        });
    }
    FailedScheduling { format, segments }
}

/// One reason without the requirements and resources Karpenter lists after an
/// instance-type error (`..., requirements=..., resources={...}`): the words a reader needs.
pub fn without_requirements(reason: &str) -> &str {
    reason.split(", requirements=").next().unwrap_or(reason)
}

/// Splits on `"; "`, re-joining the continuation of the one Karpenter error that itself contains
/// `"; "` (the restricted-label validation error).
pub fn split_parts(body: &str) -> Vec<&str> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let ends = body
        .match_indices("; ")
        .map(|(at, _)| at)
        .chain(std::iter::once(body.len()));
    for end in ends {
        let piece = body.get(start..end).unwrap_or("").trim_start();
        match ranges.last_mut() {
            Some(prev) if piece.starts_with("specify a well known label") => prev.1 = end,
            _ => ranges.push((start, end)),
        }
        start = end + 2;
    }
    ranges
        .into_iter()
        .filter_map(|(from, to)| body.get(from..to))
        .map(str::trim)
        .collect()
}

/// Reads `x", daemonset overhead={...}, <error>` (the text after the wrapper's opening quote).
/// Returns the pool (None when its name was cut off) and the wrapped error (empty when cut off).
fn unwrap_nodepool(rest: &str) -> (Option<String>, &str) {
    let Some((name, after)) = rest.split_once('"') else {
        return (None, "");
    };
    let pool = (!name.is_empty()).then(|| name.to_string());
    let Some(overhead) = after.strip_prefix(", daemonset overhead=") else {
        return (pool, after.trim_start_matches(", "));
    };
    if !overhead.starts_with('{') {
        return (pool, overhead.split_once(", ").map_or("", |(_, text)| text));
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (at, c) in overhead.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let tail = overhead.get(at + 1..).unwrap_or("");
                    return (pool, tail.strip_prefix(", ").unwrap_or(tail));
                }
            }
            _ => {}
        }
    }
    (pool, "")
}

/// The NodePool a segment names itself: limits (all versions), node limits and minValues errors.
/// A structured `NodePool=x` at the very end of a part only counts when the part is `complete`
/// (followed by another part), so a truncated name is never reported.
fn explicit_pool(text: &str, complete: bool) -> Option<String> {
    let probe: Cow<str> = if complete {
        Cow::Owned(format!("{text};"))
    } else {
        Cow::Borrowed(text)
    };
    [
        &*OLD_LIMITS_POOL,
        &*QUOTED_MINVALUES_POOL,
        &*STRUCTURED_POOL,
    ]
    .iter()
    .find_map(|re| re.captures(&probe))
    .and_then(|caps| caps.get(1))
    .map(|m| m.as_str().to_string())
}

/// Categorises one segment; also returns its subject (taint or label key) where it has one.
fn classify(text: &str) -> (Category, Option<String>) {
    let lower = text.to_lowercase();
    let has = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
    let category = if has(&["exceed limits for", "limits have been exhausted"]) {
        Category::Limits
    } else if has(&[
        "is not allowed as it might interfere",
        "unsupported operator",
        "is not a qualified name",
        "must have a value defined",
        "must have a single positive integer value",
        "no valid values found in",
        "matchfields is not supported",
        "configured to not run on a karpenter provisioned node",
        "unsupported topology key",
    ]) || INVALID_VALUE.is_match(text)
    {
        Category::Validation
    } else if has(&["did not tolerate"]) {
        Category::Taints
    } else if has(&[
        "incompatible volume requirements",
        "persistentvolumeclaim",
        "persistent volume",
        "failed to validate pvc",
        "unbound pvc",
        "pvc is considered unbound",
        "storage class",
        // v1.15: the CSI attach limit of every instance type a new claim could be.
        "would exceed volume limit",
    ]) {
        Category::Volumes
    } else if has(&["dynamic resource"]) {
        Category::Other
    } else if has(&["incompatible requirements", "does not have known values"])
        || REQUIREMENT_KEY.is_match(text)
    {
        Category::Requirements
    } else if has(&[
        "no instance type",
        "minvalues requirement",
        "meet minvalues",
        "minvalues incompatibility",
        "min requirement not met",
        "filtered out all",
    ]) {
        Category::InstanceTypes
    } else if has(&["unsatisfiable topology constraint"]) {
        Category::Topology
    } else if has(&[
        "no dynamic nodepools found",
        "nodeclassref not ready",
        "nodepool not ready",
    ]) {
        Category::NodepoolNotReady
    } else {
        Category::Other
    };
    let subject = match category {
        Category::Taints => taint_subject(text),
        Category::Requirements => [&*LABEL_KEY, &*REQUIREMENT_KEY]
            .iter()
            .find_map(|re| re.captures(text))
            .and_then(|caps| caps.get(1))
            .map(|m| m.as_str().to_string()),
        _ => None,
    };
    (category, subject)
}

/// `did not tolerate taint (taint=k=v:E)` (v1.5+), `did not tolerate k=v:E` (v1.0-v1.4).
fn taint_subject(text: &str) -> Option<String> {
    let raw = TAINT_STRUCTURED
        .captures(text)
        .or_else(|| TAINT_PLAIN.captures(text))
        .and_then(|caps| caps.get(1))?
        .as_str();
    let caps = TAINT_SHAPE.captures(raw)?;
    let key = caps.get(1)?.as_str();
    let effect = caps.get(3)?.as_str();
    Some(
        match caps.get(2).map(|v| v.as_str()).filter(|v| !v.is_empty()) {
            Some(value) => format!("{key}={value}:{effect}"),
            None => format!("{key}:{effect}"),
        },
    )
}

/// Where a `Nominated` event says the pod will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NominationTarget {
    NodeClaim(String),
    Node(String),
}

/// Parses `Pod should schedule on: nodeclaim/a, node/b` (and the older `... on node: b`).
pub fn parse_nominated(message: &str) -> Vec<NominationTarget> {
    let (list, bare_is_node) = if let Some((_, rest)) = message.split_once("schedule on node:") {
        (rest, true)
    } else if let Some((_, rest)) = message.split_once("schedule on:") {
        (rest, false)
    } else {
        return Vec::new();
    };
    list.split(',')
        .map(str::trim)
        .filter_map(|item| {
            if let Some(name) = item.strip_prefix("nodeclaim/") {
                Some(NominationTarget::NodeClaim(name.to_string()))
            } else if let Some(name) = item.strip_prefix("node/") {
                Some(NominationTarget::Node(name.to_string()))
            } else {
                bare_is_node.then(|| NominationTarget::Node(item.to_string()))
            }
        })
        .filter(|target| match target {
            NominationTarget::NodeClaim(name) | NominationTarget::Node(name) => {
                !name.is_empty() && !name.contains(char::is_whitespace)
            }
        })
        .collect()
}

/// What keeps a node (or a NodePool) from being disrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockerKind {
    DoNotDisruptPod,
    DoNotDisruptNode,
    Pdb,
    Budget,
    Nominated,
    NotInitialized,
    NodepoolMissing,
    /// The node is being deleted already (v1.15 checks this before initialization).
    Deleting,
    Other,
}

impl BlockerKind {
    /// The name it serialises to (`do-not-disrupt-pod`, `pdb`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DoNotDisruptPod => "do-not-disrupt-pod",
            Self::DoNotDisruptNode => "do-not-disrupt-node",
            Self::Pdb => "pdb",
            Self::Budget => "budget",
            Self::Nominated => "nominated",
            Self::NotInitialized => "not-initialized",
            Self::NodepoolMissing => "nodepool-missing",
            Self::Deleting => "deleting",
            Self::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedBlocker {
    pub kind: BlockerKind,
    pub namespace: Option<String>,
    /// The pod (DoNotDisruptPod), the first PDB (Pdb) or the NodePool (NodepoolMissing).
    pub name: Option<String>,
    /// The blocker text without the v1.0-v1.1 `Cannot disrupt Node: ` style prefix.
    pub message: String,
}

re!(BLOCKER_PREFIX =
    r"(?i)^(?:\(combined from similar events\):\s*)?(?:cannot disrupt (?:node|nodeclaim):\s*)?");
re!(POD_REF = r#"(?i)(?:\(Pod=([^\s,()]+)[,)]|^pod "([^"]+)" has)"#);
re!(
    PDB_REF = r#"(?i)(?:PodDisruptionBudget(?:\(s\))?=\[?([^\s\[\](),]+)[\s\]),]|^pdb "([^"]+)" prevents|^pdb (\S+) prevents)"#
);
re!(POOL_REF = r#"(?i)(?:NodePool=([^\s,()]+)[,)]|nodepool "([^"]+)")"#);

/// Parses a `DisruptionBlocked` message (node-, pod- or NodePool-level), any v1.x version.
pub fn parse_disruption_blocked(message: &str) -> ParsedBlocker {
    let text = BLOCKER_PREFIX
        .find(message)
        .map_or(message, |m| message.get(m.end()..).unwrap_or(""));
    let text = text.trim();
    let lower = text.to_lowercase();
    let has = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
    let (kind, reference) = if has(&["disruption is blocked"]) {
        (BlockerKind::DoNotDisruptNode, None)
    } else if lower.starts_with("pod") && has(&["do-not-disrupt"]) {
        (BlockerKind::DoNotDisruptPod, first_capture(&POD_REF, text))
    } else if has(&["prevents pod evictions", "does not support multiple pdbs"]) {
        (BlockerKind::Pdb, first_capture(&PDB_REF, text))
    } else if has(&["due to blocking budget"]) {
        (BlockerKind::Budget, None)
    } else if has(&["nominated for a pending pod", "is nominated"]) {
        (BlockerKind::Nominated, None)
    } else if has(&[
        "isn't initialized",
        "not initialized",
        "does not have an associated node",
        "doesn't contain both a node",
    ]) {
        (BlockerKind::NotInitialized, None)
    } else if has(&["not found", "can't be resolved"]) && has(&["nodepool"]) {
        (BlockerKind::NodepoolMissing, first_capture(&POOL_REF, text))
    } else if has(&["is deleting or marked for deletion"]) {
        (BlockerKind::Deleting, None)
    } else {
        (BlockerKind::Other, None)
    };
    let (namespace, name) = match reference {
        Some(r) if kind != BlockerKind::NodepoolMissing => match r.split_once('/') {
            Some((ns, name)) => (Some(ns.to_string()), Some(name.to_string())),
            None => (None, Some(r)),
        },
        other => (None, other),
    };
    ParsedBlocker {
        kind,
        namespace,
        name,
        message: text.to_string(),
    }
}

fn first_capture(re: &Regex, text: &str) -> Option<String> {
    let caps = re.captures(text)?;
    caps.iter()
        .skip(1)
        .flatten()
        .next()
        .map(|m| m.as_str().to_string())
}

/// What a launch failure says: the cloud error code, the offerings it concerns, and a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchError {
    /// e.g. `InsufficientInstanceCapacity`, `UnauthorizedOperation`, `InvalidParameterValue`.
    pub code: Option<String>,
    pub instance_types: Vec<String>,
    /// Zones the failure concerns (zones AWS suggests as alternatives are left out).
    pub zones: Vec<String>,
    pub capacity_type: Option<String>,
    pub hint: Option<&'static str>,
}

re!(NODECLAIM_EVENT_PREFIX = r"^\s*(?:NodeClaim|Machine) \S+ event: ");
re!(ALTERNATIVES = r"(?i)(?:you can currently get|please retry your request)[^;]*");
re!(FLEET_CODE = r"(?:with fleet error\(s\), |; )([A-Z][A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*): ");
re!(TAGGED_CODE = r"(?:aws-error-code=|api error )([A-Z][A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)");
re!(
    KNOWN_CODE = r"\b(InsufficientInstanceCapacity|UnfulfillableCapacity|MaxSpotInstanceCountExceeded|VcpuLimitExceeded|InsufficientFreeAddressesInSubnet|SpotMaxPriceTooLow|UnauthorizedOperation|AccessDenied(?:Exception)?|AuthFailure(?:\.[A-Za-z]+)?|InvalidParameterValue|InvalidParameterCombination|InvalidParameter|InvalidSubnetID\.[A-Za-z]+|InvalidAMIID\.[A-Za-z]+|OptInRequired)\b"
);
re!(
    INSTANCE_TYPE = r"\b([a-z][a-z0-9-]*[0-9][a-z0-9-]*\.(?:[0-9]*x?large|nano|micro|small|medium|metal(?:-[0-9]+xl)?))\b"
);
re!(INSTANCE_TYPE_KV = r#"(?i)instance-?type["']?\s*[=:]\s*["']?([a-z0-9][a-z0-9.-]*[a-z0-9])"#);
re!(ZONE = r"\b([a-z]{2}(?:-[a-z]+)+-[0-9]+(?:-[a-z]+-[0-9]+)?[a-z])\b");
re!(ZONE_KV =
    r#"(?i)(?:availability-?zone|\bzone)["']?\s*[=:]\s*["']?([a-z0-9][a-z0-9-]*[a-z0-9])"#);
re!(CAPACITY_TYPE_KV = r#"(?i)capacity[-_ ]?type["']?\s*[=:]\s*["']?(spot|on-demand|reserved)\b"#);
re!(SPOT_WORDS = r"(?i)\bspot (?:capacity|instances?|price|requests?)\b");

/// Parses a launch failure (`InsufficientCapacityError` / `NodeClassNotReady` event text, or the
/// `Launched=False` condition message): `NodeClaim x event: creating instance, insufficient
/// capacity, with fleet error(s), <Code>: <Msg>; ...`, AWS API errors, and older shapes.
pub fn parse_launch_error(message: &str) -> LaunchError {
    let text = NODECLAIM_EVENT_PREFIX
        .find(message)
        .map_or(message, |m| message.get(m.end()..).unwrap_or(""));
    let text = ALTERNATIVES.replace_all(drop_cut_tail(text), "");
    let code = [&*FLEET_CODE, &*TAGGED_CODE, &*KNOWN_CODE]
        .iter()
        .find_map(|re| re.captures(&text))
        .and_then(|caps| caps.get(1))
        .map(|m| m.as_str().to_string());
    let capacity_type = CAPACITY_TYPE_KV
        .captures(&text)
        .and_then(|caps| caps.get(1))
        .map(|m| m.as_str().to_lowercase())
        .or_else(|| {
            let spot_code = matches!(
                code.as_deref(),
                Some("MaxSpotInstanceCountExceeded" | "SpotMaxPriceTooLow")
            );
            (spot_code || SPOT_WORDS.is_match(&text)).then(|| "spot".to_string())
        });
    LaunchError {
        hint: hint(code.as_deref(), &text.to_lowercase()),
        instance_types: collect(&[&INSTANCE_TYPE, &INSTANCE_TYPE_KV], &text),
        zones: collect(&[&ZONE, &ZONE_KV], &text),
        capacity_type,
        code,
    }
}

/// Karpenter cuts launch errors at 300 characters and appends `...`: drop the cut-off word.
fn drop_cut_tail(text: &str) -> &str {
    match text.trim_end().strip_suffix("...") {
        Some(kept) => kept
            .rfind(char::is_whitespace)
            .map_or("", |at| kept.get(..at).unwrap_or("")),
        None => text,
    }
}

/// First capture group of every match of every regex, deduplicated, in order of appearance.
fn collect(res: &[&LazyLock<Regex>], text: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = res
        .iter()
        .flat_map(|re| re.captures_iter(text))
        .filter_map(|caps| caps.get(1))
        .map(|m| (m.start(), m.as_str().to_string()))
        .collect();
    found.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, value) in found {
        if !out.contains(&value) {
            out.push(value);
        }
    }
    out
}

fn hint(code: Option<&str>, lower: &str) -> Option<&'static str> {
    const CAPACITY: &str = "no capacity for the requested offerings: widen the NodePool's instance families, sizes, zones or capacity types (spot and on-demand)";
    const IAM: &str = "the Karpenter controller's IAM role is not allowed this call: compare its policy with the reference policy for your Karpenter version";
    const SUBNET: &str = "check the EC2NodeClass subnetSelectorTerms and the subnets' discovery tags (e.g. karpenter.sh/discovery)";
    let by_code = code.and_then(|code| match code {
        "AuthFailure.ServiceLinkedRoleCreationNotPermitted" => Some("the account has no EC2 Spot service-linked role and the controller may not create it: run `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once"),
        "InsufficientInstanceCapacity" | "UnfulfillableCapacity" | "Unsupported" => Some(CAPACITY),
        "MaxSpotInstanceCountExceeded" => Some("the account's spot instance quota is used up: raise the quota or allow on-demand in the NodePool"),
        "VcpuLimitExceeded" => Some("the account's vCPU quota for these instance types is used up: request a quota increase or allow other instance families"),
        "InsufficientFreeAddressesInSubnet" => Some("the selected subnets have no free IP addresses: add larger or more subnets to the EC2NodeClass"),
        "SpotMaxPriceTooLow" => Some("the spot price is above the maximum price allowed: allow on-demand or other instance types"),
        "OptInRequired" => Some("the account is not subscribed to this service or offering in the region: opt in, or exclude those instance types"),
        c if c.starts_with("UnauthorizedOperation") || c.starts_with("AccessDenied") || c.starts_with("AuthFailure") => Some(IAM),
        c if c.starts_with("InvalidSubnet") => Some(SUBNET),
        c if c.starts_with("InvalidParameter") && lower.contains("subnet") => Some(SUBNET),
        c if c.starts_with("InvalidParameter") && (lower.contains("iaminstanceprofile") || lower.contains("instance profile")) => Some("the instance profile is missing or invalid: check the EC2NodeClass role / instanceProfile"),
        c if c.starts_with("InvalidAMIID") => Some("the AMI is missing or not shared with the account: check the EC2NodeClass amiSelectorTerms"),
        _ => None,
    });
    by_code.or_else(|| {
        if lower.contains("all requested instance types were unavailable") || lower.contains("insufficient capacity") {
            Some(CAPACITY)
        } else if lower.contains("nodeclassref not ready") || lower.contains("nodeclass not ready") {
            Some("the NodePool's EC2NodeClass is not Ready: see its status conditions (subnets, security groups, AMIs, instance profile)")
        } else if lower.contains("not authorized") || lower.contains("accessdenied") {
            Some(IAM)
        } else {
            None
        }
    })
}

/// Event reasons Karpenter (AWS provider) writes for interruptions of running capacity.
pub const SPOT_INTERRUPTION_REASONS: &[&str] = &[
    "SpotInterrupted",
    "SpotRebalanceRecommendation",
    "InstanceStopping",
    "InstanceTerminating",
    "InstanceUnhealthy",
    "CapacityReservationInstanceInterrupted",
    "TerminatingOnInterruption",
];

#[cfg(test)]
mod tests {
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
        let parsed = parse_failed_scheduling("Failed to schedule pod, all available instance types exceed limits for nodepool \"batch\"");
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
            assert!(SPOT_INTERRUPTION_REASONS.contains(&reason));
        }
        assert!(!SPOT_INTERRUPTION_REASONS.contains(&"DisruptionBlocked"));
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
}
