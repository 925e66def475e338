//! `flowcontrol.apiserver.k8s.io/v1` FlowSchema and PriorityLevelConfiguration (kube:
//! `pkg/registry/flowcontrol/flowschema` and `.../prioritylevelconfiguration`): cluster-scoped,
//! with a status the APF controller writes through `/status` (a FlowSchema's `Dangling`
//! condition), generation counting spec changes. The two registries differ only in their
//! defaults, validation and printer, so one strategy carries those. As in kube 1.30, a limited
//! level may have zero nominal concurrency shares.

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource, meta_update};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::flowcontrol;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

pub(super) fn flow_schemas() -> ResourceDef {
    let strategy = Apf {
        defaults: crate::defaults::flowcontrol::default_flow_schema,
        validate: flowcontrol::flow_schema,
        validate_status: flowcontrol::flow_schema_status,
        printer: &printers::FLOW_SCHEMAS,
    };
    ResourceDef::new(GROUP, "v1", "flowschemas", "FlowSchema", strategy)
        .cluster_scoped()
        .subresources(&[Subresource::Status])
        .schema::<FlowSchema>()
}

pub(super) fn priority_level_configurations() -> ResourceDef {
    let strategy = Apf {
        defaults: crate::defaults::flowcontrol::default_priority_level_configuration,
        validate: flowcontrol::priority_level_configuration,
        validate_status: flowcontrol::priority_level_configuration_status,
        printer: &printers::PRIORITY_LEVEL_CONFIGURATIONS,
    };
    ResourceDef::new(GROUP, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", strategy)
        .cluster_scoped()
        .subresources(&[Subresource::Status])
        .schema::<PriorityLevelConfiguration>()
}

/// The strategy of both kinds: what differs between them is data.
struct Apf {
    defaults: fn(&mut Value),
    validate: fn(&Value) -> Vec<Cause>,
    validate_status: fn(&Value) -> Vec<Cause>,
    printer: &'static (dyn Printer + Sync),
}

impl Strategy for Apf {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's status strategy keeps all of the stored metadata but the managed fields.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::KeptAll
    }

    fn defaults(&self, obj: &mut Value) {
        (self.defaults)(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        (self.validate)(obj)
    }

    /// `Validate*Update` is the create validation of the new object, metadata included.
    fn validate_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.validate(def, new));
        out
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend((self.validate_status)(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(self.printer)
    }
}
