//! The strategy of one served version of a custom resource: kube's `customResourceStrategy`,
//! driven by the version's structural schema.

use std::sync::Arc;

use apimachinery::error::{ApiError, Cause};
use apimachinery::kinds::{Converter, ResourceDef, Strategy, meta_update};
use apimachinery::scale::ScalePaths;
use apimachinery::selector::fields::FieldLabels;
use apimachinery::selector::selectable;
use apimachinery::table::Printer;
use serde_json::Value;

use crate::printer::ColumnPrinter;
use crate::schema;

/// How one version of a custom resource behaves.
pub struct CustomResource {
    /// The version's `openAPIV3Schema`, if it has one.
    pub(crate) schema: Option<Arc<Value>>,
    /// Whether the version serves `/status` (then writes to the main resource keep the status).
    pub(crate) status: bool,
    /// `group/version` of this version.
    pub(crate) api_version: String,
    /// The storage version's `group/version`, when the CRD serves several versions: objects
    /// may then be stored in any of them, and conversion (strategy `None`) rewrites
    /// `apiVersion` both ways.
    pub(crate) storage_version: Option<String>,
    /// The `additionalPrinterColumns` printer.
    pub(crate) printer: ColumnPrinter,
    /// Where `/scale` reads and writes, when the version serves it.
    pub(crate) scale: Option<ScalePaths>,
    /// The version's `selectableFields`, as field labels (`spec.color`).
    pub(crate) selectable: Vec<&'static str>,
    /// What field selectors may name: the metadata labels and `selectable`.
    pub(crate) field_labels: &'static FieldLabels,
    /// The CRD's conversion webhook, when its strategy is `Webhook` (shared by its versions).
    pub(crate) converter: Option<Arc<dyn Converter>>,
}

impl CustomResource {
    fn schema_causes(&self, obj: &Value) -> Vec<Cause> {
        self.schema.as_deref().map(|s| schema::validate(s, obj)).unwrap_or_default()
    }
}

/// Everything but `metadata` (and `status`, when it has its own subresource): what a change
/// to bumps `metadata.generation`, as kube's strategy compares them.
fn counted(obj: &Value, status: bool) -> Vec<(&String, &Value)> {
    obj.as_object()
        .map(|m| m.iter().filter(|(k, _)| *k != "metadata" && !(status && *k == "status")).collect())
        .unwrap_or_default()
}

impl Strategy for CustomResource {
    fn defaults(&self, obj: &mut Value) {
        if let Some(s) = &self.schema {
            schema::apply_defaults(s, obj);
        }
    }

    fn scale_paths(&self) -> ScalePaths {
        self.scale.clone().unwrap_or_default()
    }

    fn takes_strategic_merge_patch(&self) -> bool {
        false
    }

    fn defaults_on_read(&self) -> bool {
        self.schema.is_some()
    }

    fn prune_unknown_fields(&self, obj: &mut Value) -> Option<Vec<String>> {
        Some(match &self.schema {
            Some(s) => schema::prune(s, obj),
            None => Vec::new(),
        })
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        self.schema_causes(obj)
    }

    fn validate_status_update(&self, _def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.schema_causes(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        counted(new, self.status) != counted(old, self.status)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&self.printer)
    }

    fn field_labels(&self) -> &'static FieldLabels {
        self.field_labels
    }

    /// kube renders a selectable field with `fmt.Sprint` of the value found, `""` when absent.
    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        out.extend(self.selectable.iter().map(|f| (*f, selectable::text(obj, f))));
    }

    fn to_storage(&self, mut obj: Value) -> Result<Value, ApiError> {
        if let Some(storage) = &self.storage_version
            && obj.is_object()
        {
            obj["apiVersion"] = storage.clone().into();
        }
        Ok(obj)
    }

    fn converter(&self) -> Option<Arc<dyn Converter>> {
        self.converter.clone()
    }

    fn to_served(&self, obj: &Value) -> Option<Value> {
        if self.storage_version.is_none() || obj.get("apiVersion").and_then(Value::as_str) == Some(&self.api_version) {
            return None;
        }
        let mut out = obj.clone();
        out["apiVersion"] = self.api_version.clone().into();
        Some(out)
    }
}
