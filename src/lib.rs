//! kelp explains what Karpenter is doing and why.
//!
//! Data flows one way: [`source`] (dumps, live lists) fills the [`model`] (a trimmed,
//! indexed copy of the cluster); [`analysis`] turns the model and a clock into
//! [`findings`]; [`cli`] renders them. The Karpenter domain rules live in [`karpenter`].

pub mod analysis;
pub mod cli;
pub mod demo;
pub mod explain;
pub mod findings;
pub mod heap;
pub mod history;
pub mod karpenter;
pub mod lint;
pub mod listener;
pub mod metrics;
pub mod model;
pub mod runtime;
pub mod serve;
pub mod source;
#[cfg(test)]
pub(crate) mod testing;
pub mod tui;
pub mod view;
pub mod web;

pub use source::error::{Error, Result};
