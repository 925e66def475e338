//! The layer between the key-value contract and the stages that read and write objects.
//!
//! The `storage` crate knows bytes, keys and revisions, and nothing of Kubernetes. The registry
//! (which writes) and the cachers (which read and watch) both need to turn stored bytes into
//! objects and storage failures into the Status a client sees; both do it here, once. The next
//! stored formats (kube's own protobuf and JSON envelopes) belong here too.
//!
//! # Layout
//! - [`codec`]: how objects become stored bytes (rmp-serde) and back, with the
//!   `resourceVersion` taken from the key's revision.
//! - [`errors`]: storage errors as the API reports them, mapped once.

pub mod codec;
pub mod errors;
