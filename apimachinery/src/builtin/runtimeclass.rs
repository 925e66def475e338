//! `node.k8s.io/v1` RuntimeClass (kube: `pkg/registry/node/runtimeclass`).

use k8s_openapi::api::node::v1::RuntimeClass;

use serde_json::Value;

use crate::error::Cause;
use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};
use crate::validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", RuntimeClasses)
        .cluster_scoped()
        .schema::<RuntimeClass>()
}

struct RuntimeClasses;

impl Strategy for RuntimeClasses {
    fn validate(&self, def: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::DefaultStrategy.validate(def, obj);
        out.extend(cluster::runtime_class(obj));
        out
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::meta_update(new, old);
        out.extend(cluster::runtime_class_update(new, old));
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::RUNTIME_CLASSES)
    }
}
