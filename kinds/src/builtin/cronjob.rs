//! `batch/v1` CronJob (kube: `pkg/registry/batch/cronjob`).

use k8s_openapi::api::batch::v1::CronJob;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::batch;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("batch", "v1", "cronjobs", "CronJob", CronJobs)
        .short_names(&["cj"])
        .categories(&["all"])
        .subresources(&[Subresource::Status])
        .schema::<CronJob>()
}

struct CronJobs;

impl Strategy for CronJobs {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_cronjob(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        batch::validate_cronjob(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        batch::validate_cronjob_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CRON_JOBS)
    }
}
