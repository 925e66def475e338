//! Strategic merge patch behaviour, case by case, with exact results.
//!
//! The cases follow what kube-apiserver does for the patches clients send (`kubectl apply`'s
//! three-way patches with `$setElementOrder`, `kubectl set image`, `kubectl patch`), and the
//! behaviours of apimachinery's `strategicpatch` table tests: merge by key, ordering,
//! directives, deletes, `$retainKeys`, primitive list merge, nested lists.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::*;

/// Definitions of a small Deployment-shaped schema, with the patch metadata kube declares on
/// the real types. `$ref` values name another definition.
static DEFS: LazyLock<Value> = LazyLock::new(|| {
    let by_name = |item: &str, strategy: &str| {
        json!({"type": "array", "items": {"$ref": item},
               "x-kubernetes-patch-strategy": strategy, "x-kubernetes-patch-merge-key": "name"})
    };
    json!({
        "Deployment": {"properties": {
            "metadata": {"$ref": "ObjectMeta"},
            "spec": {"$ref": "DeploymentSpec"},
        }},
        "ObjectMeta": {"properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
            "ownerReferences": {"type": "array", "items": {"$ref": "OwnerReference"},
                                "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "uid"},
        }},
        "OwnerReference": {"properties": {"uid": {"type": "string"}, "name": {"type": "string"}}},
        "DeploymentSpec": {"properties": {
            "replicas": {"type": "integer"},
            "strategy": {"$ref": "DeploymentStrategy", "x-kubernetes-patch-strategy": "retainKeys"},
            "template": {"$ref": "PodTemplateSpec"},
        }},
        "DeploymentStrategy": {"properties": {"type": {"type": "string"}, "rollingUpdate": {"type": "object"}}},
        "PodTemplateSpec": {"properties": {"metadata": {"$ref": "ObjectMeta"}, "spec": {"$ref": "PodSpec"}}},
        "PodSpec": {"properties": {
            "containers": by_name("Container", "merge"),
            "volumes": by_name("Volume", "merge,retainKeys"),
            "tolerations": {"type": "array", "items": {"type": "object"}},
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
            "securityContext": {"type": "object"},
        }},
        "Container": {"properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "env": by_name("EnvVar", "merge"),
            "ports": {"type": "array", "items": {"$ref": "ContainerPort"},
                      "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort"},
        }},
        "EnvVar": {"properties": {"name": {"type": "string"}, "value": {"type": "string"}}},
        "ContainerPort": {"properties": {"containerPort": {"type": "integer"}, "name": {"type": "string"}}},
        "Volume": {"properties": {
            "name": {"type": "string"},
            "configMap": {"type": "object"},
            "emptyDir": {"type": "object"},
        }},
    })
});

/// A schema node of [`DEFS`]: the schema as written where it was reached.
#[derive(Clone, Copy)]
struct TestSchema(&'static Value);

impl TestSchema {
    fn root(kind: &str) -> Option<TestSchema> {
        Some(TestSchema(&DEFS[kind]))
    }

    fn resolved(&self) -> &'static Value {
        match self.0.get("$ref").and_then(Value::as_str) {
            Some(name) => &DEFS[name],
            None => self.0,
        }
    }
}

impl PatchSchema for TestSchema {
    fn field(&self, key: &str) -> Option<Self> {
        let schema = self.resolved();
        schema.get("properties").and_then(|p| p.get(key)).or_else(|| schema.get("additionalProperties")).map(TestSchema)
    }

    fn items(&self) -> Option<Self> {
        self.resolved().get("items").map(TestSchema)
    }

    fn patch_strategy(&self) -> Option<&str> {
        self.0.get("x-kubernetes-patch-strategy").and_then(Value::as_str)
    }

    fn patch_merge_key(&self) -> Option<&str> {
        self.0.get("x-kubernetes-patch-merge-key").and_then(Value::as_str)
    }
}

fn smp(original: &Value, patch: &Value) -> Result<Value, ApiError> {
    strategic_merge_patch(original, patch.to_string().as_bytes(), TestSchema::root("Deployment"))
}

fn ok(original: &Value, patch: &Value) -> Value {
    smp(original, patch).unwrap_or_else(|e| panic!("patch {patch} failed: {e}"))
}

fn err(original: &Value, patch: &Value) -> ApiError {
    smp(original, patch).expect_err("patch should fail")
}

/// A Deployment as stored: server-defaulted fields included.
fn deployment(containers: Value) -> Value {
    json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers, "nodeSelector": {"zone": "a"}},
            },
        },
    })
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
           "terminationMessagePath": "/dev/termination-log"})
}

