//! A Karpenter controller's `/metrics` (Prometheus text exposition): offering prices and
//! availability (AWS provider), `karpenter_nodepools_cost_total` (kwok and newer cores),
//! its voluntary disruption: eligible nodes and decisions carried out per pool, and the
//! release it was built from (`karpenter_build_info`).

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::model::{ControllerMetrics, Offering};
use crate::source::error::{Error, Result};

const PRICE: &str = "karpenter_cloudprovider_instance_type_offering_price_estimate";
const AVAILABLE: &str = "karpenter_cloudprovider_instance_type_offering_available";
const CPU: &str = "karpenter_cloudprovider_instance_type_cpu_cores";
const MEMORY: &str = "karpenter_cloudprovider_instance_type_memory_bytes";
const POOL_COST: &str = "karpenter_nodepools_cost_total";
const ELIGIBLE: &str = "karpenter_voluntary_disruption_eligible_nodes";
const DECISIONS: &str = "karpenter_voluntary_disruption_decisions_by_nodepool_total";
const BUILD_INFO: &str = "karpenter_build_info";

/// The most exposition text kelp reads from one file or one scrape. A Karpenter on AWS
/// exposes about 20,000 series of instance types and offerings (a few MiB); this is
/// well beyond that, and it is counted while reading, so a pipe or a device is held
/// to it too.
pub const MAX_BYTES: u64 = 64 << 20;
/// The longest line kelp reads (a series with its labels is well under 1 KiB).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The series kelp reads, by their exposed names.
const READ: [&str; 8] = [
    PRICE, AVAILABLE, CPU, MEMORY, POOL_COST, ELIGIBLE, DECISIONS, BUILD_INFO,
];

/// Parse a text exposition held in memory; `name` labels errors.
pub fn parse(name: &str, text: &str) -> Result<ControllerMetrics> {
    parse_reader(name, text.as_bytes())
}

