//! The dashboard: a server-rendered page (askama) per cluster at
//! `/clusters/{cluster}/karpenter`, a detail pane, live updates over Server-Sent Events,
//! and the JSON API behind it. Read-only: there are no write endpoints.
//!
//! Each analysis pass builds the view model once ([`build_page`]), renders the panels and
//! the overview JSON, and bumps a version that the SSE stream pushes; requests then only
//! copy cached bytes (the overview's counts written anew when the model's tally has moved
//! since, [`live`]), except the detail pane, which reads the model for one object.

pub mod board;
pub mod encoded;
mod fail;
pub mod guard;
mod history;
pub mod live;
pub mod pane;
pub mod streams;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use chrono::SecondsFormat;
use serde::Deserialize;

use crate::analysis::Pass;
use crate::model::Cluster;
use crate::view::{self, ClaimRow, Overview};
pub use board::Board;
use encoded::Encoded;
use fail::{audit, audited, Fail};
pub use guard::Hosts;
use pane::{Selection, TABS, TABS_WITH_HISTORY};
pub use streams::{StreamLimits, Streams};

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
pub const OPENAPI: &str = include_str!("../../docs/openapi.yaml");
const JS: &str = include_str!("../../static/kelp.js");
const CSS: &str = include_str!("../../static/kelp.css");

/// What one analysis pass leaves for the dashboard.
pub struct Page {
    pub overview: Overview,
    /// The panels (what the page refreshes), and the overview API's JSON (whose counts
    /// follow the model between passes).
    pub panels: Encoded,
    pub json: live::LiveJson,
    /// The analysis pass the page shows; answers and panes read it.
    pub pass: Arc<Pass>,
    /// A dump's fixed clock (its capture time): the page says "as of", never "N ago".
    pub fixed_clock: bool,
    /// The whole page without a selection, rendered by the first request that wants it.
    pub html: std::sync::OnceLock<Encoded>,
}

#[derive(Template)]
#[template(path = "panels.html")]
struct PanelsTemplate<'a> {
    o: &'a Overview,
    lanes_height: usize,
}

#[derive(Template)]
#[template(path = "pending_detail.html")]
struct PendingDetailTemplate<'a> {
    p: &'a view::PendingRow,
}

#[derive(Template)]
#[template(path = "claim_rows.html")]
struct ClaimRowsTemplate<'a> {
    rows: &'a [ClaimRow],
    limit: usize,
}

#[derive(Template)]
#[template(path = "page.html")]
struct PageTemplate<'a> {
    cluster: &'a str,
    base: String,
    clusters: Vec<(&'a str, bool)>,
    generated: String,
    /// A dump's fixed clock (its capture time): the page says "as of", never "N ago".
    fixed_clock: bool,
    panels: &'a str,
    pane: Option<String>,
    /// Serve keeps a history: the timeline offers its ranges.
    history: bool,
}

#[derive(Template)]
#[template(path = "unknown_cluster.html")]
struct UnknownClusterTemplate<'a> {
    cluster: &'a str,
    known: Vec<&'a str>,
}

#[derive(Template)]
#[template(path = "pane.html")]
struct PaneTemplate<'a> {
    p: &'a pane::Pane,
    tabs: &'a [&'static str],
    mask_note: &'static str,
}

/// Build the view of one pass: the model, its report and diagnoses.
pub fn build_page(c: &Cluster, pass: Arc<Pass>, inputs: view::Inputs) -> Page {
    let fixed_clock = inputs.fixed_clock;
    let overview = view::overview(c, &pass, inputs);
    let panels = Encoded::new(render_panels(&overview));
    let json = live::LiveJson::new(
        serde_json::to_vec(&overview).unwrap_or_default(),
        &overview.counts,
    );
    Page {
        overview,
        panels,
        json,
        pass,
        fixed_clock,
        html: std::sync::OnceLock::new(),
    }
}

pub fn render_panels(o: &Overview) -> String {
    PanelsTemplate {
        o,
        lanes_height: view::LANES.len() * 24 + 16,
    }
    .render()
    .unwrap_or_else(|e| format!("<p class=\"error\">rendering failed: {e}</p>"))
}

