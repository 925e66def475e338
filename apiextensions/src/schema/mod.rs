//! A CRD version's structural schema (`openAPIV3Schema`, a `JSONSchemaProps` as JSON) applied
//! to a custom resource, as kube-apiserver 1.30's apiextensions-apiserver applies it.
//!
//! - [`prune`]: unknown fields removed (structural pruning, `metadata` as `ObjectMeta`), with
//!   the paths strict field validation reports.
//! - [`apply_defaults`]: `default`s filled in top-down.
//! - [`validate`]: kube-openapi's schema validation, then the embedded-resource and
//!   list-type checks, as kube's custom resource strategy runs them.
//!
//! kube decodes, then prunes, then defaults, then validates; callers do the same. The CEL
//! rules of `x-kubernetes-validations` are checked last, by [`cel::Validator`].
//!
//! # Depth
//! Go's stacks grow; ours do not. Every walk here stops at [`MAX_DEPTH`] levels of nesting (an
//! `anyOf`/`allOf`/`oneOf`/`not` branch counts as a level too): [`validate`] rejects an object
//! nested deeper with a single `Forbidden` cause (it checks the depth first, without
//! recursion), and [`prune`] and [`apply_defaults`] leave whatever is deeper untouched. kube
//! itself has no such bound below its JSON decoder's 10,000 levels; objects here never nest
//! deeper than [`apimachinery::object::MAX_NESTING`] (what a body may, and what a patch may make) anyway.
//!
//! # Layout
//! - `validate`: kube-openapi's validators and kube's conversion of their errors.
//! - `formats`: the string formats CRD validation checks.
//! - `pattern`: Go regular expressions on the `regex` crate, cached.
//! - `listtype`: `x-kubernetes-list-type` set/map uniqueness.
//! - `objectmeta`: embedded resources, and `metadata` as Go's `ObjectMeta` decodes it.
//! - `prune`, `defaults`: the mutating passes.
//! - `render`: Go's printing of decoded values in messages.
//! - `node`: reading schema nodes.

pub mod cel;
mod defaults;
mod formats;
mod listtype;
mod node;
mod objectmeta;
mod pattern;
mod prune;
mod render;
mod validate;

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Path};
use serde_json::Value;

use node::Node;

/// How deep objects (and schema branches) are walked; see the module docs.
pub const MAX_DEPTH: usize = 200;

/// The cause for a value nested deeper than [`MAX_DEPTH`].
fn too_deep(path: &Path) -> Cause {
    field::forbidden(path, &format!("must not nest deeper than {MAX_DEPTH} levels"))
}

/// Whether `v` nests deeper than [`MAX_DEPTH`] (the root at depth 0).
fn too_deeply_nested(v: &Value) -> bool {
    apimachinery::object::nesting(v) > MAX_DEPTH + 1
}

/// Validation of a custom resource against its schema, as kube's apiextensions-apiserver does
/// (kube-openapi's validate package plus apiextensions' own list-type/map-type and
/// embedded-resource checks). Field paths in causes like "spec.replicas", "spec.items[1]",
/// "spec.labels[key]" as kube prints them; messages exactly as kube 1.30 words them.
///
/// Causes come in kube's order: schema validation (kube-openapi names map values with dots,
/// `spec.labels.key`), then embedded resources, then list sets and maps (these two name map
/// values `spec.labels[key]`). A `null` or non-object schema validates nothing.
pub fn validate(schema: &serde_json::Value, obj: &serde_json::Value) -> Vec<Cause> {
    let Some(s) = Node::of(schema) else { return Vec::new() };
    if too_deeply_nested(obj) {
        return vec![too_deep(&Path::new(""))];
    }
    let mut out = validate::schema_errors(s, obj);
    out.extend(objectmeta::embedded_errors(s, obj));
    out.extend(listtype::list_errors(s, obj));
    out
}

/// Pruning: removes fields the schema does not declare (kube's structural pruning), honouring
/// x-kubernetes-preserve-unknown-fields, additionalProperties, x-kubernetes-embedded-resource
/// (apiVersion, kind, metadata kept; metadata pruned to ObjectMeta's fields), and the root's
/// apiVersion/kind/metadata which are always kept. Returns the pruned paths in the form kube's
/// strict field validation reports them for custom resources (so the caller can write
/// `unknown field "spec.foo"`), in a deterministic order.
///
/// As kube, the root `metadata` also round-trips through `ObjectMeta` (`metadata.foo` is
/// reported first), and non-nullable `null`s without a default are dropped (not reported).
pub fn prune(schema: &serde_json::Value, obj: &mut serde_json::Value) -> Vec<String> {
    prune::prune_all(Node::of(schema), obj)
}

/// Defaulting from `default` in the schema (kube's structural defaulting: applied top-down, to
/// missing fields only, also inside array items and additionalProperties values; a null value
/// with nullable:false is handled as kube does: replaced by the default).
pub fn apply_defaults(schema: &serde_json::Value, obj: &mut serde_json::Value) {
    defaults::default(obj, Node::of(schema), 0);
}
