//! What kube-apiserver v1.30 fills in for the served built-in kinds: the functions each kind's
//! strategy calls, at three moments, as in kube:
//! - decode-time defaults (`pkg/apis/*/v1/defaults.go` and the generated
//!   `zz_generated.defaults.go`): on every create, update and patch body, and on every read back
//!   from storage. Only defaults of feature gates that are on by default in 1.30 are applied.
//! - `PrepareForCreate` (and the generic `BeforeCreate` bits): status reset, pod phase and QoS
//!   class, a Job's generated selector and labels, a Namespace's finalizer, after the uid and
//!   name are assigned and before validation.
//! - `BeforeUpdate` and `PrepareForUpdate`: identity fields carried over from the stored object
//!   ([`carry_identity`]), status kept ([`keep_status`]), generation bumped
//!   ([`bump_generation`]), a Service's allocated addresses carried over.
//!
//! Allocation of Service cluster IPs is the registry's; it writes results back with
//! [`set_cluster_ip`].
//!
//! Objects are the versioned (wire) JSON; nothing here fails: malformed members are left for
//! validation to report.

pub mod admissionregistration;
pub mod apiextensions;
pub mod flowcontrol;
pub mod pod;
pub use apimachinery::catalogue::update::{bump_generation, carry_identity, keep_status, prepare_for_status_update};
pub use kube_cel::quantity;

use base64::Engine;
use serde_json::{Map, Value, json};

use apimachinery::object::ObjectExt;

/// Whether a JSON member counts as "not set" (absent or `null`), as a nil Go pointer would.
pub(crate) fn is_unset(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

/// Sets `key` when it is absent or null (kube's `if obj.X == nil`).
pub(crate) fn set_if_unset(m: &mut Map<String, Value>, key: &str, value: Value) {
    if is_unset(m.get(key)) {
        m.insert(key.to_string(), value);
    }
}

/// Sets a string `key` when absent, null or empty (kube's `if obj.X == ""`).
pub(crate) fn set_str_if_empty(m: &mut Map<String, Value>, key: &str, value: &str) {
    if m.get(key).and_then(Value::as_str).unwrap_or("").is_empty()
        && !m.get(key).is_some_and(|v| !v.is_string() && !v.is_null())
    {
        m.insert(key.to_string(), json!(value));
    }
}

/// The object member `key`, created (or replaced, if not an object) as `{}`.
pub(crate) fn child_obj<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = m.entry(key.to_string()).or_insert_with(|| json!({}));
    if !v.is_object() {
        *v = json!({});
    }
    v.as_object_mut().expect("object")
}

fn obj_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for p in path {
        cur = cur.get_mut(*p)?;
    }
    cur.as_object_mut()
}

/// Pod defaults (`SetObjectDefaults_Pod`).
pub fn default_pod(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        pod::default_pod_spec(spec, true);
    }
}

/// ReplicaSet defaults.
pub fn default_replicaset(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_if_unset(spec, "replicas", json!(1));
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// CronJob defaults.
pub fn default_cronjob(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_str_if_empty(spec, "concurrencyPolicy", "Allow");
        set_if_unset(spec, "suspend", json!(false));
        set_if_unset(spec, "successfulJobsHistoryLimit", json!(3));
        set_if_unset(spec, "failedJobsHistoryLimit", json!(1));
    }
    default_template(obj, &["spec", "jobTemplate", "spec", "template", "spec"]);
}

/// Namespace defaults: the `kubernetes.io/metadata.name` label and an `Active` phase.
pub fn default_namespace(obj: &mut Value) {
    let name = obj.name().to_string();
    if !name.is_empty() {
        set_label(obj, "kubernetes.io/metadata.name", &name);
    }
    if let Some(status) = obj_mut(obj, &["status"]) {
        set_str_if_empty(status, "phase", "Active");
    }
}

/// Node defaults: canonical resource lists, allocatable defaulted to capacity.
pub fn default_node(obj: &mut Value) {
    if let Some(status) = obj_mut(obj, &["status"]) {
        for list in ["capacity", "allocatable"] {
            if let Some(l) = status.get_mut(list).and_then(Value::as_object_mut) {
                pod::canonicalize_resource_list(l);
            }
        }
        if is_unset(status.get("allocatable"))
            && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned()
        {
            status.insert("allocatable".into(), cap);
        }
    }
}

