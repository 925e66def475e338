//! The Kubernetes object model every stage shares, and nothing kind-specific.
//!
//! # Layout
//! - [`error`]: [`ApiError`], the Kubernetes `Status` every layer's error is mapped to once.
//! - [`gofmt`]: Go's `fmt` renderings kube's messages are made of (`%q`, aggregates).
//! - [`fieldpath`]: field sets as server-side apply keeps them, and their `FieldsV1` encoding.
//! - [`managedfields`]: server-side apply's ownership bookkeeping.
//! - [`object`]: helpers over `serde_json::Value`, the one representation of API objects.
//! - [`encoded`]: objects and watch events encoded to JSON once and shared by every reader.
//! - [`request`]: who is asking ([`request::UserInfo`]) and for what ([`request::RequestInfo`]).
//! - [`options`]: the query parameters of each verb, parsed and validated once into types.
//! - [`messages`]: what stages send each other (serde types, so a stage can move to another
//!   process behind the same handle).
//! - [`lookup`]: the lookups stages answer each other (Services, namespaces, tokens).
//! - [`catalogue`]: the catalogue of served resources, each with its [`catalogue::Strategy`]
//!   (defaults, validation, printer, selectable fields, key layout, ...).
//! - [`selector`]: label and field selectors.
//! - [`schema`]: walking objects in step with an installed OpenAPI schema; pruning.
//! - [`patch`]: JSON patch, JSON merge patch and strategic merge patch.
//! - [`validation`]: field paths and causes, name formats, metadata validation.
//! - [`table`]: the `meta.k8s.io/v1` Table envelope and the default columns.
//! - [`scale`]: the `autoscaling/v1` Scale view of `/scale`.
//! - [`version`]: kube's order of API versions.
//!
//! Nothing here knows HTTP, a storage backend, a concrete actor or a built-in kind: the kinds
//! are the `kinds` crate's, their validation the `validation` crate's.

pub mod action;
pub mod catalogue;
pub mod encoded;
pub mod error;
pub mod fieldpath;
pub mod gofmt;
pub mod lookup;
pub mod managedfields;
pub mod messages;
pub mod metrics;
pub mod object;
pub mod options;
pub mod patch;
pub mod request;
pub mod scale;
pub mod schema;
pub mod selector;
pub mod table;
pub mod validation;
pub mod version;

pub use error::{ApiError, Reason};
