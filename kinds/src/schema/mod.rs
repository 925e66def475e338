//! OpenAPI schemas of the built-in kinds and the documents built from them.
//!
//! The walkers (`Node`, pruning) are the core's `apimachinery::schema`; this module builds the
//! definitions they resolve against from k8s-openapi's `schemars` output plus the tables in
//! [`patch_meta`] that carry what kube declares in Go struct tags (`patchStrategy`,
//! `patchMergeKey`, list types), and serves them as `/openapi/v2` and `/openapi/v3`.
//!
//! # Layout
//! - `build`: generation of the definitions (one shared store, `#/definitions/<name>` refs).
//! - [`patch_meta`]: our table of strategic-merge and list-type metadata.
//! - `openapi`: the `/openapi/v2` and `/openapi/v3` documents ([`openapi_v2`],
//!   [`openapi_v3_index`], [`openapi_v3_document`]); `proto`: the protobuf form of v2
//!   ([`openapi_v2_protobuf`]).
//! - `cel`: the CEL type of a schema node ([`cel_type`]), for type checking expressions.

mod build;
mod cel;
mod openapi;
pub mod patch_meta;
mod proto;

pub use apimachinery::schema::Node;
pub use cel::cel_type;
pub use openapi::{
    CustomDocuments, CustomResourceDoc, OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_ACCEPT, digest, openapi_v2,
    openapi_v2_protobuf, openapi_v2_protobuf_with, openapi_v2_with, openapi_v3_document, openapi_v3_hash,
    openapi_v3_index, openapi_v3_index_with,
};

/// Builds and installs the definitions and builds the `/openapi/v3` documents now instead of at
/// first use: call it once at server start so the first request (often a `kubectl apply`) does
/// not pay for generation (a few ms for the definitions, a few tens of ms for the v3 documents;
/// the v2 document stays lazy since only fallbacks ask for it).
pub fn prepare() {
    build::store();
    openapi::prepare();
}

/// The root schema node of a built-in kind (its definitions installed first).
pub fn kind_node(group: &str, version: &str, kind: &str) -> Option<Node<'static>> {
    build::store();
    apimachinery::schema::kind_node(group, version, kind)
}

/// Builds and installs the definitions alone (the catalogue does, so the core's walkers find
/// them whichever entry point a process starts from).
pub fn prepare_definitions() {
    build::store();
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_path_timings;