/// Endpoints defaults: ports' protocol `TCP`.
pub fn default_endpoints(obj: &mut Value) {
    for subset in obj.get_mut("subsets").and_then(Value::as_array_mut).into_iter().flatten() {
        for p in subset.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                set_str_if_empty(p, "protocol", "TCP");
            }
        }
    }
}

/// RoleBinding and ClusterRoleBinding defaults: the RBAC API group on the role reference and
/// on User and Group subjects.
pub fn default_role_binding(obj: &mut Value) {
    if let Some(r) = obj_mut(obj, &["roleRef"]) {
        set_str_if_empty(r, "apiGroup", "rbac.authorization.k8s.io");
    }
    for s in obj.get_mut("subjects").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(s) = s.as_object_mut() else { continue };
        if s.get("apiGroup").and_then(Value::as_str).unwrap_or("").is_empty()
            && matches!(s.get("kind").and_then(Value::as_str), Some("User" | "Group"))
        {
            s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
}

fn set_label(obj: &mut Value, key: &str, value: &str) {
    let meta = obj.meta_mut();
    let labels = child_obj(meta, "labels");
    labels.insert(key.to_string(), json!(value));
}

/// Pod template defaults at `path` (the template's `spec`).
fn default_template(obj: &mut Value, path: &[&str]) {
    if let Some(spec) = obj_mut(obj, path) {
        pod::default_pod_spec(spec, false);
    }
}

/// Deployment defaults.
pub fn default_deployment(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_if_unset(spec, "replicas", json!(1));
        let strategy = child_obj(spec, "strategy");
        set_str_if_empty(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            let ru = child_obj(strategy, "rollingUpdate");
            set_if_unset(ru, "maxUnavailable", json!("25%"));
            set_if_unset(ru, "maxSurge", json!("25%"));
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        set_if_unset(spec, "progressDeadlineSeconds", json!(600));
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// Statefulset defaults.
pub fn default_statefulset(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_str_if_empty(spec, "podManagementPolicy", "OrderedReady");
        let strategy = child_obj(spec, "updateStrategy");
        if strategy.get("type").and_then(Value::as_str).unwrap_or("").is_empty() {
            strategy.insert("type".into(), json!("RollingUpdate"));
            set_if_unset(strategy, "rollingUpdate", json!({}));
        }
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = strategy.get_mut("rollingUpdate").and_then(Value::as_object_mut)
        {
            set_if_unset(ru, "partition", json!(0));
        }
        // StatefulSetAutoDeletePVC is beta and on in 1.30.
        let policy = child_obj(spec, "persistentVolumeClaimRetentionPolicy");
        set_str_if_empty(policy, "whenDeleted", "Retain");
        set_str_if_empty(policy, "whenScaled", "Retain");
        set_if_unset(spec, "replicas", json!(1));
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        for t in spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(t) = t.as_object_mut() else { continue };
            // The apps/v1 conversion writes the embedded claims' TypeMeta.
            set_str_if_empty(t, "apiVersion", "v1");
            set_str_if_empty(t, "kind", "PersistentVolumeClaim");
            pod::default_pvc_spec(child_obj(t, "spec"));
            set_str_if_empty(child_obj(t, "status"), "phase", "Pending");
        }
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// Daemonset defaults.
pub fn default_daemonset(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        let strategy = child_obj(spec, "updateStrategy");
        set_str_if_empty(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            let ru = child_obj(strategy, "rollingUpdate");
            set_if_unset(ru, "maxUnavailable", json!(1));
            set_if_unset(ru, "maxSurge", json!(0));
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// Job defaults.
pub fn default_job(obj: &mut Value) {
    let template_labels = obj.pointer("/spec/template/metadata/labels").filter(|v| v.is_object()).cloned();
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        if is_unset(spec.get("completions")) && is_unset(spec.get("parallelism")) {
            spec.insert("completions".into(), json!(1));
            spec.insert("parallelism".into(), json!(1));
        }
        set_if_unset(spec, "parallelism", json!(1));
        if is_unset(spec.get("backoffLimit")) {
            let limit = if is_unset(spec.get("backoffLimitPerIndex")) { json!(6) } else { json!(i32::MAX) };
            spec.insert("backoffLimit".into(), limit);
        }
        set_if_unset(spec, "completionMode", json!("NonIndexed"));
        set_if_unset(spec, "suspend", json!(false));
        let has_failure_policy = !is_unset(spec.get("podFailurePolicy"));
        for rule in spec
            .get_mut("podFailurePolicy")
            .and_then(|p| p.get_mut("rules"))
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for pattern in rule.get_mut("onPodConditions").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = pattern.as_object_mut() {
                    set_str_if_empty(p, "status", "True");
                }
            }
        }
        // JobPodReplacementPolicy is beta and on in 1.30.
        set_if_unset(
            spec,
            "podReplacementPolicy",
            json!(if has_failure_policy { "Failed" } else { "TerminatingOrFailed" }),
        );
        set_if_unset(spec, "manualSelector", json!(false));
    }
    // A Job without labels takes its pod template's labels.
    if let Some(labels) = template_labels
        && obj.labels().is_none_or(Map::is_empty)
        && labels.as_object().is_some_and(|l| !l.is_empty())
    {
        obj.meta_mut().insert("labels".into(), labels);
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// Service defaults.
pub fn default_service(obj: &mut Value) {
    let accessible = externally_accessible(obj);
    let Some(spec) = obj_mut(obj, &["spec"]) else { return };
    set_str_if_empty(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .filter(|v| !v.is_null());
            if timeout.is_none() {
                spec.insert("sessionAffinityConfig".into(), json!({"clientIP": {"timeoutSeconds": 10800}}));
            }
        }
        _ => {}
    }
    set_str_if_empty(spec, "type", "ClusterIP");
    for p in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(p) = p.as_object_mut() else { continue };
        set_str_if_empty(p, "protocol", "TCP");
        let target_unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if target_unset && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".into(), port);
        }
    }
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    if accessible {
        set_str_if_empty(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        set_if_unset(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_if_unset(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    // LoadBalancerIPMode is beta and on in 1.30.
    if ty == "LoadBalancer"
        && let Some(ingress) = obj.pointer_mut("/status/loadBalancer/ingress").and_then(Value::as_array_mut)
    {
        for ing in ingress.iter_mut().filter_map(Value::as_object_mut) {
            if ing.get("ip").and_then(Value::as_str).is_some_and(|ip| !ip.is_empty()) {
                set_if_unset(ing, "ipMode", json!("VIP"));
            }
        }
    }
}

/// `SetDefaults_Secret` plus the v1 conversion that folds `stringData` into `data`.
pub fn default_secret(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    set_str_if_empty(m, "type", "Opaque");
    if let Some(Value::Object(string_data)) = m.remove("stringData") {
        let data = child_obj(m, "data");
        for (k, v) in string_data {
            let s = v.as_str().unwrap_or("");
            data.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(s)));
        }
    }
}

/// The Pod strategy's `PrepareForCreate`: `Pending` phase, QoS class, and the scheduling-gated
/// condition when the pod has scheduling gates.
pub fn prepare_pod_for_create(obj: &mut Value) {
    let qos = obj.get("spec").map(pod::qos_class).unwrap_or("BestEffort");
    let mut status = json!({"phase": "Pending", "qosClass": qos});
    let gated = obj.pointer("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "lastTransitionTime": apimachinery::object::now_rfc3339(),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    obj["status"] = status;
}

/// A strategy's status reset on create: the object starts with `status` (Go serialises the
/// non-omitempty counters of some statuses even when zero, so they are given here).
pub fn reset_status(obj: &mut Value, status: Value) {
    obj["status"] = status;
}

/// The Job strategy's `PrepareForCreate`: empty status and the generated selector.
pub fn prepare_job_for_create(obj: &mut Value) {
    obj["status"] = json!({});
    generate_job_selector(obj);
}

/// The Service strategy's `PrepareForCreate`: empty load-balancer status and normalised
/// cluster IPs.
pub fn prepare_service_for_create(obj: &mut Value) {
    obj["status"] = json!({"loadBalancer": {}});
    normalize_cluster_ips(obj);
}

/// The Namespace strategy's `PrepareForCreate`: `Active`, the name label, and the
/// `kubernetes` finalizer.
pub fn prepare_namespace_for_create(obj: &mut Value) {
    obj["status"] = json!({"phase": "Active"});
    let name = obj.name().to_string();
    if !name.is_empty() {
        set_label(obj, "kubernetes.io/metadata.name", &name);
    }
    let spec = child_obj(obj.as_object_mut().expect("object"), "spec");
    let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    let list = finalizers.as_array_mut().expect("array");
    if !list.iter().any(|f| f == "kubernetes") {
        list.push(json!("kubernetes"));
    }
}

/// The Job strategy's `generateSelector`: unless `manualSelector` is true, the pod template
/// gets `controller-uid`/`job-name` labels (legacy and `batch.kubernetes.io/` forms) and the
/// selector matches the uid. A Job whose labels were copied from its template (see
/// [`apply_defaults`]) shares them with the template in kube, so it sees the new labels too.
fn generate_job_selector(obj: &mut Value) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = obj.uid().to_string();
    let name = obj.name().to_string();
    let template_labels_before = obj.pointer("/spec/template/metadata/labels").cloned();
    let shares_labels = match obj.labels() {
        None => true,
        Some(l) if l.is_empty() => true,
        Some(l) => template_labels_before.as_ref().and_then(Value::as_object) == Some(l),
    };
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let template = child_obj(spec, "template");
    let labels = child_obj(child_obj(template, "metadata"), "labels");
    for key in ["job-name", "batch.kubernetes.io/job-name"] {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    let labels = Value::Object(labels.clone());
    let selector = child_obj(spec, "selector");
    child_obj(selector, "matchLabels").entry("batch.kubernetes.io/controller-uid").or_insert_with(|| json!(uid));
    if shares_labels {
        obj.meta_mut().insert("labels".into(), labels);
    }
}

/// A Deployment's generation also counts annotation changes (`kubectl rollout` writes them).
pub fn deployment_generation_changes(new: &Value, old: &Value) -> bool {
    new.get("spec") != old.get("spec") || new.pointer("/metadata/annotations") != old.pointer("/metadata/annotations")
}

/// The Namespace strategy's `PrepareForUpdate`: finalizers change only through `/finalize`.
pub fn keep_namespace_finalizers(new: &mut Value, old: &Value) {
    let finalizers = old.pointer("/spec/finalizers").cloned();
    let spec = child_obj(new.as_object_mut().expect("object"), "spec");
    match finalizers {
        Some(f) => {
            spec.insert("finalizers".into(), f);
        }
        None => {
            spec.remove("finalizers");
        }
    }
}

fn service_type(obj: &Value) -> &str {
    obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

fn cluster_ip(obj: &Value) -> &str {
    obj.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("")
}

fn family_of(ip: &str) -> &'static str {
    if ip.contains(':') { "IPv6" } else { "IPv4" }
}

/// The Service strategy's `NormalizeClusterIPs` on create, plus what the allocator infers for
/// addresses it does not have to allocate: `clusterIP`/`clusterIPs` agree, and a headless or
/// user-chosen address gets `ipFamilyPolicy: SingleStack` and its family.
fn normalize_cluster_ips(obj: &mut Value) {
    if service_type(obj) == "ExternalName" {
        return;
    }
    let ip = cluster_ip(obj).to_string();
    let ips_empty = obj.pointer("/spec/clusterIPs").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if !ip.is_empty() && ips_empty {
        spec.insert("clusterIPs".into(), json!([ip]));
    } else if ip.is_empty()
        && let Some(first) = spec.get("clusterIPs").and_then(|a| a.get(0)).cloned()
    {
        spec.insert("clusterIP".into(), first);
    }
    let ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
    if !ip.is_empty() {
        let family = if ip == "None" { "IPv4" } else { family_of(&ip) };
        set_if_unset(spec, "ipFamilyPolicy", json!("SingleStack"));
        if spec.get("ipFamilies").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert("ipFamilies".into(), json!([family]));
        }
    }
}

/// Whether the registry must allocate a cluster IP for this Service: any type but
/// `ExternalName` with no `clusterIP` (neither an address nor `None`).
pub fn needs_cluster_ip(obj: &Value) -> bool {
    service_type(obj) != "ExternalName" && cluster_ip(obj).is_empty()
}

/// The address the user asked for, if any (not `None`): the allocator must reserve exactly it.
pub fn requested_cluster_ip(obj: &Value) -> Option<&str> {
    let ip = cluster_ip(obj);
    (service_type(obj) != "ExternalName" && !ip.is_empty() && ip != "None").then_some(ip)
}

/// Records an allocated cluster IP: `clusterIP`, `clusterIPs`, and the single-stack family
/// fields the allocator sets.
pub fn set_cluster_ip(obj: &mut Value, ip: &str) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    set_if_unset(spec, "ipFamilyPolicy", json!("SingleStack"));
    if spec.get("ipFamilies").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert("ipFamilies".into(), json!([family_of(ip)]));
    }
}

/// Indices of `spec.ports` that need a node port: `NodePort` services, and `LoadBalancer`
/// ones unless `allocateLoadBalancerNodePorts` is false, whose port has no `nodePort` yet.
pub fn node_ports_to_allocate(obj: &Value) -> Vec<usize> {
    if !needs_node_port(obj) {
        return Vec::new();
    }
    obj.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .enumerate()
                .filter(|(_, p)| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0)
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default()
}

/// The node ports a Service holds (to reserve on create, release on delete).
pub fn node_ports(obj: &Value) -> Vec<u16> {
    let mut out: Vec<u16> = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
        .filter_map(|n| u16::try_from(n).ok())
        .filter(|n| *n != 0)
        .collect();
    if let Some(h) =
        obj.pointer("/spec/healthCheckNodePort").and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok())
        && h != 0
    {
        out.push(h);
    }
    out
}

