//! The storage stage: kube's generic registry (`registry/generic/registry`) over the storage
//! contract of the `storage` crate.
//!
//! The registry is the one place that turns a write request into guarded writes of stored
//! objects. It knows no kind: everything kind-specific comes from the resource's strategy in the
//! catalogue. Addresses a kind claims (a Service's cluster IP) are reserved through the
//! core's `AddressAllocator`, which the Service kind's allocator (the `cluster-ips` crate)
//! implements.
//!
//! # Layout
//! - [`store`]: [`RegistryStore`], create, update, patch, delete and deletecollection.
//! - [`actor`]: [`StorageActor`], the stage that runs the store's operations.
//! - [`recent`]: the stored form of the keys updated last, where the next update starts.

pub mod actor;
pub mod recent;
pub mod store;

#[cfg(test)]
mod tests;

pub use actor::StorageActor;
pub use store::RegistryStore;
