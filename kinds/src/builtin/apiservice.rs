//! `apiregistration.k8s.io/v1` APIService (kube-aggregator: `pkg/registry/apiservice`,
//! `pkg/apis/apiregistration/validation`, `v1/defaults.go`): cluster-scoped, with a status the
//! aggregator's availability controller writes, in the `api-extensions` category.
//!
//! Create clears the status and marks a local APIService (no `spec.service`) available at
//! once; updates keep the status, `/status` writes keep the spec and the metadata a status
//! writer has no business changing. The table is kube's: name, service, availability, age.

use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use serde_json::Value;

use crate::apiregistration::{self, Availability};
use crate::printers::{AGE, NAME, StaticPrinter, age, col, name};
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::{Printer, Row};
use validation::apiregistration as validation;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(apiregistration::GROUP, "v1", "apiservices", "APIService", ApiServices)
        .cluster_scoped()
        // kube's aggregator writes APIServices as JSON, under their group.
        .storage_path("apiregistration.k8s.io/apiservices")
        .stored_as_json()
        .categories(&["api-extensions"])
        .subresources(&[Subresource::Status])
        .schema::<APIService>()
}

struct ApiServices;

/// kube's `ConvertToTable` for APIServices.
static PRINTER: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Service", "string", "The reference to the service that hosts this API endpoint."),
        col("Available", "string", "Whether this service is available."),
        AGE,
    ],
    row: |obj, now| Row::cells(vec![name(obj), service(obj).into(), available(obj).into(), age(obj, now)]),
};

/// `Local`, or the Service's `namespace/name`.
fn service(obj: &Value) -> String {
    match obj.pointer("/spec/service").filter(|s| s.is_object()) {
        Some(s) => format!("{}/{}", text(s, "namespace"), text(s, "name")),
        None => "Local".into(),
    }
}

/// `True`, `<status> (<reason>)`, or the bare status; `Unknown` without the condition.
fn available(obj: &Value) -> String {
    let Some(c) = apiregistration::available_condition(obj) else { return "Unknown".into() };
    let (status, reason) = (text(c, "status"), text(c, "reason"));
    if status == "True" || reason.is_empty() { status.to_string() } else { format!("{status} ({reason})") }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl Strategy for ApiServices {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// `SetDefaults_ServiceReference`: port 443.
    fn defaults(&self, obj: &mut Value) {
        if let Some(service) = obj.pointer_mut("/spec/service").and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), 443.into());
        }
    }

    /// The status is the controller's: cleared, and a local APIService is available from the
    /// start.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        if obj.pointer("/spec/service").is_none_or(Value::is_null) {
            apiregistration::set_availability(obj, &Availability::local(), &apimachinery::object::now_rfc3339());
        }
    }

    /// A status writer changes only the status: labels, annotations, finalizers and owners
    /// stay as stored.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Kept(&["labels", "annotations", "finalizers", "ownerReferences"])
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        validation::api_service(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        validation::api_service_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        validation::api_service_status_update(new, old)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&PRINTER)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn apiregistration_create_clears_status_and_marks_local_ones_available() {
        let def = definition();
        let mut local = json!({"metadata": {"name": "v1.example.com"}, "spec": {"group": "example.com",
            "version": "v1"}, "status": {"conditions": [{"type": "Available", "status": "False"}]}});
        def.prepare_for_create(&mut local);
        let c = apiregistration::available_condition(&local).unwrap();
        assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("True"), Some("Local")));
        assert_eq!(c["message"], "Local APIServices are always available");
        let mut remote = json!({"spec": {"service": {"namespace": "ns", "name": "svc"}}, "status": {"x": 1}});
        def.apply_defaults(&mut remote);
        def.prepare_for_create(&mut remote);
        assert!(remote.get("status").is_none());
        assert_eq!(remote["spec"]["service"]["port"], 443);
    }

    #[test]
    fn apiregistration_updates_keep_status_and_status_writes_keep_the_rest() {
        let def = definition();
        let old = json!({"metadata": {"name": "v1.x", "labels": {"a": "b"}}, "spec": {"version": "v1"},
            "status": {"conditions": []}});
        let mut new = json!({"metadata": {"name": "v1.x"}, "spec": {"version": "v2"}, "status": {"y": 1}});
        def.prepare_for_update(&mut new, &old);
        assert_eq!((new["spec"]["version"].as_str(), &new["status"]), (Some("v2"), &old["status"]));
        let mut status = json!({"metadata": {"name": "v1.x", "labels": {"c": "d"}}, "spec": {}, "status": {"y": 1}});
        def.prepare_for_status_update(&mut status, &old);
        assert_eq!((&status["metadata"]["labels"], &status["spec"]), (&old["metadata"]["labels"], &old["spec"]));
        assert_eq!(status["status"], json!({"y": 1}));
    }

    #[test]
    fn apiregistration_table_shows_service_and_availability_as_kube() {
        let now = chrono::Utc::now();
        let cells = |obj: Value| PRINTER.row(&obj, now).cells;
        let local = json!({"metadata": {"name": "v1."}, "spec": {}, "status": {"conditions": [
            {"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(cells(local)[1..3], [json!("Local"), json!("True")]);
        let down = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"service": {"namespace":
            "kube-system", "name": "metrics-server", "port": 443}}, "status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck"}]}});
        assert_eq!(cells(down)[1..3], [json!("kube-system/metrics-server"), json!("False (FailedDiscoveryCheck)")]);
        assert_eq!(cells(json!({"metadata": {"name": "v1.x"}}))[2], "Unknown");
        let columns: Vec<&str> = PRINTER.columns().iter().map(|c| c.name).collect();
        assert_eq!(columns, ["Name", "Service", "Available", "Age"]);
    }
}
