use serde_json::{json, Value};

use super::*;

/// Every NodePool of each real capture: kelp's hash is the one Karpenter wrote.
#[test]
fn every_captured_nodepool_hashes_to_karpenters_annotation() {
    let mut checked = 0;
    for release in ["karpenter-v1.15.0", "karpenter-v1.14.1"] {
        let path = format!(
            "{}/tests/fixtures/real/{release}/cluster.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let list: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for pool in list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["kind"] == "NodePool")
        {
            let name = pool["metadata"]["name"].as_str().unwrap();
            let want = pool["metadata"]["annotations"][HASH_ANNOTATION]
                .as_str()
                .unwrap();
            assert_eq!(
                pool["metadata"]["annotations"][HASH_VERSION_ANNOTATION],
                HASH_VERSION
            );
            let got = template_hash(&pool["spec"]["template"]).unwrap();
            assert_eq!(got.to_string(), want, "{release} {name}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked}");
}

fn base() -> Value {
    json!({"spec": {
        "expireAfter": "720h",
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    }})
}

fn hash(v: &Value) -> u64 {
    template_hash(v).unwrap()
}

#[test]
fn requirements_are_not_hashed_and_order_of_maps_and_taints_is_not_either() {
    let a = base();
    let mut b = base();
    b["spec"]["requirements"] =
        json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]);
    assert_eq!(hash(&a), hash(&b));
    let t1 = json!({"key": "a", "value": "1", "effect": "NoSchedule"});
    let t2 = json!({"key": "b", "effect": "NoExecute"});
    let (mut x, mut y) = (base(), base());
    x["spec"]["taints"] = json!([t1, t2]);
    y["spec"]["taints"] = json!([t2, t1]);
    assert_eq!(hash(&x), hash(&y));
    assert_ne!(hash(&x), hash(&a));
}

#[test]
fn go_zero_values_are_left_out_but_empty_collections_are_not() {
    let a = base();
    // null is Go's nil: the same as absent.
    let mut nulls = base();
    nulls["metadata"] = json!({"labels": null});
    nulls["spec"]["taints"] = Value::Null;
    assert_eq!(hash(&a), hash(&nulls));
    // An empty (non-nil) map or list is not zero.
    let mut empty_labels = base();
    empty_labels["metadata"] = json!({"labels": {}});
    assert_ne!(hash(&a), hash(&empty_labels));
    let mut empty_taints = base();
    empty_taints["spec"]["taints"] = json!([]);
    assert_ne!(hash(&a), hash(&empty_taints));
    // An empty taint value is zero.
    let (mut v, mut no_v) = (base(), base());
    v["spec"]["taints"] = json!([{"key": "k", "value": "", "effect": "NoSchedule"}]);
    no_v["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
    assert_eq!(hash(&v), hash(&no_v));
}

#[test]
fn durations_hash_by_their_value_and_never_is_nil() {
    let (mut a, mut b) = (base(), base());
    a["spec"]["expireAfter"] = json!("24h");
    b["spec"]["expireAfter"] = json!("1440m");
    assert_eq!(hash(&a), hash(&b));
    let mut never = base();
    never["spec"]["expireAfter"] = json!("Never");
    let mut absent = base();
    absent["spec"]
        .as_object_mut()
        .unwrap()
        .remove("expireAfter");
    assert_eq!(hash(&never), hash(&absent));
    // A zero duration is a set pointer: not the same as none.
    let mut zero = base();
    zero["spec"]["expireAfter"] = json!("0s");
    assert_ne!(hash(&zero), hash(&never));
    let mut tgp = base();
    tgp["spec"]["terminationGracePeriod"] = json!("0s");
    assert_ne!(hash(&tgp), hash(&base()));
}

#[test]
fn a_manifest_gets_the_crd_default_before_it_is_hashed() {
    let mut manifest = base();
    manifest["spec"]
        .as_object_mut()
        .unwrap()
        .remove("expireAfter");
    assert_eq!(hash(&with_defaults(&manifest)), hash(&base()));
    // A value given is kept.
    let mut given = base();
    given["spec"]["expireAfter"] = json!("Never");
    assert_eq!(with_defaults(&given)["spec"]["expireAfter"], "Never");
}

#[test]
fn what_kelp_cannot_hash_is_an_error_not_a_guess() {
    let mut t = base();
    t["spec"]["taints"] =
        json!([{"key": "k", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}]);
    assert!(matches!(
        template_hash(&t),
        Err(Unhashable::TaintTime { .. })
    ));
    let mut d = base();
    d["spec"]["expireAfter"] = json!("forever");
    let e = template_hash(&d).unwrap_err();
    assert!(
        e.to_string().contains("spec.template.spec.expireAfter"),
        "{e}"
    );
    let mut l = base();
    l["metadata"] = json!({"labels": {"a": 1}});
    assert!(matches!(template_hash(&l), Err(Unhashable::Shape { .. })));
    assert!(template_hash(&json!("x")).is_err());
}

#[test]
fn fnv1_is_gos_fnv64_not_1a() {
    // Go: fnv.New64() over "a" is 0xaf63bd4c8601b7be (FNV-1a would give 0xaf63dc4c8601ec8c).
    assert_eq!(fnv1(b"a"), 0xaf63_bd4c_8601_b7be);
    assert_eq!(fnv1(b""), 0xcbf2_9ce4_8422_2325);
}
