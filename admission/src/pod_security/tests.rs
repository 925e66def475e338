//! The module's behaviour end to end: kube's messages for whole pods, version pinning, and the
//! decisions for pods, pod controllers and namespaces.

use std::time::{Duration, Instant};

use apimachinery::error::Reason;
use apimachinery::messages::Operation;
use serde_json::{Value, json};

use super::decision::{LIST_PODS_FAILED_WARNING, MAX_PODS_TO_CHECK};
use super::*;

fn pod(name: &str, containers: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": containers}})
}

fn privileged_pod(name: &str) -> Value {
    pod(name, json!([{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]))
}

/// A pod passing restricted at every version.
fn restricted_pod(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "c",
                "image": "nginx",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    })
}

fn namespace(labels: Value) -> Value {
    json!({"metadata": {"name": "ns", "labels": labels}})
}

fn req(operation: Operation) -> Request<'static> {
    Request { operation, subresource: None, namespace: "ns", username: "alice" }
}

fn lv(level: Level, version: Version) -> LevelVersion {
    LevelVersion::new(level, version)
}

fn annotations(d: &Decision) -> Vec<(&str, &str)> {
    d.audit_annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

const PRIVILEGED_UNDER_RESTRICTED: &str = concat!(
    r#"violates PodSecurity "restricted:latest": "#,
    r#"privileged (container "c" must not set securityContext.privileged=true), "#,
    r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
    r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
    r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
    r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
);

// ---------------------------------------------------------------- messages and versions

/// The order is kube's registry order (baseline checks, then restricted, each by id); the
/// wording of the last four is kube's documented answer to an unhardened pod under restricted
/// (the Pod Security Admission tutorials show `pods "nginx" is forbidden: violates PodSecurity
/// "restricted:latest": allowPrivilegeEscalation != false (...), unrestricted capabilities
/// (...), runAsNonRoot != true (...), seccompProfile (...)`).
#[test]
fn privileged_pod_under_restricted_gets_kubes_message() {
    let p = privileged_pod("p");
    let violations = evaluate(lv(Level::Restricted, Version::Latest), &p["metadata"], &p["spec"]);
    let checks: Vec<&str> = violations.iter().map(|v| v.check).collect();
    assert_eq!(
        checks,
        [
            "privileged",
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "runAsNonRoot",
            "seccompProfile_restricted"
        ]
    );
    assert_eq!(violates_message(lv(Level::Restricted, Version::Latest), &violations), PRIVILEGED_UNDER_RESTRICTED);
    assert_eq!(
        forbidden_reason(&violations),
        "privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
    );
    let baseline = evaluate(lv(Level::Baseline, Version::Minor(25)), &p["metadata"], &p["spec"]);
    assert_eq!(
        would_violate_message(lv(Level::Baseline, Version::Minor(25)), &baseline),
        r#"would violate PodSecurity "baseline:v1.25": privileged (container "c" must not set securityContext.privileged=true)"#
    );
    assert!(evaluate(LevelVersion::privileged(), &p["metadata"], &p["spec"]).is_empty());
}

#[test]
fn a_hardened_pod_passes_restricted_at_every_version() {
    let p = restricted_pod("ok");
    for minor in [0, 8, 18, 19, 22, 23, 25, 29, 30, 99] {
        assert_eq!(
            evaluate(lv(Level::Restricted, Version::Minor(minor)), &p["metadata"], &p["spec"]),
            [],
            "v1.{minor}"
        );
    }
}

#[test]
fn restricted_seccomp_applies_from_1_19() {
    let mut p = restricted_pod("p");
    p["spec"]["securityContext"].as_object_mut().unwrap().remove("seccompProfile");
    let at = |p: &Value, minor| evaluate(lv(Level::Restricted, Version::Minor(minor)), &p["metadata"], &p["spec"]);
    assert_eq!(at(&p, 18), []);
    let v19 = at(&p, 19);
    assert_eq!(v19.len(), 1);
    assert_eq!(v19[0].check, "seccompProfile_restricted");
    assert_eq!(
        v19[0].detail,
        r#"pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
    );
    // Before 1.19 the annotations are what baseline (and so restricted) looks at.
    p["metadata"]["annotations"] = json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"});
    let v18 = at(&p, 18);
    assert_eq!(v18.len(), 1);
    assert_eq!(v18[0].check, "seccompProfile_baseline");
    assert_eq!(v18[0].detail, r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#);
}

#[test]
fn pinned_versions_drop_later_checks_and_sysctls() {
    let mut p = restricted_pod("p");
    p["spec"]["securityContext"]["runAsUser"] = json!(0);
    p["spec"]["securityContext"]["sysctls"] = json!([{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}]);
    let ids = |v: Version| -> Vec<&'static str> {
        evaluate(lv(Level::Restricted, v), &p["metadata"], &p["spec"]).iter().map(|v| v.check).collect()
    };
    assert_eq!(ids(Version::Minor(22)), ["sysctls"]);
    assert_eq!(ids(Version::Minor(23)), ["sysctls", "runAsUser"]);
    assert_eq!(ids(Version::Minor(28)), ["sysctls", "runAsUser"]);
    assert_eq!(ids(Version::Minor(29)), ["runAsUser"]);
    assert_eq!(ids(Version::Latest), ["runAsUser"]);
}

#[test]
fn windows_pods_skip_the_linux_only_restricted_checks_from_1_25() {
    let p = json!({"metadata": {}, "spec": {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
                                           "containers": [{"name": "w"}]}});
    let at = |minor| {
        evaluate(lv(Level::Restricted, Version::Minor(minor)), &p["metadata"], &p["spec"])
            .iter()
            .map(|v| v.check)
            .collect::<Vec<_>>()
    };
    assert_eq!(at(24), ["allowPrivilegeEscalation", "capabilities_restricted", "seccompProfile_restricted"]);
    assert_eq!(at(25), Vec::<&str>::new());
}

// ---------------------------------------------------------------- pods

#[test]
fn enforce_refuses_with_kubes_forbidden_status() {
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let d = pod_decision(&Config::default(), &req(Operation::Create), Ok(&ns), &privileged_pod("p"), None);
    let denial = d.denial.clone().expect("refused");
    assert_eq!(denial.code, 403);
    assert_eq!(denial.reason, Reason::Forbidden);
    assert_eq!(denial.message, format!("pods \"p\" is forbidden: {PRIVILEGED_UNDER_RESTRICTED}"));
    assert_eq!((denial.group, denial.kind.as_deref(), denial.name.as_deref()), (None, Some("pods"), Some("p")));
    assert!(d.warnings.is_empty());
    assert_eq!(annotations(&d), [("pod-security.kubernetes.io/enforce-policy", "restricted:latest")]);
}

#[test]
fn warn_and_audit_report_without_refusing() {
    let ns = namespace(json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.29",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "v1.18",
    }));
    let p = pod("p", json!([{"name": "c", "image": "nginx"}]));
    let d = pod_decision(&Config::default(), &req(Operation::Create), Ok(&ns), &p, None);
    assert_eq!(d.denial, None);
    assert_eq!(
        d.warnings,
        [concat!(
            r#"would violate PodSecurity "restricted:latest": "#,
            r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )]
    );
    assert_eq!(
        annotations(&d),
        [
            (
                "pod-security.kubernetes.io/audit-violations",
                concat!(
                    r#"would violate PodSecurity "restricted:v1.18": "#,
                    r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
                    r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)"#,
                )
            ),
            ("pod-security.kubernetes.io/enforce-policy", "baseline:v1.29"),
        ]
    );
}

