//! Karpenter's label, annotation and taint names (facts section 4).

pub const NODEPOOL: &str = "karpenter.sh/nodepool";
pub const CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ARCH: &str = "kubernetes.io/arch";
pub const OS: &str = "kubernetes.io/os";
/// The kwok provider's per-node price label.
pub const KWOK_PRICE: &str = "eks-node-viewer/instance-price";
/// The Helm chart label of the Karpenter controller's pods.
pub const APP_NAME: &str = "app.kubernetes.io/name";
/// Karpenter's API groups.
pub const GROUP: &str = "karpenter.sh";
pub const AWS_GROUP: &str = "karpenter.k8s.aws";
pub const KWOK_GROUP: &str = "karpenter.kwok.sh";
