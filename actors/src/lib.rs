//! The actor runtime every stage runs on. It knows nothing of Kubernetes.
//!
//! A stage is an actix actor behind a bounded [`Mailbox`]: a message takes a slot when admitted
//! and gives it back when its reply is sent, so queued and in-progress work together never
//! exceed the bound, and both are live meters. Callers reach a stage only through a typed
//! [`StageHandle`], which sends over a [`Transport`]: into an actor of this process, or over the network to
//! a stage in another ([`remote`]). Every message carries a [`Deadline`]; work past it is dropped.
//!
//! # Layout
//! - [`message`]: what a stage message and its reply must be ([`Request`], [`Reply`]: serde
//!   types, so they can cross processes).
//! - [`deadline`]: [`Deadline`], carried by every message.
//! - [`mailbox`]: the receiving side's slots and its [`WhenFull`] policy.
//! - [`stage`]: [`StageHandler`], [`Work`], [`stage_handler!`], starting a stage on a
//!   [`StageArbiter`].
//! - [`envelope`]: [`Envelope`], an admitted message with its deadline, slot and reply.
//! - [`transport`]: the [`Transport`] seam and [`LocalTransport`].
//! - [`handle`]: [`StageHandle`], the only way a stage reaches another.
//! - [`remote`]: stages in other processes: [`remote::StageService`] exposes handles over HTTP/2
//!   with mutual TLS, [`remote::Peer`] reaches them, [`remote::RemoteTransport`] is the transport.
//! - [`meters`]: the shared counters ([`StageMeters`]) and their Prometheus series.
//! - [`directory`]: every live actor ([`ActorDirectory`]), for the admin endpoint.
//! - [`error`]: [`StageError`], why a stage could not be reached.

pub mod deadline;
pub mod directory;
pub mod envelope;
pub mod error;
pub mod handle;
pub mod mailbox;
pub mod message;
pub mod meters;
pub mod metrics;
pub mod remote;
pub mod stage;
pub mod transport;

pub use deadline::Deadline;
pub use directory::ActorDirectory;
pub use envelope::Envelope;
pub use error::StageError;
pub use handle::StageHandle;
pub use mailbox::{Mailbox, MailboxSpec};
pub use message::{Reply, Request};
pub use meters::{MeterSnapshot, StageMeters, WhenFull};
pub use stage::{StageArbiter, StageHandler, Started, Work, start};
pub use transport::{LocalTransport, Transport};
