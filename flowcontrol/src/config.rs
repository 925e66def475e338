//! The APF configuration in force: FlowSchemas in matching order and the priority levels they
//! name, compiled from the stored objects (or from kube's bootstrap objects until they are
//! stored), and classification against it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use apimachinery::messages::Classification;
use apimachinery::object::{ObjectExt, string_list};
use apimachinery::request::{RequestInfo, UserInfo};
use serde_json::Value;

use crate::bootstrap;

/// Who a rule is about.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

/// One `rules[]` entry.
#[derive(Clone, Debug, Default)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Clone, Debug, Default)]
struct ResourceRule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    namespaces: Vec<String>,
    cluster_scope: bool,
}

#[derive(Clone, Debug, Default)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

/// How requests of a schema are told apart into flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// A FlowSchema, compiled.
#[derive(Clone, Debug)]
pub struct Schema {
    /// Its name.
    pub name: String,
    /// Its uid (the name until it is stored).
    pub uid: String,
    /// The priority level it sends requests to.
    pub priority_level: String,
    precedence: i64,
    distinguisher: Distinguisher,
    rules: Vec<Rule>,
}

/// A PriorityLevelConfiguration, compiled.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// Its name.
    pub name: String,
    /// Its uid (the name until it is stored).
    pub uid: String,
    /// Its spec as stored (`type`, `limited`, `exempt`).
    pub spec: Value,
}

impl Level {
    /// Whether it is the `Exempt` type.
    pub fn exempt(&self) -> bool {
        self.spec.get("type").and_then(Value::as_str) == Some("Exempt")
    }
}

/// Schemas in matching order and the levels by name.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    /// By `matchingPrecedence`, then name.
    pub schemas: Vec<Schema>,
    /// By name.
    pub levels: HashMap<String, Level>,
    /// The names and resourceVersions compiled from, to tell whether anything changed.
    pub fingerprint: Vec<(String, String)>,
}

/// The object's uid, or its name while it is not stored (kube's bootstrap objects).
fn uid_or_name(v: &Value) -> String {
    if v.uid().is_empty() { v.name().to_string() } else { v.uid().to_string() }
}

fn subject(s: &Value) -> Option<Subject> {
    let name_of = |k: &str| s.pointer(&format!("/{k}/name")).and_then(Value::as_str).map(String::from);
    match s.get("kind").and_then(Value::as_str)? {
        "User" => name_of("user").map(Subject::User),
        "Group" => name_of("group").map(Subject::Group),
        "ServiceAccount" => Some(Subject::ServiceAccount {
            namespace: s.pointer("/serviceAccount/namespace").and_then(Value::as_str)?.to_string(),
            name: name_of("serviceAccount")?,
        }),
        _ => None,
    }
}

