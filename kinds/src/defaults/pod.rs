//! Pod spec defaults (`SetDefaults_PodSpec`, `SetDefaults_Pod`, `SetDefaults_Container`, the
//! probe, port, volume and env defaults of `pkg/apis/core/v1`), and the QoS class the pod
//! strategy computes on create.

use serde_json::{Map, Value, json};
use validation::pod::volume_sources;

use super::quantity;
use super::{child_obj, is_unset, set_if_unset, set_str_if_empty};

/// Defaults a pod spec. `is_pod` adds what only a `Pod` gets (not a template):
/// `enableServiceLinks`, requests copied from limits, host ports under `hostNetwork`.
pub fn default_pod_spec(spec: &mut Map<String, Value>, is_pod: bool) {
    mirror_service_account(spec);
    set_str_if_empty(spec, "dnsPolicy", "ClusterFirst");
    set_str_if_empty(spec, "restartPolicy", "Always");
    if is_unset(spec.get("securityContext")) {
        spec.insert("securityContext".into(), json!({}));
    }
    set_if_unset(spec, "terminationGracePeriodSeconds", json!(30));
    set_str_if_empty(spec, "schedulerName", "default-scheduler");
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool).unwrap_or(false);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
                if is_pod && list != "ephemeralContainers" {
                    default_requests_from_limits(c);
                }
                if is_pod && host_network && list != "ephemeralContainers" {
                    default_host_network_ports(c);
                }
            }
        }
    }
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            default_volume(v);
        }
    }
    if let Some(overhead) = spec.get_mut("overhead").and_then(Value::as_object_mut) {
        canonicalize_resource_list(overhead);
    }
    if is_pod {
        set_if_unset(spec, "enableServiceLinks", json!(true));
    }
}

/// `SetDefaults_Container` and the generated defaults of its members.
fn default_container(c: &mut Map<String, Value>) {
    if c.get("imagePullPolicy").and_then(Value::as_str).unwrap_or("").is_empty() {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image).as_deref() == Some("latest") { "Always" } else { "IfNotPresent" };
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    set_str_if_empty(c, "terminationMessagePath", "/dev/termination-log");
    set_str_if_empty(c, "terminationMessagePolicy", "File");
    let resources = child_obj(c, "resources");
    for list in ["limits", "requests"] {
        if let Some(l) = resources.get_mut(list).and_then(Value::as_object_mut) {
            canonicalize_resource_list(l);
        }
    }
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_str_if_empty(p, "protocol", "TCP");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(p);
        }
    }
    if let Some(lc) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lc.get_mut(hook).and_then(Value::as_object_mut) {
                default_handler(h);
            }
        }
    }
    if let Some(Value::Array(env)) = c.get_mut("env") {
        for e in env.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(fr) = e.get_mut("valueFrom").and_then(|v| v.get_mut("fieldRef")).and_then(Value::as_object_mut)
            {
                set_str_if_empty(fr, "apiVersion", "v1");
            }
            if let Some(rr) =
                e.get_mut("valueFrom").and_then(|v| v.get_mut("resourceFieldRef")).and_then(Value::as_object_mut)
            {
                canonicalize_quantity(rr, "divisor");
            }
        }
    }
}

fn default_handler(h: &mut Map<String, Value>) {
    if let Some(http) = h.get_mut("httpGet").and_then(Value::as_object_mut) {
        set_str_if_empty(http, "path", "/");
        set_str_if_empty(http, "scheme", "HTTP");
    }
    if let Some(grpc) = h.get_mut("grpc").and_then(Value::as_object_mut) {
        set_if_unset(grpc, "service", json!(""));
    }
}

