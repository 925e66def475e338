use serde_json::json;

use super::*;
use crate::test_kinds::{def, find};

#[test]
fn pod_gets_scheme_defaults() {
    let mut pod = json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{
            "name": "c",
            "image": "nginx",
            "ports": [{"containerPort": 80}],
            "livenessProbe": {"httpGet": {"port": 80}},
            "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}}
        }],
        "volumes": [{"name": "v"}, {"name": "cm", "configMap": {"name": "x"}}]}
    });
    def("", "pods").apply_defaults(&mut pod);
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["enableServiceLinks"], true);
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["resources"]["limits"], json!({"cpu": "500m", "memory": "1Gi"}));
    assert_eq!(c["resources"]["requests"], json!({"cpu": "500m", "memory": "1Gi"}));
    assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(spec["volumes"][1]["configMap"]["defaultMode"], 420);
}

#[test]
fn tagged_image_is_if_not_present_and_resources_empty() {
    let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}});
    def("", "pods").apply_defaults(&mut pod);
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(pod["spec"]["containers"][0]["resources"], json!({}));
}

#[test]
fn deployment_defaults_and_template_without_service_links() {
    let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    def("apps", "deployments").apply_defaults(&mut d);
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    let t = &d["spec"]["template"]["spec"];
    assert_eq!(t["restartPolicy"], "Always");
    assert!(t.get("enableServiceLinks").is_none());
}

#[test]
fn recreate_strategy_gets_no_rolling_update() {
    let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
    def("apps", "deployments").apply_defaults(&mut d);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn statefulset_and_daemonset_defaults() {
    let mut s = json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}});
    def("apps", "statefulsets").apply_defaults(&mut s);
    assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(s["spec"]["updateStrategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
    assert_eq!(
        s["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(s["spec"]["replicas"], 1);
    assert_eq!(s["spec"]["revisionHistoryLimit"], 10);
    let vct = &s["spec"]["volumeClaimTemplates"][0];
    assert_eq!(vct["spec"]["volumeMode"], "Filesystem");
    assert_eq!(vct["status"]["phase"], "Pending");
    assert_eq!(vct["kind"], "PersistentVolumeClaim");

    let mut d = json!({"spec": {}});
    def("apps", "daemonsets").apply_defaults(&mut d);
    assert_eq!(
        d["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
}

#[test]
fn job_defaults_and_generated_selector() {
    let mut j = json!({
        "metadata": {"name": "pi", "uid": "u-1"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "perl"}], "restartPolicy": "Never"}}}
    });
    let jobs = def("batch", "jobs");
    jobs.apply_defaults(&mut j);
    let s = &j["spec"];
    assert_eq!((s["completions"].clone(), s["parallelism"].clone()), (json!(1), json!(1)));
    assert_eq!(s["backoffLimit"], 6);
    assert_eq!(s["completionMode"], "NonIndexed");
    assert_eq!(s["suspend"], false);
    assert_eq!(s["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(s["manualSelector"], false);
    jobs.prepare_for_create(&mut j);
    let labels = json!({
        "batch.kubernetes.io/controller-uid": "u-1",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "u-1",
        "job-name": "pi",
    });
    assert_eq!(j["spec"]["template"]["metadata"]["labels"], labels);
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}));
    assert_eq!(j["metadata"]["labels"], labels);
    assert_eq!(j["status"], json!({}));
}

#[test]
fn job_parallelism_only_leaves_completions_unset() {
    let mut j = json!({"spec": {"parallelism": 3}});
    def("batch", "jobs").apply_defaults(&mut j);
    assert!(j["spec"].get("completions").is_none());
}

#[test]
fn cronjob_defaults_reach_job_template_pod_spec() {
    let mut c = json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}});
    def("batch", "cronjobs").apply_defaults(&mut c);
    assert_eq!(c["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(c["spec"]["suspend"], false);
    assert_eq!(c["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(c["spec"]["failedJobsHistoryLimit"], 1);
    assert_eq!(c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert!(c["spec"]["jobTemplate"]["spec"].get("backoffLimit").is_none());
}

#[test]
fn service_defaults_and_allocation_helpers() {
    let svcs = def("", "services");
    let mut s = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}});
    svcs.apply_defaults(&mut s);
    assert_eq!(s["spec"]["type"], "ClusterIP");
    assert_eq!(s["spec"]["sessionAffinity"], "None");
    assert_eq!(s["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(s["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
    assert!(s["spec"].get("externalTrafficPolicy").is_none());
    svcs.prepare_for_create(&mut s);
    assert!(needs_cluster_ip(&s));
    set_cluster_ip(&mut s, "10.96.0.10");
    assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(s["status"], json!({"loadBalancer": {}}));
    assert!(node_ports_to_allocate(&s).is_empty());

    let mut np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}]}});
    svcs.apply_defaults(&mut np);
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(node_ports_to_allocate(&np), vec![0]);
    set_node_port(&mut np, 0, 30080);
    assert_eq!(node_ports(&np), vec![30080, 30443]);

    let mut headless = json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}});
    svcs.apply_defaults(&mut headless);
    svcs.prepare_for_create(&mut headless);
    assert!(!needs_cluster_ip(&headless));
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
}

