//! CEL's cost model as kube uses it: [`estimate`], the static upper bound kube checks when a
//! CRD's rules are written, and [`runtime`], what each call costs as an expression runs.

pub mod estimate;
pub mod runtime;

pub use estimate::{Estimate, NoSizes, SizeEstimator};
