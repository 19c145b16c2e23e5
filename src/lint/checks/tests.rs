//! Unit tests of the checks, on small manifests linted with [`crate::lint::lint_str`].

use crate::findings::Severity;
use crate::lint::{lint_str, LintResult};

/// The results of `rule` when `text` is linted as one file.
fn hits(text: &str, rule: &str) -> Vec<LintResult> {
    lint_str("t.yaml", text)
        .results
        .into_iter()
        .filter(|r| r.rule == rule)
        .collect()
}

#[test]
fn node_overlay_is_current_at_v1alpha1() {
    // karpenter.sh_nodeoverlays.yaml (v1.14.1) serves NodeOverlay only as v1alpha1.
    let overlay = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: cheaper\nspec:\n  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [spot]\n  priceAdjustment: \"-10%\"\n";
    assert!(hits(overlay, "deprecated-api-version").is_empty());
    let node_pool = "apiVersion: karpenter.sh/v1alpha1\nkind: NodePool\nmetadata:\n  name: old\n";
    let h = hits(node_pool, "deprecated-api-version");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].severity, Severity::Critical);
}
