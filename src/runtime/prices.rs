//! The price scrape: Karpenter's own metrics through the API server's service proxy, now
//! and then. The model gets the last good ones; the runtime's status says why, when
//! there are none.

use std::sync::Arc;
use std::time::Duration;

use super::Shared;
use crate::source::controller::{PriceCache, PriceProblem, ScrapeTarget};
use crate::source::live::Connection;

pub const PRICE_INTERVAL: Duration = Duration::from_secs(60);

/// Scrape Karpenter's metrics now and then; the model gets the last good ones, the
/// dashboard the cause of a failure.
pub(super) async fn scrape_prices(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    target: ScrapeTarget,
) {
    let mut cache = PriceCache::new(target.clone(), PRICE_INTERVAL);
    loop {
        if cache.refresh(&conn, std::time::Instant::now()).await {
            let problem = cache.last_error().map(|e| PriceProblem::of(e, &target));
            match &problem {
                Some(p) => {
                    tracing::info!(service = %target, problem = p.message(), "no prices from Karpenter's metrics")
                }
                None => tracing::debug!(service = %target, "Karpenter's metrics scraped"),
            }
            // A scrape that read the same figures, with the same problem, changes nothing:
            // no pass, nothing recomputed.
            let new_problem = shared.status().price_problem != problem;
            shared.set_price_problem(problem);
            let metrics = cache.metrics().cloned();
            shared.update_if(move |c| {
                if c.metrics == metrics {
                    return new_problem;
                }
                c.metrics = metrics;
                c.touch_all();
                true
            });
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}
