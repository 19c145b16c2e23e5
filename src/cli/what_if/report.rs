//! The impact of a NodePool change for a pull request: a GitHub-Markdown comment (a short
//! summary table, what breaks, and the nodes in a collapsed list) and SARIF 2.1.0 for code
//! scanning (one result per changed pool that drifts nodes, strands pods, or is blocked, at
//! its manifest's line).

use serde_sarif::sarif::{
    ArtifactLocation, Location, Message, MultiformatMessageString, PhysicalLocation, Region,
    ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Sarif, Tool, ToolComponent,
    SCHEMA_URL,
};

use crate::analysis::rollout::{Impact, NodeImpact, PoolImpact};

/// Where a changed pool was read: the file and the line of its manifest (or its List item).
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: String,
    pub line: usize,
}

/// `$/h 1.23 now → 0.98 after (5 of 6 priced; ...)`: the drifting nodes against their
/// replacements, over what kelp could price.
pub fn cost_words(c: &crate::analysis::rollout::Cost, drifting: usize) -> String {
    if c.priced == 0 && c.replaced == 0 {
        return "cost: unknown (no prices: --catalog or --metrics-file)".into();
    }
    let mut s = format!(
        "cost: ${:.4}/h for the drifting nodes ({} of {drifting} priced), ${:.4}/h for their replacements ({} of {drifting}",
        c.drifting_per_hour, c.priced, c.replacements_per_hour, c.replaced
    );
    s.push_str(if c.unknown > 0 {
        "; the rest cannot be priced)"
    } else {
        ")"
    });
    s.push_str(", each node's pods on one new node at most");
    s
}

/// Text for a Markdown table cell or a line: what could start markup (`|`, backticks, `<`,
/// `*`, `_`, `[`, `]`) escaped, line breaks and control characters made visible.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '\\' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out
}

fn drift_word(n: &NodeImpact) -> String {
    match (&n.drift, &n.unknown) {
        (Some(d), _) => format!("{d:?}"),
        (None, Some(_)) => "unknown".into(),
        (None, None) => "-".into(),
    }
}

fn rollout_words(p: &PoolImpact) -> String {
    match &p.waves {
        None => "-".into(),
        Some(w) if w.blocked.is_some() => "**blocked**".into(),
        Some(w) => {
            let size = match w.per_wave {
                None => "all at once".to_string(),
                Some(k) => format!("{k} at a time, {} wave(s)", w.count),
            };
            let eta = w
                .eta_seconds
                .map(|s| {
                    format!(
                        ", ~{}",
                        crate::karpenter::duration::human(chrono::Duration::seconds(s))
                    )
                })
                .unwrap_or_default();
            let held = if w.blocked_nodes > 0 {
                format!("; {} held by blockers", w.blocked_nodes)
            } else {
                String::new()
            };
            match w.opens_at {
                Some(t) => format!("{size}{eta}; opens {}{held}", t.format("%a %H:%M UTC")),
                None => format!("{size}{eta}{held}"),
            }
        }
    }
}

