//! Builders for the objects unit tests put in a model: `node("n1").pool("default").ready()`,
//! `pod("shop", "web-0").on("n1").requests("1", "1Gi")`, `nodepool("default")`. Each
//! writes the object as the API server would (JSON, which is YAML too) and [`cluster`]
//! loads them through the real dump reader, so a test reads what a dump would hold.

use serde_json::{json, Map, Value};

use crate::model::Cluster;

/// An object under construction: its manifest.
#[derive(Debug, Clone)]
pub struct Object(Value);

impl Object {
    fn at(&mut self, path: &[&str]) -> &mut Value {
        let mut v = &mut self.0;
        for key in path {
            if !v.get(*key).is_some_and(Value::is_object) {
                v[*key] = Value::Object(Map::new());
            }
            v = &mut v[*key];
        }
        v
    }

    /// Set `path` (the last part a key) to `value`.
    pub fn set(mut self, path: &[&str], value: Value) -> Self {
        let (last, parent) = path.split_last().expect("a path");
        self.at(parent)[*last] = value;
        self
    }

    /// Add `value` to the list at `path`.
    pub fn push(mut self, path: &[&str], value: Value) -> Self {
        let (last, parent) = path.split_last().expect("a path");
        let list = &mut self.at(parent)[*last];
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        list.as_array_mut().expect("a list").push(value);
        self
    }

    pub fn label(self, key: &str, value: &str) -> Self {
        self.set(&["metadata", "labels", key], json!(value))
    }

    pub fn annotation(self, key: &str, value: &str) -> Self {
        self.set(&["metadata", "annotations", key], json!(value))
    }

    pub fn created(self, at: &str) -> Self {
        self.set(&["metadata", "creationTimestamp"], json!(at))
    }

    pub fn uid(self, uid: &str) -> Self {
        self.set(&["metadata", "uid"], json!(uid))
    }

    /// A condition of `status` (`"True"`, `"False"`, `"Unknown"`).
    pub fn condition(self, kind: &str, status: &str) -> Self {
        self.push(
            &["status", "conditions"],
            json!({"type": kind, "status": status}),
        )
    }

    // Nodes.

    /// Launched by the NodePool `pool` (its `karpenter.sh/nodepool` label).
    pub fn pool(self, pool: &str) -> Self {
        self.label("karpenter.sh/nodepool", pool)
    }

    pub fn zone(self, zone: &str) -> Self {
        self.label("topology.kubernetes.io/zone", zone)
    }

    /// `Ready=True`.
    pub fn ready(self) -> Self {
        self.condition("Ready", "True")
    }

    pub fn taint(self, key: &str, value: &str, effect: &str) -> Self {
        self.push(
            &["spec", "taints"],
            json!({"key": key, "value": value, "effect": effect}),
        )
    }

    /// A node's (or NodeClaim's) allocatable CPU, memory and pods.
    pub fn allocatable(self, cpu: &str, memory: &str, pods: &str) -> Self {
        self.set(
            &["status", "allocatable"],
            json!({"cpu": cpu, "memory": memory, "pods": pods}),
        )
    }

    // Pods.

    /// Bound to `node`.
    pub fn on(self, node: &str) -> Self {
        self.set(&["spec", "nodeName"], json!(node))
    }

    pub fn phase(self, phase: &str) -> Self {
        self.set(&["status", "phase"], json!(phase))
    }

    /// One container requesting `cpu` and `memory`.
    pub fn requests(self, cpu: &str, memory: &str) -> Self {
        self.push(
            &["spec", "containers"],
            json!({"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}),
        )
    }

    /// Owned by `kind` `name` (a controller reference).
    pub fn owner(self, kind: &str, name: &str) -> Self {
        self.push(
            &["metadata", "ownerReferences"],
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true}),
        )
    }

    /// The object read into kelp's projection of it, as a watch decodes it.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_value(self.0.clone()).expect("the object decodes")
    }

    /// The manifest, as one document of a dump.
    pub fn yaml(&self) -> String {
        format!("---\n{}\n", self.0)
    }
}

/// A Node.
pub fn node(name: &str) -> Object {
    Object(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
}

/// A Pod in `namespace`, `Running` unless [`Object::phase`] says otherwise.
pub fn pod(namespace: &str, name: &str) -> Object {
    Object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "status": {"phase": "Running"},
    }))
}

/// A NodePool with no requirements, on EC2NodeClass `default`.
pub fn nodepool(name: &str) -> Object {
    Object(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [],
        }}},
    }))
}

/// The model of these objects, read as a dump is.
pub fn cluster<'a>(objects: impl IntoIterator<Item = &'a Object>) -> Cluster {
    let yaml: String = objects.into_iter().map(Object::yaml).collect();
    let mut c = Cluster::default();
    crate::source::load_str("test.yaml", &yaml, &mut c).expect("the test's objects load");
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builders_write_what_the_reader_reads() {
        let c = cluster(&[
            node("n1")
                .pool("default")
                .zone("a")
                .ready()
                .allocatable("4", "16Gi", "110"),
            pod("shop", "web-0")
                .on("n1")
                .requests("500m", "1Gi")
                .owner("ReplicaSet", "web"),
            nodepool("default"),
        ]);
        let n = &c.nodes["n1"];
        assert_eq!(n.pool(), Some("default"));
        assert_eq!(n.zone(), Some("a"));
        assert!(crate::model::is_true(&n.status.conditions, "Ready"));
        let p: Vec<_> = c.active_pods_on("n1").collect();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].spec.requests().get("cpu"), 0.5);
        assert!(p[0].metadata.owned_by("ReplicaSet"));
        assert!(c.nodepools.contains_key("default"));
        let c = cluster(&[
            node("n2").uid("u2").taint("dedicated", "gpu", "NoSchedule"),
            pod("shop", "web-1").phase("Pending"),
        ]);
        let n = &c.nodes["n2"];
        assert_eq!(n.metadata.uid, "u2");
        assert_eq!(n.spec.taints.len(), 1);
        assert_eq!(c.unbound_pods().count(), 1);
    }
}
