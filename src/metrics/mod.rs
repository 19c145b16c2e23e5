//! Prometheus metrics, prefix `karpenter_helper_`. The picture of now
//! (`karpenter_helper_findings{code,severity,nodepool}`) is computed at scrape time by a
//! [`Collector`] from the latest report, so it can never drift from what kelp reports.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::findings::Report;

pub mod common;
pub mod defs;
pub mod generate;
pub mod live;
pub mod seed;
pub mod sli;

/// The latest report, shared between the analyser and scrapes.
pub type LatestReport = Arc<RwLock<Option<Arc<Report>>>>;

/// Reads the current findings at scrape time.
#[derive(Debug)]
pub struct FindingsCollector {
    latest: LatestReport,
}

impl FindingsCollector {
    pub fn new(latest: LatestReport) -> Self {
        FindingsCollector { latest }
    }
}

/// Current findings counted by (code, severity, nodepool).
pub fn finding_counts(report: &Report) -> BTreeMap<(&'static str, String, String), i64> {
    let mut counts = BTreeMap::new();
    for f in &report.findings {
        let key = (
            f.code.as_str(),
            f.severity.to_string(),
            f.nodepool.clone().unwrap_or_default(),
        );
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

impl Collector for FindingsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let report = self.latest.read().ok().and_then(|r| r.clone());
        let Some(report) = report else { return Ok(()) };
        let mut metric = encoder.encode_descriptor(
            defs::FINDINGS.name,
            defs::FINDINGS.help,
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for ((code, severity, nodepool), n) in finding_counts(&report) {
            let labels = [
                ("code", code.to_string()),
                ("severity", severity),
                ("nodepool", nodepool),
            ];
            ConstGauge::new(n).encode(metric.encode_family(&labels)?)?;
        }
        if let Some(v) = &report.karpenter.version {
            let d = defs::KARPENTER_INFO;
            let mut metric = encoder.encode_descriptor(
                d.name,
                d.help,
                None,
                prometheus_client::metrics::MetricType::Gauge,
            )?;
            let labels = [
                (d.label("version"), v.version.to_string()),
                (d.label("source"), v.source.as_str().to_string()),
                (d.label("window"), v.window.as_str().to_string()),
            ];
            ConstGauge::new(1).encode(metric.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The registry kelp serves at `/metrics`.
pub fn registry(latest: LatestReport) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(FindingsCollector::new(latest)));
    registry
}

/// The registry kelp serves: the findings, the seed operator's metrics, and the series
/// the model's tally answers.
pub fn registry_with(
    latest: LatestReport,
    seed: &seed::SeedMetrics,
    tally: crate::model::LiveTally,
) -> Registry {
    let mut registry = registry(latest);
    seed.register(&mut registry);
    live::register(&mut registry, tally);
    registry
}

/// Encode the registry as OpenMetrics text.
pub fn encode(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_counted_at_scrape_time() {
        let latest: LatestReport = Arc::default();
        let registry = registry(latest.clone());
        assert!(!encode(&registry)
            .unwrap()
            .contains("karpenter_helper_findings{"));
        let mut c = crate::model::Cluster::default();
        crate::source::load_str("demo", crate::demo::CLUSTER, &mut c).unwrap();
        let report = crate::analysis::analyze(&c, crate::demo::now());
        let pending = report
            .findings
            .iter()
            .filter(|f| {
                f.code.as_str() == "pod-unschedulable" && f.severity.to_string() == "critical"
            })
            .count();
        *latest.write().unwrap() = Some(Arc::new(report));
        let text = encode(&registry).unwrap();
        assert!(
            text.contains("# TYPE karpenter_helper_findings gauge"),
            "{text}"
        );
        let line = format!("karpenter_helper_findings{{code=\"pod-unschedulable\",severity=\"critical\",nodepool=\"\"}} {pending}");
        assert!(text.contains(&line), "{line} not in {text}");
        // The demo's controller runs v1.14.1, read from its image.
        let info = "karpenter_helper_karpenter_info{version=\"v1.14.1\",source=\"image\",window=\"supported\"} 1";
        assert!(text.contains(info), "{info} not in {text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
