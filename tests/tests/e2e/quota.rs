//! LimitRanges and ResourceQuotas as users meet them: LimitRange defaults appear on new pods
//! with kube's annotation, pods outside a LimitRange's bounds are refused in kube's words, a
//! quota admits exactly its limit however many clients race for it, its status counts what is
//! stored, and deleting objects gives quota back.

use std::time::Duration;

use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out, poll_until};

/// `kubectl create -n ns -f -` of `object`: (succeeded, stdout, stderr).
fn create(s: &TestServer, ns: &str, object: &Value) -> (bool, String, String) {
    out(&s.kubectl_stdin(&["create", "-n", ns, "-f", "-"], &object.to_string()))
}

/// POST of `object` to `path` as the admin: the status code and the body.
async fn post(s: &TestServer, path: &str, object: &Value) -> (u16, Value) {
    let answer = s.admin_call("POST", path, Some(object)).await;
    (answer.code, answer.body)
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

/// The quota's `status.used[resource]`, once it has one.
fn used(s: &TestServer, ns: &str, quota: &str, resource: &str) -> Option<String> {
    let path = format!("jsonpath={{.status.used.{}}}", resource.replace('.', "\\."));
    let o = s.kubectl(&["get", "resourcequota", quota, "-n", ns, "-o", &path]);
    let value = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !value.is_empty()).then_some(value)
}

/// Waits until the quota's usage of `resource` reads `want`.
fn wait_used(s: &TestServer, ns: &str, quota: &str, resource: &str, want: &str) {
    let seen = poll_until(Duration::from_secs(20), || used(s, ns, quota, resource).filter(|u| u == want));
    assert!(seen.is_some(), "{quota} never counted {resource}={want}; last: {:?}", used(s, ns, quota, resource));
}

#[actix_web::test]
async fn limit_range_defaults_appear_on_new_pods_and_its_bounds_refuse_with_kubes_message() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "limited"]);
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"},
        "spec": {"limits": [{"type": "Container",
            "min": {"cpu": "100m"}, "max": {"cpu": "1", "memory": "1Gi"},
            "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}]}});
    let (ok, _, stderr) = create(&s, "limited", &range);
    assert!(ok, "{stderr}");

    let plain = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let (ok, _, stderr) = create(&s, "limited", &plain);
    assert!(ok, "{stderr}");
    let pod: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "pod", "plain", "-n", "limited", "-o", "json"])).unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}})
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );

    // Too little cpu asked for, too much memory allowed: both said at once, 403.
    let greedy = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "greedy"},
        "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {
            "requests": {"cpu": "50m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}}]}});
    let message = "pods \"greedy\" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, \
                   maximum memory usage per Container is 1Gi, but limit is 2Gi]";
    let (status, body) = post(&s, "/api/v1/namespaces/limited/pods", &greedy).await;
    assert_eq!((status, body["reason"].as_str()), (403, Some("Forbidden")), "{body}");
    assert_eq!(body["message"], message);
    let (ok, _, stderr) = create(&s, "limited", &greedy);
    assert!(!ok);
    assert_eq!(stderr.trim(), format!("Error from server (Forbidden): error when creating \"STDIN\": {message}"));
    assert!(!s.kubectl(&["get", "pod", "greedy", "-n", "limited"]).status.success(), "nothing is stored");
}

