//! APIService validation (kube-aggregator's `pkg/apis/apiregistration/validation`).

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::{meta, names, s};
use apimachinery::error::Cause;

fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `ValidateAPIService`: the name is `<version>.<group>` (and a path segment), the group a
/// subdomain (empty only for `v1`), the version a DNS-1035 label, the priorities in range; a
/// local APIService has no TLS settings, a remote one names its Service.
pub fn api_service(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let (group, version) = (s(spec, "group"), s(spec, "version"));
    let required = format!("{version}.{group}");
    let mut out = name_causes(obj, &required);
    let sp = Path::new("spec");
    if group.is_empty() && version != "v1" {
        out.push(field::required(&sp.child("group"), "only v1 may have an empty group and it better be legacy kube"));
    }
    if !group.is_empty() {
        out.extend(
            names::dns1123_subdomain(group).iter().map(|m| field::invalid(&sp.child("group"), Bad::s(group), m)),
        );
    }
    out.extend(names::dns1035_label(version).iter().map(|m| field::invalid(&sp.child("version"), Bad::s(version), m)));
    let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or(0);
    let group_priority = int("groupPriorityMinimum");
    if group_priority <= 0 || group_priority > 20000 {
        out.push(field::invalid(
            &sp.child("groupPriorityMinimum"),
            Bad::Int(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("versionPriority");
    if version_priority <= 0 || version_priority > 1000 {
        out.push(field::invalid(
            &sp.child("versionPriority"),
            Bad::Int(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_len = ca_bundle(spec).len();
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false);
    let Some(service) = spec.get("service").filter(|v| v.is_object()) else {
        if ca_len != 0 {
            out.push(field::invalid(
                &sp.child("caBundle"),
                Bad::s(format!("{ca_len} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            out.push(field::invalid(
                &sp.child("insecureSkipTLSVerify"),
                Bad::Bool(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return out;
    };
    let svc = sp.child("service");
    if s(service, "namespace").is_empty() {
        out.push(field::required(&svc.child("namespace"), ""));
    }
    if s(service, "name").is_empty() {
        out.push(field::required(&svc.child("name"), ""));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(0);
    let port_errors = names::port_num(port);
    if !port_errors.is_empty() {
        out.push(field::invalid(
            &svc.child("port"),
            Bad::Int(port),
            &format!("port is not valid: {}", port_errors.join(", ")),
        ));
    }
    if insecure && ca_len > 0 {
        out.push(field::invalid(
            &sp.child("insecureSkipTLSVerify"),
            Bad::Bool(true),
            "may not be true if caBundle is present",
        ));
    }
    out
}

/// `ValidateObjectMeta` with kube's name function for APIServices: a path segment, and then
/// exactly `<version>.<group>`, checked where the name rule runs (for `generateName` too).
fn name_causes(obj: &Value, required: &str) -> Vec<Cause> {
    let md = metadata(obj);
    let text = |k: &str| md.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
    let path = Path::new("metadata");
    let mut causes =
        meta::validate_object_meta(md, false, names::path_segment_name, &path, false).into_iter().peekable();
    let mismatch = |field: &str, value: &str| {
        field::invalid(
            &path.child(field),
            Bad::s(value),
            &format!("must be `spec.version+\".\"+spec.group`: {}", field::go_quote(required)),
        )
    };
    let mut out = Vec::new();
    for key in ["generateName", "name"] {
        let at = format!("metadata.{key}");
        let mut failed = false;
        while let Some(c) = causes.next_if(|c| c.field == at) {
            failed = true;
            out.push(c);
        }
        let value = text(key);
        if !failed && !value.is_empty() && value != required {
            out.push(mismatch(key, value));
        }
    }
    out.extend(causes);
    out
}

/// `ValidateAPIServiceUpdate`: the metadata update rules, then everything a create checks.
pub fn api_service_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(metadata(new), metadata(old), &Path::new("metadata"), false);
    out.extend(api_service(new));
    out
}

/// `ValidateAPIServiceStatusUpdate`: the metadata update rules, and each condition's status
/// one of kube's three.
pub fn api_service_status_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(metadata(new), metadata(old), &Path::new("metadata"), false);
    let conditions = new.pointer("/status/conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for (i, c) in conditions.iter().enumerate() {
        let status = s(c, "status");
        if !["True", "False", "Unknown"].contains(&status) {
            let path = Path::new("status").child("conditions").index(i).child("status");
            out.push(field::not_supported(&path, Bad::s(status), &["True", "False", "Unknown"]));
        }
    }
    out
}

/// `spec.caBundle` decoded; a value that is not base64 counts as its text (it would not have
/// decoded in kube).
pub fn ca_bundle(spec: &Value) -> Vec<u8> {
    let text = spec.get("caBundle").and_then(Value::as_str).unwrap_or("");
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_else(|_| text.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn remote(name: &str, spec: Value) -> Value {
        let mut base = json!({"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}});
        for (k, v) in spec.as_object().unwrap() {
            if v.is_null() {
                base.as_object_mut().unwrap().remove(k);
            } else {
                base[k] = v.clone();
            }
        }
        json!({"metadata": {"name": name}, "spec": base})
    }

    #[test]
    fn apiregistration_a_valid_remote_and_local_apiservice_pass() {
        assert_eq!(messages(api_service(&remote("v1beta1.metrics.k8s.io", json!({})))), Vec::<String>::new());
        let core = json!({"metadata": {"name": "v1."}, "spec": {"version": "v1", "groupPriorityMinimum": 18000,
            "versionPriority": 1}});
        assert_eq!(messages(api_service(&core)), Vec::<String>::new());
    }

    #[test]
    fn apiregistration_names_must_be_version_dot_group() {
        assert_eq!(
            messages(api_service(&remote("foo", json!({})))),
            [
                "metadata.name: Invalid value: \"foo\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""
            ]
        );
        // The path segment rule answers first, and alone.
        assert_eq!(
            messages(api_service(&remote("a/b", json!({}))))[0],
            "metadata.name: Invalid value: \"a/b\": may not contain '/'"
        );
        assert_eq!(messages(api_service(&remote("a/b", json!({})))).len(), 1);
    }

    #[test]
    fn apiregistration_spec_rules_use_kube_words_in_kube_order() {
        let bad = remote(
            "v1_x.",
            json!({"group": null, "version": "v1_x", "groupPriorityMinimum": 0, "versionPriority": 1001}),
        );
        assert_eq!(
            messages(api_service(&bad)),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.version: Invalid value: \"v1_x\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            ]
        );
        let edges = remote("v1beta1.metrics.k8s.io", json!({"groupPriorityMinimum": 20000, "versionPriority": 1000}));
        assert!(api_service(&edges).is_empty(), "20000 and 1000 are allowed");
    }

    #[test]
    fn apiregistration_local_apiservices_take_no_tls_settings() {
        let local = json!({"metadata": {"name": "v1.example.com"}, "spec": {"group": "example.com", "version": "v1",
            "groupPriorityMinimum": 1000, "versionPriority": 100, "caBundle": "UEVN", "insecureSkipTLSVerify": true}});
        assert_eq!(
            messages(api_service(&local)),
            [
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
    }

    #[test]
    fn apiregistration_remote_apiservices_name_their_service() {
        let bad = remote(
            "v1beta1.metrics.k8s.io",
            json!({"service": {"port": 0}, "caBundle": "UEVN", "insecureSkipTLSVerify": true}),
        );
        assert_eq!(
            messages(api_service(&bad)),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn apiregistration_status_conditions_take_three_statuses() {
        let old = remote("v1beta1.metrics.k8s.io", json!({}));
        let mut new = old.clone();
        new["status"] = json!({"conditions": [{"type": "Available", "status": "Maybe"}]});
        assert_eq!(
            messages(api_service_status_update(&new, &old)),
            [
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""
            ]
        );
    }
}
