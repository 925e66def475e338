//! The HTTP front end of the apiserver and the composition root that wires every stage.
//!
//! # Layout
//! - [`server`]: the composition root (the only module naming concrete actors and every other
//!   module) and startup.
//! - [`config`]: flags, named as kube-apiserver names them.
//! - [`backends`]: opens the storage backends and routes resources to them.
//! - [`pipeline`]: the write path after the gateway (authorization, admission, the storage
//!   stage), built alike by a gateway and a storage stage process.
//! - [`topology`]: which resources' storage stages run in other processes
//!   (`--stage-topology`), and the handles that reach them.
//! - [`stage_process`]: `apiserver stage --shard <name>`, one shard's storage stage in a process
//!   of its own.
//! - [`state`]: what handlers share: stage handles, the catalogue, the server's state.
//! - [`auditing`]: what the chain records of each request for audit.
//! - [`chain`]: the handler chain in kube's order: deadline, authentication, audit,
//!   impersonation, flow control, authorization, then the handlers; request metrics.
//! - [`context`]: what a handler knows about its request.
//! - [`work`]: what a request will cost, counted for flow control's estimate of its seats.
//! - [`rest`], [`watch`]: generic REST and watch streaming over the storage stage and cachers.
//! - [`subresources`]: the subresources that act (binding, eviction) or belong to a kubelet.
//! - [`unstored`]: resources stored nowhere, whose verbs run their kind's action (`bindings`,
//!   the reviews, `componentstatuses`).
//! - [`discovery`], [`openapi`], [`health`], [`admin`]: the non-resource endpoints;
//!   [`prometheus`], what `/metrics` serves: kube's help texts and Go's process metrics.
//! - [`lifecycle`]: graceful termination in kube's steps: its signals, the requests it waits
//!   for and turns away, the sequence from SIGTERM to exit.
//! - [`aggregator`]: API aggregation: remote group versions' requests passed on to their
//!   extension servers, their availability probes and cached discovery.
//! - [`negotiate`]: representations (JSON, YAML, protobuf; tables and metadata views).
//! - [`status_writer`]: how admission plugins write other objects' status (quota charges).
//! - [`tokens`]: the TokenRequest subresource and the token issuer's discovery documents.
//! - [`storage_commands`]: `check-storage` and `migrate-storage`, over the backends `serve`
//!   opens.
//! - [`tls`]: serving certificates, the generated PKI, client-certificate identities.
//!
//! The controllers (kube-controller-manager's work and the API's own) are the `controllers`
//! crate, started by [`server`]; they reach the stages through the same handles as the
//! handlers (`stage-handles`), and so do the running cachers.
//!
//! Handlers depend on [`state`] and [`context`] only, never on [`server`]: no module but the
//! composition root knows every other one.

pub mod admin;
pub mod aggregator;
pub mod auditing;
pub mod backends;
pub mod chain;
pub mod config;
pub mod context;
pub mod discovery;
pub mod first_head;
pub mod health;
pub mod kubelet;
pub mod lifecycle;
pub mod listener;
pub mod metrics;
pub mod negotiate;
pub mod openapi;
pub mod pipeline;
pub mod prometheus;
pub mod rest;
pub mod server;
pub mod stage_process;
pub mod state;
pub mod status_writer;
pub mod storage_commands;
pub mod subresources;
pub mod tls;
pub mod tokens;
pub mod topology;
pub mod unstored;
pub mod watch;
pub mod work;
