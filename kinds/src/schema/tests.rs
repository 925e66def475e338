use super::patch_meta::{ATOMIC_STRUCTS, LIST_TYPES, MAP_TYPES, PATCH_META};
use super::*;
use apimachinery::schema::{FieldReport, cannot_be_handled};

// The core's lookups, with the built-in definitions installed first: each test may run alone.

/// The root node of a definition by name (its definitions installed first).
fn definition_node(name: &str) -> Option<Node<'static>> {
    super::prepare_definitions();
    apimachinery::schema::definition_node(name)
}

/// Prunes and checks a built-in kind's object (its definitions installed first).
fn check_fields(group: &str, version: &str, kind: &str, obj: &mut serde_json::Value) -> FieldReport {
    super::prepare_definitions();
    apimachinery::schema::check_fields(group, version, kind, obj)
}

/// The definition name of a built-in kind (its definitions installed first).
fn kind_definition_name(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    super::prepare_definitions();
    apimachinery::schema::kind_definition_name(group, version, kind)
}

#[test]
fn every_builtin_kind_has_a_schema() {
    for d in crate::builtin::resources() {
        let node = kind_node(&d.group, &d.version, &d.kind).unwrap_or_else(|| panic!("no schema for {}", d.kind));
        assert_eq!(node.type_name(), Some("object"));
        let gvk = node.extension("x-kubernetes-group-version-kind").expect("gvk");
        assert_eq!(gvk[0]["kind"], d.kind);
        assert_eq!(gvk[0]["group"], d.group);
        if !d.verbs().contains(&"list") {
            assert!(kind_node(&d.group, &d.version, &format!("{}List", d.kind)).is_none(), "{} has no list", d.kind);
            continue;
        }
        let list = kind_node(&d.group, &d.version, &format!("{}List", d.kind)).expect("list kind");
        assert!(list.property("items").unwrap().items().unwrap().property("metadata").is_some());
    }
}

#[test]
fn every_table_row_lands() {
    let mut missing = Vec::new();
    for r in PATCH_META {
        if definition_node(r.definition).and_then(|n| n.property(r.property)).is_none() {
            missing.push(format!("patch {}.{}", r.definition, r.property));
        }
    }
    for r in LIST_TYPES {
        if definition_node(r.definition).and_then(|n| n.property(r.property)).is_none() {
            missing.push(format!("list {}.{}", r.definition, r.property));
        }
    }
    for (d, p, _) in MAP_TYPES {
        if definition_node(d).and_then(|n| n.property(p)).is_none() {
            missing.push(format!("map {d}.{p}"));
        }
    }
    for d in ATOMIC_STRUCTS {
        if definition_node(d).is_none() {
            missing.push(format!("struct {d}"));
        }
    }
    assert!(missing.is_empty(), "rows naming nothing: {missing:#?}");
}

#[test]
fn navigation_sees_merge_keys_through_refs() {
    let deploy = kind_node("apps", "v1", "Deployment").unwrap();
    let pod_spec = deploy.property("spec").unwrap().property("template").unwrap().property("spec").unwrap();
    let containers = pod_spec.property("containers").unwrap();
    assert_eq!(containers.type_name(), Some("array"));
    assert_eq!(containers.patch_strategy(), Some("merge"));
    assert_eq!(containers.patch_merge_key(), Some("name"));
    let c = containers.items().unwrap();
    assert_eq!(c.definition_name(), Some("io.k8s.api.core.v1.Container"));
    assert_eq!(c.property("env").unwrap().patch_merge_key(), Some("name"));
    assert_eq!(c.property("ports").unwrap().patch_merge_key(), Some("containerPort"));
    assert_eq!(c.property("ports").unwrap().list_map_keys(), ["containerPort", "protocol"]);
    assert_eq!(c.property("volumeMounts").unwrap().patch_merge_key(), Some("mountPath"));
    assert_eq!(pod_spec.property("volumes").unwrap().patch_strategy(), Some("merge,retainKeys"));
    assert_eq!(pod_spec.property("tolerations").unwrap().patch_strategy(), None);
    assert_eq!(pod_spec.property("tolerations").unwrap().list_type(), Some("atomic"));
    let strategy = deploy.property("spec").unwrap().property("strategy").unwrap();
    assert_eq!(strategy.patch_strategy(), Some("retainKeys"));
    assert_eq!(strategy.type_name(), Some("object"));
    assert!(strategy.property("rollingUpdate").is_some());
    let meta = deploy.property("metadata").unwrap();
    assert_eq!(meta.property("finalizers").unwrap().patch_strategy(), Some("merge"));
    assert_eq!(meta.property("ownerReferences").unwrap().patch_merge_key(), Some("uid"));
    let labels = meta.property("labels").unwrap();
    assert_eq!(labels.additional_properties().unwrap().type_name(), Some("string"));
    let svc = kind_node("", "v1", "Service").unwrap();
    assert_eq!(svc.property("spec").unwrap().property("ports").unwrap().patch_merge_key(), Some("port"));
    let node = kind_node("", "v1", "Node").unwrap();
    assert_eq!(node.property("status").unwrap().property("addresses").unwrap().patch_merge_key(), Some("type"));
    let sa = kind_node("", "v1", "ServiceAccount").unwrap();
    assert_eq!(sa.property("secrets").unwrap().patch_merge_key(), Some("name"));
}

