//! Install: is Karpenter there, and does it serve the v1 APIs kelp understands.

use super::Context;
use crate::findings::{Code, Finding, KarpenterInfo, ObjectRef, Severity};
use crate::model::Cluster;

pub fn info(c: &Cluster) -> KarpenterInfo {
    KarpenterInfo {
        installed: c.karpenter_seen()
            || !c.api.served.is_empty()
            || !c.api.legacy_objects.is_empty(),
        api_versions: c.api.served.iter().cloned().collect(),
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
    let obj = ObjectRef::cluster("CustomResourceDefinition", "nodepools.karpenter.sh");
    if has_v1 {
        return Vec::new();
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
