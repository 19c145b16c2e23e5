//! Helpers the in-process dashboard tests share: the demo and YAML clusters, a router over
//! boards, and a request's status, headers and body.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use kelp::model::Cluster;
use kelp::web::{self, Board, Hosts, Site};
use tower::ServiceExt;

pub fn now() -> chrono::DateTime<chrono::Utc> {
    kelp::demo::now()
}

pub fn demo() -> Cluster {
    kelp::demo::cluster().unwrap()
}

pub fn load(yaml: &str) -> Cluster {
    let mut c = Cluster::default();
    kelp::source::load_str("test.yaml", yaml, &mut c).unwrap();
    c
}

/// The dashboard over `clusters`, with `token`, the allowed `hosts` and a `secure` cookie.
pub fn site_with(
    clusters: Vec<Arc<Board>>,
    token: Option<&str>,
    hosts: Hosts,
    secure: bool,
) -> axum::Router {
    web::router(Arc::new(Site {
        clusters,
        auth_token: token.map(str::to_string),
        hosts,
        secure_cookie: secure,
        streams: kelp::web::Streams::default(),
    }))
}

/// The dashboard over `clusters` on loopback, with `token`.
pub fn site_of(clusters: Vec<Arc<Board>>, token: Option<&str>) -> axum::Router {
    site_with(clusters, token, Hosts::loopback(), false)
}

/// The dashboard over `c` alone, as cluster `test`.
pub fn site(c: Cluster) -> axum::Router {
    site_of(vec![kelp::serve::loaded("test", c, now()).1], None)
}

/// A response, read whole.
pub struct Got {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Got {
    pub fn html(&self) -> scraper::Html {
        scraper::Html::parse_document(&self.body)
    }
}

pub async fn send(app: &axum::Router, req: Request<Body>) -> Got {
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    Got {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

pub async fn get(app: &axum::Router, uri: &str) -> Got {
    send(app, Request::get(uri).body(Body::empty()).unwrap()).await
}
