//! The audit log (`--audit-policy-file`, `--audit-log-path`): audit.k8s.io/v1 Events as JSON
//! lines, at the level and stages the policy's first matching rule gives, tied to responses
//! by their `Audit-Id`, and rotated at `--audit-log-maxsize` keeping `--audit-log-maxbackup`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tests::{TestServer, poll_until};

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/version", "/readyz*", "/livez*"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Request
    omitStages: ["RequestReceived"]
    resources:
      - group: ""
        resources: ["secrets"]
  - level: Metadata
"#;

const TOKENS: &str = "alice-token,alice,1001\n";

/// A server auditing to `<dir>/audit.log` with [`POLICY`] and `extra` flags.
fn server(extra: &[&str]) -> (TestServer, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let log = dir.path().join("logs").join("audit.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut flags = vec![
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
        "--token-auth-file",
        tokens.to_str().unwrap(),
    ];
    flags.extend_from_slice(extra);
    let s = TestServer::start_with(&flags);
    (s, dir, log)
}

/// The complete lines of an audit log file, each an Event.
fn events_in(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: a line that is not JSON ({e}): {l}", path.display()))
        })
        .collect()
}

/// The log's events once `done` holds of them (within 10 s).
fn wait_for(log: &Path, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    poll_until(Duration::from_secs(10), || {
        let events = events_in(log);
        done(&events).then_some(events)
    })
    .unwrap_or_else(|| {
        panic!(
            "{what}: the audit log has\n{}",
            events_in(log).iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
        )
    })
}

fn of<'a>(events: &'a [Value], audit_id: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["auditID"] == audit_id).collect()
}

fn stages(events: &[&Value]) -> Vec<String> {
    events.iter().map(|e| e["stage"].as_str().unwrap_or("?").to_string()).collect()
}

fn completed(events: &[Value], audit_id: &str) -> bool {
    events.iter().any(|e| e["auditID"] == audit_id && e["stage"] == "ResponseComplete")
}

/// `method path` as the admin: the status, the `Audit-Id` header and the JSON answer.
async fn admin(s: &TestServer, method: &str, path: &str, body: Option<Value>) -> (u16, String, Value) {
    let answer = s.admin_call(method, path, body.as_ref()).await;
    let audit_id = answer.header("Audit-Id").unwrap_or_default().to_string();
    (answer.code, audit_id, answer.body)
}

