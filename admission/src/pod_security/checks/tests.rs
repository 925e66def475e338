//! One test per check: a pod it allows and pods it forbids, with kube's exact reason and detail
//! (the expected strings follow kube's `policy/check_*_test.go` cases where kube has them).

use serde_json::{Value, json};

use super::*;

const NONE: Value = Value::Null;

/// Runs `check` on a pod with these annotations and spec.
fn run(check: CheckFn, annotations: Value, spec: Value) -> Verdict {
    check(&json!({"annotations": annotations}), &spec)
}

fn forbids(check: CheckFn, annotations: Value, spec: Value, reason: &str, detail: &str) {
    assert_eq!(run(check, annotations, spec), Some((reason.to_string(), detail.to_string())));
}

fn allows(check: CheckFn, annotations: Value, spec: Value) {
    assert_eq!(run(check, annotations, spec), None);
}

/// A container named `name` with this securityContext (`null`: none).
fn c(name: &str, sc: Value) -> Value {
    if sc.is_null() { json!({"name": name}) } else { json!({"name": name, "securityContext": sc}) }
}

#[test]
fn app_armor_profile() {
    let f = app_armor_profile_1_0;
    let aa = "container.apparmor.security.beta.kubernetes.io/";
    allows(
        f,
        json!({format!("{aa}a"): "runtime/default", format!("{aa}b"): "localhost/p", format!("{aa}c"): "", "env": "x"}),
        json!({}),
    );
    allows(
        f,
        NONE,
        json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
               "containers": [c("a", json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}))]}),
    );
    forbids(
        f,
        json!({aa: "bogus", format!("{aa}a"): "", format!("{aa}b"): "runtime/default", format!("{aa}c"): "localhost/",
               format!("{aa}e"): "unconfined", format!("{aa}f"): "unknown"}),
        json!({}),
        "forbidden AppArmor profiles",
        r#"annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/="bogus"", "container.apparmor.security.beta.kubernetes.io/e="unconfined"", "container.apparmor.security.beta.kubernetes.io/f="unknown"""#,
    );
    forbids(
        f,
        NONE,
        json!({"containers": [c("foo", NONE), c("bar", json!({"appArmorProfile": {"type": "Unconfined"}}))]}),
        "forbidden AppArmor profile",
        r#"container "bar" must not set AppArmor profile type to "Unconfined""#,
    );
    forbids(
        f,
        json!({format!("{aa}a"): "unconfined"}),
        json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
               "initContainers": [c("i", json!({"appArmorProfile": {"type": "Unconfined"}}))]}),
        "forbidden AppArmor profiles",
        r#"pod and container "i" and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined"""#,
    );
}

#[test]
fn capabilities_baseline() {
    let f = capabilities_baseline_1_0;
    allows(
        f,
        NONE,
        json!({"containers": [c("a", json!({"capabilities": {"add": ["CHOWN", "NET_BIND_SERVICE"], "drop": ["ALL"]}}))]}),
    );
    forbids(
        f,
        NONE,
        json!({"containers": [
            c("a", json!({"capabilities": {"add": ["FOO", "BAR"]}})),
            c("b", json!({"capabilities": {"add": ["BAR", "BAZ"]}})),
            c("c", json!({"capabilities": {"add": ["CHOWN", "KILL"]}})),
        ]}),
        "non-default capabilities",
        r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#,
    );
    forbids(
        f,
        NONE,
        json!({"ephemeralContainers": [c("debug", json!({"capabilities": {"add": ["NET_RAW"]}}))]}),
        "non-default capabilities",
        r#"container "debug" must not include "NET_RAW" in securityContext.capabilities.add"#,
    );
}

#[test]
fn host_namespaces() {
    let f = host_namespaces_1_0;
    allows(f, NONE, json!({"hostNetwork": false}));
    forbids(
        f,
        NONE,
        json!({"hostIPC": true, "hostPID": true, "hostNetwork": true}),
        "host namespaces",
        "hostNetwork=true, hostPID=true, hostIPC=true",
    );
    forbids(f, NONE, json!({"hostPID": true}), "host namespaces", "hostPID=true");
}

