//! The dashboard's router (src/web) in process, on the small test dump and the demo,
//! with arbitrary methods, paths, query strings and headers, with and without a token.
//!
//! Input: a request line `[METHOD ]TARGET`, then `Name: value` header lines. Bytes a URI
//! cannot hold are percent-encoded (as a client would send them); a target or header that
//! `http` still refuses is skipped, as hyper would refuse it before the router.
#![no_main]

use std::sync::{Arc, LazyLock};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use futures::FutureExt;
use http_body_util::BodyExt;
use kelp::web::{self, Site};
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    open: axum::Router,
    guarded: axum::Router,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let now = kelp_fuzz::fixed_now();
    let clusters = vec![
        kelp::serve::loaded("test", kelp_fuzz::small(), now).1,
        kelp::serve::loaded(
            "demo",
            kelp::demo::cluster().expect("the demo loads"),
            kelp::demo::now(),
        )
        .1,
        kelp::serve::loaded("ctx/with:odd chars", kelp_fuzz::small(), now).1,
    ];
    let site = |token: Option<&str>| {
        web::router(Arc::new(Site {
            clusters: clusters.clone(),
            auth_token: token.map(str::to_string),
            hosts: web::Hosts::loopback(),
            secure_cookie: false,
            streams: web::Streams::default(),
        }))
    };
    Fixture {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime"),
        open: site(None),
        guarded: site(Some("fuzz-token")),
    }
});

/// At most this many body frames are read (the SSE stream never ends by itself).
const MAX_FRAMES: usize = 64;

fn request(text: &str) -> Option<Request<Body>> {
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.next()?;
    let (method, target) = match first.split_once(' ') {
        Some((m, t)) => (Method::from_bytes(m.as_bytes()).ok()?, t),
        None => (Method::GET, first),
    };
    let target: String = target
        .bytes()
        .map(|b| match b {
            b'!'..=b'~' if !b"\"<>\\^`{|}".contains(&b) => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut req = Request::builder().method(method).uri(target);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim_start()),
        ) else {
            continue;
        };
        req = req.header(name, value);
    }
    req.body(Body::empty()).ok()
}

async fn send(app: &axum::Router, req: Request<Body>) {
    let response = app
        .clone()
        .oneshot(req)
        .await
        .expect("the router is infallible");
    assert_ne!(
        response.status(),
        StatusCode::INTERNAL_SERVER_ERROR,
        "500 from the dashboard"
    );
    let mut body = response.into_body();
    for _ in 0..MAX_FRAMES {
        // Only what is ready now: a stream that waits for the next pass stops here.
        match body.frame().now_or_never() {
            Some(Some(frame)) => drop(frame.expect("body frames do not fail")),
            Some(None) | None => break,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let text = String::from_utf8_lossy(data);
    let fixture = &*FIXTURE;
    for app in [&fixture.open, &fixture.guarded] {
        let Some(req) = request(&text) else {
            return;
        };
        fixture.runtime.block_on(send(app, req));
    }
});
