//! The subresources that act rather than show a view of the object: `pods/binding` (what a
//! scheduler posts), `pods/eviction` (a deletion that honours PodDisruptionBudgets, as kube's
//! eviction REST does), and the ones kube hands to a kubelet or an endpoint (`log`, `exec`,
//! `attach`, `portforward`, `proxy`). This server reaches no kubelet: those answer what kube
//! answers when none is reachable, after dialing the address kube would dial.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::catalogue::{ResourceDef, Subresource};
use apimachinery::error::{ApiError, Cause};
use apimachinery::messages::{DeleteObject, GetObject, ListObjects, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::{DeleteOptions, GetOptions, ListOptions, ReadAt, WriteOptions};
use apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{Offer, decode_body, input_format, negotiate, respond};

/// Serves an action or kubelet subresource.
pub async fn serve(
    ctx: &RequestContext<'_>,
    def: &Arc<ResourceDef>,
    target: Target,
    sub: Subresource,
    body: bytes::Bytes,
) -> Result<HttpResponse, ApiError> {
    match sub {
        Subresource::Binding => bind(ctx, def, target, &body).await,
        Subresource::Eviction => evict(ctx, def, target, &body).await,
        Subresource::Token => crate::tokens::request(ctx, def, target, &body).await,
        Subresource::Log | Subresource::Exec | Subresource::Attach | Subresource::PortForward => {
            kubelet(ctx, def, &target, sub).await
        }
        Subresource::Proxy => proxy(ctx, def, &target).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `{"kind":"Status","status":"Success","code":201}`, what kube answers a binding or eviction.
fn created(ctx: &RequestContext<'_>, def: &ResourceDef) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(respond(StatusCode::CREATED, output, &status, ctx.pretty()))
}

pub(crate) fn decode(ctx: &RequestContext<'_>, body: &[u8]) -> Result<Value, ApiError> {
    decode_body(input_format(ctx.header("Content-Type"), true)?, body)
}

async fn current(ctx: &RequestContext<'_>, def: &ResourceDef, target: &Target) -> Result<Value, ApiError> {
    let get = GetObject { target: target.main(), options: GetOptions { read_at: ReadAt::Latest } };
    Ok(ctx.server.stages.reads(def)?.reader.get(get).await?.value())
}

/// `pods/binding`: the pod's node, set once.
async fn bind(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let binding = decode(ctx, body)?;
    if binding.name() != target.name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
    }
    bind_pod(ctx, def, target, &binding).await
}

/// Binds the pod `target` names as `binding` says: what `pods/binding` and the top-level
/// `bindings` resource both do (kube's `BindingREST`).
pub(crate) async fn bind_pod(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    mut target: Target,
    binding: &Value,
) -> Result<HttpResponse, ApiError> {
    target.subresource = Some(Subresource::Binding);
    let ns = binding.namespace();
    if !ns.is_empty() && ns != target.namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let errors = validation::pod::validate_pod_binding(binding);
    if !errors.is_empty() {
        return Err(ApiError::from_field_errors(&errors));
    }
    if target.name.is_empty() {
        return Err(ApiError::bad_request("Name parameter required."));
    }
    // The pod as bound: the registry takes its node and the binding's annotations, once.
    let mut pod = current(ctx, def, &target).await?;
    pod["spec"]["nodeName"] = binding.pointer("/target/name").cloned().unwrap_or(Value::Null);
    if let Some(md) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("resourceVersion");
        if let Some(annotations) = binding.pointer("/metadata/annotations").filter(|a| a.is_object()) {
            md.insert("annotations".into(), annotations.clone());
        }
    }
    let options = WriteOptions::default();
    let msg = UpdateObject { target, object: pod, user: ctx.user.clone(), options };
    ctx.server.stages.update.ask(msg, ctx.deadline).await?;
    created(ctx, def)
}

/// Whether the pod counts as healthy for its budget (Ready).
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn budget_refusal(message: String, retry_after: Option<u32>) -> ApiError {
    let mut e = ApiError::new(
        apimachinery::Reason::TooManyRequests,
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    e.causes = vec![Cause { reason: "DisruptionBudget".into(), message, field: String::new() }];
    e.retry_after_seconds = retry_after;
    e
}

/// `pods/eviction`: delete the pod unless its PodDisruptionBudget allows no disruption now.
async fn evict(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let eviction = decode(ctx, body)?;
    if eviction.name() != target.name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let delete_options = DeleteOptions::parse(&ctx.query, eviction.get("deleteOptions").filter(|d| !d.is_null()))?;
    let pod = current(ctx, def, &target).await?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    let skip_budget =
        matches!(phase, "Succeeded" | "Failed" | "Pending") || pod.pointer("/metadata/deletionTimestamp").is_some();
    if !skip_budget {
        check_budget(ctx, &pod, &target).await?;
    }
    let msg = DeleteObject { target: target.main(), user: ctx.user.clone(), options: delete_options };
    ctx.server.stages.delete.ask(msg, ctx.deadline).await?;
    created(ctx, def)
}

/// kube's `checkAndDecrement` over the pod's one matching budget.
async fn check_budget(ctx: &RequestContext<'_>, pod: &Value, target: &Target) -> Result<(), ApiError> {
    let Some(pdbs) = ctx.server.catalogue.find("policy", "v1", "poddisruptionbudgets") else { return Ok(()) };
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    for _attempt in 0..5 {
        let list = ListObjects {
            target: Target::collection(&pdbs, &target.namespace),
            options: ListOptions::everything(ReadAt::Latest),
        };
        let all = ctx.server.stages.reads(&pdbs)?.reader.list(list).await?;
        let matching: Vec<Value> = all
            .items
            .iter()
            .map(|o| o.value())
            .filter(|pdb| {
                pdb.pointer("/spec/selector")
                    .and_then(|s| LabelSelector::from_label_selector(Some(s)).ok())
                    .is_some_and(|sel| sel.matches(labels))
            })
            .collect();
        let pdb = match matching.as_slice() {
            [] => return Ok(()),
            [one] => one.clone(),
            _ => {
                return Err(ApiError::unknown(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
        };
        let name = pdb.name().to_string();
        let int = |p: &str| pdb.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let policy =
            pdb.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str).unwrap_or("IfHealthyBudget");
        let (current, desired) = (int("/status/currentHealthy"), int("/status/desiredHealthy"));
        if !ready(pod) && (policy == "AlwaysAllow" || (current >= desired && desired > 0)) {
            return Ok(());
        }
        if int("/status/observedGeneration") < int("/metadata/generation") {
            return Err(budget_refusal(
                format!("The disruption budget {name} is still being processed by the server."),
                Some(10),
            ));
        }
        let allowed = int("/status/disruptionsAllowed");
        if allowed < 0 {
            return Err(ApiError::forbidden(
                "policy",
                "poddisruptionbudget",
                &name,
                "pdb disruptions allowed is negative",
            ));
        }
        if allowed == 0 {
            return Err(budget_refusal(
                format!("The disruption budget {name} needs {desired} healthy pods and has {current} currently"),
                None,
            ));
        }
        let mut updated = pdb.clone();
        updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        updated["status"]["disruptedPods"][target.name.as_str()] = json!(now);
        let mut pdb_target = Target::object(&pdbs, &target.namespace, &name);
        pdb_target.subresource = Some(Subresource::Status);
        let options = WriteOptions { dry_run: ctx.query.get("dryRun") == Some("All"), ..Default::default() };
        let msg = UpdateObject { target: pdb_target, object: updated, user: ctx.user.clone(), options };
        match ctx.server.stages.update.ask(msg, ctx.deadline).await {
            Ok(_) => return Ok(()),
            Err(e) if e.reason == apimachinery::Reason::Conflict => continue,
            Err(e) => return Err(e),
        }
    }
    let mut e = ApiError::timeout(
        format!("Timeout: couldn't update PodDisruptionBudget \"{}\" due to conflicts", target.name),
        10,
    );
    e.code = 504;
    Err(e)
}

/// How kube's Go dialer words a refused or failed connection.
async fn dial(address: &str) -> Result<(), String> {
    match tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(address)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(format!("dial tcp {address}: connect: connection refused"))
        }
        Ok(Err(e)) => Err(format!("dial tcp {address}: {e}")),
        Err(_) => Err(format!("dial tcp {address}: i/o timeout")),
    }
}

/// The kubelet address of `node`: its InternalIP (else first address, else its name) and the
/// port it reports.
async fn kubelet_address(ctx: &RequestContext<'_>, node: &str) -> Result<String, ApiError> {
    let nodes = ctx.server.catalogue.find("", "v1", "nodes").ok_or_else(|| ApiError::not_found("", "nodes", node))?;
    let obj = current(ctx, &nodes, &Target::object(&nodes, "", node)).await?;
    let addresses = obj.pointer("/status/addresses").and_then(Value::as_array).cloned().unwrap_or_default();
    let host = addresses
        .iter()
        .find(|a| a["type"] == "InternalIP")
        .or_else(|| addresses.first())
        .and_then(|a| a["address"].as_str())
        .unwrap_or(node)
        .to_string();
    let port = obj
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(10250);
    Ok(if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") })
}

/// `log`, `exec`, `attach`, `portforward`: kube validates the container, then streams from
/// the pod's kubelet. Without a node there is nothing to reach.
async fn kubelet(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: &Target,
    sub: Subresource,
) -> Result<HttpResponse, ApiError> {
    let pod = current(ctx, def, target).await?;
    let name = pod.name().to_string();
    let containers: Vec<&str> = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array).into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    let mut chosen = String::new();
    if sub != Subresource::PortForward {
        let container = match ctx.query.get("container") {
            Some(c) if !c.is_empty() => c.to_string(),
            _ => match pod.pointer("/spec/containers").and_then(Value::as_array).map(Vec::as_slice) {
                Some([one]) => one["name"].as_str().unwrap_or("").to_string(),
                _ => {
                    let names: Vec<&str> = pod
                        .pointer("/spec/containers")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["name"].as_str())
                        .collect();
                    return Err(ApiError::bad_request(format!(
                        "a container name must be specified for pod {name}, choose one of: [{}]",
                        names.join(" ")
                    )));
                }
            },
        };
        if !containers.contains(&container.as_str()) {
            return Err(ApiError::bad_request(format!("container {container} is not valid for pod {name}")));
        }
        chosen = container;
    }
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        if sub == Subresource::Log {
            // kube streams from no location: an empty log.
            return Ok(HttpResponse::Ok().content_type("text/plain").body(""));
        }
        return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
    }
    let address = kubelet_address(ctx, node).await?;
    match dial(&address).await {
        Err(e) if sub == Subresource::Log => Err(ApiError::unknown(format!(
            "Get \"https://{address}/containerLogs/{}/{name}/{chosen}\": {e}",
            target.namespace
        ))),
        Err(e) => Err(ApiError::unknown(format!("error dialing backend: {e}"))),
        Ok(()) => Err(ApiError::unavailable(format!(
            "the kubelet at {address} is reachable, but this server does not stream {} from kubelets",
            sub.name()
        ))),
    }
}