/// Parse a text exposition as it is read, a line at a time: only the series kelp reads
/// (and their `# TYPE` lines) are kept, so what it holds follows them and not the text.
/// More than [`MAX_BYTES`] in all, or a line over [`MAX_LINE_BYTES`], is an error, found
/// while reading. `name` labels errors.
pub fn parse_reader(name: &str, mut reader: impl std::io::BufRead) -> Result<ControllerMetrics> {
    let fail = |message: String| Error::Parse {
        path: name.to_string(),
        message,
    };
    let mut kept: Vec<String> = Vec::new();
    // The first line that is neither blank nor a comment: what says, when none of kelp's
    // series is there, whether this is an exposition at all.
    let mut first_content: Option<String> = None;
    let mut buf = Vec::new();
    let (mut total, mut line_no) = (0u64, 0usize);
    loop {
        buf.clear();
        let n = std::io::Read::take(&mut reader, MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        total += n as u64;
        if total > MAX_BYTES {
            return Err(fail(format!(
                "more than {} MiB of metrics text, the most kelp reads from one exposition",
                MAX_BYTES >> 20
            )));
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(fail(format!(
                "line {line_no}: longer than {} KiB, the longest line kelp reads",
                MAX_LINE_BYTES >> 10
            )));
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| fail(format!("line {line_no}: not UTF-8 text")))?;
        let line = line.trim_end_matches(['\n', '\r']);
        if read_by_kelp(line) {
            kept.push(line.to_string());
        } else if first_content.is_none() && !line.trim().is_empty() && !line.starts_with('#') {
            first_content = Some(line.to_string());
        }
    }
    let has_samples = kept.iter().any(|l| !l.starts_with('#'));
    let scrape = prometheus_parse::Scrape::parse(kept.into_iter().map(Ok))
        .map_err(|e| fail(format!("not a Prometheus text exposition: {e}")))?;
    if !has_samples && first_content.is_some_and(|l| !is_sample(l)) {
        return Err(fail(
            "not a Prometheus text exposition (no samples found)".into(),
        ));
    }
    Ok(metrics_of(&scrape))
}

/// Whether a line is one of the series kelp reads, or its `# TYPE` / `# HELP` line.
fn read_by_kelp(line: &str) -> bool {
    let name = match line.strip_prefix('#') {
        Some(comment) => {
            let mut words = comment.split_whitespace();
            match (words.next(), words.next()) {
                (Some("TYPE" | "HELP"), Some(name)) => name,
                _ => return false,
            }
        }
        None => line.split(['{', ' ', '\t']).next().unwrap_or_default(),
    };
    READ.contains(&name)
}

/// Whether a line is a sample of the exposition format.
fn is_sample(line: String) -> bool {
    prometheus_parse::Scrape::parse(std::iter::once(Ok(line)))
        .is_ok_and(|scrape| !scrape.samples.is_empty())
}

fn metrics_of(scrape: &prometheus_parse::Scrape) -> ControllerMetrics {
    let mut offerings: BTreeMap<(String, String, String), Offering> = BTreeMap::new();
    let mut nodepool_cost = BTreeMap::new();
    let mut instance_cpu = BTreeMap::new();
    let mut instance_memory = BTreeMap::new();
    let mut eligible_nodes = BTreeMap::new();
    let mut decisions = BTreeMap::new();
    let mut build_version = None;
    for s in &scrape.samples {
        let v = match s.value {
            prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        let label = |k: &str| s.labels.get(k).unwrap_or_default().to_string();
        match s.metric.as_str() {
            PRICE | AVAILABLE => {
                let key = (
                    label("instance_type"),
                    label("zone"),
                    label("capacity_type"),
                );
                let o = offerings.entry(key.clone()).or_insert_with(|| Offering {
                    instance_type: key.0,
                    zone: key.1,
                    capacity_type: key.2,
                    ..Offering::default()
                });
                if s.metric == PRICE {
                    o.price = Some(v);
                } else {
                    o.available = Some(v > 0.0);
                }
            }
            CPU => {
                instance_cpu.insert(label("instance_type"), v);
            }
            MEMORY => {
                instance_memory.insert(label("instance_type"), v);
            }
            POOL_COST => {
                nodepool_cost.insert(label("nodepool"), v);
            }
            ELIGIBLE => {
                eligible_nodes.insert(label("reason"), v);
            }
            // An unstamped build says `unspecified`: no version, not a bad one.
            BUILD_INFO if v > 0.0 => {
                build_version =
                    Some(label("version")).filter(|v| !v.is_empty() && v != "unspecified");
            }
            // prometheus-parse keeps a counter's name without `_total` in some versions.
            m if m == DECISIONS || Some(m) == DECISIONS.strip_suffix("_total") => {
                *decisions
                    .entry((label("nodepool"), label("decision"), label("reason")))
                    .or_default() += v;
            }
            _ => {}
        }
    }
    ControllerMetrics {
        offerings: offerings.into_values().collect(),
        instance_cpu,
        instance_memory,
        nodepool_cost,
        eligible_nodes,
        decisions,
        build_version,
        offering_index: Default::default(),
    }
}

/// Read and parse a metrics file (or a pipe, a device, `/dev/stdin`), held to
/// [`MAX_BYTES`] as it is read.
pub fn read(path: &std::path::Path) -> Result<ControllerMetrics> {
    let file = std::fs::File::open(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_reader(
        &path.display().to_string(),
        std::io::BufReader::with_capacity(1 << 16, file),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offerings_and_pool_cost_are_read() {
        let text = "# TYPE karpenter_cloudprovider_instance_type_offering_price_estimate gauge\n\
karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type=\"spot\",instance_type=\"m5.large\",zone=\"us-west-2a\"} 0.035\n\
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge\n\
karpenter_cloudprovider_instance_type_offering_available{capacity_type=\"spot\",instance_type=\"m5.large\",zone=\"us-west-2a\"} 0\n\
# TYPE karpenter_nodepools_cost_total gauge\n\
karpenter_nodepools_cost_total{nodepool=\"default\"} 1.25\n";
        let m = parse("m.txt", text).unwrap();
        assert_eq!(m.offerings.len(), 1);
        assert_eq!(m.offerings[0].price, Some(0.035));
        assert_eq!(m.offerings[0].available, Some(false));
        assert_eq!(m.nodepool_cost["default"], 1.25);
    }

    #[test]
    fn voluntary_disruption_is_read() {
        // As Karpenter v1.14.1 exposes them (counters with HELP/TYPE and `_total`).
        let text = "# HELP karpenter_voluntary_disruption_eligible_nodes Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.\n\
# TYPE karpenter_voluntary_disruption_eligible_nodes gauge\n\
karpenter_voluntary_disruption_eligible_nodes{reason=\"underutilized\"} 3\n\
karpenter_voluntary_disruption_eligible_nodes{reason=\"empty\"} 0\n\
# HELP karpenter_voluntary_disruption_decisions_by_nodepool_total Number of disruption decisions performed per NodePool.\n\
# TYPE karpenter_voluntary_disruption_decisions_by_nodepool_total counter\n\
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type=\"single\",decision=\"delete\",nodepool=\"default\",reason=\"underutilized\"} 2\n\
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type=\"multi\",decision=\"delete\",nodepool=\"default\",reason=\"underutilized\"} 1\n";
        let m = parse("m.txt", text).unwrap();
        assert_eq!(m.eligible_nodes["underutilized"], 3.0);
        let key = (
            "default".to_string(),
            "delete".to_string(),
            "underutilized".to_string(),
        );
        assert_eq!(m.decisions[&key], 3.0);
    }

    #[test]
    fn endless_input_stops_at_a_cap_counted_while_reading() {
        // /dev/zero: one line that never ends.
        let e = parse_reader("zero", std::io::BufReader::new(std::io::repeat(0))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "zero: line 1: longer than 64 KiB, the longest line kelp reads"
        );
        // An endless stream of good lines: the total.
        let line = b"karpenter_nodepools_cost_total{nodepool=\"default\"} 1.25\n";
        let endless = std::io::BufReader::new(Cycle(line, 0));
        let e = parse_reader("fifo", endless).unwrap_err();
        assert!(
            e.to_string().contains("more than 64 MiB of metrics text"),
            "{e}"
        );
    }

    /// `bytes` again and again.
    struct Cycle(&'static [u8], usize);
    impl std::io::Read for Cycle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len() - self.1);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 = (self.1 + n) % self.0.len();
            Ok(n)
        }
    }

    #[test]
    fn only_kelps_series_are_kept_and_other_text_still_has_to_be_an_exposition() {
        let text = "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n\
# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool=\"a\"} 2\n";
        let m = parse("m.txt", text).unwrap();
        assert_eq!(m.nodepool_cost["a"], 2.0);
        // Another program's exposition reads as no figures, not as an error.
        let m = parse("m.txt", "go_goroutines 42\n").unwrap();
        assert!(m.nodepool_cost.is_empty() && m.offerings.is_empty());
        // Text that is not an exposition at all is refused.
        let e = parse("m.json", "{\"kind\": \"List\"}\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("m.json: not a Prometheus text exposition"),
            "{e}"
        );
        let e = parse_reader("bin", &b"ok 1\n\xff\n"[..]).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
