//! Query parameters are validated where they enter, with kube's Status: 422 on the options
//! kind for values kube's `Validate*Options` refuses, 400 for what does not decode.

use serde_json::{Value, json};
use tests::TestServer;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn call(client: &awc::Client, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let req = client.request(method.parse().unwrap(), url).insert_header(("Content-Type", "application/json"));
    let mut r = match body {
        Some(b) => req.send_body(serde_json::to_vec(&b).unwrap()).await,
        None => req.send().await,
    }
    .expect("request sent");
    let bytes = r.body().limit(1 << 20).await.unwrap();
    (r.status().as_u16(), serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn assert_invalid(r: &(u16, Value), kind: &str, message: &str) {
    let (code, status) = r;
    assert_eq!(*code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(status["details"]["kind"], kind, "{status}");
    assert_eq!(status["details"]["group"], "meta.k8s.io", "{status}");
    assert_eq!(status["message"], message, "{status}");
}

#[actix_web::test]
async fn bad_options_get_kube_statuses_and_change_nothing() {
    let s = TestServer::start();
    let client = s.client(true);
    let url = |q: &str| s.url(&format!("{CMS}{q}"));

    let r = call(&client, "GET", &url("?resourceVersionMatch=Exact"), None).await;
    assert_invalid(
        &r,
        "ListOptions",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
    );
    let r = call(&client, "GET", &url("?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan"), None).await;
    assert_invalid(
        &r,
        "ListOptions",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
    );
    let r = call(&client, "POST", &url("?dryRun=Maybe"), Some(json!({"metadata": {"name": "a"}}))).await;
    assert_invalid(
        &r,
        "CreateOptions",
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Maybe\"}: supported values: \"All\"",
    );
    let r = call(&client, "POST", &url("?fieldValidation=Loud"), Some(json!({"metadata": {"name": "a"}}))).await;
    assert_invalid(
        &r,
        "CreateOptions",
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
    );

    let (code, _) = call(&client, "POST", &url(""), Some(json!({"metadata": {"name": "keep"}}))).await;
    assert_eq!(code, 201);
    let r = call(&client, "DELETE", &url("/keep?propagationPolicy=Sideways"), None).await;
    assert_invalid(
        &r,
        "DeleteOptions",
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
    );
    let r = call(&client, "PATCH", &url("/keep?force=true"), Some(json!({}))).await;
    assert_eq!(r.0, 415, "a merge patch needs its content type first: {}", r.1);

    // A continue token with a resourceVersion other than 0 is kube's 400.
    let (code, _) = call(&client, "POST", &url(""), Some(json!({"metadata": {"name": "second"}}))).await;
    assert_eq!(code, 201);
    let (_, page) = call(&client, "GET", &url("?limit=1"), None).await;
    let token = page["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let (code, status) =
        call(&client, "GET", &url(&format!("?limit=1&continue={token}&resourceVersion=3")), None).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("specifying resource version is not allowed when using continue"))
    );

    let (code, kept) = call(&client, "GET", &url("/keep"), None).await;
    assert_eq!((code, kept["metadata"]["name"].as_str()), (200, Some("keep")));
}

#[actix_web::test]
async fn an_update_without_a_namespace_takes_the_requests_as_client_go_sends_it() {
    let s = TestServer::start();
    let client = s.client(true);
    let (code, cm) =
        call(&client, "POST", &s.url(CMS), Some(json!({"metadata": {"name": "app"}, "data": {"k": "1"}}))).await;
    assert_eq!(code, 201, "{cm}");
    // Built from scratch, as a typed client-go program builds it for Update: no namespace.
    let fresh = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "resourceVersion": cm["metadata"]["resourceVersion"]},
        "data": {"k": "2"},
    });
    let (code, updated) = call(&client, "PUT", &s.url(&format!("{CMS}/app")), Some(fresh)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(
        (updated["metadata"]["namespace"].as_str(), updated["data"]["k"].as_str()),
        (Some("default"), Some("2"))
    );
    let mut other = updated.clone();
    other["metadata"]["namespace"] = "kube-system".into();
    let (code, status) = call(&client, "PUT", &s.url(&format!("{CMS}/app")), Some(other)).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}