/// Records an allocated node port for `spec.ports[index]`.
pub fn set_node_port(obj: &mut Value, index: usize, port: u16) {
    if let Some(p) = obj.pointer_mut(&format!("/spec/ports/{index}")).and_then(Value::as_object_mut) {
        p.insert("nodePort".into(), json!(port));
    }
}

/// Whether a `LoadBalancer` Service with `externalTrafficPolicy: Local` still needs a
/// `healthCheckNodePort`.
pub fn needs_health_check_node_port(obj: &Value) -> bool {
    service_type(obj) == "LoadBalancer"
        && obj.pointer("/spec/externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
        && obj.pointer("/spec/healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0) == 0
}

/// Records an allocated `healthCheckNodePort`.
pub fn set_health_check_node_port(obj: &mut Value, port: u16) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("healthCheckNodePort".into(), json!(port));
    }
}

/// The Service registry's `patchAllocatedValues`: an update that omits the cluster IPs or node
/// ports (a `kubectl replace` of a manifest, typically) keeps the allocated ones.
pub fn patch_allocated_values(new: &mut Value, old: &Value) {
    let (new_ty, old_ty) = (service_type(new).to_string(), service_type(old));
    if new_ty != "ExternalName" && old_ty != "ExternalName" {
        let ip_unset = cluster_ip(new).is_empty();
        let spec = child_obj(new.as_object_mut().expect("object"), "spec");
        if ip_unset && let Some(v) = old.pointer("/spec/clusterIP") {
            spec.insert("clusterIP".into(), v.clone());
        }
        // As kube's: the list only when the update has none.
        let listed = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        if !listed(spec.get("clusterIPs")) && listed(old.pointer("/spec/clusterIPs")) {
            spec.insert("clusterIPs".into(), old["spec"]["clusterIPs"].clone());
        }
        if ip_unset {
            for key in ["ipFamilies", "ipFamilyPolicy"] {
                if is_unset(spec.get(key))
                    && let Some(v) = old.pointer(&format!("/spec/{key}"))
                {
                    spec.insert(key.into(), v.clone());
                }
            }
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        // As kube's: node ports by port name (the user may have changed anything else of the
        // port), and never one the new object already gives another port.
        let given = |s: &Value| -> Vec<i64> {
            let ports = s.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            ports.iter().filter_map(|p| p.get("nodePort").and_then(Value::as_i64)).filter(|n| *n != 0).collect()
        };
        let (old_given, new_given) = (given(old), given(new));
        let old_ports = old.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let name = |p: &Value| p.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        // Go's map by name: a later port of a name wins.
        let by_name: Vec<(String, i64)> =
            old_ports.iter().map(|p| (name(p), p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))).collect();
        for p in new.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if !p.is_object() || p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let wanted = name(p);
            let Some(&(_, n)) = by_name.iter().rev().find(|(name, _)| *name == wanted) else { continue };
            let used = old_given.contains(&n) && new_given.contains(&n);
            if n != 0 && !used {
                p["nodePort"] = json!(n);
            }
        }
    }
    let needs_health = |s: &Value| {
        service_type(s) == "LoadBalancer"
            && s.pointer("/spec/externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
    };
    if needs_health(old)
        && needs_health(new)
        && new.pointer("/spec/healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0) == 0
        && let Some(h) = old.pointer("/spec/healthCheckNodePort").filter(|h| h.as_i64().unwrap_or(0) != 0)
    {
        new["spec"]["healthCheckNodePort"] = h.clone();
    }
}

/// kube's `needsNodePort`: NodePort Services, and LoadBalancers unless
/// `allocateLoadBalancerNodePorts` is false.
fn needs_node_port(obj: &Value) -> bool {
    let ty = service_type(obj);
    ty == "NodePort"
        || (ty == "LoadBalancer"
            && obj.pointer("/spec/allocateLoadBalancerNodePorts").and_then(Value::as_bool) != Some(false))
}

/// kube's `ExternallyAccessible`: a Service reached from outside the cluster, which takes an
/// `externalTrafficPolicy`.
pub fn externally_accessible(obj: &Value) -> bool {
    let ty = service_type(obj);
    let has_external_ips = obj.pointer("/spec/externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && has_external_ips)
}

/// NodePort and LoadBalancer Services' ports without a `nodePort` take the one a port of the
/// same number asks for (a port served over TCP and UDP shares one), as kube's
/// `findRequestedNodePort` gives it.
pub fn share_requested_node_ports(obj: &mut Value) {
    let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else { return };
    let requested: Vec<(Value, Value)> = ports
        .iter()
        .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
        .filter_map(|p| Some((p.get("port")?.clone(), p.get("nodePort")?.clone())))
        .collect();
    for p in ports.iter_mut().filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0) {
        if let Some((_, node_port)) = requested.iter().find(|(number, _)| p.get("port") == Some(number))
            && let Some(p) = p.as_object_mut()
        {
            p.insert("nodePort".into(), node_port.clone());
        }
    }
}

/// kube's `dropTypeDependentFields`: a Service whose type changed to one that does not use
/// its node ports, `healthCheckNodePort`, `externalTrafficPolicy` or load balancer fields
/// gives them up, unless the update set them itself.
pub fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let needs = |s: &Value| {
        let ty = service_type(s);
        ty == "NodePort" || ty == "LoadBalancer"
    };
    let same = |new: &Value, key: &str| new.pointer(&format!("/spec/{key}")) == old.pointer(&format!("/spec/{key}"));
    let mut dropped = Vec::new();
    if externally_accessible(old) && !externally_accessible(new) && same(new, "externalTrafficPolicy") {
        dropped.push("externalTrafficPolicy");
    }
    let load_balancer = |s: &Value| service_type(s) == "LoadBalancer";
    if load_balancer(old) && !load_balancer(new) {
        for key in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if same(new, key) {
                dropped.push(key);
            }
        }
    }
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        for key in dropped {
            spec.remove(key);
        }
    }
    // kube's `sameNodePorts`: ports may be added, removed or changed, as long as no node port
    // is new.
    let node_ports = |s: &Value| -> Vec<i64> {
        let ports = s.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        ports.iter().filter_map(|p| p.get("nodePort").and_then(Value::as_i64)).filter(|n| *n != 0).collect()
    };
    let (new_ports, old_ports) = (node_ports(new), node_ports(old));
    if needs(old) && !needs(new) && new_ports.iter().all(|n| old_ports.contains(n)) {
        for p in new.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                p.remove("nodePort");
            }
        }
    }
    let needs_health = |s: &Value| {
        service_type(s) == "LoadBalancer"
            && s.pointer("/spec/externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
    };
    let health = |s: &Value| s.pointer("/spec/healthCheckNodePort").cloned();
    if needs_health(old)
        && !needs_health(new)
        && health(new) == health(old)
        && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("healthCheckNodePort");
    }
}