#[test]
fn a_refused_pod_gets_no_warnings_but_is_still_audited() {
    let ns = namespace(json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "baseline",
    }));
    let d = pod_decision(&Config::default(), &req(Operation::Create), Ok(&ns), &privileged_pod("p"), None);
    assert!(d.denial.is_some());
    assert!(d.warnings.is_empty());
    assert_eq!(
        d.audit_annotations["pod-security.kubernetes.io/audit-violations"],
        r#"would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
    );
}

#[test]
fn privileged_namespaces_record_only_the_policy() {
    let cfg = Config::default();
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce-version": "v1.25"}));
    let d = pod_decision(&cfg, &req(Operation::Create), Ok(&ns), &privileged_pod("p"), None);
    assert_eq!(d.denial, None);
    assert!(d.warnings.is_empty());
    assert_eq!(annotations(&d), [("pod-security.kubernetes.io/enforce-policy", "privileged:latest")]);
    // Defaults from the configuration apply to unlabelled namespaces.
    let strict = Config {
        defaults: Policy { enforce: lv(Level::Baseline, Version::Latest), ..Policy::default() },
        ..Config::default()
    };
    let d = pod_decision(&strict, &req(Operation::Create), Ok(&namespace(json!({}))), &privileged_pod("p"), None);
    assert!(d.denial.unwrap().message.contains(r#"violates PodSecurity "baseline:latest": privileged"#));
}

#[test]
fn unparseable_labels_enforce_restricted_and_are_recorded() {
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce": "strict"}));
    let d = pod_decision(&Config::default(), &req(Operation::Create), Ok(&ns), &restricted_pod("p"), None);
    assert_eq!(d.denial, None);
    assert_eq!(
        annotations(&d),
        [
            ("pod-security.kubernetes.io/enforce-policy", "restricted:latest"),
            (
                "pod-security.kubernetes.io/error",
                r#"Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
            ),
        ]
    );
    let d = pod_decision(&Config::default(), &req(Operation::Create), Ok(&ns), &privileged_pod("p"), None);
    assert!(d.denial.unwrap().message.contains(r#"violates PodSecurity "restricted:latest""#));
}

#[test]
fn only_significant_pod_updates_are_evaluated() {
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
    let cfg = Config::default();
    let old = privileged_pod("p");
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"app": "x"});
    relabelled["status"] = json!({"phase": "Running"});
    relabelled["spec"]["activeDeadlineSeconds"] = json!(30);
    assert_eq!(pod_decision(&cfg, &req(Operation::Update), Ok(&ns), &relabelled, Some(&old)), Decision::default());

    let mut new_image = old.clone();
    new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert!(pod_decision(&cfg, &req(Operation::Update), Ok(&ns), &new_image, Some(&old)).denial.is_some());

    let mut seccomp = old.clone();
    seccomp["metadata"]["annotations"] = json!({"container.seccomp.security.alpha.kubernetes.io/c": "unconfined"});
    assert!(pod_decision(&cfg, &req(Operation::Update), Ok(&ns), &seccomp, Some(&old)).denial.is_some());

    // An added ephemeral container, written through pods/ephemeralcontainers, is evaluated.
    let mut debug = restricted_pod("p");
    let before = debug.clone();
    debug["spec"]["ephemeralContainers"] =
        json!([{"name": "dbg", "image": "busybox", "securityContext": {"privileged": true}}]);
    let r = Request { subresource: Some("ephemeralcontainers"), ..req(Operation::Update) };
    let d = pod_decision(&cfg, &r, Ok(&ns), &debug, Some(&before));
    assert!(
        d.denial
            .unwrap()
            .message
            .contains(r#"privileged (container "dbg" must not set securityContext.privileged=true)"#)
    );
    // Changing it again without a new image is not.
    let mut again = debug.clone();
    again["spec"]["ephemeralContainers"][0]["tty"] = json!(true);
    assert_eq!(pod_decision(&cfg, &r, Ok(&ns), &again, Some(&debug)).denial, None);
}

#[test]
fn ignored_subresources_and_deletes_are_allowed_unexamined() {
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let cfg = Config::default();
    for sub in ["status", "binding", "eviction", "exec", "attach", "log", "portforward", "proxy"] {
        let r = Request { subresource: Some(sub), ..req(Operation::Update) };
        assert_eq!(pod_decision(&cfg, &r, Ok(&ns), &privileged_pod("p"), None), Decision::default(), "{sub}");
        assert_eq!(before_namespace_lookup(&cfg, Subject::Pod, &r), Some(Decision::default()));
    }
    assert_eq!(pod_decision(&cfg, &req(Operation::Delete), Ok(&ns), &privileged_pod("p"), None), Decision::default());
    assert_eq!(before_namespace_lookup(&cfg, Subject::Pod, &req(Operation::Create)), None);
}

#[test]
fn exemptions_skip_evaluation_and_say_why() {
    let cfg = Config {
        exemptions: Exemptions {
            usernames: vec!["system:serviceaccount:kube-system:daemon-set-controller".into()],
            namespaces: vec!["kube-system".into()],
            runtime_classes: vec!["kata".into()],
        },
        ..Config::default()
    };
    let ns = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let exempt = |d: Decision| d.audit_annotations.get("pod-security.kubernetes.io/exempt").cloned();

    let r = Request { namespace: "kube-system", ..req(Operation::Create) };
    assert_eq!(exempt(pod_decision(&cfg, &r, Err("unused"), &privileged_pod("p"), None)).as_deref(), Some("namespace"));
    let r = Request { username: "system:serviceaccount:kube-system:daemon-set-controller", ..req(Operation::Create) };
    assert_eq!(exempt(pod_decision(&cfg, &r, Ok(&ns), &privileged_pod("p"), None)).as_deref(), Some("user"));

    let mut kata = privileged_pod("p");
    kata["spec"]["runtimeClassName"] = json!("kata");
    let d = pod_decision(&cfg, &req(Operation::Create), Ok(&ns), &kata, None);
    assert_eq!(d.denial, None);
    assert_eq!(annotations(&d), [("pod-security.kubernetes.io/exempt", "runtimeClass")]);
    // Nothing is exempt by default.
    assert!(pod_decision(&Config::default(), &r, Ok(&ns), &kata, None).denial.is_some());
}

#[test]
fn a_failed_namespace_lookup_refuses_pods_but_not_controllers() {
    let cfg = Config::default();
    let d = pod_decision(&cfg, &req(Operation::Create), Err("namespaces \"ns\" not found"), &privileged_pod("p"), None);
    let denial = d.denial.clone().unwrap();
    assert_eq!(denial.code, 500);
    assert_eq!(denial.message, r#"Internal error occurred: failed to lookup namespace "ns""#);
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/error",
            r#"Internal error occurred: failed to lookup namespace "ns": namespaces "ns" not found"#
        )]
    );
    let deploy = json!({"spec": {"template": privileged_pod("t")}});
    let d = pod_controller_decision(&cfg, &req(Operation::Create), Err("timeout"), "deployments", &deploy);
    assert_eq!(d.denial, None);
    assert_eq!(annotations(&d), [("pod-security.kubernetes.io/error", r#"failed to lookup namespace "ns": timeout"#)]);
}

// ---------------------------------------------------------------- pod controllers

#[test]
fn controller_templates_are_warned_and_audited_never_enforced() {
    let ns = namespace(json!({
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "baseline",
        "pod-security.kubernetes.io/audit": "baseline",
    }));
    let deploy = json!({"metadata": {"name": "web"}, "spec": {"template": privileged_pod("")}});
    let d = pod_controller_decision(&Config::default(), &req(Operation::Create), Ok(&ns), "deployments", &deploy);
    let expected = r#"would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#;
    assert_eq!(d.denial, None);
    assert_eq!(d.warnings, [expected]);
    assert_eq!(annotations(&d), [("pod-security.kubernetes.io/audit-violations", expected)]);

    // Enforce alone has nothing to say about a template.
    let enforce_only = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let d =
        pod_controller_decision(&Config::default(), &req(Operation::Update), Ok(&enforce_only), "deployments", &deploy);
    assert_eq!(d, Decision::default());
}

#[test]
fn every_pod_controller_has_its_template_found() {
    let template = privileged_pod("");
    let ns = namespace(json!({"pod-security.kubernetes.io/warn": "baseline"}));
    let objects = [
        ("", "podtemplates", json!({"template": template})),
        ("", "replicationcontrollers", json!({"spec": {"template": template}})),
        ("apps", "replicasets", json!({"spec": {"template": template}})),
        ("apps", "deployments", json!({"spec": {"template": template}})),
        ("apps", "statefulsets", json!({"spec": {"template": template}})),
        ("apps", "daemonsets", json!({"spec": {"template": template}})),
        ("batch", "jobs", json!({"spec": {"template": template}})),
        ("batch", "cronjobs", json!({"spec": {"jobTemplate": {"spec": {"template": template}}}})),
    ];
    for (group, resource, object) in &objects {
        assert_eq!(subject(group, resource), Some(Subject::PodController), "{resource}");
        let d = pod_controller_decision(&Config::default(), &req(Operation::Create), Ok(&ns), resource, object);
        assert_eq!(d.warnings.len(), 1, "{resource}");
    }
    // An RC's template is optional; the others evaluate an empty template (which passes).
    assert_eq!(pod_template("replicationcontrollers", &json!({"spec": {}})), None);
    let d = pod_controller_decision(&Config::default(), &req(Operation::Create), Ok(&ns), "deployments", &json!({}));
    assert_eq!(d, Decision::default());
    assert_eq!(subject("", "pods"), Some(Subject::Pod));
    assert_eq!(subject("", "namespaces"), Some(Subject::Namespace));
    assert_eq!(subject("", "configmaps"), None);
    assert_eq!(subject("extensions", "deployments"), None);
    // Subresources of controllers (scale, status) are not evaluated.
    let r = Request { subresource: Some("scale"), ..req(Operation::Update) };
    assert_eq!(before_namespace_lookup(&Config::default(), Subject::PodController, &r), Some(Decision::default()));
}

// ---------------------------------------------------------------- namespaces

fn ns_named(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}})
}

fn done(d: NamespaceDecision) -> Decision {
    match d {
        NamespaceDecision::Done(d) => d,
        other => panic!("expected a settled decision, got {other:?}"),
    }
}

#[test]
fn namespaces_with_bad_labels_are_refused_as_invalid() {
    let ns = ns_named("team", json!({"pod-security.kubernetes.io/enforce": "foo"}));
    let d = done(namespace_decision(&Config::default(), &req(Operation::Create), &ns, None));
    let denial = d.denial.unwrap();
    assert_eq!(denial.code, 422);
    assert_eq!(denial.reason, Reason::Invalid);
    assert_eq!(
        denial.message,
        r#"Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#
    );
    assert_eq!(denial.causes.len(), 1);
    assert_eq!(denial.causes[0].field, "metadata.labels[pod-security.kubernetes.io/enforce]");

    let two = ns_named(
        "team",
        json!({"pod-security.kubernetes.io/enforce": "foo", "pod-security.kubernetes.io/warn-version": "v2"}),
    );
    let d = done(namespace_decision(&Config::default(), &req(Operation::Create), &two, None));
    assert_eq!(
        d.denial.unwrap().message,
        concat!(
            r#"Namespace "team" is invalid: ["#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted, "#,
            r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2": must be "latest" or "v1.x"]"#
        )
    );
    // Good labels, or none, are fine.
    let ok = ns_named("team", json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    assert_eq!(done(namespace_decision(&Config::default(), &req(Operation::Create), &ok, None)), Decision::default());
}

#[test]
fn updates_keep_old_bad_labels_but_not_new_ones() {
    let cfg = Config::default();
    let bad = ns_named("team", json!({"pod-security.kubernetes.io/enforce": "foo"}));
    let mut relabelled = bad.clone();
    relabelled["metadata"]["labels"]["app"] = json!("x");
    assert_eq!(done(namespace_decision(&cfg, &req(Operation::Update), &relabelled, Some(&bad))), Decision::default());
    let worse = ns_named("team", json!({"pod-security.kubernetes.io/enforce": "bar"}));
    assert!(done(namespace_decision(&cfg, &req(Operation::Update), &worse, Some(&bad))).denial.is_some());
    let fresh = ns_named("team", json!({}));
    assert!(done(namespace_decision(&cfg, &req(Operation::Update), &bad, Some(&fresh))).denial.is_some());
    // Subresources (finalize, status) are not examined.
    let r = Request { subresource: Some("finalize"), ..req(Operation::Update) };
    assert_eq!(done(namespace_decision(&cfg, &r, &worse, Some(&fresh))), Decision::default());
}

#[test]
fn only_a_stricter_enforce_level_checks_existing_pods() {
    let cfg = Config::default();
    let labels = |level: &str, version: &str| {
        ns_named(
            "team",
            json!({"pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": version}),
        )
    };
    let update = |new: &Value, old: &Value| namespace_decision(&cfg, &req(Operation::Update), new, Some(old));
    let baseline = labels("baseline", "latest");
    let restricted = labels("restricted", "latest");
    assert_eq!(
        update(&restricted, &baseline),
        NamespaceDecision::CheckPods { namespace: "team".into(), enforce: lv(Level::Restricted, Version::Latest) }
    );
    assert_eq!(done(update(&baseline, &restricted)), Decision::default());
    assert_eq!(done(update(&baseline, &baseline)), Decision::default());
    assert_eq!(done(update(&labels("privileged", "v1.20"), &baseline)), Decision::default());
    // A version change is checked even at a lower level.
    assert_eq!(
        update(&labels("baseline", "v1.20"), &restricted),
        NamespaceDecision::CheckPods { namespace: "team".into(), enforce: lv(Level::Baseline, Version::Minor(20)) }
    );
    // Audit and warn changes need no check.
    let warned = ns_named("team", json!({"pod-security.kubernetes.io/warn": "restricted"}));
    assert_eq!(done(update(&warned, &ns_named("team", json!({})))), Decision::default());
}

#[test]
fn exempt_namespaces_warn_that_their_labels_are_ignored() {
    let cfg = Config {
        exemptions: Exemptions { namespaces: vec!["kube-system".into()], ..Exemptions::default() },
        ..Config::default()
    };
    let old = ns_named("kube-system", json!({}));
    let new = ns_named(
        "kube-system",
        json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "baseline",
               "pod-security.kubernetes.io/audit-version": "v1.25"}),
    );
    let d = done(namespace_decision(&cfg, &req(Operation::Update), &new, Some(&old)));
    assert_eq!(
        d.warnings,
        [
            r#"namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest, warn=baseline:latest) will be ignored"#
        ]
    );
    assert_eq!(d.denial, None);
}

