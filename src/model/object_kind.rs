//! The kinds of object kelp names, as one type: a finding's object, a source's resource and
//! the dashboard's selection all say `ObjectKind::NodePool`, never a string that might be
//! spelt another way. It serialises as the Kubernetes kind (`NodePool`).

use std::fmt;

use serde::Serialize;

/// A Kubernetes kind kelp reads or names. The variants are in the byte order of their
/// names, so sorting by kind sorts as the names do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// The cluster as a whole (a finding about the installation).
    Cluster,
    CustomResourceDefinition,
    DaemonSet,
    EC2NodeClass,
    Event,
    KWOKNodeClass,
    Node,
    NodeClaim,
    NodePool,
    /// An instance type in a zone and capacity type (the controller's availability metric).
    Offering,
    Pod,
    PodDisruptionBudget,
}

impl ObjectKind {
    pub const ALL: [ObjectKind; 12] = [
        Self::Cluster,
        Self::CustomResourceDefinition,
        Self::DaemonSet,
        Self::EC2NodeClass,
        Self::Event,
        Self::KWOKNodeClass,
        Self::Node,
        Self::NodeClaim,
        Self::NodePool,
        Self::Offering,
        Self::Pod,
        Self::PodDisruptionBudget,
    ];

    /// The Kubernetes kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Cluster => "Cluster",
            Self::CustomResourceDefinition => "CustomResourceDefinition",
            Self::DaemonSet => "DaemonSet",
            Self::EC2NodeClass => "EC2NodeClass",
            Self::Event => "Event",
            Self::KWOKNodeClass => "KWOKNodeClass",
            Self::Node => "Node",
            Self::NodeClaim => "NodeClaim",
            Self::NodePool => "NodePool",
            Self::Offering => "Offering",
            Self::Pod => "Pod",
            Self::PodDisruptionBudget => "PodDisruptionBudget",
        }
    }

    /// The kind named `s` exactly (kinds are case-sensitive).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ObjectKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_sort_as_their_names() {
        for k in ObjectKind::ALL {
            assert_eq!(ObjectKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ObjectKind::parse("nodepool"), None);
        let mut by_name = ObjectKind::ALL.to_vec();
        by_name.sort_by_key(|k| k.as_str());
        assert_eq!(by_name, ObjectKind::ALL.to_vec());
        let mut by_kind = ObjectKind::ALL.to_vec();
        by_kind.sort();
        assert_eq!(by_kind, by_name);
        assert_eq!(
            serde_json::to_string(&ObjectKind::NodePool).unwrap(),
            "\"NodePool\""
        );
    }
}
