//! Lint results as SARIF 2.1.0 (the `serde-sarif` types), the shape GitHub code scanning
//! uploads: one run whose driver lists every rule with its help, and one result per
//! finding with the file (a relative URI) and the line.

use serde_sarif::sarif::{
    ArtifactLocation, Location, Message, MultiformatMessageString, PhysicalLocation, PropertyBag,
    Region, ReportingConfiguration, ReportingDescriptor, Result as SarifResult, ResultLevel, Run,
    Sarif, Tool, ToolComponent, SCHEMA_URL,
};

use super::config::normalize;
use super::rules::{self, RULES};
use super::LintResult;
use crate::findings::Severity;

fn level(s: Severity) -> ResultLevel {
    match s {
        Severity::Critical => ResultLevel::Error,
        Severity::Warning => ResultLevel::Warning,
        Severity::Info => ResultLevel::Note,
    }
}

/// GitHub ranks security alerts by this score; only the rules about node hardening carry one.
fn security_severity(id: &str) -> Option<&'static str> {
    match id {
        "imds-not-locked" => Some("7.0"),
        "ebs-not-encrypted" => Some("5.0"),
        _ => None,
    }
}

/// A file name as a SARIF artifact URI: relative paths stay relative (GitHub resolves
/// them against the repository root), absolute ones become `file://` URIs.
pub fn uri(file: &str) -> String {
    let path = normalize(file);
    let encoded: String = path
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    if path.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

fn descriptor(r: &rules::Rule) -> ReportingDescriptor {
    let mut props = serde_json::Map::new();
    if let Some(s) = security_severity(r.id) {
        props.insert("security-severity".into(), s.into());
    }
    let mut tags = vec!["karpenter".to_string(), "kubernetes".to_string()];
    if security_severity(r.id).is_some() {
        tags.push("security".into());
    }
    ReportingDescriptor::builder()
        .id(r.id)
        .name(r.id)
        .short_description(MultiformatMessageString::builder().text(r.summary).build())
        .full_description(MultiformatMessageString::builder().text(r.why).build())
        .help(
            MultiformatMessageString::builder()
                .text(rules::help_text(r))
                .markdown(rules::help_markdown(r))
                .build(),
        )
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::to_value(level(r.severity)).unwrap_or_default())
                .build(),
        )
        .properties(
            PropertyBag::builder()
                .tags(tags)
                .additional_properties(
                    props
                        .into_iter()
                        .collect::<std::collections::BTreeMap<_, _>>(),
                )
                .build(),
        )
        .build()
}

fn result(r: &LintResult) -> SarifResult {
    let index = RULES.iter().position(|x| x.id == r.rule);
    let location = Location::builder()
        .physical_location(
            PhysicalLocation::builder()
                .artifact_location(ArtifactLocation::builder().uri(uri(&r.file)).build())
                .region(Region::builder().start_line(r.line.max(1) as i64).build())
                .build(),
        )
        .build();
    let builder = SarifResult::builder()
        .rule_id(r.rule.clone())
        .level(level(r.severity))
        .message(Message::builder().text(r.message.clone()).build())
        .locations(vec![location]);
    match index {
        Some(i) => builder.rule_index(i as i64).build(),
        None => builder.build(),
    }
}

/// The SARIF log for `results`.
pub fn log(results: &[LintResult]) -> Sarif {
    let driver = ToolComponent::builder()
        .name("kelp")
        .full_name("kelp lint: Karpenter manifest checks")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(RULES.iter().map(descriptor).collect::<Vec<_>>())
        .build();
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .results(results.iter().map(result).collect::<Vec<_>>())
        .build();
    Sarif::builder()
        .schema(SCHEMA_URL)
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(uri("./manifests/pools.yaml"), "manifests/pools.yaml");
        assert_eq!(uri("a dir/x.yaml"), "a%20dir/x.yaml");
        assert_eq!(uri("/abs/x.yaml"), "file:///abs/x.yaml");
        assert_eq!(uri("<stdin>"), "%3Cstdin%3E");
    }
}
