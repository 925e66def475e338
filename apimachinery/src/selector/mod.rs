//! Label and field selectors, parsed, matched and printed exactly as kube-apiserver v1.30 does
//! (`k8s.io/apimachinery/pkg/labels` and `k8s.io/apimachinery/pkg/fields`).
//!
//! Why exactness matters: clients compare error messages in tests, `kubectl` prints the server's
//! message verbatim, and the canonical string form of a selector is stored in API objects (the
//! `/scale` subresource's `status.selector`), so it must be byte-for-byte what kube would write.
//!
//! # Layout
//! - [`labels`]: [`LabelSelector`] — the `labelSelector` query parameter grammar (`a=b`, `a!=b`,
//!   `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`), `metav1.LabelSelector`
//!   (`matchLabels`/`matchExpressions`) conversion, matching and canonical printing.
//! - [`fields`]: [`FieldSelector`] — the `fieldSelector` grammar (`a=b`, `a==b`, `a!=b`, with
//!   backslash escaping), matching, and the per-kind field label conversion that decides which
//!   fields a resource accepts (and how the 400 is worded when it does not).
//!
//! Both selectors are plain values: parse once in the gateway, hand them to the cacher, which
//! can narrow a scan through [`FieldSelector::exact_match`] (`metadata.name=x`,
//! `metadata.namespace=y`) before matching each object.

// `ApiError` is the crate's one error currency (a whole Kubernetes Status); boxing it in these
// parse functions alone would only make them differ from every other fallible API.

pub mod fields;
pub mod labels;

pub mod selectable;

pub use fields::{FieldLabels, FieldOperator, FieldRequirement, FieldSelector};
pub use labels::{LabelSelector, Operator, Requirement};
