//! CustomResourceDefinitions through their definition: defaults, the strategy, then
//! validation, with kube's field paths and messages.

use serde_json::{Value, json};

use crate::test_kinds::def;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::Cause;

fn d() -> &'static ResourceDef {
    def("apiextensions.k8s.io", "customresourcedefinitions")
}

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn object_schema() -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}})
}

/// A valid CRD whose one version has `schema` as its `openAPIV3Schema`.
fn crd_with(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
        },
    })
}

fn crd() -> Value {
    crd_with(object_schema())
}

/// What the registry does before validating a create.
fn create(mut obj: Value) -> Vec<Cause> {
    d().apply_defaults(&mut obj);
    d().prepare_for_create(&mut obj);
    d().validate(&obj)
}

/// A stored CRD, as a create left it.
fn stored(mut obj: Value) -> Value {
    d().apply_defaults(&mut obj);
    obj["metadata"]["uid"] = json!("uid-1");
    obj["metadata"]["resourceVersion"] = json!("5");
    obj["metadata"]["creationTimestamp"] = json!("2024-05-01T00:00:00Z");
    d().prepare_for_create(&mut obj);
    obj
}

fn update(mut new: Value, old: &Value) -> (Value, Vec<Cause>) {
    d().apply_defaults(&mut new);
    d().prepare_for_update(&mut new, old);
    let causes = d().validate_update(&new, old);
    (new, causes)
}

fn pairs(causes: &[Cause]) -> Vec<(&str, &str)> {
    causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect()
}

/// The causes of creating `crd()` changed by `f`.
fn causes(f: impl Fn(&mut Value)) -> Vec<(String, String)> {
    let mut obj = crd();
    f(&mut obj);
    create(obj).into_iter().map(|c| (c.field, c.message)).collect()
}

fn schema_causes(schema: Value) -> Vec<(String, String)> {
    create(crd_with(schema)).into_iter().map(|c| (c.field, c.message)).collect()
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), message.to_string())]
}

fn has(causes: &[(String, String)], field: &str, message: &str) -> bool {
    causes.iter().any(|(f, m)| f == field && m == message)
}

const S: &str = "spec.validation.openAPIV3Schema";

// ---------------------------------------------------------------------------------------------
// Defaults and the strategy.

#[test]
fn defaults_fill_names_conversion_and_webhook_port() {
    let mut obj = crd();
    obj["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "conv", "namespace": "ns"}}, "conversionReviewVersions": ["v1"]}});
    d().apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["names"]["singular"], "widget");
    assert_eq!(obj["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(obj["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);
    assert_eq!(obj["status"]["storedVersions"], json!(["v1"]));
    assert!(obj["spec"]["versions"][0].get("deprecated").is_none(), "v1 does not default served/storage/deprecated");

    let mut plain = crd();
    d().apply_defaults(&mut plain);
    assert_eq!(plain["spec"]["conversion"], json!({"strategy": "None"}));
    assert!(plain["spec"].get("preserveUnknownFields").is_none());
}

#[test]
fn create_resets_status_and_records_the_storage_version() {
    let mut obj = crd();
    obj["status"] = json!({"storedVersions": ["v0"], "conditions": [{"type": "Established", "status": "True"}]});
    obj["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.size"}]);
    d().apply_defaults(&mut obj);
    d().prepare_for_create(&mut obj);
    assert_eq!(
        obj["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(
        obj["spec"]["versions"][0]["selectableFields"],
        json!([{"jsonPath": ".spec.size"}]),
        "served as with CustomResourceFieldSelectors on"
    );
    assert_eq!(d().validate(&obj), vec![]);
}

#[test]
fn update_keeps_status_bumps_generation_and_adds_the_new_storage_version() {
    let mut old = stored(crd());
    old["status"]["acceptedNames"] = json!({"plural": "widgets", "kind": "Widget"});
    let mut new = old.clone();
    new["status"] = json!({"storedVersions": []});
    new["spec"]["versions"][0]["storage"] = json!(false);
    new["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": object_schema()}}));
    let (new, causes) = update(new, &old);
    assert_eq!(pairs(&causes), vec![]);
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]), "status is kept, the storage version added");
    assert_eq!(new["status"]["acceptedNames"]["kind"], "Widget");

    let (same, _) = update(old.clone(), &old);
    assert_eq!(same["metadata"]["generation"], 1, "no spec change, no new generation");
}

