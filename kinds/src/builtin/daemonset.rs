//! `apps/v1` DaemonSet (kube: `pkg/registry/apps/daemonset`).

use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::apps;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "daemonsets", "DaemonSet", DaemonSets)
        .short_names(&["ds"])
        .categories(&["all"])
        .subresources(&[Subresource::Status])
        .schema::<DaemonSet>()
}

struct DaemonSets;

impl Strategy for DaemonSets {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_daemonset(obj);
    }

    /// Go serialises the non-omitempty counters even when zero.
    fn prepare_for_create(&self, obj: &mut Value) {
        let zero = json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0});
        crate::defaults::reset_status(obj, zero);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        apps::validate_daemonset(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_daemonset_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_workload_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::DAEMON_SETS)
    }
}
