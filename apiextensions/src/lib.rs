//! Custom resources: serving the kinds that CustomResourceDefinitions declare.
//!
//! kube-apiserver serves custom resources from `apiextensions-apiserver`, a delegate with its
//! own handlers. Here a CRD becomes ordinary catalogue entries: one `ResourceDef` per served
//! version, whose strategy validates, prunes and defaults objects from the version's structural
//! schema. The registry, the cacher and REST serve them like any built-in kind; the gateway's
//! CRD controller adds and removes the entries and keeps the CRD's status.
//!
//! # Layout
//! - [`schema`]: a structural schema applied to an object: validation with kube's field
//!   errors, pruning of unknown fields, defaulting.
//! - [`served`]: the definitions a CRD serves, in kube's version priority.
//! - [`strategy`]: how one served version behaves (kube's `customResourceStrategy`).
//! - [`printer`]: `additionalPrinterColumns` as a table printer.
//! - [`openapi`]: a CRD's versions in the OpenAPI documents, as kube's CRD builder shapes them.
//! - [`conversion`]: a CRD's conversion webhook (ConversionReview), checked as kube checks it.
//! - [`conditions`]: accepted names and the CRD's conditions, as kube's controllers set them.
//! - `intern`: a custom resource's names as the `&'static str`s the catalogue takes, interned so
//!   a CRD created and deleted again and again costs its strings once.

pub mod conditions;
pub mod conversion;
mod intern;
pub mod openapi;
pub mod printer;
pub mod schema;
pub mod served;
pub mod strategy;
