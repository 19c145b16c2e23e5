//! The label sets Karpenter's requirement checks know: the core well-known labels and
//! each provider's additions ([`Provider`]), the deprecated aliases keys normalise to,
//! the restricted labels and domains, and the capacity types.

pub(super) const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";
pub(super) const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
/// Labels a node gets once registered and initialised; Karpenter's NodeClaim templates
/// require both `In [true]` (`NewNodeClaimTemplate`), for the DaemonSets that select on them.
pub(super) const REGISTERED_LABEL: &str = "karpenter.sh/registered";
pub(super) const INITIALIZED_LABEL: &str = "karpenter.sh/initialized";

/// Core well-known labels (`v1.WellKnownLabels` before a provider adds its own): a pod may
/// constrain these even where a NodePool leaves them undefined.
pub const WELL_KNOWN_LABELS: &[&str] = &[
    NODEPOOL_LABEL,
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    CAPACITY_TYPE_LABEL,
    "node.kubernetes.io/windows-build",
];

/// Labels the AWS provider (karpenter-provider-aws v1.14.1, `pkg/apis/v1/labels.go` `init`) adds
/// to the well-known set at start-up, less `node.kubernetes.io/windows-build` which the core set
/// already holds. Karpenter on AWS allows exactly `WELL_KNOWN_LABELS` plus these to be undefined
/// in a NodePool.
pub const AWS_WELL_KNOWN_LABELS: &[&str] = &[
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
    "topology.k8s.aws/zone-id",
];

/// Labels the kwok provider (the project's end-to-end harness) adds to the well-known set.
pub const KWOK_WELL_KNOWN_LABELS: &[&str] = &[
    "karpenter.kwok.sh/instance-cpu",
    "karpenter.kwok.sh/instance-family",
    "karpenter.kwok.sh/instance-memory",
    "karpenter.kwok.sh/instance-size",
];

/// Deprecated label keys and the well-known key Karpenter reads them as (`v1.NormalizedLabels`).
const LABEL_ALIASES: &[(&str, &str)] = &[
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    (
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
    ),
];

/// Labels a pod may never select on (`v1.RestrictedLabels`).
pub(super) const RESTRICTED_LABELS: &[&str] = &["kubernetes.io/hostname"];

/// The only values Karpenter accepts for `karpenter.sh/capacity-type` (sorted).
pub(super) const CAPACITY_TYPES: &[&str] = &["on-demand", "reserved", "spot"];

/// Canonical form of a label key: an alias maps to its well-known key, anything else is itself.
pub fn normalize_key(key: &str) -> &str {
    LABEL_ALIASES
        .iter()
        .find(|(alias, _)| *alias == key)
        .map_or(key, |(_, canonical)| canonical)
}

/// Whether `key` (after alias normalization) is one of the core well-known labels.
pub fn is_well_known(key: &str) -> bool {
    is_well_known_for(key, &[])
}

/// Whether `key` (after alias normalization) is a core well-known label or one of `provider_labels`.
pub fn is_well_known_for(key: &str, provider_labels: &[&str]) -> bool {
    let key = normalize_key(key);
    WELL_KNOWN_LABELS.contains(&key) || provider_labels.contains(&key)
}

/// The cloud provider a Karpenter installation runs with, which widens the well-known labels
/// and the restricted label domains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Only the core sets (used when the provider is unknown).
    #[default]
    Core,
    Aws,
    Kwok,
}

impl Provider {
    /// The provider behind a NodeClass label key such as `karpenter.k8s.aws/ec2nodeclass`.
    pub fn from_nodeclass_label(key: &str) -> Self {
        match key.split_once('/').map(|(group, _)| group) {
            Some("karpenter.k8s.aws") => Provider::Aws,
            Some("karpenter.kwok.sh") => Provider::Kwok,
            _ => Provider::Core,
        }
    }

    /// The well-known labels this provider adds to `WELL_KNOWN_LABELS`.
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            Provider::Core => &[],
            Provider::Aws => AWS_WELL_KNOWN_LABELS,
            Provider::Kwok => KWOK_WELL_KNOWN_LABELS,
        }
    }

    /// Label domains reserved for Karpenter (`v1.RestrictedLabelDomains`), sorted.
    pub(super) fn restricted_domains(self) -> &'static [&'static str] {
        match self {
            Provider::Core => &["karpenter.sh"],
            Provider::Aws => &["karpenter.k8s.aws", "karpenter.sh"],
            Provider::Kwok => &["karpenter.kwok.sh", "karpenter.sh"],
        }
    }

    pub(super) fn is_well_known(self, key: &str) -> bool {
        is_well_known_for(key, self.labels())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_well_known_labels_are_the_v1_14_1_providers() {
        // karpenter-provider-aws v1.14.1 registers 29 labels; windows-build is core already.
        assert_eq!(AWS_WELL_KNOWN_LABELS.len(), 28);
        for key in [
            "karpenter.k8s.aws/instance-capability-flex",
            "karpenter.k8s.aws/placement-group-id",
            "karpenter.k8s.aws/placement-group-partition",
        ] {
            assert!(Provider::Aws.is_well_known(key), "{key}");
        }
        assert!(!Provider::Aws.is_well_known("karpenter.k8s.aws/instance-nitro-enclaves-supported"));
        assert!(Provider::Aws.is_well_known("node.kubernetes.io/windows-build"));
        let mut sorted = AWS_WELL_KNOWN_LABELS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, AWS_WELL_KNOWN_LABELS);
    }
}
