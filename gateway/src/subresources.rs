//! The subresources that act rather than show a view of the object: those whose kind gives
//! them an action (`pods/binding`, `pods/eviction`: the kinds' actions, run here
//! with the request as their `ActionContext`), the TokenRequest, and the ones kube hands to a
//! kubelet or an endpoint (`log`, `exec`, `attach`, `portforward`, `proxy`): this module checks
//! them and finds the address kube would reach, and the `kubelet` module relays them.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use apimachinery::action::{Action, ActionContext};
use apimachinery::catalogue::{ResourceDef, Subresource};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::object::ObjectExt;
use serde_json::Value;

use crate::context::RequestContext;
use crate::first_head::Upgrade;
use crate::kubelet::Transport;
use crate::negotiate::{Offer, decode_body, input_format, negotiate, respond};

/// Serves an action or kubelet subresource.
pub async fn serve(
    ctx: &RequestContext<'_>,
    def: &Arc<ResourceDef>,
    target: Target,
    sub: Subresource,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if let Some(action) = ctx.server.actions.find(def, Some(sub)) {
        let body = ctx.read_body(payload).await?;
        return act(ctx, def, action, target, &body).await;
    }
    match sub {
        Subresource::Token => {
            let body = ctx.read_body(payload).await?;
            crate::tokens::request(ctx, def, target, &body).await
        }
        Subresource::Log | Subresource::Exec | Subresource::Attach | Subresource::PortForward => {
            kubelet(ctx, &target, sub, payload).await
        }
        Subresource::Proxy => proxy(ctx, def, &target, payload).await,
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
async fn kubelet(
    ctx: &RequestContext<'_>,
    target: &Target,
    sub: Subresource,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
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
    let ns = &target.namespace;
    let (path, query) = match sub {
        Subresource::Log => (format!("/containerLogs/{ns}/{name}/{chosen}"), log_query(&ctx.query)),
        Subresource::PortForward => (format!("/portForward/{ns}/{name}"), port_forward_query(&ctx.query)),
        Subresource::Exec => (format!("/exec/{ns}/{name}/{chosen}"), stream_query(&ctx.query, true)),
        _ => (format!("/attach/{ns}/{name}/{chosen}"), stream_query(&ctx.query, false)),
    };
    let path = if query.is_empty() { path } else { format!("{path}?{query}") };
    let body = if sub == Subresource::Log {
        None
    } else {
        check_upgrade(ctx)?;
        Some(payload)
    };
    let transport = Transport::Tls(ctx.server.kubelet_tls.clone());
    // kubectl's v5 offer is asked of the kubelet as v4 unless stdin is streamed: a kubelet
    // ignores v5's stdin-close signal, and the command would wait for its input forever.
    let stdin = stream_query(&ctx.query, false).contains("input=1");
    let answer =
        crate::kubelet::relay(&transport, &address, &path, ctx.req, body, !stdin).await.map_err(|e| match sub {
            Subresource::Log => ApiError::unknown(format!("Get \"https://{address}{path}\": {e}")),
            _ => ApiError::unknown(format!("error dialing backend: {e}")),
        })?;
    if sub == Subresource::Log && !answer.status().is_success() {
        // The kubelet's refusal, as a Status with its code.
        let code = answer.status().as_u16();
        let body = actix_web::body::to_bytes(answer.into_body()).await.unwrap_or_default();
        let mut error = ApiError::unknown(String::from_utf8_lossy(&body).trim().to_string());
        error.code = code;
        return Err(error);
    }
    Ok(answer)
}

/// `exec`, `attach` and `portforward` must be upgrades, to WebSocket or SPDY.
fn check_upgrade(ctx: &RequestContext<'_>) -> Result<(), ApiError> {
    match crate::first_head::upgrade_of(ctx.req) {
        Upgrade::None => Err(ApiError::bad_request("Upgrade request required")),
        Upgrade::WebSocket | Upgrade::Spdy(_) => Ok(()),
        Upgrade::Other(other) => Err(not_relayed(&other)),
    }
}

/// The refusal of an upgrade whose bytes would not reach the relay.
fn not_relayed(upgrade: &str) -> ApiError {
    if upgrade.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("spdy/")) {
        return ApiError::bad_request(format!(
            "a {upgrade} upgrade is relayed only as the first request of its connection, as client-go sends it"
        ));
    }
    ApiError::bad_request(format!(
        "this server relays WebSocket and SPDY upgrades; an {upgrade} upgrade is not relayed"
    ))
}

/// The kubelet's `containerLogs` query: kube's `PodLogOptions` that reach it, as sent.
fn log_query(query: &apimachinery::options::Params) -> String {
    let keys = ["follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "limitBytes", "tailLines"];
    encode(keys.iter().filter_map(|k| query.get(k).filter(|v| !v.is_empty()).map(|v| (k.to_string(), v.to_string()))))
}

/// The kubelet's `exec` and `attach` query, in its own words: `input`, `output`, `error` and
/// `tty` for the streams kube's `PodExecOptions` asks for, and `command` (exec only).
fn stream_query(query: &apimachinery::options::Params, exec: bool) -> String {
    // kube's string-to-bool: anything but empty, `0` and `false` is true.
    let on = |k: &str| query.get(k).is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "" | "0" | "false"));
    let mut pairs = Vec::new();
    for (ours, kubelets) in [("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty")] {
        if on(ours) {
            pairs.push((kubelets.to_string(), "1".to_string()));
        }
    }
    if exec {
        pairs.extend(query.all("command").into_iter().map(|c| ("command".to_string(), c.to_string())));
    }
    encode(pairs.into_iter())
}