fn pod_spec_patch(spec: Value) -> Value {
    json!({"spec": {"template": {"spec": spec}}})
}

fn containers_of(object: &Value) -> &Value {
    &object["spec"]["template"]["spec"]["containers"]
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect()
}

#[test]
fn set_image_merges_containers_by_name_and_keeps_the_rest() {
    let original = deployment(json!([container("c1", "img:1"), container("c2", "side:1")]));
    let patched = ok(&original, &pod_spec_patch(json!({"containers": [{"name": "c1", "image": "img:2"}]})));

    let mut expected = original.clone();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("img:2");
    assert_eq!(patched, expected);
}

#[test]
fn kubectl_apply_changing_one_image_touches_only_that_image() {
    let original = deployment(json!([container("c1", "img:1"), container("c2", "side:1")]));
    // What kubectl apply sends when only c1's image changed in the manifest.
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}],
            "containers": [{"image": "img:2", "name": "c1"}],
        }}},
    });
    let patched = ok(&original, &patch);

    let mut expected = original.clone();
    expected["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration": "{...}"});
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("img:2");
    assert_eq!(patched, expected);
}

#[test]
fn a_new_list_item_goes_first_without_an_order_directive() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patched = ok(&original, &pod_spec_patch(json!({"containers": [{"name": "c3", "image": "c"}]})));
    assert_eq!(names(containers_of(&patched)), ["c3", "c1", "c2"]);
    assert_eq!(containers_of(&patched)[0], json!({"name": "c3", "image": "c"}));
}

#[test]
fn set_element_order_places_a_new_item() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/containers": [{"name": "c1"}, {"name": "c3"}, {"name": "c2"}],
        "containers": [{"name": "c3", "image": "c"}],
    }));
    assert_eq!(names(containers_of(&ok(&original, &patch))), ["c1", "c3", "c2"]);
}

#[test]
fn set_element_order_alone_reorders_and_interleaves_server_only_items() {
    let original =
        deployment(json!([container("x", "x"), container("c1", "a"), container("y", "y"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({"$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}]}));
    assert_eq!(names(containers_of(&ok(&original, &patch))), ["x", "y", "c2", "c1"]);
}

#[test]
fn kubectl_apply_adding_and_removing_items_orders_as_kube_does() {
    // kube's ordering here follows the original list as Go's in-place merge leaves it: the
    // deleted item's slot is taken by the added one, so the server-only `d` stays before it.
    let original = deployment(json!([container("a", "a"), container("b", "b"), container("d", "d")]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}],
        "containers": [{"name": "c", "image": "c"}, {"$patch": "delete", "name": "a"}],
    }));
    let patched = ok(&original, &patch);
    assert_eq!(
        containers_of(&patched),
        &json!([container("b", "b"), container("d", "d"), {"name": "c", "image": "c"}])
    );
}

#[test]
fn an_empty_order_directive_sorts_as_go_sort_slice_stable_does() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/containers": [],
        "containers": [{"name": "c3", "image": "c"}],
    }));
    assert_eq!(names(containers_of(&ok(&original, &patch))), ["c1", "c2", "c3"]);
}

#[test]
fn set_element_order_must_agree_with_the_patch_order() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}],
        "containers": [{"name": "c2", "image": "b2"}, {"name": "c1", "image": "a2"}],
    }));
    let e = err(&original, &patch);
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "The order in patch list:\n[map[image:b2 name:c2] map[image:a2 name:c1]]\n doesn't match \
         $setElementOrder list:\n[map[name:c1] map[name:c2]]\n"
    );
}

#[test]
fn set_element_order_with_a_list_the_object_lacks_adds_it() {
    let original = deployment(json!([]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/volumes": [{"name": "w"}, {"name": "v"}],
        "volumes": [{"name": "w", "emptyDir": {}}, {"name": "v", "emptyDir": {"x": null}}],
    }));
    // Unlike a plain addition, nulls inside the list are kept, as kube keeps them.
    assert_eq!(
        ok(&original, &patch)["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "w", "emptyDir": {}}, {"name": "v", "emptyDir": {"x": null}}])
    );
}

#[test]
fn set_element_order_places_a_new_primitive() {
    let original = json!({"metadata": {"finalizers": ["a", "b"]}});
    let patch = json!({"metadata": {"$setElementOrder/finalizers": ["a", "z", "b"], "finalizers": ["z"]}});
    assert_eq!(ok(&original, &patch), json!({"metadata": {"finalizers": ["a", "z", "b"]}}));
}

