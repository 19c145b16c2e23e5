//! Karpenter's domain rules as pure code: labels, requirements and well-known labels,
//! taints and tolerations, budgets, durations, quantities, and the event message parsers
//! (consolidation decisions in [`consolidation`]), a pod's eviction cost ([`eviction`]), and
//! which release does what ([`version`]), node repair's conditions and breaker
//! ([`repair`]), the NodePool hash that static drift compares ([`hash`]), and the AWS provider's
//! instance types ([`aws`]).

/// `re!(NAME = "pattern")`: a static regex, compiled on first use; the event parsers'
/// patterns are literals, so compiling one cannot fail.
macro_rules! re {
    ($name:ident = $pat:expr) => {
        static $name: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new($pat).expect("static regex is valid"));
    };
}

pub mod aws;
pub mod budgets;
pub mod consolidation;
pub mod duration;
pub mod events;
pub mod eviction;
pub mod hash;
pub mod instance_types;
pub mod labels;
pub mod repair;
pub mod requirements;
pub mod resources;
pub mod taints;
pub mod version;
