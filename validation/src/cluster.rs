//! Validation of the volume, policy, networking, scheduling and certificate kinds: the rules
//! users hit, with kube 1.30's field paths and messages (kube: `pkg/apis/core/validation`,
//! `pkg/apis/{policy,networking,scheduling,storage,certificates,node,apps}/validation`).

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::names;
use apimachinery::error::Cause;

const ACCESS_MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];

fn access_modes(out: &mut Vec<Cause>, path: &Path, modes: &[Value], required_detail: &str) {
    if modes.is_empty() {
        out.push(field::required(path, required_detail));
    }
    for m in modes.iter().filter_map(Value::as_str) {
        if !ACCESS_MODES.contains(&m) {
            out.push(field::not_supported(path, Bad::s(m), &ACCESS_MODES));
        }
    }
    if modes.len() > 1 && modes.iter().any(|m| m == "ReadWriteOncePod") {
        out.push(field::forbidden(path, "may not use ReadWriteOncePod with other access modes"));
    }
}

fn positive_storage(out: &mut Vec<Cause>, path: &Path, q: Option<&Value>) {
    match q {
        None => out.push(field::required(path, "")),
        Some(v) => {
            if kube_cel::quantity::from_json(v).is_ok_and(|q| q.is_zero()) {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                out.push(field::invalid(path, Bad::s(text), "must be greater than zero"));
            }
        }
    }
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `ValidatePersistentVolumeClaimSpec`: access modes and a storage request.
pub fn persistent_volume_claim(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    access_modes(&mut out, &sp.child("accessModes"), arr(spec, "accessModes"), "at least 1 access mode is required");
    positive_storage(&mut out, &sp.child("resources").key("storage"), spec.pointer("/resources/requests/storage"));
    let class = text(spec, "storageClassName");
    if !class.is_empty() {
        for msg in names::dns1123_subdomain(class) {
            out.push(field::invalid(&sp.child("storageClassName"), Bad::s(class), &msg));
        }
    }
    volume_mode(&mut out, &sp.child("volumeMode"), spec);
    out
}

fn volume_mode(out: &mut Vec<Cause>, path: &Path, spec: &Value) {
    if let Some(m) = spec.get("volumeMode").and_then(Value::as_str).filter(|m| !["Block", "Filesystem"].contains(m)) {
        out.push(field::not_supported(path, Bad::s(m), &["Block", "Filesystem"]));
    }
}

/// The members of `PersistentVolumeSource`, in kube's order.
const PV_SOURCES: [&str; 22] = [
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// `ValidatePersistentVolumeSpec`: access modes, capacity, reclaim policy, one volume type.
pub fn persistent_volume(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    access_modes(&mut out, &sp.child("accessModes"), arr(spec, "accessModes"), "");
    match spec.get("capacity").and_then(Value::as_object) {
        None => out.push(field::required(&sp.child("capacity"), "")),
        Some(c) => positive_storage(&mut out, &sp.child("capacity").key("storage"), c.get("storage")),
    }
    let policies = ["Delete", "Recycle", "Retain"];
    if let Some(p) = spec.get("persistentVolumeReclaimPolicy").and_then(Value::as_str).filter(|p| !policies.contains(p))
    {
        out.push(field::not_supported(&sp.child("persistentVolumeReclaimPolicy"), Bad::s(p), &policies));
    }
    let sources: Vec<&str> =
        PV_SOURCES.iter().copied().filter(|k| spec.get(*k).is_some_and(|v| !v.is_null())).collect();
    match sources.as_slice() {
        [] => out.push(field::required(&sp, "must specify a volume type")),
        [_] => {}
        [_, rest @ ..] => {
            for s in rest {
                out.push(field::forbidden(&sp.child(s), "may not specify more than 1 volume type"));
            }
        }
    }
    volume_mode(&mut out, &sp.child("volumeMode"), spec);
    out
}

/// `ValidateStorageClass`.
pub fn storage_class(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let provisioner = text(obj, "provisioner");
    if provisioner.is_empty() {
        out.push(field::required(&Path::new("provisioner"), ""));
    }
    let policies = ["Delete", "Retain"];
    if let Some(p) = obj.get("reclaimPolicy").and_then(Value::as_str).filter(|p| !policies.contains(p)) {
        out.push(field::not_supported(&Path::new("reclaimPolicy"), Bad::s(p), &policies));
    }
    let modes = ["Immediate", "WaitForFirstConsumer"];
    if let Some(m) = obj.get("volumeBindingMode").and_then(Value::as_str).filter(|m| !modes.contains(m)) {
        out.push(field::not_supported(&Path::new("volumeBindingMode"), Bad::s(m), &modes));
    }
    out
}

/// `ValidateStorageClassUpdate`: parameters, provisioner and reclaim policy are fixed.
pub fn storage_class_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = storage_class(new);
    for (key, what) in
        [("parameters", "parameters"), ("provisioner", "provisioner"), ("reclaimPolicy", "reclaimPolicy")]
    {
        if new.get(key) != old.get(key) {
            out.push(field::forbidden(&Path::new(key), &format!("updates to {what} are forbidden.")));
        }
    }
    if new.get("volumeBindingMode") != old.get("volumeBindingMode") {
        out.push(field::invalid(
            &Path::new("volumeBindingMode"),
            Bad::json(new.get("volumeBindingMode")),
            "field is immutable",
        ));
    }
    out
}

/// The system priority classes, bootstrapped at start: (name, value, description).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// `ValidatePriorityClass`: `system-` names are reserved, user values capped.
pub fn priority_class(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global = obj.get("globalDefault").and_then(Value::as_bool).unwrap_or(false);
    if name.starts_with("system-") {
        let why = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v, _)) if *v != value => Some(format!("value of {name} PriorityClass must be {v}")),
            Some(_) if global => Some(format!("globalDefault of {name} PriorityClass must be false")),
            Some(_) => None,
        };
        if let Some(why) = why {
            out.push(field::forbidden(
                &Path::new("metadata").child("name"),
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {why}"),
            ));
        }
    } else if value > 1_000_000_000 {
        out.push(field::forbidden(
            &Path::new("value"),
            "maximum allowed value of a user defined priority is 1000000000",
        ));
    }
    let policies = ["PreemptLowerPriority", "Never"];
    if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str).filter(|p| !policies.contains(p)) {
        out.push(field::not_supported(&Path::new("preemptionPolicy"), Bad::s(p), &policies));
    }
    out
}