#[cfg(test)]
mod tests;

// ---------------------------------------------------------------------------------------------
// The volume, networking, scheduling and controller kinds (each kind's `SetDefaults_*`).

/// PersistentVolume: `Retain`, `Filesystem`, and the `Pending` phase.
pub fn default_persistent_volume(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_if_unset(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        set_if_unset(spec, "volumeMode", json!("Filesystem"));
        if let Some(c) = spec.get_mut("capacity").and_then(Value::as_object_mut) {
            pod::canonicalize_resource_list(c);
        }
    }
    if let Some(status) = obj_mut(obj, &["status"]) {
        set_if_unset(status, "phase", json!("Pending"));
    }
}

/// PersistentVolumeClaim: the spec's defaults and the `Pending` phase.
pub fn default_persistent_volume_claim(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        pod::default_pvc_spec(spec);
    }
    if let Some(status) = obj_mut(obj, &["status"]) {
        set_if_unset(status, "phase", json!("Pending"));
    }
}

/// ReplicationController: one replica, selector and labels from the template, the template's
/// pod defaults.
pub fn default_replication_controller(obj: &mut Value) {
    let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    if let Some(labels) = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
        if obj.pointer("/spec/selector").and_then(Value::as_object).is_none_or(Map::is_empty)
            && let Some(spec) = obj_mut(obj, &["spec"])
        {
            spec.insert("selector".into(), labels.clone());
        }
        if obj.pointer("/metadata/labels").and_then(Value::as_object).is_none_or(Map::is_empty) {
            obj.meta_mut().insert("labels".into(), labels);
        }
    }
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_if_unset(spec, "replicas", json!(1));
    }
    default_template(obj, &["spec", "template", "spec"]);
}

