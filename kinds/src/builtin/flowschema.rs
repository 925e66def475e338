//! `flowcontrol.apiserver.k8s.io/v1` FlowSchema (kube: `pkg/registry/flowcontrol/flowschema`):
//! cluster-scoped, with a status the APF controller writes through `/status` (the `Dangling`
//! condition), generation counting spec changes.

use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource, meta_update};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::flowcontrol;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", FlowSchemas)
        .cluster_scoped()
        .subresources(&[Subresource::Status])
        .schema::<FlowSchema>()
}

struct FlowSchemas;

impl Strategy for FlowSchemas {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's status strategy keeps all of the stored metadata but the managed fields.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::KeptAll
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::flowcontrol::default_flow_schema(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        flowcontrol::flow_schema(obj)
    }

    /// `ValidateFlowSchemaUpdate` is `ValidateFlowSchema` of the new object, metadata included.
    fn validate_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.validate(def, new));
        out
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(flowcontrol::flow_schema_status(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::FLOW_SCHEMAS)
    }
}
