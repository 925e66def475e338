//! CEL as kube-apiserver 1.32 evaluates it, replayed from what the reference server answered
//! (`tests/fixtures/cel/*.json`, recorded by `tests/fixtures/cel/record.py`): CRD rules over
//! every library kube enables (Gateway API's rule shapes among them) accepting and refusing
//! the same values with the same messages; rules over their estimated cost refused at
//! creation, and over their run-time cost at evaluation; functions kube does not have, and
//! two-variable comprehensions in new expressions, refused at compile; ValidatingAdmissionPolicy
//! validations and webhook match conditions held to kube's budgets, with their authorizer.
//!
//! Each fixture is a list of requests with the reference's status and, for a refusal, its
//! `Status`: code, reason, details and causes must be the same here, the message too (the
//! causes of a refusal are compared as a set, since kube lists them in Go's map order, and the
//! number in the checker's generated `selfType<n>` names is left out).

use std::time::{Duration, Instant};

use serde_json::Value;
use tests::TestServer;

/// The fixture `name`, as recorded.
fn fixture(name: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cel").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let recorded: Value = serde_json::from_str(&text).expect("fixture JSON");
    recorded["steps"].as_array().expect("steps").clone()
}

/// `text` without the digits of `selfType<n>`, which kube draws at random.
fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("selfType") {
        out.push_str(&rest[..at + "selfType".len()]);
        rest = rest[at + "selfType".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// A cause as `field: message`, as a Status message lists it.
fn cause_text(c: &Value) -> String {
    let field = c["field"].as_str().unwrap_or("");
    let message = c["message"].as_str().unwrap_or("");
    normalized(&if field.is_empty() { message.to_string() } else { format!("{field}: {message}") })
}

/// The causes, sorted: `(reason, field, message)`.
fn causes(status: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| normalized(c[k].as_str().unwrap_or(""));
            (s("reason"), s("field"), s("message"))
        })
        .collect();
    out.sort();
    out
}

/// The message with its causes taken out, so the order kube listed them in does not matter.
fn message_skeleton(status: &Value) -> String {
    let mut message = normalized(status["message"].as_str().unwrap_or(""));
    let mut texts: Vec<String> = status["details"]["causes"].as_array().into_iter().flatten().map(cause_text).collect();
    // Longest first, so a cause that is a prefix of another does not cut it.
    texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
    for t in texts {
        if !t.is_empty() {
            message = message.replacen(&t, "<cause>", 1);
        }
    }
    message
}

/// Compares a refusal with the reference's.
fn same_status(step: &Value, got: &Value) {
    let want = &step["response"];
    let what = format!("{} {}", step["method"], step["path"]);
    for key in ["kind", "status", "reason", "code"] {
        assert_eq!(got[key], want[key], "{what}: {key} of {got:#}");
    }
    for key in ["name", "group", "kind"] {
        assert_eq!(got["details"][key], want["details"][key], "{what}: details.{key} of {got:#}");
    }
    assert_eq!(causes(got), causes(want), "{what}: causes");
    assert_eq!(message_skeleton(got), message_skeleton(want), "{what}: message");
}

/// Replays `steps` against `s`.
async fn replay(s: &TestServer, steps: &[Value]) {
    for step in steps {
        if let Some(path) = step["wait"].as_str() {
            let started = Instant::now();
            while s.admin_call("GET", path, None).await.code != 200 {
                assert!(started.elapsed() < Duration::from_secs(20), "{path} never served");
                actix_web::rt::time::sleep(Duration::from_millis(50)).await;
            }
            continue;
        }
        let method = step["method"].as_str().expect("method");
        let path = step["path"].as_str().expect("path");
        let mut body = step.get("body").cloned().filter(|b| !b.is_null());
        if method == "PUT" {
            let current = s.admin_call("GET", path, None).await;
            if let Some(b) = body.as_mut() {
                b["metadata"]["resourceVersion"] = current.body["metadata"]["resourceVersion"].clone();
            }
        }
        let want = step["status"].as_u64().expect("status") as u16;
        let started = Instant::now();
        let mut answer = s.admin_call(method, path, body.as_ref()).await;
        // A configuration applies a moment after it is created.
        while step["until"] == true && answer.code != want && started.elapsed() < Duration::from_secs(30) {
            actix_web::rt::time::sleep(Duration::from_millis(200)).await;
            answer = s.admin_call(method, path, body.as_ref()).await;
        }
        assert_eq!(answer.code, want, "{method} {path}: {:#}", answer.body);
        if step["compare"] != "status" && want >= 400 {
            same_status(step, &answer.body);
        }
    }
}

async fn replays(name: &str) {
    let s = TestServer::start();
    replay(&s, &fixture(name)).await;
}

#[actix_web::test]
async fn crd_rules_over_kubes_libraries_accept_and_refuse_as_kube() {
    replays("libraries").await;
}

#[actix_web::test]
async fn crd_rules_over_their_estimated_cost_or_not_in_kubes_environment_are_refused_as_kube() {
    replays("estimated_costs").await;
}

#[actix_web::test]
async fn crd_rules_over_their_runtime_cost_are_stopped_as_kube() {
    replays("runtime_costs").await;
}

#[actix_web::test]
async fn admission_policies_evaluate_with_kubes_libraries_and_budgets() {
    replays("policies").await;
}

#[actix_web::test]
async fn webhook_match_conditions_evaluate_with_kubes_budget_and_authorizer() {
    replays("webhooks").await;
}

#[test]
fn normalizing_drops_only_the_generated_type_numbers() {
    assert_eq!(normalized("'(selfType123.a, selfType9.b)'"), "'(selfType.a, selfType.b)'");
    assert_eq!(normalized("no types"), "no types");
}
