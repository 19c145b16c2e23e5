//! The dashboard's share of serve's history (`--state-dir`): the pane's History tab, the
//! timeline over 1 h, 24 h or 7 d of it, and `/api/v1/clusters/{cluster}/history` (what
//! `kelp history --server` reads). Every read goes to SQLite off the async workers.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::fail::{audited, Fail};
use super::pane::{self, Selection};
use super::{html, json, latest, latest_pass, Board, St};
use crate::history::{store, Ask, Record};
use crate::view;

/// `ask`'s rows of the board's history from `since` on (at most `limit`, oldest first),
/// read off the async workers: 404 when serve keeps no history or it cannot be read.
async fn rows(
    board: &Board,
    ask: Ask,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<Record>, Fail> {
    let dir = board
        .history_dir()
        .ok_or_else(|| Fail::NotFound("a history: this serve keeps none (--state-dir)".into()))?
        .to_path_buf();
    tokio::task::spawn_blocking(move || store::read(&dir, &ask, Some(since), limit))
        .await
        .map_err(|_| Fail::Busy)?
        .map_err(|e| Fail::NotFound(format!("a readable history: {e}")))
}

/// The selection's rows (the 7 days before `now`, the newest 500): None without a history
/// or for a kind it has none of; an empty list, said in the tab, when it cannot be read.
pub(super) async fn pane_rows(
    board: &Arc<Board>,
    sel: &Selection,
    now: DateTime<Utc>,
) -> Option<Vec<pane::HistoryLine>> {
    board.history_dir()?;
    let ask = pane::history_ask(sel)?;
    let rows = match rows(board, ask, now - chrono::Duration::days(7), 100_000).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!("history for the pane: {e:?}");
            Vec::new()
        }
    };
    let skip = rows.len().saturating_sub(500);
    Some(rows[skip..].iter().map(pane::HistoryLine::of).collect())
}

/// The timeline over a range of serve's history (the page's range picker).
#[derive(Template)]
#[template(path = "timeline.html")]
struct TimelineTemplate<'a> {
    tl: &'a view::Timeline,
    lanes_height: usize,
}

#[derive(Debug, Deserialize)]
pub(super) struct TimelineQuery {
    range: Option<String>,
    pool: Option<String>,
    lane: Option<String>,
}

/// The most history rows one timeline reads.
const TIMELINE_ROWS: usize = 50_000;

/// The timeline over 1 h, 24 h or 7 d of the history before the page's clock, narrowed to a
/// pool or a lane: the range picker's fragment (404 when serve keeps no history).
pub(super) async fn timeline_fragment(
    axum::extract::State(site): St,
    Path(cluster): Path<String>,
    Query(q): Query<TimelineQuery>,
) -> Response {
    let path = format!("/clusters/{cluster}/karpenter/timeline");
    let outcome = async {
        let (board, page) = latest(&site, &cluster).await?;
        let hours = match q.range.as_deref().unwrap_or("24h") {
            "1h" => 1,
            "24h" => 24,
            "7d" => 168,
            other => {
                return Err(Fail::BadRequest(format!(
                    "range {other:?}: one of 1h, 24h, 7d"
                )))
            }
        };
        let lane =
            match q.lane.as_deref().filter(|l| !l.is_empty()) {
                Some(l) => Some(view::LANES.iter().copied().find(|x| *x == l).ok_or_else(
                    || Fail::BadRequest(format!("lane {l:?}: one of {}", view::LANES.join(", "))),
                )?),
                None => None,
            };
        let ask = match q.pool.filter(|p| !p.is_empty()) {
            Some(p) => Ask::NodePool(p),
            None => Ask::Cluster,
        };
        let now = page.pass.now;
        let found = rows(
            &board,
            ask,
            now - chrono::Duration::hours(hours),
            TIMELINE_ROWS,
        )
        .await?;
        let tl = view::timeline::from_history(&found, now, hours, lane);
        Ok(html(
            TimelineTemplate {
                tl: &tl,
                lanes_height: view::LANES.len() * 24 + 16,
            }
            .render()?,
        ))
    };
    audited(&path, &cluster, outcome.await)
}

#[derive(Debug, Deserialize)]
pub(super) struct HistoryQuery {
    node: Option<String>,
    nodeclaim: Option<String>,
    /// `namespace/name`.
    pod: Option<String>,
    nodepool: Option<String>,
    since: Option<String>,
    limit: Option<usize>,
}

/// The history about one node, NodeClaim, pod or pool, or all of it, from `since` before
/// the pass's clock (a dump's stands still), as `kelp history -o json` prints it.
pub(super) async fn api_history(
    axum::extract::State(site): St,
    Path(cluster): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let path = format!("/api/v1/clusters/{cluster}/history");
    let outcome = async {
        let (board, pass) = latest_pass(&site, &cluster)?;
        let asks: Vec<Ask> = [
            q.node.map(Ask::Node),
            q.nodeclaim.map(Ask::NodeClaim),
            q.nodepool.map(Ask::NodePool),
            q.pod.map(|p| match p.split_once('/') {
                Some((ns, n)) => Ask::Pod(Some(ns.to_string()), n.to_string()),
                None => Ask::Pod(None, p),
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut asks = asks.into_iter();
        let ask = match (asks.next(), asks.next()) {
            (None, _) => Ask::Cluster,
            (Some(one), None) => one,
            _ => {
                return Err(Fail::BadRequest(
                    "one of node, nodeclaim, pod, nodepool".into(),
                ))
            }
        };
        let since = crate::history::age(q.since.as_deref().unwrap_or("24h"))
            .map_err(|e| Fail::BadRequest(format!("since: {e}")))?;
        let limit = q.limit.unwrap_or(2000).min(100_000);
        Ok(json(&rows(&board, ask, pass.now - since, limit).await?))
    };
    audited(&path, &cluster, outcome.await)
}
