//! kelp's memory: a durable history of what Karpenter did and what kelp found, per node,
//! NodeClaim, pod and pool, that outlives Kubernetes' events (gone after an hour) and
//! serve's restarts. [`recorder`] turns each pass into rows (a pure diff), [`writer`] keeps
//! them on its own thread, off the analysis path, in [`store`] (SQLite, WAL), which
//! `kelp history` reads. A view of the analysis: it imports the analysis and the model,
//! nothing of the web or the runtime.

pub mod import;
pub mod record;
pub mod recorder;
pub mod store;
pub mod writer;

pub use record::{Kind, Record, Subject};
pub use recorder::Recorder;
pub use store::{Ask, MovedAside, StoreError};
pub use writer::{History, Settings};

/// A Go duration, or whole days (`7d`): how far back to look, how long to keep.
pub fn age(s: &str) -> Result<chrono::Duration, String> {
    if let Some(days) = s.strip_suffix('d') {
        let n: i64 = days
            .parse()
            .map_err(|_| format!("{s}: a Go duration (90m, 24h) or whole days (7d)"))?;
        if n < 0 {
            return Err(format!("{s}: must not be negative"));
        }
        return chrono::Duration::try_days(n).ok_or_else(|| format!("{s}: too long"));
    }
    let d = crate::karpenter::duration::parse_go_duration(s)?;
    if d < chrono::Duration::zero() {
        return Err(format!("{s}: must not be negative"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_read_go_durations_and_days() {
        assert_eq!(super::age("7d").unwrap(), chrono::Duration::days(7));
        assert_eq!(super::age("90m").unwrap(), chrono::Duration::minutes(90));
        assert!(super::age("-1d").is_err());
        assert!(super::age("soon").is_err());
    }
}
