//! The codec checked against k8s-pb, prost's types generated from the same .proto files by
//! another project: what one side encodes, the other decodes.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use prost::Message;
use serde_json::{Value, json};

use super::*;

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "4f3c", "resourceVersion": "12",
            "creationTimestamp": "2024-05-01T10:20:30Z", "labels": {"app": "web", "tier": "front"},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "time": "2024-05-01T10:20:30Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
        },
        "spec": {
            "containers": [{
                "name": "app", "image": "nginx:1.25",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": 8080}}
            }],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "hostNetwork": true, "priority": -5
        },
        "status": {"phase": "Pending"}
    })
}

#[test]
fn a_pod_encoded_here_is_decoded_by_k8s_pb() {
    let raw = encode_raw(&pod()).unwrap();
    let p = core::Pod::decode(raw.as_slice()).unwrap();
    let meta = p.metadata.unwrap();
    assert_eq!(meta.name.as_deref(), Some("web"));
    assert_eq!(meta.labels.get("tier").map(String::as_str), Some("front"));
    assert_eq!(meta.creation_timestamp.unwrap().seconds, Some(1714558830));
    let fields = meta.managed_fields[0].fields_v1.clone().unwrap().raw.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&fields).unwrap(), json!({"f:metadata": {"f:labels": {}}}));
    let spec = p.spec.unwrap();
    let c = &spec.containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx:1.25"));
    assert_eq!(c.ports[0].container_port, Some(80));
    assert_eq!(c.resources.as_ref().unwrap().limits["cpu"].string.as_deref(), Some("500m"));
    // The probe's handler is inlined in JSON, a message of its own in protobuf.
    let get = c.liveness_probe.as_ref().unwrap().handler.as_ref().unwrap().http_get.as_ref().unwrap();
    assert_eq!(get.port.as_ref().unwrap().str_val.as_deref(), Some("http"));
    assert_eq!(get.port.as_ref().unwrap().r#type, Some(1));
    let tcp = c.readiness_probe.as_ref().unwrap().handler.as_ref().unwrap().tcp_socket.as_ref().unwrap();
    assert_eq!(tcp.port.as_ref().unwrap().int_val, Some(8080));
    let vol = spec.volumes[0].volume_source.as_ref().unwrap();
    assert_eq!(vol.empty_dir.as_ref().unwrap().size_limit.as_ref().unwrap().string.as_deref(), Some("1Gi"));
    assert_eq!(spec.host_network, Some(true));
    assert_eq!(spec.priority, Some(-5));
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
}

/// The encoder walks an object's keys in order beside its fields sorted by name: an object
/// whose members were inserted in another order encodes the same.
#[test]
fn the_order_members_were_inserted_in_does_not_change_the_encoding() {
    fn reversed(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map.iter().rev() {
                    out.insert(k.clone(), reversed(v));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    assert_eq!(encode_raw(&reversed(&pod())).unwrap(), encode_raw(&pod()).unwrap());
}

#[test]
fn a_pod_round_trips_to_the_same_json() {
    let body = encode_object(&pod()).unwrap();
    assert!(body.starts_with(MAGIC));
    assert_eq!(decode_object(&body).unwrap(), pod());
}

#[test]
fn what_k8s_pb_encodes_decodes_as_kube_json() {
    // Go's marshallers write every non-pointer field, empty or not; JSON drops what omitempty drops.
    let d = apps::Deployment {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("web".into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(Default::default()),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            paused: Some(false),
            selector: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: Some("app".into()),
                        image: Some(String::new()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    };
    let raw = d.encode_to_vec();
    let v = decode_raw(&raw, "apps/v1", "Deployment").unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            // replicas is a pointer: a present 0 is kept; paused is omitempty: false is dropped.
            // Structs are values in Go, so JSON shows them even when empty and left out
            // (strategy, status, a container's resources).
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
                     "template": {"metadata": {}, "spec": {"containers": [{"name": "app", "resources": {}}]}}},
            "status": {}
        })
    );
}

#[test]
fn secrets_carry_bytes_and_string_data_is_a_plain_map() {
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "type": "Opaque", "data": {"k": "aGVsbG8="}, "immutable": true});
    let raw = encode_raw(&s).unwrap();
    let back = core::Secret::decode(raw.as_slice()).unwrap();
    assert_eq!(back.data["k"], b"hello");
    assert_eq!(decode_raw(&raw, "v1", "Secret").unwrap(), s);
}

