//! `kelp what-if`: with `--pod FILE --nodepools PATH...`, would this pod (or a workload's
//! pod template) fit these NodePools? Without `--pod`, the impact of merging the NodePool
//! changes on a cluster ([`impact`]). The pod's answer is offline, with the evaluation
//! `kelp why pod` uses (readiness, limits, taints, requirements, in Karpenter's pool order). Manifests from
//! Git carry no status, so a pool without conditions is taken as Ready and a pool
//! without `status.resources` (and no NodeClaims in the inputs) as using nothing.
//!
//! Instance types are judged from a catalogue (`--catalog`, `--metrics-file`, or the kwok
//! provider's built-in types for KWOKNodeClass pools) as Karpenter filters them, and a
//! compatible pool carries the launch Karpenter would make. With no catalogue, a pool that
//! passes the other checks is `unknown` ("cannot tell"), never "compatible", and the
//! reason names what was not checked: an architecture, an OS other than Linux, an
//! instance-type label the pool does not pin with `In`, an extended resource (a GPU), or
//! else whether any type holds the pod's requests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;

use super::output::{self, Format, Style};
use crate::analysis::provisioning::affinity::ZoneAffinity;
use crate::analysis::provisioning::{
    evaluate, pod_requests, pod_terms, PoolInfo, PoolSet, PoolVerdict, Reason, Verdict,
};
use crate::karpenter::events::Category;
use crate::karpenter::requirements::{self, Operator, Requirements};
use crate::karpenter::resources::format_quantity;
use crate::karpenter::resources::Resources;
use crate::lint::{checks, yaml};
use crate::model::{Cluster, Condition, Pod};
use crate::source;

pub mod impact;
pub mod report;

use impact::{FailOn, ImpactFormat};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp what-if --nodepools karpenter/default.yaml --from cluster.json
      a changed NodePool on a snapshot: which nodes drift, and in what waves
  kelp what-if --nodepools karpenter/ -o json
      the same on the live cluster: each node of a changed pool once
  kelp what-if --nodeclasses karpenter/ec2nodeclass.yaml -o markdown
      a changed EC2NodeClass: the nodes of every pool that launches from it
  kelp what-if --pod web.yaml --nodepools karpenter/
      a Deployment against a folder of pools
  kelp what-if --pod job.yaml --nodepools pools.yaml -o json
  kubectl get pod web-0 -o yaml | kelp what-if --pod - --nodepools karpenter/
  kelp what-if --pod web.yaml --nodepools cluster.json
      against a snapshot (pools keep status)

The pod file may hold a Pod, Deployment, StatefulSet, ReplicaSet, Job, CronJob or DaemonSet
(several documents are evaluated one by one). NodePools without status are taken as Ready
and empty (usage 0); pools with status are judged by it.

