//! The layer between the key-value contract and the stages that read and write objects.
//!
//! The `storage` crate knows bytes, keys and revisions, and nothing of Kubernetes. The registry
//! (which writes) and the cachers (which read and watch) both need to turn stored bytes into
//! objects and storage failures into the Status a client sees; both do it here, once, in the
//! formats kube-apiserver writes (its protobuf envelope, and JSON).
//!
//! # Layout
//! - [`codec`]: how objects become stored bytes as kube writes them and back, with the
//!   `resourceVersion` taken from the key's revision.
//! - [`errors`]: storage errors as the API reports them, mapped once.
//! - [`migrate`]: older data moved and rewritten into kube's layout and formats, and a
//!   read-only survey of a store.

pub mod codec;
pub mod errors;
pub mod migrate;
