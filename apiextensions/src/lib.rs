//! Custom resources: serving the kinds that CustomResourceDefinitions declare.
//!
//! kube-apiserver serves custom resources from `apiextensions-apiserver`, a delegate with its
//! own handlers. Here a CRD becomes ordinary catalogue entries: one `ResourceDef` per served
//! version, whose strategy validates, prunes and defaults objects from the version's structural
//! schema. The registry, the cacher and REST serve them like any built-in kind.
//!
//! - [`schema`]: a structural schema applied to an object: validation with kube's field
//!   errors, pruning of unknown fields, defaulting.

pub mod schema;
