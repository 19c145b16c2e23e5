//! The answers to "why": `why pod` and `why node` as typed answers read from one
//! analysis [`Pass`](crate::analysis::Pass), the advice that goes with them, and their
//! text. Every view that explains (the CLI, the dashboard's pane and API, the TUI)
//! answers through this room, and [`text`] renders for all of them.

pub mod node;
pub mod nodepool;
pub mod pod;
pub mod text;

pub use node::{node_answer, node_text, NodeAnswer};
pub use nodepool::{nodepool_answer, nodepool_text};
pub use pod::{change_for, pod_answer, pod_text, PodAnswer};

/// What `why` was asked about does not exist.
#[derive(Debug, thiserror::Error)]
pub enum NotFound {
    #[error("pod {} not found", text::clean(.0))]
    Pod(String),
    #[error("node {} not found", text::clean(.0))]
    Node(String),
    #[error(
        "NodeClaim {} has no node yet: see `kelp doctor` for launch and registration findings",
        text::clean(.0)
    )]
    ClaimWithoutNode(String),
    #[error("NodePool {} not found", text::clean(.0))]
    NodePool(String),
}
