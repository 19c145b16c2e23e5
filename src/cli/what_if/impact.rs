//! `kelp what-if --nodepools CHANGED... --nodeclasses CHANGED... [--from DUMP]` (no
//! `--pod`): the impact of merging NodePool and EC2NodeClass changes on a running cluster
//! (a dump, or the live cluster): which nodes Karpenter will mark Drifted and why, and the
//! waves its budgets allow ([`crate::analysis::rollout`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::report::{cost_words, Origin};
use crate::analysis::rollout::{self, Impact, NodeImpact, PoolImpact, Proposed, ProposedClass};
use crate::cli::output::{self, Format, Style};
use crate::cli::source::SourceArgs;
use crate::karpenter::hash;
use crate::lint::yaml;
use crate::model::NodePool;

/// Every object of the manifests under `paths` (a List's items one by one), as JSON with
/// the file and line it was read at.
fn objects(paths: &[PathBuf]) -> anyhow::Result<Vec<(serde_json::Value, Origin)>> {
    let inputs = crate::lint::read_inputs(paths)?;
    let mut out = Vec::new();
    for input in &inputs {
        if let Some((line, why)) = &input.unreadable {
            anyhow::bail!("{}: line {line}: {why}", input.name);
        }
        let docs = yaml::parse(&input.text)
            .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.name, e.line, e.message))?;
        for doc in &docs {
            let kind = doc.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
            let items: Vec<&yaml::Node> = if kind == "List" || kind.ends_with("List") {
                doc.get("items")
                    .map(|i| i.items().iter().collect())
                    .unwrap_or_default()
            } else {
                vec![doc]
            };
            for node in items {
                let origin = Origin {
                    file: input.name.clone(),
                    line: node.line,
                };
                out.push((node.to_json(), origin));
            }
        }
    }
    Ok(out)
}

/// The EC2NodeClasses in the manifests, each with its spec as the API server would store
/// it (the CRD's defaults filled in).
pub fn proposed_classes(paths: &[PathBuf]) -> anyhow::Result<(Vec<ProposedClass>, Vec<Origin>)> {
    let (mut out, mut origins): (Vec<ProposedClass>, Vec<Origin>) = (Vec::new(), Vec::new());
    if paths.is_empty() {
        return Ok((out, origins));
    }
    for (v, origin) in objects(paths)? {
        if v["kind"] != "EC2NodeClass" || v["apiVersion"] != "karpenter.k8s.aws/v1" {
            continue;
        }
        let name = v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            anyhow::bail!(
                "{}: line {}: an EC2NodeClass without metadata.name",
                origin.file,
                origin.line
            );
        }
        if !v["spec"].is_object() {
            anyhow::bail!(
                "{}: line {}: EC2NodeClass {name} has no spec",
                origin.file,
                origin.line
            );
        }
        if out.iter().any(|p| p.name == name) {
            anyhow::bail!("EC2NodeClass {name} is given twice in --nodeclasses");
        }
        let mut spec = v["spec"].clone();
        crate::karpenter::aws::nodeclass::with_defaults(&mut spec);
        out.push(ProposedClass { name, spec });
        origins.push(origin);
    }
    if out.is_empty() {
        anyhow::bail!("no karpenter.k8s.aws/v1 EC2NodeClasses found in --nodeclasses");
    }
    Ok((out, origins))
}

/// The NodePools in the manifests, each with its template's hash as the API server would
/// store it (the CRD's defaults filled in), and where it was read.
pub fn proposed(paths: &[PathBuf]) -> anyhow::Result<(Vec<Proposed>, Vec<Origin>)> {
    let (mut out, mut origins): (Vec<Proposed>, Vec<Origin>) = (Vec::new(), Vec::new());
    if paths.is_empty() {
        return Ok((out, origins));
    }
    for (v, origin) in objects(paths)? {
        let input_name = &origin.file;
        let node_line = origin.line;
        {
            if v["kind"] != "NodePool" || v["apiVersion"] != "karpenter.sh/v1" {
                continue;
            }
            let pool: NodePool = serde_json::from_value(v.clone()).with_context(|| {
                format!(
                    "{}: line {}: NodePool {}",
                    input_name, node_line, v["metadata"]["name"]
                )
            })?;
            if pool.metadata.name.is_empty() {
                anyhow::bail!(
                    "{}: line {}: a NodePool without metadata.name",
                    input_name,
                    node_line
                );
            }
            if out
                .iter()
                .any(|p| p.pool.metadata.name == pool.metadata.name)
            {
                anyhow::bail!(
                    "NodePool {} is given twice in --nodepools",
                    pool.metadata.name
                );
            }
            let template = v["spec"]["template"].clone();
            out.push(Proposed {
                hash: hash::template_hash(&hash::with_defaults(&template)),
                pool,
            });
            origins.push(origin);
        }
    }
    if out.is_empty() {
        anyhow::bail!("no karpenter.sh/v1 NodePools found in --nodepools");
    }
    Ok((out, origins))
}

