//! Whether one PolicyRule covers a request, as kube's `RuleAllows` decides it (kube:
//! `plugin/pkg/auth/authorizer/rbac`, `pkg/apis/rbac/v1/evaluation_helpers.go`).

use serde_json::Value;

use crate::Attributes;

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// `verbs` (`*` for all).
    pub verbs: Vec<String>,
    /// `apiGroups` (`""` for core, `*` for all).
    pub api_groups: Vec<String>,
    /// `resources` (`pods`, `pods/log`, `*/status`, `*`).
    pub resources: Vec<String>,
    /// `resourceNames`: when set, only these objects.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs` (`/healthz`, `/apis/*`).
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    apimachinery::object::string_list(v.get(key))
}

impl PolicyRule {
    /// A rule from its JSON form.
    pub fn from_json(v: &Value) -> Self {
        PolicyRule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rule in its JSON form: `verbs`, and each other list when it is not empty.
    pub fn to_json(&self) -> Value {
        let mut rule = serde_json::Map::new();
        rule.insert("verbs".into(), self.verbs.clone().into());
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                rule.insert(key.into(), list.clone().into());
            }
        }
        Value::Object(rule)
    }

    /// The rules of a Role or ClusterRole object.
    pub fn all_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|r| r.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// `RuleAllows`.
    pub fn allows(&self, a: &Attributes) -> bool {
        if !any_or(&self.verbs, &a.verb) {
            return false;
        }
        if a.is_resource_request {
            any_or(&self.api_groups, &a.api_group)
                && self.resource_matches(a)
                && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
        } else {
            self.non_resource_urls.iter().any(|u| {
                u == "*" || *u == a.path || u.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix))
            })
        }
    }

    /// `ResourceMatches`: `*`, the exact `resource/subresource`, or `*/subresource`.
    fn resource_matches(&self, a: &Attributes) -> bool {
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            let exact = if a.subresource.is_empty() {
                *r == a.resource
            } else {
                r.len() == a.resource.len() + 1 + a.subresource.len()
                    && r.starts_with(&a.resource)
                    && r[a.resource.len()..].starts_with('/')
                    && r.ends_with(&a.subresource)
            };
            exact
                || (!a.subresource.is_empty()
                    && r.len() == a.subresource.len() + 2
                    && r.starts_with("*/")
                    && r.ends_with(&a.subresource))
        })
    }
}

/// The list holds `*` or `wanted`.
fn any_or(list: &[String], wanted: &str) -> bool {
    list.iter().any(|v| v == "*" || v == wanted)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rule_reads_back_from_its_json_form_without_empty_lists() {
        let rule = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]});
        assert_eq!(PolicyRule::from_json(&rule).to_json(), rule);
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]});
        assert_eq!(PolicyRule::from_json(&urls).to_json(), urls);
    }

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            is_resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_as_kube_matches_them() {
        let r = PolicyRule::from_json(
            &json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]}),
        );
        assert!(r.allows(&attrs("get", "", "pods", "", "p")));
        assert!(r.allows(&attrs("get", "", "pods", "log", "p")));
        assert!(!r.allows(&attrs("get", "", "pods", "exec", "p")));
        assert!(!r.allows(&attrs("delete", "", "pods", "", "p")));
        assert!(!r.allows(&attrs("get", "apps", "pods", "", "p")));

        let sub = PolicyRule::from_json(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(sub.allows(&attrs("update", "apps", "deployments", "status", "d")));
        assert!(!sub.allows(&attrs("update", "apps", "deployments", "", "d")));
        assert!(!sub.allows(&attrs("update", "apps", "deployments", "scale", "d")));

        let named = PolicyRule::from_json(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        );
        assert!(named.allows(&attrs("get", "", "configmaps", "", "a")));
        assert!(!named.allows(&attrs("get", "", "configmaps", "", "b")));
        assert!(!named.allows(&attrs("get", "", "configmaps", "", "")), "a list names no object");

        let urls = PolicyRule::from_json(&json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        let path = |p: &str| Attributes { verb: "get".into(), path: p.into(), ..Default::default() };
        assert!(urls.allows(&path("/healthz")));
        assert!(urls.allows(&path("/apis/apps")));
        assert!(!urls.allows(&path("/healthz/etcd")));
        assert!(!urls.allows(&path("/api")));
        // A resource rule never covers a path, nor a path rule a resource.
        assert!(!r.allows(&path("/healthz")));
        assert!(!urls.allows(&attrs("get", "", "pods", "", "")));
    }
}
