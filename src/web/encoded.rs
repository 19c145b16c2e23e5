//! A body the dashboard answers many times between two passes (the page, its panels, the
//! overview API), kept as built and, for clients that accept it, gzipped once: the first
//! request that asks for gzip compresses it, every later one sends the same bytes. A
//! browser, Go's and Python's HTTP clients all ask for gzip; the 85-290 KiB bodies of a
//! large cluster shrink about eight times, which is most of what a request costs.

use std::io::Write;
use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use flate2::write::GzEncoder;
use flate2::Compression;

/// One body in its two encodings.
#[derive(Debug, Default)]
pub struct Encoded {
    plain: Bytes,
    gzip: OnceLock<Bytes>,
}

impl Encoded {
    pub fn new(plain: impl Into<Bytes>) -> Self {
        Self {
            plain: plain.into(),
            gzip: OnceLock::new(),
        }
    }

    /// The body as built.
    pub fn plain(&self) -> &Bytes {
        &self.plain
    }

    /// The body as text (it was built from text).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.plain).unwrap_or_default()
    }

    /// The body gzipped, compressed by the first caller.
    pub fn gzip(&self) -> &Bytes {
        self.gzip.get_or_init(|| {
            // The fastest level: it costs about a millisecond for a large cluster's page,
            // once a pass, and keeps most of the gain.
            let mut gz = GzEncoder::new(
                Vec::with_capacity(self.plain.len() / 4),
                Compression::fast(),
            );
            // Writing into a Vec cannot fail.
            let _ = gz.write_all(&self.plain);
            Bytes::from(gz.finish().unwrap_or_default())
        })
    }

    /// The answer for a request with `headers`: gzipped when the client accepts gzip, as
    /// built otherwise; either way it says that the answer varies with Accept-Encoding.
    pub fn respond(&self, headers: &HeaderMap, content_type: &'static str) -> Response {
        let gzip = accepts_gzip(headers);
        let body = if gzip { self.gzip() } else { self.plain() };
        let mut r = (
            [
                (header::CONTENT_TYPE, content_type),
                (header::VARY, "accept-encoding"),
            ],
            body.clone(),
        )
            .into_response();
        if gzip {
            r.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        r
    }
}

/// Whether a request's Accept-Encoding (RFC 9110, 12.5.3) admits gzip: named (or `*`)
/// with a weight above zero, and not refused by name when `*` admits it.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut named = None;
    let mut any = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let weight = parts
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                .map_or(Some(1.0), |(_, q)| q.trim().parse::<f32>().ok());
            // A weight kelp cannot read admits nothing.
            let admits = weight.is_some_and(|q| q > 0.0);
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                named = Some(admits);
            } else if coding == "*" {
                any = Some(admits);
            }
        }
    }
    named.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn asking(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn gzip_is_sent_only_to_a_client_that_accepts_it() {
        for (values, want) in [
            (&[][..], false),
            (&["gzip, deflate, br, zstd"][..], true),
            (&["br", "GZip"][..], true),
            (&["identity"][..], false),
            (&["gzip;q=0"][..], false),
            (&["gzip; q=0.000"][..], false),
            (&["gzip;q=0.5, br;q=1"][..], true),
            (&["*"][..], true),
            (&["*;q=0.1, gzip;q=0"][..], false),
            (&["gzip;q=nonsense"][..], false),
            (&["deflate"][..], false),
        ] {
            assert_eq!(accepts_gzip(&asking(values)), want, "{values:?}");
        }
    }

    #[test]
    fn the_gzipped_body_is_the_body_and_is_made_once() {
        let body = "<tr><td>pod</td></tr>".repeat(2000);
        let e = Encoded::new(body.clone());
        let first = e.gzip().clone();
        assert!(first.len() * 8 < body.len(), "{} bytes", first.len());
        assert_eq!(first.as_ptr(), e.gzip().as_ptr());
        let mut back = String::new();
        flate2::read::GzDecoder::new(&first[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, body);

        let plain = e.respond(&asking(&["identity"]), "text/html; charset=utf-8");
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(plain.headers()[header::VARY], "accept-encoding");
        let gz = e.respond(&asking(&["gzip"]), "application/json");
        assert_eq!(gz.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(gz.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(gz.headers()[header::VARY], "accept-encoding");
    }
}