Instance types are judged from a catalogue, as Karpenter filters them (requirements,
offerings, allocatable after overhead and DaemonSets, minValues, what is left under the
limits), and a compatible pool shows the launch Karpenter would make: with --catalog (kelp's
own file, `kelp catalog -o yaml`, or a kwok instance-types file), with --metrics-file (the AWS
provider's /metrics), or, for pools on KWOKNodeClass, the kwok provider's built-in types.
Without one, kelp cannot tell whether a pool offers an architecture, an OS other than Linux,
a GPU or other extended resource, an instance type/family/size the pool's requirements do not
pin down, or a type big enough: such a pool's verdict is \"unknown\", never \"compatible\".

Exit status: 0 every pod fits at least one NodePool, 1 one does not, 2 kelp could not run,
3 kelp cannot tell for some pod (only pools it cannot judge could take it).

Without --pod, the changed NodePools are judged against the cluster as Karpenter judges
drift: a launched node drifts (NodePoolDrifted) when the template's hash, computed as
Karpenter computes karpenter.sh/nodepool-hash, differs from the one its NodeClaim carries,
else (RequirementsDrifted) when its labels no longer satisfy the new requirements. Limits,
weight and disruption settings drift nothing. Drifting nodes are replaced as many at a time
as the pool's budgets allow for Drifted, their cron windows included. Pending pods whose
answer changes are listed, and the pods of drifting nodes that another pool, or none, takes
after the change (Karpenter does not replace a node whose pods would not schedule). Exit
status: 0, 1 a rollout the budgets block for a week or pods left with no pool (--fail-on),
2 kelp could not run, 3 some node's drift cannot be told.

--nodeclasses adds changed EC2NodeClasses (with or without --nodepools): after Karpenter's
own checks, a node launched from one drifts (NodeClassDrift) when the change moves a field
the AWS provider's karpenter.k8s.aws/ec2nodeclass-hash reads (tags, role, userData, block
devices, metadata options, kubelet, the AMI family, ...; not the selectors nor
ipPrefixCount), if its NodeClaim carries the class's current hash. A changed AMI, subnet,
security-group or capacity-reservation selector drifts nodes by what EC2 resolves it to,
which kelp cannot see offline: those nodes are \"unknown\". The class's new kubelet settings
judge the pending pods after the change.")]
pub struct Args {
    /// The pod or workload manifest (YAML or JSON), or - for stdin. Without it, kelp
    /// judges the impact of the --nodepools changes on the cluster (--from, or live)
    #[arg(long, value_name = "FILE")]
    pub pod: Option<PathBuf>,
    /// NodePool manifests: files or folders (recursive *.yaml|*.yml|*.json). Repeatable.
    /// With --pod: the pools to judge it against; without: the changed pools
    #[arg(long, value_name = "PATH", num_args = 1.., required_unless_present = "nodeclasses")]
    pub nodepools: Vec<PathBuf>,
    /// Without --pod: changed EC2NodeClass manifests (files or folders). Repeatable. The
    /// pools that launch from them are judged too
    #[arg(long, value_name = "PATH", num_args = 1.., conflicts_with = "pod")]
    pub nodeclasses: Vec<PathBuf>,
    #[command(flatten)]
    pub source: crate::cli::source::SourceArgs,
    /// Output format (markdown and sarif: for the impact of a change, without --pod)
    #[arg(short, long, value_enum, default_value_t = ImpactFormat::Table)]
    pub output: ImpactFormat,
    /// Without --pod: when to exit 1. drift: any node drifts; break: pods left with no
    /// NodePool, or a rollout the budgets block for the next 7 days; never: report only
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = FailOn::Break)]
    pub fail_on: FailOn,
    /// Without --pod: how long one drift wave takes in your cluster (a replacement launched
    /// and initialized, the old node drained), for the rollout's ETA: a Go duration. The
    /// default is what the real Karpenter took with kwok's instant nodes; a cloud's launch
    /// and drain take minutes
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = wave_time)]
    pub wave_time: chrono::Duration,
}

/// A `--wave-time`: a positive Go duration.
pub fn wave_time(s: &str) -> Result<chrono::Duration, String> {
    let d = crate::karpenter::duration::parse_go_duration(s)?;
    if d <= chrono::Duration::zero() {
        return Err(format!("{s:?} is not a positive duration"));
    }
    Ok(d)
}

/// One NodePool's verdict, with its weight.
#[derive(Debug, Serialize)]
pub struct PoolRow {
    pub weight: i32,
    #[serde(flatten)]
    pub verdict: PoolVerdict,
}

/// The answer for one pod.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAnswer {
    pub pod: String,
    pub kind: String,
    pub requests: BTreeMap<String, String>,
    /// Every NodePool, in the order Karpenter tries them.
    pub nodepools: Vec<PoolRow>,
    /// The first compatible pool: where Karpenter would try to launch.
    pub first: Option<String>,
    /// `fits`, `does-not-fit`, or `unknown` (no pool is compatible, and some cannot be
    /// judged offline).
    pub answer: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub pods: Vec<PodAnswer>,
    /// NodePools without status conditions, taken as Ready.
    pub assumed_ready: Vec<String>,
    /// Where the instance types were judged from (`file`, `kwok-file`, `kwok-builtin`,
    /// `karpenter-metrics`); absent: they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<crate::model::CatalogSource>,
    /// The same, in words for the table.
    #[serde(skip)]
    pub judged_from: Option<String>,
}