#[test]
fn check_fields_prunes_unknown_fields_with_kube_paths() {
    let mut d = serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "bogus": 1},
        "spec": {
            "replicas": 2,
            "foo": "bar",
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "100m", "memory": 128}}},
                    {"name": "d", "image": "nginx", "imagePullPolicyX": "Always", "env": [{"name": "A", "valueX": "1"}]},
                ]},
            },
        },
        "status": {"replicas": 1},
    });
    let r = check_fields("apps", "v1", "Deployment", &mut d);
    assert_eq!(r.decode_error, None);
    assert_eq!(
        r.unknown,
        [
            "metadata.bogus",
            "spec.foo",
            "spec.template.spec.containers[1].env[0].valueX",
            "spec.template.spec.containers[1].imagePullPolicyX",
        ]
    );
    assert!(d["spec"].get("foo").is_none());
    assert!(d["metadata"].get("bogus").is_none());
    assert!(d["spec"]["template"]["spec"]["containers"][1].get("imagePullPolicyX").is_none());
    assert_eq!(d["metadata"]["labels"]["app"], "web");
    // A bare number decodes as a quantity and is written back as its canonical string.
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"], "128");
    assert_eq!(
        r.strict_message().unwrap(),
        "strict decoding error: unknown field \"metadata.bogus\", unknown field \"spec.foo\", \
         unknown field \"spec.template.spec.containers[1].env[0].valueX\", \
         unknown field \"spec.template.spec.containers[1].imagePullPolicyX\""
    );
    assert_eq!(r.strict_errors()[1], "unknown field \"spec.foo\"");
}

#[test]
fn check_fields_reports_type_errors_in_go_words() {
    let mut d = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
        "spec": {"replicas": "two", "template": {"spec": {"containers": [{"name": 5}]}}}});
    let r = check_fields("apps", "v1", "Deployment", &mut d);
    let err = r.decode_error.clone().unwrap();
    assert_eq!(err, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32");
    assert_eq!(
        cannot_be_handled("Deployment", "v1", "Deployment", &err),
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go \
         struct field DeploymentSpec.spec.replicas of type int32"
    );

    let mut p = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": 5}]}});
    let r = check_fields("", "v1", "Pod", &mut p);
    assert_eq!(
        r.decode_error.as_deref(),
        Some("json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string")
    );

    let mut p = serde_json::json!({"kind": "Pod", "spec": {"containers": {"name": "c"}}});
    let r = check_fields("", "v1", "Pod", &mut p);
    assert_eq!(
        r.decode_error.as_deref(),
        Some("json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container")
    );

    let mut d = serde_json::json!({"spec": {"replicas": 1.5}});
    let r = check_fields("apps", "v1", "Deployment", &mut d);
    assert_eq!(
        r.decode_error.as_deref(),
        Some("json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32")
    );

    let mut s = serde_json::json!({"kind": "Secret", "data": {"a": "aGVsbG8=", "b": "not base64!"}});
    let r = check_fields("", "v1", "Secret", &mut s);
    assert_eq!(r.decode_error.as_deref(), Some("illegal base64 data at input byte 3"));

    let mut c = serde_json::json!({"kind": "Pod", "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}],
        "resources": {"limits": {"cpu": true}}}]}});
    let r = check_fields("", "v1", "Pod", &mut c);
    assert!(r.decode_error.unwrap().starts_with("quantities must match the regular expression"));

    // Go's time.Parse refuses a leap second; a time at the last ordinary second passes.
    let mut l = serde_json::json!({"kind": "Pod", "metadata": {"creationTimestamp": "2016-12-31T23:59:60Z"}});
    let r = check_fields("", "v1", "Pod", &mut l);
    assert_eq!(r.decode_error.as_deref(), Some("parsing time \"2016-12-31T23:59:60Z\": second out of range"));
    let mut t = serde_json::json!({"kind": "Pod", "metadata": {"creationTimestamp": "2016-12-31T23:59:59Z"}});
    assert_eq!(check_fields("", "v1", "Pod", &mut t).decode_error, None);
}

