//! Who may read the dashboard: the `Host` allowlist (DNS rebinding), the token (bearer,
//! cookie or `?token=` once) and the cookie it leaves.
//!
//! A DNS-rebinding page is served from the attacker's name, which is then pointed at
//! kelp's address: the browser sends that name as `Host`. So kelp answers only names and
//! addresses it was told about ([`Hosts`]), and 421 otherwise. A `Host` that is an IP
//! address cannot be rebound (no name is resolved), nor can `localhost`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, SameSite};
use subtle::ConstantTimeEq;

use super::{audit, Site};

/// The token cookie's name.
pub const COOKIE: &str = "kelp_token";

/// Which `Host` values the dashboard answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts {
    /// Every Host (bound to all addresses with a token and no `--allowed-host`).
    any: bool,
    /// Any IP address (bound to all addresses: an address cannot be rebound).
    any_ip: bool,
    /// The address bound, when it is one address.
    bound: Option<IpAddr>,
    /// `--allowed-host`: lowercase host, and the port when one was given.
    allowed: Vec<(String, Option<u16>)>,
}

impl Hosts {
    /// For a dashboard bound to `bound`, with `--allowed-host` values `allowed` (already
    /// checked by [`parse_allowed_host`]) and whether a token is required:
    ///
    /// - always: `localhost` and loopback addresses (`127.0.0.1`, `[::1]`), any port;
    /// - the bound address, any port; bound to `0.0.0.0` or `::`, any IP address;
    /// - each `--allowed-host` (its port, or any port when it has none);
    /// - bound to `0.0.0.0` or `::` with a token and no `--allowed-host`: any Host at all
    ///   (the token is what keeps a rebinding page out).
    pub fn new(bound: SocketAddr, allowed: &[String], token: bool) -> Hosts {
        let all = bound.ip().is_unspecified();
        Hosts {
            any: all && token && allowed.is_empty(),
            any_ip: all,
            bound: (!all).then(|| bound.ip()),
            allowed: allowed.iter().filter_map(|h| split(h)).collect(),
        }
    }

    /// Loopback only: for a dashboard bound to 127.0.0.1 (tests, one-off views).
    pub fn loopback() -> Hosts {
        Hosts::new(SocketAddr::from(([127, 0, 0, 1], 0)), &[], false)
    }

    /// Whether a request naming `host` (a `Host` header's value) is answered.
    pub fn allows(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        let Some((name, port)) = split(host) else {
            return false;
        };
        if name == "localhost" {
            return true;
        }
        if let Some(ip) = ip_of(&name) {
            if ip.is_loopback() || self.any_ip || self.bound == Some(ip) {
                return true;
            }
        }
        self.allowed
            .iter()
            .any(|(n, p)| *n == name && (p.is_none() || *p == port))
    }
}

/// `host[:port]` (IPv6 in brackets) into the lowercase host and the port; None when it is
/// not an authority without user info.
fn split(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if s.is_empty() || s.contains(['@', '/', '?', '#', '*']) {
        return None;
    }
    let a: axum::http::uri::Authority = s.parse().ok()?;
    let host = a.host();
    let port = match a.as_str().strip_prefix(host)? {
        "" => None,
        p => Some(p.strip_prefix(':')?.parse::<u16>().ok()?),
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

fn ip_of(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// clap's check of one `--allowed-host` value.
pub fn parse_allowed_host(s: &str) -> Result<String, String> {
    match split(s) {
        Some(_) => Ok(s.trim().to_ascii_lowercase()),
        None => Err(format!(
            "{s:?} is not a host: give a name or address as the browser's address bar shows it, with an optional port (kelp.example.com, kelp.example.com:8443, 10.0.0.5)"
        )),
    }
}

/// Refuse a request whose `Host` (or absolute URI) is not one the dashboard answers.
/// A request without either (HTTP/1.0, or a test calling the router) is not a browser's.
/// One with two `Host` headers is malformed (RFC 9112 3.2: 400), whatever they say: a
/// proxy in front may have read the other one.
pub async fn check_host(State(site): State<Arc<Site>>, req: Request, next: Next) -> Response {
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        audit(req.uri().path(), "", "bad-request");
        return (
            StatusCode::BAD_REQUEST,
            "kelp: a request has one Host header, not several\n",
        )
            .into_response();
    }
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        });
    match host {
        Some(h) if !site.hosts.allows(&h) => {
            audit(req.uri().path(), "", "misdirected");
            (
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "kelp: this dashboard does not answer to Host {h:?}; if that is how you reach it, start kelp with --allowed-host {}\n",
                    h.escape_debug()
                ),
            )
                .into_response()
        }
        _ => next.run(req).await,
    }
}

/// Whether two secrets are equal, compared in constant time.
pub fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The token of `Authorization: Bearer T` (the scheme is case-insensitive, RFC 7235).
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start())
}

/// Whether any `kelp_token` cookie holds the token (a browser may send two, with
/// different paths: each is checked).
fn cookie_matches(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .any(|c| c.name() == COOKIE && same(c.value(), token))
}

/// Where to send the browser after `?token=`: the same path on this origin, without the
/// token. A path is made to start with exactly one `/`: `//host/x` or `/\host/x` would be
/// read by a browser as another site.
fn redirect_target(path: &str, query: &str) -> String {
    let path = format!("/{}", path.trim_start_matches(['/', '\\']));
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter(|kv| {
            form_urlencoded::parse(kv.as_bytes())
                .next()
                .is_none_or(|(k, _)| k != "token")
        })
        .collect();
    if rest.is_empty() {
        path
    } else {
        format!("{path}?{}", rest.join("&"))
    }
}