#[actix_web::test]
async fn a_quota_admits_exactly_its_limit_under_racing_creators_and_deletes_give_it_back() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "quota", "cms", "--hard=configmaps=5", "-n", "team"]);
    wait_used(&s, "team", "cms", "configmaps", "0");

    // 16 clients race for 5 ConfigMaps.
    let creators = (0..16).map(|i| {
        let s = &s;
        async move { post(s, "/api/v1/namespaces/team/configmaps", &configmap(&format!("cm-{i}"))).await }
    });
    let answers = futures_util::future::join_all(creators).await;
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    let refused: Vec<&Value> = answers.iter().filter(|(status, _)| *status == 403).map(|(_, body)| body).collect();
    assert_eq!((created, refused.len()), (5, 11), "{answers:?}");
    for body in refused {
        let name = body["details"]["name"].as_str().unwrap_or_default();
        assert_eq!(
            body["message"].as_str().unwrap_or_default(),
            format!(
                "configmaps \"{name}\" is forbidden: exceeded quota: cms, requested: configmaps=1, used: configmaps=5, \
                 limited: configmaps=5"
            )
        );
    }
    assert_eq!(used(&s, "team", "cms", "configmaps").as_deref(), Some("5"));
    let names = s.kubectl_ok(&["get", "configmaps", "-n", "team", "-o", "name"]);
    assert_eq!(names.lines().count(), 5, "{names}");
    let table = s.kubectl_ok(&["get", "quota", "cms", "-n", "team", "--no-headers"]);
    assert!(table.contains("configmaps: 5/5"), "{table}");

    // Deleting two gives two back, once the controller has recounted.
    let stored: Vec<&str> = names.lines().map(|l| l.trim_start_matches("configmap/")).collect();
    s.kubectl_ok(&["delete", "configmap", stored[0], stored[1], "-n", "team"]);
    wait_used(&s, "team", "cms", "configmaps", "3");
    // A dry run is checked but not charged.
    s.kubectl_ok(&["create", "configmap", "trial", "-n", "team", "--dry-run=server"]);
    assert_eq!(used(&s, "team", "cms", "configmaps").as_deref(), Some("3"));
    for name in ["again-1", "again-2"] {
        let (status, body) = post(&s, "/api/v1/namespaces/team/configmaps", &configmap(name)).await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = post(&s, "/api/v1/namespaces/team/configmaps", &configmap("one-too-many")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(used(&s, "team", "cms", "configmaps").as_deref(), Some("5"));
}

#[actix_web::test]
async fn pods_are_charged_their_compute_and_an_uncounted_quota_refuses_until_counted() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "compute"]);
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
        "spec": {"hard": {"pods": "2", "requests.cpu": "1", "limits.memory": "1Gi"}}});
    let (ok, _, stderr) = create(&s, "compute", &quota);
    assert!(ok, "{stderr}");
    wait_used(&s, "compute", "compute", "pods", "0");
    let pod = |name: &str, cpu: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [{
            "name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}, "limits": {"memory": "256Mi"}}}]}})
    };
    let (status, body) = post(&s, "/api/v1/namespaces/compute/pods", &pod("small", "600m")).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(&s, "/api/v1/namespaces/compute/pods", &pod("large", "500m")).await;
    assert_eq!(
        (status, body["message"].as_str().unwrap_or_default()),
        (
            403,
            "pods \"large\" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, \
         limited: requests.cpu=1"
        )
    );
    let bare = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let (status, body) = post(&s, "/api/v1/namespaces/compute/pods", &bare).await;
    assert_eq!(
        (status, body["message"].as_str().unwrap_or_default()),
        (
            403,
            "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app"
        )
    );
    assert_eq!(used(&s, "compute", "compute", "requests.cpu").as_deref(), Some("600m"));
    assert_eq!(used(&s, "compute", "compute", "limits.memory").as_deref(), Some("256Mi"));

    // Without the controller, nothing counts a quota's usage: what it covers waits.
    let s = TestServer::start_with(&["--enable-resourcequota-controller=false"]);
    s.kubectl_ok(&["create", "namespace", "uncounted"]);
    s.kubectl_ok(&["create", "quota", "few", "--hard=configmaps=2,count/secrets=1", "-n", "uncounted"]);
    // A consistent read: the cache admission reads quotas from has caught up with the create.
    s.kubectl_ok(&["get", "quota", "few", "-n", "uncounted"]);
    let (status, body) = post(&s, "/api/v1/namespaces/uncounted/configmaps", &configmap("waits")).await;
    assert_eq!(
        (status, body["message"].as_str().unwrap_or_default()),
        (403, "configmaps \"waits\" is forbidden: status unknown for quota: few, resources: configmaps")
    );
    // What the quota does not limit is not held up.
    let (status, body) = post(
        &s,
        "/api/v1/namespaces/uncounted/services",
        &json!({"metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

#[actix_web::test]
async fn limited_resources_from_the_admission_configuration_need_a_covering_quota() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("quota.yaml"),
        "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n\
         - resource: pods\n  matchContains: [cpu]\n",
    )
    .unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  path: quota.yaml\n",
    )
    .unwrap();
    let s = TestServer::start_with(&["--admission-control-config-file", file.to_str().unwrap()]);
    s.kubectl_ok(&["create", "namespace", "metered"]);
    let pod = |name: &str, requests: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": requests}}]}})
    };
    let (ok, _, stderr) = create(&s, "metered", &pod("hungry", json!({"cpu": "100m"})));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"hungry\" is forbidden: insufficient \
         quota to consume: cpu,requests.cpu"
    );
    // Consuming no cpu is not limited.
    let (ok, _, stderr) = create(&s, "metered", &pod("frugal", json!({"memory": "64Mi"})));
    assert!(ok, "{stderr}");
    // A quota limiting both names covers it.
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cpu"},
        "spec": {"hard": {"cpu": "1", "requests.cpu": "1"}}});
    let (ok, _, stderr) = create(&s, "metered", &quota);
    assert!(ok, "{stderr}");
    let covered = poll_until(Duration::from_secs(20), || {
        create(&s, "metered", &pod("hungry", json!({"cpu": "100m"}))).0.then_some(())
    });
    assert!(covered.is_some(), "the pod is admitted once the quota is counted");
}
