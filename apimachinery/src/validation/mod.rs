//! The validation every kind shares, as `k8s.io/apimachinery` has it: field paths and cause
//! constructors ([`field`]), the string formats ([`names`]), and metadata, label selectors and
//! conditions ([`meta`]). The per-kind rules are in the `validation` crate.

pub mod field;
pub mod meta;
pub mod names;

/// `validation.IsNegativeErrorMsg`.
pub const NEGATIVE: &str = "must be greater than or equal to 0";
/// `validation.FieldImmutableErrorMsg`.
pub const IMMUTABLE: &str = "field is immutable";
