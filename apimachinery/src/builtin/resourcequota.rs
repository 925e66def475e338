//! `v1` ResourceQuota (kube: `pkg/registry/core/resourcequota`).

use k8s_openapi::api::core::v1::ResourceQuota;
use serde_json::{Value, json};

use crate::kinds::{ResourceDef, Strategy, Subresource};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "resourcequotas", "ResourceQuota", ResourceQuotas)
        .short_names(&["quota"])
        .subresources(&[Subresource::Status])
        .schema::<ResourceQuota>()
}

struct ResourceQuotas;

impl Strategy for ResourceQuotas {
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::RESOURCE_QUOTAS)
    }
}
