//! `coordination.k8s.io/v1` Lease (kube: `pkg/registry/coordination/lease`,
//! `pkg/apis/coordination/validation`, and its printer in `pkg/printers/internalversion`).
//!
//! The example of a kind whose whole behaviour lives in its one file: definition, validation
//! and printer. It has no defaults, no status and no selectable fields beyond the metadata
//! ones, and may be created by PUT (leader election does that).

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::{Map, Value};

use crate::printers::{AGE, NAME, StaticPrinter, age, col, name, s};
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::{Printer, Row};
use apimachinery::validation::field::{self, Bad, Path};
use validation::{meta, names};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease", Leases).schema::<Lease>()
}

struct Leases;

/// `SwaggerDoc()` of `coord.LeaseSpec.holderIdentity`, the Holder column's description.
const HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease.";

/// kube's Lease printer: name, holder, age.
static PRINTER: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Holder", "string", HOLDER), AGE],
    row: |obj, now| Row::cells(vec![name(obj), s(obj, "spec.holderIdentity").into(), age(obj, now)]),
};

fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `ValidateLeaseSpec`: a positive duration, non-negative transitions.
fn validate_spec(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    if let Some(d) = obj.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).filter(|d| *d <= 0) {
        out.push(field::invalid(&sp.child("leaseDurationSeconds"), Bad::Int(d), "must be greater than 0"));
    }
    if let Some(t) = obj.pointer("/spec/leaseTransitions").and_then(Value::as_i64).filter(|t| *t < 0) {
        out.push(field::invalid(&sp.child("leaseTransitions"), Bad::Int(t), "must be greater than or equal to 0"));
    }
    out
}

impl Strategy for Leases {
    /// `ValidateLease`: apimachinery's metadata rules (without the kube finalizer check), then
    /// the spec.
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = meta::validate_object_meta(
            metadata(obj),
            true,
            names::name_is_dns_subdomain,
            &Path::new("metadata"),
            false,
        );
        out.extend(validate_spec(obj));
        out
    }

    /// `ValidateLeaseUpdate`.
    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta::validate_object_meta_update(metadata(new), metadata(old), &Path::new("metadata"), false);
        out.extend(validate_spec(new));
        out
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&PRINTER)
    }
}
