//! The kernel shared by every stage of the apiserver.
//!
//! # Layout
//! - [`error`]: [`ApiError`], the Kubernetes `Status` every layer's error is mapped to once.
//! - [`object`]: helpers over `serde_json::Value`, the one representation of API objects.
//! - [`kinds`]: the catalogue of served resources (group, version, kind, scope, key prefix).
//! - [`encoded`]: objects and watch events encoded to JSON once and shared by every reader.
//! - [`messages`]: what stages send each other (plain serde types).
//! - [`request`]: who is asking ([`request::UserInfo`]) and for what ([`request::RequestInfo`]).
//! - [`selector`]: label and field selectors, shared by the cacher and storage paging.
//! - [`schema`]: OpenAPI schemas of the built-in kinds (from k8s-openapi), pruning and strict
//!   field validation.
//! - [`patch`]: JSON patch, JSON merge patch and strategic merge patch.
//! - [`defaults`] and [`validation`]: what kube-apiserver defaults and validates per kind.
//! - [`table`]: `meta.k8s.io/v1` Table rows and columns for `kubectl get`.
//! - [`stage`]: metered handles to stage actors with bounded mailboxes.
//! - [`registry`]: every live actor, for the admin endpoint.
//!
//! No crate here knows actix-web or a storage backend: stages depend on this crate, never on
//! each other (the cacher on storage excepted).

pub mod defaults;
pub mod encoded;
pub mod error;
mod gofmt;
pub mod kinds;
pub mod messages;
pub mod object;
pub mod patch;
pub mod registry;
pub mod request;
pub mod schema;
pub mod selector;
pub mod stage;
pub mod table;
pub mod validation;

pub use error::{ApiError, Reason};
