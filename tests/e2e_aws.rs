//! kelp against the real AWS Karpenter controller (karpenter-provider-aws v1.15.2) on
//! testenv, with moto as its AWS (`testenv/aws-controller up`; scripts/e2e runs it):
//! - an EC2NodeClass whose subnet selector matches nothing: the controller sets
//!   SubnetsReady=False (SubnetsNotFound), and kelp's `nodepool-not-ready` names that
//!   condition and what to do;
//! - a pool on a Ready EC2NodeClass: kelp's `what-if`, before the pod exists, calls it
//!   compatible from the controller's own metrics; the controller launches through moto's
//!   CreateFleet; the launched type's allocatable in kelp's catalogue is the NodeClaim's, as
//!   the controller computed it;
//! - an AMI change by id (not in the class's hash): `what-if --nodeclasses` says the node's
//!   drift is unknown (AMIDrift turns on what EC2 resolves), the controller then marks it
//!   AMIDrift, and kelp's `nodeclaim-drifted` says what that means; the controller replaces
//!   it on the new AMI;
//! - a new tag (in the hash): `what-if --nodeclasses` predicts NodeClassDrift for the
//!   replacement, and the controller marks it so once the change is applied;
//! - CreateFleet with no capacity for a pool's only type (moto answers as EC2 does, through
//!   `testenv/aws/moto/server.py`'s hook): kelp calls the pool compatible before; the
//!   controller marks the offerings unavailable in every zone; kelp, reading its metrics,
//!   then rejects the pool for instance types and reports insufficient capacity;
//! - a spot node the controller launched gets EC2's interruption warning on the
//!   controller's SQS queue (moto's): the controller writes SpotInterrupted and replaces it,
//!   and kelp's `spot-interruption` counts it for the pool (none before).
//!
//! Needs a testenv up and `testenv/aws-controller up` on it; skipped (with a note) without
//! them unless KELP_E2E is set.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

/// The AWS controller's env (`$KELP_TESTENV_DIR/aws-env`), or None when it is not up.
fn aws_env() -> Option<(Env, String)> {
    let e = env()?;
    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    let text = std::fs::read_to_string(PathBuf::from(&dir).join("aws-env")).unwrap_or_default();
    let metrics = text
        .lines()
        .find_map(|l| l.strip_prefix("export AWS_METRICS_URL="))
        .map(str::to_string);
    match metrics {
        Some(m) => Some((e, m)),
        None => {
            assert!(
                std::env::var_os("KELP_E2E").is_none(),
                "KELP_E2E is set but the AWS controller is not up in {dir}: run testenv/aws-controller up"
            );
            eprintln!("e2e: skipped, the AWS controller is not up (testenv/aws-controller up)");
            None
        }
    }
}

fn class(name: &str, subnet_tag: &str, extra: &str) -> String {
    format!(
        r#"apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: {name}
spec:
  role: KarpenterNodeRole-kelp
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: {subnet_tag}}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: kelp}}}}]
{extra}"#
    )
}

fn aws_pool(name: &str, class: &str) -> String {
    format!(
        r#"apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  limits: {{cpu: "100"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: {class}}}
      requirements:
      - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
      - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
      - {{key: karpenter.k8s.aws/instance-category, operator: In, values: [m, c]}}
"#
    )
}

fn workload(ns: &str, pool: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: inflate, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: inflate}}}}
  template:
    metadata: {{labels: {{app: inflate}}}}
    spec:
      nodeSelector: {{karpenter.sh/nodepool: {pool}}}
      tolerations: [{{key: karpenter.sh/unregistered, operator: Exists}}]
      terminationGracePeriodSeconds: 0
      containers:
      - name: pause
        image: registry.k8s.io/pause:3.10
        resources: {{requests: {{cpu: "1"}}}}
"#
    )
}

fn condition<'a>(obj: &'a Value, t: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

/// moto's URL, from the AWS controller's env.
fn moto_url() -> String {
    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    let text = std::fs::read_to_string(PathBuf::from(&dir).join("aws-env")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("export AWS_MOTO_URL="))
        .unwrap()
        .to_string()
}

