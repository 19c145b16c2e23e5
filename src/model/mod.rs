//! The model: trimmed projections of each kind and the [`Cluster`] index over them.

pub mod catalog;
pub mod cluster;
pub mod container;
pub mod controller;
pub mod event;
pub mod kinds;
pub mod memo;
pub mod meta;
pub mod nodeclass;
pub mod object_kind;
pub mod pod;
pub mod shared;
pub mod stamps;
pub mod tally;

pub use catalog::{Catalog, CatalogSource, InstanceType, TypeOffering};
pub use cluster::{Cluster, ObjKey};
pub use container::{Container, ContainerResources, HostPort};
pub use controller::{ApiInfo, ControllerMetrics, Offering};
pub use event::Event;
pub use kinds::*;
pub use meta::{condition, conditions_of, is_true, Condition, Meta, StringMap, POD_DELETION_COST};
pub use object_kind::ObjectKind;
pub use pod::*;
pub use shared::Shared;
pub use tally::{LiveTally, Tally};
