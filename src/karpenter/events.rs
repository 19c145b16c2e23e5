//! Parsers for the free text Karpenter writes into core/v1 Events.
//!
//! This module owns the text-level knowledge of Karpenter's event messages, for every v1.x shape
//! (v1.0 .. v1.14): `FailedScheduling` (split into categorised segments, in the v1.0-v1.4
//! wrapped format and the v1.5+ flat format), `Nominated`, `DisruptionBlocked` (node-, pod- and
//! NodePool-level blockers), launch failures on NodeClaims (`InsufficientCapacityError`, AWS
//! fleet and API errors) and the interruption event reasons. Every parser is total: any input,
//! truncated or foreign, yields a best-effort answer and never panics.

pub mod reason;

pub use reason::Reason;

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
pub const SPOT_INTERRUPTION_REASONS: &[Reason] = &[
    Reason::SpotInterrupted,
    Reason::SpotRebalanceRecommendation,
    Reason::InstanceStopping,
    Reason::InstanceTerminating,
    Reason::InstanceUnhealthy,
    Reason::CapacityReservationInstanceInterrupted,
    Reason::TerminatingOnInterruption,
];

#[cfg(test)]
mod tests;
