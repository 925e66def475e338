//! RBAC from the cache: bindings taking effect and ceasing to, kube's 403s, and the review APIs
//! behind `kubectl auth can-i` and `kubectl auth whoami`.

use std::time::Duration;

use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out, within};

use crate::kinds::call;

const TOKENS: &str = "alice-token,alice,1001\nbob-token,bob,1002,\"devs\"\n";

fn server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    (TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]), dir)
}

#[actix_web::test]
async fn role_bindings_take_effect_within_a_second_and_so_does_their_removal() {
    let (s, _dir) = server();
    let alice = |args: &[&str]| out(&s.kubectl_with_token("alice-token", args));
    let (ok, _, err) = alice(&["get", "configmaps"]);
    assert!(!ok);
    assert!(
        err.contains("configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );

    s.kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-cm", "--role=cm-reader", "--user=alice"]);
    let took = within(Duration::from_secs(1), || alice(&["get", "configmaps"]).0);
    assert!(took.is_some(), "the binding took effect within a second");
    let (ok, _, err) = alice(&["get", "configmaps", "-n", "kube-system"]);
    assert!(
        !ok && err.contains("in the namespace \"kube-system\""),
        "a RoleBinding grants in its namespace only: {err}"
    );
    let (ok, _, _) = alice(&["delete", "configmap", "kube-root-ca.crt"]);
    assert!(!ok, "the role does not grant delete");

    s.kubectl_ok(&["delete", "rolebinding", "alice-cm"]);
    assert!(
        within(Duration::from_secs(1), || !alice(&["get", "configmaps"]).0).is_some(),
        "removal took effect within a second"
    );

    // A binding to a role that does not exist: the 403 says so.
    s.kubectl_ok(&["create", "rolebinding", "dangling", "--role=nope", "--user=alice"]);
    assert!(
        within(Duration::from_secs(1), || {
            alice(&["get", "configmaps"]).2.contains(": RBAC: role.rbac.authorization.k8s.io \"nope\" not found")
        })
        .is_some(),
        "{}",
        alice(&["get", "configmaps"]).2
    );

    // A group binding to a ClusterRole applies in every namespace.
    s.kubectl_ok(&["create", "clusterrole", "pod-reader", "--verb=get,list,watch", "--resource=pods"]);
    s.kubectl_ok(&["create", "clusterrolebinding", "devs-pods", "--clusterrole=pod-reader", "--group=devs"]);
    let bob = |args: &[&str]| out(&s.kubectl_with_token("bob-token", args));
    assert!(within(Duration::from_secs(1), || bob(&["get", "pods", "-A"]).0).is_some());
    assert!(!bob(&["get", "secrets"]).0);
}

#[actix_web::test]
async fn kubectl_auth_can_i_and_whoami_answer_from_the_review_apis() {
    let (s, _dir) = server();
    let alice = |args: &[&str]| out(&s.kubectl_with_token("alice-token", args));
    let (ok, stdout, _) = alice(&["auth", "can-i", "create", "deployments.apps"]);
    assert_eq!((ok, stdout.trim()), (false, "no"));

    s.kubectl_ok(&["create", "role", "deployer", "--verb=create,get", "--resource=deployments.apps"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-deploy", "--role=deployer", "--user=alice"]);
    assert!(within(Duration::from_secs(1), || alice(&["auth", "can-i", "create", "deployments.apps"]).0).is_some());
    let (ok, stdout, _) = alice(&["auth", "can-i", "create", "deployments.apps", "-n", "kube-system"]);
    assert_eq!((ok, stdout.trim()), (false, "no"));

    // --list: the rules that apply in the namespace, with what every user gets.
    let (ok, stdout, err) = alice(&["auth", "can-i", "--list"]);
    assert!(ok, "{err}");
    let rows: Vec<String> = stdout.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(rows[0], "Resources Non-Resource URLs Resource Names Verbs");
    assert!(rows.iter().any(|r| r == "deployments.apps [] [] [create get]"), "{stdout}");
    assert!(stdout.contains("selfsubjectaccessreviews.authorization.k8s.io"), "{stdout}");
    assert!(stdout.contains("[/version]"), "{stdout}");

    let (ok, stdout, err) = alice(&["auth", "whoami"]);
    assert!(ok, "{err}");
    let lines: Vec<String> = stdout.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(lines, ["ATTRIBUTE VALUE", "Username alice", "UID 1001", "Groups [system:authenticated]"]);

    // The admin asks about alice: SubjectAccessReview, with kube's reason.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"namespace": "default", "verb": "create", "group": "apps", "resource": "deployments"}}});
    let (code, review) =
        call(&s, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", Some(sar)).await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"alice-deploy/default\" of Role \"deployer\" to User \"alice\""})
    );
    let bad = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"resourceAttributes": {"verb": "get"}}});
    let (code, st) =
        call(&s, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", Some(bad)).await;
    assert_eq!(
        (code, st["message"].as_str().unwrap_or("")),
        (
            422,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
        )
    );
    // A namespaced one must ask about its own namespace.
    let local = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"namespace": "kube-system", "verb": "get", "resource": "pods"}}});
    let (code, st) = call(
        &s,
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        "application/json",
        Some(local),
    )
    .await;
    assert_eq!(
        (code, st["message"].as_str().unwrap_or("")),
        (400, "spec.resourceAttributes.namespace must match namespace: default")
    );

    // TokenReview: whose token is this?
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "alice-token"}});
    let (code, review) =
        call(&s, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json", Some(tr)).await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(review["status"]["user"]["username"], "alice");
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "forged"}});
    let (_, review) =
        call(&s, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json", Some(tr)).await;
    assert_eq!(review["status"].get("authenticated"), None::<&Value>);
}