/// PodTemplate: the template's pod defaults.
pub fn default_pod_template(obj: &mut Value) {
    default_template(obj, &["template", "spec"]);
}

/// StorageClass: `Delete` and `Immediate`.
pub fn default_storage_class(obj: &mut Value) {
    if let Some(sc) = obj.as_object_mut() {
        set_if_unset(sc, "reclaimPolicy", json!("Delete"));
        set_if_unset(sc, "volumeBindingMode", json!("Immediate"));
    }
}

/// CSIDriver: attach required, no pod info, no capacity tracking, persistent volumes.
pub fn default_csi_driver(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, &["spec"]) {
        set_if_unset(spec, "attachRequired", json!(true));
        set_if_unset(spec, "podInfoOnMount", json!(false));
        set_if_unset(spec, "storageCapacity", json!(false));
        set_if_unset(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
        set_if_unset(spec, "requiresRepublish", json!(false));
        if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
    }
}

/// PriorityClass: preempts lower priorities.
pub fn default_priority_class(obj: &mut Value) {
    if let Some(pc) = obj.as_object_mut() {
        set_if_unset(pc, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// NetworkPolicy: TCP ports, and the policy types the rules imply.
pub fn default_network_policy(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, &["spec"]) else { return };
    for (rules, _) in [("ingress", "from"), ("egress", "to")] {
        for rule in spec.get_mut(rules).and_then(Value::as_array_mut).into_iter().flatten() {
            for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = port.as_object_mut() {
                    set_if_unset(p, "protocol", json!("TCP"));
                }
            }
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".into(), types);
    }
}

/// EndpointSlice: TCP ports with an empty name.
pub fn default_endpoint_slice(obj: &mut Value) {
    for port in obj.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(p) = port.as_object_mut() {
            set_if_unset(p, "name", json!(""));
            set_if_unset(p, "protocol", json!("TCP"));
        }
    }
}

/// IngressClass: parameters are cluster-scoped unless said otherwise.
pub fn default_ingress_class(obj: &mut Value) {
    if let Some(params) = obj_mut(obj, &["spec", "parameters"]) {
        set_if_unset(params, "scope", json!("Cluster"));
    }
}

/// LimitRange (container limits): defaults from maxima, default requests from defaults and minima.
pub fn default_limit_range(obj: &mut Value) {
    for limit in obj.pointer_mut("/spec/limits").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(l) = limit.as_object_mut() else { continue };
        if l.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let max = l.get("max").and_then(Value::as_object).cloned().unwrap_or_default();
        let min = l.get("min").and_then(Value::as_object).cloned().unwrap_or_default();
        let default = child_obj(l, "default");
        for (k, v) in &max {
            default.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let default = default.clone();
        let request = child_obj(l, "defaultRequest");
        for (k, v) in default.iter().chain(min.iter()) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}