#[test]
fn service_update_keeps_allocated_values() {
    let svcs = def("", "services");
    let old = json!({"metadata": {"name": "a", "uid": "1", "generation": 1}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30001}]}, "status": {"loadBalancer": {}}});
    let mut new = json!({"metadata": {"name": "a"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    svcs.apply_defaults(&mut new);
    svcs.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30001);
    assert_eq!(new["metadata"]["uid"], "1");
    assert_eq!(new["status"], json!({"loadBalancer": {}}));
}

#[test]
fn namespace_defaults_and_create() {
    let ns = def("", "namespaces");
    let mut n = json!({"metadata": {"name": "team-a"}});
    ns.apply_defaults(&mut n);
    ns.prepare_for_create(&mut n);
    assert_eq!(n["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
    assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(n["status"]["phase"], "Active");
}

#[test]
fn secret_string_data_folds_into_data() {
    let mut s = json!({"stringData": {"user": "admin"}, "data": {"a": "Yg=="}});
    def("", "secrets").apply_defaults(&mut s);
    assert_eq!(s["type"], "Opaque");
    assert_eq!(s["data"], json!({"a": "Yg==", "user": "YWRtaW4="}));
    assert!(s.get("stringData").is_none());
}

#[test]
fn rbac_subjects_and_role_ref_api_group() {
    let rb = find("rbac.authorization.k8s.io", "v1", "rolebindings").unwrap();
    let mut b = json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"}]});
    rb.apply_defaults(&mut b);
    assert_eq!(b["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(b["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(b["subjects"][1].get("apiGroup").is_none());
}

#[test]
fn pod_create_sets_phase_and_qos() {
    let pods = def("", "pods");
    let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}});
    pods.apply_defaults(&mut p);
    pods.prepare_for_create(&mut p);
    assert_eq!(p["status"], json!({"phase": "Pending", "qosClass": "Guaranteed"}));
}

#[test]
fn update_bumps_generation_on_spec_change_only() {
    let d = def("apps", "deployments");
    let old = json!({"metadata": {"name": "a", "generation": 3}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
    let mut same = json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}, "status": {"replicas": 9}});
    d.prepare_for_update(&mut same, &old);
    assert_eq!(same["metadata"]["generation"], 3);
    assert_eq!(same["status"], json!({"replicas": 1}));
    let mut changed = json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}});
    d.prepare_for_update(&mut changed, &old);
    assert_eq!(changed["metadata"]["generation"], 4);
}

#[test]
fn defaults_are_idempotent() {
    let d = def("apps", "deployments");
    let mut a = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "0.1"}}}]}}}});
    d.apply_defaults(&mut a);
    let once = a.clone();
    d.apply_defaults(&mut a);
    assert_eq!(a, once);
}

// ---------------------------------------------------------------------------------------------
// admissionregistration.k8s.io and flowcontrol.apiserver.k8s.io.

const AR: &str = "admissionregistration.k8s.io";
const FC: &str = "flowcontrol.apiserver.k8s.io";

fn webhook_config(kind: &str, hooks: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "cfg"}, "webhooks": hooks})
}

