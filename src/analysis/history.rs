//! kelp's own memory: whether `kelp serve --state-dir` is keeping the history it was asked
//! to keep. A store it cannot write (a full disk, a read-only directory) is said as a
//! finding, beside `/readyz`, because nothing else shows that the record has a hole.

use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::model::{Cluster, ObjectKind};

/// `history-not-kept` while serve's history writer reports a problem.
pub fn findings(c: &Cluster) -> Vec<Finding> {
    let Some(why) = &c.history_problem else {
        return Vec::new();
    };
    vec![Finding::new(
        Code::HistoryNotKept,
        Severity::Warning,
        ObjectRef::cluster(ObjectKind::Cluster, "kelp-history"),
        format!(
            "kelp is not keeping history: {why}. What Karpenter does meanwhile is analysed but not recorded (serve's log and /readyz say more)"
        ),
    )
    .details(serde_json::json!({ "problem": why }))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_problem_is_a_warning_and_none_is_silence() {
        let mut c = Cluster::default();
        assert!(findings(&c).is_empty());
        c.history_problem = Some("database or disk is full".into());
        let f = findings(&c);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::HistoryNotKept);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("database or disk is full"),
            "{}",
            f[0].message
        );
    }
}