/// `SetDefaults_Probe` plus its handler's defaults.
fn default_probe(p: &mut Map<String, Value>) {
    default_handler(p);
    for (k, v) in [("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)] {
        if p.get(k).and_then(Value::as_i64).unwrap_or(0) == 0 {
            p.insert(k.into(), json!(v));
        }
    }
}

/// The pod-only rule: a limit without a request sets the request.
fn default_requests_from_limits(c: &mut Map<String, Value>) {
    let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else { return };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else { return };
    let requests = child_obj(resources, "requests");
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

fn default_host_network_ports(c: &mut Map<String, Value>) {
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                && let Some(cp) = p.get("containerPort").cloned()
            {
                p.insert("hostPort".into(), cp);
            }
        }
    }
}

/// `SetDefaults_ResourceList`: round up to milli precision, then the canonical form.
pub fn canonicalize_resource_list(list: &mut Map<String, Value>) {
    for v in list.values_mut() {
        if let Ok(q) = quantity::from_json(v) {
            *v = json!(q.round_up_milli().canonical());
        }
    }
}

fn canonicalize_quantity(m: &mut Map<String, Value>, key: &str) {
    if let Some(v) = m.get_mut(key)
        && let Ok(q) = quantity::from_json(v)
    {
        *v = json!(q.canonical());
    }
}

fn default_downward_items(items: Option<&mut Value>) {
    for item in items.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(fr) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
            set_str_if_empty(fr, "apiVersion", "v1");
        }
        if let Some(rr) = item.get_mut("resourceFieldRef").and_then(Value::as_object_mut) {
            canonicalize_quantity(rr, "divisor");
        }
    }
}

/// `SetDefaults_Volume` and the per-source defaults.
fn default_volume(v: &mut Map<String, Value>) {
    if volume_sources(v).is_empty() {
        v.insert("emptyDir".into(), json!({}));
    }
    for src in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(src).and_then(Value::as_object_mut) {
            set_if_unset(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = v.get_mut("downwardAPI").and_then(Value::as_object_mut) {
        default_downward_items(d.get_mut("items"));
    }
    if let Some(Value::Array(sources)) = v.get_mut("projected").and_then(|p| p.get_mut("sources")) {
        for s in sources.iter_mut() {
            if let Some(t) = s.get_mut("serviceAccountToken").and_then(Value::as_object_mut) {
                set_if_unset(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = s.get_mut("downwardAPI").and_then(Value::as_object_mut) {
                default_downward_items(d.get_mut("items"));
            }
        }
    }
    if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_if_unset(h, "type", json!(""));
    }
    if let Some(e) = v.get_mut("emptyDir").and_then(Value::as_object_mut) {
        canonicalize_quantity(e, "sizeLimit");
    }
    if let Some(i) = v.get_mut("iscsi").and_then(Value::as_object_mut) {
        set_str_if_empty(i, "iscsiInterface", "default");
    }
    if let Some(r) = v.get_mut("rbd").and_then(Value::as_object_mut) {
        set_str_if_empty(r, "pool", "rbd");
        set_str_if_empty(r, "user", "admin");
        set_str_if_empty(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = v.get_mut("azureDisk").and_then(Value::as_object_mut) {
        set_if_unset(a, "cachingMode", json!("ReadWrite"));
        set_if_unset(a, "fsType", json!("ext4"));
        set_if_unset(a, "readOnly", json!(false));
        set_if_unset(a, "kind", json!("Shared"));
    }
    if let Some(s) = v.get_mut("scaleIO").and_then(Value::as_object_mut) {
        set_str_if_empty(s, "storageMode", "ThinProvisioned");
        set_str_if_empty(s, "fsType", "xfs");
    }
    if let Some(spec) = v
        .get_mut("ephemeral")
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        default_pvc_spec(spec);
    }
}

/// `SetDefaults_PersistentVolumeClaimSpec` (volumeMode) and the resource lists.
pub fn default_pvc_spec(spec: &mut Map<String, Value>) {
    set_if_unset(spec, "volumeMode", json!("Filesystem"));
    if let Some(r) = spec.get_mut("resources").and_then(Value::as_object_mut) {
        for list in ["limits", "requests"] {
            if let Some(l) = r.get_mut(list).and_then(Value::as_object_mut) {
                canonicalize_resource_list(l);
            }
        }
    }
}

/// The tag `parsers.ParseImageName` finds: `latest` when neither tag nor digest is given,
/// `None` when the reference does not parse (kube then defaults to `IfNotPresent`).
pub fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image != image.trim() {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    // The path (after an optional registry host) must be lower case.
    let path = match repo.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => rest,
        _ => repo,
    };
    let path_ok = !path.is_empty()
        && path.split('/').all(|c| {
            !c.is_empty()
                && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && c.as_bytes()[0].is_ascii_alphanumeric()
                && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
        });
    if !path_ok {
        return None;
    }
    if let Some(t) = tag
        && (t.is_empty() || t.len() > 128 || !t.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
    {
        return None;
    }
    if digest.is_some_and(|d| !d.contains(':')) {
        return None;
    }
    match (tag, digest) {
        (Some(t), _) => Some(t.to_string()),
        (None, Some(_)) => Some(String::new()),
        (None, None) => Some("latest".to_string()),
    }
}

/// `qos.GetPodQOS`: `BestEffort`, `Burstable` or `Guaranteed` from the containers' and init
/// containers' cpu and memory requests and limits.
pub fn qos_class(spec: &Value) -> &'static str {
    use std::collections::BTreeMap;
    let mut requests: BTreeMap<String, i128> = BTreeMap::new();
    let mut limits: BTreeMap<String, i128> = BTreeMap::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|k| spec.get(k).and_then(Value::as_array).into_iter().flatten());
    for c in containers {
        let list = |name: &str| -> Vec<(String, i128)> {
            c.get("resources")
                .and_then(|r| r.get(name))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter(|(k, _)| *k == "cpu" || *k == "memory")
                        .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q.nanos)))
                        .filter(|(_, n)| *n > 0)
                        .collect()
                })
                .unwrap_or_default()
        };
        for (k, n) in list("requests") {
            *requests.entry(k).or_default() += n;
        }
        let lims = list("limits");
        let has = |r: &str| lims.iter().any(|(k, _)| k == r);
        if !(has("cpu") && has("memory")) {
            guaranteed = false;
        }
        for (k, n) in lims {
            *limits.entry(k).or_default() += n;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.iter().all(|(k, r)| limits.get(k) == Some(r)) && requests.len() == limits.len() {
        return "Guaranteed";
    }
    "Burstable"
}