/// The dashboard's state: every watched cluster, in flag order.
pub struct Site {
    pub clusters: Vec<Arc<Board>>,
    pub auth_token: Option<String>,
    /// The `Host` values answered (DNS rebinding); others get 421.
    pub hosts: Hosts,
    /// Mark the token cookie `Secure` (kelp is reached over TLS, through a proxy).
    pub secure_cookie: bool,
    /// The live-update streams open, held to their own caps.
    pub streams: Streams,
}

impl Site {
    fn cluster(&self, name: &str) -> Option<&Arc<Board>> {
        self.clusters.iter().find(|c| c.name() == name)
    }
}

type St = State<Arc<Site>>;

/// The dashboard router: all of it for allowed `Host`s only, and behind the token when
/// one is set.
pub fn router(site: Arc<Site>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/clusters/{cluster}/karpenter", get(page))
        .route("/clusters/{cluster}/karpenter/panels", get(panels))
        .route("/clusters/{cluster}/karpenter/pane", get(pane_fragment))
        .route(
            "/clusters/{cluster}/karpenter/nodeclaims/{pool}",
            get(claim_rows),
        )
        .route("/clusters/{cluster}/karpenter/events", get(events))
        .route(
            "/clusters/{cluster}/karpenter/timeline",
            get(history::timeline_fragment),
        )
        .route(
            "/clusters/{cluster}/karpenter/pending/{namespace}/{name}",
            get(pending_detail),
        )
        .route("/api/v1/clusters", get(api_clusters))
        .route("/api/v1/clusters/{cluster}/karpenter", get(api_overview))
        .route("/api/v1/clusters/{cluster}/nodeclaims", get(api_nodeclaims))
        .route("/api/v1/clusters/{cluster}/findings", get(api_findings))
        .route(
            "/api/v1/clusters/{cluster}/history",
            get(history::api_history),
        )
        .route(
            "/api/v1/clusters/{cluster}/pods/{namespace}/{name}/why",
            get(api_why_pod),
        )
        .route(
            "/api/v1/clusters/{cluster}/nodes/{name}/why",
            get(api_why_node),
        )
        .route("/api/openapi.yaml", get(openapi))
        .route("/static/kelp.js", get(js))
        .route("/static/kelp.css", get(css))
        .layer(middleware::from_fn_with_state(site.clone(), guard::auth))
        .layer(middleware::from_fn_with_state(
            site.clone(),
            guard::check_host,
        ))
        .layer(middleware::map_response(security_headers))
        .with_state(site)
}

async fn security_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, HTML)], body).into_response()
}

fn json_bytes(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, JSON)], body).into_response()
}

fn json<T: serde::Serialize>(v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(b) => json_bytes(Bytes::from(b)),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A cluster's board, or why there is none.
fn board(site: &Site, cluster: &str) -> Result<Arc<Board>, Fail> {
    site.cluster(cluster)
        .cloned()
        .ok_or_else(|| Fail::NotFound(format!("cluster {cluster:?}")))
}

/// The latest page of a cluster (built now if nobody watched when its pass came), or why
/// there is none.
async fn latest(site: &Site, cluster: &str) -> Result<(Arc<Board>, Arc<Page>), Fail> {
    let (board, _) = latest_pass(site, cluster)?;
    let page = board.page(MODEL_DEADLINE).await.ok_or(Fail::Busy)?;
    Ok((board, page))
}

/// The latest analysis pass of a cluster (no page is built for it), or why there is none.
fn latest_pass(site: &Site, cluster: &str) -> Result<(Arc<Board>, Arc<Pass>), Fail> {
    let board = board(site, cluster)?;
    let pass = board.pass().ok_or(Fail::NotReady)?;
    Ok((board, pass))
}

async fn root(State(site): St) -> Response {
    match site.clusters.first() {
        Some(c) => {
            Redirect::to(&format!("/clusters/{}/karpenter", urlencode(c.name()))).into_response()
        }
        None => Fail::NotFound("cluster".into()).into_response(),
    }
}

/// Everything but RFC 3986's unreserved characters.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encode a path segment (a context name may hold `/` and `:`).
pub fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, PATH_SEGMENT).to_string()
}