#[test]
fn status_updates_change_only_the_status_and_check_accepted_names() {
    let old = stored(crd());
    let mut new = old.clone();
    new["spec"]["group"] = json!("other.com");
    new["status"]["acceptedNames"] = json!({"plural": "Widgets", "kind": "Widget", "listKind": "Widget"});
    new["status"]["storedVersions"] = json!([]);
    d().prepare_for_status_update(&mut new, &old);
    assert_eq!(new["spec"]["group"], "example.com");
    assert_eq!(
        pairs(&d().validate_status_update(&new, &old)),
        vec![
            ("status.acceptedNames.plural", format!("Invalid value: \"Widgets\": {DNS1035}").as_str()),
            ("status.acceptedNames.listKind", "Invalid value: \"Widget\": kind and listKind may not be the same"),
        ],
        "stored versions are not checked through /status"
    );
}

// ---------------------------------------------------------------------------------------------
// Metadata and names.

#[test]
fn a_valid_crd_passes() {
    assert_eq!(create(crd()), vec![]);
}

#[test]
fn the_name_is_plural_dot_group() {
    assert_eq!(
        causes(|o| o["metadata"]["name"] = json!("gadgets.example.com")),
        one("metadata.name", r#"Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#)
    );
}

#[test]
fn the_group_has_a_dot() {
    let got = causes(|o| {
        o["spec"]["group"] = json!("example");
        o["metadata"]["name"] = json!("widgets.example");
    });
    assert_eq!(got, one("spec.group", r#"Invalid value: "example": should be a domain with at least one dot"#));
    let got = causes(|o| {
        o["spec"]["group"] = json!("");
        o["metadata"]["name"] = json!("widgets.");
    });
    assert!(has(&got, "spec.group", "Required value"), "{got:?}");
}

#[test]
fn scope_is_required_and_one_of_two() {
    assert_eq!(causes(|o| o["spec"]["scope"] = json!(null)), one("spec.scope", "Required value"));
    assert_eq!(
        causes(|o| o["spec"]["scope"] = json!("Global")),
        one("spec.scope", r#"Unsupported value: "Global": supported values: "Cluster", "Namespaced""#)
    );
}

#[test]
fn names_are_required_and_dns_labels() {
    let got = causes(|o| o["spec"]["names"] = json!({"plural": "widgets"}));
    assert_eq!(
        got,
        vec![
            ("spec.names.singular".to_string(), "Required value".to_string()),
            ("spec.names.kind".to_string(), "Required value".to_string()),
            ("spec.names.listKind".to_string(), "Required value".to_string()),
        ]
    );
    let got = causes(
        |o| o["spec"]["names"] = json!({"plural": "widgets", "kind": "Wid_get", "listKind": "Wid_get", "shortNames": ["w", "W1"], "categories": ["all", "Bad"]}),
    );
    assert_eq!(
        got,
        vec![
            ("spec.names.singular".to_string(), format!("Invalid value: \"wid_get\": {DNS1035}")),
            (
                "spec.names.kind".to_string(),
                format!("Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}")
            ),
            (
                "spec.names.listKind".to_string(),
                format!("Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}")
            ),
            ("spec.names.shortNames[1]".to_string(), format!("Invalid value: \"W1\": {DNS1035}")),
            (
                "spec.names.listKind".to_string(),
                "Invalid value: \"Wid_get\": kind and listKind may not be the same".to_string()
            ),
            ("spec.names.categories[1]".to_string(), format!("Invalid value: \"Bad\": {DNS1035}")),
        ]
    );
}

#[test]
fn protected_groups_need_api_approval() {
    let crd = |annotation: Option<&str>| {
        let mut o = crd();
        o["spec"]["group"] = json!("widgets.k8s.io");
        o["metadata"]["name"] = json!("widgets.widgets.k8s.io");
        if let Some(a) = annotation {
            o["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": a});
        }
        o
    };
    assert_eq!(
        pairs(&create(crd(None))),
        vec![(
            "metadata.annotations[api-approved.kubernetes.io]",
            r#"Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        )]
    );
    assert_eq!(
        pairs(&create(crd(Some("yes")))),
        vec![(
            "metadata.annotations[api-approved.kubernetes.io]",
            r#"Invalid value: "yes": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111"#
        )]
    );
    assert_eq!(create(crd(Some("https://github.com/kubernetes/enhancements/pull/1111"))), vec![]);
    assert_eq!(create(crd(Some("unapproved, experimental"))), vec![]);
    // An unchanged state is never refused on update.
    let old = stored(crd(Some("yes")));
    assert_eq!(update(old.clone(), &old).1, vec![]);
}

#[test]
fn preserve_unknown_fields_cannot_be_turned_on() {
    assert_eq!(
        causes(|o| o["spec"]["preserveUnknownFields"] = json!(true)),
        one(
            "spec.preserveUnknownFields",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Versions.

fn version(name: &str, storage: bool) -> Value {
    json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": object_schema()}})
}

#[test]
fn exactly_one_version_is_the_storage_version() {
    let got = causes(|o| o["spec"]["versions"] = json!([version("v1", true), version("v2", true)]));
    let v = |n: &str| {
        format!(
            "apiextensions.CustomResourceDefinitionVersion{{Name:\"{n}\", Served:true, Storage:true, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}"
        )
    };
    assert_eq!(
        got,
        vec![
            (
                "spec.versions".to_string(),
                format!(
                    "Invalid value: []apiextensions.CustomResourceDefinitionVersion{{{}, {}}}: must have exactly one version marked as storage version",
                    v("v1"),
                    v("v2")
                )
            ),
            // Only the first storage version was recorded.
            (
                "status.storedVersions".to_string(),
                r#"Invalid value: []string{"v1"}: must have the storage version v2"#.to_string()
            ),
        ]
    );
    let got = causes(|o| o["spec"]["versions"] = json!([]));
    assert_eq!(
        got,
        vec![
            (
                "spec.versions".to_string(),
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: must have exactly one version marked as storage version".to_string()
            ),
            ("status.storedVersions".to_string(), "Invalid value: []string(nil): must have at least one stored version".to_string()),
        ]
    );
}

#[test]
fn version_names_are_unique_dns_labels() {
    let got = causes(|o| o["spec"]["versions"] = json!([version("v1", true), version("v1", false)]));
    assert_eq!(got.len(), 1);
    assert!(got[0].1.ends_with(": must contain unique version names"), "{got:?}");
    let got = causes(|o| {
        o["spec"]["versions"][0]["name"] = json!("V1");
    });
    assert_eq!(
        got,
        vec![
            ("spec.versions[0].name".to_string(), format!("Invalid value: \"V1\": {DNS1035}")),
            ("spec.version".to_string(), format!("Invalid value: \"V1\": {DNS1035}")),
        ],
        "kube checks the first version's name again as spec.version"
    );
}

#[test]
fn every_version_needs_a_schema() {
    let got = causes(|o| {
        o["spec"]["versions"][0].as_object_mut().unwrap().remove("schema");
    });
    assert_eq!(got, one("spec.versions[0].schema.openAPIV3Schema", "Required value: schemas are required"));
}

#[test]
fn deprecation_warnings_need_deprecated_versions() {
    let got = causes(|o| o["spec"]["versions"][0]["deprecationWarning"] = json!("old"));
    assert_eq!(
        got,
        one("spec.versions[0].deprecationWarning", r#"Invalid value: "old": can only be set for deprecated versions"#)
    );
    let got = causes(|o| {
        o["spec"]["versions"][0]["deprecated"] = json!(true);
        o["spec"]["versions"][0]["deprecationWarning"] = json!("a\tb");
    });
    assert_eq!(
        got,
        one(
            "spec.versions[0].deprecationWarning",
            r#"Invalid value: "a\tb": must only contain printable UTF-8 characters; non-printable character found at index 1"#
        )
    );
}

#[test]
fn stored_versions_must_stay_versions() {
    let mut old = stored(crd());
    old["spec"]["versions"][0]["storage"] = json!(false);
    old["spec"]["versions"].as_array_mut().unwrap().push(version("v2", true));
    old["status"]["storedVersions"] = json!(["v1", "v2"]);
    let mut new = old.clone();
    new["spec"]["versions"].as_array_mut().unwrap().remove(0);
    let (_, causes) = update(new, &old);
    assert_eq!(
        pairs(&causes),
        vec![("status.storedVersions[0]", r#"Invalid value: "v1": must appear in spec.versions"#)]
    );
}

// ---------------------------------------------------------------------------------------------
// Updates.

#[test]
fn group_and_plural_are_immutable_and_kind_once_established() {
    let mut old = stored(crd());
    let mut new = old.clone();
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    new["spec"]["scope"] = json!("Cluster");
    assert_eq!(update(new.clone(), &old).1, vec![], "not established yet");
    old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    assert_eq!(
        pairs(&update(new, &old).1),
        vec![
            ("spec.scope", r#"Invalid value: "Cluster": field is immutable"#),
            ("spec.names.kind", r#"Invalid value: "Gadget": field is immutable"#),
        ]
    );
    let mut new = old.clone();
    new["spec"]["group"] = json!("example.org");
    new["spec"]["names"]["plural"] = json!("gadgets");
    assert_eq!(
        pairs(&update(new, &old).1),
        vec![
            ("spec.group", r#"Invalid value: "example.org": field is immutable"#),
            ("spec.names.plural", r#"Invalid value: "gadgets": field is immutable"#),
        ]
    );
}

#[test]
fn updates_keep_accepting_what_was_stored() {
    // A stored schema kube would refuse today (a type 1.30 does not know).
    let mut old = stored(crd_with(json!({"type": "object", "properties": {"a": {"type": "file"}}})));
    old["status"]["storedVersions"] = json!(["v1"]);
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"touched": "yes"});
    assert_eq!(update(new, &old).1, vec![]);
    assert!(
        has(
            &create(old.clone()).into_iter().map(|c| (c.field, c.message)).collect::<Vec<_>>(),
            &format!("{S}.properties[a].type"),
            r#"Unsupported value: "file": supported values: "array", "boolean", "integer", "number", "object", "string""#
        ),
        "but a create is refused"
    );
}

// ---------------------------------------------------------------------------------------------
// Schemas.

#[test]
fn one_shared_schema_is_reported_under_spec_validation() {
    let got = schema_causes(json!({"type": "object", "properties": {"spec": {"properties": {}}}}));
    assert_eq!(
        got,
        one(&format!("{S}.properties[spec].type"), "Required value: must not be empty for specified object fields")
    );
    // Different schemas per version are reported per version.
    let got = causes(|o| {
        let mut v2 = version("v2", false);
        v2["schema"]["openAPIV3Schema"] = json!({"type": "array", "items": {"type": "string"}});
        o["spec"]["versions"].as_array_mut().unwrap().push(v2);
    });
    assert_eq!(
        got,
        one("spec.versions[1].schema.openAPIV3Schema.type", r#"Invalid value: "array": must be object at the root"#)
    );
}

#[test]
fn structural_schemas_have_types_everywhere() {
    let got = schema_causes(json!({"properties": {"a": {"type": "array"}, "b": {"type": "array", "items": {}}}}));
    assert_eq!(
        got,
        vec![
            (format!("{S}.properties[a].items"), "Required value: must be specified".to_string()),
            (
                format!("{S}.properties[b].items.type"),
                "Required value: must not be empty for specified array items".to_string()
            ),
            (format!("{S}.type"), "Required value: must not be empty at the root".to_string()),
        ]
    );
    // int-or-string and preserved unknown fields need no type.
    assert_eq!(
        schema_causes(json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "blob": {"x-kubernetes-preserve-unknown-fields": true},
        }})),
        vec![]
    );
}

#[test]
fn value_validations_may_not_say_what_is_structural() {
    let got = schema_causes(json!({"type": "object", "properties": {"a": {"type": "string"}},
        "anyOf": [{"type": "object", "properties": {"a": {"description": "x"}, "b": {}}}]}));
    assert_eq!(
        got,
        vec![
            (
                format!("{S}.anyOf[0].properties[a].description"),
                "Forbidden: must be empty to be structural".to_string()
            ),
            (format!("{S}.anyOf[0].type"), "Forbidden: must be empty to be structural".to_string()),
            (
                format!("{S}.properties[b]"),
                format!("Required value: because it is defined in {S}.anyOf[0].properties[b]")
            ),
        ]
    );
}

#[test]
fn root_metadata_may_only_restrict_name_and_generate_name() {
    let meta = |m: Value| json!({"type": "object", "properties": {"metadata": m}});
    assert_eq!(
        schema_causes(meta(json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}))),
        vec![]
    );
    assert_eq!(
        schema_causes(meta(json!({"type": "object", "properties": {"labels": {"type": "object"}}}))),
        one(
            &format!("{S}.properties[metadata]"),
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        )
    );
    assert_eq!(
        schema_causes(meta(json!({"type": "string"}))),
        one(&format!("{S}.properties[metadata].type"), r#"Invalid value: "string": must be object"#)
    );
}

#[test]
fn unsupported_openapi_features_are_forbidden() {
    let got = schema_causes(json!({"type": "object", "properties": {
        "a": {"type": "string", "uniqueItems": true},
        "b": {"type": "null"},
        "c": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "d": {"type": "string", "$ref": "#/x"},
    }}));
    for (f, m) in [
        (
            ".properties[a].uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ),
        (".properties[b].type", "Forbidden: type cannot be set to null, use nullable as an alternative"),
        (
            ".properties[b].type",
            r#"Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#,
        ),
        (".properties[c].additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive"),
        (".properties[d].$ref", "Forbidden: $ref is not supported"),
    ] {
        assert!(has(&got, &format!("{S}{f}"), m), "{f}: {got:?}");
    }
    assert_eq!(
        schema_causes(json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"})),
        one(S, r#"Invalid value: "": OpenAPIV3Schema 'schema' is not supported"#),
        "what only NewStructural refuses is reported when nothing else is"
    );
    assert_eq!(
        schema_causes(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        one(&format!("{S}.additionalProperties"), "Forbidden: must not be used at the root")
    );
}

#[test]
fn defaults_are_pruned_and_not_in_metadata() {
    let got = schema_causes(json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}}}}));
    assert_eq!(
        got,
        one(
            &format!("{S}.properties[spec].default"),
            r#"Invalid value: map[string]interface {}{"a":"x", "b":1}: must not have unknown fields"#
        )
    );
    let got = schema_causes(json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"name": {"type": "string", "default": "x"}}}}}));
    assert_eq!(
        got,
        one(
            &format!("{S}.properties[metadata].properties[name].default"),
            "Forbidden: must not be set in top-level metadata"
        )
    );
    let got = schema_causes(json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true, "default": {"b": 1}}}}));
    assert_eq!(got, vec![], "preserved unknown fields are not pruned");
}