fn schema(v: &Value) -> Schema {
    let spec = v.get("spec").cloned().unwrap_or(Value::Null);
    let rules = spec
        .get("rules")
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .map(|r| Rule {
                    subjects: r
                        .get("subjects")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(subject)
                        .collect(),
                    resource_rules: r
                        .get("resourceRules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|rr| ResourceRule {
                            verbs: string_list(rr.get("verbs")),
                            api_groups: string_list(rr.get("apiGroups")),
                            resources: string_list(rr.get("resources")),
                            namespaces: string_list(rr.get("namespaces")),
                            cluster_scope: rr.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
                        })
                        .collect(),
                    non_resource_rules: r
                        .get("nonResourceRules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|nr| NonResourceRule {
                            verbs: string_list(nr.get("verbs")),
                            urls: string_list(nr.get("nonResourceURLs")),
                        })
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    let distinguisher = match spec.pointer("/distinguisherMethod/type").and_then(Value::as_str) {
        Some("ByUser") => Distinguisher::ByUser,
        Some("ByNamespace") => Distinguisher::ByNamespace,
        _ => Distinguisher::None,
    };
    Schema {
        name: v.name().to_string(),
        uid: uid_or_name(v),
        priority_level: spec
            .pointer("/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        precedence: spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(1000),
        distinguisher,
        rules,
    }
}

fn listed(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

impl Rule {
    fn matches(&self, user: &UserInfo, request: &RequestInfo) -> bool {
        let who = self.subjects.iter().any(|s| match s {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(name) => name == "*" || user.groups.iter().any(|g| g == name),
            Subject::ServiceAccount { namespace, name } => {
                let prefix = format!("system:serviceaccount:{namespace}:");
                user.name.strip_prefix(&prefix).is_some_and(|n| name == "*" || n == name)
            }
        });
        if !who {
            return false;
        }
        if request.is_resource_request {
            self.resource_rules.iter().any(|r| {
                let resource_ok = r.resources.iter().any(|x| {
                    x == "*"
                        || (request.subresource.is_empty() && *x == request.resource)
                        || (!request.subresource.is_empty()
                            && *x == format!("{}/{}", request.resource, request.subresource))
                });
                listed(&r.verbs, &request.verb)
                    && listed(&r.api_groups, &request.api_group)
                    && resource_ok
                    && if request.namespace.is_empty() {
                        r.cluster_scope
                    } else {
                        listed(&r.namespaces, &request.namespace)
                    }
            })
        } else {
            self.non_resource_rules.iter().any(|r| {
                listed(&r.verbs, &request.verb)
                    && r.urls.iter().any(|u| {
                        u == "*"
                            || *u == request.path
                            || u.strip_suffix('*').is_some_and(|prefix| request.path.starts_with(prefix))
                    })
            })
        }
    }
}

impl Compiled {
    /// Compiles `schemas` and `levels` (stored objects); with none stored, kube's bootstrap
    /// objects stand in.
    pub fn new(mut schemas: Vec<Value>, mut levels: Vec<Value>) -> Compiled {
        if schemas.is_empty() {
            schemas = bootstrap::mandatory_flow_schemas();
            schemas.extend(bootstrap::suggested_flow_schemas());
        }
        if levels.is_empty() {
            levels = bootstrap::mandatory_priority_levels();
            levels.extend(bootstrap::suggested_priority_levels());
        }
        let mut fingerprint: Vec<(String, String)> = schemas
            .iter()
            .chain(&levels)
            .map(|o| (format!("{}/{}", o["kind"].as_str().unwrap_or(""), o.name()), o.resource_version().to_string()))
            .collect();
        fingerprint.sort();
        let mut compiled: Vec<Schema> = schemas.iter().map(schema).collect();
        compiled.sort_by(|a, b| a.precedence.cmp(&b.precedence).then_with(|| a.name.cmp(&b.name)));
        let levels = levels
            .iter()
            .map(|l| {
                let name = l.name().to_string();
                (name.clone(), Level { name, uid: uid_or_name(l), spec: l.get("spec").cloned().unwrap_or(Value::Null) })
            })
            .collect();
        Compiled { schemas: compiled, levels, fingerprint }
    }

    /// The first schema in matching order whose rules match and whose level exists (kube
    /// skips a dangling schema), and the flow within it.
    pub fn classify(&self, user: &UserInfo, request: &RequestInfo) -> Classification {
        for s in &self.schemas {
            let Some(level) = self.levels.get(&s.priority_level) else { continue };
            if !s.rules.iter().any(|r| r.matches(user, request)) {
                continue;
            }
            let flow_distinguisher = match s.distinguisher {
                Distinguisher::None => String::new(),
                Distinguisher::ByUser => user.name.clone(),
                Distinguisher::ByNamespace => request.namespace.clone(),
            };
            return Classification {
                flow_schema: s.name.clone(),
                flow_schema_uid: s.uid.clone(),
                priority_level: level.name.clone(),
                priority_level_uid: level.uid.clone(),
                exempt: level.exempt(),
                flow_distinguisher,
            };
        }
        // No catch-all stored (it is mandatory and restored, so only briefly): kube answers
        // with the catch-all level as well.
        Classification {
            flow_schema: "catch-all".into(),
            flow_schema_uid: "catch-all".into(),
            priority_level: "catch-all".into(),
            priority_level_uid: "catch-all".into(),
            exempt: false,
            flow_distinguisher: user.name.clone(),
        }
    }
}

/// The configuration shared by the classifier (on callers' tasks) and the flow-control stage
/// (which refreshes it). A read lock held only to clone an `Arc`.
#[derive(Clone)]
pub struct SharedConfig(Arc<RwLock<Arc<Compiled>>>);

impl Default for SharedConfig {
    fn default() -> Self {
        SharedConfig(Arc::new(RwLock::new(Arc::new(Compiled::new(Vec::new(), Vec::new())))))
    }
}

impl SharedConfig {
    /// The configuration in force.
    pub fn current(&self) -> Arc<Compiled> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Puts `compiled` in force.
    pub fn set(&self, compiled: Compiled) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(compiled);
    }

    /// The request's schema and level.
    pub fn classify(&self, user: &UserInfo, request: &RequestInfo) -> Classification {
        self.current().classify(user, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::request::parse_request_info;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn bootstrap_schemas_classify_as_kube() {
        let c = Compiled::new(Vec::new(), Vec::new());
        let list = parse_request_info("GET", "/api/v1/namespaces/team/pods", false);
        let at = |u: &UserInfo, r: &RequestInfo| {
            let k = c.classify(u, r);
            (k.flow_schema, k.priority_level, k.exempt, k.flow_distinguisher)
        };
        assert_eq!(
            at(&user("admin", &["system:masters", "system:authenticated"]), &list),
            ("exempt".into(), "exempt".into(), true, String::new())
        );
        assert_eq!(
            at(&user("dev", &["system:authenticated"]), &list),
            ("global-default".into(), "global-default".into(), false, "dev".into())
        );
        let sa = user("system:serviceaccount:team:robot", &["system:serviceaccounts", "system:authenticated"]);
        assert_eq!(at(&sa, &list).0, "service-accounts");
        let probe = parse_request_info("GET", "/readyz", false);
        assert_eq!(at(&UserInfo::anonymous(), &probe).1, "exempt");
        let kubelet = user("system:node:n1", &["system:nodes", "system:authenticated"]);
        let node_status = parse_request_info("PUT", "/api/v1/nodes/n1/status", false);
        assert_eq!(at(&kubelet, &node_status).0, "system-node-high");
        // global-default matches system:unauthenticated too; catch-all only what no group has.
        assert_eq!(at(&UserInfo::anonymous(), &list).0, "global-default");
        assert_eq!(at(&user("odd", &[]), &list).0, "catch-all");
    }
}
