//! The fields each kind offers to field selectors, with values rendered as kube renders them
//! (its per-kind `ToSelectableFields`): labels are the canonical ones [`FieldSelector::validate_for`]
//! converts to.
//!
//! [`FieldSelector::validate_for`]: super::FieldSelector::validate_for

use serde_json::Value;

use crate::kinds::ResourceDef;
use crate::object::{ObjectExt, field};

fn text(obj: &Value, path: &str) -> String {
    match field(obj, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn flag(obj: &Value, path: &str) -> String {
    field(obj, path).and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// The selectable fields of `obj`, a stored object of `def`.
pub fn field_set(def: &ResourceDef, obj: &Value) -> Vec<(&'static str, String)> {
    let mut out = vec![("metadata.name", obj.name().to_string())];
    if def.namespaced {
        out.push(("metadata.namespace", obj.namespace().to_string()));
    }
    match (def.group, def.resource) {
        ("", "pods") => {
            let pod_ip = obj
                .pointer("/status/podIPs/0/ip")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| text(obj, "status.podIP"));
            out.extend([
                ("spec.nodeName", text(obj, "spec.nodeName")),
                ("spec.restartPolicy", text(obj, "spec.restartPolicy")),
                ("spec.schedulerName", text(obj, "spec.schedulerName")),
                ("spec.serviceAccountName", text(obj, "spec.serviceAccountName")),
                ("spec.hostNetwork", flag(obj, "spec.hostNetwork")),
                ("status.phase", text(obj, "status.phase")),
                ("status.podIP", pod_ip),
                ("status.nominatedNodeName", text(obj, "status.nominatedNodeName")),
            ]);
        }
        ("", "nodes") => out.push(("spec.unschedulable", flag(obj, "spec.unschedulable"))),
        ("", "namespaces") => out.push(("status.phase", text(obj, "status.phase"))),
        ("", "secrets") => out.push(("type", text(obj, "type"))),
        ("", "services") => out.push(("spec.clusterIP", text(obj, "spec.clusterIP"))),
        ("batch", "jobs") => {
            let succeeded = field(obj, "status.succeeded").and_then(Value::as_i64).unwrap_or(0);
            out.push(("status.successful", succeeded.to_string()));
        }
        ("", "events") | ("events.k8s.io", "events") => {
            let mut source = text(obj, "source.component");
            if source.is_empty() {
                source = text(obj, "reportingComponent");
            }
            for f in [
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "type",
            ] {
                out.push((f, text(obj, f)));
            }
            out.push(("source", source));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::find;
    use serde_json::json;

    #[test]
    fn pod_fields_render_like_kube() {
        let pods = find("", "v1", "pods").unwrap();
        let p = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"},
                       "status": {"podIPs": [{"ip": "10.0.0.1"}]}});
        let f = field_set(pods, &p);
        assert!(f.contains(&("spec.nodeName", "n1".to_string())));
        assert!(f.contains(&("spec.hostNetwork", "false".to_string())), "unset bools read false");
        assert!(f.contains(&("status.podIP", "10.0.0.1".to_string())));
    }

    #[test]
    fn job_successful_counts_succeeded_pods() {
        let jobs = find("batch", "v1", "jobs").unwrap();
        assert!(field_set(jobs, &json!({})).contains(&("status.successful", "0".to_string())));
        let j = json!({"status": {"succeeded": 2}});
        assert!(field_set(jobs, &j).contains(&("status.successful", "2".to_string())));
    }

    #[test]
    fn event_source_falls_back_to_reporting_component() {
        let events = find("", "v1", "events").unwrap();
        let e = json!({"reportingComponent": "ctl"});
        assert!(field_set(events, &e).contains(&("source", "ctl".to_string())));
    }
}
