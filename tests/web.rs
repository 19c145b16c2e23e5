//! The dashboard's handlers, in process: the router is built on a loaded model and each
//! page is checked with CSS selectors.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use kelp::model::Cluster;
use kelp::serve::loaded;
use kelp::view::PriceProblem;
use scraper::{Html, Selector};
use tower::ServiceExt;

mod common;
use common::web::*;

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn count(h: &Html, s: &str) -> usize {
    h.select(&sel(s)).count()
}

fn text(h: &Html, s: &str) -> String {
    h.select(&sel(s))
        .map(|e| e.text().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

const PAGE: &str = "/clusters/test/karpenter";

#[tokio::test]
async fn a_page_is_built_only_for_someone_to_see_it() {
    let (shared, board) = loaded("test", demo(), now());
    // Nobody has looked: the pass is there, its page is not.
    assert!(board.pass().is_some());
    assert!(!board.watched());
    assert!(!board.has_page());
    let app = site_of(vec![board.clone()], None);
    // Answers read the pass alone: they build no page and are no look.
    let findings = get(&app, "/api/v1/clusters/test/findings").await;
    assert_eq!(findings.status, StatusCode::OK);
    assert!(!board.has_page() && !board.watched());
    // A page is: it is built now, from the model the pass read.
    let first = get(&app, "/api/v1/clusters/test/karpenter").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(board.has_page() && board.watched());
    // Watched, the next pass builds its page with it, and it says the same.
    shared.pass(now());
    assert!(board.has_page());
    let second = get(&app, "/api/v1/clusters/test/karpenter").await;
    assert_eq!(first.body, second.body);
    assert!(first.body.contains("\"nodepools\""), "{}", first.body);
}

#[tokio::test]
async fn root_redirects_to_the_first_cluster() {
    let app = site(demo());
    let r = get(&app, "/").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.headers["location"], PAGE);
}

#[tokio::test]
async fn the_demo_page_has_every_panel() {
    let app = site(demo());
    let r = get(&app, PAGE).await;
    assert_eq!(r.status, StatusCode::OK);
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let h = r.html();
    // No inline script at all: the only script is the served file.
    assert_eq!(count(&h, "script"), 1);
    assert_eq!(count(&h, "script[src='/static/kelp.js']"), 1);
    assert_eq!(count(&h, "[onclick], [onerror], [onload]"), 0);
    for id in [
        "#nodepools",
        "#nodeclaims",
        "#pending",
        "#rollout",
        "#capacity",
        "#timeline",
        "#findings",
    ] {
        assert_eq!(count(&h, id), 1, "{id}");
    }
    // NodePools: one row per pool, with limits bars, budgets and cost columns.
    assert_eq!(count(&h, "#nodepools tr.pool"), 6);
    let batch = text(&h, "#nodepools tr.pool[data-select='NodePool/batch']");
    assert!(batch.contains("cpu") && batch.contains("100%"), "{batch}");
    assert_eq!(
        count(
            &h,
            "#nodepools tr.pool[data-select='NodePool/batch'] .limit.full meter"
        ),
        1
    );
    assert_eq!(count(&h, "#nodepools th.cost"), 2);
    assert!(text(&h, "#nodepools tr.pool").contains("$"));
    assert_eq!(count(&h, "#cost-hint"), 0);
    // arm64's first budget (0 for Drifted, 06:00 for 8h) is active at 10:00.
    assert_eq!(
        count(
            &h,
            "tr.pool[data-select='NodePool/arm64'] .budget.active .badge.active"
        ),
        2
    );
    // NodeClaims: grouped by pool; pools with drift open, with the drifted badge.
    let groups = count(&h, "#nodeclaims tbody.group");
    assert!(groups >= 4, "{groups}");
    assert!(count(&h, "#nodeclaims tbody.group.open") >= 1);
    assert_eq!(
        count(&h, "#nodeclaims tbody.group:not(.open) tr.claim"),
        0,
        "closed groups load their rows on demand"
    );
    assert!(
        count(
            &h,
            "#nodeclaims tbody.group.open tr.group-head .badge.drifted"
        ) >= 1
    );
    assert!(count(&h, "#nodeclaims tr.claim .badge.drifted") >= 1);
    assert!(count(&h, "#nodeclaims tr.claim .badge.tone-ok").ge(&1));
    let blocked = text(&h, "#nodeclaims tr.claim .badge.blocked");
    assert!(blocked.contains("blocked by"), "{blocked}");
    assert!(
        blocked.contains("budget") || blocked.contains("pdb"),
        "{blocked}"
    );
    // Pending pods: per-pool verdicts and the raw event, in the expandable row.
    let trainer = "#pending tbody.pod[data-key='ml/trainer-0']";
    assert_eq!(count(&h, trainer), 1);
    assert_eq!(count(&h, &format!("{trainer} tr.verdicts[hidden]")), 1);
    assert_eq!(count(&h, &format!("{trainer} tr.verdict")), 6);
    assert_eq!(
        count(
            &h,
            &format!("{trainer} tr.verdict.rejected .badge.v-rejected")
        ),
        6
    );
    let why = text(&h, &format!("{trainer} tr.verdicts"));
    assert!(why.contains("did not tolerate taint"), "{why}");
    assert!(why.contains("Failed to schedule pod"), "{why}");
    // Rollout, capacity, timeline, findings.
    assert!(count(&h, "#rollout tr.rollout") >= 1);
    assert!(text(&h, "#rollout").contains("ami-"));
    assert!(text(&h, "#capacity").contains("g6.12xlarge"));
    // The failed launch's claim is gone: the type, zone and pool come from the event.
    let ice = text(&h, "#capacity table.ice tbody tr");
    assert!(
        ice.contains("g6.12xlarge") && ice.contains("us-west-2c") && ice.contains("gpu"),
        "{ice}"
    );
    // Findings about kinds the pane cannot show are not clickable.
    assert_eq!(
        count(&h, "#findings tr.finding[data-select^='DaemonSet/']"),
        0
    );
    assert!(text(&h, "#findings").contains("DaemonSet/logging/log-shipper"));
    // A shortcut icon, so browsers do not ask for /favicon.ico.
    assert_eq!(count(&h, "link[rel='icon']"), 1);
    assert!(count(&h, "#timeline svg circle.mark") >= 1);
    assert!(count(&h, "#findings tr.finding.critical") >= 1);
    assert!(count(&h, "#findings tr.finding[data-select^='Pod/']") >= 1);
    // The release the demo's controller runs, read from its image, and where from.
    assert_eq!(text(&h, "#karpenter-version"), "Karpenter v1.14.1");
    assert_eq!(count(&h, "#karpenter-version.untested"), 0);
    let title = h
        .select(&sel("#karpenter-version"))
        .next()
        .and_then(|e| e.value().attr("title"))
        .unwrap_or_default()
        .to_string();
    assert!(
        title.contains("public.ecr.aws/karpenter/controller:1.14.1"),
        "{title}"
    );
}

#[tokio::test]
async fn a_collapsed_group_loads_its_rows() {
    let app = site(demo());
    let h = get(&app, PAGE).await.html();
    let pool = h
        .select(&sel("#nodeclaims tbody.group:not(.open)"))
        .next()
        .and_then(|g| g.value().attr("data-pool"))
        .expect("a collapsed group")
        .to_string();
    let r = get(&app, &format!("{PAGE}/nodeclaims/{pool}")).await;
    assert_eq!(r.status, StatusCode::OK);
    let rows = Html::parse_fragment(&format!("<table><tbody>{}</tbody></table>", r.body));
    assert!(count(&rows, "tr.claim") >= 1, "{}", r.body);
    assert_eq!(
        get(&app, &format!("{PAGE}/nodeclaims/nope")).await.status,
        StatusCode::NOT_FOUND
    );
}

/// Six pools of twelve drifted NodeClaims each: every group opens (drift is news), and the
/// page renders ten rows per group and fifty in all, as many as its other lists.
#[tokio::test]
async fn drifted_claims_are_capped_per_group_and_in_all() {
    let mut yaml = "apiVersion: v1\nkind: List\nitems:\n".to_string();
    for p in 0..6 {
        yaml.push_str(&format!(
            "- {{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {{name: pool-{p}, uid: np{p}}}}}\n"
        ));
        for i in 0..12 {
            yaml.push_str(&format!(
                "- apiVersion: karpenter.sh/v1\n  kind: NodeClaim\n  metadata: {{name: pool-{p}-{i:02}, uid: c{p}-{i}, labels: {{karpenter.sh/nodepool: pool-{p}}}, creationTimestamp: \"2026-11-21T08:00:00Z\"}}\n  status:\n    conditions: [{{type: Drifted, status: \"True\", reason: NodePoolDrifted}}]\n"
            ));
        }
    }
    let app = site(load(&yaml));
    let h = get(&app, PAGE).await.html();
    assert_eq!(
        count(&h, "#nodeclaims tbody.group.open"),
        6,
        "{}",
        text(&h, "#nodeclaims")
    );
    assert_eq!(count(&h, "#nodeclaims tr.claim"), 50);
    for g in h.select(&sel("#nodeclaims tbody.group.open")) {
        assert!(g.select(&sel("tr.claim")).count() <= 10);
    }
}

fn pending_pod(i: usize) -> String {
    format!(
        r#"
- apiVersion: v1
  kind: Pod
  metadata: {{name: p-{i:03}, namespace: load, uid: u{i}, creationTimestamp: "2026-11-21T09:{m:02}:00Z"}}
  spec:
    containers: [{{name: a, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
  status:
    phase: Pending
    conditions:
    - {{type: PodScheduled, status: "False", reason: Unschedulable, lastTransitionTime: "2026-11-21T09:{m:02}:00Z"}}
"#,
        m = i % 60
    )
}

const POOL: &str = r#"
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: general, uid: np1}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
        taints: [{key: team, value: x, effect: NoSchedule}]
    limits: {cpu: "100"}
  status:
    conditions: [{type: Ready, status: "True"}]
"#;

#[tokio::test]
async fn pending_pods_are_capped_at_50_oldest_first() {
    let mut yaml = format!("apiVersion: v1\nkind: List\nitems:{POOL}");
    for i in 0..60 {
        yaml.push_str(&pending_pod(i));
    }
    let app = site(load(&yaml));
    let h = get(&app, PAGE).await.html();
    assert_eq!(count(&h, "#pending tbody.pod"), 50);
    assert!(
        text(&h, "#pending .cap-note").contains("showing first 50 of 60"),
        "{}",
        text(&h, "#pending")
    );
    let first = h
        .select(&sel("#pending tbody.pod"))
        .next()
        .unwrap()
        .value()
        .attr("data-key")
        .unwrap()
        .to_string();
    assert_eq!(first, "load/p-000");
    // No event yet: the page says so instead of inventing one.
    assert!(text(&h, "#pending tbody.pod .no-event").contains("no scheduling event found yet"));
    // And the computed verdict names the taint.
    assert!(text(&h, "#pending tbody.pod").contains("did not tolerate taint"));
}

#[tokio::test]
async fn empty_states_say_so() {
    let yaml = r#"
apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: nodepools.karpenter.sh}
  spec:
    group: karpenter.sh
    names: {kind: NodePool, plural: nodepools}
    versions: [{name: v1, served: true, storage: true}]
"#;
    let app = site(load(yaml));
    let h = get(&app, PAGE).await.html();
    assert_eq!(count(&h, "#install"), 0, "{}", text(&h, "#install"));
    assert!(text(&h, "#nodepools .empty").contains("No NodePools"));
    assert!(text(&h, "#nodeclaims .empty").contains("No NodeClaims"));
    assert!(text(&h, "#pending .empty").contains("No pending pods"));
    assert!(text(&h, "#capacity .empty").contains("No unavailable offerings"));
    assert!(text(&h, "#timeline .empty").contains("Nothing happened"));
}

#[tokio::test]
async fn karpenter_missing_is_explained_with_a_fix() {
    // Not installed: an authoritative discovery with no Karpenter group.
    let mut c = Cluster::default();
    c.api.authoritative = true;
    let h = get(&site(c), PAGE).await.html();
    assert_eq!(count(&h, "#install[data-state='not-installed']"), 1);
    assert!(text(&h, "#install").contains("Install Karpenter"));
    assert_eq!(count(&h, "#nodepools"), 0);

    // Only v1beta1: say to migrate.
    let mut c = Cluster::default();
    c.api.authoritative = true;
    c.api.served.insert("karpenter.sh/v1beta1".into());
    let h = get(&site(c), PAGE).await.html();
    assert_eq!(count(&h, "#install[data-state='v1beta1-only']"), 1);
    assert!(text(&h, "#install").contains("migrate"));

    // RBAC: name the permission.
    let (shared, board) = loaded("test", Cluster::default(), now());
    shared.set_forbidden(Some(
        "list and watch nodepools.karpenter.sh are forbidden (nodepools.karpenter.sh is forbidden: User \"system:serviceaccount:kelp:kelp\" cannot list resource \"nodepools\")".into(),
    ));
    shared.pass(now());
    let h = get(&site_of(vec![board], None), PAGE).await.html();
    assert_eq!(count(&h, "#install[data-state='forbidden']"), 1);
    let t = text(&h, "#install");
    assert!(t.contains("list and watch nodepools.karpenter.sh"), "{t}");
    assert!(t.contains("get, list and watch on nodepools"), "{t}");
}

#[tokio::test]
async fn without_prices_the_cost_columns_hide_and_a_hint_names_the_cause() {
    let cases = [
        (
            PriceProblem::Forbidden {
                message: "services \"karpenter:8080\" is forbidden: cannot get resource \"services/proxy\"".into(),
                rbac: "kind: Role\nrules:\n- resources: [services/proxy]\n".into(),
            },
            "forbidden",
        ),
        (
            PriceProblem::Timeout {
                message: "the Karpenter metrics scrape timed out after 15s".into(),
            },
            "timeout",
        ),
        (
            PriceProblem::NotFound {
                message: "service karpenter/karpenter not found".into(),
            },
            "not-found",
        ),
    ];
    for (problem, cause) in cases {
        let mut c = demo();
        c.metrics = None;
        let (shared, board) = loaded("test", c, now());
        shared.set_price_problem(Some(problem.clone()));
        shared.pass(now());
        let h = get(&site_of(vec![board], None), PAGE).await.html();
        assert_eq!(count(&h, "#nodepools th.cost"), 0, "{cause}");
        assert_eq!(
            count(&h, &format!("#cost-hint[data-cause='{cause}']")),
            1,
            "{cause}"
        );
        assert!(
            text(&h, "#cost-hint").contains(problem.message()),
            "{cause}"
        );
        assert_eq!(
            count(&h, "#cost-hint pre.rbac"),
            usize::from(cause == "forbidden")
        );
    }
    // A dump with no metrics at all says that instead.
    let mut c = demo();
    c.metrics = None;
    let h = get(&site(c), PAGE).await.html();
    assert_eq!(count(&h, "#cost-hint[data-cause='not-scraped']"), 1);
}

#[tokio::test]
async fn the_pane_has_describe_yaml_and_events() {
    let app = site(demo());
    let h = get(&app, PAGE).await.html();
    let claim = h
        .select(&sel("#nodeclaims tr.claim.is-drifted"))
        .next()
        .and_then(|r| r.value().attr("data-select"))
        .unwrap()
        .to_string();
    // The selection in the URL renders the pane server-side, on the asked tab.
    let h = get(&app, &format!("{PAGE}?sel={claim}&tab=yaml"))
        .await
        .html();
    assert_eq!(count(&h, "#pane.closed"), 0);
    assert_eq!(count(&h, "#pane .tabs button"), 3);
    assert_eq!(count(&h, "#pane .tabs button.active[data-tab='yaml']"), 1);
    assert_eq!(count(&h, "#pane .tab-body[data-tab='yaml'][hidden]"), 0);
    assert_eq!(count(&h, "#pane .tab-body[data-tab='describe'][hidden]"), 1);
    let yaml = text(&h, "#pane .tab-body[data-tab='yaml'] pre");
    assert!(yaml.contains("Drifted"), "{yaml}");
    assert!(!yaml.contains("managedFields"));
    assert!(text(&h, "#pane .tab-body[data-tab='describe']").contains("Conditions:"));

    // The fragment the script loads; a pod's describe is `kelp why pod`.
    let r = get(&app, &format!("{PAGE}/pane?sel=Pod/ml/trainer-0")).await;
    assert_eq!(r.status, StatusCode::OK);
    let h = Html::parse_fragment(&r.body);
    let describe = text(&h, ".tab-body[data-tab='describe']");
    assert!(
        describe.contains("NODEPOOL") && describe.contains("gpu"),
        "{describe}"
    );
    assert!(text(&h, ".tab-body[data-tab='events'] table").contains("FailedScheduling"));
    // A node and a pool open too; unknown objects and bad selections do not.
    let node = get(
        &app,
        &format!("{PAGE}/pane?sel=Node/ip-10-0-17-95.us-west-2.compute.internal"),
    )
    .await;
    assert!(node.body.contains("do-not-disrupt"), "{}", node.body);
    let pool = get(&app, &format!("{PAGE}/pane?sel=NodePool/batch")).await;
    assert!(pool.body.contains("nodepool-limits-exhausted"));
    assert_eq!(
        get(&app, &format!("{PAGE}/pane?sel=Pod/ml/nope"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&app, &format!("{PAGE}/pane?sel=Secret/x")).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn hostile_text_is_escaped() {
    let payload = r#"<script>window.__xss=1</script><img src=x onerror="window.__xss=1">"#;
    let yaml = format!(
        r#"apiVersion: v1
kind: List
items:{POOL}
- apiVersion: v1
  kind: Pod
  metadata: {{name: victim, namespace: web, uid: v1, creationTimestamp: "2026-11-21T09:00:00Z", labels: {{app: x}}}}
  spec:
    nodeSelector: {{"team": '{payload}'}}
    containers: [{{name: a, image: x}}]
  status:
    phase: Pending
    conditions: [{{type: PodScheduled, status: "False", reason: Unschedulable}}]
- apiVersion: v1
  kind: Event
  metadata: {{name: victim.1, namespace: web}}
  involvedObject: {{kind: Pod, namespace: web, name: victim, uid: v1}}
  reason: FailedScheduling
  type: Warning
  source: {{component: karpenter}}
  message: 'Failed to schedule pod, {payload}'
  lastTimestamp: "2026-11-21T09:59:00Z"
  count: 1
"#
    );
    let app = site(load(&yaml));
    let r = get(&app, PAGE).await;
    assert!(!r.body.contains("<script>window"), "unescaped payload");
    assert!(!r.body.contains("<img src=x"), "unescaped payload");
    assert!(r
        .body
        .contains("&#60;script&#62;window.__xss=1&#60;/script&#62;"));
    let h = r.html();
    assert!(text(&h, "#pending").contains(payload));
    let pane = get(&app, &format!("{PAGE}/pane?sel=Pod/web/victim&tab=events")).await;
    assert!(!pane.body.contains("<script>window"));
    assert!(Html::parse_fragment(&pane.body)
        .root_element()
        .text()
        .collect::<String>()
        .contains(payload));
}

#[tokio::test]
async fn the_json_api_matches_the_page() {
    let app = site(demo());
    let r = get(&app, "/api/v1/clusters/test/karpenter").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["cluster"], "test");
    assert_eq!(v["nodepools"].as_array().unwrap().len(), 6);
    assert_eq!(v["pending"]["total"], 4);
    assert!(
        v["nodeclaims"][0].get("rows").is_none(),
        "rows live in /nodeclaims"
    );
    let claims: serde_json::Value =
        serde_json::from_str(&get(&app, "/api/v1/clusters/test/nodeclaims").await.body).unwrap();
    let rows: usize = claims["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["rows"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows as u64, v["counts"]["nodeclaims"].as_u64().unwrap());
    let why: serde_json::Value = serde_json::from_str(
        &get(&app, "/api/v1/clusters/test/pods/ml/trainer-0/why")
            .await
            .body,
    )
    .unwrap();
    assert_eq!(why["pod"], "ml/trainer-0");
    assert_eq!(why["diagnosis"]["nodepools"].as_array().unwrap().len(), 6);
    assert_eq!(
        get(&app, "/api/v1/clusters/test/pods/ml/nope/why")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&app, "/api/v1/clusters/nope/karpenter").await.status,
        StatusCode::NOT_FOUND
    );
    let findings: serde_json::Value =
        serde_json::from_str(&get(&app, "/api/v1/clusters/test/findings").await.body).unwrap();
    assert!(!findings["findings"].as_array().unwrap().is_empty());
    let node: serde_json::Value = serde_json::from_str(
        &get(
            &app,
            "/api/v1/clusters/test/nodes/ip-10-0-17-95.us-west-2.compute.internal/why",
        )
        .await
        .body,
    )
    .unwrap();
    assert!(!node["blockers"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn the_openapi_document_is_served_and_covers_every_api_route() {
    let app = site(demo());
    let r = get(&app, "/api/openapi.yaml").await;
    assert_eq!(r.status, StatusCode::OK);
    let kept = std::fs::read_to_string("docs/openapi.yaml").unwrap();
    assert_eq!(r.body, kept);
    let doc: serde_json::Value = serde_norway::from_str(&kept).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/api/v1/clusters",
        "/api/v1/clusters/{cluster}/karpenter",
        "/api/v1/clusters/{cluster}/nodeclaims",
        "/api/v1/clusters/{cluster}/findings",
        "/api/v1/clusters/{cluster}/pods/{namespace}/{name}/why",
        "/api/v1/clusters/{cluster}/nodes/{name}/why",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} undocumented");
        let concrete = path
            .replace("{cluster}", "test")
            .replace("{namespace}/{name}", "ml/trainer-0")
            .replace("{name}", "ip-10-0-17-95.us-west-2.compute.internal");
        assert_eq!(
            get(&app, &concrete).await.status,
            StatusCode::OK,
            "{concrete}"
        );
    }
    // Documented too, though it answers only where serve keeps a history (tested with one
    // in the_timeline_reads_the_history_over_a_range).
    assert!(doc["paths"]
        .get("/api/v1/clusters/{cluster}/history")
        .is_some());
    // The overview's required fields are what the API really sends.
    let v: serde_json::Value =
        serde_json::from_str(&get(&app, "/api/v1/clusters/test/karpenter").await.body).unwrap();
    for f in doc["components"]["schemas"]["Overview"]["required"]
        .as_array()
        .unwrap()
    {
        assert!(v.get(f.as_str().unwrap()).is_some(), "{f} missing");
    }
}

#[tokio::test]
async fn several_clusters_have_a_switcher() {
    let app = site_of(
        vec![
            loaded("prod", demo(), now()).1,
            loaded("staging", Cluster::default(), now()).1,
        ],
        None,
    );
    let h = get(&app, "/clusters/staging/karpenter").await.html();
    assert_eq!(count(&h, "nav.clusters a"), 2);
    assert_eq!(
        count(
            &h,
            "nav.clusters a.current[href='/clusters/staging/karpenter']"
        ),
        1
    );
    let v: serde_json::Value =
        serde_json::from_str(&get(&app, "/api/v1/clusters").await.body).unwrap();
    assert_eq!(v["clusters"][1]["name"], "staging");
    assert_eq!(
        get(&app, "/clusters/dev/karpenter").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_token_guards_everything() {
    let app = site_of(vec![loaded("test", demo(), now()).1], Some("s3cret"));
    assert_eq!(get(&app, PAGE).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&app, "/api/v1/clusters/test/karpenter").await.status,
        StatusCode::UNAUTHORIZED
    );
    let bearer = Request::get(PAGE)
        .header("authorization", "Bearer s3cret")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, bearer).await.status, StatusCode::OK);
    let wrong = Request::get(PAGE)
        .header("authorization", "Bearer s3cre")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, wrong).await.status, StatusCode::UNAUTHORIZED);
    // ?token= once: a cookie, and the token leaves the URL.
    let r = get(&app, &format!("{PAGE}?token=s3cret&sel=NodePool/batch")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.headers["location"], format!("{PAGE}?sel=NodePool/batch"));
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let with_cookie = Request::get(PAGE)
        .header("cookie", "kelp_token=s3cret")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, with_cookie).await.status, StatusCode::OK);
}

