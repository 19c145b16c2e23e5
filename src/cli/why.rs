//! `kelp why pod NAMESPACE/NAME` and `kelp why node NAME`.

use std::process::ExitCode;

use clap::Subcommand;
use serde::Serialize;

use super::output::{self, columns, AnswerFormat, Format, Style};
use super::source::SourceArgs;
use crate::analysis::disruption::{self, Blocker, NodeDisruption};
use crate::analysis::provisioning::{self, PodDiagnosis, PoolSet};
use crate::analysis::{self, Context};
use crate::findings::Finding;
use crate::karpenter::events::{BlockerKind, Category, MessageFormat};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp why pod ml/trainer-0
      every NodePool's verdict, Karpenter's event, what to change
  kelp why pod trainer-0 -n ml -o json
  kelp why node ip-10-0-1-23.ec2.internal
      drift, expiry, emptiness and every disruption blocker")]
pub struct Args {
    #[command(subcommand)]
    pub target: Target,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = AnswerFormat::Table, global = true)]
    pub output: AnswerFormat,
}

#[derive(Debug, Subcommand)]
pub enum Target {
    /// Why a pod is pending: each NodePool's verdict, in the order Karpenter tries them
    Pod {
        /// NAMESPACE/NAME, or NAME with -n
        name: String,
        /// Namespace (when NAME has none)
        #[arg(short, long)]
        namespace: Option<String>,
    },
    /// Why a node is (not) being disrupted: pool, age vs expireAfter, drift, emptiness, blockers
    Node {
        /// Node name (or its NodeClaim's name)
        name: String,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    let ctx = Context::new(&loaded.cluster, loaded.now);
    let report = analysis::analyze(&loaded.cluster, loaded.now);
    loaded.progress.finish();
    match args.target {
        Target::Pod { name, namespace } => {
            let (ns, name) = match (name.split_once('/'), namespace) {
                (Some((ns, n)), _) => (ns.to_string(), n.to_string()),
                (None, Some(ns)) => (ns, name),
                (None, None) => ("default".to_string(), name),
            };
            why_pod(&ctx, &report.findings, &ns, &name, args.output.into())
        }
        Target::Node { name } => why_node(&ctx, &report.findings, &name, args.output.into()),
    }
}

/// What `kelp why pod` answers (and the dashboard's pod pane and API).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAnswer {
    pub pod: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<std::sync::Arc<PodDiagnosis>>,
    pub advice: Vec<String>,
    pub findings: Vec<Finding>,
}

