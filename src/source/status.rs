//! What the sources say about themselves, for the views: why prices are missing (the
//! controller scrape's failure, in words and with the RBAC that fixes it) and which watched
//! kinds have gone stale.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::controller::{rbac_yaml, ScrapeError, ScrapeTarget};

/// Why the cost columns are hidden, when they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum PriceProblem {
    /// The API server refused `services/proxy` (403): grant it with this YAML.
    Forbidden { message: String, rbac: String },
    /// The scrape did not answer in time.
    Timeout { message: String },
    /// The Karpenter service (or its namespace) does not exist.
    NotFound { message: String },
    /// Anything else (no endpoints, a parse error...).
    Other { message: String },
    /// Reading from a dump with no controller metrics in it.
    NotScraped { message: String },
}

impl PriceProblem {
    /// The words for a scrape failure (the dashboard shows them, with the RBAC to grant
    /// when the API server refused).
    pub fn of(e: &ScrapeError, target: &ScrapeTarget) -> Self {
        let message = format!("{e} ({})", e.hint(target));
        match e {
            ScrapeError::Forbidden { .. } => PriceProblem::Forbidden {
                rbac: e
                    .rbac_yaml(target)
                    .unwrap_or_else(|| rbac_yaml(target, "kelp", "kelp")),
                message,
            },
            ScrapeError::Timeout { .. } => PriceProblem::Timeout { message },
            ScrapeError::NotFound { .. } | ScrapeError::PortNotFound { .. } => {
                PriceProblem::NotFound { message }
            }
            _ => PriceProblem::Other { message },
        }
    }

    pub fn message(&self) -> &str {
        match self {
            PriceProblem::Forbidden { message, .. }
            | PriceProblem::Timeout { message }
            | PriceProblem::NotFound { message }
            | PriceProblem::Other { message }
            | PriceProblem::NotScraped { message } => message,
        }
    }
    pub fn cause(&self) -> &'static str {
        match self {
            PriceProblem::Forbidden { .. } => "forbidden",
            PriceProblem::Timeout { .. } => "timeout",
            PriceProblem::NotFound { .. } => "not-found",
            PriceProblem::Other { .. } => "other",
            PriceProblem::NotScraped { .. } => "not-scraped",
        }
    }
    pub fn rbac(&self) -> Option<&str> {
        match self {
            PriceProblem::Forbidden { rbac, .. } => Some(rbac),
            _ => None,
        }
    }
}

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
