//! events.k8s.io/v1 as its own group over the core Events' store, against a reference
//! kube-apiserver: the requests of `tests/fixtures/events.k8s.io.json`, replayed in order, get
//! the answers kube gave them (status codes and bodies), and kubectl and the Python client read
//! and write Events through the group.

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use tests::{Caller, TestServer};

fn recorded_cases() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/events.k8s.io.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<Value>(&text).unwrap().as_array().unwrap().clone()
}

/// An answer with what differs by the run or by design left out, so kube's and ours compare:
/// - what the server assigns (uid, resourceVersion, creationTimestamp), and managedFields: this
///   server records a struct's own `"."` entry and keeps one entry per apiVersion of a manager
///   writing through both groups;
/// - null members: kube's JSON writes a zero time as `null`, this server leaves it out;
/// - an exact duplicate cause: kube lists `reason` twice when it changes (its
///   `ValidateEventUpdate` checks it twice), this server once (the message is the same).
fn comparable(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let volatile = matches!(k.as_str(), "uid" | "resourceVersion" | "creationTimestamp" | "managedFields");
                if x.is_null() || volatile {
                    continue;
                }
                let x = if k == "causes" { Value::Array(distinct(x)) } else { x.clone() };
                out.insert(k.clone(), comparable(&x));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(comparable).collect()),
        other => other.clone(),
    }
}

fn distinct(causes: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for c in causes.as_array().into_iter().flatten() {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

#[actix_web::test]
async fn events_k8s_io_answers_as_the_reference_server_did() {
    let s = TestServer::start();
    let cases = recorded_cases();
    assert!(cases.len() > 20);
    for case in &cases {
        let (name, request, expected) = (&case["name"], &case["request"], &case["response"]);
        let method = request["method"].as_str().unwrap();
        let path = request["path"].as_str().unwrap();
        let content_type = request["contentType"].as_str().unwrap_or("application/json");
        let answer = s
            .request(Caller::Admin, method, path)
            .header("Content-Type", content_type)
            .json_opt(request.get("body"))
            .send()
            .await;
        assert_eq!(answer.code, expected["code"].as_u64().unwrap() as u16, "{name}: {}", answer.body);
        assert_eq!(comparable(&answer.body), comparable(&expected["body"]), "{name}");
    }
}

#[actix_web::test]
async fn a_patch_sent_to_events_k8s_io_applies_to_its_form() {
    let s = TestServer::start();
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2024-05-01T10:20:30.000001Z", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started", "action": "Start", "type": "Normal", "note": "started",
        "reportingController": "example.com/c", "reportingInstance": "c-1"
    });
    let created = s.request(Caller::Admin, "POST", path).json(&event).send().await;
    assert_eq!(created.code, 201, "{}", created.body);
    // A JSON patch's paths are the events.k8s.io form's: a test of `note` holds, and a series
    // added through it is stored (and read back through core with the same name).
    let patch = json!([
        {"op": "test", "path": "/note", "value": "started"},
        {"op": "test", "path": "/deprecatedSource", "value": {}},
        {"op": "add", "path": "/series", "value": {"count": 2, "lastObservedTime": "2024-05-01T10:21:30.000002Z"}}
    ]);
    let patched = s
        .request(Caller::Admin, "PATCH", &format!("{path}/e"))
        .header("Content-Type", "application/json-patch+json")
        .json(&patch)
        .send()
        .await;
    assert_eq!(patched.code, 200, "{}", patched.body);
    assert_eq!(patched.body["series"]["count"], 2);
    let core = s.request(Caller::Admin, "GET", "/api/v1/namespaces/default/events/e").send().await;
    assert_eq!((&core.body["series"]["count"], &core.body["message"]), (&json!(2), &json!("started")));
    // A core field name is nothing in this form: a test of it fails as for any missing path.
    let wrong = json!([{"op": "test", "path": "/message", "value": "started"}]);
    let refused = s
        .request(Caller::Admin, "PATCH", &format!("{path}/e"))
        .header("Content-Type", "application/json-patch+json")
        .json(&wrong)
        .send()
        .await;
    assert_ne!(refused.code, 200, "{}", refused.body);
    // Server-side apply in the events.k8s.io form, recorded in its version.
    let apply =
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "labels": {"a": "b"}}});
    let applied = s
        .request(Caller::Admin, "PATCH", &format!("{path}/e?fieldManager=tool"))
        .header("Content-Type", "application/apply-patch+yaml")
        .json(&apply)
        .send()
        .await;
    assert_eq!(applied.code, 200, "{}", applied.body);
    assert_eq!(applied.body["note"], "started");
    let entries = applied.body["metadata"]["managedFields"].as_array().unwrap().clone();
    let tool = entries.iter().find(|e| e["manager"] == "tool").expect("the applier's entry");
    assert_eq!(tool["apiVersion"], "events.k8s.io/v1");
    assert_eq!(tool["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:a": {}}}}));
    let creator = entries.iter().find(|e| e["operation"] == "Update").expect("the creator's entry");
    assert_eq!(creator["apiVersion"], "events.k8s.io/v1");
    assert!(creator["fieldsV1"]["f:note"].is_object() && creator["fieldsV1"]["f:message"].is_null(), "{creator}");
}

#[actix_web::test]
async fn kubectl_and_the_python_client_use_events_k8s_io() {
    let s = TestServer::start();
    let out = s.python("client.py", &["events_v1"]);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("created scaled"), "{printed}");
    assert!(printed.contains("refused 422 eventTime: Required value"), "{printed}");
    assert!(printed.contains("series 3"), "{printed}");
    let got = s.kubectl_ok(&["get", "events.events.k8s.io", "scaled", "-o", "jsonpath={.note}|{.regarding.name}"]);
    assert_eq!(got, "scaled up|web");
    let listed = s.kubectl_ok(&["events", "--for", "deployment/web"]);
    assert!(listed.contains("Scaled") && listed.contains("scaled up"), "{listed}");
}