#[actix_web::test]
async fn anonymous_requests_see_version_and_health_only() {
    let (s, _dir) = server();
    let anon = s.client(false);
    for (path, code) in
        [("/version", 200), ("/healthz", 200), ("/api", 403), ("/api/v1/namespaces/default/secrets", 403)]
    {
        let r = anon.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), code, "{path}");
    }
}

#[actix_web::test]
async fn impersonation_is_allowed_by_the_impersonate_verb_and_refused_without_it() {
    let (s, _dir) = server();
    s.kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"]);
    s.kubectl_ok(&["create", "rolebinding", "bob-cm", "--role=cm-reader", "--user=bob"]);

    // The admin may impersonate anyone: it acts as bob, with bob's permissions only.
    let took = within(Duration::from_secs(1), || out(&s.kubectl(&["get", "configmaps", "--as", "bob"])).0);
    assert!(took.is_some());
    let (ok, _, err) = out(&s.kubectl(&["get", "secrets", "--as", "bob"]));
    assert!(!ok && err.contains("User \"bob\" cannot list resource \"secrets\""), "{err}");
    let (ok, stdout, _) = out(&s.kubectl(&["auth", "can-i", "list", "configmaps", "--as", "bob"]));
    assert_eq!((ok, stdout.trim()), (true, "yes"));
    let (_, stdout, _) = out(&s.kubectl(&["auth", "whoami", "--as", "bob", "--as-group", "devs", "-o", "json"]));
    let whoami: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(whoami["status"]["userInfo"], json!({"username": "bob", "groups": ["devs", "system:authenticated"]}));

    // alice may not, until she is given the impersonate verb on that user.
    let alice = |args: &[&str]| out(&s.kubectl_with_token("alice-token", args));
    let (ok, _, err) = alice(&["get", "configmaps", "--as", "bob"]);
    assert!(!ok);
    assert!(
        err.contains("users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"),
        "{err}"
    );
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "impersonate-bob",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=bob",
    ]);
    s.kubectl_ok(&["create", "clusterrolebinding", "alice-as-bob", "--clusterrole=impersonate-bob", "--user=alice"]);
    assert!(within(Duration::from_secs(1), || alice(&["get", "configmaps", "--as", "bob"]).0).is_some());
    let (ok, _, err) = alice(&["get", "configmaps", "--as", "bob", "--as-group", "system:masters"]);
    assert!(
        !ok && err
            .contains("groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate resource \"groups\""),
        "{err}"
    );

    // A group without a user is refused outright.
    let r = s
        .client(true)
        .get(s.url("/api/v1/namespaces/default/configmaps"))
        .insert_header(("Impersonate-Group", "system:masters"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 500);
}

#[actix_web::test]
async fn roles_and_bindings_grant_only_what_their_writer_holds_unless_escalate_or_bind() {
    let (s, _dir) = server();
    s.kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"]);
    s.kubectl_ok(&[
        "create",
        "role",
        "rbac-writer",
        "--verb=create,update",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
    ]);
    s.kubectl_ok(&["create", "rolebinding", "alice-cm", "--role=cm-reader", "--user=alice"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-rbac", "--role=rbac-writer", "--user=alice"]);
    let alice = |args: &[&str]| out(&s.kubectl_with_token("alice-token", args));
    assert!(
        within(Duration::from_secs(1), || alice(&["auth", "can-i", "create", "roles.rbac.authorization.k8s.io"]).0)
            .is_some()
    );

    // What she holds she may hand on.
    let (ok, _, err) = alice(&["create", "role", "cm-get", "--verb=get", "--resource=configmaps"]);
    assert!(ok, "{err}");
    // More she may not.
    let (ok, _, err) = alice(&["create", "role", "secrets", "--verb=get,list", "--resource=secrets"]);
    assert!(!ok);
    assert!(
        err.contains("roles.rbac.authorization.k8s.io \"secrets\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"),
        "{err}"
    );
    let (ok, _, err) = alice(&["create", "rolebinding", "me-admin", "--clusterrole=cluster-admin", "--user=alice"]);
    assert!(
        !ok && err.contains("rolebindings.rbac.authorization.k8s.io \"me-admin\" is forbidden: user \"alice\""),
        "{err}"
    );
    // The check comes before validation, as in kube's RBAC storage: an invalid role granting
    // what she lacks is refused for the grant, not for its name.
    let bad = json!({"metadata": {"name": "Bad_Name"}, "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
    let (code, status) = s
        .call_with_token(
            Some("alice-token"),
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            Some(bad),
        )
        .await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").contains("is attempting to grant RBAC permissions not currently held"),
        "{status}"
    );

    // escalate and bind lift the checks.
    s.kubectl_ok(&["create", "role", "escalator", "--verb=escalate", "--resource=roles.rbac.authorization.k8s.io"]);
    s.kubectl_ok(&["create", "rolebinding", "alice-escalate", "--role=escalator", "--user=alice"]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "admin-binder",
        "--verb=bind",
        "--resource=clusterroles.rbac.authorization.k8s.io",
        "--resource-name=cluster-admin",
    ]);
    s.kubectl_ok(&["create", "rolebinding", "alice-bind", "--clusterrole=admin-binder", "--user=alice"]);
    assert!(
        within(Duration::from_secs(1), || alice(&["create", "role", "secrets", "--verb=get", "--resource=secrets"]).0)
            .is_some()
    );
    assert!(
        within(Duration::from_secs(1), || alice(&[
            "create",
            "rolebinding",
            "me-admin",
            "--clusterrole=cluster-admin",
            "--user=alice"
        ])
        .0)
        .is_some()
    );
}
