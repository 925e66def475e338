//! kubectl 1.30 with only the admin kubeconfig, as a user would drive it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::{TestServer, kubectl_bin};

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
        command: ["sleep", "infinity"]
"#;

#[test]
fn version_and_api_resources() {
    let s = TestServer::start();
    let v = json(&s.kubectl_ok(&["version", "-o", "json"]));
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.30.0");
    assert_eq!(v["serverVersion"]["minor"], "30");
    let resources = s.kubectl_ok(&["api-resources"]);
    for needle in ["configmaps", "deployments", "apps/v1", "leases", "coordination.k8s.io/v1", "cm ", "deploy "] {
        assert!(resources.contains(needle), "api-resources lacks {needle}:\n{resources}");
    }
    let namespaced = s.kubectl_ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "namespaces"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "pods"), "{namespaced}");
}

#[test]
fn namespace_configmap_and_tables() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team-a",
        "--from-literal=mode=fast",
        "--from-literal=size=3",
    ]);
    let yaml = s.kubectl_ok(&["get", "configmap", "settings", "-n", "team-a", "-o", "yaml"]);
    for needle in ["mode: fast", "size: \"3\"", "resourceVersion:", "uid:", "creationTimestamp:"] {
        assert!(yaml.contains(needle), "missing {needle} in\n{yaml}");
    }
    let table = s.kubectl_ok(&["get", "configmaps", "-n", "team-a"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().find(|l| l.starts_with("settings")).expect("row").split_whitespace().collect();
    assert_eq!(&row[..2], ["settings", "2"]);
    let ns = s.kubectl_ok(&["get", "namespace", "team-a"]);
    assert!(ns.lines().next().unwrap().split_whitespace().eq(["NAME", "STATUS", "AGE"]), "{ns}");
    assert!(ns.contains("Active"), "{ns}");
    let ns_all = s.kubectl_ok(&["get", "ns", "-o", "name"]);
    for n in ["namespace/default", "namespace/kube-system", "namespace/team-a"] {
        assert!(ns_all.lines().any(|l| l == n), "{ns_all}");
    }
}

fn deployment(s: &TestServer) -> Value {
    json(&s.kubectl_ok(&["get", "deployment", "web", "-n", "team-a", "-o", "json"]))
}

fn images(d: &Value) -> Vec<(String, String)> {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["image"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn apply_reapply_set_image_patch_scale_delete() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    let out = s.kubectl_stdin(&["apply", "-f", "-"], DEPLOYMENT);
    tests::assert_success("kubectl apply", &out);
    let d = deployment(&s);
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent", "defaults applied");
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");

    // Re-apply with one image changed: the change lands, the other container is untouched.
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &DEPLOYMENT.replace("nginx:1.25", "nginx:1.26"));
    let stdout = tests::assert_success("kubectl re-apply", &out);
    assert!(stdout.contains("configured"), "{stdout}");
    let d = deployment(&s);
    assert_eq!(d["metadata"]["generation"], 2);
    assert_eq!(images(&d), [("app".into(), "nginx:1.26".into()), ("sidecar".into(), "busybox:1.36".into())]);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][1]["command"][1], "infinity");

    // Re-applying the same manifest changes nothing.
    let rv = d["metadata"]["resourceVersion"].clone();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &DEPLOYMENT.replace("nginx:1.25", "nginx:1.26"));
    assert!(tests::assert_success("kubectl apply unchanged", &out).contains("unchanged"));
    assert_eq!(deployment(&s)["metadata"]["resourceVersion"], rv);

    // set image merges containers by name.
    s.kubectl_ok(&["set", "image", "deployment/web", "-n", "team-a", "sidecar=busybox:1.37"]);
    let d = deployment(&s);
    assert_eq!(images(&d), [("app".into(), "nginx:1.26".into()), ("sidecar".into(), "busybox:1.37".into())]);
    assert_eq!(d["metadata"]["generation"], 3);

    s.kubectl_ok(&["label", "deployment", "web", "-n", "team-a", "tier=frontend"]);
    assert_eq!(deployment(&s)["metadata"]["generation"], 3);
    s.kubectl_ok(&["annotate", "deployment", "web", "-n", "team-a", "owner=team-a"]);
    let d = deployment(&s);
    assert_eq!(d["metadata"]["labels"]["tier"], "frontend");
    assert_eq!(d["metadata"]["annotations"]["owner"], "team-a");
    // Labels leave the generation alone; a Deployment's annotations bump it, as in kube.
    assert_eq!(d["metadata"]["generation"], 4);

    // The three patch types.
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "team-a",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"1"}]}]}}}}"#,
    ]);
    let d = deployment(&s);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"], "A");
    assert_eq!(images(&d).len(), 2, "strategic patch merged by name");
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "team-a",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"minReadySeconds":5}}"#,
    ]);
    assert_eq!(deployment(&s)["spec"]["minReadySeconds"], 5);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "team-a",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/revisionHistoryLimit","value":3}]"#,
    ]);
    assert_eq!(deployment(&s)["spec"]["revisionHistoryLimit"], 3);

    s.kubectl_ok(&["scale", "deployment", "web", "-n", "team-a", "--replicas=5"]);
    assert_eq!(deployment(&s)["spec"]["replicas"], 5);
    let scale = json(&s.kubectl_ok(&["get", "--raw", "/apis/apps/v1/namespaces/team-a/deployments/web/scale"]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"]["selector"], "app=web");

    let table = s.kubectl_ok(&["get", "deployments", "-n", "team-a"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("web"), "{table}");

    s.kubectl_ok(&["delete", "deployment", "web", "-n", "team-a"]);
    let out = s.kubectl(&["get", "deployment", "web", "-n", "team-a"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NotFound") && err.contains("deployments.apps \"web\" not found"), "{err}");
}

#[test]
fn get_watch_prints_live_changes() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "first", "--from-literal=a=1"]);
    let mut watch = Command::new(kubectl_bin())
        .args(["get", "configmaps", "-w", "--output-watch-events"])
        .env("KUBECONFIG", &s.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl get -w");
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let mut expect = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                // Table rows: EVENT NAME DATA AGE.
                let fields: Vec<String> = line.split_whitespace().take(2).map(String::from).collect();
                seen.push(fields.join(" "));
                if seen.last().unwrap() == want {
                    return;
                }
            }
        }
        panic!("kubectl get -w never printed {want:?}; it printed {seen:?}");
    };
    expect("ADDED first");
    s.kubectl_ok(&["create", "configmap", "second", "--from-literal=b=2"]);
    expect("ADDED second");
    s.kubectl_ok(&["label", "configmap", "second", "x=y"]);
    expect("MODIFIED second");
    s.kubectl_ok(&["delete", "configmap", "first"]);
    expect("DELETED first");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn explain_and_strict_validation() {
    let s = TestServer::start();
    let explain = s.kubectl_ok(&["explain", "deployment.spec.replicas"]);
    assert!(explain.contains("KIND:") && explain.contains("Deployment"), "{explain}");
    assert!(explain.contains("replicas") && explain.contains("<integer>"), "{explain}");
    let bad = DEPLOYMENT
        .replace("  replicas: 2\n", "  replicas: 2\n  replicaz: 3\n")
        .replace("namespace: team-a", "namespace: default");
    let out = s.kubectl_stdin(&["create", "-f", "-"], &bad);
    assert!(!out.status.success(), "strict validation should reject an unknown field");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown field \"spec.replicaz\""), "{err}");
    let out = s.kubectl(&["get", "deployment", "web"]);
    assert!(!out.status.success(), "nothing was stored");
}
