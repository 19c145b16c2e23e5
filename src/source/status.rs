//! What the sources say about themselves, for the views: which watched kinds have gone
//! stale. (Why prices are missing is the scrape's own word:
//! [`PriceProblem`](super::controller::PriceProblem).)

use chrono::{DateTime, Utc};
use serde::Serialize;

/// One kind that has had no progress for `STALE_AFTER` (the runtime's health).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleKind {
    pub kind: String,
    /// The latest error, when the kind is failing rather than silent.
    pub error: Option<String>,
}

/// Why the model may be out of date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stale {
    /// The earliest moment a stale kind last made progress (or began failing).
    pub since: DateTime<Utc>,
    pub kinds: Vec<StaleKind>,
}

impl Stale {
    /// One line for `/readyz` and logs.
    pub fn line(&self) -> String {
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|k| match &k.error {
                Some(e) => format!("{}: {e}", k.kind),
                None => format!("{}: no watch progress", k.kind),
            })
            .collect();
        format!(
            "stale since {}: {}",
            self.since
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            kinds.join("; ")
        )
    }
}