#[test]
fn embedded_resources_are_objects_with_fields() {
    assert_eq!(
        schema_causes(json!({"type": "object", "properties": {"r": {"x-kubernetes-embedded-resource": true}}})),
        vec![
            (
                format!("{S}.properties[r].properties"),
                "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields".to_string()
            ),
            (format!("{S}.properties[r].type"), "Required value: must be object if x-kubernetes-embedded-resource is true".to_string()),
        ]
    );
    assert_eq!(
        schema_causes(json!({"type": "object", "properties": {"r": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"kind": {"type": "integer"}}}}})),
        one(&format!("{S}.properties[r].properties[kind].type"), r#"Invalid value: "integer": must be string"#)
    );
}

#[test]
fn list_and_map_extensions() {
    let got = schema_causes(json!({"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-list-type": "set"},
        "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
        "c": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "map"},
        "d": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}},
              "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "z"]},
        "e": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "set"},
        "f": {"type": "string", "x-kubernetes-map-type": "atomic"},
    }}));
    for (f, m) in [
        (".properties[a].type", r#"Invalid value: "string": must be array if x-kubernetes-list-type is specified"#),
        (
            ".properties[b].x-kubernetes-list-type",
            r#"Unsupported value: "bag": supported values: "atomic", "set", "map""#,
        ),
        (
            ".properties[c].x-kubernetes-list-map-keys",
            "Required value: must not be empty if x-kubernetes-list-type is map",
        ),
        (
            ".properties[d].x-kubernetes-list-map-keys",
            r#"Invalid value: []string{"k", "z"}: entries must all be names of item properties"#,
        ),
        (
            ".properties[d].items.properties[k].default",
            "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        ),
        (
            ".properties[e].items.x-kubernetes-map-type",
            r#"Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#,
        ),
        (".properties[f].type", r#"Invalid value: "string": must be object if x-kubernetes-map-type is specified"#),
    ] {
        assert!(has(&got, &format!("{S}{f}"), m), "{f}: {got:?}");
    }
    assert_eq!(got.len(), 7, "{got:?}");
}

#[test]
fn patterns_are_go_regular_expressions() {
    let got = schema_causes(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(abc$"}}}));
    assert_eq!(
        got,
        one(
            &format!("{S}.properties[a].pattern"),
            "Invalid value: \"^(abc$\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `^(abc$`"
        )
    );
    let got = schema_causes(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "*a"}}}));
    assert_eq!(
        got[0].1,
        "Invalid value: \"*a\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `*`"
    );
    let reason = |p: &str| {
        let got = schema_causes(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": p}}}));
        got[0].1.split("isn't: ").nth(1).unwrap().to_string()
    };
    assert_eq!(reason("a{1001}"), "error parsing regexp: invalid repeat count: `{1001}`");
    assert_eq!(reason("(a)\\1"), "error parsing regexp: invalid escape sequence: `\\1`");
    assert_eq!(reason("a(?=b)"), "error parsing regexp: invalid or unsupported Perl syntax: `(?=`");
    assert_eq!(reason("[a-"), "error parsing regexp: missing closing ]: `[a-`");
    assert_eq!(
        schema_causes(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]{1,63}$"}}})),
        vec![]
    );
}

#[test]
fn validation_rules_fields_are_checked_without_compiling() {
    let got = schema_causes(json!({"type": "object", "properties": {"spec": {"type": "object",
    "properties": {"a": {"type": "string"}},
    "x-kubernetes-validations": [
        {"rule": " "},
        {"rule": "self.a != ''", "message": " "},
        {"rule": "self.a\n != ''"},
        {"rule": "true", "messageExpression": " ", "reason": "FieldValueBad", "fieldPath": ".b"},
    ]}}}));
    let p = format!("{S}.properties[spec].x-kubernetes-validations");
    assert_eq!(
        got,
        vec![
            (format!("{p}[0].rule"), "Required value: rule is not specified".to_string()),
            (format!("{p}[1].message"), r#"Invalid value: " ": message must be non-empty if specified"#.to_string()),
            (format!("{p}[2].message"), "Required value: message must be specified if rule contains line breaks".to_string()),
            (format!("{p}[3].messageExpression"), "Required value: messageExpression must be non-empty if specified".to_string()),
            (
                format!("{p}[3].reason"),
                r#"Unsupported value: "FieldValueBad": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#.to_string()
            ),
            (format!("{p}[3].fieldPath"), r#"Invalid value: ".b": fieldPath must be a valid path"#.to_string()),
        ]
    );
}

/// A schema whose `spec` has `props` and the rules `rules`.
fn spec_with_rules(props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props,
        "x-kubernetes-validations": rules}}})
}

