//! Generic REST semantics seen through the raw API: server-set metadata, defaults, the status
//! subresource, deletion with finalizers and grace, collections, representations, health and
//! metrics.

use serde_json::{Value, json};
use tests::{Caller, TestServer};

struct Api<'s>(&'s TestServer);

impl<'s> Api<'s> {
    fn new(s: &'s TestServer) -> Self {
        Api(s)
    }

    async fn send(&self, method: &str, path: &str, content_type: &str, body: Option<Value>) -> (u16, Value) {
        let request = self.0.request(Caller::Admin, method, path).header("Content-Type", content_type);
        let answer = request.json_opt(body.as_ref()).send().await;
        (answer.code, answer.body)
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, "application/json", Some(body)).await
    }

    async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("PUT", path, "application/json", Some(body)).await
    }

    async fn merge(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("PATCH", path, "application/merge-patch+json", Some(body)).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, "application/json", None).await
    }

    async fn delete(&self, path: &str) -> (u16, Value) {
        self.send("DELETE", path, "application/json", None).await
    }

    async fn text(&self, path: &str, accept: &str) -> (u16, String) {
        let answer = self.0.request(Caller::Admin, "GET", path).header("Accept", accept).send().await;
        (answer.code, answer.text())
    }
}

const PODS: &str = "/api/v1/namespaces/default/pods";

