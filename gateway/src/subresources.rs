//! The subresources that act rather than show a view of the object: those whose kind gives
//! them an action (`pods/binding`, `pods/eviction`: the kinds' actions, run here
//! with the request as their `ActionContext`), the TokenRequest, and the ones kube hands to a
//! kubelet or an endpoint (`log`, `exec`, `attach`, `portforward`, `proxy`). This server
//! reaches no kubelet: those answer what kube answers when none is reachable, after dialing the
//! address kube would dial.

use std::sync::Arc;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::action::{Action, ActionContext};
use apimachinery::catalogue::{ResourceDef, Subresource};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::object::ObjectExt;
use serde_json::Value;

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
    if let Some(action) = ctx.server.actions.find(def, Some(sub)) {
        return act(ctx, def, action, target, &body).await;
    }
    match sub {
        Subresource::Token => crate::tokens::request(ctx, def, target, &body).await,
        Subresource::Log | Subresource::Exec | Subresource::Attach | Subresource::PortForward => {
            kubelet(ctx, &target, sub).await
        }
        Subresource::Proxy => proxy(ctx, def, &target).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Runs a kind's action on the decoded body and answers what it returns with 201, in the
/// representation the client accepts.
pub(crate) async fn act(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    action: &dyn Action,
    target: Target,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let body = decode_body(input_format(ctx.header("Content-Type"), true)?, body)?;
    let answer = action.create(ctx, target, body).await?;
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    Ok(respond(StatusCode::CREATED, output, &answer, ctx.pretty()))
}

/// The kubelet address of `node`: the first of its addresses of the first type
/// `--kubelet-preferred-address-types` names (kube's `GetPreferredNodeAddress`), and the port
/// it reports.
async fn kubelet_address(ctx: &RequestContext<'_>, node: &str) -> Result<String, ApiError> {
    let nodes = ctx.server.catalogue.find("", "v1", "nodes").ok_or_else(|| ApiError::not_found("", "nodes", node))?;
    let obj = ctx.get(&Target::object(&nodes, "", node)).await?;
    let host = preferred_address(&obj, &ctx.server.options.kubelet_preferred_address_types)?;
    let port = obj
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(10250);
    Ok(if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") })
}

/// The first address of `node` of the first of `types` it has; else kube's error, which lists
/// the addresses as Go prints them (`[{InternalDNS n1.local}]`).
fn preferred_address(node: &Value, types: &[String]) -> Result<String, ApiError> {
    let addresses = node.pointer("/status/addresses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let field = |a: &Value, k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    for wanted in types {
        if let Some(found) = addresses.iter().find(|a| field(a, "type") == *wanted) {
            return Ok(field(found, "address"));
        }
    }
    let known: Vec<String> =
        addresses.iter().map(|a| format!("{{{} {}}}", field(a, "type"), field(a, "address"))).collect();
    Err(ApiError::unknown(format!("no preferred addresses found; known addresses: [{}]", known.join(" "))))
}

/// `log`, `exec`, `attach`, `portforward`: kube validates the container, then streams from
/// the pod's kubelet. Without a node there is nothing to reach.
async fn kubelet(ctx: &RequestContext<'_>, target: &Target, sub: Subresource) -> Result<HttpResponse, ApiError> {
    let pod = ctx.get(&target.main()).await?;
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
    match ctx.dial(&address).await {
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
    let obj = ctx.get(&target.main()).await?;
    let name = obj.name().to_string();
    let address = match def.resource.as_str() {
        "nodes" => kubelet_address(ctx, &name).await?,
        "services" => {
            let endpoints = ctx
                .server
                .catalogue
                .find("", "v1", "endpoints")
                .ok_or_else(|| ApiError::not_found("", "endpoints", &name))?;
            let ep = ctx.get(&Target::object(&endpoints, &target.namespace, &name)).await.ok();
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
    match ctx.dial(&address).await {
        Err(e) => Ok(HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(format!("Error trying to reach service: '{e}'"))),
        Ok(()) => {
            Err(ApiError::unavailable(format!("{address} is reachable, but this server does not proxy requests yet")))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_kubelet_is_reached_by_the_first_preferred_address_type_the_node_has() {
        let kube_default: Vec<String> =
            ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"].map(String::from).to_vec();
        let node = json!({"status": {"addresses": [
            {"type": "ExternalIP", "address": "203.0.113.7"},
            {"type": "InternalIP", "address": "10.0.0.7"},
            {"type": "Hostname", "address": "n7"},
        ]}});
        assert_eq!(preferred_address(&node, &kube_default).unwrap(), "n7");
        let kubeadm: Vec<String> = ["InternalIP", "ExternalIP", "Hostname"].map(String::from).to_vec();
        assert_eq!(preferred_address(&node, &kubeadm).unwrap(), "10.0.0.7");
        let dns_only = json!({"status": {"addresses": [{"type": "InternalDNS", "address": "n7.local"}]}});
        let e = preferred_address(&dns_only, &kubeadm).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "no preferred addresses found; known addresses: [{InternalDNS n7.local}]")
        );
        let none = preferred_address(&json!({"status": {}}), &kubeadm).unwrap_err();
        assert_eq!(none.message, "no preferred addresses found; known addresses: []");
    }
}
