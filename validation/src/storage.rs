//! VolumeAttachment and CSINode: what the CSI attach/detach controller and kubelets write, with
//! kube 1.30's field paths and messages (kube: `pkg/apis/storage/validation`).

use std::collections::HashSet;

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::{IMMUTABLE, NEGATIVE, arr, meta, names, s};
use apimachinery::error::Cause;

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS subdomain once lower-cased.
pub(crate) fn csi_driver_name(name: &str, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if name.is_empty() {
        out.push(field::required(path, ""));
    }
    if name.len() > 63 {
        out.push(field::too_long(path, 63));
    }
    out.extend(names::dns1123_subdomain(&name.to_lowercase()).iter().map(|m| field::invalid(path, Bad::s(name), m)));
    out
}

/// `ValidateVolumeAttachment` and `ValidateVolumeAttachmentV1`: an attacher, exactly one
/// source, a node.
pub fn volume_attachment(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    let attacher = s(spec, "attacher");
    if attacher.is_empty() {
        out.push(field::required(&sp.child("attacher"), ""));
    }
    let source = &spec["source"];
    let pv = source.get("persistentVolumeName").and_then(Value::as_str);
    let inline = source.get("inlineVolumeSpec").filter(|v| !v.is_null());
    let exactly_one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (inline, pv) {
        (None, None) => out.push(field::required(&sp.child("source"), exactly_one)),
        (Some(_), Some(_)) => out.push(field::forbidden(&sp.child("source"), exactly_one)),
        (None, Some("")) => out.push(field::required(
            &sp.child("source").child("persistentVolumeName"),
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = s(spec, "nodeName");
    out.extend(names::dns1123_subdomain(node).iter().map(|m| field::invalid(&sp.child("nodeName"), Bad::s(node), m)));
    if let Some(error) = obj.pointer("/status/attachError/message").and_then(Value::as_str)
        && error.len() > 1024
    {
        let path = Path::new("status").child("attachError").child("message");
        out.push(field::too_long(&path, 1024));
    }
    // The v1 rules on top.
    out.extend(csi_driver_name(attacher, &sp.child("attacher")));
    if let Some(pv) = pv {
        let path = sp.child("source").child("persistentVolumeName");
        out.extend(names::dns1123_subdomain(pv).iter().map(|m| field::invalid(&path, Bad::s(pv), m)));
    }
    out
}

/// `ValidateVolumeAttachmentUpdate`: the spec is fixed at creation.
pub fn volume_attachment_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = volume_attachment(new);
    if new.get("spec") != old.get("spec") {
        out.push(field::invalid(&Path::new("spec"), Bad::Raw(field::go_struct(new.get("spec"))), IMMUTABLE));
    }
    out
}

/// `ValidateCSINode`: each driver named once, with a node ID, a non-negative volume limit and
/// distinct label-name topology keys.
pub fn csi_node(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let drivers_path = Path::new("spec").child("drivers");
    let mut names_seen = HashSet::new();
    for (i, driver) in arr(&obj["spec"], "drivers").iter().enumerate() {
        let idx = drivers_path.index(i);
        let name = s(driver, "name");
        out.extend(csi_driver_name(name, &idx.child("name")));
        let node_id = s(driver, "nodeID");
        if node_id.is_empty() {
            out.push(field::required(&idx.child("nodeID"), ""));
        }
        if node_id.len() > 192 {
            out.push(field::invalid(&idx.child("nodeID"), Bad::s(node_id), "must be 192 characters or less"));
        }
        if let Some(count) = driver.pointer("/allocatable/count").and_then(Value::as_i64)
            && count < 0
        {
            out.push(field::invalid(&idx.child("allocatable").child("count"), Bad::Int(count), NEGATIVE));
        }
        if !names_seen.insert(name) {
            out.push(field::duplicate(&idx.child("name"), Bad::s(name)));
        }
        let mut keys = HashSet::new();
        for key in arr(driver, "topologyKeys").iter().map(|k| k.as_str().unwrap_or("")) {
            if key.is_empty() {
                out.push(field::required(&idx, ""));
            }
            if !keys.insert(key) {
                out.push(field::duplicate(&idx, Bad::s(key)));
            }
            out.extend(meta::validate_label_name(key, &idx));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_kinds::{create_causes, def};

    fn causes(resource: &str, obj: Value) -> Vec<(String, String)> {
        create_causes("storage.k8s.io", resource, obj)
    }

    #[test]
    fn volume_attachments_need_one_source_and_keep_their_spec() {
        let got = causes(
            "volumeattachments",
            json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {}}}),
        );
        assert_eq!(
            got,
            [(
                "spec.source".to_string(),
                "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName".to_string()
            )]
        );
        let got = causes(
            "volumeattachments",
            json!({"spec": {"attacher": "", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}}),
        );
        assert_eq!(got[0], ("spec.attacher".to_string(), "Required value".to_string()));
        assert!(got[1].1.starts_with("Invalid value: \"\": a lowercase RFC 1123 subdomain"), "{got:?}");

        let d = def("storage.k8s.io", "volumeattachments");
        let old = json!({"metadata": {"name": "x", "resourceVersion": "1"},
                         "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}});
        let mut new = old.clone();
        new["spec"]["nodeName"] = json!("n2");
        let got: Vec<String> =
            d.validate_update(&new, &old).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("spec: Invalid value: ") && got[0].ends_with(": field is immutable"), "{got:?}");
        assert_eq!(d.validate_update(&old, &old), vec![], "status writes leave the spec alone");
    }

    #[test]
    fn csi_nodes_name_each_driver_once() {
        let node = json!({"spec": {"drivers": [
            {"name": "csi.example.com", "nodeID": "n1", "topologyKeys": ["topology.example.com/zone", "topology.example.com/zone"]},
            {"name": "csi.example.com", "nodeID": "", "allocatable": {"count": -1}},
        ]}});
        let got = causes("csinodes", node);
        assert_eq!(
            got,
            [
                ("spec.drivers[0]", "Duplicate value: \"topology.example.com/zone\""),
                ("spec.drivers[1].nodeID", "Required value"),
                ("spec.drivers[1].allocatable.count", "Invalid value: -1: must be greater than or equal to 0"),
                ("spec.drivers[1].name", "Duplicate value: \"csi.example.com\""),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }
}
