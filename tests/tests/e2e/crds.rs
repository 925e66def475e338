//! CustomResourceDefinitions as kubectl and a raw client see them: a CRD served at once with
//! its names, printer columns and categories; its objects validated, pruned and defaulted
//! from the schema; its CEL rules (`x-kubernetes-validations`) compiled when it is written and
//! evaluated on its objects' writes; conflicting names refused in its conditions; several
//! versions in one store; the status subresource and watches; and the CRD's deletion taking
//! its objects and its resource with it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::webhook::{WebhookServer, body};
use tests::{Caller, TestServer};

fn widgets_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                "shortNames": ["wd"], "categories": ["all", "gadgets"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                            "color": {"type": "string", "enum": ["red", "blue"]},
                            "size": {"type": "string", "default": "medium"},
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"},
                            "replicas": {"type": "integer"}}},
                    },
                }},
            }],
        },
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Creates `crd` and waits until its resource answers; returns how long that took.
async fn create_crd(s: &TestServer, crd: &Value, probe: &str) -> Duration {
    let created = s.admin_call("POST", CRDS, Some(crd)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let started = Instant::now();
    loop {
        if s.admin_call("GET", probe, None).await.code == 200 {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{probe} never served");
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
}

fn condition<'a>(crd: &'a Value, kind: &str) -> &'a Value {
    crd["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == kind)).unwrap_or(&Value::Null)
}

#[actix_web::test]
async fn a_crd_is_served_at_once_with_its_names_columns_and_categories() {
    let s = TestServer::start();
    let took = create_crd(&s, &widgets_crd(), WIDGETS).await;
    println!("served {took:?} after its creation");
    s.kubectl_ok(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s"]);
    let crd =
        s.admin_call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", None).await;
    let names_accepted = condition(&crd.body, "NamesAccepted");
    assert_eq!(
        (&names_accepted["status"], &names_accepted["reason"], &names_accepted["message"]),
        (&json!("True"), &json!("NoConflicts"), &json!("no conflicts found"))
    );
    let established = condition(&crd.body, "Established");
    assert_eq!((&established["status"], &established["reason"]), (&json!("True"), &json!("InitialNamesAccepted")));
    assert_eq!(crd.body["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(crd.body["status"]["storedVersions"], json!(["v1"]));

    // Discovery, both forms.
    let group = s.admin_call("GET", "/apis/example.com/v1", None).await;
    let widgets = group.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == "widgets").unwrap();
    assert_eq!(widgets["kind"], "Widget");
    assert_eq!(widgets["categories"], json!(["all", "gadgets"]));
    let resources = s.kubectl_ok(&["api-resources", "--api-group=example.com"]);
    assert!(resources.contains("widgets") && resources.contains("wd"), "{resources}");

    s.kubectl_stdin(&["apply", "-f", "-"], &widget("small", json!({"replicas": 2, "color": "red"})).to_string());
    let table = s.kubectl_ok(&["get", "wd"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "REPLICAS", "COLOR", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..3], ["small", "2", "red"], "{table}");
    assert!(s.kubectl_ok(&["get", "gadgets"]).contains("small"), "the custom category lists widgets");
    assert!(s.kubectl_ok(&["get", "all"]).contains("widget.example.com/small"), "and so does `all`");

    // Defaulted on create.
    let small = s.admin_call("GET", &format!("{WIDGETS}/small"), None).await;
    assert_eq!(small.body["spec"]["size"], "medium");
    assert_eq!(small.body["metadata"]["generation"], 1);

    // Defaulted when read from storage: a default added to the schema later shows on objects
    // stored before it, in gets, lists and watches, without a write.
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
    let mut crd = s.admin_call("GET", crd_path, None).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] =
        json!({"type": "string", "default": "round"});
    assert_eq!(s.admin_call("PUT", crd_path, Some(&crd)).await.code, 200);
    let got = wait_for("the new default read back", async || {
        let got = s.admin_call("GET", &format!("{WIDGETS}/small"), None).await;
        (got.body["spec"]["shape"] == "round").then_some(got)
    })
    .await;
    assert_eq!(got.body["metadata"]["resourceVersion"], small.body["metadata"]["resourceVersion"], "no write");
    let list = s.admin_call("GET", WIDGETS, None).await;
    assert_eq!(list.body["items"][0]["spec"]["shape"], "round", "{}", list.body);
    let watch = s.admin_call("GET", &format!("{WIDGETS}?watch=1&timeoutSeconds=1"), None).await;
    let events: Vec<Value> = watch.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["object"]["spec"]["shape"], "round", "{events:?}");
}

#[actix_web::test]
async fn custom_resources_are_validated_pruned_and_their_unknown_fields_reported() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;

    let bad = s.admin_call("POST", WIDGETS, Some(&widget("bad", json!({"replicas": 20, "color": "pink"})))).await;
    assert_eq!(bad.code, 422, "{}", bad.body);
    assert_eq!(bad.body["reason"], "Invalid");
    let fields: Vec<&str> =
        bad.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    assert!(fields.contains(&"spec.replicas") && fields.contains(&"spec.color"), "{}", bad.body);
    let message = bad.body["message"].as_str().unwrap();
    assert!(message.starts_with("Widget.example.com \"bad\" is invalid: "), "{message}");
    assert!(message.contains("Unsupported value: \"pink\": supported values: \"red\", \"blue\""), "{message}");

    // Unknown fields: pruned, warned by default, refused under Strict.
    let extra = widget("extra", json!({"replicas": 1, "shape": "round"}));
    let warned = s.admin_call("POST", WIDGETS, Some(&extra)).await;
    assert_eq!(warned.code, 201, "{}", warned.body);
    assert!(warned.body["spec"].get("shape").is_none(), "pruned: {}", warned.body);
    assert!(
        warned.warnings().iter().any(|w| w.contains("unknown field") && w.contains("spec.shape")),
        "{:?}",
        warned.warnings()
    );
    let strict = widget("strict", json!({"replicas": 1, "shape": "round"}));
    let refused = s.admin_call("POST", &format!("{WIDGETS}?fieldValidation=Strict"), Some(&strict)).await;
    assert_eq!(refused.code, 400, "{}", refused.body);
    assert!(refused.body["message"].as_str().unwrap().contains("unknown field \"spec.shape\""), "{}", refused.body);
    let stored = s.admin_call("GET", &format!("{WIDGETS}/strict"), None).await;
    assert_eq!(stored.code, 404, "a refused create stores nothing");

    // Strategic merge patch is not served for custom resources; merge patch is.
    let smp = s
        .request(Caller::Admin, "PATCH", &format!("{WIDGETS}/extra"))
        .body_with_type(br#"{"spec":{"replicas":3}}"#.to_vec(), "application/strategic-merge-patch+json")
        .send()
        .await;
    assert_eq!(smp.code, 415, "{}", smp.body);
    let merge = s
        .request(Caller::Admin, "PATCH", &format!("{WIDGETS}/extra"))
        .body_with_type(br#"{"spec":{"replicas":3}}"#.to_vec(), "application/merge-patch+json")
        .send()
        .await;
    assert_eq!((merge.code, &merge.body["spec"]["replicas"]), (200, &json!(3)), "{}", merge.body);
    assert_eq!(merge.body["metadata"]["generation"], 2, "a spec change bumps the generation");
}

#[actix_web::test]
async fn the_status_subresource_and_watches_of_custom_resources() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    let mut created = widget("w", json!({"replicas": 1}));
    created["status"] = json!({"ready": true});
    let c = s.admin_call("POST", WIDGETS, Some(&created)).await;
    assert_eq!(c.code, 201);
    assert!(c.body.get("status").is_none(), "status is dropped on create: {}", c.body);
    let rv = c.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    let mut status = c.body.clone();
    status["status"] = json!({"ready": true});
    status["spec"]["replicas"] = json!(5);
    let u = s.admin_call("PUT", &format!("{WIDGETS}/w/status"), Some(&status)).await;
    assert_eq!(u.code, 200, "{}", u.body);
    assert_eq!((&u.body["status"]["ready"], &u.body["spec"]["replicas"]), (&json!(true), &json!(1)));
    assert_eq!(u.body["metadata"]["generation"], 1, "a status write leaves the generation");

    let watch = s.admin_call("GET", &format!("{WIDGETS}?watch=1&resourceVersion={rv}&timeoutSeconds=1"), None).await;
    let text = watch.text();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["type"], "MODIFIED");
    assert_eq!(events[0]["object"]["status"]["ready"], true);

    // `/scale` reads and writes the CRD's paths, and kubectl scales through it.
    s.kubectl_ok(&["scale", "widget", "w", "--replicas=3"]);
    let scale = s.admin_call("GET", &format!("{WIDGETS}/w/scale"), None).await;
    assert_eq!((&scale.body["kind"], &scale.body["spec"]["replicas"]), (&json!("Scale"), &json!(3)), "{}", scale.body);
    let w = s.admin_call("GET", &format!("{WIDGETS}/w"), None).await;
    assert_eq!((&w.body["spec"]["replicas"], &w.body["metadata"]["generation"]), (&json!(3), &json!(2)));
    let too_many = s
        .admin_call(
            "PUT",
            &format!("{WIDGETS}/w/scale"),
            Some(&json!({"apiVersion": "autoscaling/v1",
        "kind": "Scale", "metadata": {"name": "w", "namespace": "default"}, "spec": {"replicas": 11}})),
        )
        .await;
    assert_eq!(too_many.code, 422, "the schema's maximum holds through /scale: {}", too_many.body);
}

/// `widgets_crd()` with CEL rules: one on `spec`, a transition rule on `spec.color`.
fn widgets_crd_with_rules() -> Value {
    let mut crd = widgets_crd();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["minReplicas"] = json!({"type": "integer"});
    spec["x-kubernetes-validations"] = json!([{"rule": "!has(self.minReplicas) || self.replicas >= self.minReplicas",
        "message": "replicas must be at least minReplicas"}]);
    spec["properties"]["color"]["x-kubernetes-validations"] =
        json!([{"rule": "self == oldSelf", "message": "color is immutable"}]);
    crd
}

#[actix_web::test]
async fn cel_rules_and_transition_rules_deny_writes_as_kube_words_it() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd_with_rules(), WIDGETS).await;

    let bad = s.admin_call("POST", WIDGETS, Some(&widget("bad", json!({"replicas": 1, "minReplicas": 3})))).await;
    assert_eq!(bad.code, 422, "{}", bad.body);
    assert_eq!(
        bad.body["message"],
        "Widget.example.com \"bad\" is invalid: spec: Invalid value: \"object\": replicas must be at least minReplicas"
    );
    assert_eq!(
        bad.body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "spec",
            "message": "Invalid value: \"object\": replicas must be at least minReplicas"}])
    );
    // Schema errors that leave the object's shape in doubt come first, and the rules wait.
    let pink = s
        .admin_call("POST", WIDGETS, Some(&widget("pink", json!({"replicas": 1, "minReplicas": 3, "color": "pink"}))))
        .await;
    assert_eq!(pink.code, 422, "{}", pink.body);
    let causes = pink.body["details"]["causes"].as_array().unwrap();
    assert_eq!(causes[0]["field"], "spec.color", "{}", pink.body);
    assert_eq!(causes[1]["field"], "<nil>", "{}", pink.body);
    assert!(causes[1]["message"].as_str().unwrap().ends_with(
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
    ));

    // The transition rule holds on updates only: any color on create, none changed after.
    let w = widget("w", json!({"replicas": 2, "color": "red"}));
    s.kubectl_stdin(&["apply", "-f", "-"], &w.to_string());
    let mut blue = w.clone();
    blue["spec"]["color"] = "blue".into();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &blue.to_string());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"w\" is invalid: spec.color: Invalid value: \"string\": color is immutable"), "{stderr}");
    let mut more = w.clone();
    more["spec"]["replicas"] = 4.into();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &more.to_string());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[actix_web::test]