/// Whether the browser reached kelp over TLS: `--secure-cookie`, or a TLS-terminating
/// proxy's `X-Forwarded-Proto: https` (first value). Trusting that header is safe here:
/// it can only add `Secure`, which a client that forges it only does to its own cookie.
fn over_tls(site: &Site, headers: &HeaderMap) -> bool {
    site.secure_cookie
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// With a token set: `Authorization: Bearer T`, the `kelp_token` cookie, or `?token=T`
/// once (which sets the cookie and redirects to the same page without it).
pub async fn auth(State(site): State<Arc<Site>>, req: Request, next: Next) -> Response {
    let Some(token) = site.auth_token.as_deref() else {
        return next.run(req).await;
    };
    let headers = req.headers();
    if bearer(headers).is_some_and(|b| same(b, token)) || cookie_matches(headers, token) {
        return next.run(req).await;
    }
    let query = req.uri().query().unwrap_or("");
    let given = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "token");
    if given.is_some_and(|(_, t)| same(&t, token)) {
        let mut r = Redirect::to(&redirect_target(req.uri().path(), query)).into_response();
        let cookie = Cookie::build((COOKIE, token))
            .http_only(true)
            .same_site(SameSite::Strict)
            .path("/")
            .secure(over_tls(&site, headers))
            .build();
        if let Ok(v) = HeaderValue::from_str(&cookie.to_string()) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        return r;
    }
    audit(req.uri().path(), "", "unauthorized");
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "kelp: this dashboard needs its token: open it with ?token=... or send Authorization: Bearer ...\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(bound: &str, allowed: &[&str], token: bool) -> Hosts {
        let allowed: Vec<String> = allowed
            .iter()
            .map(|h| parse_allowed_host(h).unwrap())
            .collect();
        Hosts::new(bound.parse().unwrap(), &allowed, token)
    }

    #[test]
    fn loopback_binding_answers_loopback_names_only() {
        let h = hosts("127.0.0.1:8081", &[], false);
        for ok in [
            "127.0.0.1:8081",
            "127.0.0.1",
            "localhost",
            "LOCALHOST:9000",
            "[::1]",
            "[::1]:8081",
            "127.0.0.2:1",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8081",
            "10.0.0.5:8081",
            "localhost.evil.example",
            "user@localhost",
            "",
            "127.0.0.1:99999",
            "[::1",
        ] {
            assert!(!h.allows(no), "{no}");
        }
        // A token does not widen a loopback binding.
        assert!(!hosts("127.0.0.1:8081", &[], true).allows("evil.example"));
    }

    #[test]
    fn allowed_hosts_match_with_or_without_a_port() {
        let h = hosts(
            "10.0.0.5:8081",
            &["Kelp.Example.com", "proxy.local:8443"],
            false,
        );
        assert!(h.allows("10.0.0.5:8081") && h.allows("10.0.0.5"));
        assert!(h.allows("kelp.example.com") && h.allows("kelp.example.com:443"));
        assert!(h.allows("proxy.local:8443"));
        assert!(!h.allows("proxy.local:80") && !h.allows("proxy.local"));
        assert!(!h.allows("10.0.0.6:8081"), "another address");
        assert!(!h.allows("example.com"));
    }

    #[test]
    fn all_addresses_answer_any_ip_and_any_name_only_with_a_token() {
        let h = hosts("0.0.0.0:8081", &[], false);
        assert!(h.allows("10.1.2.3:8081") && h.allows("[fd00::1]:8081"));
        assert!(!h.allows("kelp.kelp.svc:8081"));
        assert!(hosts("[::]:8081", &[], true).allows("kelp.kelp.svc:8081"));
        // With --allowed-host the list holds even with a token.
        let h = hosts("0.0.0.0:8081", &["kelp.example.com"], true);
        assert!(h.allows("kelp.example.com") && !h.allows("evil.example"));
    }

    #[test]
    fn allowed_host_values_are_checked() {
        assert_eq!(
            parse_allowed_host(" Kelp.Example.com:8443 ").unwrap(),
            "kelp.example.com:8443"
        );
        assert!(parse_allowed_host("[fd00::1]").is_ok());
        for bad in [
            "",
            "http://kelp.example.com",
            "kelp.example.com/x",
            "*",
            "a@b",
            "h:port",
        ] {
            assert!(parse_allowed_host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirects_stay_on_this_origin() {
        assert_eq!(redirect_target("//evil.example/x", ""), "/evil.example/x");
        assert_eq!(
            redirect_target("/\\evil.example", "a=1"),
            "/evil.example?a=1"
        );
        assert_eq!(redirect_target("///x", "token=t&sel=a"), "/x?sel=a");
        assert_eq!(redirect_target("/p", "%74oken=t&b=2"), "/p?b=2");
        assert_eq!(redirect_target("/p", ""), "/p");
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        let mut h = HeaderMap::new();
        for v in ["Bearer t", "bearer t", "BEARER  t"] {
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(v));
            assert_eq!(bearer(&h), Some("t"), "{v}");
        }
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic t"));
        assert_eq!(bearer(&h), None);
    }
}