#[test]
fn lists_and_watch_frames_nest_as_kube_writes_them() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}});
    let item = encode_raw(&cm).unwrap();
    let raw = encode_list_raw(&json!({"resourceVersion": "7"}), [item.as_slice(), item.as_slice()]).unwrap();
    let list = core::ConfigMapList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.metadata.unwrap().resource_version.as_deref(), Some("7"));
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.items[1].data["x"], "1");

    let frame = watch_frame("ADDED", &cm).unwrap();
    let (ty, obj, used) = read_watch_frame(&frame).unwrap().unwrap();
    assert_eq!((ty.as_str(), obj, used), ("ADDED", cm.clone(), frame.len()));
    assert!(read_watch_frame(&frame[..frame.len() - 1]).unwrap().is_none());
    let ev = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
    let body = ev.object.unwrap().raw.unwrap();
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
    assert_eq!(unknown.type_meta.unwrap().kind.as_deref(), Some("ConfigMap"));
}

#[test]
fn status_travels_as_the_meta_message() {
    let st = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                    "message": "configmaps \"x\" not found", "reason": "NotFound",
                    "details": {"name": "x", "kind": "configmaps"}, "code": 404});
    let body = encode_object(&st).unwrap();
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
    let status = k8s_pb::apimachinery::pkg::apis::meta::v1::Status::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!((status.code, status.reason.as_deref()), (Some(404), Some("NotFound")));
    assert_eq!(decode_object(&body).unwrap(), st);
}

#[test]
fn micro_times_durations_and_unknown_kinds() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                       "spec": {"renewTime": "2024-05-01T10:20:30.123456Z", "leaseDurationSeconds": 15}});
    assert_eq!(decode_object(&encode_object(&lease).unwrap()).unwrap(), lease);
    assert!(matches!(
        encode_raw(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
        Err(Error::NoMessage { .. })
    ));
    assert!(matches!(decode_object(b"{\"kind\":\"Pod\"}"), Err(Error::NoMagic)));
    assert!(decode_object(b"k8s\0\x0a\xff").is_err());
    assert_eq!(codec_duration("1h2m3.5s"), "1h2m3.5s");
    assert_eq!(codec_duration("1.5ms"), "1.5ms");
}

#[test]
fn times_out_of_go_range_or_leap_seconds_are_refused() {
    let schema = Schema::global();
    let time = schema.message("k8s.io.apimachinery.pkg.apis.meta.v1.Time").unwrap();
    let micro = schema.message("k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime").unwrap();
    let decode = |id, seconds: i64, nanos: i64| {
        let mut out = Vec::new();
        codec::write_varint(1, seconds as u64, &mut out);
        codec::write_varint(2, nanos as u64, &mut out);
        codec::decode(schema, id, &out)
    };
    // Year 10000: chrono wrote `+10000-…`, which no RFC 3339 parser (nor kube) reads back.
    assert!(decode(time, 253_402_300_800, 0).is_err());
    assert_eq!(decode(time, 253_402_300_799, 0).unwrap(), json!("9999-12-31T23:59:59Z"));
    // Nanoseconds outside a second carry as Go's time.Unix carries them (not as a leap second).
    assert_eq!(decode(micro, 59, 1_500_000_000).unwrap(), json!("1970-01-01T00:01:00.500000Z"));
    assert_eq!(decode(micro, 60, -1_000).unwrap(), json!("1970-01-01T00:00:59.999999Z"));
    // A leap second in JSON does not encode: Go's time.Parse refuses `:60`.
    let mut out = Vec::new();
    assert!(codec::encode(schema, time, &json!("2024-05-01T10:20:60Z"), &mut out).is_err());
}

#[test]
fn bodies_nested_past_the_depth_bound_are_refused_not_a_stack_overflow() {
    // A ControllerRevision whose `data` embeds another enveloped ControllerRevision, and so on.
    let mut body = encode_object(&json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                                         "metadata": {"name": "r"}, "revision": 1}))
    .unwrap();
    let raw_ext_field = |body: &[u8]| {
        let mut ext = Vec::new();
        codec::write_bytes(1, body, &mut ext);
        let mut raw = Vec::new();
        codec::write_bytes(2, &ext, &mut raw);
        let mut out = unknown_head("apps/v1", "ControllerRevision", raw.len());
        out.extend_from_slice(&raw);
        out
    };
    for _ in 0..20 {
        body = raw_ext_field(&body);
    }
    assert!(decode_object(&body).is_ok());
    // Two messages a level (the revision, its RawExtension): past MAX_DEPTH.
    for _ in 0..MAX_DEPTH / 2 {
        body = raw_ext_field(&body);
    }
    assert!(matches!(decode_object(&body), Err(Error::TooDeep)));
}

