//! `v1` ResourceQuota (kube: `pkg/registry/core/resourcequota`).

use k8s_openapi::api::core::v1::ResourceQuota;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::quota;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "resourcequotas", "ResourceQuota", ResourceQuotas)
        .short_names(&["quota"])
        .subresources(&[Subresource::Status])
        .schema::<ResourceQuota>()
}

struct ResourceQuotas;

impl Strategy for ResourceQuotas {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        quota::resource_quota(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        quota::resource_quota_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(quota::resource_quota_status(new));
        out
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::RESOURCE_QUOTAS)
    }
}
