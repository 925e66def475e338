//! `--authorization-mode=Node`: what a kubelet (`system:node:<name>` in `system:nodes`) may
//! do. It reads the Secrets, ConfigMaps, PersistentVolumeClaims and PersistentVolumes of the
//! pods bound to its node, asks tokens for their ServiceAccounts, and uses its own Lease and
//! CSINode; everything else follows the `system:node` bootstrap role's rules. Relationships are
//! found from the pods the cacher holds for the node (a field-selector read of the pods cache),
//! not from a stored graph: the cost is one cache read per graph-checked request.

use std::sync::Arc;

use apimachinery::lookup::ObjectLookup;
use serde_json::Value;

use crate::Attributes;
use crate::rbac::PolicyRule;

/// What the Node authorizer decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeVerdict {
    /// Allowed.
    Allow,
    /// Not a node, or no relationship: the next authorizer decides, with this reason.
    NoOpinion(String),
}

/// The Node authorizer.
pub struct NodeAuthorizer {
    objects: Arc<dyn ObjectLookup>,
    rules: Vec<PolicyRule>,
}

/// The node a user is, if it is one.
pub fn node_name(a: &Attributes) -> Option<&str> {
    let name = a.user.name.strip_prefix("system:node:")?;
    a.user.in_group("system:nodes").then_some(name)
}

/// Names of objects of `kind` (`secret`, `configMap`) a pod refers to.
fn references(pod: &Value, kind: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &Value| {
        if let Some(s) = v.as_str() {
            out.push(s.to_string());
        }
    };
    let spec = &pod["spec"];
    let name_field = if kind == "secret" { "secretName" } else { "name" };
    let ref_key = format!("{kind}KeyRef");
    let ref_from = format!("{kind}Ref");
    for volume in spec["volumes"].as_array().into_iter().flatten() {
        push(&volume[kind][name_field]);
        for source in volume.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten() {
            push(&source[kind]["name"]);
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec[list].as_array().into_iter().flatten() {
            for env in c["env"].as_array().into_iter().flatten() {
                push(&env["valueFrom"][&ref_key]["name"]);
            }
            for from in c["envFrom"].as_array().into_iter().flatten() {
                push(&from[&ref_from]["name"]);
            }
        }
    }
    if kind == "secret" {
        for s in spec["imagePullSecrets"].as_array().into_iter().flatten() {
            push(&s["name"]);
        }
    }
    out
}

fn claims(pod: &Value) -> Vec<String> {
    let pod_name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let mut out = Vec::new();
    for volume in pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten() {
        if let Some(c) = volume.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) {
            out.push(c.to_string());
        } else if volume.get("ephemeral").is_some() {
            out.push(format!("{pod_name}-{}", volume["name"].as_str().unwrap_or_default()));
        }
    }
    out
}

impl NodeAuthorizer {
    /// A Node authorizer finding pods through `objects`, with `system:node`'s rules.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        let rules = crate::bootstrap::cluster_roles()
            .iter()
            .find(|r| r["metadata"]["name"] == "system:node")
            .map(PolicyRule::all_of)
            .unwrap_or_default();
        NodeAuthorizer { objects, rules }
    }

    async fn pods(&self, node: &str, namespace: &str) -> Vec<Value> {
        let selector = format!("spec.nodeName={node}");
        self.objects.list("", "pods", namespace, &selector).await.unwrap_or_default()
    }

    fn no_relationship(node: &str) -> NodeVerdict {
        NodeVerdict::NoOpinion(format!("no relationship found between node '{node}' and this object"))
    }

    /// Decides `a`.
    pub async fn authorize(&self, a: &Attributes) -> NodeVerdict {
        let Some(node) = node_name(a) else { return NodeVerdict::NoOpinion(String::new()) };
        if !a.is_resource_request
            || !a.api_group.is_empty() && a.api_group != "coordination.k8s.io" && a.api_group != "storage.k8s.io"
        {
            return self.by_rules(a);
        }
        let (group, resource, sub) = (a.api_group.as_str(), a.resource.as_str(), a.subresource.as_str());
        match (group, resource, sub) {
            ("", "secrets" | "configmaps", "") => {
                let single = a.verb == "get" || (matches!(a.verb.as_str(), "list" | "watch") && !a.name.is_empty());
                if !single || a.name.is_empty() {
                    return NodeVerdict::NoOpinion(format!(
                        "can only read individual {resource} bound to pods on node '{node}'"
                    ));
                }
                // A list or watch pinned by name may span namespaces: never for a node.
                if a.namespace.is_empty() {
                    return NodeVerdict::NoOpinion("can only read namespaced object of this type".into());
                }
                let kind = if resource == "secrets" { "secret" } else { "configMap" };
                let related = self.pods(node, &a.namespace).await.iter().any(|p| references(p, kind).contains(&a.name));
                if related { NodeVerdict::Allow } else { Self::no_relationship(node) }
            }
            ("", "persistentvolumeclaims", "") if a.verb == "get" => {
                let related = self.pods(node, &a.namespace).await.iter().any(|p| claims(p).contains(&a.name));
                if related { NodeVerdict::Allow } else { Self::no_relationship(node) }
            }
            ("", "persistentvolumes", "") if a.verb == "get" => {
                for pod in self.pods(node, "").await {
                    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
                    for claim in claims(&pod) {
                        let pvc = self.objects.get("", "persistentvolumeclaims", ns, &claim).await.ok().flatten();
                        if pvc
                            .and_then(|c| c.pointer("/spec/volumeName").and_then(Value::as_str).map(str::to_string))
                            .as_deref()
                            == Some(a.name.as_str())
                        {
                            return NodeVerdict::Allow;
                        }
                    }
                }
                Self::no_relationship(node)
            }
            ("", "secrets" | "configmaps" | "persistentvolumeclaims" | "persistentvolumes", _) => {
                NodeVerdict::NoOpinion(format!("can only get individual {resource}"))
            }
            ("", "serviceaccounts", "token") if a.verb == "create" => {
                let related = self
                    .pods(node, &a.namespace)
                    .await
                    .iter()
                    .any(|p| p["spec"]["serviceAccountName"] == a.name.as_str());
                if related { NodeVerdict::Allow } else { Self::no_relationship(node) }
            }
            ("coordination.k8s.io", "leases", _) => {
                let own =
                    a.namespace == "kube-node-lease" && (a.name == node || a.verb == "create" && a.name.is_empty());
                if own {
                    self.by_rules(a)
                } else {
                    NodeVerdict::NoOpinion(
                        "can only access node lease with the same name as the requesting node".into(),
                    )
                }
            }
            ("storage.k8s.io", "csinodes", _) => {
                if a.name == node || a.verb == "create" && a.name.is_empty() {
                    self.by_rules(a)
                } else {
                    NodeVerdict::NoOpinion("can only access CSINode with the same name as the requesting node".into())
                }
            }
            _ => self.by_rules(a),
        }
    }

    fn by_rules(&self, a: &Attributes) -> NodeVerdict {
        if self.rules.iter().any(|r| r.allows(a)) { NodeVerdict::Allow } else { NodeVerdict::NoOpinion(String::new()) }
    }
}
