//! The series the model alone answers, read at scrape time from the tally `kelp serve`
//! publishes as each watch event is applied ([`crate::model::tally`]): a new node is in
//! its pool's `nodepool_nodes` before the analysis pass that follows it.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::metrics::defs;
use crate::model::tally::{self, LiveTally};

/// Encodes each NodePool's node count from the latest tally.
#[derive(Debug)]
pub struct TallyCollector(LiveTally);

impl Collector for TallyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let t = tally::latest(&self.0);
        let def = defs::NODEPOOL_NODES;
        let mut metric = encoder.encode_descriptor(def.name, def.help, None, MetricType::Gauge)?;
        // Every pool shows, with 0: "no nodes" is an answer.
        for (pool, n) in &t.pool_nodes {
            let labels = [(def.labels[0], pool.as_str())];
            ConstGauge::new(*n as f64).encode(metric.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// Register the tally's series.
pub fn register(r: &mut Registry, live: LiveTally) {
    r.register_collector(Box::new(TallyCollector(live)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster, node, nodepool};

    fn scrape(live: &LiveTally) -> String {
        let mut r = Registry::default();
        register(&mut r, live.clone());
        crate::metrics::encode(&r).unwrap()
    }

    #[test]
    fn a_published_node_is_in_the_next_scrape_and_every_pool_shows() {
        let (a, b, n1) = (nodepool("a"), nodepool("b"), node("n1").pool("a"));
        let live = tally::live(&cluster([&a, &b]));
        let name = defs::NODEPOOL_NODES.name;
        let text = scrape(&live);
        assert!(
            text.contains(&format!("{name}{{nodepool=\"a\"}} 0.0\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{name}{{nodepool=\"b\"}} 0.0\n")),
            "{text}"
        );
        assert!(text.contains(&format!("# TYPE {name} gauge")), "{text}");
        tally::publish(&live, &cluster([&a, &b, &n1]));
        let text = scrape(&live);
        assert!(
            text.contains(&format!("{name}{{nodepool=\"a\"}} 1.0\n")),
            "{text}"
        );
    }
}