#[actix_web::test]
async fn audit_log_records_each_request_at_the_level_and_stages_its_policy_rule_gives() {
    let (s, _dir, log) = server(&[]);
    // Excluded by the first rule.
    let (code, _, _) = admin(&s, "GET", "/version", None).await;
    assert_eq!(code, 200);
    let (code, _, _) = admin(&s, "GET", "/healthz", None).await;
    assert_eq!(code, 200);

    let cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "audited"}, "data": {"color": "blue"}});
    let (code, cm_id, created) = admin(&s, "POST", "/api/v1/namespaces/default/configmaps", Some(cm)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(cm_id.len(), 36, "the response carries its Audit-Id: {cm_id:?}");
    let secret =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hush"}, "stringData": {"pw": "s3cret"}});
    let (code, secret_id, _) = admin(&s, "POST", "/api/v1/namespaces/default/secrets", Some(secret)).await;
    assert_eq!(code, 201);
    let (code, pod_id, _) = admin(&s, "GET", "/api/v1/namespaces/default/pods/nope", None).await;
    assert_eq!(code, 404);
    assert!(![&cm_id, &secret_id, &pod_id].iter().any(|id| id.is_empty()), "every response has an Audit-Id");

    let events = wait_for(&log, "the three requests completed", |ev| {
        completed(ev, &cm_id) && completed(ev, &secret_id) && completed(ev, &pod_id)
    });
    for e in &events {
        assert_eq!((&e["kind"], &e["apiVersion"]), (&json!("Event"), &json!("audit.k8s.io/v1")), "{e}");
        let uri = e["requestURI"].as_str().unwrap_or("");
        assert!(
            !uri.starts_with("/version") && !uri.starts_with("/healthz") && !uri.starts_with("/readyz"),
            "level None is not logged: {e}"
        );
    }

    // RequestResponse: both stages; the request's and the response's bodies at the end.
    let cm_events = of(&events, &cm_id);
    assert_eq!(stages(&cm_events), ["RequestReceived", "ResponseComplete"]);
    let (received, complete) = (cm_events[0], cm_events[1]);
    assert_eq!(received.get("responseObject"), None, "{received}");
    assert_eq!(
        received["requestReceivedTimestamp"], complete["requestReceivedTimestamp"],
        "one request, one receipt time"
    );
    for e in [received, complete] {
        assert_eq!(e["level"], "RequestResponse");
        assert_eq!(e["verb"], "create");
        assert_eq!(e["requestURI"], "/api/v1/namespaces/default/configmaps");
        assert_eq!(e["user"]["username"], "kubernetes-admin");
        assert!(e["user"]["groups"].as_array().is_some_and(|g| g.contains(&json!("system:masters"))), "{e}");
        assert!(e["sourceIPs"].as_array().is_some_and(|ips| ips.contains(&json!("127.0.0.1"))), "{e}");
        assert!(e["requestReceivedTimestamp"].is_string() && e["stageTimestamp"].is_string(), "{e}");
    }
    assert_eq!(complete["objectRef"]["resource"], "configmaps");
    assert_eq!(complete["objectRef"]["namespace"], "default");
    assert_eq!(complete["objectRef"]["name"], "audited");
    assert_eq!(complete["objectRef"]["apiVersion"], "v1");
    assert_eq!(complete["objectRef"]["apiGroup"].as_str().unwrap_or(""), "");
    assert_eq!(complete["responseStatus"]["code"], 201);
    assert_eq!(complete["requestObject"]["data"], json!({"color": "blue"}), "{complete}");
    assert_eq!(complete["responseObject"]["kind"], "ConfigMap", "{complete}");
    assert_eq!(complete["responseObject"]["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(complete["annotations"]["authorization.k8s.io/decision"], "allow", "{complete}");
    assert!(complete["annotations"]["authorization.k8s.io/reason"].is_string(), "{complete}");

    // Request, with RequestReceived omitted: the request body but not the response's.
    let secret_events = of(&events, &secret_id);
    assert_eq!(stages(&secret_events), ["ResponseComplete"]);
    let e = secret_events[0];
    assert_eq!(e["level"], "Request");
    assert_eq!((&e["objectRef"]["resource"], &e["objectRef"]["name"]), (&json!("secrets"), &json!("hush")));
    assert_eq!(e["requestObject"]["metadata"]["name"], "hush", "{e}");
    assert_eq!(e.get("responseObject"), None, "{e}");
    assert_eq!(e["responseStatus"]["code"], 201);

    // Metadata: who, what and how it went, no bodies.
    let pod_events = of(&events, &pod_id);
    assert_eq!(stages(&pod_events), ["RequestReceived", "ResponseComplete"]);
    let e = pod_events[1];
    assert_eq!(e["level"], "Metadata");
    assert_eq!(e["verb"], "get");
    assert_eq!((&e["objectRef"]["resource"], &e["objectRef"]["name"]), (&json!("pods"), &json!("nope")));
    assert_eq!(e["responseStatus"]["code"], 404);
    assert_eq!((e.get("requestObject"), e.get("responseObject")), (None, None), "{e}");
}

#[actix_web::test]
async fn forbidden_impersonated_and_watch_requests_are_audited_as_kube_records_them() {
    let (s, _dir, log) = server(&[]);

    // Forbidden: the decision and the 403.
    let (code, _) = s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(code, 403);
    let forbidden = |e: &Value| {
        e["user"]["username"] == "alice" && e["objectRef"]["resource"] == "secrets" && e["stage"] == "ResponseComplete"
    };
    let events = wait_for(&log, "alice's forbidden list", |ev| ev.iter().any(forbidden));
    let e = events.iter().find(|e| forbidden(e)).unwrap();
    assert_eq!(e["verb"], "list");
    assert_eq!(e["responseStatus"]["code"], 403, "{e}");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "forbid", "{e}");
    assert!(e["annotations"]["authorization.k8s.io/reason"].is_string(), "{e}");

    // Impersonation: the admin acts as someone, and both are named.
    let o = s.kubectl(&["--as=someone", "get", "pods"]);
    assert!(!o.status.success(), "someone has no RBAC");
    let impersonated = |e: &Value| {
        e["impersonatedUser"]["username"] == "someone"
            && e["objectRef"]["resource"] == "pods"
            && e["stage"] == "ResponseComplete"
    };
    let events = wait_for(&log, "the impersonated list", |ev| ev.iter().any(impersonated));
    let e = events.iter().find(|e| impersonated(e)).unwrap();
    assert_eq!(e["user"]["username"], "kubernetes-admin", "{e}");
    assert_eq!(e["verb"], "list");
    assert_eq!(e["responseStatus"]["code"], 403, "{e}");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "forbid", "{e}");

    // A watch: ResponseStarted when its stream begins, ResponseComplete when it ends.
    let (code, watch_id, _) =
        admin(&s, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", None).await;
    assert_eq!(code, 200);
    assert!(!watch_id.is_empty());
    let events = wait_for(&log, "the watch completed", |ev| completed(ev, &watch_id));
    let watch = of(&events, &watch_id);
    assert_eq!(stages(&watch), ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
    for e in &watch {
        assert_eq!(e["verb"], "watch", "{e}");
        assert_eq!(e["requestURI"], "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1");
    }
    assert_eq!(watch[1]["responseStatus"]["code"], 200, "{}", watch[1]);

    // A bad token: one event, at ResponseStarted, with no user, as kube's failed-authentication
    // audit records it.
    let (code, _) = s.call_with_token(Some("no-such-token"), "GET", "/api/v1/namespaces/default/pods", None).await;
    assert_eq!(code, 401);
    let unauthenticated = |e: &Value| e["responseStatus"]["code"] == 401 && e["objectRef"]["resource"] == "pods";
    let events = wait_for(&log, "the failed authentication", |ev| ev.iter().any(unauthenticated));
    let failed: Vec<&Value> = events.iter().filter(|e| unauthenticated(e)).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["stage"], "ResponseStarted", "{}", failed[0]);
    assert_eq!(failed[0]["user"], serde_json::json!({}), "{}", failed[0]);
    assert_eq!(failed[0]["responseStatus"]["message"], "Authentication failed, attempted: bearer", "{}", failed[0]);
}

/// Whether `name` is a rotated log as kube names them: `audit-2006-01-02T15-04-05.000.log`.
fn is_backup_name(name: &str) -> bool {
    let Some(stamp) = name.strip_prefix("audit-").and_then(|n| n.strip_suffix(".log")) else {
        return false;
    };
    let shape = "dddd-dd-ddTdd-dd-dd.ddd";
    stamp.len() == shape.len()
        && stamp.chars().zip(shape.chars()).all(|(c, s)| if s == 'd' { c.is_ascii_digit() } else { c == s })
}

#[actix_web::test]
async fn audit_log_rotates_at_maxsize_keeping_maxbackup_timestamped_backups() {
    let (s, _dir, log) = server(&["--audit-log-maxsize", "1", "--audit-log-maxbackup", "2"]);
    let dir = log.parent().unwrap().to_path_buf();
    let payload = "x".repeat(100 * 1024);
    let mut last = String::new();
    for i in 0..20 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("big-{i}")}, "data": {"blob": payload}});
        let (code, id, _) = admin(&s, "POST", "/api/v1/namespaces/default/configmaps", Some(cm)).await;
        assert_eq!(code, 201);
        last = id;
    }
    // The last create reaches the current file; the backups are pruned to two.
    let files = poll_until(Duration::from_secs(15), || {
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        let backups = names.iter().filter(|n| n.as_str() != "audit.log").count();
        (completed(&events_in(&log), &last) && (1..=2).contains(&backups)).then_some(names)
    })
    .unwrap_or_else(|| {
        panic!(
            "audit.log with the last create and 1-2 backups; the directory has {:?}",
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (e.file_name(), e.metadata().unwrap().len())
                })
                .collect::<Vec<_>>()
        )
    });
    assert!(files.contains(&"audit.log".to_string()), "{files:?}");
    for name in files.iter().filter(|n| n.as_str() != "audit.log") {
        assert!(is_backup_name(name), "a backup named audit-<timestamp>.log: {name}");
    }
    for name in &files {
        let path = dir.join(name);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 1 << 20, "{name} is {size} bytes, over --audit-log-maxsize 1 (MiB)");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "{name} ends with a whole line");
        for e in events_in(&path) {
            assert_eq!(e["kind"], "Event", "{name}");
        }
    }
}