/// When `what-if` exits 1 for a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum FailOn {
    /// Any node drifts (a rollout of any size needs a review)
    Drift,
    /// Pods left with no NodePool, or a rollout the budgets block for the next 7 days
    #[default]
    Break,
    /// Never: report only (exit 0, or 2 when kelp could not run)
    Never,
}

/// The exit status for `impact` under `fail_on`: 1 at the threshold, else 3 when some
/// node cannot be judged, else 0.
pub fn status(impact: &Impact, fail_on: FailOn) -> ExitCode {
    let breaks = !impact.pods.stranded.is_empty()
        || impact
            .nodepools
            .iter()
            .any(|p| p.waves.as_ref().is_some_and(|w| w.blocked.is_some()));
    let fails = match fail_on {
        FailOn::Never => return ExitCode::SUCCESS,
        FailOn::Break => breaks,
        FailOn::Drift => breaks || impact.drifting() > 0,
    };
    if fails {
        ExitCode::from(1)
    } else if impact.unknown() > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn run(
    nodepools: &[PathBuf],
    nodeclasses: &[PathBuf],
    source: &SourceArgs,
    format: ImpactFormat,
    fail_on: FailOn,
    wave: chrono::Duration,
) -> anyhow::Result<ExitCode> {
    let (proposed, origins) = proposed(nodepools)?;
    let (classes, class_origins) = proposed_classes(nodeclasses)?;
    let loaded = source.load()?;
    let impact = rollout::impact_of(&loaded.cluster, &proposed, &classes, loaded.now, wave);
    loaded.progress.finish();
    let style = Style::detect();
    let rendered = match format {
        ImpactFormat::Table => table(&impact, &loaded.origin, style),
        ImpactFormat::Json => output::structured(Format::Json, &impact)?,
        ImpactFormat::Yaml => output::structured(Format::Yaml, &impact)?,
        ImpactFormat::Markdown => super::report::markdown(&impact),
        ImpactFormat::Sarif => {
            serde_json::to_string_pretty(&super::report::sarif(&impact, &origins, &class_origins))?
                + "\n"
        }
    };
    output::emit(&rendered, style)?;
    Ok(status(&impact, fail_on))
}

/// `-o` for the impact of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ImpactFormat {
    /// Human-readable: each changed pool, its nodes and the pods that move
    #[default]
    Table,
    /// The whole answer as JSON
    Json,
    /// The whole answer as YAML
    Yaml,
    /// A pull-request comment (GitHub Markdown): a summary, the nodes in a collapsed list
    Markdown,
    /// SARIF 2.1.0 for code scanning: one result per changed pool that drifts, strands
    /// pods or is blocked, at its manifest's line
    Sarif,
}

fn reason(n: &NodeImpact) -> String {
    match (&n.drift, &n.unknown) {
        (Some(d), _) => format!("{d:?}"),
        (None, Some(_)) => "unknown".into(),
        (None, None) if n.not_launched => "- (not launched)".into(),
        (None, None) => "-".into(),
    }
}

fn why(n: &NodeImpact) -> String {
    let mut parts = Vec::new();
    if let Some(u) = &n.unknown {
        parts.push(format!("cannot tell: {u}"));
    }
    if !n.because.is_empty() {
        parts.push(n.because.join("; "));
    }
    if let Some(a) = &n.already {
        parts.push(format!("already Drifted ({a})"));
    }
    if !n.held_by.is_empty() {
        parts.push(format!("held by {}", n.held_by.join("; ")));
    }
    if n.already.is_none() {
        match n.drift {
            Some(rollout::DriftReason::NodePoolDrifted) => {
                parts.push("the template's hash changes".into())
            }
            Some(rollout::DriftReason::NodeClassDrift) => {
                parts.push("the EC2NodeClass's hash changes".into())
            }
            _ => {}
        }
    }
    parts.join("; ")
}