async fn a_crd_whose_rule_does_not_compile_is_refused() {
    let s = TestServer::start();
    let mut crd = widgets_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.replicaz > 0"}]);
    let refused = s.admin_call("POST", CRDS, Some(&crd)).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    let field = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    let detail = "Invalid value: apiextensions.ValidationRule{Rule:\"self.replicaz > 0\", Message:\"\", MessageExpression:\"\", \
        Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: \
        ERROR: <input>:1:5: undefined field 'replicaz'\n | self.replicaz > 0\n | ....^";
    assert_eq!(
        refused.body["message"],
        format!("CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: {field}: {detail}")
    );
    assert_eq!(
        refused.body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": field, "message": detail}])
    );

    // An unbounded quadratic rule is refused for its estimated cost.
    let mut crd = widgets_crd();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["names"] = json!({"type": "array", "items": {"type": "string"}});
    spec["x-kubernetes-validations"] = json!([{"rule": "self.names.all(x, self.names.exists_one(y, x == y))"}]);
    let costly = s.admin_call("POST", CRDS, Some(&crd)).await;
    assert_eq!(costly.code, 422, "{}", costly.body);
    assert_eq!(
        costly.body["details"]["causes"][0]["message"],
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    );
    assert_eq!(s.admin_call("GET", &format!("{CRDS}/widgets.example.com"), None).await.code, 404);
}

