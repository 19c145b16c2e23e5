//! The impact of a NodePool change, against the real Karpenter (kwok provider):
//! - kelp's NodePool hash is the `karpenter.sh/nodepool-hash` the real controller writes,
//!   for 40 generated templates (labels, annotations, taints, startup taints, durations,
//!   `Never`, empty maps and lists, another NodeClass);
//! - `kelp what-if --nodepools CHANGED --from SNAPSHOT`, taken before the change is applied,
//!   names exactly the nodes Karpenter then marks Drifted, with Karpenter's reason: a
//!   template label (every node), a narrowed requirement (only the nodes outside it), a
//!   limit (none).
//!
//! Needs a testenv up; see tests/e2e.rs for how the suite runs.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

use kelp::karpenter::hash::{template_hash, with_defaults, HASH_ANNOTATION};

/// A small deterministic generator (no dependency for a test's variety).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn taints(r: &mut Lcg, prefix: &str) -> Value {
    let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
    let n = r.next(4);
    let list: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = json!({"key": format!("{prefix}.kelp.dev/t{i}"), "effect": effects[r.next(3) as usize]});
            if r.next(2) == 0 {
                t["value"] = json!(format!("v{}", r.next(100)));
            }
            t
        })
        .collect();
    json!(list)
}

/// The `i`th generated NodePool: never launches anything (a cpu limit of 0).
fn generated(i: u64, r: &mut Lcg) -> Value {
    let mut template = json!({"spec": {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                         "name": if r.next(5) == 0 { "other" } else { "default" }},
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    }});
    let mut meta = serde_json::Map::new();
    match r.next(4) {
        0 => {}
        1 => {
            meta.insert("labels".into(), json!({}));
        }
        _ => {
            let labels: BTreeMap<String, String> = (0..=r.next(3))
                .map(|k| (format!("hash.kelp.dev/l{k}"), format!("x{}", r.next(1000))))
                .collect();
            meta.insert("labels".into(), json!(labels));
        }
    }
    match r.next(3) {
        0 => {}
        1 => {
            meta.insert("annotations".into(), json!({}));
        }
        _ => {
            meta.insert(
                "annotations".into(),
                json!({"hash.kelp.dev/note": format!("n{}", r.next(1000))}),
            );
        }
    }
    if !meta.is_empty() {
        template["metadata"] = Value::Object(meta);
    }
    let spec = template["spec"].as_object_mut().unwrap();
    match r.next(4) {
        0 => {}
        1 => {
            spec.insert("taints".into(), json!([]));
        }
        _ => {
            spec.insert("taints".into(), taints(r, "taint"));
        }
    }
    if r.next(2) == 0 {
        spec.insert("startupTaints".into(), taints(r, "startup"));
    }
    let expire = ["", "Never", "24h", "1h30m", "0s", "720h"][r.next(6) as usize];
    if !expire.is_empty() {
        spec.insert("expireAfter".into(), json!(expire));
    }
    let grace = ["", "", "0s", "30m", "1h15m30s"][r.next(5) as usize];
    if !grace.is_empty() {
        spec.insert("terminationGracePeriod".into(), json!(grace));
    }
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": format!("e2e-hash-{i:02}")},
        "spec": {"template": template, "limits": {"cpu": "0"}}
    })
}

