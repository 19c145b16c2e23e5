//! Placement: DaemonSets that run on nodes of a pool whose template they are not
//! compatible with (Karpenter then leaves them out of that pool's overhead and sizes
//! nodes too small), and the Karpenter controller running on nodes it manages.

use std::collections::BTreeMap;

use serde::Serialize;

use super::provisioning::{daemon_terms, PoolSet, PoolUsage};
use super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::requirements;
use crate::karpenter::taints;
use crate::model::shared::FastMap;
use crate::model::*;

pub fn findings(ctx: &Context) -> Vec<Finding> {
    let mut out = ctx.daemonset_mismatch.clone();
    out.extend(controller_on_managed_node(ctx));
    out
}

/// Why a DaemonSet's pod template is not compatible with a pool's template, or `None` if
/// it is, as Karpenter's `isDaemonPodCompatible` judges it: unvalidated, against the pool's
/// requirements with the registered and initialized labels.
pub fn template_mismatch(spec: &PodSpec, pool: &super::provisioning::PoolInfo) -> Option<String> {
    let t = &pool.pool.spec.template.spec;
    let untolerated = taints::untolerated(&spec.tolerations, &t.taints);
    if !untolerated.is_empty() {
        let list: Vec<String> = untolerated.iter().map(|t| taints::render(t)).collect();
        return Some(format!(
            "does not tolerate the pool's taint {}",
            list.join(", ")
        ));
    }
    let pool_reqs = pool.requirements.as_ref().ok()?.with_node_lifecycle();
    let terms = match daemon_terms(spec) {
        Ok(t) => t,
        Err(e) => return Some(e),
    };
    let mut last = None;
    for term in &terms {
        match requirements::compatible(term, &pool_reqs) {
            Ok(()) => return None,
            Err(i) => last = i.first().map(|i| format!("incompatible requirements, {i}")),
        }
    }
    last
}

/// The details of a `daemonset-nodepool-mismatch` finding.
#[derive(Debug, Serialize)]
pub struct MismatchDetails {
    pub daemonset: String,
    pub node: String,
    /// The nodes the DaemonSet cannot run on.
    pub nodes: Vec<String>,
    pub why: String,
}

/// DaemonSets that run on nodes of a pool their pod template is incompatible with, one
/// finding per (DaemonSet, pool). It reads the DaemonSets and their pods, the nodes' pools
/// and the pools' specs: `kelp serve` keeps it while none of those changed
/// ([`super::incremental::Incremental::daemonset_mismatch`]).
pub fn daemonset_mismatch(c: &Cluster, usages: &BTreeMap<String, PoolUsage>) -> Vec<Finding> {
    let pools = PoolSet::with_usage(c, usages);
    let by_name: BTreeMap<&str, &super::provisioning::PoolInfo> =
        pools.ordered.iter().map(|p| (p.name, p)).collect();
    // (daemonset namespace/name, pool) -> (why, nodes), or None once found compatible:
    // each pair is judged once, not once per pod.
    let mut found: BTreeMap<(&str, &str, &str), Option<(String, Vec<&str>)>> = BTreeMap::new();
    let mut pool_of_node: FastMap<&str, Option<(&str, &super::provisioning::PoolInfo)>> =
        FastMap::default();
    for pod in c.daemonset_pods() {
        let Some(owner) = pod
            .metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "DaemonSet")
        else {
            continue;
        };
        let Some(node) = pod.spec.node_name.as_deref() else {
            continue;
        };
        // Many DaemonSets run on each node: its pool is looked up once.
        let judged = *pool_of_node.entry(node).or_insert_with(|| {
            let pool = c.nodes.get(node).and_then(|n| n.pool())?;
            by_name.get(pool).map(|info| (pool, *info))
        });
        let Some((pool, info)) = judged else {
            continue;
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let key = (ns, owner.name.as_str(), pool);
        match found.get_mut(&key) {
            Some(Some((_, nodes))) => nodes.push(node),
            Some(None) => {}
            None => {
                // Karpenter computes overhead from the DaemonSet's template; fall back to
                // the pod.
                let spec = c
                    .daemonsets
                    .get(&(ns.to_string(), owner.name.clone()))
                    .map(|d| &d.spec.template.spec)
                    .unwrap_or(&pod.spec);
                let judged = template_mismatch(spec, info).map(|why| (why, vec![node]));
                found.insert(key, judged);
            }
        }
    }
    found
        .into_iter()
        .filter_map(|(key, found)| Some((key, found?)))
        .map(|((ns, ds, pool), (why, nodes))| {
            Finding::new(
                Code::DaemonsetNodepoolMismatch,
                Severity::Warning,
                ObjectRef::namespaced(ObjectKind::DaemonSet, ns, ds),
                format!(
                    "Runs on {} node(s) of NodePool {pool} (e.g. {}) although its pod template is incompatible with the pool ({why}); Karpenter leaves it out of the pool's DaemonSet overhead, so new nodes are sized too small for it",
                    nodes.len(),
                    nodes[0]
                ),
            )
            .pool(Some(pool))
            .details(MismatchDetails {
                daemonset: format!("{ns}/{ds}"),
                node: nodes[0].to_string(),
                nodes: nodes.iter().map(|n| n.to_string()).collect(),
                why,
            })
        })
        .collect()
}

fn controller_on_managed_node(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.controller_pods()
        .filter(|p| !p.metadata.owned_by("DaemonSet"))
        .filter_map(|p| {
            let node = p.spec.node_name.as_deref()?;
            let pool = c.nodes.get(node)?.pool()?;
            Some(
                Finding::new(
                    Code::KarpenterOnManagedNode,
                    Severity::Warning,
                    ObjectRef::of(ObjectKind::Pod, &p.metadata),
                    format!(
                        "The Karpenter controller runs on {node}, a node of NodePool {pool} that it manages: it can disrupt itself. Run it on a managed node group or Fargate (nodeAffinity karpenter.sh/nodepool DoesNotExist)"
                    ),
                )
                .pool(Some(pool))
                .details(serde_json::json!({"node": node})),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mismatch findings' reasons for a DaemonSet with `selector` on a node of pool web.
    fn mismatches(selector: &str) -> Vec<String> {
        let n1 = crate::testing::node("n1").pool("web").yaml();
        let yaml = format!(
            r#"apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: web}}
spec:
  template:
    metadata: {{labels: {{team: web}}}}
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements: []
{n1}---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  template:
    spec:
      nodeSelector: {{{selector}}}
      containers: [{{name: a, image: x}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-1
  namespace: kube-system
  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u}}]
spec:
  nodeName: n1
  nodeSelector: {{{selector}}}
  containers: [{{name: a, image: x}}]
"#
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let usages = super::super::provisioning::pool_usages(&c);
        daemonset_mismatch(&c, &usages)
            .iter()
            .map(|f| f.message.clone())
            .collect()
    }

    #[test]
    fn daemonsets_selecting_on_the_templates_labels_are_no_mismatch() {
        // Karpenter checks a DaemonSet unvalidated against the template's requirements:
        // its labels, node class, nodepool and registered/initialized In [true].
        for selector in [
            "karpenter.k8s.aws/ec2nodeclass: default",
            "karpenter.sh/registered: \"true\", karpenter.sh/initialized: \"true\"",
            "karpenter.sh/nodepool: web, team: web",
        ] {
            assert_eq!(mismatches(selector), Vec::<String>::new(), "{selector}");
        }
        let other = mismatches("karpenter.k8s.aws/ec2nodeclass: other");
        assert_eq!(other.len(), 1, "{other:?}");
        assert!(other[0].contains("incompatible requirements"), "{other:?}");
    }
}