#[test]
fn check_fields_keeps_what_kube_keeps() {
    let mut e = serde_json::json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "managedFields": [
            {"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}
        ]},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "lastTimestamp": "2024-01-01T00:00:00Z",
        "count": null,
    });
    let before = e.clone();
    let r = check_fields("", "v1", "Event", &mut e);
    assert!(r.is_clean(), "{r:?}");
    assert_eq!(e["metadata"], before["metadata"]);
    assert!(e.get("count").is_none(), "nulls are dropped like Go's decoder");

    let mut s =
        serde_json::json!({"spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]}});
    assert!(check_fields("", "v1", "Service", &mut s).is_clean());
    let mut s = serde_json::json!({"spec": {"ports": [{"port": 80, "targetPort": true}]}});
    assert_eq!(
        check_fields("", "v1", "Service", &mut s).decode_error.as_deref(),
        Some("json: cannot unmarshal bool into Go value of type int32")
    );

    let mut l = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "1"},
        "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}, "extra": 1}]});
    let r = check_fields("", "v1", "ConfigMapList", &mut l);
    assert_eq!(r.unknown, ["items[0].extra"]);

    let mut unknown_kind = serde_json::json!({"x": 1});
    assert!(check_fields("example.com", "v1", "Widget", &mut unknown_kind).is_clean());
    assert_eq!(unknown_kind["x"], 1);
}

#[test]
fn check_fields_writes_times_and_quantities_as_kube_writes_them() {
    let mut e = serde_json::json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "managedFields": [
            {"manager": "m", "operation": "Update", "time": "2024-01-01T02:00:00+02:00"}
        ]},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "firstTimestamp": "2024-01-01T00:00:00.987654321Z",
        "lastTimestamp": "2023-12-31T19:30:00-05:00",
        "eventTime": "2024-01-01T01:00:00.5+01:00",
    });
    assert!(check_fields("", "v1", "Event", &mut e).is_clean());
    assert_eq!(e["metadata"]["managedFields"][0]["time"], "2024-01-01T00:00:00Z");
    assert_eq!(e["firstTimestamp"], "2024-01-01T00:00:00Z", "whole seconds, truncated as Go formats");
    assert_eq!(e["lastTimestamp"], "2024-01-01T00:30:00Z");
    assert_eq!(e["eventTime"], "2024-01-01T00:00:00.500000Z", "a MicroTime keeps microseconds");

    let mut q =
        serde_json::json!({"spec": {"hard": {"cpu": "0.5", "memory": "1024Mi", "pods": 10, "storage": " 2Gi "}}});
    assert!(check_fields("", "v1", "ResourceQuota", &mut q).is_clean());
    assert_eq!(q["spec"]["hard"], serde_json::json!({"cpu": "500m", "memory": "1Gi", "pods": "10", "storage": "2Gi"}));
}

#[test]
fn duplicates_join_the_strict_errors() {
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"},"data":{},"foo":1}"#;
    let mut obj: serde_json::Value = serde_json::from_slice(body).unwrap();
    let mut r = check_fields("", "v1", "ConfigMap", &mut obj);
    r.add_duplicates(body);
    assert_eq!(
        r.strict_message().unwrap(),
        "strict decoding error: duplicate field \"metadata.name\", unknown field \"foo\""
    );
    // In the body's order, as kube's decoder meets them.
    let body = br#"{"kind":"ConfigMap","apiVersion":"v1","x":1,"metadata":{"name":"a","name":"b"}}"#;
    let mut obj: serde_json::Value = serde_json::from_slice(body).unwrap();
    let mut r = check_fields("", "v1", "ConfigMap", &mut obj);
    r.add_duplicates(body);
    assert_eq!(
        r.strict_message().unwrap(),
        "strict decoding error: unknown field \"x\", duplicate field \"metadata.name\""
    );
}

