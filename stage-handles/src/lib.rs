//! The handles through which code above the stages reaches them: the HTTP handlers of the
//! gateway and the controllers. Only the composition root builds these; everyone else holds
//! clones.
//!
//! # Layout
//! - [`stages`]: [`Stages`], the typed handle of every stage.
//! - [`caches`]: [`Caches`], the running cachers by storage path, started and stopped as
//!   resources come and go, and [`Reads`], one cacher's handles.
//! - [`signal`]: [`Signal`], a one-way event of the server's life (the shutdown sequence's).

pub mod caches;
pub mod signal;
pub mod stages;

pub use caches::{CacheSettings, Caches, Reads};
pub use signal::Signal;
pub use stages::Stages;
