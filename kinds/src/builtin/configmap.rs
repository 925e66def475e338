//! `v1` ConfigMap (kube: `pkg/registry/core/configmap`).

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "configmaps", "ConfigMap", ConfigMaps).short_names(&["cm"]).schema::<ConfigMap>()
}

struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_config_map(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_config_map_update(new, old)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CONFIG_MAPS)
    }
}