/// The kubelet's `portForward` query: one `port` per port asked for.
fn port_forward_query(query: &apimachinery::options::Params) -> String {
    let ports = query.all("ports").into_iter().flat_map(|p| p.split(',')).map(|p| ("port".to_string(), p.to_string()));
    encode(ports.collect::<Vec<_>>().into_iter())
}

/// A query string, each key and value escaped.
fn encode(pairs: impl Iterator<Item = (String, String)>) -> String {
    let escape = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    pairs.map(|(k, v)| format!("{}={}", escape(&k), escape(&v))).collect::<Vec<_>>().join("&")
}

/// `proxy`: to a node's kubelet, a pod's IP, or an endpoint of a Service. The name may carry
/// a scheme and a port, as kube's `SplitSchemeNamePort` reads it (`https:web:8443`), and the
/// rest of the path after `proxy` is the backend's path.
async fn proxy(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: &Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(&target.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid request {:?}", target.name)))?;
    let obj = ctx.get(&Target { name: name.to_string(), ..target.main() }).await?;
    let plain_or_tls = |tls: bool| -> Result<Transport, ApiError> {
        if !tls {
            return Ok(Transport::Plain);
        }
        // Pods, Services and other node ports over https are not verified, as kube's proxy
        // transport does not verify them.
        let trust = webhook_client::Trust { insecure: true, ..Default::default() };
        let client = webhook_client::WebhookClient::for_proxy(trust).map_err(ApiError::internal)?;
        Ok(Transport::Tls(client.tls_config().ok_or_else(|| ApiError::internal("no TLS configuration"))?))
    };
    let (address, transport) = match def.resource.as_str() {
        "nodes" => {
            let kubelet = kubelet_address(ctx, name).await?;
            let (host, kubelet_port) = kubelet.rsplit_once(':').unwrap_or((kubelet.as_str(), "10250"));
            match port {
                // The kubelet itself, over its own TLS, whatever scheme was asked.
                None => (kubelet.clone(), Transport::Tls(ctx.server.kubelet_tls.clone())),
                Some(p) if p == kubelet_port => (kubelet.clone(), Transport::Tls(ctx.server.kubelet_tls.clone())),
                // Another port of the node: only at an address a proxy may reach.
                Some(p) => {
                    proxyable_host(host.trim_matches(['[', ']'])).await?;
                    (format!("{host}:{p}"), plain_or_tls(scheme == "https")?)
                }
            }
        }
        "services" => (service_endpoint(ctx, target, &obj, name, port).await?, plain_or_tls(scheme == "https")?),
        _ => {
            let ip = obj.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("");
            let addr: std::net::IpAddr = ip.parse().map_err(|_| ApiError::bad_request("address not allowed"))?;
            if !proxyable(addr) {
                return Err(ApiError::bad_request("address not allowed"));
            }
            // Without a port: the pod's first container port, else the scheme's.
            let first_port = obj
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
                .find_map(|p| p.get("containerPort").and_then(Value::as_i64));
            let default = if scheme == "https" { 443 } else { 80 };
            let port = port.map_or_else(|| first_port.unwrap_or(default).to_string(), str::to_string);
            (
                std::net::SocketAddr::new(addr, port.parse().unwrap_or(default as u16)).to_string(),
                plain_or_tls(scheme == "https")?,
            )
        }
    };
    if let Upgrade::Other(other) = crate::first_head::upgrade_of(ctx.req) {
        return Err(not_relayed(&other));
    }
    let mut path = String::from("/");
    path.push_str(&proxied_path(&ctx.info.parts));
    if ctx.req.path().ends_with('/') && !path.ends_with('/') {
        path.push('/');
    }
    if !ctx.req.query_string().is_empty() {
        path = format!("{path}?{}", ctx.req.query_string());
    }
    match crate::kubelet::relay(&transport, &address, &path, ctx.req, Some(payload), false).await {
        Ok(answer) => Ok(answer),
        Err(e) => Ok(HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(format!("Error trying to reach service: '{e}'"))),
    }
}

/// Whether a proxy may reach `ip`: Go's `IsGlobalUnicast` (kube's `IsProxyableIP`), which
/// keeps loopback, link-local, multicast and unspecified addresses out.
fn proxyable(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            !(v4.is_loopback() || v4.is_link_local() || v4.is_multicast() || v4.is_unspecified() || v4.is_broadcast())
        }
        std::net::IpAddr::V6(v6) => {
            !(v6.is_loopback() || v6.is_multicast() || v6.is_unspecified() || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// kube's `IsProxyableHostname`: every address `host` resolves to may be reached.
async fn proxyable_host(host: &str) -> Result<(), ApiError> {
    let not_allowed = || ApiError::bad_request("address not allowed");
    let addrs: Vec<std::net::SocketAddr> =
        tokio::net::lookup_host((host, 0)).await.map_err(|_| not_allowed())?.collect();
    if addrs.is_empty() || !addrs.iter().all(|a| proxyable(a.ip())) {
        return Err(not_allowed());
    }
    Ok(())
}

/// An endpoint of Service `name` for `port` (a Service port's number or name; none: the unnamed
/// port), at an address that is a pod's, as kube's service `ResourceLocation` picks one.
async fn service_endpoint(
    ctx: &RequestContext<'_>,
    target: &Target,
    service: &Value,
    name: &str,
    port: Option<&str>,
) -> Result<String, ApiError> {
    let port_name = match port.map(|p| (p, p.parse::<i64>())) {
        None => String::new(),
        Some((_, Ok(number))) => service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(number))
            .map(|p| p["name"].as_str().unwrap_or("").to_string())
            .ok_or_else(|| ApiError::unavailable(format!("no service port {number} found for service \"{name}\"")))?,
        Some((p, Err(_))) => p.to_string(),
    };
    let none = || ApiError::unavailable(format!("no endpoints available for service \"{}\"", target.name));
    let endpoints = ctx.server.catalogue.find("", "v1", "endpoints").ok_or_else(none)?;
    let ep = ctx.get(&Target::object(&endpoints, &target.namespace, name)).await.map_err(|_| none())?;
    let pods = ctx.server.catalogue.find("", "v1", "pods").ok_or_else(none)?;
    for subset in ep.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let ports = subset.get("ports").and_then(Value::as_array).into_iter().flatten();
        let Some(number) =
            ports.filter(|p| p["name"].as_str().unwrap_or("") == port_name).find_map(|p| p["port"].as_i64())
        else {
            continue;
        };
        for address in subset.get("addresses").and_then(Value::as_array).into_iter().flatten() {
            let ip = address["ip"].as_str().unwrap_or("");
            // Only addresses that are pods' of the Service's namespace.
            let pod_ref =
                address.get("targetRef").filter(|r| r["kind"] == "Pod" && r["namespace"] == target.namespace.as_str());
            let Some(pod_name) = pod_ref.and_then(|r| r["name"].as_str()) else { continue };
            let Ok(pod) = ctx.get(&Target::object(&pods, &target.namespace, pod_name)).await else { continue };
            let ips = pod.pointer("/status/podIPs").and_then(Value::as_array).into_iter().flatten();
            if !ips.filter_map(|p| p["ip"].as_str()).any(|p| p == ip) {
                continue;
            }
            let Ok(addr) = ip.parse::<std::net::IpAddr>() else { continue };
            return Ok(std::net::SocketAddr::new(addr, number as u16).to_string());
        }
    }
    Err(none())
}

/// `[scheme:]name[:port]`, as kube's `SplitSchemeNamePort` splits it; `None` when malformed.
fn split_scheme_name_port(id: &str) -> Option<(&str, &str, Option<&str>)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, None),
        [name, port] => ("", *name, Some(*port)),
        [scheme, name, port] => (*scheme, *name, Some(*port)),
        _ => return None,
    };
    let valid = !name.is_empty() && matches!(scheme, "" | "http" | "https");
    valid.then_some((scheme, name, port.filter(|p| !p.is_empty())))
}

