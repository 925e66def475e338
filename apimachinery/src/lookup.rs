//! Reads of single objects for the stages that consult other objects while deciding (the
//! authenticator checks that a token's ServiceAccount still exists, admission plugins read
//! namespaces and ServiceAccounts), and the one kind of write a stage makes to an object other
//! than its request's: a plugin keeping another object's status (quota admission charging a
//! ResourceQuota). The server wires in its cachers and its storage stage, so none of these
//! reads is a storage read per request.

use std::sync::{Arc, OnceLock};

use actors::Deadline;
use async_trait::async_trait;
use serde_json::Value;

use crate::error::ApiError;
use crate::request::{RequestInfo, UserInfo};

/// Reads one object by group, plural resource, namespace and name.
#[async_trait]
pub trait ObjectLookup: Send + Sync {
    /// The object, or `None` if it does not exist.
    async fn get(&self, group: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError>;

    /// The object's JSON, for a reader that decodes only the few fields it needs rather than
    /// every map and string of the object (a lookup over a cache hands out the bytes it holds).
    /// By default the object of [`ObjectLookup::get`], encoded.
    async fn get_json(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<bytes::Bytes>, ApiError> {
        let object = self.get(group, resource, namespace, name).await?;
        Ok(object.map(|o| bytes::Bytes::from(serde_json::to_vec(&o).expect("JSON values encode"))))
    }

    /// The objects in `namespace` (every namespace when empty) matching `field_selector`
    /// (`spec.nodeName=n1`; empty for all). Lookups that only get refuse it.
    async fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        field_selector: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let _ = (group, namespace, field_selector);
        Err(ApiError::internal(format!("this lookup does not list {resource}")))
    }

    /// As [`ObjectLookup::list`], each object as JSON, for a reader that decodes only the few
    /// fields it needs (as [`ObjectLookup::get_json`]).
    async fn list_json(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        field_selector: &str,
    ) -> Result<Vec<bytes::Bytes>, ApiError> {
        let objects = self.list(group, resource, namespace, field_selector).await?;
        Ok(objects.iter().map(|o| bytes::Bytes::from(serde_json::to_vec(o).expect("JSON values encode"))).collect())
    }

    /// As [`ObjectLookup::list`] of everything in `namespace`, but consistent: what storage
    /// holds now, not what the cache has seen so far (kube's "live lookup" when an informer
    /// shows nothing, or a fresh read after a conflict). Costs a storage round trip.
    async fn list_latest(&self, group: &str, resource: &str, namespace: &str) -> Result<Vec<Value>, ApiError> {
        self.list(group, resource, namespace, "").await
    }

    /// A number that differs whenever any object of the resource has changed since it was
    /// last asked (`None`: not known, so a caller lists). A plugin that builds something from
    /// a whole list (webhook configurations, policies) rebuilds only when it moves.
    fn changes(&self, group: &str, resource: &str) -> Option<u64> {
        let _ = (group, resource);
        None
    }

    /// The plural resource serving `kind` of `group`/`version` and whether it is namespaced
    /// (kube's REST mapping), for plugins that are given a kind rather than a resource (a
    /// policy's `paramKind`). `None` when no served resource has that kind.
    fn resource_for_kind(&self, group: &str, version: &str, kind: &str) -> Option<KindResource> {
        let _ = (group, version, kind);
        None
    }
}

/// Why a Service could not be resolved to one of its endpoints, worded as the admission
/// webhooks' errors quote it; the aggregator turns each into its own condition reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EndpointError {
    /// The Service does not exist.
    #[error("service \"{0}\" not found")]
    ServiceNotFound(String),
    /// The Service has no port `port`.
    #[error("no service port {port} found for service \"{name}\"")]
    NoServicePort {
        /// The Service.
        name: String,
        /// The port asked for.
        port: i64,
    },
    /// The Service has no Endpoints object.
    #[error("endpoints \"{0}\" not found")]
    EndpointsNotFound(String),
    /// No Endpoints subset has an address for the Service port's name.
    #[error("no endpoints available for service \"{name}\"")]
    NoAddresses {
        /// The Service.
        name: String,
        /// The name of the Service port (`""` for an unnamed one).
        port_name: String,
    },
    /// The Service or its Endpoints could not be read.
    #[error("{0}")]
    Lookup(String),
}

