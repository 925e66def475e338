//! `batch/v1` Job (kube: `pkg/registry/batch/job`): its selector and pod labels are generated
//! on create.

use k8s_openapi::api::batch::v1::Job;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::object::field;
use apimachinery::selector::FieldLabels;
use apimachinery::table::Printer;
use validation::{apps, batch};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("batch", "v1", "jobs", "Job", Jobs)
        .categories(&["all"])
        .subresources(&[Subresource::Status])
        .schema::<Job>()
}

struct Jobs;

impl Strategy for Jobs {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_job(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::prepare_job_for_create(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        batch::validate_job(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        batch::validate_job_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_workload_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::JOBS
    }

    /// `status.successful` is the number of succeeded pods.
    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        let succeeded = field(obj, "status.succeeded").and_then(Value::as_i64).unwrap_or(0);
        out.push(("status.successful", succeeded.to_string()));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::JOBS)
    }
}
