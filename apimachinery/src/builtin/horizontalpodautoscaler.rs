//! `autoscaling/v2` HorizontalPodAutoscaler (kube: `pkg/registry/autoscaling/horizontalpodautoscaler`),
//! stored at v2.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use serde_json::{Value, json};

use crate::kinds::{ResourceDef, Strategy, Subresource};

pub(super) fn v2() -> ResourceDef {
    ResourceDef::new("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", Autoscalers)
        .short_names(&["hpa"])
        .categories(&["all"])
        .subresources(&[Subresource::Status])
        .schema::<HorizontalPodAutoscaler>()
}

struct Autoscalers;

impl Strategy for Autoscalers {
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"currentReplicas": 0, "desiredReplicas": 0}));
    }
}