fn owned(mut p: Value, uid: &str) -> Value {
    p["metadata"]["ownerReferences"] = json!([{"kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]);
    p
}

#[test]
fn existing_pods_are_listed_by_shared_violations() {
    let cfg = Config::default();
    let enforce = lv(Level::Restricted, Version::Latest);
    let pods = vec![
        restricted_pod("fine"),
        privileged_pod("web-2"),
        privileged_pod("web-1"),
        privileged_pod("web-3"),
        pod("plain", json!([{"name": "c", "image": "nginx"}])),
        pod(
            "lonely",
            json!([{"name": "c", "image": "nginx", "securityContext": {"privileged": true, "runAsUser": 0}}]),
        ),
        privileged_pod("twin-b"),
    ];
    let d = existing_pods_warnings(&cfg, "team", enforce, Ok(&pods), None);
    assert_eq!(d.denial, None);
    assert_eq!(
        d.warnings,
        [
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "restricted:latest""#,
            "lonely: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, runAsUser=0, seccompProfile",
            "plain: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
            "twin-b (and 3 other pods): privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
        ]
    );
    let two = vec![privileged_pod("b"), privileged_pod("a")];
    assert_eq!(
        existing_pods_warnings(&cfg, "team", lv(Level::Baseline, Version::Latest), Ok(&two), None).warnings,
        [
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest""#,
            "a (and 1 other pod): privileged",
        ]
    );
    assert!(existing_pods_warnings(&cfg, "team", enforce, Ok(&[restricted_pod("ok")]), None).warnings.is_empty());
    assert_eq!(existing_pods_warnings(&cfg, "team", enforce, Err(()), None).warnings, [LIST_PODS_FAILED_WARNING]);
}

#[test]
fn the_pod_check_stops_at_its_limit_and_deadline_one_replica_per_controller_first() {
    let cfg = Config {
        exemptions: Exemptions { runtime_classes: vec!["kata".into()], ..Exemptions::default() },
        ..Config::default()
    };
    let enforce = lv(Level::Baseline, Version::Latest);
    // Replicas of one controller come first in the list; the lone bad pod comes last.
    let mut pods: Vec<Value> =
        (0..MAX_PODS_TO_CHECK).map(|i| owned(restricted_pod(&format!("rs-{i}")), "uid-1")).collect();
    let mut sandboxed = privileged_pod("sandboxed");
    sandboxed["spec"]["runtimeClassName"] = json!("kata");
    pods.push(sandboxed);
    pods.push(privileged_pod("bad"));
    let d = existing_pods_warnings(&cfg, "team", enforce, Ok(&pods), None);
    assert_eq!(
        d.warnings,
        [
            "new PodSecurity enforce level only checked against the first 3000 of 3001 existing pods",
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest""#,
            "bad: privileged",
        ]
    );
    // A deadline already passed stops after the first pod.
    let past = Instant::now();
    let d = existing_pods_warnings(&Config::default(), "team", enforce, Ok(&pods[..3]), Some(past));
    assert_eq!(d.warnings, ["new PodSecurity enforce level only checked against the first 1 of 3 existing pods"]);
}

#[test]
fn the_pod_check_takes_a_second_or_half_the_time_left() {
    let now = Instant::now();
    assert_eq!(pod_check_deadline(now, None), now + Duration::from_secs(1));
    assert_eq!(pod_check_deadline(now, Some(now + Duration::from_secs(60))), now + Duration::from_secs(1));
    assert_eq!(pod_check_deadline(now, Some(now + Duration::from_millis(600))), now + Duration::from_millis(300));
    assert_eq!(pod_check_deadline(now, Some(now)), now);
}

#[test]
fn a_pod_security_configuration_sets_defaults_and_exemptions_and_reports_bad_fields() {
    let config = Config::from_configuration(&serde_json::json!({
        "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
        "defaults": {"enforce": "baseline", "enforce-version": "v1.29", "warn": "restricted"},
        "exemptions": {"usernames": ["ci"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]}}))
    .unwrap();
    assert_eq!(config.defaults.enforce.to_string(), "baseline:v1.29");
    assert_eq!(config.defaults.warn.to_string(), "restricted:latest");
    assert_eq!(config.defaults.audit.to_string(), "privileged:latest", "unset is kube's default");
    assert_eq!(config.exemptions.usernames, ["ci"]);
    assert_eq!(config.exemptions.namespaces, ["kube-system"]);
    assert_eq!(config.exemptions.runtime_classes, ["kata"]);
    let e = Config::from_configuration(&serde_json::json!({
        "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
        "defaults": {"enforce": "strict", "audit-version": "2"}}))
    .unwrap_err();
    assert_eq!(
        e,
        "defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted, \
         defaults.audit-version: Invalid value: \"2\": must be \"latest\" or \"v1.x\""
    );
    let e = Config::from_configuration(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap_err();
    assert!(e.starts_with("expected kind PodSecurityConfiguration"), "{e}");
}
