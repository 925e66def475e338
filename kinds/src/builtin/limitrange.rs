//! `v1` LimitRange (kube: `pkg/registry/core/limitrange`).

use k8s_openapi::api::core::v1::LimitRange;
use serde_json::Value;

use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use validation::quota;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "limitranges", "LimitRange", LimitRanges).short_names(&["limits"]).schema::<LimitRange>()
}

struct LimitRanges;

impl Strategy for LimitRanges {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        quota::limit_range(obj)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_limit_range(obj);
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}
