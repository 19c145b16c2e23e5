//! Serving a router on a TCP listener with limits: every kelp listener (the dashboard and
//! `/metrics`) goes through [`serve`], so a client that connects and sends nothing, or
//! sends its headers a byte at a time, cannot hold a connection (or all of them) forever.
//!
//! - **Header read timeout** (hyper's HTTP/1 `header_read_timeout`, with a tokio timer):
//!   the request head must arrive within it. hyper starts this timer whenever a connection
//!   waits for a request head, so it is also the idle keep-alive timeout: a connection
//!   with no request in flight is closed after it. A response being streamed (the
//!   dashboard's Server-Sent Events) is not a wait for a head, so it is not cut.
//! - **Connection cap** (a semaphore): at most `max_connections` connections are served at
//!   once; past that, new ones wait in the kernel's accept queue until one closes. Slow or
//!   idle connections give their slot back within the header timeout; SSE streams hold
//!   theirs while they last, and the dashboard admits only so many of them (see
//!   `web::streams`), so ordinary requests always find a slot.
//! - **Header size**: at most [`MAX_HEADER_BYTES`] of request head are buffered (hyper
//!   answers 431 past it).
//! - **Write timeout** (hyper has none): a connection whose client stops reading, so that
//!   no byte of the response can be written for `write_timeout` (the kernel's socket
//!   buffers are full), is dropped. A live-update stream nobody reads ends so, or at its
//!   lifetime (see `web::streams`), whichever comes first.
//! - **Peer address**: each request carries its connection's peer as axum's
//!   [`ConnectInfo`], for limits per client.
//! - **Shutdown**: when `shutdown` completes, no new connection is accepted, open ones are
//!   asked to finish, and after `drain` the rest (SSE streams never finish) are dropped.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt;

/// The most request-head bytes one connection buffers.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// What one listener allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a request head may take to arrive, and how long a connection may stay
    /// idle between requests.
    pub header_read_timeout: Duration,
    /// Connections served at once (long-lived SSE streams count).
    pub max_connections: usize,
    /// How long a write may wait for a client that does not read before the connection
    /// is dropped.
    pub write_timeout: Duration,
    /// How long open connections get to finish once shutdown starts.
    pub drain: Duration,
}

impl Limits {
    /// The dashboard: a person's browser keeps one SSE stream per open tab plus a few
    /// short-lived fetches; streams take at most a quarter of the 512 (see
    /// `web::streams`), so the rest are always there for pages and the API.
    pub const DASHBOARD: Limits = Limits {
        header_read_timeout: Duration::from_secs(10),
        max_connections: 512,
        write_timeout: Duration::from_secs(30),
        drain: Duration::from_secs(5),
    };
    /// `/metrics`, `/livez`, `/readyz`: a few scrapers and the kubelet's probes, each a
    /// short request.
    pub const METRICS: Limits = Limits {
        header_read_timeout: Duration::from_secs(10),
        max_connections: 256,
        write_timeout: Duration::from_secs(30),
        drain: Duration::from_secs(5),
    };
}

/// Serve `router` on `listener` with `limits` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEADER_BYTES);
    let mut conns = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while conns.try_join_next().is_some() {}
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let service = TowerToHyperService::new(router.clone().map_request(
            move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req
            },
        ));
        let conn = graceful.watch(http.serve_connection(TokioIo::new(Box::pin(stream)), service));
        conns.spawn(async move {
            // An error here is the client's (a timeout, a reset, a malformed head).
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!(
            open = conns.len(),
            "closing the connections still open (live update streams)"
        );
    }
    conns.shutdown().await;
    Ok(())
}

/// A failed accept: a client that gave up is nothing; anything else (out of file
/// descriptors) is logged and retried after a pause, as hyper's own server did.
async fn accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "cannot accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
