//! One EC2NodeClass's rules: AMI aliases at `@latest` (except Windows families, which the
//! CRD allows only at `latest`), IMDS left open (tokens optional
//! or a hop limit above 1) and unencrypted EBS volumes.

use super::super::yaml::Node;
use super::{Hit, Obj};

/// Alias families the EC2NodeClass CRD lets specify only `latest` (its CEL rule "windows
/// families may only specify version 'latest'"): nothing to pin, so nothing to flag.
const WINDOWS_FAMILIES: [&str; 3] = ["windows2019", "windows2022", "windows2025"];

pub(super) fn ec2nodeclass(o: &Obj) -> Vec<Hit> {
    let mut out = Vec::new();
    let hit = |rule, line, message| Hit {
        rule,
        file: o.file,
        line,
        message,
    };
    let name = &o.name;
    if let Some(terms) = o.node.at(&["spec", "amiSelectorTerms"]) {
        for t in terms.items() {
            if let Some(alias) = t.get("alias").and_then(Node::scalar_text) {
                let family = alias.trim_end_matches("@latest");
                if alias.ends_with("@latest") && !WINDOWS_FAMILIES.contains(&family) {
                    out.push(hit(
                        "ami-alias-latest",
                        t.key_line(&["alias"]).unwrap_or(t.line),
                        format!("EC2NodeClass {name} selects {alias}: every AMI release drifts and replaces all its nodes; pin a version (e.g. {family}@v20250715) and roll it forward deliberately"),
                    ));
                }
            }
        }
    }
    if let Some(tokens) = o
        .node
        .at(&["spec", "metadataOptions", "httpTokens"])
        .and_then(Node::scalar_text)
    {
        if tokens != "required" {
            out.push(hit(
                "imds-not-locked",
                o.anchor(&["spec", "metadataOptions", "httpTokens"]),
                format!("EC2NodeClass {name} sets httpTokens: {tokens}, which allows IMDSv1: set spec.metadataOptions.httpTokens: required"),
            ));
        }
    }
    if let Some(hops) = o
        .node
        .at(&["spec", "metadataOptions", "httpPutResponseHopLimit"])
        .and_then(Node::as_i64)
    {
        if hops > 1 {
            out.push(hit(
                "imds-not-locked",
                o.anchor(&["spec", "metadataOptions", "httpPutResponseHopLimit"]),
                format!("EC2NodeClass {name} sets httpPutResponseHopLimit: {hops}, so pods can reach the node's instance metadata and IAM role: set it to 1"),
            ));
        }
    }
    if let Some(mappings) = o.node.at(&["spec", "blockDeviceMappings"]) {
        for m in mappings.items() {
            let Some(ebs) = m.entry("ebs") else { continue };
            let device = m
                .get("deviceName")
                .and_then(Node::scalar_text)
                .unwrap_or_else(|| "a block device".into());
            let encrypted = ebs.value.get("encrypted");
            let ok = encrypted.and_then(Node::as_bool_yaml11) == Some(true);
            if !ok {
                let (line, what) = match encrypted {
                    Some(v) => (
                        ebs.value.key_line(&["encrypted"]).unwrap_or(ebs.line),
                        match v.scalar_text() {
                            Some(t) if v.as_bool_yaml11().is_some() => {
                                format!("sets encrypted: {t}")
                            }
                            Some(t) => format!("sets encrypted to {t:?}, which is not a boolean"),
                            None => "sets encrypted to something that is not a boolean".into(),
                        },
                    ),
                    None => (ebs.line, "does not set encrypted".into()),
                };
                out.push(hit(
                    "ebs-not-encrypted",
                    line,
                    format!(
                        "EC2NodeClass {name}'s EBS volume {device} {what}: set ebs.encrypted: true"
                    ),
                ));
            }
        }
    }
    out
}