#[tokio::test]
async fn live_updates_are_server_sent_events() {
    let (_shared, board) = loaded("test", demo(), now());
    let app = site_of(vec![board.clone()], None);
    let r = app
        .clone()
        .oneshot(
            Request::get(format!("{PAGE}/events"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut body = r.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let first = String::from_utf8_lossy(&first);
    assert!(first.contains("event: update"), "{first}");
    assert!(first.contains("2026-11-21T10:00:00Z"), "{first}");
    // A pass publishes the next one.
    board.touch();
    let next = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
        .await
        .expect("an event after the pass")
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert!(String::from_utf8_lossy(&next).contains("event: update"));
    // The fragment the script swaps in carries its analysis time.
    let r = get(&app, &format!("{PAGE}/panels")).await;
    assert_eq!(r.headers["x-kelp-generated"], "2026-11-21T10:00:00Z");
    assert!(r.body.contains("id=\"nodepools\""));
}

#[tokio::test]
async fn a_big_cluster_loads_verdicts_when_a_row_is_expanded() {
    // 10 pools x 50 pending pods: too many verdicts to carry in the page.
    let mut yaml = String::from("apiVersion: v1\nkind: List\nitems:");
    for p in 0..10 {
        yaml.push_str(
            &POOL
                .replace("name: general", &format!("name: pool-{p}"))
                .replace("uid: np1", &format!("uid: np{p}")),
        );
    }
    for i in 0..50 {
        yaml.push_str(&pending_pod(i));
    }
    let app = site(load(&yaml));
    let r = get(&app, PAGE).await;
    let h = r.html();
    assert_eq!(count(&h, "#pending tbody.pod"), 50);
    assert_eq!(count(&h, "#pending tr.verdicts[data-lazy='1']"), 50);
    assert_eq!(count(&h, "#pending tr.verdict"), 0);
    let d = get(&app, &format!("{PAGE}/pending/load/p-007")).await;
    assert_eq!(d.status, StatusCode::OK);
    let frag = Html::parse_fragment(&d.body);
    assert_eq!(count(&frag, "tr.verdict.rejected"), 10, "{}", d.body);
    assert!(text(&frag, ".no-event").contains("no scheduling event found yet"));
    assert_eq!(
        get(&app, &format!("{PAGE}/pending/load/nope")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn tokens_and_context_names_survive_url_encoding() {
    let app = site_of(
        vec![loaded("arn:aws:eks:us-west-2:1:cluster/prod", demo(), now()).1],
        Some("a b/c"),
    );
    let r = get(&app, "/?token=a+b%2Fc").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let with_cookie = Request::get("/")
        .header("cookie", "kelp_token=a b/c")
        .body(Body::empty())
        .unwrap();
    let r = send(&app, with_cookie).await;
    assert_eq!(
        r.headers["location"],
        "/clusters/arn%3Aaws%3Aeks%3Aus-west-2%3A1%3Acluster%2Fprod/karpenter"
    );
}

/// The attribute `a` of every element matching `s`.
fn attrs(h: &Html, s: &str, a: &str) -> Vec<String> {
    h.select(&sel(s))
        .filter_map(|e| e.value().attr(a).map(str::to_string))
        .collect()
}

#[tokio::test]
async fn nodepools_come_in_karpenters_order_with_labelled_budgets() {
    let h = get(&site(demo()), PAGE).await.html();
    // Weight first (arm64 50, default 10), then by name among equal weights.
    assert_eq!(
        attrs(&h, "#nodepools tr.pool", "data-pool"),
        ["arm64", "default", "batch", "gpu", "inferentia", "legacy"]
    );
    let budgets = text(&h, "tr.pool[data-pool='arm64'] td.budgets");
    assert!(
        budgets.contains("0 nodes · 0 6 * * * for 8h · Drifted"),
        "{budgets}"
    );
    assert!(budgets.contains("20% of nodes · all reasons"), "{budgets}");
    // Limit names are whole, in the cell and its title.
    assert_eq!(
        attrs(&h, "tr.pool[data-pool='gpu'] .limit .res", "title"),
        ["cpu", "memory", "nvidia.com/gpu"]
    );
    // Panel headings carry counts.
    assert_eq!(text(&h, "#nodepools h2 .count"), "6");
    assert_eq!(text(&h, "#nodeclaims h2 .count"), "32");
    assert_eq!(text(&h, "#pending h2 .count"), "4");
    for id in ["rollout", "capacity", "timeline", "findings"] {
        assert_eq!(count(&h, &format!("#{id} h2 .count")), 1, "{id}");
    }
}

#[tokio::test]
async fn rows_show_their_worst_finding_and_drift_is_not_green() {
    let h = get(&site(demo()), PAGE).await.html();
    // The never-registered NodeClaim (critical) and a node that is not ready (critical).
    let never = "#nodeclaims tr.claim[data-select='NodeClaim/arm64-7tqzc']";
    assert_eq!(count(&h, &format!("{never}.sev-critical")), 1);
    assert_eq!(text(&h, &format!("{never} .sevmark.critical")), "critical");
    assert_eq!(
        count(&h, "tr.pool[data-pool='legacy'].sev-critical .sevmark"),
        1
    );
    assert_eq!(
        count(&h, "tr.pool[data-pool='arm64'].sev-warning .sevmark"),
        1
    );
    assert_eq!(
        count(&h, "#pending tr.pending-row.sev-critical .sevmark.critical"),
        3
    );
    // Drifted=True is amber (tone-drift), never the ok tone of a healthy condition.
    assert!(
        count(
            &h,
            ".badge[data-cond='Drifted'][data-state='true'].tone-drift"
        ) >= 1
    );
    assert_eq!(count(&h, ".badge[data-cond='Drifted'].tone-ok"), 0);
    assert!(
        count(
            &h,
            ".badge[data-cond='Launched'][data-state='true'].tone-ok"
        ) >= 1
    );
    // A condition's title does not repeat a reason that is only its type.
    let launched = attrs(
        &h,
        ".badge[data-cond='Launched'][data-state='true']",
        "title",
    );
    assert!(!launched.is_empty());
    for t in launched {
        assert!(t.starts_with("Launched=true") && !t.ends_with(' '), "{t}");
        assert_eq!(t.matches("Launched").count(), 1, "{t}");
    }
    assert!(count(&h, "#rollout svg.bar .bar-fill.drift") >= 1);
    // Identifiers are clipped with their whole text in a title.
    for t in attrs(&h, "#nodeclaims tr.claim td .clip", "title") {
        assert!(!t.contains('<'), "{t}");
    }
    assert!(
        count(
            &h,
            "#nodeclaims tr.claim td .clip[title$='.compute.internal']"
        ) >= 1
    );
}

#[tokio::test]
async fn blockers_amis_prices_and_capacity_are_named() {
    let h = get(&site(demo()), PAGE).await.html();
    let blocked = text(&h, "#nodeclaims .badge.blocked");
    assert!(
        blocked.contains("blocked by pdb web/storefront"),
        "{blocked}"
    );
    // Each claim Karpenter considers for consolidation says why it is not consolidated,
    // with the whole answer in the badge's title.
    let reasons = attrs(
        &h,
        "#nodeclaims tr.claim .badge.consol",
        "data-consolidation",
    );
    assert!(reasons.iter().any(|r| r == "candidate"), "{reasons:?}");
    // Held by blockers: the blockers' badge says so, once. A node whose drift goes ahead
    // (its NodeClaim's terminationGracePeriod) has no blockers' badge: its consolidation
    // badge says what holds consolidation.
    assert!(reasons.iter().any(|r| r == "blocked"), "{reasons:?}");
    for row in h.select(&sel("#nodeclaims tr.claim")) {
        let consol = row
            .select(&sel(".badge.consol"))
            .filter_map(|b| b.value().attr("data-consolidation"))
            .collect::<Vec<_>>();
        if consol.contains(&"blocked") {
            assert_eq!(
                row.select(&sel(".badge.blocked")).count(),
                0,
                "{}",
                row.html()
            );
        }
    }

    for t in attrs(&h, "#nodeclaims tr.claim .badge.consol", "title") {
        assert!(!t.is_empty());
    }
    let candidate = text(&h, "#nodeclaims tr.claim .badge.consol.candidate");
    assert!(candidate.contains("consolidation candidate"), "{candidate}");
    // The rollout panel names the target AMIs (with their names) and what they replace.
    let default = text(&h, "#rollout tr.rollout[data-pool='default'] td.target");
    assert!(
        default.contains("ami-") && default.contains("amazon-eks-node"),
        "{default}"
    );
    // Cluster total and per-node prices.
    let total = text(&h, "#total-cost b");
    assert!(total.starts_with('$') && total.ends_with("/h"), "{total}");
    assert!(
        h.select(&sel("#nodeclaims tr.claim td.price"))
            .any(|e| e.text().collect::<String>().starts_with('$')),
        "NodeClaim rows carry their node's price"
    );
    // Insufficient capacity: no blank cell; the type, zone and capacity come from the
    // event, the claim or what the pool allows.
    let rows: Vec<Vec<String>> = h
        .select(&sel("#capacity table.ice tbody tr"))
        .map(|tr| {
            tr.select(&sel("td"))
                .map(|td| td.text().collect::<String>().trim().to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert!(r.iter().all(|c| !c.is_empty()), "{r:?}");
    }
    let arm64 = rows.iter().find(|r| r[3] == "arm64").expect("arm64 row");
    assert!(
        arm64[2].contains("spot") || arm64[2].contains("any"),
        "{arm64:?}"
    );
}

#[tokio::test]
async fn a_pending_row_reads_in_one_line_and_its_pools_in_words() {
    let h = get(&site(demo()), PAGE).await.html();
    let pod = "#pending tbody.pod[data-key='ml/trainer-0']";
    let line = text(&h, &format!("{pod} td.verdict-line"));
    assert!(line.starts_with("6 pools rejected: "), "{line}");
    assert!(!line.contains('\n') && line.len() < 120, "{line}");
    assert!(line.contains("taints"), "{line}");
    // Each pool: its reason in words, what to change, whether the event agreed, a link.
    let gpu = h
        .select(&sel(&format!("{pod} tr.verdict")))
        .find(|r| r.text().collect::<String>().contains("gpu"))
        .expect("gpu verdict");
    let t = |s: &str| {
        gpu.select(&sel(s))
            .map(|e| e.text().collect::<String>())
            .collect::<String>()
    };
    assert!(
        t("td.reason").starts_with("taints: did not tolerate"),
        "{}",
        t("td.reason")
    );
    assert!(
        t("td.advice").starts_with("add a toleration for"),
        "{}",
        t("td.advice")
    );
    assert_eq!(t("td.ev"), "agrees");
    assert_eq!(
        attrs(&h, &format!("{pod} a.pool-link[data-pool='gpu']"), "href"),
        ["#pool-gpu"]
    );
    assert_eq!(count(&h, "#nodepools tr#pool-gpu a.back-link[hidden]"), 1);
    // A pool the event is silent about says so, not a blank cell.
    let events: Vec<String> = h
        .select(&sel(&format!("{pod} td.ev")))
        .map(|e| e.text().collect())
        .collect();
    assert!(events.iter().all(|e| !e.is_empty()), "{events:?}");
}

#[tokio::test]
async fn the_yaml_tab_has_apiversion_and_kind_and_a_copy_button() {
    let app = site(demo());
    for (sel_, api, kind) in [
        ("NodePool/batch", "karpenter.sh/v1", "NodePool"),
        ("Pod/ml/trainer-0", "v1", "Pod"),
    ] {
        let r = get(&app, &format!("{PAGE}/pane?sel={sel_}&tab=yaml")).await;
        assert_eq!(r.status, StatusCode::OK);
        let h = Html::parse_fragment(&r.body);
        let yaml = text(&h, ".tab-body[data-tab='yaml'] pre.yaml");
        assert!(
            yaml.starts_with(&format!("apiVersion: {api}\nkind: {kind}\n")),
            "{yaml}"
        );
        assert_eq!(count(&h, ".tab-body[data-tab='yaml'] button.copy"), 1);
    }
}

#[tokio::test]
async fn an_unknown_cluster_gets_the_page_chrome() {
    let app = site(demo());
    let r = get(&app, "/clusters/%3Cb%3Enope%3C%2Fb%3E/karpenter").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let h = r.html();
    assert_eq!(count(&h, "header.top"), 1);
    assert_eq!(count(&h, "link[rel='stylesheet']"), 1);
    assert!(text(&h, "#unknown-cluster h2").contains("<b>nope</b>"));
    assert_eq!(count(&h, "#unknown-cluster b:not(:first-child)"), 0);
    assert!(!r.body.contains("<b>nope</b>"), "the name is escaped");
    assert_eq!(
        attrs(&h, "#unknown-cluster .known-clusters a", "href"),
        ["/clusters/test/karpenter"]
    );
}

#[tokio::test]
async fn a_pending_pod_shows_the_launch_karpenter_would_make() {
    // A kwok pool: kelp judges instance types from the kwok provider's built-in types.
    let yaml = format!(
        "apiVersion: v1\nkind: List\nitems:{}{}",
        r#"
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: kwok, uid: np1}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
        requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  status:
    conditions: [{type: Ready, status: "True"}]
"#,
        pending_pod(0)
    );
    let app = site(load(&yaml));
    let h = get(&app, PAGE).await.html();
    let launch = text(&h, "#pending tbody.pod .launch");
    // 1 CPU needs 2 (900m allocatable on the 1-CPU type); on-demand only.
    assert!(
        launch.contains("NodePool kwok: c-2x-amd64-linux on-demand in one of test-zone-a, test-zone-b, test-zone-c, test-zone-d, $0.0543/h"),
        "{launch}"
    );
    assert!(
        text(&h, "#pending tbody.pod").contains("would launch c-2x-amd64-linux"),
        "the verdict row says it too"
    );
}

/// A client that accepts gzip (a browser, Go's and Python's HTTP clients) gets the page,
/// its panels and the overview API gzipped, byte for byte what others get plain; one that
/// does not, or refuses it, gets them plain. Each answer varies with Accept-Encoding.
#[tokio::test]
async fn gzip_goes_to_clients_that_accept_it() {
    use std::io::Read;
    let app = site(demo());
    for uri in [
        "/clusters/test/karpenter",
        "/clusters/test/karpenter/panels",
        "/api/v1/clusters/test/karpenter",
    ] {
        let fetch = |encoding: Option<&'static str>| {
            let app = app.clone();
            async move {
                let mut req = Request::get(uri);
                if let Some(e) = encoding {
                    req = req.header("accept-encoding", e);
                }
                let r = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
                assert_eq!(r.status(), StatusCode::OK, "{uri}");
                let headers = r.headers().clone();
                let body = r.into_body().collect().await.unwrap().to_bytes();
                (headers, body)
            }
        };
        let (plain_headers, plain) = fetch(None).await;
        assert!(plain_headers.get("content-encoding").is_none(), "{uri}");
        assert_eq!(plain_headers["vary"], "accept-encoding", "{uri}");
        let (h, refused) = fetch(Some("gzip;q=0, identity")).await;
        assert!(h.get("content-encoding").is_none(), "{uri}");
        assert_eq!(refused, plain, "{uri}");
        let (h, gz) = fetch(Some("gzip, deflate, br")).await;
        assert_eq!(h["content-encoding"], "gzip", "{uri}");
        assert_eq!(h["vary"], "accept-encoding", "{uri}");
        assert_eq!(h["content-type"], plain_headers["content-type"], "{uri}");
        assert!(
            gz.len() * 3 < plain.len(),
            "{uri}: {} of {}",
            gz.len(),
            plain.len()
        );
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, plain, "{uri}");
    }
}

/// With serve's history kept, a node's and a pod's pane gets a History tab of their rows,
/// escaped like everything else; without one, no such tab.
#[tokio::test]
async fn the_pane_has_a_history_tab_when_serve_keeps_one() {
    use kelp::history::{store::Store, Kind, Record, Subject};
    let node = "ip-10-0-17-95.us-west-2.compute.internal";
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut s, _) = Store::open(dir.path(), true).unwrap();
        let at = chrono::Utc::now() - chrono::Duration::hours(2);
        let mut launched = Record::new(
            "nodeclaim/c1/launched".into(),
            at,
            Kind::NodeClaim,
            "launched",
            Subject {
                kind: "NodeClaim".into(),
                namespace: None,
                name: "c1".into(),
            },
        )
        .detail("instanceType", "m6i.large");
        launched.node = Some(node.into());
        let mut evicted = Record::new(
            "event/Pod/ml/web/Evicted/1".into(),
            at + chrono::Duration::minutes(30),
            Kind::Event,
            "Evicted",
            Subject {
                kind: "Pod".into(),
                namespace: Some("ml".into()),
                name: "web".into(),
            },
        );
        evicted.node = Some(node.into());
        evicted.message = "Evicted pod: <b>Underutilized</b>".into();
        s.write(&[launched, evicted]).unwrap();
    }
    let (_, board) = loaded("test", demo(), now());
    let plain = site_of(vec![board.clone()], None);
    let r = get(&plain, &format!("{PAGE}/pane?sel=Node/{node}")).await;
    assert_eq!(
        count(&Html::parse_fragment(&r.body), "[data-tab='history']"),
        0
    );
    board.set_history_dir(dir.path().to_path_buf());
    let app = site_of(vec![board], None);
    let r = get(&app, &format!("{PAGE}/pane?sel=Node/{node}&tab=history")).await;
    assert_eq!(r.status, StatusCode::OK);
    let h = Html::parse_fragment(&r.body);
    assert_eq!(
        count(&h, "button[data-tab='history'][aria-selected='true']"),
        1
    );
    assert_eq!(
        count(&h, ".tab-body[data-tab='history'] table.history tbody tr"),
        2
    );
    let rows = text(&h, ".tab-body[data-tab='history'] tbody");
    assert!(
        rows.contains("launched") && rows.contains("instanceType=m6i.large"),
        "{rows}"
    );
    assert!(!r.body.contains("<b>Underutilized"), "escaped: {}", r.body);
    // A pod with none: the tab says so.
    let r = get(
        &app,
        &format!("{PAGE}/pane?sel=Pod/ml/trainer-0&tab=history"),
    )
    .await;
    assert!(text(
        &Html::parse_fragment(&r.body),
        ".tab-body[data-tab='history']"
    )
    .contains("Nothing in kelp's history"));
}

/// With serve's history kept, the page offers the timeline's ranges (the script adds the
/// controls), and the fragment draws 1 h, 24 h or 7 d of the history, narrowed to a pool or
/// a lane, each mark opening its object; without a history there is no such fragment.
#[tokio::test]
async fn the_timeline_reads_the_history_over_a_range() {
    use kelp::history::{store::Store, Kind, Record, Subject};
    let dir = tempfile::tempdir().unwrap();
    let claim = |name: &str, pool: &str, what: &str, hours_ago: i64| {
        let mut r = Record::new(
            format!("nodeclaim/{name}/{what}"),
            now() - chrono::Duration::hours(hours_ago),
            Kind::NodeClaim,
            what,
            Subject {
                kind: "NodeClaim".into(),
                namespace: None,
                name: name.into(),
            },
        );
        r.nodeclaim = Some(name.into());
        r.nodepool = Some(pool.into());
        r
    };
    {
        let (mut s, _) = Store::open(dir.path(), true).unwrap();
        s.write(&[
            claim("a", "batch", "launched", 30),
            claim("b", "batch", "launched", 5),
            claim("b", "batch", "deleted", 2),
            claim("c", "default", "launched", 0),
            // Not on the timeline: a finding.
            {
                let mut f = claim("c", "default", "pod-unschedulable", 0);
                f.kind = Kind::Finding;
                f
            },
        ])
        .unwrap();
    }
    let (_, board) = loaded("test", demo(), now());
    let plain = site_of(vec![board.clone()], None);
    assert_eq!(
        get(&plain, &format!("{PAGE}/timeline?range=24h"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // (The page itself is rendered once per pass: serve sets the history before the first.)
    assert_eq!(
        get(&plain, "/api/v1/clusters/test/history").await.status,
        StatusCode::NOT_FOUND
    );
    board.set_history_dir(dir.path().to_path_buf());
    let app = site_of(vec![board], None);
    assert_eq!(
        count(&get(&app, PAGE).await.html(), "body[data-history='1']"),
        1
    );
    let marks = |body: &str| count(&Html::parse_fragment(body), "circle.mark");
    let day = get(&app, &format!("{PAGE}/timeline?range=24h")).await;
    assert_eq!(day.status, StatusCode::OK);
    assert_eq!(marks(&day.body), 3, "{}", day.body);
    let h = Html::parse_fragment(&day.body);
    assert_eq!(
        count(
            &h,
            "circle.mark.launch.row-select[data-select='NodeClaim/c']"
        ),
        1
    );
    assert_eq!(
        count(&h, "circle.mark.termination[data-select='NodeClaim/b']"),
        1
    );
    assert_eq!(
        marks(&get(&app, &format!("{PAGE}/timeline?range=7d")).await.body),
        4
    );
    assert_eq!(
        marks(&get(&app, &format!("{PAGE}/timeline?range=1h")).await.body),
        1
    );
    assert_eq!(
        marks(
            &get(&app, &format!("{PAGE}/timeline?range=7d&pool=batch"))
                .await
                .body
        ),
        3
    );
    assert_eq!(
        marks(
            &get(&app, &format!("{PAGE}/timeline?range=7d&lane=termination"))
                .await
                .body
        ),
        1
    );
    // The same rows from the API, as `kelp history -o json` prints them.
    let api = "/api/v1/clusters/test/history";
    let rows: serde_json::Value =
        serde_json::from_str(&get(&app, &format!("{api}?nodeclaim=b&since=7d")).await.body)
            .unwrap();
    let whats: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["what"].as_str())
        .collect();
    assert_eq!(whats, ["launched", "deleted"]);
    let all: serde_json::Value =
        serde_json::from_str(&get(&app, &format!("{api}?since=7d")).await.body).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 5);
    for bad in ["node=x&pod=ns/y", "since=soon"] {
        assert_eq!(
            get(&app, &format!("{api}?{bad}")).await.status,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    for bad in ["range=2h", "lane=nope"] {
        assert_eq!(
            get(&app, &format!("{PAGE}/timeline?{bad}")).await.status,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
}

/// What the model alone answers (the counts, a pool's nodes) follows each change as it lands,
/// before any analysis pass: the overview API's counts and `/metrics`' `nodepool_nodes`. The
/// rest of the answer stays the pass's.
#[tokio::test]
async fn a_new_node_is_counted_before_the_pass_that_follows_it() {
    let (shared, board) = loaded("test", demo(), now());
    let app = site_of(vec![board.clone()], None);
    let metrics = kelp::serve::router(shared.clone(), None);
    let overview =
        |g: &common::web::Got| -> serde_json::Value { serde_json::from_str(&g.body).unwrap() };
    let pool_nodes = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("karpenter_helper_nodepool_nodes{nodepool=\"batch\"} "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no batch series: {text}"))
    };
    let before = overview(&get(&app, "/api/v1/clusters/test/karpenter").await);
    let batch_before = pool_nodes(&get(&metrics, "/metrics").await.body);
    let nodes = before["counts"]["nodes"].as_u64().unwrap();
    shared.update_if(|c| {
        let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: fresh-1\n  labels: {karpenter.sh/nodepool: batch}\n";
        kelp::source::load_str("fresh.yaml", node, c).unwrap();
        true
    });
    // No analysis runs here: only the model's applier, on its own thread.
    let mut after = before.clone();
    for _ in 0..300 {
        after = overview(&get(&app, "/api/v1/clusters/test/karpenter").await);
        if after["counts"]["nodes"] != before["counts"]["nodes"] {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(after["counts"]["nodes"].as_u64(), Some(nodes + 1));
    assert_eq!(
        pool_nodes(&get(&metrics, "/metrics").await.body),
        batch_before + 1.0
    );
    // The pass's answers are the same pass's: its time, its findings, its rows.
    for key in ["generatedAt", "nodeclaims", "findings", "nodepools"] {
        assert_eq!(after[key], before[key], "{key}");
    }
    assert_eq!(after["counts"]["findings"], before["counts"]["findings"]);
    // The next pass agrees with the tally, and its own body is answered as built.
    shared.pass(now());
    let next = overview(&get(&app, "/api/v1/clusters/test/karpenter").await);
    assert_eq!(next["counts"], after["counts"]);
}
