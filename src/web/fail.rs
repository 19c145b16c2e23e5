//! How a dashboard request fails, in one place: each way renders itself (status, kelp's
//! one line, `Retry-After` where a retry helps) and names its audit outcome, so a handler
//! is its happy path with `?` and [`audited`] writes the one audit line per read.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// Why a read of the dashboard or its API did not answer.
#[derive(Debug)]
pub enum Fail {
    /// Something asked for is not there (a cluster, a pool's rows, a pod).
    NotFound(String),
    /// An answer's own words for what is missing (`why` of a pod that does not exist).
    Answer(crate::explain::NotFound),
    /// The first analysis pass has not run yet.
    NotReady,
    /// The model stayed locked behind a running pass past the deadline.
    Busy,
    /// The request itself is wrong (a malformed selection).
    BadRequest(String),
    /// A template failed to render.
    Render(askama::Error),
    /// A page already rendered for the failure (the unknown-cluster page).
    Page(StatusCode, String),
}

impl Fail {
    /// The `op` of the audit line.
    pub fn op(&self) -> &'static str {
        match self {
            Fail::NotFound(_) | Fail::Answer(_) | Fail::Page(..) => "not_found",
            Fail::NotReady => "not_ready",
            Fail::Busy => "busy",
            Fail::BadRequest(_) => "bad_request",
            Fail::Render(_) => "error",
        }
    }
}

impl From<askama::Error> for Fail {
    fn from(e: askama::Error) -> Self {
        Fail::Render(e)
    }
}

impl From<crate::explain::NotFound> for Fail {
    fn from(e: crate::explain::NotFound) -> Self {
        Fail::Answer(e)
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        match self {
            Fail::NotFound(what) => {
                (StatusCode::NOT_FOUND, format!("kelp: {what} not found\n")).into_response()
            }
            Fail::Answer(e) => (StatusCode::NOT_FOUND, format!("kelp: {e}\n")).into_response(),
            Fail::NotReady => (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "kelp: still reading the cluster; try again in a moment\n",
            )
                .into_response(),
            Fail::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "2")],
                "kelp: the model is busy (an analysis pass is running); try again\n",
            )
                .into_response(),
            Fail::BadRequest(m) => {
                (StatusCode::BAD_REQUEST, format!("kelp: {m}\n")).into_response()
            }
            Fail::Render(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("kelp: rendering failed: {e}\n"),
            )
                .into_response(),
            Fail::Page(status, body) => (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                body,
            )
                .into_response(),
        }
    }
}

/// One structured line per read of the dashboard or its API.
pub fn audit(path: &str, cluster: &str, op: &str) {
    tracing::info!(target: "audit", event = "karpenter_read", op, cluster, path);
}

/// Audit a read by its outcome and answer it.
pub fn audited(path: &str, cluster: &str, outcome: Result<Response, Fail>) -> Response {
    match outcome {
        Ok(r) => {
            audit(path, cluster, "ok");
            r
        }
        Err(f) => {
            audit(path, cluster, f.op());
            f.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_status_and_audit_outcome() {
        let cases = [
            (
                Fail::NotFound("pod a/b".into()),
                StatusCode::NOT_FOUND,
                "not_found",
            ),
            (Fail::NotReady, StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
            (Fail::Busy, StatusCode::SERVICE_UNAVAILABLE, "busy"),
            (
                Fail::BadRequest("sel: x".into()),
                StatusCode::BAD_REQUEST,
                "bad_request",
            ),
        ];
        for (f, status, op) in cases {
            assert_eq!(f.op(), op);
            let r = f.into_response();
            assert_eq!(r.status(), status);
        }
        let r = Fail::Busy.into_response();
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    }
}
