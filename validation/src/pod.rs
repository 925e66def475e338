//! Pod and pod template validation (`ValidatePodSpec` and friends in
//! `pkg/apis/core/validation`), in kube's order, with kube's paths and wording.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::{IMMUTABLE, NEGATIVE, arr, meta, names, s};
use apimachinery::error::Cause;
use kube_cel::quantity;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const FILE_MODE_ERR: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const INIT_FORBIDDEN: &str = "may not be set for init containers without restartPolicy=Always";
const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn i(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// `ValidatePodTemplateSpec`: labels (reported at `<path>.labels`, as kube does), annotations,
/// the pod spec, and no ephemeral containers.
pub fn validate_pod_template_spec(template: &Value, path: &Path) -> Vec<Cause> {
    let md = template.get("metadata");
    let mut out = meta::validate_labels(md.and_then(|m| m.get("labels")), &path.child("labels"));
    out.extend(meta::validate_annotations(md.and_then(|m| m.get("annotations")), &path.child("annotations")));
    let spec = template.get("spec").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(validate_pod_spec(&spec, &path.child("spec")));
    if !arr(&spec, "ephemeralContainers").is_empty() {
        out.push(field::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    out
}

/// `ValidatePodCreate`: metadata, spec, and the pod-only rules.
pub fn validate_pod(obj: &Value) -> Vec<Cause> {
    let mut out = validate_pod_metadata_and_spec(obj);
    if !arr(obj.get("spec").unwrap_or(&Value::Null), "ephemeralContainers").is_empty() {
        out.push(field::forbidden(&Path::new("spec").child("ephemeralContainers"), "cannot be set on create"));
    }
    out
}

fn validate_pod_metadata_and_spec(obj: &Value) -> Vec<Cause> {
    let md = obj.get("metadata").and_then(Value::as_object);
    let mut out = meta::validate_object_meta(md, true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    let spec = obj.get("spec").cloned().unwrap_or(Value::Object(Map::new()));
    if let Some(mirror) = md.and_then(|m| m.get("annotations")).and_then(|a| a.get("kubernetes.io/config.mirror"))
        && s(&spec, "nodeName").is_empty()
    {
        out.push(field::invalid(
            &Path::new("metadata").child("annotations").key("kubernetes.io/config.mirror"),
            Bad::json(Some(mirror)),
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    out.extend(validate_pod_spec(&spec, &Path::new("spec")));
    if s(&spec, "serviceAccountName").is_empty() {
        for (vi, vol) in arr(&spec, "volumes").iter().enumerate() {
            for (si, src) in vol.get("projected").map(|p| arr(p, "sources")).unwrap_or(&[]).iter().enumerate() {
                if present(src, "serviceAccountToken") {
                    let p = Path::new("spec")
                        .child("volumes")
                        .index(vi)
                        .child("projected")
                        .child("sources")
                        .index(si)
                        .child("serviceAccountToken");
                    out.push(field::forbidden(&p, "must not be specified when serviceAccountName is not set"));
                }
            }
        }
    }
    out
}

/// `ValidatePodSpec`.
pub fn validate_pod_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let volumes = validate_volumes(arr(spec, "volumes"), &path.child("volumes"), &mut out);
    let containers = arr(spec, "containers");
    out.extend(validate_containers(containers, &volumes, &path.child("containers")));
    out.extend(validate_init_containers(
        arr(spec, "initContainers"),
        containers,
        &volumes,
        &path.child("initContainers"),
    ));
    out.extend(validate_host_network_deps(spec, path));
    let restart = s(spec, "restartPolicy");
    match restart {
        "Always" | "OnFailure" | "Never" => {}
        "" => out.push(field::required(&path.child("restartPolicy"), "")),
        other => out.push(field::not_supported(
            &path.child("restartPolicy"),
            Bad::s(other),
            &["Always", "OnFailure", "Never"],
        )),
    }
    let dns = s(spec, "dnsPolicy");
    match dns {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => out.push(field::required(&path.child("dnsPolicy"), "")),
        other => out.push(field::not_supported(
            &path.child("dnsPolicy"),
            Bad::s(other),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    out.extend(meta::validate_labels(spec.get("nodeSelector"), &path.child("nodeSelector")));
    out.extend(validate_pod_security_context(spec.get("securityContext"), &path.child("securityContext")));
    if dns == "None" {
        match spec.get("dnsConfig").filter(|c| !c.is_null()) {
            None => {
                out.push(field::required(&path.child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
            }
            Some(c) if arr(c, "nameservers").is_empty() => out.push(field::required(
                &path.child("dnsConfig").child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )),
            Some(_) => {}
        }
    }
    for (idx, c) in arr(spec, "topologySpreadConstraints").iter().enumerate() {
        let p = path.child("topologySpreadConstraints").index(idx);
        let skew = i(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            out.push(field::invalid(&p.child("maxSkew"), Bad::Int(skew), "must be greater than zero"));
        }
        if s(c, "topologyKey").is_empty() {
            out.push(field::required(&p.child("topologyKey"), "can not be empty"));
        }
        let when = s(c, "whenUnsatisfiable");
        if when != "DoNotSchedule" && when != "ScheduleAnyway" {
            out.push(field::not_supported(
                &p.child("whenUnsatisfiable"),
                Bad::s(when),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
    }
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        out.extend(
            names::name_is_dns_subdomain(sa, false)
                .into_iter()
                .map(|m| field::invalid(&path.child("serviceAccountName"), Bad::s(sa), &m)),
        );
    }
    let node = s(spec, "nodeName");
    if !node.is_empty() {
        out.extend(
            names::name_is_dns_subdomain(node, false)
                .into_iter()
                .map(|m| field::invalid(&path.child("nodeName"), Bad::s(node), &m)),
        );
    }
    if let Some(ads) = i(spec, "activeDeadlineSeconds")
        && !(1..=i32::MAX as i64).contains(&ads)
    {
        out.push(field::invalid(
            &path.child("activeDeadlineSeconds"),
            Bad::Int(ads),
            &names::inclusive_range_error(1, i32::MAX as i64),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = s(spec, key);
        if !v.is_empty() {
            out.extend(names::dns1123_label(v).into_iter().map(|m| field::invalid(&path.child(key), Bad::s(v), &m)));
        }
    }
    out.extend(validate_tolerations(arr(spec, "tolerations"), &path.child("tolerations")));
    let pc = s(spec, "priorityClassName");
    if !pc.is_empty() {
        out.extend(
            names::name_is_dns_subdomain(pc, false)
                .into_iter()
                .map(|m| field::invalid(&path.child("priorityClassName"), Bad::s(pc), &m)),
        );
    }
    if let Some(rc) = spec.get("runtimeClassName").and_then(Value::as_str) {
        out.extend(
            names::name_is_dns_subdomain(rc, false)
                .into_iter()
                .map(|m| field::invalid(&path.child("runtimeClassName"), Bad::s(rc), &m)),
        );
    }
    if let Some(pp) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && pp != "PreemptLowerPriority"
        && pp != "Never"
    {
        out.push(field::not_supported(&path.child("preemptionPolicy"), Bad::s(pp), &["Never", "PreemptLowerPriority"]));
    }
    if let Some(os) = spec.get("os").filter(|o| !o.is_null()) {
        let name = s(os, "name");
        if name.is_empty() {
            out.push(field::required(&path.child("os").child("name"), "cannot be empty"));
        } else if name != "linux" && name != "windows" {
            out.push(field::not_supported(&path.child("os"), Bad::s(name), &["linux", "windows"]));
        }
    }
    out
}

/// `ValidateVolumes`: returns the names of the valid volumes (what mounts may refer to).
fn validate_volumes(volumes: &[Value], path: &Path, out: &mut Vec<Cause>) -> BTreeSet<String> {
    let mut names_seen = BTreeSet::new();
    for (idx, vol) in volumes.iter().enumerate() {
        let p = path.index(idx);
        let name = s(vol, "name");
        let mut errs = validate_volume_source(vol, &p);
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        } else {
            errs.extend(
                names::dns1123_label(name).into_iter().map(|m| field::invalid(&p.child("name"), Bad::s(name), &m)),
            );
        }
        if names_seen.contains(name) {
            errs.push(field::duplicate(&p.child("name"), Bad::s(name)));
        }
        if errs.is_empty() {
            names_seen.insert(name.to_string());
        } else {
            out.extend(errs);
        }
    }
    names_seen
}

fn validate_default_mode(src: &Value, path: &Path, out: &mut Vec<Cause>) {
    if let Some(mode) = i(src, "defaultMode")
        && !(0..=0o777).contains(&mode)
    {
        out.push(field::invalid(&path.child("defaultMode"), Bad::Int(mode), FILE_MODE_ERR));
    }
}

fn validate_key_to_paths(items: &[Value], path: &Path, out: &mut Vec<Cause>) {
    for (idx, item) in items.iter().enumerate() {
        let p = path.child("items").index(idx);
        if s(item, "key").is_empty() {
            out.push(field::required(&p.child("key"), ""));
        }
        let item_path = s(item, "path");
        if item_path.is_empty() {
            out.push(field::required(&p.child("path"), ""));
        } else {
            out.extend(validate_local_descending_path(item_path, &p.child("path")));
        }
        if let Some(mode) = i(item, "mode")
            && !(0..=0o777).contains(&mode)
        {
            out.push(field::invalid(&p.child("mode"), Bad::Int(mode), FILE_MODE_ERR));
        }
    }
}

/// `validateLocalDescendingPath`.
fn validate_local_descending_path(target: &str, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if target.starts_with('/') {
        out.push(field::invalid(path, Bad::s(target), "must be a relative path"));
    }
    if target.split('/').any(|seg| seg == "..") {
        out.push(field::invalid(path, Bad::s(target), "must not contain '..'"));
    }
    out
}

fn validate_volume_source(vol: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(m) = vol.as_object() else { return vec![field::required(path, "must specify a volume type")] };
    let sources = volume_sources(m);
    if sources.is_empty() {
        return vec![field::required(path, "must specify a volume type")];
    }
    for extra in &sources[1..] {
        out.push(field::forbidden(&path.child(extra), "may not specify more than 1 volume type"));
    }
    let src = sources[0];
    let v = &m[src];
    let p = path.child(src);
    match src {
        "hostPath" => {
            if s(v, "path").is_empty() {
                out.push(field::required(&p.child("path"), ""));
            }
            let ty = s(v, "type");
            const TYPES: &[&str] =
                &["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"];
            if !TYPES.contains(&ty) {
                out.push(field::not_supported(&p.child("type"), Bad::s(ty), TYPES));
            }
        }
        "secret" => {
            if s(v, "secretName").is_empty() {
                out.push(field::required(&p.child("secretName"), ""));
            }
            validate_default_mode(v, &p, &mut out);
            validate_key_to_paths(arr(v, "items"), &p, &mut out);
        }
        "configMap" => {
            if s(v, "name").is_empty() {
                out.push(field::required(&p.child("name"), ""));
            }
            validate_default_mode(v, &p, &mut out);
            validate_key_to_paths(arr(v, "items"), &p, &mut out);
        }
        "persistentVolumeClaim" if s(v, "claimName").is_empty() => {
            out.push(field::required(&p.child("claimName"), ""));
        }
        "emptyDir" => {
            let medium = s(v, "medium");
            if let Some(limit) = v.get("sizeLimit").filter(|l| !l.is_null())
                && let Ok(q) = quantity::from_json(limit)
                && q.nanos < 0
            {
                out.push(field::forbidden(&p.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"));
            }
            let _ = medium;
        }
        "downwardAPI" => {
            validate_default_mode(v, &p, &mut out);
            for (idx, item) in arr(v, "items").iter().enumerate() {
                let ip = p.child("items").index(idx);
                let item_path = s(item, "path");
                if item_path.is_empty() {
                    out.push(field::required(&ip.child("path"), ""));
                } else {
                    out.extend(validate_local_descending_path(item_path, &ip.child("path")));
                }
            }
        }
        "nfs" => {
            if s(v, "server").is_empty() {
                out.push(field::required(&p.child("server"), ""));
            }
            let np = s(v, "path");
            if np.is_empty() {
                out.push(field::required(&p.child("path"), ""));
            } else if !np.starts_with('/') {
                out.push(field::invalid(&p.child("path"), Bad::s(np), "must be an absolute path"));
            }
        }
        "csi" if s(v, "driver").is_empty() => {
            out.push(field::required(&p.child("driver"), ""));
        }
        "projected" => {
            validate_default_mode(v, &p, &mut out);
            for (idx, source) in arr(v, "sources").iter().enumerate() {
                let sp = p.child("sources").index(idx);
                if let Some(t) = source.get("serviceAccountToken").filter(|t| !t.is_null()) {
                    if let Some(exp) = i(t, "expirationSeconds") {
                        if exp < 10 * 60 {
                            out.push(field::invalid(
                                &sp.child("serviceAccountToken").child("expirationSeconds"),
                                Bad::Int(exp),
                                "may not specify a duration less than 10 minutes",
                            ));
                        } else if exp > 1 << 32 {
                            out.push(field::invalid(
                                &sp.child("serviceAccountToken").child("expirationSeconds"),
                                Bad::Int(exp),
                                "may not specify a duration larger than 2^32 seconds",
                            ));
                        }
                    }
                    if s(t, "path").is_empty() {
                        out.push(field::required(&sp.child("serviceAccountToken").child("path"), ""));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

fn validate_containers(containers: &[Value], volumes: &BTreeSet<String>, path: &Path) -> Vec<Cause> {
    if containers.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (idx, c) in containers.iter().enumerate() {
        let p = path.index(idx);
        out.extend(validate_container_common(c, volumes, &p));
        let name = s(c, "name");
        if !seen.insert(name.to_string()) {
            out.push(field::duplicate(&p.child("name"), Bad::s(name)));
        }
        out.extend(validate_lifecycle(c, &p));
        out.extend(validate_probe(c.get("livenessProbe"), &p.child("livenessProbe"), true));
        out.extend(validate_probe(c.get("readinessProbe"), &p.child("readinessProbe"), false));
        if let Some(rp) = c.get("readinessProbe").filter(|r| !r.is_null())
            && present(rp, "terminationGracePeriodSeconds")
        {
            out.push(field::invalid(
                &p.child("readinessProbe").child("terminationGracePeriodSeconds"),
                Bad::json(rp.get("terminationGracePeriodSeconds")),
                "must not be set for readinessProbes",
            ));
        }
        out.extend(validate_probe(c.get("startupProbe"), &p.child("startupProbe"), true));
        if present(c, "restartPolicy") {
            out.push(field::forbidden(&p.child("restartPolicy"), "may not be set for non-init containers"));
        }
    }
    out.extend(check_host_port_conflicts(containers, path));
    out
}

fn validate_init_containers(
    containers: &[Value],
    regular: &[Value],
    volumes: &BTreeSet<String>,
    path: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<String> = regular.iter().map(|c| s(c, "name").to_string()).collect();
    for (idx, c) in containers.iter().enumerate() {
        let p = path.index(idx);
        out.extend(validate_container_common(c, volumes, &p));
        let mut restart_always = false;
        if let Some(rp) = c.get("restartPolicy").filter(|r| !r.is_null()) {
            let rp = rp.as_str().unwrap_or("");
            if rp != "Always" {
                out.push(field::not_supported(&p.child("restartPolicy"), Bad::s(rp), &["Always"]));
            }
            restart_always = rp == "Always";
        }
        let name = s(c, "name");
        if seen.contains(name) {
            out.push(field::duplicate(&p.child("name"), Bad::s(name)));
        } else if !name.is_empty() {
            seen.insert(name.to_string());
        }
        out.extend(check_host_port_conflicts(std::slice::from_ref(c), path));
        if restart_always {
            out.extend(validate_lifecycle(c, &p));
            out.extend(validate_probe(c.get("livenessProbe"), &p.child("livenessProbe"), true));
            out.extend(validate_probe(c.get("readinessProbe"), &p.child("readinessProbe"), false));
            out.extend(validate_probe(c.get("startupProbe"), &p.child("startupProbe"), true));
        } else {
            if present(c, "lifecycle") {
                out.push(field::forbidden(&p.child("lifecycle"), INIT_FORBIDDEN));
            }
            if present(c, "livenessProbe") {
                out.push(field::forbidden(&p.child("livenessProbe"), INIT_FORBIDDEN));
            }
            if present(c, "readinessProbe") {
                out.push(field::forbidden(&p.child("readinessProbe"), "may not be set for init containers"));
            }
            if present(c, "startupProbe") {
                out.push(field::forbidden(&p.child("startupProbe"), INIT_FORBIDDEN));
            }
        }
    }
    out
}

/// `validateContainerCommon`: name, image, termination message policy, ports, env, mounts,
/// pull policy, resources, security context.
fn validate_container_common(c: &Value, volumes: &BTreeSet<String>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = s(c, "name");
    if name.is_empty() {
        out.push(field::required(&p.child("name"), ""));
    } else {
        out.extend(names::dns1123_label(name).into_iter().map(|m| field::invalid(&p.child("name"), Bad::s(name), &m)));
    }
    if s(c, "image").is_empty() {
        out.push(field::required(&p.child("image"), ""));
    }
    match s(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => out.push(field::required(&p.child("terminationMessagePolicy"), "")),
        other => out.push(field::not_supported(
            &p.child("terminationMessagePolicy"),
            Bad::s(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    out.extend(validate_container_ports(arr(c, "ports"), &p.child("ports")));
    out.extend(validate_env(arr(c, "env"), &p.child("env")));
    out.extend(validate_env_from(arr(c, "envFrom"), &p.child("envFrom")));
    out.extend(validate_volume_mounts(c, volumes, &p.child("volumeMounts")));
    match s(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => out.push(field::required(&p.child("imagePullPolicy"), "")),
        other => out.push(field::not_supported(
            &p.child("imagePullPolicy"),
            Bad::s(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    out.extend(validate_resources(c.get("resources"), &p.child("resources")));
    out.extend(validate_security_context(c.get("securityContext"), &p.child("securityContext")));
    out
}

fn validate_container_ports(ports: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (idx, port) in ports.iter().enumerate() {
        let p = path.index(idx);
        let name = s(port, "name");
        if !name.is_empty() {
            let msgs = names::port_name(name);
            if !msgs.is_empty() {
                out.extend(msgs.into_iter().map(|m| field::invalid(&p.child("name"), Bad::s(name), &m)));
            } else if !seen.insert(name.to_string()) {
                out.push(field::duplicate(&p.child("name"), Bad::s(name)));
            }
        }
        let cp = i(port, "containerPort").unwrap_or(0);
        if cp == 0 {
            out.push(field::required(&p.child("containerPort"), ""));
        } else {
            out.extend(
                names::port_num(cp).into_iter().map(|m| field::invalid(&p.child("containerPort"), Bad::Int(cp), &m)),
            );
        }
        let hp = i(port, "hostPort").unwrap_or(0);
        if hp != 0 {
            out.extend(names::port_num(hp).into_iter().map(|m| field::invalid(&p.child("hostPort"), Bad::Int(hp), &m)));
        }
        let proto = s(port, "protocol");
        if proto.is_empty() {
            out.push(field::required(&p.child("protocol"), ""));
        } else if !PROTOCOLS.contains(&proto) {
            out.push(field::not_supported(&p.child("protocol"), Bad::s(proto), PROTOCOLS));
        }
    }
    out
}

/// `AccumulateUniqueHostPorts` over the given containers.
fn check_host_port_conflicts(containers: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in arr(c, "ports").iter().enumerate() {
            let hp = i(port, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!("{}/{}/{hp}", s(port, "hostIP"), s(port, "protocol"));
            if !seen.insert(key.clone()) {
                out.push(field::duplicate(&path.index(ci).child("ports").index(pi).child("hostPort"), Bad::Str(key)));
            }
        }
    }
    out
}

fn validate_host_network_deps(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return out;
    }
    for list in ["containers", "initContainers"] {
        for (ci, c) in arr(spec, list).iter().enumerate() {
            for (pi, port) in arr(c, "ports").iter().enumerate() {
                let (hp, cp) = (i(port, "hostPort").unwrap_or(0), i(port, "containerPort").unwrap_or(0));
                if hp != cp {
                    out.push(field::invalid(
                        &path.child(list).index(ci).child("ports").index(pi).child("containerPort"),
                        Bad::Int(cp),
                        "must match `hostPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    out
}

fn validate_env(env: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (idx, e) in env.iter().enumerate() {
        let p = path.index(idx);
        let name = s(e, "name");
        if name.is_empty() {
            out.push(field::required(&p.child("name"), ""));
        }
        out.extend(names::env_var_name(name).into_iter().map(|m| field::invalid(&p.child("name"), Bad::s(name), &m)));
        out.extend(validate_env_value_from(e, &p.child("valueFrom")));
    }
    out
}

fn validate_env_value_from(e: &Value, path: &Path) -> Vec<Cause> {
    let Some(from) = e.get("valueFrom").filter(|v| !v.is_null()) else { return Vec::new() };
    let mut out = Vec::new();
    let mut count = 0;
    if let Some(fr) = from.get("fieldRef").filter(|v| !v.is_null()) {
        count += 1;
        let fp = path.child("fieldRef");
        if s(fr, "apiVersion").is_empty() {
            out.push(field::required(&fp.child("apiVersion"), ""));
        }
        let field_path = s(fr, "fieldPath");
        if field_path.is_empty() {
            out.push(field::required(&fp.child("fieldPath"), ""));
        } else {
            let base = field_path.split_once('[').map_or(field_path, |(b, _)| b);
            let subscripted = field_path.contains('[');
            let ok = if subscripted {
                base == "metadata.labels" || base == "metadata.annotations"
            } else {
                ENV_FIELD_PATHS.contains(&field_path) && base != "metadata.labels" && base != "metadata.annotations"
            };
            if !ok {
                out.push(field::not_supported(&fp.child("fieldPath"), Bad::s(field_path), ENV_FIELD_PATHS));
            }
        }
    }
    if from.get("resourceFieldRef").is_some_and(|v| !v.is_null()) {
        count += 1;
    }
    for (key, name_key) in [("configMapKeyRef", "name"), ("secretKeyRef", "name")] {
        if let Some(r) = from.get(key).filter(|v| !v.is_null()) {
            count += 1;
            let rp = path.child(key);
            if s(r, name_key).is_empty() {
                out.push(field::required(&rp.child("name"), ""));
            }
            let k = s(r, "key");
            if k.is_empty() {
                out.push(field::required(&rp.child("key"), ""));
            } else {
                out.extend(
                    names::config_map_key(k).into_iter().map(|m| field::invalid(&rp.child("key"), Bad::s(k), &m)),
                );
            }
        }
    }
    if count == 0 {
        out.push(field::invalid(
            path,
            Bad::s(""),
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if count > 1 {
        out.push(field::invalid(path, Bad::s(""), "may not have more than one field specified at a time"));
    } else if !s(e, "value").is_empty() {
        out.push(field::invalid(path, Bad::s(""), "may not be specified when `value` is not empty"));
    }
    out
}

fn validate_env_from(env_from: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (idx, e) in env_from.iter().enumerate() {
        let p = path.index(idx);
        let prefix = s(e, "prefix");
        if !prefix.is_empty() {
            out.extend(
                names::env_var_name(prefix).into_iter().map(|m| field::invalid(&p.child("prefix"), Bad::s(prefix), &m)),
            );
        }
        let mut count = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = e.get(key).filter(|v| !v.is_null()) {
                count += 1;
                if count > 1 {
                    out.push(field::forbidden(&p.child(key), "may not have more than one field specified at a time"));
                    continue;
                }
                let name = s(r, "name");
                if name.is_empty() {
                    out.push(field::required(&p.child(key).child("name"), ""));
                } else {
                    out.extend(
                        names::name_is_dns_subdomain(name, false)
                            .into_iter()
                            .map(|m| field::invalid(&p.child(key).child("name"), Bad::s(name), &m)),
                    );
                }
            }
        }
        if count == 0 {
            out.push(field::invalid(&p, Bad::s(""), "must specify one of: `configMapRef` or `secretRef`"));
        }
    }
    out
}

fn validate_volume_mounts(c: &Value, volumes: &BTreeSet<String>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut mount_points = BTreeSet::new();
    let devices = arr(c, "volumeDevices");
    for (idx, m) in arr(c, "volumeMounts").iter().enumerate() {
        let p = path.index(idx);
        let name = s(m, "name");
        if name.is_empty() {
            out.push(field::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            out.push(field::not_found(&p.child("name"), Bad::s(name)));
        }
        let mount_path = s(m, "mountPath");
        if mount_path.is_empty() {
            out.push(field::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_string()) {
            out.push(field::invalid(&p.child("mountPath"), Bad::s(mount_path), "must be unique"));
        }
        if devices.iter().any(|d| s(d, "name") == name) {
            out.push(field::invalid(&p.child("name"), Bad::s(name), "must not already exist in volumeDevices"));
        }
        if devices.iter().any(|d| s(d, "devicePath") == mount_path) {
            out.push(field::invalid(
                &p.child("mountPath"),
                Bad::s(mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub = s(m, "subPath");
        if !sub.is_empty() {
            out.extend(validate_local_descending_path(sub, &path.child("subPath")));
        }
        if let Some(mp) = m.get("mountPropagation").and_then(Value::as_str)
            && !["None", "HostToContainer", "Bidirectional"].contains(&mp)
        {
            out.push(field::not_supported(
                &p.child("mountPropagation"),
                Bad::s(mp),
                &["Bidirectional", "HostToContainer", "None"],
            ));
        }
    }
    out
}

fn validate_handler(h: &Value, path: &Path, out: &mut Vec<Cause>) -> usize {
    let mut count = 0;
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        let Some(v) = h.get(kind).filter(|v| !v.is_null()) else { continue };
        count += 1;
        if count > 1 {
            out.push(field::forbidden(&path.child(kind), "may not specify more than 1 handler type"));
            continue;
        }
        let p = path.child(kind);
        match kind {
            "exec" if arr(v, "command").is_empty() => {
                out.push(field::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if s(v, "path").is_empty() {
                    out.push(field::required(&p.child("path"), ""));
                }
                out.extend(validate_port_num_or_name(v.get("port"), &p.child("port")));
                let scheme = s(v, "scheme");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    out.push(field::not_supported(&p.child("scheme"), Bad::s(scheme), &["HTTP", "HTTPS"]));
                }
                for h in arr(v, "httpHeaders") {
                    let hn = s(h, "name");
                    out.extend(
                        names::http_header_name(hn)
                            .into_iter()
                            .map(|m| field::invalid(&p.child("httpHeaders"), Bad::s(hn), &m)),
                    );
                }
            }
            "tcpSocket" => out.extend(validate_port_num_or_name(v.get("port"), &p.child("port"))),
            "grpc" => {
                let port = i(v, "port").unwrap_or(0);
                out.extend(
                    names::port_num(port).into_iter().map(|m| field::invalid(&p.child("port"), Bad::Int(port), &m)),
                );
            }
            _ => {}
        }
    }
    count
}

fn validate_lifecycle(c: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(lc) = c.get("lifecycle").filter(|l| !l.is_null()) else { return out };
    for hook in ["postStart", "preStop"] {
        if let Some(h) = lc.get(hook).filter(|h| !h.is_null()) {
            let p = path.child("lifecycle").child(hook);
            if validate_handler(h, &p, &mut out) == 0 {
                out.push(field::required(&p, "must specify a handler type"));
            }
        }
    }
    out
}

fn validate_probe(probe: Option<&Value>, path: &Path, success_must_be_one: bool) -> Vec<Cause> {
    let Some(probe) = probe.filter(|p| !p.is_null()) else { return Vec::new() };
    let mut out = Vec::new();
    if validate_handler(probe, path, &mut out) == 0 {
        out.push(field::required(path, "must specify a handler type"));
    }
    for key in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
        if let Some(v) = i(probe, key).filter(|v| *v < 0) {
            out.push(field::invalid(&path.child(key), Bad::Int(v), NEGATIVE));
        }
    }
    if let Some(t) = i(probe, "terminationGracePeriodSeconds").filter(|t| *t <= 0) {
        out.push(field::invalid(&path.child("terminationGracePeriodSeconds"), Bad::Int(t), "must be greater than 0"));
    }
    if success_must_be_one {
        let st = i(probe, "successThreshold").unwrap_or(0);
        if st != 1 {
            out.push(field::invalid(&path.child("successThreshold"), Bad::Int(st), "must be 1"));
        }
    }
    out
}

/// `ValidatePortNumOrName` over an `IntOrString` port.
pub fn validate_port_num_or_name(port: Option<&Value>, path: &Path) -> Vec<Cause> {
    match port {
        Some(Value::String(name)) => {
            names::port_name(name).into_iter().map(|m| field::invalid(path, Bad::s(name), &m)).collect()
        }
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            names::port_num(n).into_iter().map(|m| field::invalid(path, Bad::Int(n), &m)).collect()
        }
        _ => names::port_num(0).into_iter().map(|m| field::invalid(path, Bad::Int(0), &m)).collect(),
    }
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `validateResourceName`: a qualified name, standard unless it has a domain.
pub(crate) fn validate_resource_name(name: &str, path: &Path) -> Vec<Cause> {
    let mut out: Vec<Cause> =
        names::qualified_name(name).into_iter().map(|m| field::invalid(path, Bad::s(name), &m)).collect();
    if out.is_empty() && !name.contains('/') && !STANDARD_RESOURCES.contains(&name) && !is_hugepages(name) {
        out.push(field::invalid(path, Bad::s(name), "must be a standard resource type or fully qualified"));
    }
    out
}

/// `validateContainerResourceName`.
pub(crate) fn validate_container_resource_name(name: &str, path: &Path) -> Vec<Cause> {
    let mut out = validate_resource_name(name, path);
    if !name.contains('/') {
        if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !is_hugepages(name) {
            out.push(field::invalid(path, Bad::s(name), "must be a standard resource for containers"));
        }
    } else if !is_native_resource(name)
        && (name.starts_with("requests.") || !names::qualified_name(&format!("requests.{name}")).is_empty())
    {
        out.push(field::invalid(path, Bad::s(name), "doesn't follow extended resource name standard"));
    }
    out
}

/// `ValidateResourceRequirements`.
fn validate_resources(resources: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(r) = resources.filter(|r| !r.is_null()) else { return out };
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let sorted = |key: &str| -> Vec<(String, Value)> {
        let mut v: Vec<(String, Value)> = r
            .get(key)
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let limits = sorted("limits");
    let requests = sorted("requests");
    let mut parsed_limits = std::collections::BTreeMap::new();
    let (mut lim_cpu_mem, mut req_cpu_mem, mut lim_huge, mut req_huge) = (false, false, false, false);
    for (name, v) in &limits {
        let p = lim_path.key(name);
        out.extend(validate_container_resource_name(name, &p));
        out.extend(validate_quantity_value(v, &p));
        if let Ok(q) = quantity::from_json(v) {
            parsed_limits.insert(name.clone(), q);
        }
        lim_huge |= is_hugepages(name);
        lim_cpu_mem |= name == "cpu" || name == "memory";
    }
    for (name, v) in &requests {
        let p = req_path.key(name);
        out.extend(validate_container_resource_name(name, &p));
        out.extend(validate_quantity_value(v, &p));
        let overcommit = is_native_resource(name) && !is_hugepages(name);
        if let Ok(q) = quantity::from_json(v) {
            match parsed_limits.get(name) {
                Some(l) if q != *l && !overcommit => out.push(field::invalid(
                    &req_path,
                    Bad::Str(q.canonical()),
                    &format!("must be equal to {name} limit of {}", l.canonical()),
                )),
                Some(l) if q > *l => out.push(field::invalid(
                    &req_path,
                    Bad::Str(q.canonical()),
                    &format!("must be less than or equal to {name} limit of {}", l.canonical()),
                )),
                Some(_) => {}
                None if !overcommit => {
                    out.push(field::required(&lim_path, "Limit must be set for non overcommitable resources"))
                }
                None => {}
            }
        }
        req_huge |= is_hugepages(name);
        req_cpu_mem |= name == "cpu" || name == "memory";
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        out.push(field::forbidden(path, "HugePages require cpu or memory"));
    }
    out
}

pub(crate) fn validate_quantity_value(v: &Value, path: &Path) -> Vec<Cause> {
    match quantity::from_json(v) {
        Err(e) => vec![field::invalid(path, Bad::json(Some(v)), e)],
        Ok(q) if q.nanos < 0 => vec![field::invalid(path, Bad::Str(q.canonical()), NEGATIVE)],
        Ok(_) => Vec::new(),
    }
}

fn validate_ids(sc: &Value, path: &Path, out: &mut Vec<Cause>) {
    for key in ["runAsUser", "runAsGroup"] {
        if let Some(id) = i(sc, key)
            && !(0..=i32::MAX as i64).contains(&id)
        {
            out.push(field::invalid(&path.child(key), Bad::Int(id), &names::inclusive_range_error(0, i32::MAX as i64)));
        }
    }
}

fn validate_pod_security_context(sc: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(sc) = sc.filter(|v| !v.is_null()) else { return out };
    validate_ids(sc, path, &mut out);
    if let Some(fs) = i(sc, "fsGroup")
        && !(0..=i32::MAX as i64).contains(&fs)
    {
        out.push(field::invalid(
            &path.child("fsGroup"),
            Bad::Int(fs),
            &names::inclusive_range_error(0, i32::MAX as i64),
        ));
    }
    for (idx, g) in arr(sc, "supplementalGroups").iter().enumerate() {
        if let Some(g) = g.as_i64()
            && !(0..=i32::MAX as i64).contains(&g)
        {
            out.push(field::invalid(
                &path.child("supplementalGroups").index(idx),
                Bad::Int(g),
                &names::inclusive_range_error(0, i32::MAX as i64),
            ));
        }
    }
    if let Some(p) = sc.get("fsGroupChangePolicy").and_then(Value::as_str)
        && p != "OnRootMismatch"
        && p != "Always"
    {
        out.push(field::not_supported(&path.child("fsGroupChangePolicy"), Bad::s(p), &["OnRootMismatch", "Always"]));
    }
    out
}

/// `--allow-privileged`: whether containers may be privileged. Process-wide, as kube's
/// `capabilities.Setup` is, and off unless the flag says so, as in kube.
static ALLOW_PRIVILEGED: AtomicBool = AtomicBool::new(false);

/// Sets `--allow-privileged` for this process.
pub fn allow_privileged(allowed: bool) {
    ALLOW_PRIVILEGED.store(allowed, Ordering::Relaxed);
}

fn validate_security_context(sc: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(sc) = sc.filter(|v| !v.is_null()) else { return out };
    if sc.get("privileged").and_then(Value::as_bool) == Some(true) && !ALLOW_PRIVILEGED.load(Ordering::Relaxed) {
        out.push(field::forbidden(&path.child("privileged"), "disallowed by cluster policy"));
    }
    validate_ids(sc, path, &mut out);
    if let Some(pm) = sc.get("procMount").and_then(Value::as_str)
        && pm != "Default"
        && pm != "Unmasked"
    {
        out.push(field::not_supported(&path.child("procMount"), Bad::s(pm), &["Default", "Unmasked"]));
    }
    let no_escalation = sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false);
    if no_escalation && sc.get("privileged").and_then(Value::as_bool) == Some(true) {
        out.push(field::invalid(
            path,
            Bad::Raw(field::go_struct(Some(sc))),
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        ));
    }
    let adds_sys_admin = sc
        .get("capabilities")
        .map(|c| arr(c, "add"))
        .unwrap_or(&[])
        .iter()
        .any(|c| c == "CAP_SYS_ADMIN" || c == "SYS_ADMIN");
    if no_escalation && adds_sys_admin {
        out.push(field::invalid(
            path,
            Bad::Raw(field::go_struct(Some(sc))),
            "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
        ));
    }
    out
}

fn validate_taint_effect(effect: &str, allow_empty: bool, path: &Path) -> Vec<Cause> {
    if !allow_empty && effect.is_empty() {
        return vec![field::required(path, "")];
    }
    match effect {
        "NoSchedule" | "PreferNoSchedule" | "NoExecute" => Vec::new(),
        _ => vec![field::not_supported(path, Bad::s(effect), &["NoSchedule", "PreferNoSchedule", "NoExecute"])],
    }
}

/// `ValidateTolerations`.
fn validate_tolerations(tolerations: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (idx, t) in tolerations.iter().enumerate() {
        let p = path.index(idx);
        let key = s(t, "key");
        if !key.is_empty() {
            out.extend(meta::validate_label_name(key, &p.child("key")));
        }
        let op = s(t, "operator");
        if key.is_empty() && op != "Exists" {
            out.push(field::invalid(
                &p.child("operator"),
                Bad::s(op),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = s(t, "effect");
        if present(t, "tolerationSeconds") && effect != "NoExecute" {
            out.push(field::invalid(
                &p.child("effect"),
                Bad::s(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = s(t, "value");
        match op {
            "Equal" | "" => {
                let errs = names::label_value(value);
                if !errs.is_empty() {
                    out.push(field::invalid(&p.child("operator"), Bad::s(value), &errs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    out.push(field::invalid(
                        &p.child("operator"),
                        Bad::Raw(field::go_struct(Some(t))),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => out.push(field::not_supported(&p.child("operator"), Bad::s(other), &["Equal", "Exists"])),
        }
        if !effect.is_empty() {
            out.extend(validate_taint_effect(effect, true, &p.child("effect")));
        }
    }
    out
}

/// `validateNodeTaints` (kube reports Node taints under `metadata.taints`, a long-standing quirk).
pub fn validate_node_taints(taints: &[Value], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (idx, t) in taints.iter().enumerate() {
        let p = path.index(idx);
        let key = s(t, "key");
        out.extend(meta::validate_label_name(key, &p.child("key")));
        let value = s(t, "value");
        let errs = names::label_value(value);
        if !errs.is_empty() {
            out.push(field::invalid(&p.child("value"), Bad::s(value), &errs.join(";")));
        }
        let effect = s(t, "effect");
        out.extend(validate_taint_effect(effect, false, &p.child("effect")));
        if !seen.insert((effect.to_string(), key.to_string())) {
            out.push(field::duplicate_with(
                &p,
                Bad::Raw(field::go_struct(Some(t))),
                "taints must be unique by key and effect pair",
            ));
        }
    }
    out
}

const UPDATABLE_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn validate_container_updates(new: &[Value], old: &[Value], path: &Path) -> (Vec<Cause>, bool) {
    if new.len() != old.len() {
        return (vec![field::forbidden(path, "pod updates may not add or remove containers")], true);
    }
    let mut out = Vec::new();
    for (idx, c) in new.iter().enumerate() {
        let image = s(c, "image");
        if image.is_empty() {
            out.push(field::required(&path.index(idx).child("image"), ""));
        }
        if image.trim() != image {
            out.push(field::invalid(
                &path.index(idx).child("image"),
                Bad::s(image),
                "must not have leading or trailing whitespace",
            ));
        }
    }
    (out, false)
}

/// `ValidatePodUpdate`: metadata rules, the pod spec revalidated, then only images, active
/// deadline, added tolerations, removed scheduling gates and a negative grace period may change.
pub fn validate_pod_update(new: &Value, old: &Value) -> Vec<Cause> {
    let md = |v: &Value| v.get("metadata").and_then(Value::as_object).cloned();
    let mut out = meta::validate_object_meta_update(md(new).as_ref(), md(old).as_ref(), &Path::new("metadata"), true);
    out.extend(validate_pod_metadata_and_spec(new));
    let annotation = "kubernetes.io/config.mirror";
    let ann = |v: &Value| v.pointer("/metadata/annotations").and_then(|a| a.get(annotation)).cloned();
    match (ann(new), ann(old)) {
        (Some(_), None) => out.push(field::forbidden(
            &Path::new("metadata").child("annotations").key(annotation),
            "may not add mirror pod annotation",
        )),
        (n, Some(o)) if n.as_ref() != Some(&o) => out.push(field::forbidden(
            &Path::new("metadata").child("annotations").key(annotation),
            "may not remove or update mirror pod annotation",
        )),
        _ => {}
    }
    let empty = Value::Object(Map::new());
    let (ns, os) = (new.get("spec").unwrap_or(&empty), old.get("spec").unwrap_or(&empty));
    let spec_path = Path::new("spec");
    let (errs, stop) =
        validate_container_updates(arr(ns, "containers"), arr(os, "containers"), &spec_path.child("containers"));
    out.extend(errs);
    if stop {
        return out;
    }
    let (errs, stop) = validate_container_updates(
        arr(ns, "initContainers"),
        arr(os, "initContainers"),
        &spec_path.child("initContainers"),
    );
    out.extend(errs);
    if stop {
        return out;
    }
    match (i(ns, "activeDeadlineSeconds"), i(os, "activeDeadlineSeconds")) {
        (Some(n), _) if !(0..=i32::MAX as i64).contains(&n) => {
            out.push(field::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                Bad::Int(n),
                &names::inclusive_range_error(0, i32::MAX as i64),
            ));
            return out;
        }
        (Some(n), Some(o)) if o < n => {
            out.push(field::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                Bad::Int(n),
                "must be less than or equal to previous value",
            ));
            return out;
        }
        (None, Some(_)) => out.push(field::invalid(
            &spec_path.child("activeDeadlineSeconds"),
            Bad::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    let old_tolerations = arr(os, "tolerations");
    for (idx, t) in old_tolerations.iter().enumerate() {
        let kept = arr(ns, "tolerations").iter().any(|n| {
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut() {
                    m.remove("tolerationSeconds");
                }
                v
            };
            strip(n) == strip(t)
        });
        if !kept {
            out.push(field::forbidden(
                &spec_path.child("tolerations").index(idx),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
        }
    }
    let old_gates: Vec<&str> = arr(os, "schedulingGates").iter().map(|g| s(g, "name")).collect();
    for (idx, g) in arr(ns, "schedulingGates").iter().enumerate() {
        if !old_gates.contains(&s(g, "name")) {
            out.push(field::forbidden(
                &spec_path.child("schedulingGates").index(idx),
                "only deletion is allowed, but found new scheduling gate",
            ));
        }
    }
    if ns == os {
        return out;
    }
    // Munge the fields that may change into the new spec, then compare.
    let mut munged = ns.clone();
    for list in ["containers", "initContainers"] {
        if let (Some(Value::Array(mc)), Some(oc)) = (munged.get_mut(list), os.get(list).and_then(Value::as_array)) {
            for (m, o) in mc.iter_mut().zip(oc) {
                if let (Some(m), Some(img)) = (m.as_object_mut(), o.get("image")) {
                    m.insert("image".into(), img.clone());
                }
            }
        }
    }
    let m = munged.as_object_mut().expect("spec object");
    for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
        match os.get(key) {
            Some(v) => {
                m.insert(key.into(), v.clone());
            }
            None => {
                m.remove(key);
            }
        }
    }
    let old_grace = i(os, "terminationGracePeriodSeconds");
    if old_grace.is_some_and(|g| g < 0) && i(ns, "terminationGracePeriodSeconds") == Some(1) {
        m.insert("terminationGracePeriodSeconds".into(), os["terminationGracePeriodSeconds"].clone());
    }
    if &munged != os {
        let diff = field::go_diff("core.PodSpec", os, &munged);
        out.push(field::forbidden(
            &spec_path,
            &format!("pod updates may not change fields other than {UPDATABLE_FIELDS}\n{diff}"),
        ));
    }
    out
}

/// Immutable-field helper shared by workload kinds: `field is immutable` when JSON differs.
pub fn immutable_template(new: Option<&Value>, old: Option<&Value>, path: &Path) -> Vec<Cause> {
    if new != old { vec![field::invalid(path, Bad::Raw(field::go_struct(new)), IMMUTABLE)] } else { Vec::new() }
}

/// `ValidatePodBinding`: a Node target, named. kube returns these as a plain error (500
/// without a reason), not as 422.
pub fn validate_pod_binding(binding: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let target = Path::new("target");
    let kind = binding.pointer("/target/kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        out.push(field::not_supported(&target.child("kind"), Bad::s(kind), &["Node", "<empty>"]));
    }
    if binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("").is_empty() {
        out.push(field::required(&target.child("name"), ""));
    }
    out
}

const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
];

/// The volume source members a volume sets (kube allows exactly one).
pub fn volume_sources(v: &Map<String, Value>) -> Vec<&'static str> {
    VOLUME_SOURCES.iter().copied().filter(|k| v.get(*k).is_some_and(|v| !v.is_null())).collect()
}