/// The first NodeClaim of `pool` that `pick` accepts, once there is one.
fn claim_where(
    e: &Env,
    pool: &str,
    what: &str,
    timeout: std::time::Duration,
    pick: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(what, timeout, || {
        let selector = format!("karpenter.sh/nodepool={pool}");
        let list = e.json(&["get", "nodeclaims", "-l", &selector]);
        list["items"].as_array()?.iter().find(|c| pick(c)).cloned()
    })
}

/// Wait until the controller calls the EC2NodeClass Ready.
fn class_ready(e: &Env, name: &str) {
    wait_for("the EC2NodeClass Ready", 2 * MINUTES, || {
        let c = e.json(&["get", "ec2nodeclass", name]);
        condition(&c, "Ready")
            .filter(|r| r["status"] == "True")
            .map(|_| ())
    });
}

/// One claim's entry in `what-if`'s JSON.
fn judged<'a>(impact: &'a Value, claim: &str) -> &'a Value {
    impact["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["nodeclaim"] == claim)
        .unwrap_or_else(|| panic!("{claim} not judged: {impact:#}"))
}

/// The claim's Drifted condition, once the controller sets it.
fn drifted(e: &Env, claim: &str) -> Value {
    wait_for("the controller's Drifted condition", 3 * MINUTES, || {
        let c = e.json(&["get", "nodeclaim", claim]);
        condition(&c, "Drifted")
            .filter(|d| d["status"] == "True")
            .cloned()
    })
}

/// The controller's /metrics once it lists instance types, written to a file for kelp.
fn scrape(url: &str, dir: &std::path::Path) -> PathBuf {
    let path = dir.join("aws-metrics.txt");
    wait_for(
        "the controller's instance-type metrics",
        2 * MINUTES,
        || {
            let out = std::process::Command::new("curl")
                .args(["-fs", url])
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.contains("karpenter_cloudprovider_instance_type_offering_price_estimate")
                .then(|| std::fs::write(&path, &text).unwrap())
        },
    );
    path
}

#[test]
fn a_class_whose_subnets_match_nothing_is_not_ready_and_kelp_says_which_condition() {
    let Some((e, _)) = aws_env() else { return };
    let name = "aws-nosubnet";
    e.apply(&class(name, "nothing-has-this-tag", ""));
    // Never Ready: not waited for.
    e.apply_as_is(&aws_pool(name, name));
    let why = wait_for("SubnetsReady=False", 2 * MINUTES, || {
        let c = e.json(&["get", "ec2nodeclass", name]);
        condition(&c, "SubnetsReady")
            .filter(|s| s["status"] == "False")
            .cloned()
    });
    assert_eq!(why["reason"], "SubnetsNotFound", "{why}");
    let finding = wait_for("kelp's nodepool-not-ready", MINUTES, || {
        let report = e.doctor();
        find(&report, "nodepool-not-ready", name)
            .and_then(|f| f["message"].as_str().map(str::to_string))
            .filter(|m| m.contains("SubnetsReady=False"))
    });
    assert!(
        finding.contains(&format!(
            "EC2NodeClass {name}: SubnetsReady=False (SubnetsNotFound"
        )),
        "{finding}"
    );
    let advice =
        kelp::karpenter::aws::nodeclass::advice("SubnetsReady", "SubnetsNotFound").unwrap();
    assert!(finding.contains(advice), "{finding}");
    e.ok(&["delete", "nodepool", name]);
    e.ok(&["delete", "ec2nodeclass", name, "--wait=false"]);
}