fn codec_duration(s: &str) -> String {
    let schema = Schema::global();
    let id = schema.message("k8s.io.apimachinery.pkg.apis.meta.v1.Duration").unwrap();
    let mut out = Vec::new();
    codec::encode(schema, id, &json!(s), &mut out).unwrap();
    codec::decode(schema, id, &out).unwrap().as_str().unwrap().to_string()
}

/// What kube refuses in a stored CRD schema ($ref, $schema, definitions, dependencies,
/// additionalItems, items as an array) still has a wire form: checked against k8s-pb's types,
/// since no reference server writes it.
#[test]
fn schema_forms_a_reference_server_never_stores_cross_check_with_k8s_pb() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    let schema = json!({
        "$schema": "http://json-schema.org/draft-04/schema#", "$ref": "#/definitions/a", "id": "s",
        "items": [{"type": "string"}, {"type": "integer"}],
        "additionalItems": false,
        "additionalProperties": {"type": "string"},
        "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
        "definitions": {"a": {"type": "object", "default": null}},
        "patternProperties": {"^x-": {"x-kubernetes-int-or-string": true}},
        "enum": [1, "two", null, {"three": [3]}],
        "x-kubernetes-list-type": "atomic"
    });
    let s = Schema::global();
    let id = s.message("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps").unwrap();
    let mut raw = Vec::new();
    codec::encode(s, id, &schema, &mut raw).unwrap();
    let p = ext::JsonSchemaProps::decode(raw.as_slice()).unwrap();
    assert_eq!(p.schema.as_deref(), Some("http://json-schema.org/draft-04/schema#"));
    assert_eq!(p.r#ref.as_deref(), Some("#/definitions/a"));
    let items = p.items.as_ref().unwrap();
    assert!(items.schema.is_none());
    assert_eq!(items.j_son_schemas[1].r#type.as_deref(), Some("integer"));
    // Go writes `allows` even when false; a schema comes with `allows: true`.
    assert_eq!(p.additional_items.as_ref().map(|b| (b.allows, b.schema.is_some())), Some((Some(false), false)));
    let additional = p.additional_properties.as_ref().unwrap();
    assert_eq!(
        (additional.allows, additional.schema.as_ref().unwrap().r#type.as_deref()),
        (Some(true), Some("string"))
    );
    assert_eq!(p.dependencies["a"].property, ["b", "c"]);
    assert_eq!(p.dependencies["d"].schema.as_ref().unwrap().required, ["e"]);
    // A null `default` is a nil pointer in Go: no field at all.
    assert!(p.definitions["a"].default.is_none());
    assert_eq!(p.pattern_properties["^x-"].x_kubernetes_int_or_string, Some(true));
    let enums: Vec<Option<&[u8]>> = p.r#enum.iter().map(|j| j.raw.as_deref()).collect();
    assert_eq!(enums, [Some(&b"1"[..]), Some(b"\"two\""), None, Some(b"{\"three\":[3]}")]);
    assert_eq!(p.x_kubernetes_list_type.as_deref(), Some("atomic"));
    // Values in Go, written though zero: description, exclusiveMaximum, nullable...
    assert_eq!((p.description.as_deref(), p.exclusive_maximum, p.nullable), (Some(""), Some(false), Some(false)));

    // And back: the same JSON, but for the null default, which is no default in Go.
    let mut expected = schema.clone();
    expected["definitions"]["a"] = json!({"type": "object"});
    assert_eq!(codec::decode(s, id, &p.encode_to_vec()).unwrap(), expected);
}

#[test]
fn go_writes_values_even_when_zero_and_reads_their_absence_as_zero() {
    // An APIService without a spec: Go writes an empty spec holding its two priorities.
    let svc = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x"}});
    let raw = encode_raw(&svc).unwrap();
    let back = k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1::APIService::decode(raw.as_slice()).unwrap();
    let spec = back.spec.unwrap();
    assert_eq!((spec.group_priority_minimum, spec.version_priority, spec.service), (Some(0), Some(0), None));
    assert_eq!(back.metadata.unwrap().generate_name.as_deref(), Some(""));
    // A body that leaves them out reads as Go reads it: the zeros JSON shows.
    let bare = k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1::APIService::default().encode_to_vec();
    assert_eq!(
        decode_raw(&bare, "apiregistration.k8s.io/v1", "APIService").unwrap(),
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {},
               "spec": {"groupPriorityMinimum": 0, "versionPriority": 0}, "status": {}})
    );
}

