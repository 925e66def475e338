//! `v1` ComponentStatus (`/api/v1/componentstatuses`, deprecated in kube since 1.19): read-only,
//! nothing stored. Each request probes what kube probes: the scheduler's and the controller
//! manager's `/healthz` on their secure ports, and every storage backend as `etcd-<i>`.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::error::ApiError;
use apimachinery::table;
use kinds::printers;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{Offer, View, negotiate, partial_metadata, respond, table_options};

/// What `GET /healthz` on a component's secure port reports, as a Healthy condition.
async fn probe_http(name: &str, port: u16) -> Value {
    let address = format!("127.0.0.1:{port}");
    let url = format!("https://{address}/healthz");
    let condition = match tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(&address)).await {
        Ok(Ok(_)) => {
            json!({"type": "Healthy", "status": "Unknown", "error": format!("{url} answers, but this server does not speak HTTPS to components")})
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => json!({
            "type": "Healthy", "status": "False",
            "message": format!("Get \"{url}\": dial tcp {address}: connect: connection refused")
        }),
        Ok(Err(e)) => {
            json!({"type": "Healthy", "status": "False", "message": format!("Get \"{url}\": dial tcp {address}: {e}")})
        }
        Err(_) => {
            json!({"type": "Healthy", "status": "False", "message": format!("Get \"{url}\": dial tcp {address}: i/o timeout")})
        }
    };
    component(name, condition)
}

fn component(name: &str, condition: Value) -> Value {
    json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name}, "conditions": [condition]})
}

async fn statuses(ctx: &RequestContext<'_>) -> Vec<Value> {
    let mut out = vec![probe_http("scheduler", 10259).await, probe_http("controller-manager", 10257).await];
    for (i, storage) in ctx.server.router.backends().iter().enumerate() {
        let condition = match tokio::time::timeout(Duration::from_secs(20), storage.current_revision()).await {
            Ok(Ok(_)) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
            Ok(Err(e)) => json!({"type": "Healthy", "status": "False", "error": e.to_string()}),
            Err(_) => {
                json!({"type": "Healthy", "status": "False", "error": format!("{} did not answer", storage.describe())})
            }
        };
        out.push(component(&format!("etcd-{i}"), condition));
    }
    out
}

/// GET of the collection or of one component.
pub async fn serve(ctx: &RequestContext<'_>) -> Result<HttpResponse, ApiError> {
    let info = ctx.info;
    let output = negotiate(ctx.header("Accept"), Offer { tables: true, metadata: true, protobuf: true })?;
    let all = statuses(ctx).await;
    let now = chrono::Utc::now();
    let response = if info.name.is_empty() {
        match output.view {
            View::Table => {
                let refs: Vec<&Value> = all.iter().collect();
                let t = table::to_table(
                    Some(&printers::COMPONENT_STATUSES),
                    &refs,
                    &table_options(ctx)?,
                    table::ListMetaInfo::default(),
                    now,
                );
                respond(StatusCode::OK, output, &t, ctx.pretty())
            }
            View::MetadataList => {
                let items: Vec<Value> = all.iter().map(partial_metadata).collect();
                let list = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {}, "items": items});
                respond(StatusCode::OK, output, &list, ctx.pretty())
            }
            _ => {
                let items: Vec<Value> = all
                    .into_iter()
                    .map(|mut c| {
                        if let Some(m) = c.as_object_mut() {
                            m.remove("kind");
                            m.remove("apiVersion");
                        }
                        c
                    })
                    .collect();
                let list = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
                respond(StatusCode::OK, output, &list, ctx.pretty())
            }
        }
    } else {
        let Some(one) = all.into_iter().find(|c| c["metadata"]["name"] == info.name.as_str()) else {
            return Err(ApiError::unknown(format!("Component not found: {}", info.name)));
        };
        match output.view {
            View::Table => {
                let t = table::object_to_table(Some(&printers::COMPONENT_STATUSES), &one, &table_options(ctx)?, now);
                respond(StatusCode::OK, output, &t, ctx.pretty())
            }
            View::Metadata => respond(StatusCode::OK, output, &partial_metadata(&one), ctx.pretty()),
            _ => respond(StatusCode::OK, output, &one, ctx.pretty()),
        }
    };
    Ok(response)
}
