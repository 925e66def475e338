//! What a handler knows about its request, once the handler chain has let it through.

use actix_web::{HttpRequest, web};
use actors::Deadline;
use apimachinery::action::ActionContext;
use apimachinery::catalogue::Catalogue;
use apimachinery::error::ApiError;
use apimachinery::messages::{
    Authenticate, Authenticated, AuthorizationDecision, Credentials, DeleteObject, GetObject, ListObjects, Target,
    UpdateObject,
};
use apimachinery::options::{DeleteOptions, GetOptions, ListOptions, Params, ReadAt, WriteOptions};
use apimachinery::request::{RequestInfo, UserInfo};
use futures_util::StreamExt;
use serde_json::Value;

use crate::state::ServerState;

/// A request on its way through the handlers.
pub struct RequestContext<'a> {
    /// The HTTP request.
    pub req: &'a HttpRequest,
    /// Parsed request info.
    pub info: &'a RequestInfo,
    /// Query parameters.
    pub query: Params,
    /// The user the request acts for.
    pub user: UserInfo,
    /// When the request's work stops being worth doing (`--request-timeout`, `?timeout=`); for a
    /// watch, when its setup must be done by.
    pub deadline: Deadline,
    /// Shared server state.
    pub server: &'a ServerState,
    /// Where the body read is kept for the audit event, when the request is audited.
    pub audit_body: Option<&'a crate::auditing::BodySlot>,
}

impl RequestContext<'_> {
    /// A request header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.req.headers().get(name).and_then(|v| v.to_str().ok())
    }

    /// Reads the body, refusing more than the configured limit with 413 as kube does.
    pub async fn read_body(&self, mut payload: web::Payload) -> Result<bytes::Bytes, ApiError> {
        let limit = self.server.options.max_request_body_bytes;
        let too_large = || {
            ApiError::new(
                apimachinery::Reason::RequestEntityTooLarge,
                format!("Request entity too large: limit is {limit}"),
            )
        };
        if self.header("Content-Length").and_then(|l| l.parse::<usize>().ok()).is_some_and(|l| l > limit) {
            return Err(too_large());
        }
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let body = body.freeze();
        if let Some(slot) = self.audit_body {
            *slot.borrow_mut() = Some(body.clone());
        }
        Ok(body)
    }

    /// Whether responses should be indented (`?pretty=true`, or curl/wget as kube guesses).
    pub fn pretty(&self) -> bool {
        match self.query.get("pretty") {
            Some(p) => p == "true" || p == "1",
            None => self.header("User-Agent").is_some_and(|ua| ua.starts_with("curl") || ua.starts_with("Wget")),
        }
    }
}

/// What a kind's action reaches: the stages, as the request's user, within its deadline (reads
/// are the cachers' latest state, as kube's eviction reads the pod and its budgets); the
/// authorizers and authenticators the reviews ask; dials and the storage backends' health,
/// which ComponentStatus reports.
#[async_trait::async_trait(?Send)]
impl ActionContext for RequestContext<'_> {
    fn catalogue(&self) -> &Catalogue {
        &self.server.catalogue
    }

    fn query(&self) -> &Params {
        &self.query
    }

    async fn get(&self, target: &Target) -> Result<Value, ApiError> {
        let def = target.resolve(&self.server.catalogue)?;
        let get = GetObject { target: target.clone(), options: GetOptions { read_at: ReadAt::Latest } };
        Ok(self.server.stages.reads(&def)?.reader.get(get).await?.value())
    }

    async fn list(&self, target: &Target) -> Result<Vec<Value>, ApiError> {
        let def = target.resolve(&self.server.catalogue)?;
        let list = ListObjects { target: target.clone(), options: ListOptions::everything(ReadAt::Latest) };
        Ok(self.server.stages.reads(&def)?.reader.list(list).await?.items.iter().map(|o| o.value()).collect())
    }

    async fn update(&self, target: Target, object: Value, options: WriteOptions) -> Result<(), ApiError> {
        let msg = UpdateObject { target, object, user: self.user.clone(), options };
        self.server.stages.update.ask(msg, self.deadline).await?;
        Ok(())
    }

    async fn delete(&self, target: Target, options: DeleteOptions) -> Result<(), ApiError> {
        let msg = DeleteObject { target, user: self.user.clone(), options };
        self.server.stages.delete.ask(msg, self.deadline).await?;
        Ok(())
    }

    fn user(&self) -> &UserInfo {
        &self.user
    }

    /// Asks the authorizers directly, not the authorization stage: a review's question is not a
    /// request, so it is not counted among the server's authorization decisions.
    async fn authorize(&self, user: UserInfo, attributes: RequestInfo) -> Result<AuthorizationDecision, ApiError> {
        Ok(self.server.authorizers.decide(&auth::Attributes::of(user, &attributes)).await.0)
    }

    async fn authenticate(&self, credentials: Credentials) -> Result<Authenticated, ApiError> {
        self.server.stages.authenticate.ask(Authenticate(credentials), self.deadline).await
    }

    fn rules(&self, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<String>) {
        let a = auth::Attributes { user: user.clone(), namespace: namespace.to_string(), ..Default::default() };
        let authorizers = &self.server.authorizers;
        let (rules, errors) = auth::authz::rules_for(&authorizers.modes, &authorizers.policy, &a);
        (rules.iter().map(auth::rbac::PolicyRule::to_json).collect(), errors)
    }

    async fn dial(&self, address: &str) -> Result<(), String> {
        crate::kubelet::dial_tcp(address, DIAL_TIMEOUT).await.map(drop)
    }

    async fn storage_health(&self) -> Vec<Result<(), String>> {
        let mut out = Vec::new();
        for storage in self.server.router.backends() {
            out.push(match tokio::time::timeout(STORAGE_PROBE_TIMEOUT, storage.current_revision()).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("{} did not answer", storage.describe())),
            });
        }
        out
    }
}

/// How long a dial may take before it counts as an i/o timeout.
const DIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a storage backend has to answer a health probe.
const STORAGE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
