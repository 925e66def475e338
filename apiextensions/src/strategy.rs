//! The strategy of one served version of a custom resource: kube's `customResourceStrategy`,
//! driven by the version's structural schema.

use std::sync::Arc;

use apimachinery::catalogue::{Converter, ResourceDef, StatusMetadata, Strategy, meta_create, meta_update};
use apimachinery::error::{ApiError, Cause};
use apimachinery::scale::ScalePaths;
use apimachinery::selector::fields::FieldLabels;
use apimachinery::selector::selectable;
use apimachinery::table::Printer;
use apimachinery::validation::field::{self, Bad, Path};
use serde_json::Value;

use crate::printer::ColumnPrinter;
use crate::schema;
use crate::schema::cel::Validator;

/// The cause types after which kube leaves the rules unchecked (`hasBlockingErr`): the object
/// is not of the shape the rules were compiled for.
const BLOCKING: [&str; 5] =
    ["FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"];

/// How one version of a custom resource behaves.
pub struct CustomResource {
    /// The version's `openAPIV3Schema`, if it has one.
    pub(crate) schema: Option<Arc<Value>>,
    /// The schema server-side apply walks objects with: `schema` with `metadata` typed as
    /// `ObjectMeta` (kube's typed custom resources know labels as a map and owner references
    /// as a list keyed by uid).
    pub(crate) field_schema: Arc<Value>,
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
    /// The schema's `x-kubernetes-validations` rules, compiled once for every request.
    pub(crate) rules: Option<Validator>,
}

impl CustomResource {
    /// [`CustomResource::field_schema`] of a version's `openAPIV3Schema`.
    pub(crate) fn typed_schema(schema: Option<&Value>) -> Arc<Value> {
        let mut typed = schema.cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}));
        if let Some(o) = typed.as_object_mut() {
            let properties = o.entry("properties").or_insert_with(|| serde_json::json!({}));
            if let Some(p) = properties.as_object_mut() {
                let meta = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
                p.insert("metadata".into(), serde_json::json!({"$ref": meta}));
                p.insert("apiVersion".into(), serde_json::json!({"type": "string"}));
                p.insert("kind".into(), serde_json::json!({"type": "string"}));
            }
        }
        Arc::new(typed)
    }

    fn schema_causes(&self, obj: &Value) -> Vec<Cause> {
        self.schema.as_deref().map(|s| schema::validate(s, obj)).unwrap_or_default()
    }

    /// `out`, the causes found so far, and then those of the rules, which kube checks last
    /// and only on an object whose shape is right.
    fn with_rules(&self, mut out: Vec<Cause>, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let Some(rules) = &self.rules else { return out };
        if out.iter().any(|c| BLOCKING.contains(&c.reason.as_str())) {
            out.push(field::invalid(
                &Path::new("<nil>"),
                Bad::s("null"),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            out.extend(rules.validate(obj, old));
        }
        out
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
    fn field_schema(&self) -> Option<&Value> {
        Some(&self.field_schema)
    }

    /// kube's custom resource status strategy: the stored object with the written status.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::KeptAll
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        let (Some(new_map), Some(old_map)) = (new.as_object_mut(), old.as_object()) else { return };
        let keep = |k: &str| matches!(k, "status" | "metadata" | "apiVersion" | "kind");
        new_map.retain(|k, _| keep(k));
        for (k, v) in old_map {
            if !keep(k) {
                new_map.insert(k.clone(), v.clone());
            }
        }
    }

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

    fn list_items_keep_type(&self) -> bool {
        true
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

    fn validate(&self, def: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = meta_create(def, obj);
        out.extend(self.schema_causes(obj));
        self.with_rules(out, obj, None)
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.schema_causes(new));
        self.with_rules(out, new, Some(old))
    }

    fn validate_status_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_update(def, new, old)
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::served::definitions;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Cluster",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 10}},
                    "x-kubernetes-validations": [{"rule": "self.size % 2 == 0", "message": "size must be even"}]},
                "status": {"type": "object", "properties": {"ready": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "!has(oldSelf.ready) || self.ready >= oldSelf.ready",
                        "message": "ready may not go down"}]},
            }}}}]}})
    }

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    fn messages(causes: Vec<apimachinery::error::Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn rules_run_after_the_schema_and_not_on_an_object_of_the_wrong_shape() {
        let def = &definitions(&crd(), None)[0];
        assert_eq!(
            messages(def.validate(&widget(json!({"size": 3})))),
            ["spec: Invalid value: \"object\": size must be even"]
        );
        assert_eq!(
            messages(def.validate(&widget(json!({"size": 11})))),
            [
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
                "spec: Invalid value: \"object\": size must be even"
            ],
            "a value out of range is no reason to skip the rules"
        );
        assert_eq!(
            messages(def.validate(&widget(json!({"size": "big"})))),
            [
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ]
        );
    }

    #[test]
    fn status_updates_run_transition_rules_against_the_old_object() {
        let def = &definitions(&crd(), None)[0];
        let mut old = widget(json!({"size": 2}));
        old["metadata"]["resourceVersion"] = "1".into();
        old["status"] = json!({"ready": 2});
        let mut new = old.clone();
        new["status"]["ready"] = 1.into();
        assert_eq!(
            messages(def.validate_status_update(&new, &old)),
            ["status: Invalid value: \"object\": ready may not go down"]
        );
        new["status"]["ready"] = 3.into();
        assert!(def.validate_status_update(&new, &old).is_empty());
    }
}