const NO_RULE_FIELDS: &str = "Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}";

#[test]
fn rules_are_compiled_with_self_typed_from_their_node() {
    let got = schema_causes(spec_with_rules(
        json!({"replicas": {"type": "integer"}}),
        json!([{"rule": "self.replicas > 0"}, {"rule": "self.replicaz > 0"}, {"rule": "self.replicas"}]),
    ));
    let p = format!("{S}.properties[spec].x-kubernetes-validations");
    assert_eq!(
        got,
        vec![
            (
                format!("{p}[1].rule"),
                format!(
                    "Invalid value: apiextensions.ValidationRule{{Rule:\"self.replicaz > 0\", {NO_RULE_FIELDS}: compilation failed: ERROR: <input>:1:5: undefined field 'replicaz'\n | self.replicaz > 0\n | ....^"
                )
            ),
            (
                format!("{p}[2].rule"),
                format!(
                    "Invalid value: apiextensions.ValidationRule{{Rule:\"self.replicas\", {NO_RULE_FIELDS}: cel expression must evaluate to a bool"
                )
            ),
        ]
    );
    // A syntax error, at the root, where kind, apiVersion and metadata.name are declared too.
    let root = json!({"type": "object", "properties": {"spec": {"type": "object"}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a') && self.kind == 'Widget'"},
            {"rule": "self.spec >"}]});
    let got = schema_causes(root);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, format!("{S}.x-kubernetes-validations[1].rule"));
    assert!(got[0].1.contains(": compilation failed: ERROR: <input>:1:12: Syntax error: "), "{}", got[0].1);
}