#[derive(Debug, Deserialize, Default)]
struct PaneQuery {
    sel: Option<String>,
    tab: Option<String>,
}

async fn page(
    State(site): St,
    Path(cluster): Path<String>,
    Query(q): Query<PaneQuery>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/clusters/{cluster}/karpenter");
    let outcome = async {
        if site.cluster(&cluster).is_none() {
            return Err(unknown_cluster(&site, &cluster));
        }
        let (board, page) = latest(&site, &cluster).await?;
        let pane = match q.sel.as_deref().and_then(|s| Selection::parse(s).ok()) {
            Some(sel) => {
                render_pane(&board, &page, &sel, q.tab.as_deref().unwrap_or("describe")).await
            }
            None => None,
        };
        let plain = pane.is_none();
        if plain {
            if let Some(b) = page.html.get() {
                return Ok(b.respond(&headers, HTML));
            }
        }
        let body = PageTemplate {
            cluster: board.name(),
            base: format!("/clusters/{}/karpenter", urlencode(board.name())),
            clusters: site
                .clusters
                .iter()
                .map(|c| (c.name(), c.name() == board.name()))
                .collect(),
            generated: page.pass.now.to_rfc3339_opts(SecondsFormat::Secs, true),
            fixed_clock: page.fixed_clock,
            panels: page.panels.as_str(),
            pane,
            history: board.history_dir().is_some(),
        }
        .render()?;
        Ok(if plain {
            page.html
                .get_or_init(|| Encoded::new(body))
                .respond(&headers, HTML)
        } else {
            html(body)
        })
    };
    audited(&path, &cluster, outcome.await)
}

/// The page of a cluster kelp does not serve: the usual chrome, the clusters it does serve, 404.
fn unknown_cluster(site: &Site, cluster: &str) -> Fail {
    let known: Vec<&str> = site.clusters.iter().map(|c| c.name()).collect();
    let body = UnknownClusterTemplate {
        cluster,
        known: known.clone(),
    }
    .render()
    .and_then(|panels| {
        PageTemplate {
            cluster,
            base: String::new(),
            clusters: known.iter().map(|c| (*c, false)).collect(),
            generated: String::new(),
            fixed_clock: false,
            panels: &panels,
            pane: None,
            history: false,
        }
        .render()
    });
    match body {
        Ok(b) => Fail::Page(StatusCode::NOT_FOUND, b),
        Err(e) => Fail::Render(e),
    }
}

async fn panels(State(site): St, Path(cluster): Path<String>, headers: HeaderMap) -> Response {
    let path = format!("/clusters/{cluster}/karpenter/panels");
    let outcome = latest(&site, &cluster).await.map(|(_, page)| {
        let mut r = page.panels.respond(&headers, HTML);
        if let Ok(v) =
            HeaderValue::from_str(&page.pass.now.to_rfc3339_opts(SecondsFormat::Secs, true))
        {
            r.headers_mut().insert("x-kelp-generated", v);
        }
        r
    });
    audited(&path, &cluster, outcome)
}

async fn claim_rows(State(site): St, Path((cluster, pool)): Path<(String, String)>) -> Response {
    let path = format!("/clusters/{cluster}/karpenter/nodeclaims/{pool}");
    let outcome = async {
        let (_, page) = latest(&site, &cluster).await?;
        let pool = if pool == "-" { String::new() } else { pool };
        let g = page
            .overview
            .nodeclaims
            .iter()
            .find(|g| g.nodepool == pool)
            .ok_or_else(|| Fail::NotFound(format!("NodeClaims of NodePool {pool:?}")))?;
        let body = ClaimRowsTemplate {
            rows: &g.rows,
            limit: view::CLAIMS_PER_GROUP,
        }
        .render()?;
        Ok(html(body))
    };
    audited(&path, &cluster, outcome.await)
}

/// One pending pod's verdicts, for a row expanded on a page that does not carry them.
async fn pending_detail(
    State(site): St,
    Path((cluster, ns, name)): Path<(String, String, String)>,
) -> Response {
    let path = format!("/clusters/{cluster}/karpenter/pending/{ns}/{name}");
    let outcome = async {
        let (_, page) = latest(&site, &cluster).await?;
        let p = page
            .overview
            .pending
            .rows
            .iter()
            .find(|r| r.namespace == ns && r.name == name)
            .ok_or_else(|| Fail::NotFound(format!("pending pod {ns}/{name}")))?;
        Ok(html(PendingDetailTemplate { p }.render()?))
    };
    audited(&path, &cluster, outcome.await)
}

