//! The overview API's counts, kept live between passes: how many nodes, pods, NodePools
//! and NodeClaims there are is the model's alone, published as each watch event lands
//! ([`crate::model::tally`]). When that tally has moved since the page was built, the
//! page's JSON is answered with its `counts` object written anew from the tally; the rest
//! (findings, verdicts, rows) is the pass's, as `generatedAt` says.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use axum::response::Response;

use super::encoded::Encoded;
use crate::model::Tally;
use crate::view::Counts;

/// What of the counts the tally answers.
type Model = (usize, usize, usize, usize);

fn of_tally(t: &Tally) -> Model {
    (t.nodepools, t.nodeclaims, t.nodes, t.pods)
}

fn of_counts(c: &Counts) -> Model {
    (c.nodepools, c.nodeclaims, c.nodes, c.pods)
}

/// The page's overview JSON and where its `counts` object lies in it, with the body last
/// answered for a newer tally.
#[derive(Debug)]
pub struct LiveJson {
    json: Encoded,
    counts: Counts,
    span: Option<Range<usize>>,
    newer: Mutex<Option<(Model, Arc<Encoded>)>>,
}

impl LiveJson {
    /// The overview's JSON, `json`, whose `counts` are `counts`.
    pub fn new(json: Vec<u8>, counts: &Counts) -> Self {
        let span = span_of(&json, counts);
        LiveJson {
            json: Encoded::new(json),
            counts: counts.clone(),
            span,
            newer: Mutex::new(None),
        }
    }

    /// The body as the pass built it.
    pub fn plain(&self) -> &axum::body::Bytes {
        self.json.plain()
    }

    /// The body with the counts of `tally` (none: as built).
    pub fn current(&self, tally: Option<&Tally>) -> Option<Arc<Encoded>> {
        let model = of_tally(tally?);
        let span = self.span.clone()?;
        if model == of_counts(&self.counts) {
            return None;
        }
        let mut newer = self.newer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, body)) = newer.as_ref().filter(|(at, _)| *at == model) {
            return Some(body.clone());
        }
        let (nodepools, nodeclaims, nodes, pods) = model;
        let counts = Counts {
            nodepools,
            nodeclaims,
            nodes,
            pods,
            ..self.counts.clone()
        };
        let built = self.json.plain();
        let mut body = Vec::with_capacity(built.len() + 16);
        body.extend_from_slice(&built[..span.start]);
        serde_json::to_writer(&mut body, &counts).ok()?;
        body.extend_from_slice(&built[span.end..]);
        let body = Arc::new(Encoded::new(body));
        *newer = Some((model, body.clone()));
        Some(body)
    }

    /// The answer for a request: the counts of `tally` where it has moved on.
    pub fn respond(
        &self,
        tally: Option<&Tally>,
        headers: &HeaderMap,
        content_type: &'static str,
    ) -> Response {
        match self.current(tally) {
            Some(body) => body.respond(headers, content_type),
            None => self.json.respond(headers, content_type),
        }
    }
}

/// Where the value of the top-level `"counts":` key lies in `json`. A key is the only place
/// the bytes `"counts":` can occur (a string's quotes are escaped), and the overview writes
/// no object with such a key before its own.
fn span_of(json: &[u8], counts: &Counts) -> Option<Range<usize>> {
    let value = serde_json::to_vec(counts).ok()?;
    let key = b"\"counts\":";
    let at = json.windows(key.len()).position(|w| w == key)? + key.len();
    let end = at + value.len();
    (json.get(at..end)? == value.as_slice()).then_some(at..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(nodes: usize) -> Tally {
        Tally {
            nodes,
            pods: 30,
            nodepools: 2,
            nodeclaims: 3,
            pool_nodes: vec![],
        }
    }

    fn page() -> LiveJson {
        let counts = Counts {
            findings: 4,
            nodepools: 2,
            nodeclaims: 3,
            nodes: 3,
            pods: 30,
            pending: 1,
            ..Counts::default()
        };
        // As the overview writes it: struct fields in their order.
        let json = format!(
            r#"{{"cluster":"say \"counts\": {{}}","counts":{},"rows":[{{"counts":{{"nodes":3}}}}]}}"#,
            serde_json::to_string(&counts).unwrap()
        );
        LiveJson::new(json.into_bytes(), &counts)
    }

    #[test]
    fn the_counts_follow_the_tally_and_the_rest_stays_the_passes() {
        let p = page();
        assert!(p.current(None).is_none());
        assert!(p.current(Some(&tally(3))).is_none(), "nothing moved");
        let body = p.current(Some(&tally(4))).expect("a newer body");
        let v: serde_json::Value = serde_json::from_slice(body.plain()).unwrap();
        assert_eq!(v["counts"]["nodes"], 4);
        // The pass's own counts stay.
        assert_eq!(
            (
                v["counts"]["findings"].as_u64(),
                v["counts"]["pending"].as_u64()
            ),
            (Some(4), Some(1))
        );
        // Only the top-level counts are written anew.
        assert_eq!(v["rows"][0]["counts"]["nodes"], 3);
        assert_eq!(v["cluster"], "say \"counts\": {}");
        // The same tally again answers the same body.
        let again = p.current(Some(&tally(4))).unwrap();
        assert!(Arc::ptr_eq(&body, &again));
    }

    #[test]
    fn a_body_whose_counts_cannot_be_found_is_answered_as_built() {
        let counts = Counts::default();
        let p = LiveJson::new(b"{\"other\":1}".to_vec(), &counts);
        assert!(p.current(Some(&tally(9))).is_none());
    }
}
