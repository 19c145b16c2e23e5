//! `kelp what-if --nodepools CHANGED... [--from DUMP]` (no `--pod`): the impact of merging
//! NodePool changes on a running cluster (a dump, or the live cluster): which nodes
//! Karpenter will mark Drifted and why, and the waves its budgets allow
//! ([`crate::analysis::rollout`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use crate::analysis::rollout::{self, Impact, NodeImpact, PoolImpact, Proposed};
use crate::cli::output::{self, AnswerFormat, Format, Style};
use crate::cli::source::SourceArgs;
use crate::karpenter::hash;
use crate::lint::yaml;
use crate::model::NodePool;

/// The NodePools in the manifests, each with its template's hash as the API server would
/// store it (the CRD's defaults filled in).
pub fn proposed(paths: &[PathBuf]) -> anyhow::Result<Vec<Proposed>> {
    let inputs = crate::lint::read_inputs(paths)?;
    let mut out: Vec<Proposed> = Vec::new();
    for input in &inputs {
        if let Some((line, why)) = &input.unreadable {
            anyhow::bail!("{}: line {line}: {why}", input.name);
        }
        let docs = yaml::parse(&input.text)
            .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.name, e.line, e.message))?;
        let mut objects: Vec<Value> = Vec::new();
        for doc in &docs {
            let v = doc.to_json();
            match v["kind"].as_str() {
                Some("List") | Some("NodePoolList") => {
                    objects.extend(v["items"].as_array().cloned().unwrap_or_default())
                }
                _ => objects.push(v),
            }
        }
        for v in objects {
            if v["kind"] != "NodePool" || v["apiVersion"] != "karpenter.sh/v1" {
                continue;
            }
            let pool: NodePool = serde_json::from_value(v.clone())
                .with_context(|| format!("{}: NodePool {}", input.name, v["metadata"]["name"]))?;
            if pool.metadata.name.is_empty() {
                anyhow::bail!("{}: a NodePool without metadata.name", input.name);
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
        }
    }
    if out.is_empty() {
        anyhow::bail!("no karpenter.sh/v1 NodePools found in --nodepools");
    }
    Ok(out)
}

pub fn run(
    nodepools: &[PathBuf],
    source: &SourceArgs,
    format: AnswerFormat,
) -> anyhow::Result<ExitCode> {
    let proposed = proposed(nodepools)?;
    let loaded = source.load()?;
    let impact = rollout::impact(&loaded.cluster, &proposed, loaded.now);
    loaded.progress.finish();
    let status = if !impact.pods.stranded.is_empty()
        || impact
            .nodepools
            .iter()
            .any(|p| p.waves.as_ref().is_some_and(|w| w.blocked.is_some()))
    {
        ExitCode::from(1)
    } else if impact.unknown() > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    };
    let style = Style::detect();
    let rendered = match Format::from(format) {
        Format::Table => table(&impact, &loaded.origin, style),
        f => output::structured(f, &impact)?,
    };
    output::emit(&rendered, style)?;
    Ok(status)
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
    if n.drift == Some(rollout::DriftReason::NodePoolDrifted) && n.already.is_none() {
        parts.push("the template's hash changes".into());
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
    if !p.new {
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
            match w.opens_at {
                Some(t) => format!(
                    "rollout: {size}; none may start now: the budgets open at {}",
                    t.format("%a %Y-%m-%d %H:%M UTC")
                ),
                None => format!(
                    "rollout: {size}; {} may start now",
                    w.allowed_now.min(p.drifting)
                ),
            }
        };
        out.push_str(&format!("  {line}\n"));
    }
    out
}

fn table(i: &Impact, origin: &str, s: Style) -> String {
    let mut out = String::new();
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
    out.push_str(&s.dim(&format!(
        "{} of {} node(s) will drift, judged against {} as Karpenter judges drift (its NodePool hash, then requirements); a NodeClass's own drift (AMI, subnets) is not changed by a NodePool.\n",
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