#[test]
fn webhooks_get_v1_defaults() {
    let mut m = webhook_config(
        "MutatingWebhookConfiguration",
        json!([{"name": "a.b.c", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                                  "rules": [{"operations": ["*"]}]}]),
    );
    def(AR, "mutatingwebhookconfigurations").apply_defaults(&mut m);
    let h = &m["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    assert!(h.get("sideEffects").is_none(), "v1 has no sideEffects default");
    assert!(h.get("admissionReviewVersions").is_none(), "nor a review versions one");

    let mut v = webhook_config("ValidatingWebhookConfiguration", json!([{"name": "a.b.c", "timeoutSeconds": 3}]));
    def(AR, "validatingwebhookconfigurations").apply_defaults(&mut v);
    assert!(v["webhooks"][0].get("reinvocationPolicy").is_none(), "only mutating webhooks are reinvoked");
    assert_eq!(v["webhooks"][0]["timeoutSeconds"], 3);
}

#[test]
fn policies_and_bindings_get_match_defaults() {
    let mut p = json!({"metadata": {"name": "demo"}, "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]}}});
    def(AR, "validatingadmissionpolicies").apply_defaults(&mut p);
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let mc = &p["spec"]["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    let mut empty = json!({"metadata": {"name": "p"}});
    def(AR, "validatingadmissionpolicies").apply_defaults(&mut empty);
    assert_eq!(empty["spec"], json!({"failurePolicy": "Fail"}), "the spec is a struct: always defaulted");

    let mut b =
        json!({"spec": {"policyName": "p", "matchResources": {"excludeResourceRules": [{"operations": ["*"]}]}}});
    def(AR, "validatingadmissionpolicybindings").apply_defaults(&mut b);
    assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    assert_eq!(b["spec"]["matchResources"]["excludeResourceRules"][0]["scope"], "*");
    assert!(b["spec"].get("paramRef").is_none());
}

#[test]
fn flow_schema_precedence_defaults_to_1000() {
    let mut fs = json!({"spec": {"matchingPrecedence": 0}});
    def(FC, "flowschemas").apply_defaults(&mut fs);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    let mut bare = json!({"metadata": {"name": "x"}});
    def(FC, "flowschemas").apply_defaults(&mut bare);
    assert_eq!(bare["spec"], json!({"matchingPrecedence": 1000}), "the spec is a struct, always defaulted");
    let mut kept = json!({"spec": {"matchingPrecedence": 7}});
    def(FC, "flowschemas").apply_defaults(&mut kept);
    assert_eq!(kept["spec"]["matchingPrecedence"], 7);
}

#[test]
fn priority_levels_get_v1_defaults() {
    let mut pl = json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
    def(FC, "prioritylevelconfigurations").apply_defaults(&mut pl);
    assert_eq!(
        pl["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
               "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    // v1's shares are a pointer: an explicit 0 is kept.
    let mut zero = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}});
    def(FC, "prioritylevelconfigurations").apply_defaults(&mut zero);
    assert_eq!(zero["spec"]["limited"]["nominalConcurrencyShares"], 0);
    let mut null = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": null}}});
    def(FC, "prioritylevelconfigurations").apply_defaults(&mut null);
    assert_eq!(null["spec"]["limited"]["nominalConcurrencyShares"], 30);
    let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
    def(FC, "prioritylevelconfigurations").apply_defaults(&mut exempt);
    assert_eq!(exempt["spec"]["exempt"], json!({"nominalConcurrencyShares": 0, "lendablePercent": 0}));
    let mut no_exempt = json!({"spec": {"type": "Exempt"}});
    def(FC, "prioritylevelconfigurations").apply_defaults(&mut no_exempt);
    assert!(no_exempt["spec"].get("exempt").is_none());
}

#[test]
fn node_ports_are_kept_by_port_name_unless_the_update_gives_them_to_another_port() {
    let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "ports": [
        {"name": "http", "port": 80, "nodePort": 30080}, {"name": "https", "port": 443, "nodePort": 30443}]}});
    // A manifest replaced with http's number changed and no node ports: both keep theirs.
    let mut new = json!({"spec": {"type": "NodePort", "ports": [
        {"name": "http", "port": 8080}, {"name": "https", "port": 443}]}});
    patch_allocated_values(&mut new, &old);
    assert_eq!(
        (&new["spec"]["ports"][0]["nodePort"], &new["spec"]["ports"][1]["nodePort"]),
        (&json!(30080), &json!(30443))
    );
    assert_eq!(new["spec"]["clusterIP"], "10.0.0.5");
    // clusterIPs come over only when the update has none: one it sets is validated as sent.
    let mut new = json!({"spec": {"type": "NodePort", "clusterIPs": ["10.0.0.9"], "ports": []}});
    let mut dual = old.clone();
    dual["spec"]["clusterIPs"] = json!(["10.0.0.5"]);
    patch_allocated_values(&mut new, &dual);
    assert_eq!((&new["spec"]["clusterIP"], &new["spec"]["clusterIPs"]), (&json!("10.0.0.5"), &json!(["10.0.0.9"])));
    let mut new = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "ports": []}});
    patch_allocated_values(&mut new, &dual);
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.5"]), "a list the update left out is kept");
    // The update gives https's port to http: https does not take it back, and gets a new one.
    let mut new = json!({"spec": {"type": "NodePort", "ports": [
        {"name": "http", "port": 80, "nodePort": 30443}, {"name": "https", "port": 443}]}});
    patch_allocated_values(&mut new, &old);
    assert!(new["spec"]["ports"][1].get("nodePort").is_none(), "{new}");
    // A port renamed is a new port.
    let mut new = json!({"spec": {"type": "NodePort", "ports": [{"name": "web", "port": 80}]}});
    patch_allocated_values(&mut new, &old);
    assert!(new["spec"]["ports"][0].get("nodePort").is_none());
    // A Service that held none (a ClusterIP one becoming NodePort) carries none over.
    let mut clusterip = old.clone();
    clusterip["spec"]["type"] = json!("ClusterIP");
    let mut new = json!({"spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}});
    patch_allocated_values(&mut new, &clusterip);
    assert!(new["spec"]["ports"][0].get("nodePort").is_none());
}
