//! Whether a webhook or a policy applies to a request, as kube decides it for both: rules of
//! operations, groups, versions, resources and scope (kube's `rules.Matcher`), and the
//! namespace and object label selectors (`predicates/namespace`, `predicates/object`).
//! Which version of the request a rule matched (`matchPolicy`) is [`crate::versions`]'.

use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::string_list;
use apimachinery::selector::LabelSelector;
use serde_json::Value;

/// One rule (`rules[]` of a webhook, `resourceRules[]` of a policy).
#[derive(Clone, Debug, Default)]
pub struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// Groups, `*` for all.
    pub api_groups: Vec<String>,
    /// Versions, `*` for all.
    pub api_versions: Vec<String>,
    /// `pods`, `pods/status`, `*`, `*/*`, `pods/*`, `*/status`.
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

impl Rule {
    /// The rule as written (`RuleWithOperations`); a missing scope is `*`.
    pub fn parse(r: &Value) -> Rule {
        Rule {
            operations: string_list(r.get("operations")),
            api_groups: string_list(r.get("apiGroups")),
            api_versions: string_list(r.get("apiVersions")),
            resources: string_list(r.get("resources")),
            scope: r.get("scope").and_then(Value::as_str).unwrap_or("*").to_string(),
        }
    }

    /// Whether the rule matches the request's operation, group, version, resource,
    /// subresource and scope.
    pub fn matches(&self, request: &RequestAttributes<'_>) -> bool {
        let listed = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        listed(&self.operations, crate::operation_label(request.operation))
            && listed(&self.api_groups, request.group)
            && listed(&self.api_versions, request.version)
            && resource_listed(&self.resources, request.resource, request.subresource)
            && scope_matches(&self.scope, request.resource, request.group, request.namespace)
    }
}

/// What rules look at in a request.
#[derive(Clone, Copy, Debug)]
pub struct RequestAttributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// API group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, `""` for none.
    pub subresource: &'a str,
    /// Namespace, `""` for cluster-scoped resources.
    pub namespace: &'a str,
}

impl<'a> RequestAttributes<'a> {
    /// The attributes of `request`.
    pub fn of(request: &'a Admit) -> Self {
        let t = &request.target;
        RequestAttributes {
            operation: request.operation,
            group: &t.group,
            version: &t.version,
            resource: &t.resource,
            subresource: t.subresource.map(|s| s.name()).unwrap_or(""),
            namespace: &t.namespace,
        }
    }
}

/// kube's resource matching: `*` is every resource but no subresource, `*/*` everything,
/// `pods/*` every subresource of pods, `*/status` the status of everything.
fn resource_listed(list: &[String], resource: &str, subresource: &str) -> bool {
    list.iter().any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
        if res != "*" && res != resource {
            return false;
        }
        sub == "*" || sub == subresource
    })
}

/// kube's scope rule: the Namespace object itself counts as cluster-scoped.
fn scope_matches(scope: &str, resource: &str, group: &str, namespace: &str) -> bool {
    let is_namespace = group.is_empty() && resource == "namespaces";
    match scope {
        "Namespaced" => !is_namespace && !namespace.is_empty(),
        "Cluster" => is_namespace || namespace.is_empty(),
        _ => true,
    }
}

/// A label selector as written; absent selects everything. Validation refused bad selectors;
/// one that slipped through selects nothing.
pub fn selector(v: Option<&Value>) -> LabelSelector {
    match v.filter(|v| !v.is_null()) {
        Some(v) => LabelSelector::from_label_selector_message(Some(v)).unwrap_or_else(|_| LabelSelector::nothing()),
        None => LabelSelector::everything(),
    }
}

/// A `namespaceSelector` and an `objectSelector`.
#[derive(Clone, Debug)]
pub struct Selectors {
    /// Labels of the request's namespace (of the Namespace itself for a namespace).
    pub namespace: LabelSelector,
    /// Labels of the object or of the old object.
    pub object: LabelSelector,
}

impl Selectors {
    /// The `namespaceSelector` and `objectSelector` members of `v`.
    pub fn parse(v: &Value) -> Selectors {
        Selectors { namespace: selector(v.get("namespaceSelector")), object: selector(v.get("objectSelector")) }
    }

    /// Whether both select the request: the object selector the object's labels or the old
    /// object's, the namespace selector the namespace's labels (the object's own for a
    /// Namespace being created or updated; cluster-scoped objects always). An error when the
    /// namespace cannot be read.
    pub async fn select(&self, objects: &dyn ObjectLookup, request: &Admit, object: &Value) -> Result<bool, String> {
        let labels = |o: &Value| o.pointer("/metadata/labels").and_then(Value::as_object).cloned();
        if !self.object.is_empty() {
            let new = (request.operation != Operation::Delete).then_some(object);
            let matched = [new, request.old_object.as_deref()]
                .into_iter()
                .flatten()
                .any(|o| self.object.matches(labels(o).as_ref()));
            if !matched {
                return Ok(false);
            }
        }
        if self.namespace.is_empty() {
            return Ok(true);
        }
        let t = &request.target;
        let is_namespace = t.group.is_empty() && t.resource == "namespaces";
        if is_namespace && t.subresource.is_none() && request.operation != Operation::Delete {
            return Ok(self.namespace.matches(labels(object).as_ref()));
        }
        if t.namespace.is_empty() && !is_namespace {
            return Ok(true);
        }
        let name = if is_namespace { &t.name } else { &t.namespace };
        let ns = crate::namespaces::lookup(objects, name).await.map_err(|e| e.message)?;
        let ns = ns.ok_or_else(|| format!("namespaces \"{name}\" not found"))?;
        Ok(self.namespace.matches(ns.labels()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        Rule::parse(&v)
    }

    fn attrs<'a>(
        operation: Operation,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
    ) -> RequestAttributes<'a> {
        RequestAttributes { operation, group, version: "v1", resource, subresource: sub, namespace: ns }
    }

    #[test]
    fn rules_match_resources_subresources_and_scope_as_kube() {
        let r =
            rule(json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}));
        assert!(r.matches(&attrs(Operation::Create, "", "pods", "", "ns")));
        assert!(!r.matches(&attrs(Operation::Create, "", "pods", "status", "ns")), "pods is not pods/status");
        assert!(!r.matches(&attrs(Operation::Update, "", "pods", "", "ns")));
        let all = rule(json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}));
        assert!(all.matches(&attrs(Operation::Delete, "apps", "deployments", "", "ns")));
        assert!(!all.matches(&attrs(Operation::Update, "apps", "deployments", "scale", "ns")), "* has no subresources");
        let subs =
            rule(json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/status"]}));
        assert!(subs.matches(&attrs(Operation::Update, "", "pods", "status", "ns")));
        assert!(!subs.matches(&attrs(Operation::Update, "", "pods", "", "ns")));
        let cluster = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
        );
        assert!(
            cluster.matches(&attrs(Operation::Create, "", "namespaces", "", "team")),
            "a namespace is cluster-scoped"
        );
        assert!(!cluster.matches(&attrs(Operation::Create, "", "configmaps", "", "team")));
        let namespaced = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
        );
        assert!(!namespaced.matches(&attrs(Operation::Create, "", "namespaces", "", "team")));
        assert!(namespaced.matches(&attrs(Operation::Create, "", "configmaps", "", "team")));
    }

    #[test]
    fn absent_selectors_select_everything() {
        let s = Selectors::parse(&json!({}));
        assert!(s.namespace.is_empty() && s.object.is_empty());
    }
}