#[test]
fn rules_of_per_version_schemas_are_reported_under_their_version() {
    let mut obj = crd_with(spec_with_rules(json!({"a": {"type": "string"}}), json!([{"rule": "self.a == 1"}])));
    let mut v2 = obj["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"] = json!({"type": "integer"});
    obj["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let got = create(obj);
    assert_eq!(
        pairs(&got).iter().map(|(f, m)| (*f, m.rsplit(": ").next().unwrap())).collect::<Vec<_>>(),
        vec![(
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
            "found no matching overload for '_==_' applied to '(string, int)'\n | self.a == 1\n | .......^"
        )]
    );
}

#[test]
fn message_expressions_reasons_and_field_paths_are_checked() {
    let got = schema_causes(spec_with_rules(
        json!({"a": {"type": "string"}}),
        json!([
            {"rule": "self.a != ''", "messageExpression": "self.a.size()", "reason": "FieldValueForbidden"},
            {"rule": "self.a != ''", "messageExpression": "'a is ' + self.a", "fieldPath": ".a"},
        ]),
    ));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, format!("{S}.properties[spec].x-kubernetes-validations[0].messageExpression"));
    assert!(
        got[0].1.starts_with("Invalid value: apiextensions.ValidationRule{Rule:\"self.a != ''\", Message:\"\", MessageExpression:\"self.a.size()\", Reason:(*apiextensions.FieldValueErrorReason)(0xc000000000),"),
        "{}",
        got[0].1
    );
    assert!(got[0].1.ends_with(": messageExpression must evaluate to a string"), "{}", got[0].1);
}

