//! kelp's memory: a durable history of what Karpenter did and what kelp found, per node,
//! NodeClaim, pod and pool, that outlives Kubernetes' events (gone after an hour) and
//! serve's restarts. [`recorder`] turns each pass into rows (a pure diff), [`writer`] keeps
//! them on its own thread, off the analysis path, in [`store`] (SQLite, WAL), which
//! `kelp history` reads. A view of the analysis: it imports the analysis and the model,
//! nothing of the web or the runtime.

pub mod import;
pub mod record;
pub mod recorder;
pub mod store;
pub mod writer;

pub use record::{Kind, Record, Subject};
pub use recorder::Recorder;
pub use store::{Ask, MovedAside, StoreError};
pub use writer::{History, Settings};
