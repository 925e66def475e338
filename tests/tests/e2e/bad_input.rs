//! Bad input gets kube-apiserver's Status code and reason, and loses nothing.

use serde_json::{Value, json};
use tests::TestServer;

struct Api<'a> {
    s: &'a TestServer,
    client: awc::Client,
}

struct Reply {
    code: u16,
    body: Value,
    headers: awc::http::header::HeaderMap,
}

impl Api<'_> {
    async fn call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: Option<&str>,
    ) -> Reply {
        let mut req = self.client.request(method.parse().unwrap(), self.s.url(path));
        if let Some(ct) = content_type {
            req = req.insert_header(("Content-Type", ct));
        }
        if let Some(a) = accept {
            req = req.insert_header(("Accept", a));
        }
        let mut resp = req.send_body(body).await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let bytes = resp.body().limit(64 << 20).await.expect("body");
        let body =
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Reply { code: resp.status().as_u16(), body, headers: resp.headers().clone() }
    }

    async fn json(&self, method: &str, path: &str, body: &Value) -> Reply {
        self.call(method, path, Some("application/json"), serde_json::to_vec(body).unwrap(), None).await
    }

    async fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None, Vec::new(), None).await
    }
}

fn assert_status(r: &Reply, code: u16, reason: &str) {
    assert_eq!(r.code, code, "{}", r.body);
    let ct = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(ct.starts_with("application/json"), "Status is JSON, got {ct}");
    assert_eq!(r.body["kind"], "Status", "{}", r.body);
    assert_eq!(r.body["code"], code, "{}", r.body);
    assert_eq!(r.body["reason"], reason, "{}", r.body);
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[actix_web::test]
async fn every_bad_input_gets_its_status_and_nothing_is_lost() {
    let s = TestServer::start();
    let api = Api { s: &s, client: s.client(true) };
    let keep = api.json("POST", CMS, &json!({"metadata": {"name": "keep"}, "data": {"k": "v"}})).await;
    assert_eq!(keep.code, 201, "{}", keep.body);

    let r = api.call("POST", CMS, Some("application/json"), b"{\"metadata\": {".to_vec(), None).await;
    assert_status(&r, 400, "BadRequest");

    let r = api.json("POST", "/api/v1/namespaces/default/widgets", &json!({})).await;
    assert_status(&r, 404, "NotFound");
    let r = api.get("/apis/nope.example.com/v1/things").await;
    assert_status(&r, 404, "NotFound");

    let r = api.json("POST", CMS, &json!({"metadata": {"name": "Bad_Name"}})).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name", "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""),
        "{}",
        r.body
    );

    let r = api
        .json("POST", "/apis/apps/v1/namespaces/default/deployments", &json!({"metadata": {"name": "d"}, "spec": {}}))
        .await;
    assert_status(&r, 422, "Invalid");
    let fields: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().filter_map(|c| c["field"].as_str()).collect();
    assert!(fields.contains(&"spec.selector"), "{}", r.body);

    let r = api.get(&format!("{CMS}?labelSelector=a%20in%20(")).await;
    assert_status(&r, 400, "BadRequest");
    let r = api.get("/api/v1/pods?fieldSelector=spec.color%3Dred").await;
    assert_status(&r, 400, "BadRequest");
    let r = api.get(&format!("{CMS}?limit=1&continue=not-a-token")).await;
    assert_status(&r, 400, "BadRequest");

    // A watch whose timeout the clock cannot represent is served, and the watch cache lives on.
    let huge = api.client.get(s.url(&format!("{CMS}?watch=1&timeoutSeconds={}", u64::MAX))).send().await.unwrap();
    assert_eq!(huge.status().as_u16(), 200);
    drop(huge);
    let keep_rv = keep.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let after = api.json("POST", CMS, &json!({"metadata": {"name": "after-huge"}})).await;
    assert_eq!(after.code, 201, "{}", after.body);
    let r = api.get(&format!("{CMS}?watch=1&timeoutSeconds=1&resourceVersion={keep_rv}")).await;
    assert_eq!(r.code, 200);
    // One event, so the body parses as that event.
    assert_eq!((&r.body["type"], &r.body["object"]["metadata"]["name"]), (&json!("ADDED"), &json!("after-huge")));
    let r = api.call("DELETE", &format!("{CMS}/after-huge"), None, Vec::new(), None).await;
    assert_eq!(r.code, 200, "{}", r.body);

    let big = json!({"metadata": {"name": "big"}, "data": {"x": "a".repeat(3 * 1024 * 1024 + 1)}});
    let r = api.json("POST", CMS, &big).await;
    assert_status(&r, 413, "RequestEntityTooLarge");

    let r = api.json("PUT", CMS, &json!({})).await;
    assert_status(&r, 405, "MethodNotAllowed");
    // Tables exist in JSON and YAML only, as in kube.
    let table = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io";
    let r = api.call("GET", CMS, None, Vec::new(), Some(table)).await;
    assert_status(&r, 406, "NotAcceptable");
    let r = api.call("GET", CMS, None, Vec::new(), Some("text/html")).await;
    assert_status(&r, 406, "NotAcceptable");
    let r = api.call("POST", CMS, Some("text/plain"), b"hello".to_vec(), None).await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = api.call("PATCH", &format!("{CMS}/keep"), Some("text/plain"), b"{}".to_vec(), None).await;
    assert_status(&r, 415, "UnsupportedMediaType");

    let r = api.json("POST", "/api/v1/namespaces/nowhere/configmaps", &json!({"metadata": {"name": "x"}})).await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(r.body["message"], "namespaces \"nowhere\" not found");

    let r = api.json("POST", CMS, &json!({"metadata": {"name": "keep"}})).await;
    assert_status(&r, 409, "AlreadyExists");
    // As kube's storage layer: a plain 500 with no reason.
    let r = api.json("POST", CMS, &json!({"metadata": {"name": "with-rv", "resourceVersion": "5"}})).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "resourceVersion should not be set on objects to be created");
    assert!(r.body.get("reason").is_none(), "{}", r.body);
    let mut stale = keep.body.clone();
    stale["data"]["k"] = "first".into();
    assert_eq!(api.json("PUT", &format!("{CMS}/keep"), &stale).await.code, 200);
    stale["data"]["k"] = "second".into();
    let r = api.json("PUT", &format!("{CMS}/keep"), &stale).await;
    assert_status(&r, 409, "Conflict");

    let r = api.get(&format!("{CMS}/missing")).await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(r.body["details"]["kind"], "configmaps");

    // The server still serves and the stored object is intact.
    let r = api.get(&format!("{CMS}/keep")).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["data"]["k"], "first");
    let list = api.get(CMS).await;
    let names: Vec<&str> =
        list.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["keep"]);
}

