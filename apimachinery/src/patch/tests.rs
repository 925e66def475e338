//! `apply_patch` for each patch type: results, and errors worded as kube-apiserver's.

use serde_json::{Value, json};

use super::*;

fn configmap() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
        "data": {"a": "1", "b": "2"},
    })
}

/// A kind no schema describes: patches of every type work without one.
const NO_SCHEMA: (&str, &str, &str) = ("example.com", "v1", "Widget");

fn apply(patch_type: PatchType, original: &Value, body: &str) -> Result<Value, ApiError> {
    apply_patch(patch_type, original, body.as_bytes(), NO_SCHEMA)
}

#[test]
fn content_types_select_the_patch_type() {
    assert_eq!(PatchType::from_content_type("application/json-patch+json"), Some(PatchType::Json));
    assert_eq!(PatchType::from_content_type("application/merge-patch+json"), Some(PatchType::Merge));
    assert_eq!(
        PatchType::from_content_type("application/strategic-merge-patch+json; charset=utf-8"),
        Some(PatchType::StrategicMerge)
    );
    assert_eq!(PatchType::from_content_type("application/apply-patch+yaml"), Some(PatchType::Apply));
    assert_eq!(PatchType::from_content_type("application/json"), None);
    assert_eq!(PatchType::from_content_type(""), None);
    for t in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply] {
        assert_eq!(PatchType::from_content_type(t.content_type()), Some(t));
    }
}

#[test]
fn an_unknown_patch_type_is_refused_with_415_listing_what_we_accept() {
    let e = unsupported_patch_type();
    assert_eq!((e.code, e.reason), (415, Reason::UnsupportedMediaType));
    assert_eq!(
        e.message,
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, \
         application/apply-patch+yaml"
    );
}

#[test]
fn json_patch_applies_operations_in_order() {
    let body = r#"[
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "fe"},
        {"op": "copy", "from": "/data/a", "path": "/data/c"},
        {"op": "move", "from": "/data/c", "path": "/data/d"}
    ]"#;
    let patched = apply(PatchType::Json, &configmap(), body).unwrap();
    let mut expected = configmap();
    expected["data"] = json!({"a": "10", "d": "10"});
    expected["metadata"]["labels"]["tier"] = json!("fe");
    assert_eq!(patched, expected);

    assert_eq!(apply(PatchType::Json, &configmap(), "[]").unwrap(), configmap());
    assert_eq!(apply(PatchType::Json, &configmap(), "null").unwrap(), configmap());
}

#[test]
fn a_failing_json_patch_operation_is_422_with_kubes_generic_message() {
    for body in [
        r#"[{"op": "test", "path": "/data/a", "value": "2"}]"#,
        r#"[{"op": "remove", "path": "/data/missing"}]"#,
        r#"[{"op": "replace", "path": "/spec/x", "value": 1}]"#,
        r#"[{"op": "add", "path": "/no/such/parent", "value": 1}]"#,
        r#"[{"op": "frobnicate", "path": "/data"}]"#,
        r#"[{"path": "/data"}]"#,
        r#"[null]"#,
    ] {
        let e = apply(PatchType::Json, &configmap(), body).expect_err(body);
        assert_eq!((e.code, e.reason), (422, Reason::Invalid), "{body}");
        assert_eq!(e.message, "the server rejected our request due to an error in our request", "{body}");
    }
}