#[test]
fn old_self_is_refused_where_old_values_cannot_be_correlated() {
    let item = |rule: &str| {
        json!({"type": "object", "properties": {"k": {"type": "string", "maxLength": 8}},
        "required": ["k"], "x-kubernetes-validations": [{"rule": rule}]})
    };
    let got = schema_causes(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "plain": {"type": "array", "maxItems": 8, "items": item("self.k == oldSelf.k")},
        "keyed": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
            "items": item("self.k == oldSelf.k")},
        "ratcheted": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == 'a'", "optionalOldSelf": true},
            {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true}]},
    }}}}));
    assert_eq!(
        got,
        vec![
            (
                format!("{S}.properties[spec].properties[plain].items.x-kubernetes-validations[0].rule"),
                format!(
                    "Invalid value: \"self.k == oldSelf.k\": oldSelf cannot be used on the uncorrelatable portion of the schema within {S}.properties[spec].properties[plain]"
                )
            ),
            (
                format!("{S}.properties[spec].properties[ratcheted].x-kubernetes-validations[0].optionalOldSelf"),
                "Invalid value: true: may not be set if oldSelf is not used in rule".to_string()
            ),
        ]
    );
}

#[test]
fn rules_whose_estimated_cost_exceeds_the_budget_are_refused() {
    let list = |max: Option<i64>| {
        let mut l = json!({"type": "array", "items": {"type": "string", "maxLength": 64}});
        if let Some(m) = max {
            l["maxItems"] = json!(m);
        }
        l
    };
    let rule = json!([{"rule": "self.names.all(x, self.names.exists(y, x != y))"}]);
    let got = schema_causes(spec_with_rules(json!({"names": list(None)}), rule.clone()));
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let rp = format!("{S}.properties[spec].x-kubernetes-validations[0].rule");
    assert_eq!(
        got,
        vec![
            (rp.clone(), format!("Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}")),
            (
                rp,
                "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
                    .to_string()
            ),
            (
                S.to_string(),
                format!(
                    "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}"
                )
            ),
        ]
    );
    assert_eq!(schema_causes(spec_with_rules(json!({"names": list(Some(100))}), rule.clone())), vec![]);

    // Under an unbounded list, a rule runs once per item: its cost is multiplied.
    let under = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "groups": {"type": "array", "items": {"type": "object", "properties": {"names": list(Some(100))},
            "x-kubernetes-validations": rule}}}}}});
    let got = schema_causes(under);
    assert_eq!(got[0].0, format!("{S}.properties[spec].properties[groups].items.x-kubernetes-validations[0].rule"));
    assert!(got[0].1.starts_with("Forbidden: estimated rule cost exceeds budget by factor of "), "{}", got[0].1);
}