/// The changed fields with what each drifts, or `-`.
fn changed(changes: &[crate::analysis::rollout::FieldChange]) -> String {
    if changes.is_empty() {
        return "-".into();
    }
    changes
        .iter()
        .map(|f| format!("{} ({})", md(&f.field), f.drifts))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pull-request comment.
pub fn markdown(i: &Impact) -> String {
    let mut out = String::from(if i.nodeclasses.is_empty() {
        "### kelp: the impact of this NodePool change\n\n"
    } else {
        "### kelp: the impact of this change\n\n"
    });
    let breaks = !i.pods.stranded.is_empty()
        || i.nodepools
            .iter()
            .any(|p| p.waves.as_ref().is_some_and(|w| w.blocked.is_some()));
    out.push_str(&format!(
        "{} of {} node(s) will drift.{}\n\n",
        i.drifting(),
        i.nodes.len(),
        if breaks {
            " :warning: **Something breaks: see below.**"
        } else {
            ""
        }
    ));
    if !i.nodeclasses.is_empty() {
        out.push_str("| EC2NodeClass | hash | NodePools | changed |\n|---|---|---|---|\n");
        for c in &i.nodeclasses {
            out.push_str(&format!(
                "| {}{} | {} | {} | {} |\n",
                md(&c.name),
                if c.new { " (new)" } else { "" },
                if c.hash_changes {
                    "changes"
                } else {
                    "unchanged"
                },
                if c.nodepools.is_empty() {
                    "-".to_string()
                } else {
                    md(&c.nodepools.join(", "))
                },
                changed(&c.changes)
            ));
        }
        out.push('\n');
    }
    out.push_str("| NodePool | nodes | drift | rollout | changed |\n|---|---:|---:|---|---|\n");
    for p in &i.nodepools {
        out.push_str(&format!(
            "| {}{} | {} | {}{} | {} | {} |\n",
            md(&p.name),
            if p.new { " (new)" } else { "" },
            p.nodes,
            p.drifting,
            if p.unknown > 0 {
                format!(" ({} unknown)", p.unknown)
            } else {
                String::new()
            },
            rollout_words(p),
            match &p.via_nodeclass {
                Some(class) => format!("its EC2NodeClass {}", md(class)),
                None => changed(&p.changes),
            }
        ));
    }
    for p in &i.nodepools {
        if let Some(c) = &p.cost {
            out.push_str(&format!(
                "\n{}: {}\n",
                md(&p.name),
                md(&cost_words(c, p.drifting))
            ));
        }
    }
    for p in &i.nodepools {
        if let Some(b) = p.waves.as_ref().and_then(|w| w.blocked.as_ref()) {
            out.push_str(&format!(
                "\n:no_entry: **{}**: rollout blocked: {}\n",
                md(&p.name),
                md(b)
            ));
        }
    }
    if !i.pods.stranded.is_empty() {
        out.push_str("\n:no_entry: **Pods no NodePool takes after the change.** Karpenter will not replace their nodes (\"Not all pods would schedule\") unless other nodes have room:\n\n");
        for s in &i.pods.stranded {
            out.push_str(&format!(
                "- {} ({} pod(s)) on {}\n",
                md(&s.pod),
                s.pods,
                md(s.node.as_deref().unwrap_or("-"))
            ));
        }
    }
    if !i.pods.pending.is_empty() {
        out.push_str("\nPending pods whose answer changes:\n\n");
        for c in &i.pods.pending {
            out.push_str(&format!(
                "- {}: {} → {}\n",
                md(&c.pod),
                md(&c.before),
                md(&c.after)
            ));
        }
    }
    if !i.nodes.is_empty() {
        out.push_str(&format!(
            "\n<details><summary>Nodes ({})</summary>\n\n| node | NodePool | drift | note |\n|---|---|---|---|\n",
            i.nodes.len()
        ));
        for n in &i.nodes {
            let mut note = match (&n.unknown, &n.already, n.because.is_empty()) {
                (Some(u), _, _) => format!("cannot tell: {u}"),
                (None, Some(a), _) => format!("already Drifted ({a})"),
                (None, None, false) => n.because.join("; "),
                _ => String::new(),
            };
            if !n.held_by.is_empty() {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(&format!("held by {}", n.held_by.join("; ")));
            }
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                md(&n.name),
                md(&n.nodepool),
                drift_word(n),
                md(&note)
            ));
        }
        out.push_str("\n</details>\n");
    }
    out.push_str(if i.nodeclasses.is_empty() {
        "\n<sub>Judged as Karpenter judges drift: the NodePool hash, then requirements. `kelp what-if -o markdown`.</sub>\n"
    } else {
        "\n<sub>Judged as Karpenter judges drift: the NodePool hash, then requirements, then the EC2NodeClass hash; what EC2 resolves a changed selector to is unknown offline. `kelp what-if -o markdown`.</sub>\n"
    });
    out
}

/// The rules the SARIF results name.
const RULES: [(&str, &str); 4] = [
    (
        "nodepool-change-strands-pods",
        "Pods on the nodes this change drifts have no NodePool left: Karpenter will not replace those nodes",
    ),
    (
        "nodepool-change-rollout-blocked",
        "The pool's disruption budgets allow no drift replacement for the next 7 days",
    ),
    (
        "nodepool-change-drifts-nodes",
        "This change makes Karpenter replace nodes (drift)",
    ),
    (
        "nodepool-change-unknown",
        "kelp cannot tell whether this change drifts some nodes",
    ),
];