#[actix_web::test]
async fn pods_get_server_metadata_defaults_and_status_subresource() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let (code, pod) = api
        .post(
            PODS,
            json!({"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
    assert_eq!(code, 201, "{pod}");
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert_eq!(pod["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(pod["metadata"]["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["qosClass"], "BestEffort");
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always", "untagged image pulls always");
    assert_eq!(pod["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");

    // A write to the main resource ignores status; a write to /status ignores spec.
    let path = format!("{PODS}/{name}");
    let (code, p) = api.merge(&path, json!({"status": {"phase": "Running"}, "metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(p["metadata"]["labels"]["a"], "b");
    let (code, p) = api
        .merge(
            &format!("{path}/status"),
            json!({"status": {"phase": "Running", "podIP": "10.0.0.7"}, "spec": {"nodeName": "n1"}}),
        )
        .await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["status"]["phase"], "Running");
    assert!(p["spec"].get("nodeName").is_none(), "status writes leave spec alone: {p}");
    let (_, st) = api.get(&format!("{path}/status")).await;
    assert_eq!(st["status"]["podIP"], "10.0.0.7");

    // Field selectors kubectl uses on pods.
    let (_, list) = api.get("/api/v1/pods?fieldSelector=status.phase%3DRunning").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["kind"], "PodList");
    assert!(list["items"][0].get("kind").is_none(), "list items carry no type meta, as kube's");
    let (_, list) = api.get("/api/v1/pods?fieldSelector=status.phase!%3DRunning").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0);

    // Pod table with kube's columns.
    let out = s.kubectl_ok(&["get", "pods", "-o", "wide"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(&header[..6], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"], "{out}");
    assert!(out.contains("Running") && out.contains("10.0.0.7"), "{out}");
}

#[actix_web::test]
async fn finalizers_hold_deletion_until_the_last_is_removed() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, _) = api.post(cms, json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})).await;
    assert_eq!(code, 201);
    let (code, obj) = api.delete(&format!("{cms}/held")).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["metadata"]["name"], "held", "the object, still present, is returned");
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    let (code, still) = api.get(&format!("{cms}/held")).await;
    assert_eq!(code, 200);
    assert!(still["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = api.merge(&format!("{cms}/held"), json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(code, 200);
    let (code, gone) = api.get(&format!("{cms}/held")).await;
    assert_eq!(code, 404, "{gone}");

    // Delete without finalizers answers with kube's Success Status for configmaps.
    api.post(cms, json!({"metadata": {"name": "plain"}})).await;
    let (code, status) = api.delete(&format!("{cms}/plain")).await;
    assert_eq!(code, 200);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "plain");

    // Preconditions.
    let (_, c) = api.post(cms, json!({"metadata": {"name": "pre"}})).await;
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}});
    let (code, err) = api.send("DELETE", &format!("{cms}/pre"), "application/json", Some(body)).await;
    assert_eq!(code, 409, "{err}");
    assert_eq!(err["reason"], "Conflict");
    let uid = c["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        err["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"pre\": Precondition failed: UID in precondition: not-the-uid, UID in object meta: {uid}"
        )
    );
    let rv = c["metadata"]["resourceVersion"].as_str().unwrap();
    let body = json!({"preconditions": {"uid": uid, "resourceVersion": "1"}});
    let (code, err) = api.send("DELETE", &format!("{cms}/pre"), "application/json", Some(body)).await;
    assert_eq!(code, 409, "{err}");
    assert_eq!(
        err["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"pre\": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: {rv}"
        )
    );
    let body = json!({"preconditions": {"uid": c["metadata"]["uid"]}});
    let (code, _) = api.send("DELETE", &format!("{cms}/pre"), "application/json", Some(body)).await;
    assert_eq!(code, 200);

    // Graceful deletion of a pod bound to a node keeps it until confirmed with grace 0.
    let pod = json!({"metadata": {"name": "bound"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:1"}]}});
    api.post(PODS, pod).await;
    let (code, p) = api.delete(&format!("{PODS}/bound")).await;
    assert_eq!(code, 200);
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30, "{p}");
    assert_eq!(api.get(&format!("{PODS}/bound")).await.0, 200);
    let (code, _) = api.delete(&format!("{PODS}/bound?gracePeriodSeconds=0")).await;
    assert_eq!(code, 200);
    assert_eq!(api.get(&format!("{PODS}/bound")).await.0, 404);
}

#[actix_web::test]
async fn deletecollection_yaml_services_and_operational_endpoints() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    for (n, tier) in [("a", "x"), ("b", "x"), ("c", "y")] {
        api.post(cms, json!({"metadata": {"name": n, "labels": {"tier": tier}}})).await;
    }
    let (code, deleted) = api.delete(&format!("{cms}?labelSelector=tier%3Dx")).await;
    assert_eq!(code, 200, "{deleted}");
    assert_eq!(deleted["kind"], "ConfigMapList");
    assert_eq!(deleted["items"].as_array().unwrap().len(), 2);
    let (_, left) = api.get(cms).await;
    let names: Vec<&str> =
        left["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["c"]);

    let (code, yaml) = api.text(&format!("{cms}/c"), "application/yaml").await;
    assert_eq!(code, 200);
    let doc: Value = serde_yaml_ng::from_str(&yaml).unwrap();
    assert_eq!(doc["metadata"]["name"], "c");
    assert_eq!(doc["kind"], "ConfigMap");

    let svc = json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let (code, svc) = api.post("/api/v1/namespaces/default/services", svc).await;
    assert_eq!(code, 201, "{svc}");
    let ip = svc["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with("10.96.") && ip != "10.96.0.1", "{ip}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    let out = s.kubectl_ok(&["get", "svc"]);
    assert!(
        out.lines().next().unwrap().split_whitespace().eq([
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]),
        "{out}"
    );
    assert!(out.contains("kubernetes") && out.contains("10.96.0.1") && out.contains("80/TCP"), "{out}");

    let (code, ready) = api.text("/readyz?verbose", "*/*").await;
    assert_eq!(code, 200);
    assert!(
        ready.contains("[+]ping ok") && ready.contains("[+]etcd ok") && ready.ends_with("readyz check passed\n"),
        "{ready}"
    );
    assert_eq!(api.text("/livez", "*/*").await, (200, "ok".to_string()));
    assert_eq!(api.text("/healthz/etcd", "*/*").await, (200, "ok".to_string()));

    let (code, metrics) = api.text("/metrics", "text/plain").await;
    assert_eq!(code, 200);
    for needle in [
        "apiserver_request_total{",
        "apiserver_request_duration_seconds_bucket{",
        "apiserver_current_inflight_requests{",
        "apiserver_stage_mailbox_depth{",
        "stage=\"cacher\"",
        "etcd_request_duration_seconds_bucket{",
        "etcd_requests_total{",
        "apiserver_storage_objects{resource=\"configmaps\"}",
        "apiserver_axis_health{axis=\"storage\"}",
        "apiserver_watch_cache_window_oldest_event_timestamp_seconds{resource=\"configmaps\"}",
    ] {
        assert!(metrics.contains(needle), "/metrics lacks {needle}");
    }
    assert!(
        metrics.lines().any(|l| l.starts_with("apiserver_request_total{")
            && l.contains("verb=\"DELETECOLLECTION\"")
            && l.contains("code=\"200\"")
            && l.contains("resource=\"configmaps\"")),
        "request metrics are labelled as kube's"
    );
}

#[actix_web::test]
async fn events_are_served_by_both_groups_from_one_store() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let ev = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "i1",
        "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "scaled up",
        "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
    });
    let (code, created) = api.post("/apis/events.k8s.io/v1/namespaces/default/events", ev).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "scaled up");
    let (code, core) = api.get("/api/v1/namespaces/default/events/e1").await;
    assert_eq!(code, 200);
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "scaled up");
    assert_eq!(core["involvedObject"]["name"], "web");
    let (_, list) = api.get("/api/v1/events?fieldSelector=involvedObject.name%3Dweb").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
}

