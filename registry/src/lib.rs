//! The storage stage: kube's generic registry (`registry/generic/registry`) over the storage
//! contract of the `storage` crate.
//!
//! The registry is the one place that turns a write request into guarded writes of stored
//! objects. It knows no kind: everything kind-specific comes from the resource's strategy in the
//! catalogue, and the only per-kind state it keeps is the Service cluster IP allocations.
//!
//! # Layout
//! - [`store`]: [`RegistryStore`], create, update, patch, delete and deletecollection.
//! - [`cluster_ips`]: [`ClusterIpAllocator`], Service addresses reserved atomically in storage.
//! - [`actor`]: [`StorageActor`], the stage that runs the store's operations.

pub mod actor;
pub mod cluster_ips;
pub mod store;

#[cfg(test)]
mod tests;

pub use actor::StorageActor;
pub use cluster_ips::{ClusterIpAllocator, ServiceRange};
pub use store::RegistryStore;