#[test]
fn host_path_volumes() {
    let f = host_path_volumes_1_0;
    allows(f, NONE, json!({"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": null}]}));
    forbids(
        f,
        NONE,
        json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}}, {"name": "c", "hostPath": {"path": "/x"}}]}),
        "hostPath volumes",
        r#"volumes "a", "c""#,
    );
    forbids(
        f,
        NONE,
        json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}]}),
        "hostPath volumes",
        r#"volume "a""#,
    );
}

#[test]
fn host_ports() {
    let f = host_ports_1_0;
    allows(
        f,
        NONE,
        json!({"containers": [{"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 0}]}]}),
    );
    forbids(
        f,
        NONE,
        json!({"containers": [{"name": "a", "ports": [{"hostPort": 0}]}, {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 20}]}]}),
        "hostPort",
        r#"container "b" uses hostPort 20"#,
    );
    forbids(
        f,
        NONE,
        json!({"containers": [
            {"name": "a", "ports": [{"hostPort": 0}]},
            {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
            {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]},
        ]}),
        "hostPort",
        r#"containers "b", "c" use hostPorts 10, 20, 30"#,
    );
    // kube sorts the ports as strings.
    forbids(
        f,
        NONE,
        json!({"containers": [{"name": "a", "ports": [{"hostPort": 8080}, {"hostPort": 10000}]}]}),
        "hostPort",
        r#"container "a" uses hostPorts 10000, 8080"#,
    );
}

#[test]
fn privileged() {
    let f = privileged_1_0;
    allows(f, NONE, json!({"containers": [c("a", json!({"privileged": false})), c("b", NONE)]}));
    forbids(
        f,
        NONE,
        json!({"containers": [c("a", NONE), c("b", json!({"privileged": true}))]}),
        "privileged",
        r#"container "b" must not set securityContext.privileged=true"#,
    );
    // Init containers first, then containers, then ephemeral containers.
    forbids(
        f,
        NONE,
        json!({"containers": [c("b", json!({"privileged": true}))], "initContainers": [c("a", json!({"privileged": true}))],
               "ephemeralContainers": [c("e", json!({"privileged": true}))]}),
        "privileged",
        r#"containers "a", "b", "e" must not set securityContext.privileged=true"#,
    );
}

#[test]
fn proc_mount() {
    let f = proc_mount_1_0;
    allows(f, NONE, json!({"containers": [c("a", json!({"procMount": "Default"})), c("b", json!({}))]}));
    forbids(
        f,
        NONE,
        json!({"containers": [c("a", NONE), c("b", json!({"procMount": "Default"})), c("c", json!({"procMount": "Unmasked"})),
                              c("d", json!({"procMount": "Other"}))]}),
        "procMount",
        r#"containers "c", "d" must not set securityContext.procMount to "Other", "Unmasked""#,
    );
}

#[test]
fn se_linux_options() {
    let f = se_linux_options_1_0;
    let opts = |v: Value| json!({"seLinuxOptions": v});
    allows(
        f,
        NONE,
        json!({"securityContext": opts(json!({"type": "container_t", "level": "s0:c1"})),
               "containers": [c("a", opts(json!({"type": "container_init_t"}))), c("b", opts(json!({"type": "container_kvm_t"})))]}),
    );
    forbids(
        f,
        NONE,
        json!({"securityContext": opts(json!({"type": "foo", "user": "bar", "role": "baz"})),
               "containers": [c("a", opts(json!({"type": "container_t"}))), c("d", opts(json!({"type": "bar"}))),
                              c("e", opts(json!({"user": "bar"}))), c("f", opts(json!({"role": "baz"})))]}),
        "seLinuxOptions",
        r#"pod and containers "d", "e", "f" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
    );
    forbids(
        f,
        NONE,
        json!({"securityContext": {"seLinuxOptions": {}}, "containers": [c("d", opts(json!({"type": "bar"}))), c("e", opts(json!({"user": "bar"})))]}),
        "seLinuxOptions",
        r#"containers "d", "e" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set"#,
    );
    // v1.30's kube writes the user/role notes only alongside a bad type.
    forbids(
        f,
        NONE,
        json!({"securityContext": opts(json!({"user": "bad"}))}),
        "seLinuxOptions",
        "pod set forbidden securityContext.seLinuxOptions: ",
    );
}

#[test]
fn seccomp_profile_baseline_annotations() {
    let f = seccomp_profile_baseline_1_0;
    allows(
        f,
        json!({"seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
               "container.seccomp.security.alpha.kubernetes.io/a": "docker/default",
               "container.seccomp.security.alpha.kubernetes.io/b": "localhost/p",
               "container.seccomp.security.alpha.kubernetes.io/gone": "unconfined"}),
        json!({"containers": [c("a", NONE), c("b", NONE)]}),
    );
    forbids(
        f,
        json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
               "container.seccomp.security.alpha.kubernetes.io/a": "bogus"}),
        json!({"containers": [c("a", NONE)]}),
        "seccompProfile",
        r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="bogus", seccomp.security.alpha.kubernetes.io/pod="unconfined""#,
    );
    forbids(
        f,
        json!({"seccomp.security.alpha.kubernetes.io/pod": ""}),
        json!({}),
        "seccompProfile",
        r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="""#,
    );
}

#[test]
fn seccomp_profile_baseline_fields() {
    let f = seccomp_profile_baseline_1_19;
    let sp = |t: &str| json!({"seccompProfile": {"type": t}});
    allows(f, NONE, json!({"containers": [c("a", NONE), c("b", sp("RuntimeDefault")), c("c", sp("Localhost"))]}));
    forbids(
        f,
        NONE,
        json!({"securityContext": sp("Unconfined"),
               "containers": [c("a", NONE), c("c", sp("Unconfined")), c("d", sp("Unconfined")), c("e", sp("RuntimeDefault")), c("f", sp("Bogus"))]}),
        "seccompProfile",
        r#"pod and containers "c", "d", "f" must not set securityContext.seccompProfile.type to "Bogus", "Unconfined""#,
    );
}

#[test]
fn sysctls_by_version() {
    let spec = |names: &[&str]| {
        let s: Vec<Value> = names.iter().map(|n| json!({"name": n, "value": "1"})).collect();
        json!({"securityContext": {"sysctls": s}})
    };
    allows(sysctls_1_0, NONE, spec(&["kernel.shm_rmid_forced", "net.ipv4.ip_unprivileged_port_start"]));
    forbids(
        sysctls_1_0,
        NONE,
        spec(&["a", "kernel.shm_rmid_forced", "b", "net.ipv4.ip_local_reserved_ports"]),
        "forbidden sysctls",
        "a, b, net.ipv4.ip_local_reserved_ports",
    );
    allows(sysctls_1_27, NONE, spec(&["net.ipv4.ip_local_reserved_ports"]));
    forbids(
        sysctls_1_27,
        NONE,
        spec(&["net.ipv4.tcp_keepalive_time"]),
        "forbidden sysctls",
        "net.ipv4.tcp_keepalive_time",
    );
    allows(
        sysctls_1_29,
        NONE,
        spec(&[
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
        ]),
    );
    // Added by kube only in 1.32.
    forbids(sysctls_1_29, NONE, spec(&["net.ipv4.tcp_rmem"]), "forbidden sysctls", "net.ipv4.tcp_rmem");
}

#[test]
fn windows_host_process() {
    let f = windows_host_process_1_0;
    let hp = |b: bool| json!({"windowsOptions": {"hostProcess": b}});
    allows(f, NONE, json!({"securityContext": hp(false), "containers": [c("a", hp(false)), c("b", NONE)]}));
    forbids(
        f,
        NONE,
        json!({"securityContext": hp(true), "containers": [c("a", hp(true)), c("b", hp(false)), c("c", hp(true))]}),
        "hostProcess",
        r#"pod and containers "a", "c" must not set securityContext.windowsOptions.hostProcess=true"#,
    );
    forbids(
        f,
        NONE,
        json!({"containers": [c("a", hp(true))]}),
        "hostProcess",
        r#"container "a" must not set securityContext.windowsOptions.hostProcess=true"#,
    );
}

#[test]
fn allow_privilege_escalation() {
    let multi = json!({"containers": [
        c("a", NONE),
        c("b", json!({"allowPrivilegeEscalation": null})),
        c("c", json!({"allowPrivilegeEscalation": true})),
        c("d", json!({"allowPrivilegeEscalation": false})),
    ]});
    let detail = r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#;
    forbids(allow_privilege_escalation_1_8, NONE, multi.clone(), "allowPrivilegeEscalation != false", detail);
    forbids(allow_privilege_escalation_1_25, NONE, multi.clone(), "allowPrivilegeEscalation != false", detail);
    allows(
        allow_privilege_escalation_1_8,
        NONE,
        json!({"containers": [c("d", json!({"allowPrivilegeEscalation": false}))]}),
    );
    // 1.25: a Windows pod is not checked; 1.8 still checks it.
    let mut windows = multi;
    windows["os"] = json!({"name": "windows"});
    allows(allow_privilege_escalation_1_25, NONE, windows.clone());
    forbids(allow_privilege_escalation_1_8, NONE, windows, "allowPrivilegeEscalation != false", detail);
}

#[test]
fn capabilities_restricted() {
    let caps = |v: Value| json!({"capabilities": v});
    allows(
        capabilities_restricted_1_22,
        NONE,
        json!({"containers": [c("a", caps(json!({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})))]}),
    );
    forbids(
        capabilities_restricted_1_22,
        NONE,
        json!({"containers": [
            c("a", NONE),
            c("b", json!({})),
            c("c", caps(json!({"drop": ["NET_RAW"]}))),
            c("d", caps(json!({"drop": ["ALL"], "add": ["NET_RAW", "CHOWN", "NET_BIND_SERVICE"]}))),
            c("e", caps(json!({"drop": ["ALL"], "add": ["CHOWN"]}))),
        ]}),
        "unrestricted capabilities",
        r#"containers "a", "b", "c" must set securityContext.capabilities.drop=["ALL"]; containers "d", "e" must not include "CHOWN", "NET_RAW" in securityContext.capabilities.add"#,
    );
    let windows = json!({"os": {"name": "windows"}, "containers": [c("a", NONE)]});
    allows(capabilities_restricted_1_25, NONE, windows.clone());
    forbids(
        capabilities_restricted_1_22,
        NONE,
        windows,
        "unrestricted capabilities",
        r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
    );
}

#[test]
fn restricted_volumes() {
    let f = restricted_volumes_1_0;
    allows(
        f,
        NONE,
        json!({"volumes": [
            {"name": "a", "configMap": {}}, {"name": "b", "csi": {}}, {"name": "c", "downwardAPI": {}}, {"name": "d", "emptyDir": {}},
            {"name": "e", "ephemeral": {}}, {"name": "f", "persistentVolumeClaim": {}}, {"name": "g", "projected": {}},
            {"name": "h", "secret": {}}, {"name": "defaulted-to-emptydir"},
        ]}),
    );
    forbids(
        f,
        NONE,
        json!({"volumes": [
            {"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "nfs": {}}, {"name": "d", "hostPath": {}},
            {"name": "e", "cephfs": {}},
        ]}),
        "restricted volume types",
        r#"volumes "b", "c", "d", "e" use restricted volume types "cephfs", "hostPath", "nfs""#,
    );
    forbids(
        f,
        NONE,
        json!({"volumes": [{"name": "repo", "gitRepo": {"repository": "x"}}]}),
        "restricted volume types",
        r#"volume "repo" uses restricted volume type "gitRepo""#,
    );
}

#[test]
fn run_as_non_root() {
    let f = run_as_non_root_1_0;
    let rnr = |b: bool| json!({"runAsNonRoot": b});
    allows(f, NONE, json!({"securityContext": rnr(true), "containers": [c("a", NONE), c("b", json!({}))]}));
    allows(f, NONE, json!({"containers": [c("a", rnr(true))], "initContainers": [c("i", rnr(true))]}));
    forbids(
        f,
        NONE,
        json!({"securityContext": rnr(false), "containers": [c("a", NONE), c("b", json!({})), c("c", rnr(false)), c("d", rnr(true))]}),
        "runAsNonRoot != true",
        r#"pod and container "c" must not set securityContext.runAsNonRoot=false"#,
    );
    forbids(
        f,
        NONE,
        json!({"securityContext": rnr(true), "containers": [c("c", rnr(false)), c("d", rnr(false)), c("e", rnr(true))]}),
        "runAsNonRoot != true",
        r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#,
    );
    forbids(
        f,
        NONE,
        json!({"containers": [c("a", NONE), c("b", json!({})), c("d", rnr(true))]}),
        "runAsNonRoot != true",
        r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#,
    );
}

#[test]
fn run_as_user() {
    let f = run_as_user_1_23;
    let ru = |u: i64| json!({"runAsUser": u});
    allows(f, NONE, json!({"securityContext": ru(1000), "containers": [c("a", NONE), c("b", ru(1))]}));
    forbids(
        f,
        NONE,
        json!({"securityContext": ru(0), "containers": [c("a", NONE), c("b", ru(0)), c("c", ru(1)), c("d", ru(0))]}),
        "runAsUser=0",
        r#"pod and containers "b", "d" must not set runAsUser=0"#,
    );
    forbids(f, NONE, json!({"securityContext": ru(0)}), "runAsUser=0", "pod must not set runAsUser=0");
}

#[test]
fn seccomp_profile_restricted() {
    let sp = |t: &str| json!({"seccompProfile": {"type": t}});
    allows(
        seccomp_profile_restricted_1_19,
        NONE,
        json!({"securityContext": sp("RuntimeDefault"), "containers": [c("a", NONE)]}),
    );
    allows(
        seccomp_profile_restricted_1_19,
        NONE,
        json!({"containers": [c("a", sp("Localhost")), c("b", sp("RuntimeDefault"))]}),
    );
    forbids(
        seccomp_profile_restricted_1_19,
        NONE,
        json!({"securityContext": sp("RuntimeDefault"),
               "containers": [c("a", NONE), c("c", sp("Unconfined")), c("d", sp("Unconfined")), c("e", sp("RuntimeDefault"))]}),
        "seccompProfile",
        r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
    );
    forbids(
        seccomp_profile_restricted_1_19,
        NONE,
        json!({"securityContext": sp("Unconfined"), "containers": [c("a", NONE)]}),
        "seccompProfile",
        r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
    );
    forbids(
        seccomp_profile_restricted_1_19,
        NONE,
        json!({"containers": [c("a", NONE), c("b", json!({})), c("e", sp("RuntimeDefault"))]}),
        "seccompProfile",
        r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
    );
    let windows = json!({"os": {"name": "windows"}, "containers": [c("a", NONE)]});
    allows(seccomp_profile_restricted_1_25, NONE, windows.clone());
    assert!(seccomp_profile_restricted_1_19(&NONE, &windows).is_some());
}

#[test]
fn checks_are_listed_baseline_then_restricted_each_in_id_order() {
    for level in [Level::Baseline, Level::Restricted] {
        let ids: Vec<&str> = CHECKS.iter().filter(|c| c.level == level).map(|c| c.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }
    let first_restricted = CHECKS.iter().position(|c| c.level == Level::Restricted).unwrap();
    assert!(CHECKS[..first_restricted].iter().all(|c| c.level == Level::Baseline));
    assert!(CHECKS[first_restricted..].iter().all(|c| c.level == Level::Restricted));
    for check in CHECKS {
        assert!(check.revisions.windows(2).all(|w| w[0].min_minor < w[1].min_minor), "{}", check.id);
    }
    let newest = CHECKS.iter().flat_map(|c| c.revisions.iter().map(|r| r.min_minor)).max();
    assert_eq!(newest, Some(MAX_CHECK_VERSION));
}

#[test]
fn levels_select_checks_by_version() {
    let ids = |level, minor| check_ids(LevelVersion::new(level, Version::Minor(minor)));
    assert!(check_ids(LevelVersion::privileged()).is_empty());
    assert_eq!(
        check_ids(LevelVersion::new(Level::Baseline, Version::Latest)),
        [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPathVolumes",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess"
        ]
    );
    assert_eq!(
        check_ids(LevelVersion::new(Level::Restricted, Version::Latest)),
        [
            "appArmorProfile",
            "hostNamespaces",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "sysctls",
            "windowsHostProcess",
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "restrictedVolumes",
            "runAsNonRoot",
            "runAsUser",
            "seccompProfile_restricted"
        ]
    );
    // Before 1.22 restricted keeps the baseline capabilities check; before 1.19 the baseline
    // seccomp (annotation) check; before 1.8 there is no allowPrivilegeEscalation check.
    assert_eq!(
        ids(Level::Restricted, 18),
        [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess",
            "allowPrivilegeEscalation",
            "restrictedVolumes",
            "runAsNonRoot"
        ]
    );
    assert!(!ids(Level::Restricted, 7).contains(&"allowPrivilegeEscalation"));
    assert!(!ids(Level::Restricted, 22).contains(&"runAsUser"));
    assert!(ids(Level::Restricted, 23).contains(&"runAsUser"));
    assert_eq!(ids(Level::Restricted, 29), ids(Level::Restricted, 40));
    assert_eq!(ids(Level::Baseline, 0).len(), 11);
}
