//! The authentication and authorization stages, and the filters kube runs between them.
//!
//! kube's handler chain, which the gateway follows: authentication, audit, impersonation, API
//! Priority and Fairness, authorization, then the handler. Audit and impersonation are
//! pass-throughs here until the auth work builds them ([`audit`], [`impersonation`]).
//!
//! Authentication turns credentials into a [`UserInfo`]: bearer tokens from `--token-auth-file`
//! (kube's CSV format `token,user,uid,"group1,group2"`), client certificates verified by TLS
//! against the client CA (CN is the user, O the groups), else `system:anonymous` when
//! `--anonymous-auth` allows it. An invalid token is 401 even with anonymous auth on, as kube.
//!
//! Authorization is `AlwaysAllow`, or a first `RBAC` that allows `system:masters` everything,
//! everyone the health and version endpoints, authenticated users discovery and OpenAPI, and
//! denies the rest with kube's 403 message. Evaluating stored Roles and bindings comes with the
//! auth work.

use std::collections::HashMap;
use std::path::Path;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::{Authenticate, Authorize};
use apimachinery::request::{RequestInfo, UserInfo};

pub mod audit;
pub mod impersonation;

/// The authentication stage actor.
pub struct AuthenticationActor {
    tokens: HashMap<String, UserInfo>,
    anonymous: bool,
}

/// Reads a static token file: `token,user,uid[,"group1,group2"]` per line.
pub fn load_token_file(path: &Path) -> Result<HashMap<String, UserInfo>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tokens = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_csv(line);
        if fields.len() < 3 {
            return Err(format!("{}:{}: token file entries need at least 3 columns", path.display(), n + 1));
        }
        let groups =
            fields.get(3).map(|g| g.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
        tokens.insert(
            fields[0].clone(),
            UserInfo { name: fields[1].clone(), uid: fields[2].clone(), groups: groups.unwrap_or_default() },
        );
    }
    Ok(tokens)
}

/// Splits one CSV line, honouring double quotes (a quoted field may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

impl AuthenticationActor {
    /// An authenticator over static tokens, allowing anonymous requests if `anonymous`.
    pub fn new(tokens: HashMap<String, UserInfo>, anonymous: bool) -> Self {
        AuthenticationActor { tokens, anonymous }
    }
}

impl Actor for AuthenticationActor {
    type Context = Context<Self>;
}

fn authenticated(mut user: UserInfo) -> UserInfo {
    if !user.in_group("system:authenticated") && user.name != "system:anonymous" {
        user.groups.push("system:authenticated".into());
    }
    user
}

impl StageHandler<Authenticate> for AuthenticationActor {
    fn handle(
        &mut self,
        Authenticate(creds): Authenticate,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<UserInfo, ApiError>> {
        let result = if let Some(token) = creds.bearer_token {
            self.tokens.get(&token).cloned().map(authenticated).ok_or_else(ApiError::unauthorized)
        } else if let Some(user) = creds.client_certificate {
            Ok(authenticated(user))
        } else if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err(ApiError::unauthorized())
        };
        let label = if result.is_ok() { "success" } else { "error" };
        metrics::counter!("authentication_attempts", "result" => label).increment(1);
        Work::Done(result)
    }
}

actors::stage_handler!(AuthenticationActor => Authenticate);

/// `--authorization-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every request is allowed.
    AlwaysAllow,
    /// Role-based: `system:masters` may do anything, others only read public endpoints.
    Rbac,
}

impl std::str::FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "RBAC" => Ok(AuthorizationMode::Rbac),
            other => Err(format!("authorization mode {other:?} is not one of AlwaysAllow, RBAC")),
        }
    }
}

/// The authorization stage actor.
pub struct AuthorizationActor {
    mode: AuthorizationMode,
}

impl AuthorizationActor {
    /// An authorizer in `mode`.
    pub fn new(mode: AuthorizationMode) -> Self {
        AuthorizationActor { mode }
    }
}

impl Actor for AuthorizationActor {
    type Context = Context<Self>;
}

/// Paths kube's `system:public-info-viewer` role opens to everyone.
const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version"];
/// Paths kube's `system:discovery` role opens to authenticated users.
const DISCOVERY_PATHS: &[&str] = &["/api", "/apis", "/openapi"];

fn under(path: &str, roots: &[&str]) -> bool {
    roots.iter().any(|r| path == *r || path.starts_with(&format!("{r}/")))
}

/// kube's denial message for `user` doing `request`.
pub fn forbidden(user: &UserInfo, request: &RequestInfo) -> ApiError {
    if !request.is_resource_request {
        return ApiError::new(
            apimachinery::Reason::Forbidden,
            format!("forbidden: User \"{}\" cannot {} path \"{}\"", user.name, request.verb, request.path),
        );
    }
    let resource = if request.subresource.is_empty() {
        request.resource.clone()
    } else {
        format!("{}/{}", request.resource, request.subresource)
    };
    let scope = if request.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{}\"", request.namespace)
    };
    let why = format!(
        "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
        user.name, request.verb, request.api_group
    );
    ApiError::forbidden(&request.api_group, &request.resource, &request.name, &why)
}

impl StageHandler<Authorize> for AuthorizationActor {
    fn handle(&mut self, msg: Authorize, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<(), ApiError>> {
        let Authorize { user, request } = msg;
        let allowed = match self.mode {
            AuthorizationMode::AlwaysAllow => true,
            AuthorizationMode::Rbac => {
                user.in_group("system:masters")
                    || (!request.is_resource_request && request.verb == "get" && under(&request.path, PUBLIC_PATHS))
                    || (!request.is_resource_request
                        && request.verb == "get"
                        && user.in_group("system:authenticated")
                        && under(&request.path, DISCOVERY_PATHS))
            }
        };
        let label = if allowed { "allowed" } else { "denied" };
        metrics::counter!("apiserver_authorization_decisions_total", "decision" => label).increment(1);
        Work::Done(if allowed { Ok(()) } else { Err(forbidden(&user, &request)) })
    }
}

actors::stage_handler!(AuthorizationActor => Authorize);

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::request::parse_request_info;

    #[test]
    fn token_file_parses_quoted_groups() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tokens.csv");
        std::fs::write(&f, "t1,alice,u1,\"system:masters,dev\"\nt2,bob,u2\n").unwrap();
        let t = load_token_file(&f).unwrap();
        assert_eq!(t["t1"].groups, vec!["system:masters", "dev"]);
        assert_eq!(t["t2"].name, "bob");
        assert!(t["t2"].groups.is_empty());
    }

    #[test]
    fn forbidden_message_matches_kube() {
        let user = UserInfo { name: "bob".into(), ..Default::default() };
        let req = parse_request_info("GET", "/api/v1/namespaces/default/configmaps", false);
        let e = forbidden(&user, &req);
        assert_eq!(
            e.message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let req = parse_request_info("DELETE", "/apis/apps/v1/namespaces/a/deployments/web", false);
        assert_eq!(
            forbidden(&user, &req).message,
            "deployments.apps \"web\" is forbidden: User \"bob\" cannot delete resource \"deployments\" in API group \"apps\" in the namespace \"a\""
        );
    }
}