#[actix_web::test]
async fn a_name_taken_in_the_group_is_refused_in_the_conditions() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    // The names are taken once recorded in the first CRD's status (a CRD is served a moment
    // before its status is written; a CRD created in between may take the same names, in kube too).
    let widgets = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
    wait_for("the widgets' names accepted", async || {
        let crd = s.admin_call("GET", widgets, None).await.body;
        (condition(&crd, "NamesAccepted")["status"] == "True").then_some(())
    })
    .await;
    let mut gizmos = widgets_crd();
    gizmos["metadata"]["name"] = "gizmos.example.com".into();
    gizmos["spec"]["names"] = json!({"plural": "gizmos", "kind": "Gizmo", "shortNames": ["wd"]});
    let c = s.admin_call("POST", CRDS, Some(&gizmos)).await;
    assert_eq!(c.code, 201, "{}", c.body);
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com";
    let crd = wait_for("the conflict reported", async || {
        let crd = s.admin_call("GET", path, None).await.body;
        (condition(&crd, "NamesAccepted")["status"] == "False").then_some(crd)
    })
    .await;
    let accepted = condition(&crd, "NamesAccepted");
    assert_eq!(
        (&accepted["reason"], &accepted["message"]),
        (&json!("ShortNamesConflict"), &json!("\"wd\" is already in use"))
    );
    let established = condition(&crd, "Established");
    assert_eq!((&established["status"], &established["reason"]), (&json!("False"), &json!("NotAccepted")));
    assert_eq!(
        s.admin_call("GET", "/apis/example.com/v1/namespaces/default/gizmos", None).await.code,
        404,
        "not served while its names are refused"
    );

    // Freed when the CRD holding it goes.
    s.kubectl_ok(&["delete", "crd", "widgets.example.com"]);
    wait_for("gizmos served once their names are free", async || {
        (s.admin_call("GET", "/apis/example.com/v1/namespaces/default/gizmos", None).await.code == 200).then_some(())
    })
    .await;
}