/// The path after `proxy` in a request's path parts.
fn proxied_path(parts: &[String]) -> String {
    match parts.iter().position(|p| p == "proxy") {
        Some(i) => parts[i + 1..].join("/"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn proxy_names_split_as_kube_splits_them() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", None)));
        assert_eq!(split_scheme_name_port("web:8080"), Some(("", "web", Some("8080"))));
        assert_eq!(split_scheme_name_port("https:web:8443"), Some(("https", "web", Some("8443"))));
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        let parts: Vec<String> = ["namespaces", "d", "pods", "web", "proxy", "healthz", "x"].map(String::from).into();
        assert_eq!(proxied_path(&parts), "healthz/x");
    }

    #[test]
    fn kubelet_queries_use_the_kubelets_names() {
        let params = |pairs: &[(&str, &str)]| {
            apimachinery::options::Params::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        let q = params(&[
            ("command", "ls"),
            ("command", "-l a"),
            ("stdin", "true"),
            ("stdout", "true"),
            ("tty", "false"),
            ("container", "c"),
        ]);
        assert_eq!(stream_query(&q, true), "input=1&output=1&command=ls&command=-l%20a");
        assert_eq!(stream_query(&q, false), "input=1&output=1");
        let logs = params(&[("follow", "true"), ("tailLines", "5"), ("container", "c")]);
        assert_eq!(log_query(&logs), "follow=true&tailLines=5");
        let ports = params(&[("ports", "80,443"), ("ports", "8080")]);
        assert_eq!(port_forward_query(&ports), "port=80&port=443&port=8080");
    }

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