#[test]
fn an_unchanged_schema_keeps_its_costly_rules_on_update() {
    // About 12.6M units: over the per-rule limit, within the schema's.
    let names = json!({"names": {"type": "array", "items": {"type": "string", "maxLength": 20}}});
    let costly = spec_with_rules(names, json!([{"rule": "self.names.all(x, x.contains('ab'))"}]));
    let old = stored(crd_with(costly));
    let mut relabeled = old.clone();
    relabeled["metadata"]["labels"] = json!({"team": "a"});
    let (_, causes) = update(relabeled, &old);
    assert_eq!(pairs(&causes), vec![]);
    let per_rule = |c: &Cause| c.message.starts_with("Forbidden: estimated rule cost exceeds budget by factor of 1.");
    let mut changed = old.clone();
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["other"] =
        json!({"type": "string"});
    let (_, causes) = update(changed, &old);
    assert!(causes.iter().any(per_rule), "{causes:?}");
}

#[test]
fn the_status_subresource_restricts_the_root() {
    let mut o = crd_with(json!({"type": "object", "nullable": true, "properties": {"status": {"type": "object"}}}));
    o["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    let causes = create(o);
    let got = pairs(&causes);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].0 == S && got[0].1.ends_with(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"), "{got:?}");
    assert_eq!(got[1], (format!("{S}.nullable").as_str(), "Forbidden: nullable cannot be true at the root"));
}

// ---------------------------------------------------------------------------------------------
// Subresources, columns, selectable fields, conversion.

#[test]
fn scale_paths_are_under_spec_and_status() {
    let got = causes(
        |o| o["spec"]["versions"][0]["subresources"] = json!({"scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".selector"}}),
    );
    assert_eq!(
        got,
        vec![
            (
                "spec.subresources.scale.specReplicasPath".to_string(),
                r#"Invalid value: "spec.replicas": must be a simple json path starting with ."#.to_string()
            ),
            (
                "spec.subresources.scale.statusReplicasPath".to_string(),
                r#"Invalid value: ".spec.replicas": should be a json path under .status"#.to_string()
            ),
            (
                "spec.subresources.scale.labelSelectorPath".to_string(),
                r#"Invalid value: ".selector": should be a json path under either .spec or .status"#.to_string()
            ),
        ]
    );
    let got = causes(|o| o["spec"]["versions"][0]["subresources"] = json!({"scale": {}}));
    assert_eq!(
        got,
        vec![
            ("spec.subresources.scale.specReplicasPath".to_string(), "Required value".to_string()),
            ("spec.subresources.scale.statusReplicasPath".to_string(), "Required value".to_string()),
        ]
    );
}

#[test]
fn printer_columns_have_names_types_and_paths() {
    let got = causes(|o| {
        o["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"type": "text", "format": "uuid", "jsonPath": "spec.size"}, {"name": "Size"}])
    });
    assert_eq!(
        got,
        vec![
            ("spec.additionalPrinterColumns[0].name".to_string(), "Required value".to_string()),
            (
                "spec.additionalPrinterColumns[0].type".to_string(),
                r#"Invalid value: "text": must be one of boolean,date,integer,number,string"#.to_string()
            ),
            (
                "spec.additionalPrinterColumns[0].format".to_string(),
                r#"Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password"#
                    .to_string()
            ),
            (
                "spec.additionalPrinterColumns[0].JSONPath".to_string(),
                r#"Invalid value: "spec.size": must be a simple json path starting with ."#.to_string()
            ),
            (
                "spec.additionalPrinterColumns[1].type".to_string(),
                "Required value: must be one of boolean,date,integer,number,string".to_string()
            ),
            ("spec.additionalPrinterColumns[1].JSONPath".to_string(), "Required value".to_string()),
        ]
    );
}

#[test]
fn selectable_fields_point_to_scalars_outside_metadata() {
    // Validated as kube validates a CRD stored with them (the gate that lets clients set them
    // is off in 1.30, so a create drops them first).
    let mut o = crd_with(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}},
    }}));
    o["spec"]["versions"][0]["selectableFields"] = json!([
        {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.tags"},
        {"jsonPath": ".metadata.name"}, {"jsonPath": "spec.size"}, {"jsonPath": ".spec['size']"}, {},
    ]);
    d().apply_defaults(&mut o);
    let causes = d().validate(&o);
    let got = pairs(&causes);
    let p = "spec.selectableFields";
    assert_eq!(
        got,
        vec![
            (format!("{p}[1].jsonPath").as_str(), r#"Duplicate value: ".spec.size""#),
            (
                format!("{p}[2].jsonPath").as_str(),
                r#"Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#
            ),
            (
                format!("{p}[3].jsonPath").as_str(),
                r#"Invalid value: ".metadata.name": must not point to fields in metadata"#
            ),
            (
                format!("{p}[4].jsonPath").as_str(),
                r#"Invalid value: "spec.size": is an invalid path: expected [ or . but got: spec"#
            ),
            (
                format!("{p}[5].jsonPath").as_str(),
                r#"Invalid value: ".spec['size']": is an invalid path: array notation is not allowed"#
            ),
            (format!("{p}[6].jsonPath").as_str(), "Required value"),
        ]
    );
    let mut o = crd();
    let mut schema = json!({"type": "object", "properties": {}});
    for i in 0..9 {
        schema["properties"][format!("f{i}")] = json!({"type": "string"});
    }
    o["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
    o["spec"]["versions"][0]["selectableFields"] =
        json!((0..9).map(|i| json!({"jsonPath": format!(".f{i}")})).collect::<Vec<_>>());
    d().apply_defaults(&mut o);
    assert_eq!(pairs(&d().validate(&o)), vec![(p, "Too many: 9: must have at most 8 items")]);
}

#[test]
fn conversion_is_none_or_a_webhook() {
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "Webhook"})),
        vec![
            (
                "spec.conversion.webhookClientConfig".to_string(),
                "Required value: required when strategy is set to Webhook".to_string()
            ),
            ("spec.conversion.conversionReviewVersions".to_string(), "Required value".to_string()),
        ]
    );
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://conv.example.com/convert"}, "conversionReviewVersions": ["v2", "v2"]}})),
        vec![
            (
                "spec.conversion.webhookClientConfig.url".to_string(),
                r#"Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#
                    .to_string()
            ),
            (
                "spec.conversion.conversionReviewVersions[1]".to_string(),
                r#"Invalid value: "v2": duplicate version"#.to_string()
            ),
            (
                "spec.conversion.conversionReviewVersions".to_string(),
                r#"Invalid value: []string{"v2", "v2"}: must include at least one of v1, v1beta1"#.to_string()
            ),
        ]
    );
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://a", "service": {"name": "s", "namespace": "n"}}, "conversionReviewVersions": ["v1"]}})),
        one("spec.conversion.webhookClientConfig", "Required value: exactly one of url or service is required")
    );
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
            "clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v1"]}})),
        vec![
            (
                "spec.conversion.webhookClientConfig".to_string(),
                "Forbidden: should not be set when strategy is not set to Webhook".to_string()
            ),
            (
                "spec.conversion.conversionReviewVersions".to_string(),
                "Forbidden: should not be set when strategy is not set to Webhook".to_string()
            ),
        ]
    );
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "Copy"})),
        one("spec.conversion.strategy", r#"Unsupported value: "Copy": supported values: "None", "Webhook""#)
    );
    assert_eq!(
        causes(|o| o["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": "conv", "namespace": "ns", "path": "/convert"}}, "conversionReviewVersions": ["v1"]}})),
        vec![]
    );
}