#[test]
fn kubectl_apply_removing_a_container_deletes_it() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({
        "$setElementOrder/containers": [{"name": "c1"}],
        "containers": [{"$patch": "delete", "name": "c2"}],
    }));
    assert_eq!(containers_of(&ok(&original, &patch)), &json!([container("c1", "a")]));
}

#[test]
fn delete_directive_removes_every_item_with_the_key() {
    let original = deployment(json!([{"name": "c1", "env": [
        {"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}
    ]}]));
    let patch = pod_spec_patch(json!({"containers": [{"name": "c1", "env": [{"name": "A", "$patch": "delete"}]}]}));
    assert_eq!(containers_of(&ok(&original, &patch)), &json!([{"name": "c1", "env": [{"name": "B", "value": "2"}]}]));
}

#[test]
fn replace_directive_in_a_list_replaces_it() {
    let original = deployment(json!([container("c1", "a"), container("c2", "b")]));
    let patch = pod_spec_patch(json!({"containers": [{"name": "c9", "image": "z"}, {"$patch": "replace"}]}));
    assert_eq!(containers_of(&ok(&original, &patch)), &json!([{"name": "c9", "image": "z"}]));

    let patch = pod_spec_patch(json!({"containers": [{"$patch": "replace"}]}));
    assert_eq!(containers_of(&ok(&original, &patch)), &json!([]));
}

#[test]
fn replace_and_delete_directives_on_maps() {
    let original = deployment(json!([]));
    let spec = |patched: &Value| patched["spec"]["template"]["spec"].clone();

    let patched = ok(&original, &pod_spec_patch(json!({"nodeSelector": {"$patch": "replace", "disk": "ssd"}})));
    assert_eq!(spec(&patched)["nodeSelector"], json!({"disk": "ssd"}));

    // An existing map is emptied, not removed.
    let patched = ok(&original, &pod_spec_patch(json!({"nodeSelector": {"$patch": "delete"}})));
    assert_eq!(spec(&patched)["nodeSelector"], json!({}));

    // On a field the object lacks, a map carrying a directive is dropped (kube does the same,
    // even for `replace`).
    let patched = ok(&original, &pod_spec_patch(json!({"securityContext": {"$patch": "replace", "runAsUser": 1}})));
    assert_eq!(spec(&patched).get("securityContext"), None);

    // At the top level, `$patch: replace` replaces the whole object.
    assert_eq!(
        ok(&original, &json!({"$patch": "replace", "metadata": {"name": "x"}})),
        json!({"metadata": {"name": "x"}})
    );
}

#[test]
fn merge_directive_is_refused_as_kube_refuses_it() {
    let original = deployment(json!([container("c1", "a")]));
    let e = err(&original, &pod_spec_patch(json!({"containers": [{"$patch": "merge", "name": "c1"}]})));
    assert_eq!((e.code, e.message.as_str()), (500, "merging lists cannot yet be specified in the patch"));

    let e = err(&original, &pod_spec_patch(json!({"nodeSelector": {"$patch": "merge", "disk": "ssd"}})));
    assert_eq!(e.message, "unknown patch type: merge in map: map[$patch:merge disk:ssd]");

    let e = err(&original, &pod_spec_patch(json!({"nodeSelector": {"$patch": 1}})));
    assert_eq!(e.message, "unknown patch type: %!s(int64=1) in map: map[$patch:1]");
}

#[test]
fn null_deletes_a_field_and_nulls_in_new_fields_are_dropped() {
    let original = deployment(json!([]));
    let patch = json!({
        "metadata": {"labels": {"app": null, "tier": "fe"}},
        "spec": {"replicas": null, "template": {"spec": {"securityContext": {"runAsUser": 1, "fsGroup": null}}}},
    });
    let patched = ok(&original, &patch);
    assert_eq!(patched["metadata"]["labels"], json!({"tier": "fe"}));
    assert_eq!(patched["spec"].get("replicas"), None);
    assert_eq!(patched["spec"]["template"]["spec"]["securityContext"], json!({"runAsUser": 1}));
}

#[test]
fn primitive_merge_lists_are_a_set_union() {
    let with_finalizers = |f: Value| json!({"metadata": {"name": "web", "finalizers": f}});
    let finalizers = |patched: Value| patched["metadata"]["finalizers"].clone();

    let patched = ok(&with_finalizers(json!(["a", "b"])), &json!({"metadata": {"finalizers": ["b", "c"]}}));
    assert_eq!(finalizers(patched), json!(["a", "b", "c"]));

    // A value the server does not have yet goes first, as in kube.
    let patched = ok(&with_finalizers(json!(["a"])), &json!({"metadata": {"finalizers": ["z"]}}));
    assert_eq!(finalizers(patched), json!(["z", "a"]));

    // An empty list changes nothing; null removes the field.
    let patched = ok(&with_finalizers(json!(["a"])), &json!({"metadata": {"finalizers": []}}));
    assert_eq!(finalizers(patched), json!(["a"]));
    let patched = ok(&with_finalizers(json!(["a"])), &json!({"metadata": {"finalizers": null}}));
    assert_eq!(patched["metadata"].get("finalizers"), None);

    let patched = ok(
        &with_finalizers(json!(["a", "b", "c"])),
        &json!({"metadata": {"$setElementOrder/finalizers": ["c", "a", "b"]}}),
    );
    assert_eq!(finalizers(patched), json!(["c", "a", "b"]));
}

#[test]
fn delete_from_primitive_list_removes_values() {
    let original = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
    let patched = ok(&original, &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "x"]}}));
    assert_eq!(patched, json!({"metadata": {"finalizers": ["a", "c"]}}));

    // Applied before additions in the same patch; never creates the list.
    let patched =
        ok(&original, &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["d"]}}));
    assert_eq!(patched, json!({"metadata": {"finalizers": ["d", "b", "c"]}}));
    let patched = ok(&json!({"metadata": {}}), &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
    assert_eq!(patched, json!({"metadata": {}}));

    let e = err(&original, &json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}));
    assert_eq!(
        (e.code, e.reason, e.message.as_str()),
        (400, Reason::BadRequest, "invalid patch format of primitive list")
    );
}