#[test]
fn a_launch_through_moto_has_kelps_allocatable_and_a_class_change_drifts_as_predicted() {
    let Some((e, metrics_url)) = aws_env() else {
        return;
    };
    let (name, ns) = ("aws", "kelp-aws");
    let dir = tempfile::tempdir().unwrap();
    let class_yaml = class(name, "kelp", "");
    let pool_yaml = aws_pool(name, name);
    e.apply(&class_yaml);
    e.apply(&pool_yaml);
    class_ready(&e, name);
    let metrics = scrape(&metrics_url, dir.path());

    // Before the pod exists: the pool takes it, judged from the controller's own types.
    let files = |n: &str, text: &str| {
        let p = dir.path().join(n);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let pod_file = files("workload.yaml", &workload(ns, name));
    let pool_file = files("pool.yaml", &pool_yaml);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args(["what-if", "--pod", &pod_file, "--nodepools", &pool_file])
        .args(["--metrics-file", &metrics.to_string_lossy(), "-o", "json"])
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let verdict = &answer["pods"][0]["nodepools"][0];
    assert_eq!(verdict["name"], name, "{answer:#}");
    assert_eq!(verdict["verdict"], "compatible", "{answer:#}");
    assert_eq!(answer["catalog"], "karpenter-metrics", "{answer:#}");

    namespace(&e, ns);
    e.apply(&workload(ns, name));
    let claim = claim_where(
        &e,
        name,
        "a NodeClaim launched through moto",
        3 * MINUTES,
        |c| {
            condition(c, "Launched").is_some_and(|l| l["status"] == "True")
                && c["status"]["providerID"].is_string()
        },
    );
    let claim_name = claim["metadata"]["name"].as_str().unwrap().to_string();
    let itype = claim["metadata"]["labels"]["node.kubernetes.io/instance-type"]
        .as_str()
        .unwrap()
        .to_string();
    // Not asserted: that it is the type kelp predicted. The controller asks CreateFleet for
    // the lowest price among up to 60 types, and moto does not choose as EC2 does (the
    // first run launched kelp's c6a.large, a later one c8in.large).
    eprintln!(
        "e2e_aws: launched {itype}; kelp's cheapest: {}",
        verdict["launch"]["cheapest"][0]["instanceType"]
    );
    // kelp's catalogue, from the controller's metrics and the cluster's EC2NodeClass: the
    // launched type's allocatable is the one the controller gave the NodeClaim.
    let catalog = e.kelp_json(&["catalog", "--metrics-file", &metrics.to_string_lossy()]);
    let it = catalog["instanceTypes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == itype.as_str())
        .unwrap_or_else(|| panic!("{itype} is not in kelp's catalogue"));
    assert!(it.get("allocatableMost").is_none(), "{it}");
    let q = |v: &Value| kelp::karpenter::resources::quantity_value(v.as_str().unwrap()).unwrap();
    for r in ["cpu", "memory", "pods", "ephemeral-storage"] {
        let (want, got) = (
            q(&claim["status"]["allocatable"][r]),
            q(&it["allocatable"][r]),
        );
        assert!(
            (want - got).abs() < 1e-6 * want.max(1.0),
            "{itype} {r}: the controller {want}, kelp {got}"
        );
    }
    wait_for("the pod Running on the shim's node", 3 * MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns, "-l", "app=inflate"]);
        pods["items"]
            .as_array()?
            .iter()
            .any(|p| p["status"]["phase"] == "Running")
            .then_some(())
    });

    // Another AMI, by id, for the same family: not in the class's hash; the node drifts by
    // what EC2 resolves the new term to, which kelp cannot see: unknown (exit 3) before,
    // then the controller's AMIDrift, which kelp explains.
    let other_ami = "  amiFamily: AL2023\n";
    let by_id = class(name, "kelp", other_ami).replace(
        "amiSelectorTerms: [{alias: al2023@latest}]",
        "amiSelectorTerms: [{id: ami-04681a1dbd79675a5}]",
    );
    let by_id_file = files("class-ami.yaml", &by_id);
    let out = e.kelp(&["what-if", "--nodeclasses", &by_id_file, "-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let impact: Value = serde_json::from_slice(&out.stdout).unwrap();
    let node = judged(&impact, &claim_name);
    assert!(node["drift"].is_null(), "{impact:#}");
    assert!(
        node["unknown"].as_str().unwrap().contains("AMIDrift"),
        "{impact:#}"
    );
    e.apply(&by_id);
    let ami = drifted(&e, &claim_name);
    assert_eq!(ami["reason"], "AMIDrift", "{ami}");
    let explained = wait_for("kelp's nodeclaim-drifted", MINUTES, || {
        find(&e.doctor(), "nodeclaim-drifted", &claim_name)
            .and_then(|f| f["message"].as_str().map(str::to_string))
    });
    let meaning = kelp::karpenter::aws::nodeclass::drift_meaning("AMIDrift").unwrap();
    assert!(
        explained.contains("(AMIDrift)") && explained.contains(meaning),
        "{explained}"
    );

    // The controller replaces it with a node on the new AMI, which nothing drifts.
    let claim = claim_where(
        &e,
        name,
        "the replacement on the new AMI",
        4 * MINUTES,
        |c| {
            c["status"]["imageID"] == "ami-04681a1dbd79675a5"
                && condition(c, "Initialized").is_some_and(|l| l["status"] == "True")
        },
    );
    let claim_name = claim["metadata"]["name"].as_str().unwrap().to_string();

    // A tag the class's hash reads: kelp predicts NodeClassDrift for the node, live, before
    // the change; the controller then marks it so.
    let changed = class(
        name,
        "kelp",
        &format!("{other_ami}  tags: {{team: payments}}\n"),
    )
    .replace(
        "amiSelectorTerms: [{alias: al2023@latest}]",
        "amiSelectorTerms: [{id: ami-04681a1dbd79675a5}]",
    );
    let changed_file = files("class.yaml", &changed);
    let impact = e.kelp_json(&["what-if", "--nodeclasses", &changed_file]);
    let node = judged(&impact, &claim_name);
    assert_eq!(node["drift"], "NodeClassDrift", "{impact:#}");
    e.apply(&changed);
    let hashed = drifted(&e, &claim_name);
    assert_eq!(hashed["reason"], "NodeClassDrift", "{hashed}");

    e.ok(&["delete", "namespace", ns, "--wait=false"]);
    e.ok(&["delete", "nodepool", name]);
    e.ok(&["delete", "ec2nodeclass", name, "--wait=false"]);
}

/// How many zones the controller's metrics give `itype`'s on-demand offering as `value`
/// (" 1" available, " 0" not).
fn offerings(metrics_url: &str, itype: &str, value: &str) -> usize {
    let out = std::process::Command::new("curl")
        .args(["-fs", metrics_url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("karpenter_cloudprovider_instance_type_offering_available{")
                && l.contains(&format!("instance_type=\"{itype}\""))
                && l.contains("capacity_type=\"on-demand\"")
                && l.ends_with(value)
        })
        .count()
}

/// POST `body` to one of moto's test hooks (testenv/aws/moto/server.py).
fn hook(moto: &str, path: &str, body: &str) {
    let out = std::process::Command::new("curl")
        .args(["-fs", "-X", "POST", "--data", body])
        .arg(format!("{moto}/_kelp/{path}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "moto's /_kelp/{path}");
}

/// Tell moto to answer CreateFleet for these types as EC2 does with no capacity.
fn ice(moto: &str, types: &[&str]) {
    hook(moto, "ice", &serde_json::to_string(types).unwrap());
}

#[test]
fn an_offering_createfleet_has_no_capacity_for_is_unavailable_to_kelp_too() {
    let Some((e, metrics_url)) = aws_env() else {
        return;
    };
    let moto = moto_url();
    let (name, ns, itype) = ("aws-ice", "kelp-aws-ice", "m5.large");
    // What an earlier run left: its pending pod would keep asking for the type.
    ice(&moto, &[]);
    e.ok(&["delete", "namespace", ns, "--ignore-not-found"]);
    e.apply(&class(name, "kelp", ""));
    let pool = aws_pool(name, name).replace(
        "      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [m, c]}\n",
        &format!(
            "      - {{key: node.kubernetes.io/instance-type, operator: In, values: [{itype}]}}\n"
        ),
    );
    e.apply(&pool);
    class_ready(&e, name);
    let tmp = tempfile::tempdir().unwrap();
    let metrics = scrape(&metrics_url, tmp.path());
    let m = metrics.to_string_lossy().into_owned();
    // Offered in every zone (an earlier run's ICE stays in the controller's cache 3 min).
    wait_for("the offerings available", 4 * MINUTES, || {
        (offerings(&metrics_url, itype, " 1") >= 3).then(|| scrape(&metrics_url, tmp.path()))
    });
    ice(&moto, &[itype]);
    namespace(&e, ns);
    e.apply(&workload(ns, name));
    let pod = wait_for("the pod", MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns, "-l", "app=inflate"]);
        pods["items"].as_array()?.first()?["metadata"]["name"]
            .as_str()
            .map(str::to_string)
    });
    let target = format!("{ns}/{pod}");
    // Before the launch: the offering is there, the pool takes the pod.
    let before = e.kelp_json(&["why", "pod", &target, "--metrics-file", &m]);
    assert_eq!(
        verdict(&before, name)["verdict"],
        "compatible",
        "{before:#}"
    );

    // The controller's CreateFleet gets InsufficientInstanceCapacity in every zone; it
    // marks the offerings unavailable, which its metrics say and kelp reads.
    wait_for(
        "the offerings unavailable in the controller's metrics",
        3 * MINUTES,
        || (offerings(&metrics_url, itype, " 0") >= 3).then(|| scrape(&metrics_url, tmp.path())),
    );
    let after = e.kelp_json(&["why", "pod", &target, "--metrics-file", &m]);
    let v = verdict(&after, name);
    assert_eq!(v["verdict"], "rejected", "{after:#}");
    // In Karpenter's words for a pool none of whose types has an available offering left.
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("instance-types"), "{reasons}");
    assert!(reasons.contains("available instance types"), "{reasons}");
    let report = e.kelp_json(&["doctor", "--metrics-file", &m]);
    assert!(
        !findings(&report, "insufficient-capacity").is_empty(),
        "{report:#}"
    );
    ice(&moto, &[]);
    e.ok(&["delete", "namespace", ns, "--wait=false"]);
    e.ok(&["delete", "nodepool", name]);
    e.ok(&["delete", "ec2nodeclass", name, "--wait=false"]);
}

