//! Who is asking and for what: the facts every stage after the gateway decides on.

use crate::selector::FieldSelector;
use serde::{Deserialize, Serialize};

/// An authenticated identity (`user.Info` in kube).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInfo {
    /// User name, e.g. `admin` or `system:anonymous`.
    pub name: String,
    /// Stable id, if the authenticator knows one.
    pub uid: String,
    /// Groups, `system:authenticated` included once authenticated.
    pub groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/pod-name`, impersonated extras).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The identity of an unauthenticated request.
    pub fn anonymous() -> Self {
        UserInfo {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// What a request is about, parsed from its URL as kube-apiserver's `RequestInfoFactory` does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestInfo {
    /// True for `/api` and `/apis` requests; false for `/healthz`, `/version` and the like.
    pub is_resource_request: bool,
    /// The request path.
    pub path: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or for
    /// non-resource requests the lower-case HTTP method.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    /// API group, `""` for core.
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Namespace, `""` for cluster-scoped or all-namespace requests.
    pub namespace: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, `""` if none.
    pub subresource: String,
    /// Object name, `""` for collections.
    pub name: String,
    /// For a list or watch, the name its field selector pins (`metadata.name=x`): kube's
    /// `RequestInfo` takes it as the request's name, so that authorizers and audit see a single
    /// object (the kubelet watches each Secret and ConfigMap of its pods so, and the Node
    /// authorizer allows nothing broader). Kept apart from `name`, which routing reads as the
    /// path's.
    #[serde(default)]
    pub selected_name: String,
    /// Path parts after the API prefix, kept for discovery routing.
    pub parts: Vec<String>,
}

impl RequestInfo {
    /// Whether the verb changes stored state.
    pub fn is_mutating(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }

    /// The name authorizers, audit and a 403 see: the path's, else the one the field selector
    /// pins.
    pub fn authorized_name(&self) -> &str {
        if self.name.is_empty() { &self.selected_name } else { &self.name }
    }

    /// Sets [`selected_name`](Self::selected_name) from a list's or watch's `fieldSelector`, as
    /// kube's `RequestInfoFactory` does: a `metadata.name=` or `==` term among any others, when
    /// the value could name an object in a path (not `.` or `..`, no `/` or `%`). A selector that
    /// does not parse sets nothing (the handler refuses it later).
    pub fn with_selected_name(mut self, field_selector: Option<&str>) -> Self {
        let collection_read = self.is_resource_request && self.name.is_empty();
        if !collection_read || !matches!(self.verb.as_str(), "list" | "watch") {
            return self;
        }
        let Some(selector) = field_selector.and_then(|s| FieldSelector::parse_message(s).ok()) else { return self };
        if let Some(name) = selector.exact_match("metadata.name") {
            let segment = name != "." && name != ".." && !name.contains(['/', '%']);
            if segment {
                self.selected_name = name.to_string();
            }
        }
        self
    }

    /// Whether the request is long-running, which APF, timeouts and the inflight gauges treat
    /// apart: kube's `BasicLongRunningRequestCheck`, the verbs `watch` and `proxy` and the
    /// streaming subresources.
    pub fn is_long_running(&self) -> bool {
        matches!(self.verb.as_str(), "watch" | "proxy")
            || matches!(self.subresource.as_str(), "attach" | "exec" | "proxy" | "log" | "portforward")
    }
}

/// Parses a request path and method into a [`RequestInfo`].
///
/// `watch=true` in the query (`watch` or `watch=1`) turns a get/list into a watch, as in kube.
pub fn parse_request_info(method: &str, path: &str, query_watch: bool) -> RequestInfo {
    let mut info = RequestInfo { path: path.to_string(), verb: method.to_lowercase(), ..Default::default() };
    let parts: Vec<String> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).map(String::from).collect();
    let Some(prefix) = parts.first() else { return info };
    let mut rest: &[String] = &parts[1..];
    match prefix.as_str() {
        "api" => {
            info.api_prefix = "api".into();
            let Some(v) = rest.first() else { return info };
            info.api_version = v.clone();
            rest = &rest[1..];
        }
        "apis" => {
            info.api_prefix = "apis".into();
            if rest.len() < 2 {
                if let Some(g) = rest.first() {
                    info.api_group = g.clone();
                }
                return info;
            }
            info.api_group = rest[0].clone();
            info.api_version = rest[1].clone();
            rest = &rest[2..];
        }
        _ => return info,
    }
    if rest.is_empty() {
        return info;
    }
    info.is_resource_request = true;
    info.parts = rest.to_vec();
    info.verb = match method {
        "POST" => "create",
        "GET" | "HEAD" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        other => return RequestInfo { verb: other.to_lowercase(), ..info },
    }
    .into();

    // Namespaced paths: namespaces/<ns>/<resource>...; `namespaces/<ns>` alone is the namespace
    // object itself, and `namespaces/<ns>/status|finalize` its subresources.
    let mut rest = rest.to_vec();
    if rest[0] == "namespaces" && rest.len() > 1 {
        info.namespace = rest[1].clone();
        if rest.len() > 2 && rest[2] != "status" && rest[2] != "finalize" {
            rest = rest[2..].to_vec();
        } else {
            info.name = rest[1].clone();
            info.resource = "namespaces".into();
            info.namespace.clear();
            if rest.len() > 2 {
                info.subresource = rest[2].clone();
            }
            return finish_verb(info, query_watch);
        }
    }
    info.resource = rest[0].clone();
    if let Some(n) = rest.get(1) {
        info.name = n.clone();
    }
    if let Some(s) = rest.get(2) {
        info.subresource = s.clone();
    }
    finish_verb(info, query_watch)
}

fn finish_verb(mut info: RequestInfo, query_watch: bool) -> RequestInfo {
    if info.verb == "get" && info.name.is_empty() {
        info.verb = if query_watch { "watch" } else { "list" }.into();
    } else if info.verb == "get" && query_watch {
        info.verb = "watch".into();
    } else if info.verb == "delete" && info.name.is_empty() {
        info.verb = "deletecollection".into();
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_get() {
        let i = parse_request_info("GET", "/apis/apps/v1/namespaces/ns1/deployments/web", false);
        assert!(i.is_resource_request);
        assert_eq!((i.verb.as_str(), i.api_group.as_str(), i.api_version.as_str()), ("get", "apps", "v1"));
        assert_eq!((i.namespace.as_str(), i.resource.as_str(), i.name.as_str()), ("ns1", "deployments", "web"));
    }

    #[test]
    fn list_watch_and_deletecollection() {
        assert_eq!(parse_request_info("GET", "/api/v1/pods", false).verb, "list");
        assert_eq!(parse_request_info("GET", "/api/v1/namespaces/a/pods", true).verb, "watch");
        assert_eq!(parse_request_info("DELETE", "/api/v1/namespaces/a/pods", false).verb, "deletecollection");
    }

    #[test]
    fn namespace_object_and_its_status() {
        let i = parse_request_info("GET", "/api/v1/namespaces/kube-system", false);
        assert_eq!((i.resource.as_str(), i.name.as_str(), i.namespace.as_str()), ("namespaces", "kube-system", ""));
        let s = parse_request_info("PUT", "/api/v1/namespaces/a/status", false);
        assert_eq!((s.verb.as_str(), s.subresource.as_str()), ("update", "status"));
    }

    #[test]
    fn a_list_or_watch_pinned_to_one_name_by_its_field_selector_carries_that_name() {
        let pinned = |method: &str, path: &str, watch: bool, selector: &str| {
            parse_request_info(method, path, watch).with_selected_name(Some(selector)).selected_name
        };
        let cms = "/api/v1/namespaces/a/configmaps";
        assert_eq!(pinned("GET", cms, true, "metadata.name=kube-root-ca.crt"), "kube-root-ca.crt");
        assert_eq!(pinned("GET", cms, false, "metadata.name==x,metadata.namespace=a"), "x");
        assert_eq!(pinned("GET", cms, false, "metadata.name!=x"), "");
        assert_eq!(pinned("GET", cms, false, "metadata.name=a/b"), "");
        assert_eq!(pinned("GET", cms, false, "metadata.name=.."), "");
        assert_eq!(pinned("GET", cms, false, "metadata.name"), "");
        // Not a collection read: the path's name stands, and nothing is added.
        assert_eq!(pinned("GET", "/api/v1/namespaces/a/configmaps/y", false, "metadata.name=x"), "");
        assert_eq!(pinned("DELETE", cms, false, "metadata.name=x"), "");
        let info = parse_request_info("GET", cms, true).with_selected_name(Some("metadata.name=x"));
        assert_eq!((info.verb.as_str(), info.name.as_str()), ("watch", ""));
    }

    #[test]
    fn subresource() {
        let i = parse_request_info("PATCH", "/apis/apps/v1/namespaces/a/deployments/d/scale", false);
        assert_eq!((i.verb.as_str(), i.subresource.as_str()), ("patch", "scale"));
    }

    #[test]
    fn non_resource() {
        let i = parse_request_info("GET", "/healthz", false);
        assert!(!i.is_resource_request);
        assert_eq!(i.verb, "get");
        let d = parse_request_info("GET", "/apis/apps", false);
        assert!(!d.is_resource_request);
    }
}