/// Pods (or pod templates) in the file, named like `Deployment shop/web`.
fn read_pods(path: &PathBuf) -> anyhow::Result<Vec<(String, String, Pod)>> {
    let inputs = crate::lint::read_inputs(std::slice::from_ref(path))?;
    let mut out = Vec::new();
    for input in &inputs {
        if let Some((line, why)) = &input.unreadable {
            anyhow::bail!("{}: line {line}: {why}", input.name);
        }
        let docs = yaml::parse(&input.text)
            .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.name, e.line, e.message))?;
        for doc in &docs {
            let Some(obj) = checks::Obj::new(0, doc) else {
                continue;
            };
            let Some(template) = checks::pod_template(obj.kind, obj.node) else {
                continue;
            };
            let mut pod: Pod = serde_json::from_value(template.to_json())
                .with_context(|| format!("{}: {} {}", input.name, obj.kind, obj.name))?;
            if pod.metadata.name.is_empty() {
                pod.metadata.name = obj.name.clone();
            }
            if pod.metadata.namespace.is_none() {
                pod.metadata.namespace = Some(obj.namespace.as_deref().unwrap_or("default").into());
            }
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            out.push((obj.kind.to_string(), format!("{ns}/{}", obj.name), pod));
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "{}: no Pod or workload with a pod template (Deployment, StatefulSet, ReplicaSet, Job, CronJob, DaemonSet)",
            path.display()
        );
    }
    Ok(out)
}

/// NodePools from manifests, with Ready assumed where they carry no conditions.
pub fn load_pools(paths: &[PathBuf]) -> anyhow::Result<(Cluster, Vec<String>)> {
    let mut cluster = Cluster::default();
    source::load_paths(paths, &mut cluster)?;
    if cluster.nodepools.is_empty() {
        anyhow::bail!("no karpenter.sh/v1 NodePools found in --nodepools");
    }
    let mut assumed = Vec::new();
    for (name, pool) in cluster.nodepools.iter_mut() {
        if pool.status.conditions.is_empty() {
            pool.status.conditions.push(Condition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: Some("AssumedOffline".into()),
                message: Some("kelp what-if: the manifest has no status".into()),
                last_transition_time: None,
            });
            assumed.push(name.clone());
        }
    }
    Ok((cluster, assumed))
}

/// Evaluate one pod against the pools, as `kelp why pod` does (without events: offline).
pub fn answer(pools: &PoolSet, kind: &str, name: &str, pod: &Pod) -> PodAnswer {
    let requests = pod_requests(&pod.spec);
    let terms = pod_terms(&pod.spec, pools.provider);
    let nodepools: Vec<PoolRow> = pools
        .ordered
        .iter()
        .map(|p| {
            // A manifest has no peers to spread against: zone spread cannot refuse it, and
            // its zone affinity terms are not judged (`offline`).
            let affinity = ZoneAffinity::offline(&pod.spec);
            let mut verdict = evaluate(p, &pod.spec, &requests, &terms, &[], &affinity);
            // Without a catalogue nothing says an instance type holds the pod, nor offers
            // what it asks: never "compatible" for what was not checked.
            if verdict.verdict == Verdict::Compatible && pools.catalog.is_none() {
                let mut unjudged = unjudged(p, &terms, &requests);
                if unjudged.is_empty() {
                    unjudged.push(format!(
                        "whether an instance type holds {} beside the pool's DaemonSets",
                        requests_words(&requests)
                    ));
                }
                verdict.verdict = Verdict::Unknown;
                verdict.reasons = vec![Reason {
                    category: Category::InstanceTypes,
                    message: format!(
                        "cannot tell: no instance-type catalogue ({})",
                        unjudged.join(", ")
                    ),
                }];
            }
            PoolRow {
                weight: p.pool.spec.weight.unwrap_or(0),
                verdict,
            }
        })
        .collect();
    let first = nodepools
        .iter()
        .find(|r| r.verdict.verdict == Verdict::Compatible)
        .map(|r| r.verdict.name.clone());
    let answer = if first.is_some() {
        "fits"
    } else if nodepools
        .iter()
        .any(|r| r.verdict.verdict == Verdict::Unknown)
    {
        "unknown"
    } else {
        "does-not-fit"
    };
    let mut notes = Vec::new();
    if kind == "DaemonSet" {
        notes.push("Karpenter never provisions for DaemonSet pods: this says which pools' nodes can run them".into());
    }
    PodAnswer {
        pod: name.to_string(),
        kind: kind.to_string(),
        requests: requests
            .0
            .iter()
            .map(|(k, v)| (k.clone(), format_quantity(k, *v)))
            .collect(),
        nodepools,
        first,
        answer,
        notes,
    }
}