/// `proxy`: to a pod's IP, a node's kubelet, or a service's endpoints.
async fn proxy(ctx: &RequestContext<'_>, def: &ResourceDef, target: &Target) -> Result<HttpResponse, ApiError> {
    let obj = current(ctx, def, target).await?;
    let name = obj.name().to_string();
    let address = match def.resource.as_str() {
        "nodes" => kubelet_address(ctx, &name).await?,
        "services" => {
            let endpoints = ctx
                .server
                .catalogue
                .find("", "v1", "endpoints")
                .ok_or_else(|| ApiError::not_found("", "endpoints", &name))?;
            let ep = current(ctx, &endpoints, &Target::object(&endpoints, &target.namespace, &name)).await.ok();
            let first = ep.as_ref().and_then(|ep| {
                let subset = ep.pointer("/subsets/0")?;
                let ip = subset.pointer("/addresses/0/ip")?.as_str()?.to_string();
                let port = subset.pointer("/ports/0/port")?.as_i64()?;
                Some(format!("{ip}:{port}"))
            });
            first.ok_or_else(|| ApiError::unavailable(format!("no endpoints available for service \"{name}\"")))?
        }
        _ => {
            let ip = obj.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("");
            if ip.is_empty() {
                return Err(ApiError::bad_request("address not allowed"));
            }
            format!("{ip}:80")
        }
    };
    match dial(&address).await {
        Err(e) => Ok(HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(format!("Error trying to reach service: '{e}'"))),
        Ok(()) => {
            Err(ApiError::unavailable(format!("{address} is reachable, but this server does not proxy requests yet")))
        }
    }
}
