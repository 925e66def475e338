//! `v1` ComponentStatus (deprecated since kube 1.19): read-only and stored nowhere. Each get or
//! list probes what kube probes: the scheduler's and the controller manager's `/healthz` on
//! their secure ports, and every storage backend as `etcd-<i>`.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ComponentStatus;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::action::{Action, ActionContext};
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::table::Printer;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "componentstatuses", "ComponentStatus", ComponentStatuses)
        .cluster_scoped()
        .short_names(&["cs"])
        .by_gateway(&["get", "list"])
        .deprecated("v1 ComponentStatus is deprecated in v1.19+")
        .schema::<ComponentStatus>()
}

/// The kind's strategy (its printer) and its action (the probes).
pub(super) struct ComponentStatuses;

impl Strategy for ComponentStatuses {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::COMPONENT_STATUSES)
    }
}

/// The components kube probes over HTTPS, with their secure ports.
const COMPONENTS: [(&str, u16); 2] = [("scheduler", 10259), ("controller-manager", 10257)];

#[async_trait(?Send)]
impl Action for ComponentStatuses {
    async fn list(&self, ctx: &dyn ActionContext, _: &Target) -> Result<Vec<Value>, ApiError> {
        let mut out = Vec::new();
        for (name, port) in COMPONENTS {
            let address = format!("127.0.0.1:{port}");
            let url = format!("https://{address}/healthz");
            let condition = match ctx.dial(&address).await {
                Ok(()) => json!({
                    "type": "Healthy", "status": "Unknown",
                    "error": format!("{url} answers, but this server does not speak HTTPS to components")
                }),
                Err(e) => json!({"type": "Healthy", "status": "False", "message": format!("Get \"{url}\": {e}")}),
            };
            out.push(component(name, condition));
        }
        for (i, health) in ctx.storage_health().await.into_iter().enumerate() {
            let condition = match health {
                Ok(()) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
                Err(e) => json!({"type": "Healthy", "status": "False", "error": e}),
            };
            out.push(component(&format!("etcd-{i}"), condition));
        }
        Ok(out)
    }

    /// kube answers an unknown component with a plain error (500), not 404.
    async fn get(&self, ctx: &dyn ActionContext, target: &Target) -> Result<Value, ApiError> {
        let all = self.list(ctx, target).await?;
        all.into_iter()
            .find(|c| c["metadata"]["name"] == target.name.as_str())
            .ok_or_else(|| ApiError::unknown(format!("Component not found: {}", target.name)))
    }
}

fn component(name: &str, condition: Value) -> Value {
    json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name}, "conditions": [condition]})
}
