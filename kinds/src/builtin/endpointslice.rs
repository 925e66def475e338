//! `discovery.k8s.io/v1` EndpointSlice (kube: `pkg/registry/discovery/endpointslice`).

use k8s_openapi::api::discovery::v1::EndpointSlice;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::{cluster, networking};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", EndpointSlices)
        .schema::<EndpointSlice>()
}

struct EndpointSlices;

impl Strategy for EndpointSlices {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        networking::endpoint_slice(obj, false)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = networking::endpoint_slice(new, true);
        out.extend(cluster::endpoint_slice_update(new, old));
        out
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_endpoint_slice(obj);
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::ENDPOINT_SLICES)
    }
}
