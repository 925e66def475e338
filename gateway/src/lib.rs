//! The HTTP front end of the apiserver and the composition root that wires every stage.
//!
//! # Layout
//! - [`config`]: flags, named as kube-apiserver names them.
//! - [`backends`]: opens the storage backends and routes resources to them.
//! - [`server`]: the composition root (the only place naming concrete actors) and startup.
//! - [`http`]: the request path: request info, authentication, authorization, flow control,
//!   routing, request metrics.
//! - [`auth`]: the authentication and authorization stage actors.
//! - [`rest`], [`watch`]: generic REST and watch streaming over the storage stage and cachers.
//! - [`discovery`], [`openapi`], [`health`], [`admin`]: the non-resource endpoints.
//! - [`negotiate`], [`convert`]: representations and served versions.
//! - [`namespace_finalizer`]: completes namespace deletion (a controller's job in a full
//!   cluster).
//! - [`tls`]: serving certificates, the generated PKI, client-certificate identities.

pub mod admin;
pub mod auth;
pub mod backends;
pub mod config;
pub mod convert;
pub mod discovery;
pub mod health;
pub mod http;
pub mod namespace_finalizer;
pub mod negotiate;
pub mod openapi;
pub mod rest;
pub mod server;
pub mod tls;
pub mod watch;
