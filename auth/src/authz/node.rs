//! `--authorization-mode=Node`: what a kubelet (`system:node:<name>` in `system:nodes`) may
//! do. It reads the Secrets, ConfigMaps, PersistentVolumeClaims and PersistentVolumes of the
//! pods bound to its node, asks tokens for their ServiceAccounts, and uses its own Lease and
//! CSINode; everything else follows the `system:node` bootstrap role's rules. Relationships are
//! found from the pods the cacher holds for the node (a field-selector read of the pods cache),
//! not from a stored graph: the cost is one cache read per graph-checked request.

use std::sync::Arc;

use apimachinery::lookup::ObjectLookup;
use serde::Deserialize;
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

/// What the graph checks read of a pod: the objects it refers to. Decoded from the cached
/// JSON with everything else skipped, since a kubelet's request reads every pod on its node.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodRefs {
    #[serde(default, deserialize_with = "nullable")]
    metadata: PodMeta,
    #[serde(default, deserialize_with = "nullable")]
    spec: PodSpecRefs,
}

#[derive(Debug, Default, Deserialize)]
struct PodMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpecRefs {
    #[serde(default)]
    service_account_name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    volumes: Vec<VolumeRefs>,
    #[serde(default, deserialize_with = "nullable")]
    init_containers: Vec<ContainerRefs>,
    #[serde(default, deserialize_with = "nullable")]
    containers: Vec<ContainerRefs>,
    #[serde(default, deserialize_with = "nullable")]
    ephemeral_containers: Vec<ContainerRefs>,
    #[serde(default, deserialize_with = "nullable")]
    image_pull_secrets: Vec<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VolumeRefs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    secret: Option<SecretVolume>,
    #[serde(default)]
    config_map: Option<NameRef>,
    #[serde(default)]
    projected: Option<Projected>,
    #[serde(default)]
    persistent_volume_claim: Option<ClaimRef>,
    #[serde(default)]
    ephemeral: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SecretVolume {
    #[serde(default)]
    secret_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Projected {
    #[serde(default, deserialize_with = "nullable")]
    sources: Vec<ProjectedSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectedSource {
    #[serde(default)]
    secret: Option<NameRef>,
    #[serde(default)]
    config_map: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimRef {
    #[serde(default)]
    claim_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerRefs {
    #[serde(default, deserialize_with = "nullable")]
    env: Vec<EnvRefs>,
    #[serde(default, deserialize_with = "nullable")]
    env_from: Vec<EnvFromRefs>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvRefs {
    #[serde(default)]
    value_from: Option<EnvSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvSource {
    #[serde(default)]
    secret_key_ref: Option<NameRef>,
    #[serde(default)]
    config_map_key_ref: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvFromRefs {
    #[serde(default)]
    secret_ref: Option<NameRef>,
    #[serde(default)]
    config_map_ref: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
struct NameRef {
    #[serde(default)]
    name: Option<String>,
}

/// A field sent as `null` reads as its default, as an absent one does.
fn nullable<'de, D: serde::Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Which of a pod's references a check follows.
#[derive(Clone, Copy, PartialEq)]
enum Referenced {
    Secret,
    ConfigMap,
}

impl PodRefs {
    /// Whether the pod refers to the Secret or ConfigMap `name`.
    fn refers_to(&self, kind: Referenced, name: &str) -> bool {
        let is = |r: &Option<NameRef>| r.as_ref().and_then(|r| r.name.as_deref()) == Some(name);
        let spec = &self.spec;
        let volumes = spec.volumes.iter().any(|v| {
            let own = match kind {
                Referenced::Secret => v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(name),
                Referenced::ConfigMap => is(&v.config_map),
            };
            own || v.projected.iter().flat_map(|p| &p.sources).any(|s| match kind {
                Referenced::Secret => is(&s.secret),
                Referenced::ConfigMap => is(&s.config_map),
            })
        });
        let containers = [&spec.init_containers, &spec.containers, &spec.ephemeral_containers].into_iter().flatten();
        let env = containers.clone().any(|c| {
            c.env.iter().filter_map(|e| e.value_from.as_ref()).any(|from| match kind {
                Referenced::Secret => is(&from.secret_key_ref),
                Referenced::ConfigMap => is(&from.config_map_key_ref),
            }) || c.env_from.iter().any(|from| match kind {
                Referenced::Secret => is(&from.secret_ref),
                Referenced::ConfigMap => is(&from.config_map_ref),
            })
        });
        let pull =
            kind == Referenced::Secret && spec.image_pull_secrets.iter().any(|s| s.name.as_deref() == Some(name));
        volumes || env || pull
    }

    /// The PersistentVolumeClaims the pod uses: named ones, and its generic ephemeral volumes'
    /// (`<pod>-<volume>`).
    fn claims(&self) -> Vec<String> {
        let pod_name = self.metadata.name.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        for volume in &self.spec.volumes {
            if let Some(c) = volume.persistent_volume_claim.as_ref().and_then(|c| c.claim_name.as_deref()) {
                out.push(c.to_string());
            } else if volume.ephemeral.is_some() {
                out.push(format!("{pod_name}-{}", volume.name.as_deref().unwrap_or_default()));
            }
        }
        out
    }
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

    /// The references of the pods bound to `node` in `namespace` (all when empty).
    async fn pods(&self, node: &str, namespace: &str) -> Vec<PodRefs> {
        let selector = format!("spec.nodeName={node}");
        let pods = self.objects.list_json("", "pods", namespace, &selector).await.unwrap_or_default();
        // A pod that does not decode refers to nothing: its check finds no relationship.
        pods.iter()
            .filter_map(|json| match serde_json::from_slice::<PodRefs>(json) {
                Ok(refs) => Some(refs),
                Err(e) => {
                    tracing::warn!(node, error = %e, "a pod bound to the node does not decode: no reference of it is followed");
                    None
                }
            })
            .collect()
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
                let kind = if resource == "secrets" { Referenced::Secret } else { Referenced::ConfigMap };
                let related = self.pods(node, &a.namespace).await.iter().any(|p| p.refers_to(kind, &a.name));
                if related { NodeVerdict::Allow } else { Self::no_relationship(node) }
            }
            ("", "persistentvolumeclaims", "") if a.verb == "get" => {
                let related = self.pods(node, &a.namespace).await.iter().any(|p| p.claims().contains(&a.name));
                if related { NodeVerdict::Allow } else { Self::no_relationship(node) }
            }
            ("", "persistentvolumes", "") if a.verb == "get" => {
                for pod in self.pods(node, "").await {
                    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                    for claim in pod.claims() {
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
                    .any(|p| p.spec.service_account_name.as_deref() == Some(a.name.as_str()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refs(pod: Value) -> PodRefs {
        serde_json::from_value(pod).unwrap()
    }

    #[test]
    fn every_kind_of_reference_is_found_and_nothing_else() {
        let pod = refs(json!({
            "metadata": {"name": "p", "namespace": "ns", "managedFields": [{"manager": "m"}]},
            "spec": {
                "serviceAccountName": "sa",
                "volumes": [
                    {"name": "a", "secret": {"secretName": "s-volume"}},
                    {"name": "b", "configMap": {"name": "c-volume"}},
                    {"name": "c", "projected": {"sources": [
                        {"secret": {"name": "s-projected"}},
                        {"configMap": {"name": "c-projected"}},
                        {"serviceAccountToken": {"path": "token"}},
                    ]}},
                    {"name": "d", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "e", "ephemeral": {"volumeClaimTemplate": {}}},
                ],
                "initContainers": [{"env": [{"valueFrom": {"secretKeyRef": {"name": "s-env", "key": "k"}}}]}],
                "containers": [
                    {"env": [{"name": "x", "value": "y"}, {"valueFrom": {"configMapKeyRef": {"name": "c-env"}}}]},
                    {"envFrom": [{"secretRef": {"name": "s-from"}}, {"configMapRef": {"name": "c-from"}}]},
                ],
                "ephemeralContainers": [{"envFrom": [{"secretRef": {"name": "s-debug"}}]}],
                "imagePullSecrets": [{"name": "s-pull"}],
            },
        }));
        for name in ["s-volume", "s-projected", "s-env", "s-from", "s-debug", "s-pull"] {
            assert!(pod.refers_to(Referenced::Secret, name), "{name}");
            assert!(!pod.refers_to(Referenced::ConfigMap, name), "{name} as a ConfigMap");
        }
        for name in ["c-volume", "c-projected", "c-env", "c-from"] {
            assert!(pod.refers_to(Referenced::ConfigMap, name), "{name}");
            assert!(!pod.refers_to(Referenced::Secret, name), "{name} as a Secret");
        }
        assert!(!pod.refers_to(Referenced::Secret, "other"));
        assert_eq!(pod.claims(), ["claim", "p-e"]);
        assert_eq!(pod.spec.service_account_name.as_deref(), Some("sa"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
    }

    #[test]
    fn null_and_missing_lists_refer_to_nothing() {
        let pod = refs(json!({"metadata": {"name": "p"}, "spec": {"volumes": null, "containers": [{"env": null}]}}));
        assert!(!pod.refers_to(Referenced::Secret, ""));
        assert!(pod.claims().is_empty());
        let bare = refs(json!({"metadata": {"name": "p"}, "spec": null}));
        assert!(bare.claims().is_empty() && bare.spec.service_account_name.is_none());
    }
}