fn why_pod(
    ctx: &Context,
    findings: &[Finding],
    ns: &str,
    name: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let answer = pod_answer(ctx, findings, ns, name)?;
    if format != Format::Table {
        output::emit(&output::structured(format, &answer)?, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    output::emit(&pod_text(ctx, &answer, style), style)?;
    Ok(ExitCode::SUCCESS)
}

/// Explain one pod; an error when it does not exist.
pub fn pod_answer(
    ctx: &Context,
    findings: &[Finding],
    ns: &str,
    name: &str,
) -> anyhow::Result<PodAnswer> {
    let c = ctx.cluster;
    let Some(pod) = c.pods.get(&(ns.to_string(), name.to_string())) else {
        anyhow::bail!("pod {ns}/{name} not found");
    };
    let diagnosis = match ctx
        .pending
        .iter()
        .find(|d| d.pod.namespace.as_deref() == Some(ns) && d.pod.name == name)
    {
        Some(d) => Some(d.clone()),
        None if pod.spec.node_name.is_none()
            && pod.status.phase.as_deref().unwrap_or("Pending") == "Pending" =>
        {
            // Not (yet) marked unschedulable, or nominated: evaluate anyway, it is still useful.
            Some(std::sync::Arc::new(provisioning::diagnose(
                c,
                &PoolSet::new(c).with_instance_type_events(c, ctx.now),
                pod,
                ctx.now,
            )))
        }
        None => None,
    };
    let state = match (&pod.spec.node_name, pod.status.phase.as_deref()) {
        (Some(n), phase) => format!("{} on node {n}", phase.unwrap_or("Scheduled")),
        (None, _)
            if ctx
                .pending
                .iter()
                .any(|d| d.pod.name == name && d.pod.namespace.as_deref() == Some(ns)) =>
        {
            "Pending: unschedulable".into()
        }
        (None, _) if pod.status.nominated_node_name.is_some() => format!(
            "Pending: nominated to {}",
            pod.status.nominated_node_name.clone().unwrap_or_default()
        ),
        (None, phase) => format!(
            "{}: not marked unschedulable by the scheduler yet",
            phase.unwrap_or("Pending")
        ),
    };
    let advice = diagnosis.as_deref().map(pod_advice).unwrap_or_default();
    let mine: Vec<Finding> = findings
        .iter()
        .filter(|f| {
            f.object.kind == "Pod"
                && f.object.name == name
                && f.object.namespace.as_deref() == Some(ns)
        })
        .cloned()
        .collect();
    Ok(PodAnswer {
        pod: format!("{ns}/{name}"),
        state,
        diagnosis,
        advice,
        findings: mine,
    })
}

/// `kelp why pod` as text.
pub fn pod_text(ctx: &Context, answer: &PodAnswer, s: Style) -> String {
    let c = ctx.cluster;
    let mut out = format!(
        "{} {}: {}\n",
        s.bold("Pod"),
        s.bold(&answer.pod),
        answer.state
    );
    if let Some(d) = answer.diagnosis.as_deref() {
        out.push_str(&format!(
            "Pending for {} · requests {}\n\n",
            d.pending_for,
            output::requests_line(&d.requests)
        ));
        if d.nodepools.is_empty() {
            out.push_str("There are no NodePools.\n");
        } else {
            let weight = |name: &str| {
                c.nodepools
                    .get(name)
                    .and_then(|p| p.spec.weight)
                    .unwrap_or(0)
            };
            out.push_str(&output::verdict_table(
                d.nodepools.iter().map(|v| (&**v, weight(&v.name))),
                s,
            ));
        }
        out.push('\n');
        match &d.event {
            Some(e) => {
                out.push_str(&format!(
                    "{} ({}, {} format, last seen {}):\n  {}\n",
                    s.bold("Karpenter's event"),
                    e.reason,
                    match e.format {
                        MessageFormat::Wrapped => "v1.0-v1.4",
                        MessageFormat::Flat => "v1.5+",
                        MessageFormat::Unknown => "unrecognised",
                    },
                    e.last_seen
                        .map(|t| analysis::ago(ctx.now, t) + " ago")
                        .unwrap_or_else(|| "?".into()),
                    output::clean(&e.message)
                ));
            }
            None => out.push_str(&format!(
                "{}: no scheduling event found yet\n",
                s.bold("Karpenter's event")
            )),
        }
        if let Some(m) = &d.scheduler {
            out.push_str(&format!("{}: {m}\n", s.bold("kube-scheduler")));
        }
    }
    if !answer.advice.is_empty() {
        out.push_str(&format!("\n{}\n", s.bold("What to change")));
        for a in &answer.advice {
            out.push_str(&format!("  - {a}\n"));
        }
    }
    out
}

/// One suggestion per pool: what would let that pool take the pod.
fn pod_advice(d: &PodDiagnosis) -> Vec<String> {
    let mut out = Vec::new();
    if d.compatible().next().is_some() {
        let names: Vec<&str> = d.compatible().map(|v| v.name.as_str()).collect();
        out.push(format!(
            "{} can take this pod by kelp's checks: if nothing launches, read Karpenter's event and logs (instance types, topology spread, volumes), and check the controller is running",
            names.join(", ")
        ));
        return out;
    }
    for v in d.nodepools.iter() {
        let Some(r) = v.reasons.first() else { continue };
        let tip = change_for(r).unwrap_or_else(|| r.message.clone());
        out.push(format!("to use {}: {tip}", v.name));
    }
    out
}

/// What to change so that a pool's first rejection reason goes away; None for a reason
/// kelp has no advice for (callers fall back to the reason itself). `why pod`'s "What to
/// change" and the dashboard's expanded verdicts share it.
pub fn change_for(r: &crate::analysis::provisioning::Reason) -> Option<String> {
    Some(match r.category {
        Category::Taints => format!(
            "add a toleration for {}",
            r.message.trim_start_matches("did not tolerate taint ")
        ),
        Category::Requirements => "change the pod's nodeSelector/affinity, or add the label to the pool's requirements or template labels".into(),
        Category::Limits => "raise the pool's spec.limits or free capacity in it".into(),
        Category::NodepoolNotReady => "fix the pool's readiness (see its conditions)".into(),
        Category::InstanceTypes => "widen the pool's instance types or lower the pod's requests".into(),
        Category::Validation => "fix the pod's scheduling constraints (Karpenter rejects them before trying any pool)".into(),
        Category::Topology => "relax the pod's topology spread or (anti-)affinity".into(),
        Category::Volumes => "check the zones of the pod's volumes against the pool's zones".into(),
        Category::Other => return None,
    })
}

/// What `kelp why node` answers (and the dashboard's node pane).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAnswer {
    #[serde(flatten)]
    pub state: NodeDisruption,
    pub advice: Vec<String>,
    pub findings: Vec<Finding>,
}

fn why_node(
    ctx: &Context,
    findings: &[Finding],
    name: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let answer = node_answer(ctx, findings, name)?;
    if format != Format::Table {
        output::emit(&output::structured(format, &answer)?, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    output::emit(&node_text(ctx, &answer, style), style)?;
    Ok(ExitCode::SUCCESS)
}

/// Explain one node (or NodeClaim, by its node); an error when there is none.
pub fn node_answer(ctx: &Context, findings: &[Finding], name: &str) -> anyhow::Result<NodeAnswer> {
    let c = ctx.cluster;
    let node = c
        .nodes
        .get(name)
        .or_else(|| c.nodeclaims.get(name).and_then(|cl| c.node_for_claim(cl)));
    let Some(node) = node else {
        if c.nodeclaims.contains_key(name) {
            anyhow::bail!("NodeClaim {name} has no node yet: see `kelp doctor` for launch and registration findings");
        }
        anyhow::bail!("node {name} not found");
    };
    let state =
        disruption::node_disruption(c, node, ctx.now, &disruption::Nominations::new(c, ctx.now));
    let claim = state.nodeclaim.clone().unwrap_or_default();
    let mine: Vec<Finding> = findings
        .iter()
        .filter(|f| {
            (f.object.kind == "Node" && f.object.name == state.node)
                || (f.object.kind == "NodeClaim" && f.object.name == claim)
        })
        .cloned()
        .collect();
    Ok(NodeAnswer {
        advice: state.blockers.iter().map(unblock).collect(),
        state,
        findings: mine,
    })
}

/// `kelp why node` as text.
pub fn node_text(ctx: &Context, answer: &NodeAnswer, s: Style) -> String {
    let c = ctx.cluster;
    let state = &answer.state;
    let mut out = format!("{} {}\n", s.bold("Node"), s.bold(&state.node));
    let Some(pool) = &state.nodepool else {
        out.push_str("Not managed by Karpenter (no karpenter.sh/nodepool label).\n");
        return out;
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let rows = vec![
        vec![
            "NodePool".to_string(),
            format!(
                "{pool}{}",
                if c.nodepools.contains_key(pool) {
                    ""
                } else {
                    " (missing!)"
                }
            ),
        ],
        vec![
            "NodeClaim".into(),
            state
                .nodeclaim
                .clone()
                .unwrap_or_else(|| "none found".into()),
        ],
        vec![
            "Age".into(),
            format!(
                "{} (expireAfter {}{})",
                state.age.clone().unwrap_or_else(|| "?".into()),
                state.expire_after.clone().unwrap_or_default(),
                match state.expires_at {
                    Some(t) if state.expired =>
                        format!(", expired {} ago", analysis::ago(ctx.now, t)),
                    Some(t) => format!(", expires in {}", analysis::ago(t, ctx.now)),
                    None => String::new(),
                }
            ),
        ],
        vec![
            "Drifted".into(),
            state
                .drifted
                .clone()
                .map(|r| format!("yes ({r})"))
                .unwrap_or_else(|| "no".into()),
        ],
        vec!["Empty".into(), yes_no(state.empty).into()],
        vec!["Consolidatable".into(), yes_no(state.consolidatable).into()],
    ];
    out.push_str(&columns(&rows));
    if state.wants.is_empty() {
        out.push_str("\nKarpenter has no reason to disrupt this node now.\n");
    } else {
        let wants: Vec<&str> = state.wants.iter().map(|w| w.message.as_str()).collect();
        out.push_str(&format!(
            "\nKarpenter wants to disrupt it: {}\n",
            wants.join(", ")
        ));
    }
    if state.blockers.is_empty() {
        out.push_str("Nothing blocks disruption.\n");
    } else {
        out.push_str(&format!("\n{}\n", s.bold("Blockers")));
        for b in &state.blockers {
            out.push_str(&format!(
                "  - {}: {}\n",
                output::serde_name(b.kind),
                output::clean(&b.message)
            ));
        }
        out.push_str(&format!("\n{}\n", s.bold("To unblock")));
        for a in &answer.advice {
            out.push_str(&format!("  - {a}\n"));
        }
    }
    if let Some(e) = &state.blocked_event {
        out.push_str(&format!(
            "\nKarpenter's last DisruptionBlocked event: {}\n",
            output::clean(e)
        ));
    }
    out
}

fn unblock(b: &Blocker) -> String {
    let name = b
        .object
        .as_ref()
        .map(|o| o.name.clone())
        .unwrap_or_default();
    let ns = b
        .object
        .as_ref()
        .and_then(|o| o.namespace.clone())
        .unwrap_or_default();
    match b.kind {
        BlockerKind::DoNotDisruptPod => format!(
            "pod {ns}/{name}: let it finish, or remove the annotation (kubectl annotate pod -n {ns} {name} karpenter.sh/do-not-disrupt-); a NodePool terminationGracePeriod lets drift proceed anyway"
        ),
        BlockerKind::DoNotDisruptNode => format!("remove the node annotation: kubectl annotate node {name} karpenter.sh/do-not-disrupt-"),
        BlockerKind::Pdb => format!("PDB {ns}/{name} allows no disruption: scale the workload up or relax minAvailable/maxUnavailable"),
        BlockerKind::Budget => "a disruption budget allows 0 now: wait for its window to close or change spec.disruption.budgets".into(),
        BlockerKind::Nominated => "a pending pod was nominated to this node: Karpenter waits for it to bind".into(),
        BlockerKind::NotInitialized => "the node never initialized: see nodeclaim-not-initialized in `kelp doctor`".into(),
        BlockerKind::NodepoolMissing => "its NodePool is gone: recreate it, or delete the NodeClaim to drain the node".into(),
        BlockerKind::Other => b.message.clone(),
    }
}