/// `host:port` of one endpoint of Service `namespace/name` serving its port `port`, for a
/// client of a Service (a webhook, a conversion webhook, an aggregated API server): the first
/// address of the first Endpoints subset with that port's name, as kube dials with
/// `--enable-aggregator-routing`, since no cluster network routes Service addresses here. An
/// IPv6 address is bracketed.
pub async fn service_endpoint(
    objects: &dyn ObjectLookup,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<String, EndpointError> {
    let lookup = |e: ApiError| EndpointError::Lookup(e.message);
    let svc = objects
        .get("", "services", namespace, name)
        .await
        .map_err(lookup)?
        .ok_or_else(|| EndpointError::ServiceNotFound(name.into()))?;
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let svc_port = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(port))
        .ok_or_else(|| EndpointError::NoServicePort { name: name.into(), port })?;
    let port_name = svc_port["name"].as_str().unwrap_or("");
    let endpoints = objects
        .get("", "endpoints", namespace, name)
        .await
        .map_err(lookup)?
        .ok_or_else(|| EndpointError::EndpointsNotFound(name.into()))?;
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let Some(target) = subset["ports"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"].as_str().unwrap_or("") == port_name))
            .and_then(|p| p["port"].as_i64())
        else {
            continue;
        };
        if let Some(ip) = subset["addresses"].as_array().and_then(|a| a.first()).and_then(|a| a["ip"].as_str()) {
            let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
            return Ok(format!("{host}:{target}"));
        }
    }
    Err(EndpointError::NoAddresses { name: name.into(), port_name: port_name.into() })
}

/// Where a kind is served: [`ObjectLookup::resource_for_kind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindResource {
    /// The plural resource (`configmaps`).
    pub resource: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// Writes the status of objects other than a request's own.
#[async_trait]
pub trait ObjectWriter: Send + Sync {
    /// Replaces the `/status` of `object` (of `resource` in `group`), guarded by the
    /// resourceVersion it carries: 409 Conflict when the stored object changed since it was
    /// read. Answers the stored object, with its new resourceVersion.
    async fn update_status(
        &self,
        group: &str,
        resource: &str,
        object: Value,
        deadline: Deadline,
    ) -> Result<Value, ApiError>;
}

/// An [`ObjectWriter`] bound after it is handed out. The admission chain is built before the
/// storage stage exists (the storage stage is started with the chain's handle), yet a plugin
/// writes through the storage stage: the server builds the chain with one of these and binds the
/// storage stage's writer once it runs. Until then writes are refused with 503, which no request
/// sees: the server serves nothing before it binds.
#[derive(Clone, Default)]
pub struct LateWriter {
    /// Set once; a `OnceLock` because the writer is bound once and read, without a lock, on
    /// every write after.
    writer: Arc<OnceLock<Arc<dyn ObjectWriter>>>,
}

impl LateWriter {
    /// Binds `writer`; a second binding is ignored.
    pub fn bind(&self, writer: Arc<dyn ObjectWriter>) {
        let _ = self.writer.set(writer);
    }
}

#[async_trait]
impl ObjectWriter for LateWriter {
    async fn update_status(
        &self,
        group: &str,
        resource: &str,
        object: Value,
        deadline: Deadline,
    ) -> Result<Value, ApiError> {
        let Some(writer) = self.writer.get() else {
            return Err(ApiError::unavailable("the storage stage is not running yet"));
        };
        writer.update_status(group, resource, object, deadline).await
    }
}

/// Asks the server's authorizers whether a user may do something other than the request at
/// hand: kube hands admission plugins its authorizer so that, say, approving a certificate
/// request needs `approve` on the request's signer.
#[async_trait]
pub trait AccessCheck: Send + Sync {
    /// Whether `user` may do what `attributes` describe (verb, group, resource, name).
    async fn allowed(&self, user: &UserInfo, attributes: RequestInfo) -> Result<bool, ApiError>;

    /// The whole decision, reason and error included: what CEL's authorizer library reads
    /// (`check(..).reason()`). By default only whether it was allowed.
    async fn decide(
        &self,
        user: &UserInfo,
        attributes: RequestInfo,
    ) -> Result<crate::messages::AuthorizationDecision, ApiError> {
        let allowed = self.allowed(user, attributes).await?;
        Ok(crate::messages::AuthorizationDecision { allowed, ..Default::default() })
    }
}

/// `https://<endpoint address>:<target port><path>` for a client of a Service (a webhook, a
/// conversion webhook): [`service_endpoint`] with the path, its errors worded as kube's
/// resolver's.
pub async fn service_url(
    objects: &dyn ObjectLookup,
    namespace: &str,
    name: &str,
    path: &str,
    port: i64,
) -> Result<String, String> {
    let endpoint = service_endpoint(objects, namespace, name, port).await.map_err(|e| e.to_string())?;
    Ok(format!("https://{endpoint}{}", slash_prefixed(path)))
}

/// `path` with a leading `/`.
pub fn slash_prefixed(path: &str) -> String {
    if path.starts_with('/') { path.to_string() } else { format!("/{path}") }
}

/// Whether a writer may write an RBAC role or binding that grants what it does not hold
/// itself (kube's RBAC storage's escalation check). The authorizer knows what a user holds, so
/// the auth stage implements it; admission asks it first, as kube checks before its admission.
pub trait RoleEscalation: Send + Sync {
    /// Refuses with 403 a create or update (`request`) of a role or binding (`object`) that
    /// grants more than its writer holds, unless the writer may `escalate` the role (roles) or
    /// `bind` it (bindings). Anything else passes.
    fn check(&self, request: &crate::messages::Admit, object: &Value) -> Result<(), ApiError>;
}