/// `cpu 1, memory 1Gi` (or `no requests`).
fn requests_words(r: &Resources) -> String {
    let parts: Vec<String> =
        r.0.iter()
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| format!("{k} {}", format_quantity(k, *v)))
            .collect();
    if parts.is_empty() {
        "a pod with no requests".into()
    } else {
        parts.join(", ")
    }
}

/// Resources every instance type offers (the rest, GPUs and other extended resources,
/// need a catalogue to judge).
const BASIC_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage", "pods"];

/// Whether a label is decided by the instance type (and so by a catalogue kelp lacks).
fn instance_type_label(key: &str) -> Option<&'static str> {
    match key {
        "kubernetes.io/arch" => Some("architecture"),
        "kubernetes.io/os" => Some("operating system"),
        "node.kubernetes.io/instance-type" => Some("instance type"),
        k if k.starts_with("karpenter.k8s.aws/instance-")
            || k.starts_with("karpenter.azure.com/sku-")
            || k.starts_with("karpenter.kwok.sh/instance-") =>
        {
            Some("instance-type label")
        }
        _ => None,
    }
}

/// What the pod asks of the instance type that the pool's requirements do not settle,
/// described (`architecture kubernetes.io/arch In [s390x]`, `extended resource
/// nvidia.com/gpu`); empty when every ask is settled. With several node-affinity terms,
/// the pool is judged if any term it is compatible with asks nothing unsettled.
fn unjudged(
    pool: &PoolInfo,
    terms: &Result<Vec<Requirements>, String>,
    requests: &Resources,
) -> Vec<String> {
    let mut out: Vec<String> = requests
        .0
        .iter()
        .filter(|(k, v)| **v > 0.0 && !BASIC_RESOURCES.contains(&k.as_str()))
        .map(|(k, _)| format!("extended resource {k}"))
        .collect();
    let (Ok(pool_reqs), Ok(terms)) = (&pool.requirements, terms) else {
        return out;
    };
    let per_term: Vec<Vec<String>> = terms
        .iter()
        .filter(|t| requirements::compatible(t, pool_reqs).is_ok())
        .map(|term| {
            term.keys()
                .filter_map(|key| {
                    let what = instance_type_label(key)?;
                    // The pool settles the key by pinning it to values (the compatibility
                    // check already intersected them with the pod's).
                    if pool_reqs.operator(key) == Some(Operator::In) {
                        return None;
                    }
                    // Linux runs on every instance type; other OSes depend on the image.
                    if key == "kubernetes.io/os"
                        && term.operator(key) == Some(Operator::In)
                        && term.allows(key, "linux")
                        && !term.allows(key, "windows")
                    {
                        return None;
                    }
                    let rendered = term.render(key).unwrap_or_default();
                    // A pod that only excludes values, or takes any value, needs no catalogue.
                    let bounded = rendered.contains(" >=") || rendered.contains(" <=");
                    match term.operator(key) {
                        Some(Operator::NotIn) => return None,
                        Some(Operator::Exists) if !bounded => return None,
                        _ => {}
                    }
                    Some(format!("{what} {rendered}"))
                })
                .collect()
        })
        .collect();
    if per_term.iter().any(Vec::is_empty) {
        return out;
    }
    if let Some(first) = per_term.into_iter().next() {
        out.extend(first);
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(pod) = &args.pod else {
        return impact::run(
            &args.nodepools,
            &args.nodeclasses,
            &args.source,
            args.output,
            args.fail_on,
            args.wave_time,
        );
    };
    let format = match args.output {
        ImpactFormat::Table => Format::Table,
        ImpactFormat::Json => Format::Json,
        ImpactFormat::Yaml => Format::Yaml,
        ImpactFormat::Markdown | ImpactFormat::Sarif => {
            anyhow::bail!("-o markdown and -o sarif are for the impact of a change (what-if without --pod); with --pod use table, json or yaml")
        }
    };
    if !args.source.from.is_empty()
        || args.source.kubeconfig.is_some()
        || args.source.context.is_some()
        || args.source.karpenter_service.is_some()
    {
        anyhow::bail!("--from, --kubeconfig, --context and --karpenter-service read a cluster for the impact of a change (what-if without --pod); with --pod, give the pools (or a dump) to --nodepools");
    }
    if args.source.catalog.is_some() && args.source.metrics_file.is_some() {
        anyhow::bail!("--catalog and --metrics-file: give one");
    }
    let pods = read_pods(pod)?;
    let (mut cluster, assumed_ready) = load_pools(&args.nodepools)?;
    if let Some(path) = &args.source.catalog {
        cluster.catalog = Some(source::catalog::read(path).context("--catalog")?.into());
    }
    if let Some(path) = &args.source.metrics_file {
        cluster.metrics = Some(source::metrics::read(path).context("--metrics-file")?);
        if cluster
            .metrics
            .as_ref()
            .is_some_and(|m| m.instance_cpu.is_empty())
        {
            anyhow::bail!(
                "--metrics-file {}: no karpenter_cloudprovider_instance_type_cpu_cores series (only the AWS provider exposes its instance types)",
                path.display()
            );
        }
    }
    let provider = crate::analysis::provisioning::cluster_provider(&cluster);
    let catalog = crate::analysis::catalog::resolve(&cluster, provider);
    let pools = PoolSet::new(&cluster).with_catalog(catalog.as_ref());
    let answer = Answer {
        pods: pods
            .iter()
            .map(|(kind, name, pod)| self::answer(&pools, kind, name, pod))
            .collect(),
        assumed_ready,
        catalog: catalog.as_ref().map(|c| c.source),
        judged_from: catalog.as_ref().map(|c| c.describe()),
    };
    let status = if answer.pods.iter().any(|p| p.answer == "does-not-fit") {
        ExitCode::from(1)
    } else if answer.pods.iter().any(|p| p.answer == "unknown") {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    };
    let style = Style::detect();
    let rendered = match format {
        Format::Table => table(&answer, style),
        f => output::structured(f, &answer)?,
    };
    output::emit(&rendered, style)?;
    Ok(status)
}

fn table(a: &Answer, s: Style) -> String {
    let mut out = String::new();
    for p in &a.pods {
        out.push_str(&format!(
            "{} {} · requests {}\n\n",
            s.bold(&p.kind),
            s.bold(&p.pod),
            output::requests_line(&p.requests)
        ));
        out.push_str(&output::verdict_table(
            p.nodepools.iter().map(|r| (&r.verdict, r.weight)),
            s,
        ));
        out.push('\n');
        let unknown_before: Vec<&str> = p
            .nodepools
            .iter()
            .take_while(|r| r.verdict.verdict != Verdict::Compatible)
            .filter(|r| r.verdict.verdict == Verdict::Unknown)
            .map(|r| r.verdict.name.as_str())
            .collect();
        let launch = p
            .nodepools
            .iter()
            .find(|r| r.verdict.verdict == Verdict::Compatible)
            .and_then(|r| r.verdict.launch.as_ref())
            .and_then(crate::analysis::provisioning::describe_launch)
            .map(|l| format!(" It would launch {l}."))
            .unwrap_or_default();
        match &p.first {
            Some(f) if unknown_before.is_empty() => out.push_str(&format!(
                "Karpenter would try NodePool {} first.{launch}\n",
                s.bold(f)
            )),
            Some(f) => out.push_str(&format!(
                "NodePool {} can take this pod; kelp cannot tell whether Karpenter would use {} before it.\n",
                s.bold(f),
                unknown_before.join(", ")
            )),
            None if p.answer == "unknown" => out.push_str(&format!(
                "{}\n",
                s.severity(
                    crate::findings::Severity::Warning,
                    if a.catalog.is_some() {
                        "Cannot tell: only NodePools whose instance types the catalogue does not settle could take this pod."
                    } else {
                        "Cannot tell: only NodePools kelp cannot judge without an instance-type catalogue (--catalog, --metrics-file) could take this pod."
                    }
                )
            )),
            None => out.push_str(&format!(
                "{}\n",
                s.severity(
                    crate::findings::Severity::Critical,
                    "No NodePool can take this pod: it would stay Pending."
                )
            )),
        }
        for n in &p.notes {
            out.push_str(&format!("Note: {n}\n"));
        }
        out.push('\n');
    }
    if !a.assumed_ready.is_empty() {
        out.push_str(&s.dim(&format!(
            "Assumed Ready with nothing in use (no status in the manifests): {}\n",
            a.assumed_ready.join(", ")
        )));
    }
    out.push_str(&s.dim(&match &a.judged_from {
        Some(c) => format!(
            "Instance types judged from {c}; topology spread and volumes are not evaluated offline.\n"
        ),
        None => "Instance types (no catalogue: --catalog or --metrics-file), topology spread and volumes are not evaluated offline.\n".into(),
    }));
    out
}