/// Polls `check` until it gives a value, for at most 10 s.
async fn wait_for<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never: {what}");
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn several_versions_share_one_store_and_convert_by_api_version() {
    let s = TestServer::start();
    let mut crd = widgets_crd();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = "v1beta1".into();
    beta["storage"] = false.into();
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
    create_crd(&s, &crd, WIDGETS).await;
    let beta_path = "/apis/example.com/v1beta1/namespaces/default/widgets";
    let mut old = widget("old", json!({"replicas": 1}));
    old["apiVersion"] = "example.com/v1beta1".into();
    let c = s.admin_call("POST", beta_path, Some(&old)).await;
    assert_eq!((c.code, &c.body["apiVersion"]), (201, &json!("example.com/v1beta1")), "{}", c.body);
    let v1 = s.admin_call("GET", &format!("{WIDGETS}/old"), None).await;
    assert_eq!(v1.body["apiVersion"], "example.com/v1");
    let beta = s.admin_call("GET", &format!("{beta_path}/old"), None).await;
    assert_eq!(beta.body["apiVersion"], "example.com/v1beta1", "{}", beta.body);
    let list = s.admin_call("GET", beta_path, None).await;
    assert_eq!(list.body["apiVersion"], "example.com/v1beta1", "{}", list.body);
    let discovery = s.admin_call("GET", "/apis/example.com", None).await;
    assert_eq!(discovery.body["preferredVersion"]["version"], "v1", "{}", discovery.body);
}

#[actix_web::test]
async fn deleting_a_crd_deletes_its_objects_and_stops_serving_them() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    for name in ["a", "b"] {
        assert_eq!(s.admin_call("POST", WIDGETS, Some(&widget(name, json!({})))).await.code, 201);
    }
    let other_ns = "/apis/example.com/v1/namespaces/kube-system/widgets";
    assert_eq!(s.admin_call("POST", other_ns, Some(&widget("c", json!({})))).await.code, 201);
    let watch = s.request(Caller::Admin, "GET", &format!("{WIDGETS}?watch=1&timeoutSeconds=20")).send();
    let deleted = async {
        actix_web::rt::time::sleep(Duration::from_millis(300)).await;
        s.kubectl_ok(&["delete", "crd", "widgets.example.com", "--timeout=20s"])
    };
    let (watched, out) = futures_util::join!(watch, deleted);
    assert!(out.contains("deleted"), "{out}");
    let events: Vec<String> = watched
        .text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| format!("{} {}", e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap_or("")))
        .collect();
    assert!(events.contains(&"DELETED a".to_string()) && events.contains(&"DELETED b".to_string()), "{events:?}");

    assert_eq!(s.admin_call("GET", WIDGETS, None).await.code, 404);
    let groups = s.admin_call("GET", "/apis", None).await;
    assert!(!groups.body.to_string().contains("example.com"), "gone from discovery");
    // Created again, it starts empty.
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    let list = s.admin_call("GET", "/apis/example.com/v1/widgets", None).await;
    assert_eq!(list.body["items"], json!([]), "{}", list.body);
}

