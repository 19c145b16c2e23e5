//! The findings log: one structured line when a finding appears and one when it
//! resolves, escaped so text from the cluster cannot forge a line.

use std::collections::BTreeMap;

use crate::findings::{Finding, Report, Severity};

type Key = (&'static str, String, Option<String>);

fn key(f: &Finding) -> Key {
    (f.code.as_str(), f.object.to_string(), f.nodepool.clone())
}

/// Log what appeared and what resolved between two reports: one structured line each.
pub fn log_changes(before: Option<&Report>, after: &Report) {
    let old: BTreeMap<Key, &Finding> = before
        .map(|r| r.findings.iter().map(|f| (key(f), &**f)).collect())
        .unwrap_or_default();
    let new: BTreeMap<Key, &Finding> = after.findings.iter().map(|f| (key(f), &**f)).collect();
    for (k, f) in &new {
        if !old.contains_key(k) {
            let (code, object, nodepool, message) = (
                f.code.as_str(),
                f.object.to_string(),
                f.nodepool.as_deref().unwrap_or(""),
                f.message.as_str(),
            );
            match f.severity {
                Severity::Critical | Severity::Warning => {
                    tracing::warn!(target: "kelp::findings", event = "appeared", code, severity = %f.severity, object, nodepool, message)
                }
                Severity::Info => {
                    tracing::info!(target: "kelp::findings", event = "appeared", code, severity = %f.severity, object, nodepool, message)
                }
            }
        }
    }
    for (k, f) in &old {
        if !new.contains_key(k) {
            tracing::info!(target: "kelp::findings", event = "resolved", code = f.code.as_str(), severity = %f.severity, object = f.object.to_string(), nodepool = f.nodepool.as_deref().unwrap_or(""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Code, ObjectRef};
    use crate::model::ObjectKind;
    use chrono::Utc;
    use std::sync::Arc;

    /// A MakeWriter into a shared buffer.
    #[derive(Clone, Default)]
    struct Buf(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_finding_cannot_forge_a_text_log_line() {
        let buf = Buf::default();
        let b2 = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || b2.clone())
            .with_ansi(false)
            .fmt_fields(crate::explain::text::text_fields())
            .finish();
        let report = Report {
            generated_at: Utc::now(),
            karpenter: crate::findings::KarpenterInfo {
                installed: true,
                api_versions: vec![],
                version: None,
            },
            findings: vec![std::sync::Arc::new(Finding::new(
                Code::PodUnschedulable,
                Severity::Warning,
                ObjectRef::namespaced(
                    ObjectKind::Pod,
                    "ml",
                    "web\n2026-01-01T00:00:00Z ERROR forged",
                ),
                "pending \x1b]0;title\x07 for\nERROR forged too",
            ))],
        };
        tracing::subscriber::with_default(subscriber, || log_changes(None, &report));
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("for\\nERROR forged too"), "{text}");
    }
}