fn v3_doc(path: &str) -> serde_json::Value {
    serde_json::from_slice(openapi_v3_document(path).unwrap_or_else(|| panic!("no document {path}"))).unwrap()
}

#[test]
fn v3_index_lists_every_group_version_with_a_hash() {
    let index: serde_json::Value = serde_json::from_slice(openapi_v3_index()).unwrap();
    for g in crate::catalogue().groups() {
        for v in &g.versions {
            let key = if g.name.is_empty() { format!("api/{v}") } else { format!("apis/{}/{v}", g.name) };
            let url = index["paths"][&key]["serverRelativeURL"].as_str().unwrap();
            let hash = openapi_v3_hash(&key).unwrap();
            assert_eq!(url, format!("/openapi/v3/{key}?hash={hash}"));
            assert_eq!(hash.len(), 32);
        }
    }
    assert!(openapi_v3_document("apis/nope/v1").is_none());
}

#[test]
fn v3_patch_operations_carry_field_validation_and_smp() {
    for d in crate::builtin::resources().iter().filter(|d| d.verbs().contains(&"patch")) {
        let key =
            if d.group.is_empty() { format!("api/{}", d.version) } else { format!("apis/{}/{}", d.group, d.version) };
        let doc = v3_doc(&key);
        let mut patch_ops = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            let Some(op) = item.get("patch") else { continue };
            let gvk = &op["x-kubernetes-group-version-kind"];
            assert!(gvk.is_object(), "{path}: operation GVK is an object");
            if gvk["kind"] != d.kind || gvk["group"] != d.group {
                continue;
            }
            patch_ops += 1;
            let params = op["parameters"].as_array().unwrap();
            assert!(params.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query"), "{path}");
            let content = op["requestBody"]["content"].as_object().unwrap();
            for t in [
                "application/strategic-merge-patch+json",
                "application/merge-patch+json",
                "application/json-patch+json",
                "application/apply-patch+yaml",
            ] {
                assert!(content.contains_key(t), "{path} consumes {t}");
            }
        }
        assert!(patch_ops >= 1, "{} has a PATCH operation", d.kind);
        // The kind's schema is there, with its GVK as an array.
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let def = kind_definition_name(&d.group, &d.version, &d.kind).unwrap();
        let gvks = schemas[def]["x-kubernetes-group-version-kind"].as_array().unwrap();
        assert!(gvks.iter().any(|g| g["kind"] == d.kind && g["version"] == d.version && g["group"] == d.group));
    }
}

