//! `node.k8s.io/v1` RuntimeClass (kube: `pkg/registry/node/runtimeclass`).

use k8s_openapi::api::node::v1::RuntimeClass;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", RuntimeClasses)
        .cluster_scoped()
        .schema::<RuntimeClass>()
}

struct RuntimeClasses;

impl Strategy for RuntimeClasses {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::runtime_class(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        cluster::runtime_class_update(new, old)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::RUNTIME_CLASSES)
    }
}