fn pool_lines(p: &PoolImpact, s: Style) -> String {
    let mut out = String::new();
    let head = if p.new {
        format!("NodePool {} · new: no nodes to drift", s.bold(&p.name))
    } else {
        format!(
            "NodePool {} · {} node(s) · {} will drift{}",
            s.bold(&p.name),
            p.nodes,
            p.drifting,
            if p.unknown > 0 {
                format!(" · {} unknown", p.unknown)
            } else {
                String::new()
            }
        )
    };
    out.push_str(&head);
    out.push('\n');
    if let Some(class) = &p.via_nodeclass {
        out.push_str(&format!(
            "  changed: nothing; it launches from EC2NodeClass {}, which changes\n",
            output::clean(class)
        ));
    } else if !p.new {
        if p.changes.is_empty() {
            out.push_str("  changed: nothing kelp compares");
            if p.hash_now.is_some() && p.hash_now != p.hash_after {
                out.push_str(" (the template's hash differs: its annotations, or a field kelp does not keep)");
            }
            out.push('\n');
        } else {
            let fields: Vec<String> = p
                .changes
                .iter()
                .map(|f| {
                    let what = match f.drifts {
                        "static" => "every node: in the hash",
                        "requirements" => "nodes whose labels no longer fit",
                        _ => "drifts nothing",
                    };
                    format!("{} ({what})", f.field)
                })
                .collect();
            out.push_str(&format!("  changed: {}\n", fields.join(", ")));
        }
    }
    match (&p.hash_now, &p.hash_after, &p.hash_unknown) {
        _ if p.via_nodeclass.is_some() => {}
        (_, _, Some(why)) => out.push_str(&format!(
            "  {}\n",
            s.severity(
                crate::findings::Severity::Warning,
                &format!("hash: cannot compute ({why}): static drift unknown")
            )
        )),
        (Some(a), Some(b), None) if a != b => out.push_str(&s.dim(&format!("  hash {a} → {b}\n"))),
        (Some(a), Some(_), None) => out.push_str(&s.dim(&format!("  hash {a} (unchanged)\n"))),
        _ => {}
    }
    if let Some(w) = &p.waves {
        let line = if let Some(b) = &w.blocked {
            s.severity(
                crate::findings::Severity::Critical,
                &format!("rollout blocked: {b}"),
            )
        } else {
            let size = match w.per_wave {
                None => "all at once (no budget limits drift)".to_string(),
                Some(k) => format!("{k} node(s) at a time, {} wave(s)", w.count),
            };
            let line = match w.opens_at {
                Some(t) => format!(
                    "rollout: {size}; none may start now: the budgets open at {}",
                    t.format("%a %Y-%m-%d %H:%M UTC")
                ),
                None => format!(
                    "rollout: {size}; {} may start now",
                    w.allowed_now.min(p.drifting)
                ),
            };
            let line = match w.eta_seconds {
                Some(eta) => format!(
                    "{line}; done in about {} at {} a wave (--wave-time)",
                    crate::karpenter::duration::human(chrono::Duration::seconds(eta)),
                    crate::karpenter::duration::human(chrono::Duration::seconds(w.wave_seconds))
                ),
                None => line,
            };
            if w.blocked_nodes > 0 {
                format!(
                    "{line}; {} held by blockers of their own, with no ETA until those let go",
                    w.blocked_nodes
                )
            } else {
                line
            }
        };
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(c) = &p.cost {
        out.push_str(&format!("  {}\n", cost_words(c, p.drifting)));
    }
    if let (true, Some(t)) = (p.drifting > 0, &p.termination_grace_period) {
        out.push_str(&format!(
            "  terminationGracePeriod {}: a held node is drained anyway that long after Karpenter starts replacing it\n",
            output::clean(t)
        ));
    }
    out
}

/// One changed EC2NodeClass: what changed, what each change drifts, the pools it reaches.
fn class_lines(c: &rollout::ClassImpact, s: Style) -> String {
    let mut out = format!("EC2NodeClass {}", s.bold(&output::clean(&c.name)));
    if c.new {
        out.push_str(" · new: no node was launched from it\n");
        return out;
    }
    out.push_str(&format!(
        " · hash {} · {}\n",
        if c.hash_changes {
            "changes"
        } else {
            "unchanged"
        },
        match c.nodepools.len() {
            0 => "no NodePool launches from it".to_string(),
            _ => format!("NodePools {}", output::clean(&c.nodepools.join(", "))),
        }
    ));
    let fields: Vec<String> = c
        .changes
        .iter()
        .map(|f| {
            let what = match f.drifts {
                "static" => "every node: in its hash",
                "provider" => "nodes on what EC2 resolves it to: unknown",
                _ => "drifts nothing",
            };
            format!("{} ({what})", output::clean(&f.field))
        })
        .collect();
    out.push_str(&format!(
        "  changed: {}\n\n",
        if fields.is_empty() {
            "nothing the provider reads".to_string()
        } else {
            fields.join(", ")
        }
    ));
    out
}

fn table(i: &Impact, origin: &str, s: Style) -> String {
    let mut out = String::new();
    for c in &i.nodeclasses {
        out.push_str(&class_lines(c, s));
    }
    for p in &i.nodepools {
        out.push_str(&pool_lines(p, s));
        let mut rows: Vec<Vec<String>> = vec![["NODE", "NODECLAIM", "DRIFT", "WHY"]
            .map(String::from)
            .to_vec()];
        rows.extend(i.nodes.iter().filter(|n| n.nodepool == p.name).map(|n| {
            vec![
                output::clean(&n.name).into_owned(),
                output::clean(&n.nodeclaim).into_owned(),
                reason(n),
                output::clean(&why(n)).into_owned(),
            ]
        }));
        if rows.len() > 1 {
            out.push('\n');
            out.push_str(&output::columns(&rows));
        }
        out.push('\n');
    }
    out.push_str(&pods_lines(&i.pods, s));
    let how = if i.nodeclasses.is_empty() {
        "(its NodePool hash, then requirements); a NodeClass's own drift (AMI, subnets) is not changed by a NodePool"
    } else {
        "(its NodePool hash, then requirements, then the EC2NodeClass hash; what EC2 resolves a changed selector to is not known offline)"
    };
    out.push_str(&s.dim(&format!(
        "{} of {} node(s) will drift, judged against {} as Karpenter judges drift {how}.\n",
        i.drifting(),
        i.nodes.len(),
        if origin == "dump" { "the dump" } else { origin }
    )));
    out
}

fn pods_lines(p: &rollout::PodsImpact, s: Style) -> String {
    let mut out = String::new();
    let row = |c: &rollout::PodChange| {
        let who = if c.pods > 1 {
            format!("{} ({} pods)", c.pod, c.pods)
        } else {
            c.pod.clone()
        };
        vec![
            output::clean(&who).into_owned(),
            output::clean(c.node.as_deref().unwrap_or("-")).into_owned(),
            output::clean(&c.before).into_owned(),
            output::clean(&c.after).into_owned(),
        ]
    };
    let mut section = |title: String, rows: &[rollout::PodChange]| {
        if rows.is_empty() {
            return;
        }
        out.push_str(&title);
        out.push_str("\n\n");
        let mut table = vec![["POD", "NODE", "NOW", "AFTER"].map(String::from).to_vec()];
        table.extend(rows.iter().map(row));
        out.push_str(&output::columns(&table));
        out.push('\n');
    };
    section(
        s.severity(
            crate::findings::Severity::Critical,
            "Pods on drifting nodes that no NodePool takes after the change: Karpenter will not replace their nodes (\"Not all pods would schedule\") unless other nodes have room:",
        ),
        &p.stranded,
    );
    section(
        "Pods on drifting nodes that another NodePool takes after the change:".into(),
        &p.moving,
    );
    section(
        "Pending pods whose answer changes (the first NodePool Karpenter would launch for, or nowhere):".into(),
        &p.pending,
    );
    out
}