/// A SARIF location: a manifest's line.
fn at(o: &Origin) -> Location {
    Location::builder()
        .physical_location(
            PhysicalLocation::builder()
                .artifact_location(
                    ArtifactLocation::builder()
                        .uri(crate::lint::sarif::uri(&o.file))
                        .build(),
                )
                .region(Region::builder().start_line(o.line.max(1) as i64).build())
                .build(),
        )
        .build()
}

/// The SARIF log: results at each changed pool's manifest line, and at each changed
/// EC2NodeClass's (`class_origins`) for the nodes it drifts.
pub fn sarif(i: &Impact, origins: &[Origin], class_origins: &[Origin]) -> Sarif {
    let rules: Vec<ReportingDescriptor> = RULES
        .iter()
        .map(|(id, text)| {
            ReportingDescriptor::builder()
                .id(*id)
                .name(*id)
                .short_description(MultiformatMessageString::builder().text(*text).build())
                .build()
        })
        .collect();
    let mut results = Vec::new();
    let result = |rule: usize, level: ResultLevel, text: String, location: &Location| {
        SarifResult::builder()
            .rule_id(RULES[rule].0)
            .rule_index(rule as i64)
            .level(level)
            .message(Message::builder().text(text).build())
            .locations(vec![location.clone()])
            .build()
    };
    for (c, o) in i.nodeclasses.iter().zip(class_origins) {
        let of = |pred: fn(&crate::analysis::rollout::NodeImpact) -> bool| {
            i.nodes
                .iter()
                .filter(|n| c.nodepools.contains(&n.nodepool) && pred(n))
                .count()
        };
        let drifting =
            of(|n| n.drift == Some(crate::analysis::rollout::DriftReason::NodeClassDrift));
        let unknown = of(|n| n.unknown.is_some());
        if drifting > 0 {
            let text = format!(
                "EC2NodeClass {}: {drifting} node(s) will drift (NodeClassDrift: its hash changes)",
                c.name
            );
            results.push(result(2, ResultLevel::Note, text, &at(o)));
        }
        if unknown > 0 {
            let text = format!(
                "EC2NodeClass {}: kelp cannot tell whether {unknown} node(s) drift (a changed selector: what EC2 resolves it to decides)",
                c.name
            );
            results.push(result(3, ResultLevel::Warning, text, &at(o)));
        }
    }
    for (p, o) in i.nodepools.iter().zip(origins) {
        let location = at(o);
        let mut push = |rule: usize, level: ResultLevel, text: String| {
            results.push(result(rule, level, text, &location));
        };
        let stranded: Vec<String> = i
            .pods
            .stranded
            .iter()
            .filter(|s| s.before == p.name)
            .map(|s| format!("{} ({} pod(s))", s.pod, s.pods))
            .collect();
        if !stranded.is_empty() {
            push(
                0,
                ResultLevel::Error,
                format!(
                    "NodePool {}: no NodePool takes {} after this change, so Karpenter will not replace their nodes",
                    p.name,
                    stranded.join(", ")
                ),
            );
        }
        if let Some(b) = p.waves.as_ref().and_then(|w| w.blocked.as_ref()) {
            push(1, ResultLevel::Error, format!("NodePool {}: {b}", p.name));
        }
        if p.drifting > 0 {
            push(
                2,
                ResultLevel::Note,
                format!(
                    "NodePool {}: {} of {} node(s) will drift ({})",
                    p.name,
                    p.drifting,
                    p.nodes,
                    rollout_words(p).replace("**", "")
                ),
            );
        }
        if p.unknown > 0 {
            push(
                3,
                ResultLevel::Warning,
                format!(
                    "NodePool {}: kelp cannot tell whether {} node(s) drift{}",
                    p.name,
                    p.unknown,
                    p.hash_unknown
                        .as_ref()
                        .map(|h| format!(" ({h})"))
                        .unwrap_or_default()
                ),
            );
        }
    }
    let driver = ToolComponent::builder()
        .name("kelp")
        .full_name("kelp what-if: the impact of a NodePool or EC2NodeClass change")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(rules)
        .build();
    Sarif::builder()
        .schema(SCHEMA_URL)
        .version(serde_json::json!("2.1.0"))
        .runs(vec![Run::builder()
            .tool(Tool::builder().driver(driver).build())
            .results(results)
            .build()])
        .build()
}
