//! The dashboard on the real control plane: `kelp serve` watching the real API server,
//! with the real Karpenter (kwok provider) provisioning. A tainted pool, a pod only it
//! could take, a NodeClaim Karpenter launched for a second pod; then the page, the pane
//! (with the object as the API server returns it) and the JSON API are checked.

mod common;

use common::*;
use scraper::{Html, Selector};

fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or(resp)
}

fn count(h: &Html, s: &str) -> usize {
    h.select(&Selector::parse(s).unwrap()).count()
}

fn text(h: &Html, s: &str) -> String {
    h.select(&Selector::parse(s).unwrap())
        .map(|e| e.text().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_dashboard_shows_the_real_cluster() {
    let Some(e) = env() else { return };
    let ns = "e2e-dash";
    namespace(&e, ns);
    e.fresh(ns, &["dash-waiting", "dash-running"]);
    // A pool for the running pod, and one tainted pool the waiting pod does not tolerate.
    e.apply(&pool("e2e-dash-open", "dash", "", "8"));
    e.apply(&pool(
        "e2e-dash-tainted",
        "dash-t",
        "      taints: [{key: e2e.kelp.dev/scenario, value: dash-t, effect: NoSchedule}, {key: dedicated, value: gpu, effect: NoSchedule}]",
        "8",
    ));
    e.apply(&pod(ns, "dash-running", "dash", "500m", ""));
    let waiting = pod(ns, "dash-waiting", "dash-t", "500m", "");
    e.apply(&waiting);
    let claim_pool = launched_pool(&e, ns, "dash-running");
    assert_eq!(claim_pool, "e2e-dash-open");

    let serve = Serve::start(&e);
    let page = "/clusters/kelp-testenv/karpenter";
    // The context name is the cluster's name in the URL.
    let (_, root) = wait_for("the dashboard", MINUTES, || {
        serve.dash("/").filter(|(c, _)| *c == 303)
    });
    let location = root
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap_or_default()
        .trim()
        .to_string();
    let page = if location.is_empty() {
        page.to_string()
    } else {
        location
    };
    let html = wait_for("the pending pod on the page", 2 * MINUTES, || {
        let (code, resp) = serve.dash(&page)?;
        let h = Html::parse_document(body(&resp));
        (code == 200
            && count(
                &h,
                &format!("#pending tbody.pod[data-key='{ns}/dash-waiting']"),
            ) == 1)
            .then_some(h)
    });
    // NodePools panel: both pools, with their cpu limit bars; kwok prices from node labels.
    for p in ["e2e-dash-open", "e2e-dash-tainted"] {
        assert_eq!(
            count(
                &html,
                &format!("#nodepools tr.pool[data-select='NodePool/{p}'] meter")
            ),
            1,
            "{p}"
        );
    }
    // The waiting pod's verdict for the tainted pool names the taint kelp computed.
    let why = text(
        &html,
        &format!("#pending tbody.pod[data-key='{ns}/dash-waiting'] tr.verdicts"),
    );
    assert!(why.contains("e2e-dash-tainted"), "{why}");
    assert!(why.contains("dedicated=gpu:NoSchedule"), "{why}");
    // NodeClaims panel: the group of the pool Karpenter launched from (collapsed: its rows
    // come from the fragment).
    assert_eq!(
        count(&html, "#nodeclaims tbody.group[data-pool='e2e-dash-open']"),
        1
    );
    let (code, rows) = serve
        .dash(&format!("{page}/nodeclaims/e2e-dash-open"))
        .unwrap();
    assert_eq!(code, 200);
    let rows = Html::parse_fragment(&format!("<table>{}</table>", body(&rows)));
    let claim = rows
        .select(&Selector::parse("tr.claim").unwrap())
        .next()
        .and_then(|r| r.value().attr("data-select"))
        .expect("a NodeClaim row")
        .to_string();
    assert!(count(&rows, "tr.claim .badge.tone-ok") >= 1);
    // The pane's yaml is the live object, without managedFields.
    let (code, pane) = serve
        .dash(&format!("{page}/pane?sel={claim}&tab=yaml"))
        .unwrap();
    assert_eq!(code, 200, "{pane}");
    let pane = Html::parse_fragment(body(&pane));
    let yaml = text(&pane, ".tab-body[data-tab='yaml'] pre");
    assert!(yaml.contains("apiVersion: karpenter.sh/v1"), "{yaml}");
    assert!(yaml.contains("uid:"), "the full object: {yaml}");
    assert!(!yaml.contains("managedFields"), "{yaml}");
    // The JSON API agrees with the page.
    let api = page.replace("/clusters/", "/api/v1/clusters/");
    let (_, overview) = serve.dash(&api).unwrap();
    let v: serde_json::Value = serde_json::from_str(body(&overview)).unwrap();
    assert!(v["pending"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "dash-waiting"));
    let cluster = v["cluster"].as_str().unwrap().to_string();
    let (code, why) = serve
        .dash(&format!(
            "/api/v1/clusters/{cluster}/pods/{ns}/dash-waiting/why"
        ))
        .unwrap();
    assert_eq!(code, 200);
    let why: serde_json::Value = serde_json::from_str(body(&why)).unwrap();
    assert_eq!(verdict(&why, "e2e-dash-tainted")["verdict"], "rejected");
    // Every read was audited.
    let logs = serve.logs();
    assert!(
        logs.lines()
            .any(|l| l.contains("\"target\":\"audit\"") && l.contains("karpenter_read")),
        "{logs}"
    );
    e.kubectl(
        &[
            "delete",
            "nodepool",
            "e2e-dash-open",
            "e2e-dash-tainted",
            "--wait=false",
        ],
        None,
    );
}