#[test]
fn v3_schemas_wrap_refs_and_keep_patch_extensions() {
    let doc = v3_doc("apis/apps/v1");
    let schemas = &doc["components"]["schemas"];
    let spec = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"];
    assert_eq!(spec["replicas"]["type"], "integer");
    assert_eq!(spec["strategy"]["allOf"][0]["$ref"], "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy");
    assert_eq!(spec["strategy"]["x-kubernetes-patch-strategy"], "retainKeys");
    assert!(spec["strategy"]["description"].is_string());
    let pod_spec = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"];
    assert_eq!(pod_spec["containers"]["items"]["$ref"], "#/components/schemas/io.k8s.api.core.v1.Container");
    assert_eq!(pod_spec["containers"]["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(pod_spec["containers"]["x-kubernetes-patch-strategy"], "merge");
    let container = &schemas["io.k8s.api.core.v1.Container"]["properties"];
    assert_eq!(container["env"]["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(container["ports"]["x-kubernetes-patch-merge-key"], "containerPort");
    assert_eq!(container["ports"]["x-kubernetes-list-map-keys"], serde_json::json!(["containerPort", "protocol"]));
    let ios = &schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(ios["oneOf"][0]["type"], "integer");
    // Only this group version's paths, and every ref resolves inside the document.
    for path in doc["paths"].as_object().unwrap().keys() {
        assert!(path.starts_with("/apis/apps/v1/"), "{path}");
    }
    let text = String::from_utf8(openapi_v3_document("apis/apps/v1").unwrap().to_vec()).unwrap();
    for piece in text.split("\"$ref\":\"").skip(1) {
        let target = &piece[..piece.find('"').unwrap()];
        let name = target.strip_prefix("#/components/schemas/").expect("v3 ref style");
        assert!(schemas.get(name).is_some(), "dangling {name}");
    }
    assert!(!text.contains("#/definitions/"));
}

#[test]
fn v3_paths_cover_verbs_and_subresources() {
    let doc = v3_doc("apis/apps/v1");
    let paths = &doc["paths"];
    let coll = &paths["/apis/apps/v1/namespaces/{namespace}/deployments"];
    assert_eq!(coll["get"]["x-kubernetes-action"], "list");
    assert_eq!(coll["post"]["x-kubernetes-action"], "post");
    assert_eq!(coll["delete"]["x-kubernetes-action"], "deletecollection");
    let names: Vec<&str> =
        coll["get"]["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for p in [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "watch",
        "allowWatchBookmarks",
        "timeoutSeconds",
        "sendInitialEvents",
    ] {
        assert!(names.contains(&p), "list has {p}");
    }
    let post: Vec<&str> =
        coll["post"]["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(post, ["dryRun", "fieldManager", "fieldValidation"]);
    let item = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    for (m, action) in [("get", "get"), ("put", "put"), ("patch", "patch"), ("delete", "delete")] {
        assert_eq!(item[m]["x-kubernetes-action"], action);
        assert_eq!(item[m]["x-kubernetes-group-version-kind"]["kind"], "Deployment");
    }
    assert!(paths["/apis/apps/v1/deployments"]["get"].is_object());
    let scale = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
    assert_eq!(scale["patch"]["x-kubernetes-group-version-kind"]["kind"], "Scale");
    assert_eq!(scale["patch"]["x-kubernetes-group-version-kind"]["group"], "autoscaling");
    assert!(paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]["put"].is_object());
    assert!(paths.get("/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}/scale").is_none());
    let core = v3_doc("api/v1");
    assert!(core["paths"]["/api/v1/namespaces/{name}"]["get"].is_object());
    assert!(core["paths"]["/api/v1/namespaces"]["delete"].is_null(), "namespaces serve no deletecollection");
    assert!(core["paths"]["/api/v1/nodes/{name}/status"]["patch"].is_object());
    // Unstored resources document only their verbs: bindings are created, nothing else.
    let bindings = &core["paths"]["/api/v1/namespaces/{namespace}/bindings"];
    assert_eq!(bindings["post"]["x-kubernetes-action"], "post");
    assert!(bindings["get"].is_null() && bindings["delete"].is_null());
    assert!(core["paths"].get("/api/v1/namespaces/{namespace}/bindings/{name}").is_none());
    assert!(core["paths"].get("/api/v1/bindings").is_none());
    let statuses = &core["paths"]["/api/v1/componentstatuses/{name}"];
    assert!(statuses["get"].is_object() && statuses["put"].is_null());
}

#[test]
fn v2_is_swagger_with_definitions_and_inline_field_validation() {
    let doc: serde_json::Value = serde_json::from_slice(openapi_v2()).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    let defs = doc["definitions"].as_object().unwrap();
    assert!(defs.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(defs.contains_key("io.k8s.api.apps.v1.DeploymentList"));
    assert!(defs.contains_key("io.k8s.api.autoscaling.v1.Scale"));
    let del = defs["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]["x-kubernetes-group-version-kind"]
        .as_array()
        .unwrap();
    assert!(del.len() >= 5);
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert!(patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
    assert!(patch["consumes"].as_array().unwrap().iter().any(|c| c == "application/strategic-merge-patch+json"));
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]["items"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.Container"
    );
    assert_eq!(defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"], "int-or-string");
    assert!(!String::from_utf8_lossy(openapi_v2()).contains("#/components/"));
}

#[test]
fn v2_protobuf_is_a_gnostic_document() {
    let pb = openapi_v2_protobuf();
    assert_eq!(&pb[..5], [0x0A, 3, b'2', b'.', b'0'], "field 1 (swagger) comes first");
    let text = String::from_utf8_lossy(pb);
    assert!(text.contains("io.k8s.api.apps.v1.Deployment"));
    assert!(text.contains(r#"[{"group":"apps","kind":"Deployment","version":"v1"}]"#));
    assert!(OPENAPI_V2_PROTOBUF_ACCEPT.contains(&"application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
    assert!(!OPENAPI_V2_PROTOBUF.contains('@'));
}