#[actix_web::test]
async fn kubectl_explains_a_custom_resource_and_leaves_unknown_fields_to_the_server() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    // The documents are published just after the resource is served (kube's lag by seconds).
    let index = wait_for("the group version in the OpenAPI index", async || {
        let index = s.admin_call("GET", "/openapi/v3", None).await;
        index.body["paths"]["apis/example.com/v1"].is_object().then_some(index)
    })
    .await;
    let url = index.body["paths"]["apis/example.com/v1"]["serverRelativeURL"].as_str().unwrap().to_string();
    assert!(url.starts_with("/openapi/v3/apis/example.com/v1?hash="), "{url}");
    assert!(index.body["paths"]["api/v1"].is_object(), "the built-in group versions stay listed");

    let explained = s.kubectl_ok(&["explain", "widgets.spec"]);
    assert!(explained.contains("GROUP:      example.com"), "{explained}");
    assert!(explained.contains("KIND:       Widget"), "{explained}");
    assert!(explained.contains("replicas\t<integer>"), "{explained}");
    assert!(explained.contains("color\t<string>"), "{explained}");
    let meta = s.kubectl_ok(&["explain", "widgets.metadata.labels"]);
    assert!(meta.contains("map[string]string"), "metadata is ObjectMeta: {meta}");

    // kubectl finds fieldValidation on the PATCH operation, so the server reports unknown
    // fields (as a strict decoding error) instead of kubectl refusing them client-side.
    let mut bad = widget("typo", json!({"replicas": 1}));
    bad["spec"]["colour"] = json!("red");
    let out = s.kubectl_stdin(&["create", "-f", "-"], &bad.to_string());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("strict decoding error: unknown field \"spec.colour\""), "{err}");

    // The merged v2 document carries the definitions; deleting the CRD takes them away.
    let v2 = s.admin_call("GET", "/openapi/v2", None).await;
    assert_eq!(v2.body["definitions"]["com.example.v1.Widget"]["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
    assert!(v2.body["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
    assert!(v2.body["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"].is_object());
    // A stale hash is redirected (and the client follows) to the current document.
    let stale = s.admin_call("GET", "/openapi/v3/apis/example.com/v1?hash=0", None).await;
    assert_eq!(stale.body["components"]["schemas"]["com.example.v1.Widget"]["type"], "object");
    s.kubectl_ok(&["delete", "crd", "widgets.example.com"]);
    let index = s.admin_call("GET", "/openapi/v3", None).await;
    assert!(index.body["paths"].get("apis/example.com/v1").is_none(), "{}", index.body);
    let v2 = s.admin_call("GET", "/openapi/v2", None).await;
    assert!(v2.body["definitions"].get("com.example.v1.Widget").is_none());
}

#[actix_web::test]
async fn a_deprecated_version_warns_selectable_fields_select_and_stored_versions_grow() {
    let s = TestServer::start();
    let mut crd = widgets_crd();
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = "v1beta1".into();
    beta["storage"] = false.into();
    beta["deprecated"] = true.into();
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
    create_crd(&s, &crd, WIDGETS).await;
    for (name, color) in [("r", "red"), ("b", "blue"), ("r2", "red")] {
        assert_eq!(s.admin_call("POST", WIDGETS, Some(&widget(name, json!({"color": color})))).await.code, 201);
    }

    let out = s.kubectl(&["get", "widgets.v1beta1.example.com"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"), "{err}");
    let out = s.kubectl(&["get", "widgets.v1.example.com"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("deprecated"), "v1 is not deprecated");

    let red = s.kubectl_ok(&["get", "widgets", "--field-selector", "spec.color=red", "-o", "name"]);
    assert_eq!(red.lines().collect::<Vec<_>>(), ["widget.example.com/r", "widget.example.com/r2"], "{red}");
    let not_red =
        s.kubectl_ok(&["get", "widgets", "--field-selector", "spec.color!=red,metadata.name!=x", "-o", "name"]);
    assert_eq!(not_red.trim(), "widget.example.com/b");
    let refused = s.admin_call("GET", &format!("{WIDGETS}?fieldSelector=spec.size%3Dbig"), None).await;
    assert_eq!((refused.code, &refused.body["reason"]), (400, &json!("BadRequest")));
    assert_eq!(refused.body["message"], "field label not supported: spec.size");
    let watch = s
        .request(Caller::Admin, "GET", &format!("{WIDGETS}?watch=1&timeoutSeconds=1&fieldSelector=spec.color%3Dblue"))
        .send()
        .await;
    let names: Vec<String> = watch
        .text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["object"]["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["b"]);

    // Moving storage to v1beta1 records it beside v1.
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
    let mut stored = s.admin_call("GET", path, None).await.body;
    stored["spec"]["versions"][0]["storage"] = false.into();
    stored["spec"]["versions"][1]["storage"] = true.into();
    let updated = s.admin_call("PUT", path, Some(&stored)).await;
    assert_eq!(updated.code, 200, "{}", updated.body);
    assert_eq!(updated.body["status"]["storedVersions"], json!(["v1", "v1beta1"]));
}

/// A conversion webhook between `v1` (`spec.color`) and `v2` (`spec.colour`); fails with
/// `failing`'s message while it is set.
fn conversion_webhook(failing: Arc<Mutex<Option<String>>>) -> WebhookServer {
    WebhookServer::start(&["127.0.0.1"], move |_, review| {
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("").to_string();
        if let Some(message) = failing.lock().unwrap().clone() {
            return body(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": request["uid"], "result": {"status": "Failure", "message": message}}}));
        }
        let converted: Vec<Value> = request["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let mut o = o.clone();
                let (from, to) = if desired.ends_with("/v2") { ("color", "colour") } else { ("colour", "color") };
                if let Some(v) = o["spec"].as_object_mut().and_then(|s| s.remove(from)) {
                    o["spec"][to] = v;
                }
                o["apiVersion"] = desired.clone().into();
                o["metadata"]["labels"]["converted-to"] = desired.rsplit('/').next().unwrap().into();
                o
            })
            .collect();
        body(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": converted}}))
    })
}

#[actix_web::test]
async fn versions_convert_through_a_conversion_webhook_including_a_list_of_mixed_stored_versions() {
    let failing = Arc::new(Mutex::new(None));
    let hook = conversion_webhook(failing.clone());
    let s = TestServer::start();
    let mut crd = widgets_crd();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = "v2".into();
    v2["storage"] = false.into();
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["colour"] = json!({"type": "string"});
    v2["additionalPrinterColumns"] = json!([]);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle}}});
    create_crd(&s, &crd, WIDGETS).await;
    let v2_path = "/apis/example.com/v2/namespaces/default/widgets";

    // Created in v2, stored in v1, answered in v2.
    let mut old = widget("old", json!({"colour": "red"}));
    old["apiVersion"] = "example.com/v2".into();
    let created = s.admin_call("POST", v2_path, Some(&old)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(
        (&created.body["apiVersion"], &created.body["spec"]["colour"]),
        (&json!("example.com/v2"), &json!("red"))
    );
    let review = &hook.calls("/convert")[0].review;
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v1");
    assert!(hook.calls("/convert")[0].query.contains("timeout=30s"));
    let v1 = s.admin_call("GET", &format!("{WIDGETS}/old"), None).await;
    assert_eq!(
        (&v1.body["spec"]["color"], &v1.body["metadata"]["labels"]["converted-to"]),
        (&json!("red"), &json!("v1"))
    );

    // Storage moves to v2: a new object is stored in v2 beside the old one in v1.
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
    let mut stored = s.admin_call("GET", crd_path, None).await.body;
    stored["spec"]["versions"][0]["storage"] = false.into();
    stored["spec"]["versions"][1]["storage"] = true.into();
    assert_eq!(s.admin_call("PUT", crd_path, Some(&stored)).await.code, 200);
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    let mut new = widget("new", json!({"colour": "blue"}));
    new["apiVersion"] = "example.com/v2".into();
    assert_eq!(s.admin_call("POST", v2_path, Some(&new)).await.code, 201);
    let calls = hook.calls("/convert").len();
    let list = s.admin_call("GET", WIDGETS, None).await;
    let colors: Vec<(&str, &str)> = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap(), i["spec"]["color"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(colors, [("new", "blue"), ("old", "red")], "{}", list.body);
    let list = s.admin_call("GET", v2_path, None).await;
    assert_eq!(list.body["items"][1]["spec"]["colour"], "red", "{}", list.body);
    // A custom resource list's items carry their type, as kube's unstructured lists do.
    assert_eq!(list.body["items"][1]["apiVersion"], "example.com/v2", "{}", list.body);
    assert!(hook.calls("/convert").len() <= calls + 2, "one review per list, not per item");

    // A merge patch in v2 terms.
    let patched = s
        .request(Caller::Admin, "PATCH", &format!("{v2_path}/old"))
        .header("Content-Type", "application/merge-patch+json")
        .json(&json!({"spec": {"colour": "green"}}))
        .send()
        .await;
    assert_eq!((patched.code, &patched.body["spec"]["colour"]), (200, &json!("green")), "{}", patched.body);
    let table = s.kubectl_ok(&["get", "widgets.v1.example.com", "old"]);
    assert!(table.contains("green"), "{table}");

    // Watches in v2 see v2 objects.
    let watch = s.request(Caller::Admin, "GET", &format!("{v2_path}?watch=1&timeoutSeconds=1")).send().await;
    let watched: Vec<Value> = watch.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(watched.iter().all(|e| e["object"]["apiVersion"] == "example.com/v2"), "{watched:?}");

    // A failing webhook names itself, as kube's 500 with no reason. (Objects converted before
    // are remembered by revision, so the one read here is new.)
    let mut third = widget("third", json!({"colour": "red"}));
    third["apiVersion"] = "example.com/v2".into();
    assert_eq!(s.admin_call("POST", v2_path, Some(&third)).await.code, 201);
    *failing.lock().unwrap() = Some("no converting today".into());
    let refused = s.admin_call("GET", &format!("{WIDGETS}/third"), None).await;
    assert_eq!(refused.code, 500, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "conversion webhook for example.com/v2, Kind=Widget failed: no converting today"
    );
}

/// Preserved-unknown content is bounded: a body nesting deeper than the decoder reads is 400,
/// a patch that would make an object deeper than a body may is 422 naming the patch, an object
/// whose managedFields would nest too deep is 422 naming them, a body over the request limit is 413, an object over the storage limit is 413; the resource's
/// objects stay readable through it all.
#[actix_web::test]
async fn deep_or_large_preserved_unknown_content_is_refused_and_the_resource_stays_readable() {
    let s = TestServer::start();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]},
    });
    const BLOBS: &str = "/apis/example.com/v1/namespaces/default/blobs";
    create_crd(&s, &crd, BLOBS).await;
    let nested = |levels: usize| (0..levels).fold(json!(1), |v, _| json!({ "a": v }));
    let blob = |name: &str, spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name}, "spec": spec});

    let deep = s.admin_call("POST", BLOBS, Some(&blob("deep", nested(100)))).await;
    assert_eq!(deep.code, 201, "{}", deep.body);
    let deeper = s.admin_call("POST", BLOBS, Some(&blob("deeper", nested(200)))).await;
    assert_eq!((deeper.code, &deeper.body["reason"]), (400, &json!("BadRequest")), "{}", deeper.body);

    // Each part of this JSON patch decodes; the object it makes (159 levels) would not.
    let path = format!("/spec{}", "/a".repeat(98));
    let patch = json!([{"op": "add", "path": path, "value": nested(60)}]);
    let patched = s
        .request(Caller::Admin, "PATCH", &format!("{BLOBS}/deep"))
        .body_with_type(patch.to_string().into_bytes(), "application/json-patch+json")
        .send()
        .await;
    assert_eq!(patched.code, 422, "{}", patched.body);
    let cause = &patched.body["details"]["causes"][0];
    assert_eq!(cause["field"], "patch", "{}", patched.body);
    assert_eq!(cause["message"], "Forbidden: the patched object must not nest deeper than 127 levels");

    // A body that fits, whose managedFields (the object's shape four levels further down)
    // would not: 422 naming them, on create and on server-side apply.
    let managed = s.admin_call("POST", BLOBS, Some(&blob("managed", nested(122)))).await;
    assert_eq!(managed.code, 422, "{}", managed.body);
    let cause = &managed.body["details"]["causes"][0];
    assert_eq!(cause["field"], "metadata.managedFields", "{}", managed.body);
    assert_eq!(cause["message"], "Forbidden: the object would nest 128 levels deep, past the 127 the server stores");
    let applied = s
        .request(Caller::Admin, "PATCH", &format!("{BLOBS}/managed?fieldManager=fuzz"))
        .body_with_type(blob("managed", nested(122)).to_string().into_bytes(), "application/apply-patch+yaml")
        .send()
        .await;
    assert_eq!(applied.code, 422, "{}", applied.body);
    assert_eq!(applied.body["details"]["causes"][0]["field"], "metadata.managedFields", "{}", applied.body);

    // 4 MiB of preserved content: over the request limit.
    let huge = s.admin_call("POST", BLOBS, Some(&blob("huge", json!({"data": "x".repeat(4 << 20)})))).await;
    assert_eq!(huge.code, 413, "{}", huge.body);
    assert_eq!(huge.body["message"], "Request entity too large: limit is 3145728");
    // 2 MiB: a body the server reads, an object over what storage keeps.
    let large = s.admin_call("POST", BLOBS, Some(&blob("large", json!({"data": "x".repeat(2 << 20)})))).await;
    assert_eq!((large.code, &large.body["reason"]), (413, &json!("RequestEntityTooLarge")), "{}", large.body);

    let list = s.admin_call("GET", BLOBS, None).await;
    assert_eq!(list.code, 200, "{}", list.body);
    let names: Vec<&str> =
        list.body["items"].as_array().unwrap().iter().filter_map(|i| i["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["deep"]);
    assert_eq!(
        (&list.body["items"][0]["apiVersion"], &list.body["items"][0]["kind"]),
        (&json!("example.com/v1"), &json!("Blob"))
    );
    let got = s.admin_call("GET", &format!("{BLOBS}/deep"), None).await;
    assert_eq!(got.body["spec"], nested(100), "the stored object is unchanged");
}

/// kube-rs as an operator uses a CRD: it creates the CRD with k8s-openapi's type and waits for
/// `Established` with kube-runtime's condition, finds the resource through discovery, and
/// drives it as a `DynamicObject` (create, merge and JSON patches, `/status`) while a watcher
/// sees each change in order; a write the schema refuses comes back as kube's 422.
#[test]
fn kube_rs_creates_discovers_and_watches_a_custom_resource() {
    use futures_util::StreamExt;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
    use kube::discovery::{Discovery, Scope};
    use kube::runtime::wait::{await_condition, conditions};
    use kube::runtime::watcher;

    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "krs"]);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let client = crate::watch_sync::client(&s.kubeconfig).await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd: CustomResourceDefinition = serde_json::from_value(widgets_crd()).expect("a typed CRD");
        within("the CRD create", crds.create(&PostParams::default(), &crd)).await.expect("CRD created");
        let established = await_condition(crds.clone(), "widgets.example.com", conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(10), established).await.expect("Established in time").unwrap();

        let discovery = within("discovery", Discovery::new(client.clone()).filter(&["example.com"]).run())
            .await
            .expect("discovery");
        let (resource, caps) =
            discovery.resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget")).expect("Widget discovered");
        assert_eq!((resource.plural.as_str(), caps.scope.clone()), ("widgets", Scope::Namespaced));
        let mut subresources: Vec<&str> = caps.subresources.iter().map(|(r, _)| r.plural.as_str()).collect();
        subresources.sort();
        assert_eq!(subresources, ["scale", "status"]);

        let widgets: Api<DynamicObject> = Api::namespaced_with(client, "krs", &resource);
        let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let (listed, initial_list) = tokio::sync::oneshot::channel();
        let watched = widgets.clone();
        let watcher = tokio::spawn(async move {
            let mut stream = watcher::watcher(watched, watcher::Config::default()).boxed();
            let mut listed = Some(listed);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(l) = listed.take() {
                            let _ = l.send(());
                        }
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        let _ = tx.send((o.data["spec"]["replicas"].clone(), o.data["status"]["ready"].clone()));
                    }
                    _ => {}
                }
            }
        });
        // Writes start once the watcher has listed, so each one reaches it as a watch event.
        tokio::time::timeout(Duration::from_secs(10), initial_list).await.expect("listed in time").unwrap();

        let mut w1: DynamicObject = serde_json::from_value(widget("w1", json!({"replicas": 1}))).unwrap();
        w1.metadata.namespace = Some("krs".into());
        let made = within("the create", widgets.create(&PostParams::default(), &w1)).await.expect("created");
        assert_eq!(made.data["spec"]["size"], "medium", "defaulted from the schema");
        let params = PatchParams::default();
        within("the merge patch", widgets.patch("w1", &params, &Patch::Merge(json!({"spec": {"replicas": 2}}))))
            .await
            .expect("merge patch");
        let replace: json_patch::Patch =
            serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 4}])).unwrap();
        within("the JSON patch", widgets.patch("w1", &params, &Patch::<()>::Json(replace))).await.expect("JSON patch");
        let ready = Patch::Merge(json!({"status": {"ready": true}}));
        within("the status patch", widgets.patch_status("w1", &params, &ready)).await.expect("status");

        let mut bad: DynamicObject = serde_json::from_value(widget("bad", json!({"replicas": 20}))).unwrap();
        bad.metadata.namespace = Some("krs".into());
        match within("the invalid create", widgets.create(&PostParams::default(), &bad)).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
                assert!(
                    status.message.contains("spec.replicas in body should be less than or equal to 10"),
                    "{}",
                    status.message
                );
            }
            other => panic!("expected 422, got {other:?}"),
        }

        let mut changes = Vec::new();
        while changes.len() < 4 {
            let next = tokio::time::timeout(Duration::from_secs(10), seen.recv()).await;
            changes.push(next.expect("the watcher sees every change").expect("watcher running"));
        }
        watcher.abort();
        let replicas: Vec<Value> = changes.iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(replicas, [json!(1), json!(2), json!(4), json!(4)]);
        assert_eq!(changes[3].1, json!(true), "the status change is the last event");
    });
}