/// Every field of our own .proto files has a line in its `.fields` table: a field without
/// one would travel under its proto name in JSON.
#[test]
fn every_field_of_our_own_protos_is_in_its_table() {
    let tables = [include_str!("../proto/apiextensions_v1.fields"), include_str!("../proto/apiregistration_v1.fields")];
    let mut listed = std::collections::HashSet::new();
    for table in tables {
        let mut package = "";
        for line in table.lines().map(|l| l.split('#').next().unwrap().trim()).filter(|l| !l.is_empty()) {
            if let Some(p) = line.strip_prefix("package ") {
                package = p;
                continue;
            }
            let mut w = line.split_whitespace();
            listed.insert(format!("{package}.{}#{}", w.next().unwrap(), w.next().unwrap()));
        }
    }
    let s = Schema::global();
    let own = s.messages.iter().filter(|m| {
        m.name.starts_with("k8s.io.apiextensions_apiserver.") || m.name.starts_with("k8s.io.kube_aggregator.")
    });
    let mut missing = Vec::new();
    for m in own.filter(|m| m.special == schema::Special::None || m.special == schema::Special::SchemaOrBool) {
        for f in &m.fields {
            // The boolean form's schema is the message's JSON form, not a field of it.
            let json_form = m.special == schema::Special::SchemaOrBool && f.number == 2;
            if !json_form && !listed.contains(&format!("{}#{}", m.name, f.number)) {
                missing.push(format!("{} {}", m.name, f.number));
            }
        }
    }
    assert!(missing.is_empty(), "fields without a line: {missing:?}");
    assert!(listed.len() > 100);
}

/// Go's zero values as kube's unstructured converter writes them: structs present (even under
/// `omitempty`), scalars without `omitempty` as zeros, nil pointers and slices without it as
/// `null`, times as `null`.
#[test]
fn go_zero_values_are_what_kubes_converter_writes() {
    let s = Schema::global();
    let zero = |api_version: &str, kind: &str| go_zero::go_zero(s, s.message_for(api_version, kind).unwrap());
    let d = zero("apps/v1", "Deployment");
    assert_eq!(d["metadata"], json!({"creationTimestamp": null}));
    assert_eq!(d["spec"]["selector"], Value::Null);
    assert!(d["spec"].get("replicas").is_none(), "a pointer under omitempty is left out");
    assert_eq!(d["spec"]["strategy"], json!({}));
    assert_eq!(d["spec"]["template"], json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}));
    assert_eq!(d["status"], json!({}));
    assert!(d.get("apiVersion").is_none() && d.get("kind").is_none());
    let crb = zero("rbac.authorization.k8s.io/v1", "ClusterRoleBinding");
    assert_eq!(crb["roleRef"], json!({"apiGroup": "", "kind": "", "name": ""}));
    assert!(crb.get("subjects").is_none());
    let hpa = zero("autoscaling/v2", "HorizontalPodAutoscaler");
    assert_eq!(hpa["spec"]["maxReplicas"], 0);
    assert_eq!(hpa["spec"]["scaleTargetRef"], json!({"kind": "", "name": ""}));
    let event = zero("v1", "Event");
    assert_eq!((&event["firstTimestamp"], &event["eventTime"]), (&Value::Null, &Value::Null));
    let pc = zero("scheduling.k8s.io/v1", "PriorityClass");
    assert_eq!(pc["value"], 0);
    let crd = zero("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    assert_eq!(crd["spec"]["versions"], Value::Null);
    assert_eq!(crd["spec"]["names"], json!({"plural": "", "kind": ""}));
}

#[test]
fn the_stored_encoding_leaves_out_only_the_resource_version_and_self_link_of_the_object() {
    let mut pod = pod();
    pod["metadata"]["selfLink"] = json!("/api/v1/namespaces/default/pods/web");
    // A nested ObjectMeta (a template's) keeps what it has.
    pod["spec"]["volumes"] = json!([{"name": "v", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"a": "b"}, "resourceVersion": "3"}, "spec": {"accessModes": ["ReadWriteOnce"]}}}}]);
    let stored = encode_stored_as(&pod, "v1", "Pod").unwrap();
    assert_ne!(stored, encode_as(&pod, "v1", "Pod").unwrap());
    let mut trimmed = pod.clone();
    let meta = trimmed["metadata"].as_object_mut().unwrap();
    meta.remove("resourceVersion");
    meta.remove("selfLink");
    assert_eq!(stored, encode_as(&trimmed, "v1", "Pod").unwrap());
    let back = decode_raw(&stored, "v1", "Pod").unwrap();
    assert_eq!(back["metadata"].get("resourceVersion"), None);
    assert_eq!(back["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["metadata"]["resourceVersion"], "3");
}
