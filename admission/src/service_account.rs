//! kube's `ServiceAccount` plugin: every new pod runs as a ServiceAccount that exists
//! (`default` when it names none), and, unless automounting is turned off on the pod or its
//! ServiceAccount, gets the projected `kube-api-access-*` volume (a bound token, the cluster
//! CA, the namespace) mounted in every container at kube's path.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{AdmissionPlugin, Review};

/// Where kubelet mounts the token volume; containers already mounting something there are left
/// alone.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// How long the projected token lives before kubelet refreshes it (kube's 1 h + 7 s, so
/// tokens it hands out are recognisable).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// kube waits for the `default` ServiceAccount of a new namespace, which a controller creates
/// a moment after the namespace: this many lookups, this far apart.
const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;
const DEFAULT_ACCOUNT_RETRY: Duration = Duration::from_millis(150);

/// Defaults and checks pods' ServiceAccounts.
pub struct ServiceAccount {
    objects: Arc<dyn ObjectLookup>,
}

impl ServiceAccount {
    /// The plugin reading ServiceAccounts through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        ServiceAccount { objects }
    }

    async fn account(&self, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let attempts = if name == "default" { DEFAULT_ACCOUNT_ATTEMPTS } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(DEFAULT_ACCOUNT_RETRY).await;
            }
            if let Some(sa) = self.objects.get("", "serviceaccounts", namespace, name).await? {
                return Ok(Some(sa));
            }
        }
        Ok(None)
    }
}

fn is_mirror_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some()
}

/// The pod's own setting wins over its ServiceAccount's; both unset means mount.
fn automounts(pod: &Value, account: &Value) -> bool {
    let setting = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_bool);
    setting(pod, "/spec/automountServiceAccountToken")
        .or_else(|| setting(account, "/automountServiceAccountToken"))
        .unwrap_or(true)
}

fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

/// Adds the token volume and mounts it in each container not mounting that path already.
fn mount_token(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    let has_volume = |prefix: &str| {
        volumes.as_array().is_some_and(|v| {
            v.iter()
                .any(|v| v["name"].as_str().is_some_and(|n| n.starts_with(prefix)) && v.pointer("/projected").is_some())
        })
    };
    if has_volume("kube-api-access-") {
        return;
    }
    let name = format!("kube-api-access-{}", apimachinery::object::random_suffix());
    if let Some(v) = volumes.as_array_mut() {
        v.push(token_volume(&name));
    }
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        for c in containers {
            let mounts = c.as_object_mut().map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(mounts) = mounts.and_then(Value::as_array_mut) else { continue };
            if mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                continue;
            }
            mounts.push(json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
        }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, pod: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        let t = &request.target;
        let is_pod = t.group.is_empty() && t.resource == "pods" && t.subresource.is_none();
        if !is_pod || request.operation != Operation::Create || is_mirror_pod(pod) {
            return Ok(());
        }
        let named = pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("");
        let account_name = if named.is_empty() { "default".to_string() } else { named.to_string() };
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("serviceAccountName".into(), account_name.clone().into());
            spec.insert("serviceAccount".into(), account_name.clone().into());
        }
        let Some(account) = self.account(&t.namespace, &account_name).await? else {
            let pod_name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            return Err(ApiError::forbidden(
                "",
                "pods",
                pod_name,
                &format!(
                    "error looking up service account {}/{account_name}: serviceaccount \"{account_name}\" not found",
                    t.namespace
                ),
            ));
        };
        if automounts(pod, &account) {
            mount_token(pod);
        }
        // A pod naming no pull secrets gets its account's.
        let own = pod.pointer("/spec/imagePullSecrets").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
        let account_secrets = account.get("imagePullSecrets").and_then(Value::as_array).filter(|s| !s.is_empty());
        if let (false, Some(secrets), Some(spec)) =
            (own, account_secrets, pod.get_mut("spec").and_then(Value::as_object_mut))
        {
            let names: Vec<Value> = secrets.iter().map(|s| json!({"name": s["name"]})).collect();
            spec.insert("imagePullSecrets".into(), Value::Array(names));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};

    /// The plugin over these ServiceAccounts of namespace `ns`.
    fn plugin(accounts: Vec<Value>) -> ServiceAccount {
        let objects = accounts.into_iter().fold(Objects::default(), |o, a| o.with("", "serviceaccounts", "ns", a));
        ServiceAccount::new(Arc::new(objects))
    }

    async fn run(p: &ServiceAccount, mut object: Value) -> Result<Value, ApiError> {
        let request = admit(Operation::Create, "", "pods", object.clone());
        p.mutate(&request, &mut object, &mut Review::default()).await.map(|()| object)
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[tokio::test]
    async fn a_pod_gets_the_default_account_and_its_token_volume() {
        let p = plugin(vec![json!({"metadata": {"name": "default"}})]);
        let object = pod(
            json!({"containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": TOKEN_MOUNT_PATH}]}]}),
        );
        let out = run(&p, object).await.unwrap();
        assert_eq!(out["spec"]["serviceAccountName"], "default");
        let volume = &out["spec"]["volumes"][0];
        let name = volume["name"].as_str().unwrap();
        assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5, "{name}");
        assert_eq!(volume["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3607);
        assert_eq!(out["spec"]["containers"][0]["volumeMounts"][0]["name"], name);
        assert_eq!(out["spec"]["containers"][1]["volumeMounts"].as_array().unwrap().len(), 1, "own mount kept");
        let with_secrets = json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "registry"}]});
        let p = plugin(vec![with_secrets]);
        let object = pod(json!({"containers": [{"name": "a"}]}));
        let out = run(&p, object).await.unwrap();
        assert_eq!(out["spec"]["imagePullSecrets"], json!([{"name": "registry"}]), "the account's pull secrets");
    }

    #[tokio::test]
    async fn automounting_off_on_the_account_or_the_pod_mounts_nothing() {
        let off = json!({"metadata": {"name": "robot"}, "automountServiceAccountToken": false});
        let p = plugin(vec![off]);
        let object = pod(json!({"serviceAccountName": "robot", "containers": [{"name": "a"}]}));
        let out = run(&p, object).await.unwrap();
        assert!(out["spec"].get("volumes").is_none());
        let object = pod(
            json!({"serviceAccountName": "robot", "automountServiceAccountToken": true, "containers": [{"name": "a"}]}),
        );
        let out = run(&p, object).await.unwrap();
        assert_eq!(out["spec"]["volumes"].as_array().unwrap().len(), 1, "the pod's own setting wins");
    }

    #[tokio::test]
    async fn a_missing_account_is_refused_as_kube_words_it() {
        let p = plugin(vec![]);
        let object = pod(json!({"serviceAccountName": "ghost", "containers": [{"name": "a"}]}));
        let e = run(&p, object).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: error looking up service account ns/ghost: serviceaccount \"ghost\" not found"
        );
    }
}