/// Awaits one kube-rs call, failing the test with its name if it takes over 30 s (a call that
/// never answers would otherwise hold the suite).
async fn within<T>(what: &str, call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), call).await.unwrap_or_else(|_| panic!("{what} took over 30 s"))
}

/// A custom resource's metadata is read as kube reads ObjectMeta: a no-op PUT whose times are
/// in another RFC 3339 form (the Python client's `+00:00`) writes nothing; its own fields are
/// left as sent, a time-like string included.
#[actix_web::test]
async fn a_custom_resource_put_back_with_times_in_another_form_writes_nothing() {
    let s = TestServer::start();
    create_crd(&s, &widgets_crd(), WIDGETS).await;
    let own = "2024-01-02T03:04:05+00:00";
    let created = s.admin_call("POST", WIDGETS, Some(&widget("timely", json!({"replicas": 1, "size": own})))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["spec"]["size"], own, "a custom resource's own field stays as sent");
    let mut read = s.admin_call("GET", &format!("{WIDGETS}/timely"), None).await.body;
    let rv = read["metadata"]["resourceVersion"].clone();
    for pointer in ["/metadata/creationTimestamp", "/metadata/managedFields/0/time"] {
        let t = read.pointer_mut(pointer).expect("a time");
        *t = json!(t.as_str().expect("a string").replace('Z', "+00:00"));
    }
    let put = s.admin_call("PUT", &format!("{WIDGETS}/timely"), Some(&read)).await;
    assert_eq!(put.code, 200, "{}", put.body);
    assert_eq!(put.body["metadata"]["resourceVersion"], rv, "nothing written: {}", put.body);
    assert!(put.body["metadata"]["managedFields"][0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(put.body["spec"]["size"], own);
}