/// kube's v1 conversion of the deprecated `serviceAccount`: it names the account when
/// `serviceAccountName` does not, and is written back as a copy of `serviceAccountName`.
pub fn mirror_service_account(spec: &mut Map<String, Value>) {
    let name = |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let account = name(spec.get("serviceAccountName")).or_else(|| name(spec.get("serviceAccount")));
    if let Some(account) = account {
        spec.insert("serviceAccountName".into(), account.clone().into());
        spec.insert("serviceAccount".into(), account.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_tag() {
        assert_eq!(image_tag("nginx").as_deref(), Some("latest"));
        assert_eq!(image_tag("nginx:latest").as_deref(), Some("latest"));
        assert_eq!(image_tag("nginx:1.25").as_deref(), Some("1.25"));
        assert_eq!(image_tag("localhost:5000/app").as_deref(), Some("latest"));
        assert_eq!(image_tag("registry.k8s.io/pause:3.9").as_deref(), Some("3.9"));
        assert_eq!(image_tag("busybox@sha256:abc").as_deref(), Some(""));
        assert_eq!(image_tag("Nginx"), None);
        assert_eq!(image_tag(""), None);
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&json!({"containers": [{"name": "a"}]})), "BestEffort");
        let g = json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(&g), "Guaranteed");
        let b = json!({"containers": [{"resources": {"requests": {"cpu": "100m"}}}]});
        assert_eq!(qos_class(&b), "Burstable");
    }
}
