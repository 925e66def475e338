//! What kube-apiserver v1.30 validates for the served built-in kinds, as the causes of a 422.
//!
//! Each kind's strategy calls its functions here for `Validate` (create), `ValidateUpdate` and
//! the status strategy's `ValidateUpdate`. Each returns kube's `field.ErrorList` as
//! [`Cause`]s: same field paths (`spec.template.spec.containers[0].image`), same cause types
//! (`FieldValueRequired`, ...), same messages (`Required value`,
//! `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must ...`), in kube's order.
//! [`apimachinery::ApiError::invalid`] turns them into the Status.
//!
//! Inputs are the versioned JSON after defaulting and `PrepareFor*`, as kube validates them.
//! Where kube iterates a Go map, keys are taken in sorted order so the result is deterministic;
//! exact duplicate causes (kube revalidates metadata on some updates) are reported once, as
//! kube's aggregate message does.
//!
//! # Layout
//! - [`field`]: paths, cause constructors, Go-style value rendering.
//! - [`names`]: the string formats (DNS labels, qualified names, config keys, ports).
//! - [`meta`]: metadata, label selectors, `metav1.Condition`s.
//! - [`webhook`]: where a webhook is reached (URL or Service), as `k8s.io/apiserver` checks it.
//! - [`cel`]: the hook where CEL expressions are compiled.
//! - `pod`, `apps`, `batch`, `core`, `events`, `rbac`, `certificates`, `cluster`, `networking`, `quota`, `storage`,
//!   `admissionregistration`, `flowcontrol`, `apiextensions`, `apiregistration`: the kinds.

pub mod cel;
pub mod webhook;

pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod batch;
pub mod certificates;
pub mod cluster;
pub mod core;
pub mod events;
pub mod flowcontrol;
pub mod networking;
pub mod pod;
pub mod quota;
pub mod rbac;
pub mod storage;

pub use batch::parse_standard as parse_cron_schedule;

use serde_json::Value;

pub use apimachinery::validation::{IMMUTABLE, NEGATIVE, field, meta, names};

/// A string member, `""` when absent or not a string (Go's zero value).
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An array member, empty when absent or not an array (a nil Go slice).
pub(crate) fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod test_kinds;
#[cfg(test)]
mod tests;