#[test]
fn retain_keys_clears_the_fields_not_listed() {
    let original = deployment(json!([]));
    let patched = ok(&original, &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}));
    assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));

    // kubectl apply switching a volume from emptyDir to a configMap.
    let mut original = deployment(json!([]));
    original["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]);
    let patch = pod_spec_patch(json!({
        "$setElementOrder/volumes": [{"name": "v"}, {"name": "w"}],
        "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}, "name": "v"}],
    }));
    assert_eq!(
        ok(&original, &patch)["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}])
    );
}

#[test]
fn retain_keys_must_list_every_key_the_patch_sets() {
    let original = deployment(json!([]));
    for patch in [
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}),
        json!({"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}}),
    ] {
        let e = err(&original, &patch);
        assert_eq!((e.code, e.message.as_str()), (400, "invalid patch format of retainKeys"));
    }
    // A null (a deletion) need not be listed.
    let patched = ok(&original, &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": null}}}));
    assert_eq!(patched["spec"]["strategy"], json!({"type": "RollingUpdate"}));
}

#[test]
fn a_list_item_without_its_merge_key_fails_as_in_kube() {
    let original = deployment(json!([container("c1", "a")]));
    let e = err(&original, &pod_spec_patch(json!({"containers": [{"image": "x"}]})));
    assert_eq!(e.code, 500);
    assert_eq!(e.message, "map: map[image:x] does not contain declared merge key: name");

    let e = err(&original, &pod_spec_patch(json!({"containers": [{"$patch": "delete"}]})));
    assert_eq!(e.message, "map: map[$patch:delete] does not contain declared merge key: name");
}

#[test]
fn lists_without_a_merge_strategy_are_replaced_whole() {
    let mut original = deployment(json!([{"name": "c1", "args": ["a", "b"]}]));
    original["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "k1"}, {"key": "k2"}]);
    let patch = pod_spec_patch(json!({"tolerations": [{"key": "k3"}], "containers": [{"name": "c1", "args": ["c"]}]}));
    let patched = ok(&original, &patch);
    assert_eq!(patched["spec"]["template"]["spec"]["tolerations"], json!([{"key": "k3"}]));
    assert_eq!(containers_of(&patched), &json!([{"name": "c1", "args": ["c"]}]));
}

#[test]
fn nested_merge_lists_merge_at_every_level() {
    let original = deployment(json!([{
        "name": "c1",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
    }]));
    let patch = pod_spec_patch(json!({"containers": [{
        "name": "c1",
        "env": [{"name": "B", "value": "3"}],
        "ports": [{"containerPort": 80, "name": "http"}],
    }]}));
    assert_eq!(
        containers_of(&ok(&original, &patch)),
        &json!([{
            "name": "c1",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}],
            "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
        }])
    );
}

#[test]
fn a_value_of_another_type_replaces_the_original() {
    let original = json!({"metadata": {"labels": {"a": "b"}, "finalizers": ["x"]}});
    let patched = ok(&original, &json!({"metadata": {"labels": "oops", "finalizers": {"k": null, "v": 1}}}));
    assert_eq!(patched, json!({"metadata": {"labels": "oops", "finalizers": {"v": 1}}}));
}

#[test]
fn without_a_schema_maps_merge_and_lists_are_replaced() {
    let original = json!({"spec": {"list": [1, 2], "m": {"a": 1, "b": 2}, "items": [{"name": "x"}]}});
    let patch = json!({"spec": {"list": [3], "m": {"b": null, "c": 3}, "items": [{"name": "y"}]}});
    let patched = strategic_merge_patch(&original, patch.to_string().as_bytes(), None::<TestSchema>).unwrap();
    assert_eq!(patched, json!({"spec": {"list": [3], "m": {"a": 1, "c": 3}, "items": [{"name": "y"}]}}));

    let patch = json!({"spec": {"m": {"$patch": "replace", "z": 0}}});
    let patched = strategic_merge_patch(&original, patch.to_string().as_bytes(), None::<TestSchema>).unwrap();
    assert_eq!(patched["spec"]["m"], json!({"z": 0}));
}

#[test]
fn list_merge_errors_keep_kubes_codes() {
    // A list of lists: 422 with kube's generic message.
    let e = err(&json!({"metadata": {"finalizers": []}}), &json!({"metadata": {"finalizers": [["a"]]}}));
    assert_eq!((e.code, e.reason, e.message.as_str()), (422, Reason::Invalid, UNPROCESSABLE_MESSAGE));

    let e = err(&json!({"metadata": {"finalizers": ["x"]}}), &json!({"metadata": {"finalizers": [1]}}));
    assert_eq!((e.code, e.message.as_str()), (500, "list element types are not identical: [[x] [1]]"));

    let e = err(&deployment(json!([])), &pod_spec_patch(json!({"$setElementOrder/containers": "c1"})));
    assert_eq!(e.message, "expected a []interface {}, but received a string");

    let e = err(&deployment(json!([])), &pod_spec_patch(json!({"$setElementOrderX/containers": []})));
    assert_eq!((e.code, e.message.as_str()), (400, "invalid patch format of setElementOrder list"));
}

#[test]
fn malformed_bodies_are_bad_requests_worded_as_go() {
    let original = deployment(json!([]));
    let body = |b: &str| strategic_merge_patch(&original, b.as_bytes(), TestSchema::root("Deployment"));
    let message = |b: &str| {
        let e = body(b).expect_err(b);
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest), "{b}");
        e.message
    };
    assert_eq!(message("nope"), "invalid character 'o' in literal null (expecting 'u')");
    assert_eq!(message(""), "unexpected end of JSON input");
    assert_eq!(message("{\"spec\": }"), "invalid character '}' looking for beginning of value");
    assert_eq!(message("[]"), "json: cannot unmarshal array into Go value of type map[string]interface {}");
    assert_eq!(message("\"x\""), "json: cannot unmarshal string into Go value of type map[string]interface {}");
    // `null` decodes to no patch at all.
    assert_eq!(body("null").unwrap(), original);
}

#[test]
fn owner_references_merge_by_uid() {
    let original = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}});
    let patched = ok(&original, &json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "b"}, {"uid": "2"}]}}));
    assert_eq!(patched["metadata"]["ownerReferences"], json!([{"uid": "1", "name": "b"}, {"uid": "2"}]));
}

#[test]
fn go_stable_sort_matches_a_consistent_sort_and_go_on_an_inconsistent_one() {
    let mut v: Vec<u32> = (0..100).map(|i| (i * 37) % 23).collect();
    let mut expected = v.clone();
    expected.sort();
    go_slice_stable(&mut v, |a, b| a < b);
    assert_eq!(v, expected);

    // "Less" whenever either side is unknown (None), as kube's comparator: Go's insertion
    // sort moves each unknown item one step left of every item it is compared with.
    let mut v = vec![None, Some(0), Some(1)];
    go_slice_stable(&mut v, |a: &Option<u32>, b| match (a, b) {
        (Some(x), Some(y)) => x < y,
        _ => true,
    });
    assert_eq!(v, [Some(0), Some(1), None]);
}