/// The full object from the API server for the yaml tab (live clusters only).
async fn live_yaml(shared: &Board, sel: &Selection) -> Option<String> {
    let client = shared.client()?;
    let req = http::Request::get(sel.api_path()?).body(Vec::new()).ok()?;
    let fut = client.request::<serde_json::Value>(req);
    let mut v = tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .ok()?
        .ok()?;
    pane::strip_for_yaml(&mut v);
    serde_norway::to_string(&v).ok()
}

/// The pane for `sel`, or None when the model does not hold it (or stays locked past
/// [`MODEL_DEADLINE`]). The model is read off the async workers.
async fn render_pane(
    shared: &Arc<Board>,
    page: &Arc<Page>,
    sel: &Selection,
    tab: &str,
) -> Option<String> {
    // Only what the model holds is asked of the API server: a selection never makes kelp
    // GET an object it was not already watching (or a path of the caller's choosing).
    let s2 = sel.clone();
    if !shared
        .read(MODEL_DEADLINE, move |c| pane::exists(c, &s2))
        .await?
    {
        return None;
    }
    let live = live_yaml(shared, sel).await;
    let history = history::pane_rows(shared, sel, page.pass.now).await;
    let (page, sel, tab) = (page.clone(), sel.clone(), tab.to_string());
    shared
        .read(MODEL_DEADLINE, move |c| {
            let mut p = pane::pane(c, &page.pass, &sel, &tab, live)?;
            let tabs: &[&str] = if history.is_some() {
                &TABS_WITH_HISTORY
            } else {
                &TABS
            };
            p.history = history;
            if !tabs.contains(&p.tab) {
                p.tab = "describe";
            }
            PaneTemplate {
                p: &p,
                tabs,
                mask_note: pane::MASK_NOTE,
            }
            .render()
            .ok()
        })
        .await?
}

async fn pane_fragment(
    State(site): St,
    Path(cluster): Path<String>,
    Query(q): Query<PaneQuery>,
) -> Response {
    let path = format!("/clusters/{cluster}/karpenter/pane");
    let outcome = async {
        let (board, page) = latest(&site, &cluster).await?;
        let sel = Selection::parse(q.sel.as_deref().unwrap_or_default())
            .map_err(|e| Fail::BadRequest(format!("sel: {e}")))?;
        render_pane(&board, &page, &sel, q.tab.as_deref().unwrap_or("describe"))
            .await
            .map(html)
            .ok_or_else(|| Fail::NotFound(sel.key()))
    };
    audited(&path, &cluster, outcome.await)
}

