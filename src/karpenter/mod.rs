//! Karpenter's domain rules as pure code: labels, requirements and well-known labels,
//! taints and tolerations, budgets, durations, quantities, and the event message parsers
//! (consolidation decisions in [`consolidation`]).

pub mod budgets;
pub mod consolidation;
pub mod duration;
pub mod events;
pub mod labels;
pub mod requirements;
pub mod resources;
pub mod taints;
