//! `v1` Node (kube: `pkg/registry/core/node`), cluster-scoped, stored under `minions`.

use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::flag;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "nodes", "Node", Nodes)
        .cluster_scoped()
        .short_names(&["no"])
        .subresources(&[Subresource::Proxy, Subresource::Status])
        .storage_path("minions")
        .schema::<Node>()
}

struct Nodes;

impl Strategy for Nodes {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_node(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_node(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_node_update(new, old)
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::NODES
    }

    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        out.push(("spec.unschedulable", flag(obj, "spec.unschedulable")));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::NODES)
    }
}