/// `ValidatePriorityClassUpdate`: the value and preemption policy are fixed.
pub fn priority_class_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if new.get("value") != old.get("value") {
        out.push(field::forbidden(&Path::new("value"), "may not be changed in an update."));
    }
    if new.get("preemptionPolicy") != old.get("preemptionPolicy") {
        out.push(field::invalid(
            &Path::new("preemptionPolicy"),
            Bad::json(new.get("preemptionPolicy")),
            "field is immutable",
        ));
    }
    out
}

fn int_or_percent(out: &mut Vec<Cause>, path: &Path, v: Option<&Value>) {
    match v {
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64().filter(|i| *i < 0) {
                out.push(field::invalid(path, Bad::Int(i), "must be greater than or equal to 0"));
            }
        }
        Some(Value::String(s)) => {
            let digits = s.strip_suffix('%').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            match digits {
                None => out.push(field::invalid(
                    path,
                    Bad::Raw(field::go_int_or_string(v)),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )),
                Some(d) if d.parse::<u64>().is_ok_and(|p| p > 100) => {
                    out.push(field::invalid(path, Bad::Raw(field::go_int_or_string(v)), "must not be greater than 100%"));
                }
                Some(_) => {}
            }
        }
        _ => {}
    }
}

/// `ValidatePodDisruptionBudgetSpec`.
pub fn pod_disruption_budget(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    let (min, max) =
        (spec.get("minAvailable").filter(|v| !v.is_null()), spec.get("maxUnavailable").filter(|v| !v.is_null()));
    if min.is_some() && max.is_some() {
        out.push(field::invalid(
            &sp,
            Bad::Raw(field::go_struct(Some(spec))),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    int_or_percent(&mut out, &sp.child("minAvailable"), min);
    int_or_percent(&mut out, &sp.child("maxUnavailable"), max);
    let policies = ["AlwaysAllow", "IfHealthyBudget"];
    if let Some(p) = spec.get("unhealthyPodEvictionPolicy").and_then(Value::as_str).filter(|p| !policies.contains(p)) {
        out.push(field::not_supported(&sp.child("unhealthyPodEvictionPolicy"), Bad::s(p), &policies));
    }
    out
}

/// `ValidateIngressSpec`: a backend or rules, and paths with a type.
pub fn ingress(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    let rules = arr(spec, "rules");
    if rules.is_empty() && spec.get("defaultBackend").is_none_or(Value::is_null) {
        out.push(field::invalid(
            &sp,
            Bad::Raw("[]networking.IngressRule(nil)".into()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = sp.child("rules").index(i);
        let host = text(rule, "host");
        if !host.is_empty() && host.parse::<std::net::IpAddr>().is_ok() {
            out.push(field::invalid(&rp.child("host"), Bad::s(host), "must be a DNS name, not an IP address"));
        }
        let Some(http) = rule.get("http").filter(|h| !h.is_null()) else { continue };
        let paths = arr(http, "paths");
        if paths.is_empty() {
            out.push(field::required(&rp.child("http").child("paths"), ""));
        }
        for (j, p) in paths.iter().enumerate() {
            let pp = rp.child("http").child("paths").index(j);
            let path = text(p, "path");
            match p.get("pathType").and_then(Value::as_str) {
                None => out.push(field::required(&pp.child("pathType"), "pathType must be specified")),
                Some("Exact" | "Prefix") if !path.starts_with('/') => {
                    out.push(field::invalid(&pp.child("path"), Bad::s(path), "must be an absolute path"));
                }
                Some("ImplementationSpecific") if !path.is_empty() && !path.starts_with('/') => {
                    out.push(field::invalid(&pp.child("path"), Bad::s(path), "must be an absolute path"));
                }
                Some("Exact" | "Prefix" | "ImplementationSpecific") => {}
                Some(t) => out.push(field::not_supported(
                    &pp.child("pathType"),
                    Bad::s(t),
                    &["Exact", "ImplementationSpecific", "Prefix"],
                )),
            }
        }
    }
    out
}

/// `ValidateIngressClass`: a domain-prefixed controller.
pub fn ingress_class(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let path = Path::new("spec").child("controller");
    let controller = obj.pointer("/spec/controller").and_then(Value::as_str).unwrap_or("");
    if controller.is_empty() {
        out.push(field::required(&path, ""));
    } else if controller.len() > 250 {
        out.push(field::too_long(&path, 250));
    } else if !controller
        .split_once('/')
        .is_some_and(|(d, p)| !d.is_empty() && !p.is_empty() && names::dns1123_subdomain(d).is_empty())
    {
        out.push(field::invalid(&path, Bad::s(controller), "must be a domain-prefixed path (such as \"acme.io/foo\")"));
    }
    out
}

/// `ValidateControllerRevision`.
pub fn controller_revision(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if obj.get("data").is_none_or(Value::is_null) {
        out.push(field::required(&Path::new("data"), "data is mandatory"));
    }
    if let Some(r) = obj.get("revision").and_then(Value::as_i64).filter(|r| *r < 0) {
        out.push(field::invalid(&Path::new("revision"), Bad::Int(r), "must be greater than or equal to 0"));
    }
    out
}

/// `ValidateRuntimeClass`: the handler is a DNS label.
pub fn runtime_class(obj: &Value) -> Vec<Cause> {
    let handler = text(obj, "handler");
    names::dns1123_label(handler).iter().map(|m| field::invalid(&Path::new("handler"), Bad::s(handler), m)).collect()
}

/// `ValidateImmutableField` of the value at `pointer`, reported at `path`.
fn immutable(out: &mut Vec<Cause>, new: &Value, old: &Value, pointer: &str, path: &str) {
    let (n, o) = (new.pointer(pointer), old.pointer(pointer));
    if n != o {
        out.push(field::invalid(&Path::new(path), Bad::json(n), "field is immutable"));
    }
}

fn sources(spec: &Value) -> Value {
    let picked = PV_SOURCES.iter().filter_map(|k| spec.get(*k).map(|v| ((*k).to_string(), v.clone())));
    Value::Object(picked.collect())
}

/// `ValidatePersistentVolumeUpdate`: the volume source and mode are fixed.
pub fn persistent_volume_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let (ns, os) = (sources(&new["spec"]), sources(&old["spec"]));
    if ns != os {
        let diff = field::go_diff("core.PersistentVolumeSource", &os, &ns);
        out.push(field::forbidden(
            &Path::new("spec").child("persistentvolumesource"),
            &format!("spec.persistentvolumesource is immutable after creation\n{diff}"),
        ));
    }
    immutable(&mut out, new, old, "/spec/volumeMode", "volumeMode");
    out
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed but for its volume name (set
/// once) and, for a bound claim, its storage request, which may grow only; the mode is
/// reported again on its own, without `spec.`, as kube does.
pub fn persistent_volume_claim_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let (mut ns, mut os) = (new["spec"].clone(), old["spec"].clone());
    if text(&os, "volumeName").is_empty()
        && let (Some(o), Some(name)) = (os.as_object_mut(), ns.get("volumeName"))
    {
        o.insert("volumeName".into(), name.clone());
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound && let Some(requests) = ns.pointer_mut("/resources/requests").and_then(Value::as_object_mut) {
        match old.pointer("/spec/resources/requests/storage") {
            Some(q) => requests.insert("storage".into(), q.clone()),
            None => requests.remove("storage"),
        };
    }
    if ns != os {
        let diff = field::go_diff("core.PersistentVolumeClaimSpec", &os, &ns);
        out.push(field::forbidden(
            &Path::new("spec"),
            &format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{diff}"
            ),
        ));
    }
    let storage =
        |v: &Value| v.pointer("/spec/resources/requests/storage").and_then(|q| kube_cel::quantity::from_json(q).ok());
    if let (Some(n), Some(o)) = (storage(new), storage(old))
        && n < o
    {
        out.push(field::forbidden(
            &Path::new("spec").child("resources").child("requests").child("storage"),
            "field can not be less than previous value",
        ));
    }
    immutable(&mut out, new, old, "/spec/volumeMode", "volumeMode");
    out
}

/// `ValidateIngressClassUpdate`: the controller is fixed.
pub fn ingress_class_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = ingress_class(new);
    immutable(&mut out, new, old, "/spec/controller", "spec.controller");
    out
}

/// `ValidateRuntimeClassUpdate`: the handler is fixed.
pub fn runtime_class_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = runtime_class(new);
    immutable(&mut out, new, old, "/handler", "handler");
    out
}

/// `ValidateEndpointSliceUpdate`: the address type is fixed.
pub fn endpoint_slice_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    immutable(&mut out, new, old, "/addressType", "addressType");
    out
}

/// `ValidateCSIStorageCapacityUpdate`: the class it reports for is fixed.
pub fn csi_storage_capacity_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    immutable(&mut out, new, old, "/storageClassName", "storageClassName");
    if new.get("nodeTopology") != old.get("nodeTopology") {
        let value = field::go_label_selector(new.get("nodeTopology"));
        out.push(field::invalid(&Path::new("nodeTopology"), Bad::Raw(value), "field is immutable"));
    }
    out
}

/// `ValidateCSIDriverUpdate`: attachment, fsGroup policy, pod info and lifecycle modes are
/// fixed (the path `spec.attachedRequired` is kube's own spelling).
pub fn csi_driver_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    immutable(&mut out, new, old, "/spec/attachRequired", "spec.attachedRequired");
    immutable(&mut out, new, old, "/spec/fsGroupPolicy", "spec.fsGroupPolicy");
    immutable(&mut out, new, old, "/spec/podInfoOnMount", "spec.podInfoOnMount");
    let modes = |v: &Value| v.pointer("/spec/volumeLifecycleModes").cloned();
    if modes(new) != modes(old) {
        let quoted: Vec<String> = modes(new)
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(field::go_quote)
            .collect();
        let value = format!("[]storage.VolumeLifecycleMode{{{}}}", quoted.join(", "));
        out.push(field::invalid(
            &Path::new("spec").child("volumeLifecycleModes"),
            Bad::Raw(value),
            "field is immutable",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_kinds::def;

    fn update_causes(group: &str, resource: &str, old: &Value, change: impl Fn(&mut Value)) -> Vec<(String, String)> {
        let mut new = old.clone();
        change(&mut new);
        def(group, resource).validate_update(&new, old).into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn claims_keep_their_spec_but_the_volume_name_and_a_growing_request() {
        let old = json!({"metadata": {"name": "c", "namespace": "default", "resourceVersion": "1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}});
        let got = update_causes("", "persistentvolumeclaims", &old, |n| n["spec"]["storageClassName"] = json!("slow"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "spec");
        assert_eq!(
            got[0].1,
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n  core.PersistentVolumeClaimSpec{\n- \tstorageClassName: \"fast\",\n+ \tstorageClassName: \"slow\",\n  }"
        );
        // The binder sets the volume once; a bound claim may grow.
        assert_eq!(
            update_causes("", "persistentvolumeclaims", &old, |n| n["spec"]["volumeName"] = json!("pv1")),
            vec![]
        );
        assert_eq!(
            update_causes("", "persistentvolumeclaims", &old, |n| n["spec"]["resources"]["requests"]["storage"] =
                json!("2Gi")),
            vec![]
        );
        let shrink = update_causes("", "persistentvolumeclaims", &old, |n| {
            n["spec"]["resources"]["requests"]["storage"] = json!("512Mi")
        });
        assert_eq!(
            shrink,
            [("spec.resources.requests.storage".into(), "Forbidden: field can not be less than previous value".into())]
        );
        // An unbound claim's request is part of the fixed spec.
        let mut pending = old.clone();
        pending["status"]["phase"] = json!("Pending");
        let got = update_causes("", "persistentvolumeclaims", &pending, |n| {
            n["spec"]["resources"]["requests"]["storage"] = json!("2Gi")
        });
        assert_eq!(got[0].0, "spec");
    }

    #[test]
    fn volumes_keep_their_source_and_revisions_their_data() {
        let old = json!({"metadata": {"name": "pv1", "resourceVersion": "1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"}, "persistentVolumeReclaimPolicy": "Retain"}});
        let got = update_causes("", "persistentvolumes", &old, |n| n["spec"]["hostPath"]["path"] = json!("/other"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "spec.persistentvolumesource");
        assert!(got[0].1.starts_with(
            "Forbidden: spec.persistentvolumesource is immutable after creation\n  core.PersistentVolumeSource{"
        ));
        assert_eq!(
            update_causes("", "persistentvolumes", &old, |n| n["spec"]["capacity"]["storage"] = json!("2Gi")),
            vec![]
        );

        let rev = json!({"metadata": {"name": "r", "namespace": "default", "resourceVersion": "1"}, "data": {"a": 1}, "revision": 1});
        let got = update_causes("apps", "controllerrevisions", &rev, |n| n["data"] = json!({"a": 2}));
        assert_eq!(got, [("data".into(), "Invalid value: {\"a\":2}: field is immutable".into())]);
    }
}
