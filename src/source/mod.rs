//! Where objects come from: dumps (files, folders, stdin), one-shot lists from a live
//! cluster, a Karpenter controller's metrics, and instance-type catalogues ([`catalog`]) (from a file, or scraped through the API
//! server's service proxy). Each fills the same [`Cluster`](crate::model::Cluster), each
//! kind the way [`kinds`] says.

pub mod catalog;
pub mod controller;
pub mod dump;
pub mod error;
mod ingest;
mod json;
pub mod kinds;
pub mod limits;
pub mod live;
pub mod metrics;
pub mod status;
pub mod watch;
mod yaml;

pub use dump::{load_paths, load_paths_copied, load_str, load_str_parsing_each_part, LoadNotes};
