//! API Priority and Fairness.
//!
//! A request is first classified ([`config::SharedConfig::classify`]): the first FlowSchema in
//! matching order whose rules match it names its priority level and how its flow is told
//! apart. Classification runs on the caller's own task before the request waits in any
//! mailbox, so a request APF exempts (`system:masters`, health probes) is never turned away by
//! a full one. Every other request asks the [`FlowControlActor`] for seats: the actor holds one
//! queue set per priority level, dispatches by fair queuing, and answers 429 when a request
//! cannot be queued or waits past its queue deadline. The grant carries a guard that gives
//! the seats back when dropped, wherever that happens.
//!
//! # Layout
//! - [`config`]: FlowSchemas and levels compiled from the stored objects; classification.
//! - [`exempt`]: seats held by exempt requests, counted without asking the actor.
//! - [`estimate`]: a request's width in seats from the objects and watchers it touches.
//! - [`shuffle`]: kube's shuffle-sharding dealer and flow hash: which queues a flow may use.
//! - [`queueset`]: one priority level's queues, seats and virtual-time fair queuing, a pure
//!   data structure the caller drives with explicit instants.
//! - [`limits`]: the server's concurrency split among priority levels and the periodic
//!   borrowing adjustment from seat-demand statistics.
//! - [`bootstrap`]: kube's mandatory and suggested FlowSchemas and PriorityLevelConfigurations,
//!   and the rule that keeps them.
//! - [`stage`]: the flow-control actor, its metrics and kube's debug dumps.

pub mod bootstrap;
pub mod config;
pub mod estimate;
pub mod exempt;
pub mod limits;
pub mod metrics;
pub mod queueset;
pub mod shuffle;
pub mod stage;

pub use config::SharedConfig;
pub use exempt::{ExemptHold, ExemptSeats};
pub use stage::{FlowControlActor, FlowControlView};
