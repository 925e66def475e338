//! The server's own diagnosis: which of the five axes (storage, watch, admission, auth, APF) is
//! at fault, from live signals, with the evidence and the order in which they degraded.
//!
//! # Layout
//! - [`tap`]: a metrics recorder in front of the exporter's that feeds the few metrics defining
//!   an axis (under kube's names) into [`signals`].
//! - [`signals`]: rolling windows, one bucket per second, of each of those metrics.
//! - [`axes`]: one judgement of each axis from its window, against [`thresholds`].
//! - [`thresholds`]: every number the axes are judged by, with defaults, overridable from
//!   `--diagnosis-config`.
//! - [`verdict`]: the judgements smoothed over time and walked as an operator's exclusion tree;
//!   the axis whose trouble began first is the root, the others its consequences.
//!
//! The gateway installs the tap, ticks a [`Diagnosis`] once a second, exports each axis's health
//! as `apiserver_axis_health{axis}` and serves the verdict at the admin port's `/debug/axes`.

pub mod axes;
pub mod signals;
pub mod tap;
pub mod thresholds;
pub mod verdict;

pub use axes::{Axis, Health, StorageProbe};
pub use signals::Signals;
pub use tap::TapRecorder;
pub use thresholds::Thresholds;
pub use verdict::{Change, Diagnosis};