#[test]
fn kelps_hash_is_the_one_the_real_controller_writes_for_generated_nodepools() {
    let Some(e) = env() else { return };
    let mut r = Lcg(0x6b65_6c70);
    let pools: Vec<Value> = (0..40).map(|i| generated(i, &mut r)).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pools});
    e.apply_as_is(&list.to_string());
    let names: Vec<String> = pools
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let stored = wait_for(
        "Karpenter to hash every generated NodePool",
        2 * MINUTES,
        || {
            let all = e.json(&["get", "nodepools"]);
            let mine: BTreeMap<String, Value> = all["items"]
                .as_array()?
                .iter()
                .filter(|p| names.iter().any(|n| p["metadata"]["name"] == n.as_str()))
                .filter(|p| p["metadata"]["annotations"][HASH_ANNOTATION].is_string())
                .map(|p| {
                    (
                        p["metadata"]["name"].as_str().unwrap().to_string(),
                        p.clone(),
                    )
                })
                .collect();
            (mine.len() == names.len()).then_some(mine)
        },
    );
    let _ = e.kubectl(
        &[
            &["delete", "nodepool", "--wait=false"][..],
            &names.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ]
        .concat(),
        None,
    );
    let mut wrong = Vec::new();
    for manifest in &pools {
        let name = manifest["metadata"]["name"].as_str().unwrap();
        let server = &stored[name];
        let want = server["metadata"]["annotations"][HASH_ANNOTATION]
            .as_str()
            .unwrap();
        // As stored (the API server's defaults applied), and from the manifest as written.
        let from_server = template_hash(&server["spec"]["template"]).map(|h| h.to_string());
        let from_manifest =
            template_hash(&with_defaults(&manifest["spec"]["template"])).map(|h| h.to_string());
        if from_server.as_deref() != Ok(want) || from_manifest.as_deref() != Ok(want) {
            wrong.push(format!(
                "{name}: Karpenter {want}, kelp (stored) {from_server:?}, kelp (manifest) {from_manifest:?}\n  manifest {}\n  stored {}",
                manifest["spec"]["template"], server["spec"]["template"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 40 differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A scenario pool's manifest ([`pool_with`]) with one more template label (`key: value`).
fn with_label(yaml: &str, name: &str, label: &str) -> String {
    let line = format!("        e2e.kelp.dev/scenario: {name}\n");
    yaml.replace(&line, &format!("{line}        {label}\n"))
}

/// `kelp snapshot` of the cluster now, into `dir`.
fn snapshot(e: &Env, dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("before.json");
    let out = e.kelp(&["snapshot", "-f", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

/// Each NodeClaim of `pool` and Karpenter's Drifted reason on it (None: not drifted).
fn drifted(e: &Env, pool: &str) -> BTreeMap<String, Option<String>> {
    let claims = e.json(&[
        "get",
        "nodeclaims",
        "-l",
        &format!("karpenter.sh/nodepool={pool}"),
    ]);
    claims["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let reason = c["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Drifted" && c["status"] == "True")
                .and_then(|c| c["reason"].as_str().map(str::to_string));
            (c["metadata"]["name"].as_str().unwrap().to_string(), reason)
        })
        .collect()
}

/// `kelp what-if --nodepools MANIFEST --from SNAPSHOT -o json`: claim → predicted reason.
fn predicted(
    manifest: &str,
    snapshot: &std::path::Path,
) -> (Value, BTreeMap<String, Option<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("changed.yaml");
    std::fs::write(&file, manifest).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env_remove("KUBECONFIG")
        .args(["what-if", "--nodepools"])
        .arg(&file)
        .arg("--from")
        .arg(snapshot)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "what-if: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_claim = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert!(n["unknown"].is_null(), "{n}");
            (
                n["nodeclaim"].as_str().unwrap().to_string(),
                n["drift"].as_str().map(str::to_string),
            )
        })
        .collect();
    (v, by_claim)
}

/// Apply `manifest`, then wait until Karpenter's Drifted conditions on the pool's claims
/// are `want` (and, for claims that must not drift, still so after a while).
fn karpenter_agrees(e: &Env, pool: &str, manifest: &str, want: &BTreeMap<String, Option<String>>) {
    e.apply_as_is(manifest);
    let got = wait_for(
        &format!("Karpenter's drift on {pool} to be {want:?}"),
        2 * MINUTES,
        || {
            let now = drifted(e, pool);
            (now == *want).then_some(now)
        },
    );
    // What must not drift stays so: the drift controller re-reads a pool within seconds.
    std::thread::sleep(Duration::from_secs(20));
    assert_eq!(drifted(e, pool), got, "Karpenter changed its mind");
}

#[test]
fn what_if_names_the_nodes_karpenter_drifts_before_the_change_is_applied() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, name) = (format!("e2e-rollout-{id}"), format!("rollout-{id}"));
    namespace(&e, &ns);
    // Drift is marked but never carried out (a budget of 0 for Drifted), so each change's
    // conditions can be read on the nodes the snapshot holds.
    let disruption = "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 10m\n    budgets:\n      - {nodes: \"0\", reasons: [Drifted]}";
    let manifest = |requirements: &str, limits: &str, label: bool| {
        let y = pool_with(&name, &name, requirements, "", limits, disruption);
        if label {
            with_label(&y, &name, "e2e.kelp.dev/team: payments")
        } else {
            y
        }
    };
    e.apply(&manifest("", "16", false));
    // One pod per zone (kube-scheduler would put a spread's second pod beside the first,
    // counting only the zones of nodes that exist): two nodes in two zones.
    let spread = "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: spread}}}".to_string();
    e.apply(&deployment(&ns, "spread", &name, 2, "500m", "", &spread));
    // Two nodes in two zones, each launched and hashed.
    let claims = wait_for("two launched NodeClaims in two zones", 4 * MINUTES, || {
        let all = e.json(&[
            "get",
            "nodeclaims",
            "-l",
            &format!("karpenter.sh/nodepool={name}"),
        ]);
        let launched: Vec<(String, String)> = all["items"]
            .as_array()?
            .iter()
            .filter(|c| {
                c["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Initialized" && c["status"] == "True")
                    && c["metadata"]["annotations"][HASH_ANNOTATION].is_string()
            })
            .map(|c| {
                (
                    c["metadata"]["name"].as_str().unwrap().to_string(),
                    c["metadata"]["labels"]["topology.kubernetes.io/zone"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        (launched.len() == 2 && launched[0].1 != launched[1].1).then_some(launched)
    });
    let dir = tempfile::tempdir().unwrap();
    let snapshot = snapshot(&e, dir.path());
    let none: BTreeMap<String, Option<String>> =
        claims.iter().map(|(c, _)| (c.clone(), None)).collect();

    // 1. A limit: nothing drifts.
    let limits = manifest("", "32", false);
    let (v, kelp) = predicted(&limits, &snapshot);
    assert_eq!(kelp, none, "{v:#}");
    assert_eq!(
        v["nodepools"][0]["changes"][0]["drifts"], "nothing",
        "{v:#}"
    );
    karpenter_agrees(&e, &name, &limits, &none);

    // 2. A requirement narrowed to leave out the first node's zone: only that node drifts.
    let (first, zone) = &claims[0];
    let narrowed = manifest(
        &format!(
            "        - {{key: topology.kubernetes.io/zone, operator: NotIn, values: [{zone}]}}"
        ),
        "32",
        false,
    );
    let (v, kelp) = predicted(&narrowed, &snapshot);
    let mut want = none.clone();
    want.insert(first.clone(), Some("RequirementsDrifted".into()));
    assert_eq!(kelp, want, "{v:#}");
    karpenter_agrees(&e, &name, &narrowed, &want);

    // 3. A template label: every node drifts, the hash checked first.
    let labelled = manifest(
        &format!(
            "        - {{key: topology.kubernetes.io/zone, operator: NotIn, values: [{zone}]}}"
        ),
        "32",
        true,
    );
    let (v, kelp) = predicted(&labelled, &snapshot);
    let all: BTreeMap<String, Option<String>> = claims
        .iter()
        .map(|(c, _)| (c.clone(), Some("NodePoolDrifted".into())))
        .collect();
    assert_eq!(kelp, all, "{v:#}");
    assert_ne!(v["nodepools"][0]["hashNow"], v["nodepools"][0]["hashAfter"]);
    karpenter_agrees(&e, &name, &labelled, &all);
    // Karpenter's pool hash is the one kelp computed from the manifest.
    let pool = e.json(&["get", "nodepool", &name]);
    assert_eq!(
        pool["metadata"]["annotations"][HASH_ANNOTATION],
        v["nodepools"][0]["hashAfter"]
    );

    let _ = e.kubectl(&["delete", "namespace", &ns, "--wait=false"], None);
    let _ = e.kubectl(&["delete", "nodepool", &name, "--wait=false"], None);
}

/// A budget of one node: Karpenter replaces the drifted nodes one at a time, in as many
/// waves as kelp said. The time it took is printed beside kelp's ETA (the default per-wave
/// time is this measurement).
#[test]
fn a_budget_of_one_rolls_out_in_waves_of_one_as_predicted() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, name) = (format!("e2e-waves-{id}"), format!("waves-{id}"));
    namespace(&e, &ns);
    let disruption = "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 10m\n    budgets:\n      - {nodes: \"1\"}";
    let manifest = |label: bool| {
        let y = pool_with(&name, &name, "", "", "32", disruption);
        if label {
            with_label(&y, &name, "e2e.kelp.dev/wave: two")
        } else {
            y
        }
    };
    e.apply(&manifest(false));
    // Three pods, one per node.
    let apart = "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: apart}}}";
    e.apply(&deployment(&ns, "apart", &name, 3, "500m", "", apart));
    let claims_of = |e: &Env| -> Vec<Value> {
        let all = e.json(&[
            "get",
            "nodeclaims",
            "-l",
            &format!("karpenter.sh/nodepool={name}"),
        ]);
        all["items"].as_array().cloned().unwrap_or_default()
    };
    let ready = |c: &Value| {
        c["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    };
    let original: Vec<String> = wait_for("three Ready nodes", 4 * MINUTES, || {
        let claims = claims_of(&e);
        (claims.len() == 3 && claims.iter().all(ready)).then(|| {
            claims
                .iter()
                .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let snapshot = snapshot(&e, dir.path());
    let (v, kelp) = predicted(&manifest(true), &snapshot);
    assert_eq!(kelp.len(), 3);
    assert!(
        kelp.values()
            .all(|d| d.as_deref() == Some("NodePoolDrifted")),
        "{v:#}"
    );
    let waves = &v["nodepools"][0]["waves"];
    assert_eq!(
        (waves["perWave"].as_u64(), waves["count"].as_u64()),
        (Some(1), Some(3)),
        "{v:#}"
    );
    let eta = waves["etaSeconds"].as_f64().expect("an ETA");

    // Apply, and watch: never more than one original node going at once, all three replaced.
    let start = std::time::Instant::now();
    e.apply_as_is(&manifest(true));
    let (mut most, mut claims_at_once) = (0, 0);
    wait_for(
        "Karpenter to replace the three drifted nodes",
        10 * MINUTES,
        || {
            let claims = claims_of(&e);
            claims_at_once = claims_at_once.max(claims.len());
            let left: Vec<&Value> = claims
                .iter()
                .filter(|c| original.iter().any(|o| c["metadata"]["name"] == o.as_str()))
                .collect();
            let going = left
                .iter()
                .filter(|c| !c["metadata"]["deletionTimestamp"].is_null())
                .count();
            most = most.max(going);
            std::thread::sleep(Duration::from_millis(500));
            (left.is_empty() && claims.len() == 3 && claims.iter().all(ready)).then_some(())
        },
    );
    let took = start.elapsed().as_secs_f64();
    eprintln!(
        "rollout of 3 nodes, budget 1: {took:.0} s ({:.0} s a wave); kelp's ETA {eta:.0} s",
        took / 3.0
    );
    // One replacement in flight at a time: never a fifth claim, never two originals going.
    assert_eq!(
        claims_at_once, 4,
        "claims at once (3 nodes and one replacement)"
    );
    assert!(most <= 1, "Karpenter replaced more than one node at a time");
    // The time is reported, not asserted (a loaded machine is slower): the README carries
    // the figure against kelp's ETA.
    let _ = e.kubectl(&["delete", "namespace", &ns, "--wait=false"], None);
    let _ = e.kubectl(&["delete", "nodepool", &name, "--wait=false"], None);
}