/// Put EC2's spot interruption warning for `instance` on the controller's queue.
fn interrupt(moto: &str, instance: &str) {
    let body = serde_json::json!({"queue": "kelp", "instance": instance});
    hook(moto, "interrupt", &body.to_string());
}

#[test]
fn a_spot_interruption_warning_is_one_kelp_counts_for_the_pool() {
    let Some((e, _)) = aws_env() else { return };
    let moto = moto_url();
    let (name, ns) = ("aws-spot", "kelp-aws-spot");
    e.apply(&class(name, "kelp", ""));
    let pool = aws_pool(name, name).replace("values: [on-demand]", "values: [spot]");
    e.apply(&pool);
    namespace(&e, ns);
    e.apply(&workload(ns, name));
    let claim = claim_where(
        &e,
        name,
        "a spot NodeClaim launched through moto",
        3 * MINUTES,
        |c| condition(c, "Initialized").is_some_and(|l| l["status"] == "True"),
    );
    let claim_name = claim["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(
        claim["metadata"]["labels"]["karpenter.sh/capacity-type"],
        "spot"
    );
    // Before: nothing interrupted.
    assert!(find(&e.doctor(), "spot-interruption", name).is_none());
    let instance = claim["status"]["providerID"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    interrupt(&moto, &instance);
    // The controller writes SpotInterrupted and replaces the node; kelp counts one
    // interruption for the pool.
    let f = wait_for("kelp's spot-interruption", 2 * MINUTES, || {
        find(&e.doctor(), "spot-interruption", name).cloned()
    });
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("1 SpotInterrupted"), "{message}");
    assert!(message.contains("(1 node)"), "{message}");
    assert_eq!(f["details"]["objects"][0], claim_name.as_str(), "{f:#}");
    e.ok(&["delete", "namespace", ns, "--wait=false"]);
    e.ok(&["delete", "nodepool", name]);
    e.ok(&["delete", "ec2nodeclass", name, "--wait=false"]);
}
