//! Install: is Karpenter there, does it serve the v1 APIs kelp understands, and which
//! release runs ([`super::version`]).

use super::Context;
use crate::findings::{Code, Finding, KarpenterInfo, ObjectRef, Severity};
use crate::model::{Cluster, ObjectKind};

pub fn info(c: &Cluster) -> KarpenterInfo {
    KarpenterInfo {
        installed: c.karpenter_seen()
            || !c.api.served.is_empty()
            || !c.api.legacy_objects.is_empty(),
        api_versions: c.api.served.iter().cloned().collect(),
        version: super::version::detect(c),
    }
}

pub fn findings(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let core: Vec<&String> = c
        .api
        .served
        .iter()
        .filter(|v| v.starts_with("karpenter.sh/"))
        .collect();
    let has_v1 = core.iter().any(|v| v.as_str() == "karpenter.sh/v1")
        || !c.nodepools.is_empty()
        || !c.nodeclaims.is_empty();
    let obj = ObjectRef::cluster(
        ObjectKind::CustomResourceDefinition,
        "nodepools.karpenter.sh",
    );
    if has_v1 {
        return Vec::new();
    }
    // karpenter.sh/v1alpha1 (NodeOverlay) and newer alphas are not pre-v1: with nothing
    // older beside them, the v1 CRDs were removed, not never upgraded.
    let pre_v1 = core
        .iter()
        .any(|v| matches!(v.as_str(), "karpenter.sh/v1beta1" | "karpenter.sh/v1alpha5"));
    if !core.is_empty() && !pre_v1 && c.api.legacy_objects.is_empty() {
        let left: Vec<&str> = core.iter().map(|s| s.as_str()).collect();
        return vec![Finding::new(
            Code::KarpenterNotInstalled,
            Severity::Critical,
            obj,
            format!(
                "Karpenter's v1 CRDs were removed: karpenter.sh/v1 (NodePool, NodeClaim) is not served, only {} is left. Karpenter cannot run without them; reinstall its CRDs (the karpenter-crd chart, or the chart's crds/)",
                left.join(", ")
            ),
        )
        .details(serde_json::json!({"apiVersions": core, "state": "v1-crds-removed"}))];
    }
    if !core.is_empty() || !c.api.legacy_objects.is_empty() {
        let mut seen: Vec<String> = core.iter().map(|s| s.to_string()).collect();
        seen.extend(c.api.legacy_objects.iter().take(3).cloned());
        return vec![Finding::new(
            Code::KarpenterApiOutdated,
            Severity::Critical,
            obj,
            format!(
                "Only pre-v1 Karpenter APIs are present ({}); kelp and current Karpenter speak karpenter.sh/v1. Upgrade Karpenter and migrate Provisioners/v1beta1 NodePools to karpenter.sh/v1",
                seen.join(", ")
            ),
        )
        .details(serde_json::json!({"apiVersions": core, "legacyObjects": c.api.legacy_objects}))];
    }
    vec![Finding::new(
        Code::KarpenterNotInstalled,
        Severity::Warning,
        obj,
        "Karpenter is not installed: no karpenter.sh CRDs or objects were found (install it, or point kelp at the right cluster with --context)",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(versions: &[&str]) -> Cluster {
        let mut c = Cluster::default();
        c.api.authoritative = true;
        c.api.served = versions.iter().map(|v| v.to_string()).collect();
        c
    }

    fn only(c: &Cluster) -> Finding {
        let now = chrono::Utc::now();
        let mut f = findings(&Context::new(c, now));
        assert_eq!(f.len(), 1, "{f:?}");
        f.remove(0)
    }

    #[test]
    fn removed_v1_crds_are_told_apart_from_a_pre_v1_install() {
        let removed = only(&served(&["karpenter.sh/v1alpha1"]));
        assert_eq!(removed.code, Code::KarpenterNotInstalled);
        assert!(
            removed
                .message
                .starts_with("Karpenter's v1 CRDs were removed"),
            "{}",
            removed.message
        );
        let old = only(&served(&["karpenter.sh/v1alpha1", "karpenter.sh/v1beta1"]));
        assert_eq!(old.code, Code::KarpenterApiOutdated);
        assert!(only(&served(&["karpenter.sh/v1alpha5"]))
            .message
            .starts_with("Only pre-v1"));
        assert_eq!(only(&served(&[])).code, Code::KarpenterNotInstalled);
        assert!(findings(&Context::new(
            &served(&["karpenter.sh/v1", "karpenter.sh/v1alpha1"]),
            chrono::Utc::now()
        ))
        .is_empty());
    }
}
