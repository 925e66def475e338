//! The built-in kinds: one strategy per kind, with what kube-apiserver defaults, prints and
//! charges to quota for it, and the OpenAPI schemas of their types. Adding a kind starts here.
//!
//! # Layout
//! - [`builtin`]: one file per kind, defining its `ResourceDef` (names, scope, subresources,
//!   key layout, schema type) and its strategy, and the actions of kinds that have them
//!   (binding, eviction); [`catalogue`] serves them all, [`actions`] lists the actions.
//! - [`defaults`]: what kube fills in per kind (decode-time defaults, `PrepareForCreate`,
//!   `PrepareForUpdate`).
//! - [`printers`]: the `kubectl get` columns and cells per kind.
//! - [`quota`]: what objects charge resource quotas.
//! - [`apiregistration`]: what an APIService says (priorities, availability).
//! - [`schema`]: the kinds' OpenAPI definitions and the `/openapi` documents.
//!
//! Validation per kind is the `validation` crate's; the generic model (objects, the catalogue
//! and its `Strategy` trait) is `apimachinery`'s.

pub mod apiregistration;
pub mod builtin;
pub mod defaults;
pub mod printers;
pub mod quota;
pub mod schema;
#[cfg(test)]
mod test_kinds;

pub use builtin::{actions, find, resources};

/// A catalogue serving the built-in resources, their schemas installed for the core's walkers
/// (strategic merge patch, managed fields, pruning).
pub fn catalogue() -> apimachinery::catalogue::Catalogue {
    schema::prepare_definitions();
    apimachinery::catalogue::Catalogue::new(resources().iter().cloned())
}