/// Server-Sent Events: one `update` event per analysis pass, carrying its time; the first
/// says how long the browser waits before it reconnects (`retry:`). A stream past the
/// caps is refused at once (see [`streams`]), and one that reaches its lifetime ends, for
/// the browser to open another.
async fn events(
    State(site): St,
    Path(cluster): Path<String>,
    peer: Option<Extension<ConnectInfo<std::net::SocketAddr>>>,
) -> Response {
    let Some(board) = site.cluster(&cluster).cloned() else {
        return Fail::NotFound(format!("cluster {cluster:?}")).into_response();
    };
    let peer = peer.map(|Extension(ConnectInfo(a))| a.ip());
    let permit = match site.streams.admit(peer) {
        Ok(p) => p,
        Err(full) => {
            if site.streams.warn_now() {
                tracing::warn!(?full, peer = ?peer, limits = ?site.streams.limits(), "refusing live-update streams past their cap (logged once a minute)");
            }
            return refused(full, site.streams.limits());
        }
    };
    let limits = site.streams.limits();
    let rx = board.subscribe();
    let first = Some(limits.retry_after);
    let stream = futures::stream::unfold(
        (rx, board, first, permit),
        |(mut rx, board, first, permit)| async move {
            if first.is_none() && rx.changed().await.is_err() {
                return None;
            }
            rx.borrow_and_update();
            let generated = board
                .pass()
                .map(|p| p.now.to_rfc3339_opts(SecondsFormat::Secs, true))
                .unwrap_or_default();
            let mut ev = SseEvent::default().event("update").data(generated);
            if let Some(retry) = first {
                ev = ev.retry(retry);
            }
            Some((Ok::<_, Infallible>(ev), (rx, board, None, permit)))
        },
    );
    let stream = futures::StreamExt::take_until(stream, tokio::time::sleep(limits.lifetime));
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// 503 for a stream past a cap: told when to try again, and the connection closed after
/// the answer, so it holds no slot.
fn refused(full: streams::Full, limits: StreamLimits) -> Response {
    let why = match full {
        streams::Full::Total => format!(
            "kelp: {} live-update streams are open, the most this dashboard serves; try again later\n",
            limits.total
        ),
        streams::Full::Client => format!(
            "kelp: {} live-update streams are open from your address, the most one client gets; close some tabs\n",
            limits.per_client
        ),
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (
                header::RETRY_AFTER,
                limits.retry_after.as_secs().to_string(),
            ),
            (header::CONNECTION, "close".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        why,
    )
        .into_response()
}

async fn api_clusters(State(site): St) -> Response {
    audit("/api/v1/clusters", "", "ok");
    let names: Vec<serde_json::Value> = site
        .clusters
        .iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name(),
                "ready": c.ready(),
                "href": format!("/clusters/{}/karpenter", urlencode(c.name())),
            })
        })
        .collect();
    json(&serde_json::json!({ "clusters": names }))
}

async fn api_overview(
    State(site): St,
    Path(cluster): Path<String>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/karpenter");
    let outcome = latest(&site, &cluster)
        .await
        .map(|(board, page)| page.json.respond(board.tally().as_deref(), &headers, JSON));
    audited(&path, &cluster, outcome)
}

async fn api_nodeclaims(State(site): St, Path(cluster): Path<String>) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/nodeclaims");
    let outcome = latest(&site, &cluster).await.map(|(_, page)| {
        let groups: Vec<serde_json::Value> = page
            .overview
            .nodeclaims
            .iter()
            .map(|g| serde_json::json!({"nodepool": g.nodepool, "total": g.total, "drifted": g.drifted, "rows": g.rows}))
            .collect();
        json(&serde_json::json!({ "groups": groups }))
    });
    audited(&path, &cluster, outcome)
}

async fn api_findings(State(site): St, Path(cluster): Path<String>) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/findings");
    let outcome = latest_pass(&site, &cluster).map(|(_, pass)| json(pass.report.as_ref()));
    audited(&path, &cluster, outcome)
}

/// A JSON answer computed from the last pass: 404 (with kelp's words) when `f` fails,
/// 503 when the model stays locked past a deadline. `f` runs off the async workers.
async fn answer<T: serde::Serialize + Send + 'static>(
    site: &Site,
    cluster: &str,
    path: &str,
    f: impl FnOnce(&Cluster, &Pass) -> Result<T, crate::explain::NotFound> + Send + 'static,
) -> Response {
    let outcome = async {
        let (board, pass) = latest_pass(site, cluster)?;
        let answer = board
            .read(MODEL_DEADLINE, move |c| f(c, &pass))
            .await
            .ok_or(Fail::Busy)??;
        Ok(json(&answer))
    };
    audited(path, cluster, outcome.await)
}

/// How long a request waits for the model behind a running analysis pass.
const MODEL_DEADLINE: Duration = Duration::from_secs(5);

async fn api_why_pod(
    State(site): St,
    Path((cluster, ns, name)): Path<(String, String, String)>,
) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/pods/{ns}/{name}/why");
    answer(&site, &cluster, &path, move |c, pass| {
        crate::explain::pod_answer(c, pass, &ns, &name)
    })
    .await
}

async fn api_why_node(State(site): St, Path((cluster, name)): Path<(String, String)>) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/nodes/{name}/why");
    answer(&site, &cluster, &path, move |c, pass| {
        crate::explain::node_answer(c, pass, &name)
    })
    .await
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI).into_response()
}

fn asset(ct: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, ct),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}