#[actix_web::test]
async fn rbac_objects_and_leases_are_stored() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let role = json!({"metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]});
    let (code, r) = api.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role).await;
    assert_eq!(code, 201, "{r}");
    let binding = json!({
        "metadata": {"name": "read"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice"}],
    });
    let (code, b) = api.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding).await;
    assert_eq!(code, 201, "{b}");
    assert_eq!(b["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io", "subject apiGroup defaulted");
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}});
    let (code, l) = api.put("/apis/coordination.k8s.io/v1/namespaces/default/leases/leader", lease).await;
    assert_eq!(code, 201, "leases may be created by PUT, as leader election does: {l}");
    let out = s.kubectl_ok(&["get", "leases"]);
    assert!(out.contains("leader") && out.contains("me"), "{out}");
}

#[actix_web::test]
async fn continue_token_after_compaction_is_410_with_a_fresh_token() {
    let s = TestServer::start();
    let api = Api::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    for n in ["a", "b", "c"] {
        api.post(cms, json!({"metadata": {"name": n}})).await;
    }
    let (_, page) = api.get(&format!("{cms}?limit=1")).await;
    assert_eq!(page["items"][0]["metadata"]["name"], "a");
    assert_eq!(page["metadata"]["remainingItemCount"], 2);
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    // A write after the first page, then compaction past the page's revision.
    api.post(cms, json!({"metadata": {"name": "d"}})).await;
    let admin = awc::Client::default();
    let r = admin.post(s.admin_url("/compact")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);

    let (code, status) = api.get(&format!("{cms}?limit=1&continue={token}")).await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
    assert!(status["message"].as_str().unwrap().starts_with("The provided continue parameter is too old"), "{status}");
    let fresh = status["metadata"]["continue"].as_str().expect("a fresh continue token").to_string();
    let (code, rest) = api.get(&format!("{cms}?limit=10&continue={fresh}")).await;
    assert_eq!(code, 200, "{rest}");
    let names: Vec<&str> =
        rest["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["b", "c", "d"], "the fresh token continues after the last item, at the latest revision");
}

/// A merge patch that names another version of the kind loses none of the object's fields: an
/// `autoscaling/v2` HorizontalPodAutoscaler patched with `"apiVersion": "autoscaling/v1"` (whose
/// message has no metrics) keeps its memory metric, whatever the patch is answered.
#[actix_web::test]
async fn a_patch_naming_another_version_loses_no_field() {
    let s = TestServer::start();
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
            "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {"name": "memory",
                "target": {"type": "Utilization", "averageUtilization": 70}}}]}});
    let path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let created = s.admin_call("POST", path, Some(&hpa)).await;
    assert_eq!(created.code, 201, "{}", created.text());
    let patch = br#"{"apiVersion": "autoscaling/v1", "metadata": {"labels": {"a": "b"}}}"#.to_vec();
    let patched = s
        .request(Caller::Admin, "PATCH", &format!("{path}/web"))
        .body_with_type(patch, "application/merge-patch+json")
        .send()
        .await;
    let read = s.admin_call("GET", &format!("{path}/web"), None).await;
    assert_eq!(
        read.body["spec"]["metrics"],
        hpa["spec"]["metrics"],
        "the patch got {}: {}",
        patched.code,
        patched.text()
    );
}
