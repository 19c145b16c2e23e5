//! `kelp catalog`: the instance-type catalogue kelp judges with, from the same source as
//! every other command (a live cluster, a dump, `--catalog`, `--metrics-file`): as a
//! table, or as kelp's own catalogue file (`-o yaml|json`) for `--catalog` later, in CI
//! (`kelp what-if --catalog`) or beside a snapshot.

use std::process::ExitCode;

use super::output::{self, AnswerFormat, Format, Style};
use super::source::SourceArgs;
use crate::analysis::{catalog, provisioning};
use crate::explain::text::columns;
use crate::karpenter::labels;
use crate::karpenter::resources::format_quantity;
use crate::model::Catalog;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp catalog
      the current context's types (Karpenter's metrics through --karpenter-service on AWS;
      the kwok provider's built-in types on a kwok cluster)
  kelp catalog --karpenter-service karpenter/karpenter:8080 -o yaml > catalog.yaml
      write a catalogue file for `kelp what-if --catalog` in CI
  kelp catalog --from snap.json --metrics-file karpenter-metrics.txt
  kelp catalog --catalog instance_types.json
      read a kwok provider instance-types file as kelp does

Where kelp finds its catalogue, in order: --catalog (or one embedded in a dump); the AWS
provider's karpenter_cloudprovider_instance_type_* series (--karpenter-service or
--metrics-file), with the labels and allocatable of a node of each type where the cluster has
one; the kwok provider's built-in types when the NodePools use KWOKNodeClass. A type no node
runs has a range of allocatable (its pods, and so its reserved memory, depend on ENI limits)
and an architecture kelp cannot tell: verdicts that depend on them are \"unknown\".

Exit status: 0 a catalogue was found, 1 none, 2 kelp could not run.")]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format: a table, or the catalogue file (json, yaml)
    #[arg(short, long, value_enum, default_value_t = AnswerFormat::Table)]
    pub output: AnswerFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    let provider = provisioning::cluster_provider(&loaded.cluster);
    let found = catalog::resolve(&loaded.cluster, provider);
    loaded.progress.finish();
    let Some(found) = found else {
        eprintln!(
            "no instance-type catalogue: pass --catalog FILE, or Karpenter's /metrics (--karpenter-service NS/SVC:PORT or --metrics-file, AWS provider); the kwok provider's built-in types apply to KWOKNodeClass pools"
        );
        return Ok(ExitCode::from(1));
    };
    let style = Style::detect();
    let text = match Format::from(args.output) {
        Format::Table => table(&found, style),
        f => output::structured(f, &*found)?,
    };
    output::emit(&text, style)?;
    Ok(ExitCode::SUCCESS)
}

fn table(c: &Catalog, s: Style) -> String {
    let mut rows = vec![[
        "NAME",
        "ARCH",
        "CPU",
        "MEMORY",
        "PODS",
        "ALLOCATABLE CPU",
        "ALLOCATABLE MEMORY",
        "OFFERINGS",
        "CHEAPEST $/H",
    ]
    .map(String::from)
    .to_vec()];
    for t in &c.instance_types {
        let range = |r: &str| {
            let low = format_quantity(r, t.allocatable.get(r));
            let high = format_quantity(r, t.allocatable_most(r));
            if low == high {
                low
            } else {
                format!("{low}-{high}")
            }
        };
        let available = t.offerings.iter().filter(|o| o.available).count();
        let cheapest = t
            .offerings
            .iter()
            .filter(|o| o.available)
            .filter_map(|o| o.price)
            .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.min(p))));
        rows.push(vec![
            t.name.clone(),
            t.labels
                .get(labels::ARCH)
                .map(|a| a.join("|"))
                .unwrap_or_else(|| "?".into()),
            format_quantity("cpu", t.capacity.get("cpu")),
            t.capacity
                .0
                .get("memory")
                .map(|m| format_quantity("memory", *m))
                .unwrap_or_else(|| "?".into()),
            range("pods"),
            range("cpu"),
            range("memory"),
            format!("{available}/{}", t.offerings.len()),
            cheapest
                .map(|p| format!("{p:.4}"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    let mut out = format!(
        "{} instance types from {}\n\n",
        c.instance_types.len(),
        s.bold(&c.describe())
    );
    out.push_str(&columns(&rows));
    out
}