#[test]
fn a_malformed_json_patch_is_400_with_gos_decoder_message() {
    let message = |body: &str| {
        let e = apply(PatchType::Json, &configmap(), body).expect_err(body);
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest), "{body}");
        e.message
    };
    assert_eq!(message("[{\"op\": \"add\""), "unexpected end of JSON input");
    assert_eq!(message("{oops}"), "invalid character 'o' looking for beginning of object key string");
    assert_eq!(message(r#"{"op": "add"}"#), "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
    assert_eq!(message(r#"["add"]"#), "json: cannot unmarshal string into Go value of type jsonpatch.Operation");
}

#[test]
fn too_many_json_patch_operations_is_413() {
    let ops: Vec<Value> =
        (0..=MAX_JSON_PATCH_OPERATIONS).map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"})).collect();
    let e = apply(PatchType::Json, &configmap(), &Value::Array(ops).to_string()).unwrap_err();
    assert_eq!((e.code, e.reason), (413, Reason::RequestEntityTooLarge));
    assert_eq!(
        e.message,
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn a_patch_that_leaves_no_object_is_invalid() {
    let e = apply(PatchType::Json, &configmap(), r#"[{"op": "replace", "path": "", "value": [1]}]"#).unwrap_err();
    assert_eq!((e.code, e.reason), (422, Reason::Invalid));
    assert_eq!(
        e.message,
        " \"\" is invalid: patch: Invalid value: \"[1]\": json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert_eq!(e.causes[0].field, "patch");

    let e = apply(PatchType::Merge, &configmap(), "[{\"a\": null}]").unwrap_err();
    assert_eq!((e.code, e.reason), (422, Reason::Invalid));
    assert!(e.message.contains("Invalid value: \"[{}]\""), "{}", e.message);
}

#[test]
fn merge_patch_merges_maps_deletes_nulls_and_replaces_lists() {
    let original =
        json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"list": [1, 2], "obj": {"x": 1}}});
    let body =
        r#"{"metadata": {"labels": {"tier": null, "env": "prod"}}, "spec": {"list": [3], "new": {"a": null, "b": 1}}}"#;
    assert_eq!(
        apply(PatchType::Merge, &original, body).unwrap(),
        json!({"metadata": {"labels": {"app": "web", "env": "prod"}}, "spec": {"list": [3], "obj": {"x": 1}, "new": {"b": 1}}})
    );
}

#[test]
fn merge_patch_prunes_nulls_as_kubes_library_does() {
    let original = json!({"spec": {"list": [1], "obj": {"x": 1}, "none": null}});
    // Over a non-object, nulls are pruned inside objects at any depth, also within lists.
    let patched = apply(PatchType::Merge, &original, r#"{"spec": {"list": [{"a": null, "b": 1}, null]}}"#).unwrap();
    assert_eq!(patched["spec"]["list"], json!([{"b": 1}, null]));
    // Over an object, a non-object value replaces it as sent.
    let patched = apply(PatchType::Merge, &original, r#"{"spec": {"obj": [{"a": null}]}}"#).unwrap();
    assert_eq!(patched["spec"]["obj"], json!([{"a": null}]));
    // A null in the original counts as absent.
    let patched = apply(PatchType::Merge, &original, r#"{"spec": {"none": {"a": null, "b": 2}}}"#).unwrap();
    assert_eq!(patched["spec"]["none"], json!({"b": 2}));
}

#[test]
fn a_malformed_merge_patch_is_400_invalid_json_patch() {
    for body in ["", "{", "null", "\"labels\"", "42", "true"] {
        let e = apply(PatchType::Merge, &configmap(), body).expect_err(body);
        assert_eq!((e.code, e.reason, e.message.as_str()), (400, Reason::BadRequest, "Invalid JSON Patch"), "{body}");
    }
}

#[test]
fn strategic_merge_of_a_kind_without_schema_merges_like_a_merge_patch() {
    let original = json!({"spec": {"items": [{"name": "a"}], "m": {"k": "v"}}});
    let body = r#"{"spec": {"items": [{"name": "b"}], "m": {"k": null, "j": "w"}}}"#;
    assert_eq!(
        apply(PatchType::StrategicMerge, &original, body).unwrap(),
        json!({"spec": {"items": [{"name": "b"}], "m": {"j": "w"}}})
    );
}

#[test]
fn a_patch_whose_result_nests_deeper_than_a_body_may_is_invalid() {
    let nested = |levels: usize| (0..levels).fold(json!(1), |v, _| json!({ "a": v }));
    // 100 levels under `data` (101 with the object), 60 added in place of its last two: each
    // part decodes, the result (160 levels) would not.
    let mut deep = configmap();
    deep["data"] = nested(100);
    let path = format!("/data{}", "/a".repeat(99));
    let patch = json!([{"op": "add", "path": path, "value": nested(60)}]).to_string();
    let e = apply(PatchType::Json, &deep, &patch).unwrap_err();
    assert_eq!((e.code, e.reason), (422, Reason::Invalid));
    assert_eq!(e.causes[0].field, "patch");
    assert_eq!(e.causes[0].message, "Forbidden: the patched object must not nest deeper than 127 levels");
    // Up to the bound is fine.
    let patch = json!([{"op": "add", "path": path, "value": nested(27)}]).to_string();
    let patched = apply(PatchType::Json, &deep, &patch).unwrap();
    assert_eq!(crate::object::nesting(&patched), 127);
}
