//! The Kubernetes object model every stage shares.
//!
//! # Layout
//! - [`error`]: [`ApiError`], the Kubernetes `Status` every layer's error is mapped to once.
//! - [`gofmt`]: Go's `fmt` renderings kube's messages are made of (`%q`, aggregates).
//! - [`fieldpath`]: field sets as server-side apply keeps them, and their `FieldsV1` encoding.
//! - [`object`]: helpers over `serde_json::Value`, the one representation of API objects.
//! - [`encoded`]: objects and watch events encoded to JSON once and shared by every reader.
//! - [`request`]: who is asking ([`request::UserInfo`]) and for what ([`request::RequestInfo`]).
//! - [`options`]: the query parameters of each verb, parsed and validated once into types.
//! - [`messages`]: what stages send each other (serde types, so a stage can move to another
//!   process behind the same handle).
//! - [`kinds`]: the catalogue of served resources, each with its strategy (defaults,
//!   validation, printer, selectable fields, key layout, ...).
//! - [`builtin`]: the built-in kinds, one file each.
//! - [`selector`]: label and field selectors.
//! - [`schema`]: OpenAPI schemas of the built-in kinds (from k8s-openapi), pruning and strict
//!   field validation.
//! - [`patch`]: JSON patch, JSON merge patch and strategic merge patch.
//! - [`cel`]: the CEL environment of admission expressions: compiling, type checking,
//!   evaluating over JSON objects.
//! - [`defaults`] and [`validation`]: what kube-apiserver defaults and validates per kind.
//! - [`table`]: `meta.k8s.io/v1` Table rows and columns for `kubectl get`.
//! - [`scale`]: the `autoscaling/v1` Scale view of `/scale`.
//! - [`quota`]: what objects charge resource quotas, shared by quota admission and its
//!   controller.
//! - [`apiregistration`]: what an APIService says (priorities, availability), shared by its
//!   kind and the gateway's aggregator.
//! - [`version`]: kube's order of API versions.
//!
//! Nothing here knows HTTP, a storage backend or a concrete actor: stages depend on this crate
//! and on the actor runtime, never on each other.

pub mod apiregistration;
pub mod builtin;
pub use kube_cel as cel;
pub mod defaults;
pub mod encoded;
pub mod error;
pub mod fieldpath;
pub mod gofmt;
pub mod kinds;
pub mod lookup;
pub mod managedfields;
pub mod messages;
pub mod object;
pub mod options;
pub mod patch;
pub mod quota;
pub mod request;
pub mod scale;
pub mod schema;
pub mod selector;
pub mod table;
#[cfg(test)]
mod test_kinds;
pub mod validation;
pub mod version;

pub use error::{ApiError, Reason};