#[actix_web::test]
async fn authentication_and_authorization_failures_are_401_and_403() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "good-token,alice,1001,\"dev\"\n").unwrap();
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]);
    let anon = s.client(false);

    let mut r =
        anon.post(s.url(CMS)).insert_header(("Content-Type", "application/json")).send_body("{}").await.unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"system:anonymous\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );

    let mut r = anon.get(s.url(CMS)).insert_header(("Authorization", "Bearer wrong")).send().await.unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 401, "{body}");
    assert_eq!(body["reason"], "Unauthorized");

    let mut r = anon.get(s.url(CMS)).insert_header(("Authorization", "Bearer good-token")).send().await.unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains("User \"alice\" cannot list resource \"configmaps\""), "{body}");

    let r = anon.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "health is public");
}

#[actix_web::test]
async fn unknown_and_duplicate_fields_under_each_field_validation() {
    let s = TestServer::start();
    let api = Api { s: &s, client: s.client(true) };
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let json_body = |name: &str| {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}"}},"spec":{{"replicas":1,"replicas":2,"x":true,
            "selector":{{"matchLabels":{{"app":"w"}}}},"template":{{"metadata":{{"labels":{{"app":"w"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx","image":"busybox"}}]}}}}}}}}"#
        )
    };
    let yaml_body = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  replicas: 2\n  x: true\n  selector:\n    matchLabels: {{app: w}}\n  template:\n    metadata:\n      labels: {{app: w}}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        image: busybox\n"
        )
    };
    // kube's JSON decoder names repeated fields by path; its YAML decoder (go-yaml) names the
    // line of each repeat, in one error before the unknown fields of the converted object.
    let json_errors = r#"duplicate field "spec.replicas", unknown field "spec.x", duplicate field "spec.template.spec.containers[0].image""#;
    let yaml_errors = "yaml: unmarshal errors:\n  line 7: key \"replicas\" already set in map\n  line 18: key \"image\" already set in map, unknown field \"spec.x\"";
    let json_warnings = [
        r#"299 - "duplicate field \"spec.replicas\"""#,
        r#"299 - "unknown field \"spec.x\"""#,
        r#"299 - "duplicate field \"spec.template.spec.containers[0].image\"""#,
    ];
    let yaml_warnings = [
        r#"299 - "line 7: key \"replicas\" already set in map""#,
        r#"299 - "line 18: key \"image\" already set in map""#,
        r#"299 - "unknown field \"spec.x\"""#,
    ];
    for (format, content_type) in [("json", "application/json"), ("yaml", "application/yaml")] {
        let body = |name: &str| if format == "json" { json_body(name) } else { yaml_body(name) };
        let (errors, expected_warnings) =
            if format == "json" { (json_errors, json_warnings) } else { (yaml_errors, yaml_warnings) };
        // Strict: 400, every problem listed in the body's order, nothing stored.
        let name = format!("strict-{format}");
        let r = api
            .call(
                "POST",
                &format!("{deployments}?fieldValidation=Strict"),
                Some(content_type),
                body(&name).into_bytes(),
                None,
            )
            .await;
        assert_status(&r, 400, "BadRequest");
        assert_eq!(
            r.body["message"].as_str().unwrap(),
            format!("Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: {errors}"),
            "{format}"
        );
        assert_eq!(api.get(&format!("{deployments}/{name}")).await.code, 404);

        // Warn: stored (the last duplicate wins), each problem a Warning header.
        let name = format!("warn-{format}");
        let r = api
            .call(
                "POST",
                &format!("{deployments}?fieldValidation=Warn"),
                Some(content_type),
                body(&name).into_bytes(),
                None,
            )
            .await;
        assert_eq!(r.code, 201, "{format}: {}", r.body);
        let warnings: Vec<&str> = r.headers.get_all("warning").filter_map(|v| v.to_str().ok()).collect();
        assert_eq!(warnings, expected_warnings, "{format}");
        assert_eq!(r.body["spec"]["replicas"], 2);
        assert_eq!(r.body["spec"]["template"]["spec"]["containers"][0]["image"], "busybox");

        // Ignore: stored, silently.
        let name = format!("ignore-{format}");
        let r = api
            .call(
                "POST",
                &format!("{deployments}?fieldValidation=Ignore"),
                Some(content_type),
                body(&name).into_bytes(),
                None,
            )
            .await;
        assert_eq!(r.code, 201, "{format}: {}", r.body);
        assert!(r.headers.get("warning").is_none());
    }
}
