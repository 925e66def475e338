use super::*;
use apimachinery::catalogue::ResourceDef;
use apimachinery::table::*;
use chrono::{TimeDelta, TimeZone};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap()
}

/// An RFC 3339 timestamp `secs` seconds before [`now`].
fn ago(secs: i64) -> String {
    (now() - TimeDelta::seconds(secs)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn def(group: &str, resource: &str) -> &'static ResourceDef {
    crate::builtin::find(group, "v1", resource).unwrap().as_ref()
}

fn table(group: &str, resource: &str, obj: &Value) -> Value {
    object_to_table(def(group, resource).printer(), obj, &TableOptions::default(), now())
}

fn cells(group: &str, resource: &str, obj: Value) -> Value {
    table(group, resource, &obj)["rows"][0]["cells"].clone()
}

fn headers(group: &str, resource: &str) -> Vec<(String, i64)> {
    columns(def(group, resource).printer()).iter().map(|c| (c.name.to_string(), i64::from(c.priority))).collect()
}

fn slice(v: &Value, range: std::ops::Range<usize>) -> Value {
    Value::Array(v.as_array().unwrap()[range].to_vec())
}

fn meta(name: &str, age_secs: i64) -> Value {
    json!({"name": name, "namespace": "default", "creationTimestamp": ago(age_secs), "resourceVersion": "7"})
}

// ---------------------------------------------------------------------------------------------
// HumanDuration.

#[test]
fn human_duration_matches_kube() {
    let s = TimeDelta::seconds;
    let ms = TimeDelta::milliseconds;
    let h = TimeDelta::hours;
    let cases = [
        (s(-2), "<invalid>"),
        (s(-2) + TimeDelta::nanoseconds(1), "0s"),
        (s(0), "0s"),
        (ms(999), "0s"),
        (s(1), "1s"),
        (s(59), "59s"),
        (s(70), "70s"),
        (s(120) - ms(1), "119s"),
        (s(120), "2m"),
        (s(123), "2m3s"),
        (s(190), "3m10s"),
        (s(600) - ms(1), "9m59s"),
        (s(600), "10m"),
        (s(601), "10m"),
        (h(3) - ms(1), "179m"),
        (h(3), "3h"),
        (h(3) + TimeDelta::minutes(5), "3h5m"),
        (h(8) - ms(1), "7h59m"),
        (h(8), "8h"),
        (h(47), "47h"),
        (h(48), "2d"),
        (h(51), "2d3h"),
        (h(8 * 24) - ms(1), "7d23h"),
        (h(8 * 24), "8d"),
        (h(45 * 24), "45d"),
        (h(367 * 24), "367d"),
        (h(2 * 365 * 24) - ms(1), "729d"),
        (h(2 * 365 * 24), "2y"),
        (h(2 * 365 * 24 + 25), "2y1d"),
        (h((3 * 365 + 80) * 24), "3y80d"),
        (h(8 * 365 * 24) - ms(1), "7y364d"),
        (h(8 * 365 * 24 + 2), "8y"),
        (h(9 * 365 * 24), "9y"),
    ];
    for (d, want) in cases {
        assert_eq!(human_duration(d), want, "{d:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Envelope, options, watch.

#[test]
fn table_envelope_for_a_list() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta("cfg", 30), "data": {"a": "1"}});
    let list_meta =
        ListMetaInfo { resource_version: "42".into(), continue_token: "abc".into(), remaining_item_count: Some(3) };
    let t = to_table(def("", "configmaps").printer(), &[&cm], &TableOptions::default(), list_meta, now());
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({"resourceVersion": "42", "continue": "abc", "remainingItemCount": 3}));
    assert_eq!(
        t["columnDefinitions"][0],
        json!({"name": "Name", "type": "string", "format": "name", "description": descriptions::NAME, "priority": 0})
    );
    assert_eq!(t["columnDefinitions"][1]["name"], "Data");
    assert_eq!(t["rows"][0]["cells"], json!(["cfg", 1, "30s"]));
    assert_eq!(
        t["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta("cfg", 30)})
    );
    assert!(t["rows"][0].get("conditions").is_none());
}

#[test]
fn empty_list_has_empty_rows_and_no_metadata_fields() {
    let t = to_table(def("", "pods").printer(), &[], &TableOptions::default(), ListMetaInfo::default(), now());
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["metadata"], json!({}));
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 9);
}

#[test]
fn include_object_variants() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}});
    let with = |include_object| {
        let opts = TableOptions { include_object, ..Default::default() };
        object_to_table(def("", "configmaps").printer(), &cm, &opts, now())["rows"][0].clone()
    };
    assert_eq!(with(IncludeObject::Object)["object"], cm);
    let none = with(IncludeObject::None);
    assert!(none.as_object().unwrap().contains_key("object"));
    assert_eq!(none["object"], Value::Null);
    assert_eq!(
        with(IncludeObject::Metadata)["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": {"name": "x", "creationTimestamp": null}})
    );
    assert_eq!(with(IncludeObject::Metadata)["cells"], json!(["x", 0, "<unknown>"]));
}

#[test]
fn include_object_parse() {
    assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
    assert_eq!(IncludeObject::parse(Some("")).unwrap(), IncludeObject::Metadata);
    assert_eq!(IncludeObject::parse(Some("Object")).unwrap(), IncludeObject::Object);
    assert_eq!(IncludeObject::parse(Some("None")).unwrap(), IncludeObject::None);
    let e = IncludeObject::parse(Some("All")).unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
    );
}

#[test]
fn v1beta1_names_the_table_and_partial_metadata() {
    let opts = TableOptions { version: MetaVersion::V1Beta1, ..Default::default() };
    let t = object_to_table(def("", "namespaces").printer(), &json!({"metadata": {"name": "a"}}), &opts, now());
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
}

#[test]
fn single_object_table_carries_its_resource_version() {
    let t = table("", "namespaces", &json!({"metadata": {"name": "a", "resourceVersion": "9"}}));
    assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
}

#[test]
fn no_headers_nulls_column_definitions() {
    let opts = TableOptions { no_headers: true, ..Default::default() };
    let t = object_to_table(def("", "namespaces").printer(), &json!({"metadata": {"name": "a"}}), &opts, now());
    assert_eq!(t["columnDefinitions"], Value::Null);
    assert_eq!(t["rows"][0]["cells"][0], "a");
}

#[test]
fn watch_sends_headers_on_the_first_event_only() {
    let mut enc = WatchTableEncoder::new(TableOptions::default());
    let ns = def("", "namespaces").printer();
    let a = json!({"metadata": {"name": "a", "resourceVersion": "5"}, "status": {"phase": "Active"}});
    let first = enc.encode(ns, &a, now());
    assert_eq!(first["columnDefinitions"].as_array().unwrap().len(), 3);
    assert_eq!(first["metadata"]["resourceVersion"], "5");
    assert_eq!(first["rows"].as_array().unwrap().len(), 1);
    let second = enc.encode(ns, &a, now());
    assert_eq!(second["columnDefinitions"], Value::Null);
    assert_eq!(second["rows"][0]["cells"], json!(["a", "Active", "<unknown>"]));
}

#[test]
fn watch_passes_status_through_and_still_drops_later_headers() {
    let mut enc = WatchTableEncoder::new(TableOptions::default());
    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410});
    assert_eq!(enc.encode(def("", "pods").printer(), &status, now()), status);
    let next = enc.encode(def("", "pods").printer(), &json!({"metadata": {"name": "p"}}), now());
    assert_eq!(next["columnDefinitions"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Default convertor.

#[test]
fn roles_use_the_default_convertor() {
    let rd = def("rbac.authorization.k8s.io", "roles").printer();
    assert_eq!(headers("rbac.authorization.k8s.io", "roles"), [("Name".into(), 0), ("Created At".into(), 0)]);
    assert_eq!(columns(rd)[1].kind, "date");
    assert_eq!(columns(rd)[1].format, "");
    let role = json!({"metadata": {"name": "reader", "creationTimestamp": "2024-01-02T03:04:05Z"}});
    assert_eq!(cells("rbac.authorization.k8s.io", "roles", role), json!(["reader", "2024-01-02T03:04:05Z"]));
    let t = to_table(rd, &[], &TableOptions::default(), ListMetaInfo::default(), now());
    assert_eq!(t["rows"], Value::Null);
    let cr = def("rbac.authorization.k8s.io", "clusterroles").printer();
    let no_time = object_to_table(cr, &json!({"metadata": {"name": "x"}}), &TableOptions::default(), now());
    assert_eq!(no_time["rows"][0]["cells"], json!(["x", "0001-01-01T00:00:00Z"]));
}

// ---------------------------------------------------------------------------------------------
// Pods.

#[test]
fn pod_columns() {
    assert_eq!(
        headers("", "pods"),
        [
            ("Name".into(), 0),
            ("Ready".into(), 0),
            ("Status".into(), 0),
            ("Restarts".into(), 0),
            ("Age".into(), 0),
            ("IP".into(), 1),
            ("Node".into(), 1),
            ("Nominated Node".into(), 1),
            ("Readiness Gates".into(), 1),
        ]
    );
}

#[test]
fn pending_pod() {
    let pod = json!({
        "metadata": meta("web", 300),
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Pending"}
    });
    assert_eq!(
        cells("", "pods", pod),
        json!(["web", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"])
    );
}

#[test]
fn pending_pod_waiting_for_its_image() {
    let pod = json!({
        "metadata": meta("web", 10),
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
        ]}
    });
    assert_eq!(slice(&cells("", "pods", pod), 1..4), json!(["0/1", "ContainerCreating", "0"]));
}

#[test]
fn running_pod_with_restarts() {
    let pod = json!({
        "metadata": meta("web", 3 * 3600 + 5 * 60),
        "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}],
                 "readinessGates": [{"conditionType": "example.com/gate"}]},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}},
                {"name": "b", "ready": true, "restartCount": 1, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 137, "finishedAt": ago(123)}}}
            ]
        }
    });
    assert_eq!(
        cells("", "pods", pod),
        json!(["web", "2/2", "Running", "3 (2m3s ago)", "3h5m", "10.0.0.5", "node-1", "<none>", "1/1"])
    );
}

#[test]
fn crash_looping_pod_shows_the_waiting_reason() {
    let pod = json!({
        "metadata": meta("web", 60),
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(20)}}}
        ]}
    });
    assert_eq!(slice(&cells("", "pods", pod), 1..4), json!(["0/1", "CrashLoopBackOff", "4 (20s ago)"]));
}

#[test]
fn terminating_pod() {
    let mut pod = json!({
        "metadata": meta("web", 60),
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}
        ]}
    });
    pod["metadata"]["deletionTimestamp"] = json!(ago(5));
    assert_eq!(cells("", "pods", pod.clone())[2], "Terminating");
    pod["status"]["reason"] = json!("NodeLost");
    assert_eq!(cells("", "pods", pod)[2], "Unknown");
}

#[test]
fn terminated_containers_without_reason_print_exit_code_or_signal() {
    let pod = |terminated: Value| {
        json!({
            "metadata": meta("p", 1),
            "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": terminated}}
            ]}
        })
    };
    assert_eq!(cells("", "pods", pod(json!({"exitCode": 3})))[2], "ExitCode:3");
    assert_eq!(cells("", "pods", pod(json!({"exitCode": 0, "signal": 9})))[2], "Signal:9");
    assert_eq!(cells("", "pods", pod(json!({"exitCode": 1, "reason": "OOMKilled"})))[2], "OOMKilled");
}

#[test]
fn succeeded_pod_is_completed_with_a_row_condition() {
    let pod = json!({
        "metadata": meta("job-x", 60),
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ]}
    });
    let t = table("", "pods", &pod);
    assert_eq!(slice(&t["rows"][0]["cells"], 1..3), json!(["0/1", "Completed"]));
    assert_eq!(
        t["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                "message": "The pod has completed successfully."}])
    );
    let mut failed = pod.clone();
    failed["status"]["phase"] = json!("Failed");
    assert_eq!(table("", "pods", &failed)["rows"][0]["conditions"][0]["message"], "The pod failed.");
}

#[test]
fn completed_container_with_another_running_shows_running_or_not_ready() {
    let pod = |ready_condition: &str| {
        json!({
            "metadata": meta("p", 1),
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": ready_condition}],
                "containerStatuses": [
                    {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {"name": "b", "ready": true, "restartCount": 0, "state": {"running": {}}}
                ]}
        })
    };
    assert_eq!(slice(&cells("", "pods", pod("True")), 1..3), json!(["1/2", "Running"]));
    assert_eq!(cells("", "pods", pod("False"))[2], "NotReady");
}

#[test]
fn init_container_progress() {
    let pod = |statuses: Value| {
        json!({
            "metadata": meta("p", 1),
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": statuses,
                "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]}
        })
    };
    let running_second = json!([
        {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "i2", "restartCount": 0, "state": {"running": {}}}
    ]);
    assert_eq!(slice(&cells("", "pods", pod(running_second)), 1..4), json!(["0/1", "Init:1/2", "0"]));
    let crashing = json!([
        {"name": "i1", "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}
    ]);
    assert_eq!(slice(&cells("", "pods", pod(crashing)), 2..4), json!(["Init:CrashLoopBackOff", "5 (30s ago)"]));
    let failed = json!([{"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 2}}}]);
    assert_eq!(cells("", "pods", pod(failed))[2], "Init:ExitCode:2");
    let failed_reason =
        json!([{"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]);
    assert_eq!(cells("", "pods", pod(failed_reason))[2], "Init:Error");
    let initializing = json!([{"name": "i1", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]);
    assert_eq!(cells("", "pods", pod(initializing))[2], "Init:0/2");
}

#[test]
fn sidecar_init_containers_count_as_containers() {
    let pod = json!({
        "metadata": meta("p", 1),
        "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                                       "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
    });
    assert_eq!(slice(&cells("", "pods", pod), 1..4), json!(["2/2", "Running", "1"]));
}

#[test]
fn scheduling_gated_pod() {
    let pod = json!({
        "metadata": meta("p", 1),
        "spec": {"containers": [{"name": "a"}], "schedulingGates": [{"name": "g"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}
    });
    assert_eq!(cells("", "pods", pod)[2], "SchedulingGated");
}

#[test]
fn pod_ip_falls_back_to_pod_ip_field_and_evicted_reason_shows() {
    let pod = json!({
        "metadata": meta("p", 1),
        "spec": {"containers": [{"name": "a"}], "nodeName": "n"},
        "status": {"phase": "Failed", "reason": "Evicted", "podIP": "10.1.1.1", "nominatedNodeName": "n2"}
    });
    let c = cells("", "pods", pod);
    assert_eq!(c[2], "Evicted");
    assert_eq!(slice(&c, 5..8), json!(["10.1.1.1", "n", "n2"]));
}

// ---------------------------------------------------------------------------------------------
// Workloads.

#[test]
fn deployment_with_status() {
    assert_eq!(
        headers("apps", "deployments"),
        [
            ("Name".into(), 0),
            ("Ready".into(), 0),
            ("Up-to-date".into(), 0),
            ("Available".into(), 0),
            ("Age".into(), 0),
            ("Containers".into(), 1),
            ("Images".into(), 1),
            ("Selector".into(), 1),
        ]
    );
    let d = json!({
        "metadata": meta("web", 2 * 86400 + 3 * 3600),
        "spec": {"replicas": 3,
                 "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                 "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}, {"name": "sidecar", "image": "busybox"}]}}},
        "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2}
    });
    assert_eq!(
        cells("apps", "deployments", d),
        json!(["web", "2/3", 3, 2, "2d3h", "nginx,sidecar", "nginx:1.25,busybox", "app=web,tier in (a,b)"])
    );
}

#[test]
fn new_deployment_without_status() {
    let d = json!({"metadata": meta("web", 1), "spec": {"replicas": 1, "template": {"spec": {"containers": []}}}});
    assert_eq!(cells("apps", "deployments", d), json!(["web", "0/1", 0, 0, "1s", "", "", ""]));
}

#[test]
fn replica_set_stateful_set_and_daemon_set() {
    let rs = json!({
        "metadata": meta("web-abc", 90),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 3, "readyReplicas": 1}
    });
    assert_eq!(cells("apps", "replicasets", rs), json!(["web-abc", 3, 3, 1, "90s", "c", "i", "app=web"]));

    let sts = json!({
        "metadata": meta("db", 600),
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres"}]}}},
        "status": {"readyReplicas": 2}
    });
    assert_eq!(headers("apps", "statefulsets").len(), 5);
    assert_eq!(cells("apps", "statefulsets", sts), json!(["db", "2/2", "10m", "pg", "postgres"]));

    let ds = json!({
        "metadata": meta("agent", 60),
        "spec": {"selector": {}, "template": {"spec": {"nodeSelector": {"os": "linux", "arch": "amd64"},
                                                       "containers": [{"name": "a", "image": "agent"}]}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                   "updatedNumberScheduled": 3, "numberAvailable": 2}
    });
    assert_eq!(
        cells("apps", "daemonsets", ds),
        json!(["agent", 3, 3, 2, 3, 2, "arch=amd64,os=linux", "60s", "a", "agent", "<none>"])
    );
}

#[test]
fn job_status_completions_and_duration() {
    let job = |spec: Value, status: Value| json!({"metadata": meta("j", 3600), "spec": spec, "status": status});
    let c = cells(
        "batch",
        "jobs",
        job(
            json!({"completions": 3, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                   "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}),
            json!({"succeeded": 3, "startTime": ago(3600), "completionTime": ago(3600 - 47),
                   "conditions": [{"type": "Complete", "status": "True"}]}),
        ),
    );
    assert_eq!(c, json!(["j", "Complete", "3/3", "47s", "60m", "pi", "perl", "batch.kubernetes.io/controller-uid=u"]));

    let running = cells("batch", "jobs", job(json!({"parallelism": 4}), json!({"startTime": ago(130)})));
    assert_eq!(slice(&running, 1..4), json!(["Running", "0/1 of 4", "2m10s"]));
    let suspended = cells(
        "batch",
        "jobs",
        job(json!({"completions": 1}), json!({"conditions": [{"type": "Suspended", "status": "True"}]})),
    );
    assert_eq!(slice(&suspended, 1..4), json!(["Suspended", "0/1", ""]));
    let failed = cells(
        "batch",
        "jobs",
        job(
            json!({}),
            json!({"conditions": [{"type": "Failed", "status": "True"}, {"type": "Complete", "status": "False"}]}),
        ),
    );
    assert_eq!(slice(&failed, 1..3), json!(["Failed", "0/1"]));
    let mut terminating = job(json!({}), json!({}));
    terminating["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(cells("batch", "jobs", terminating)[1], "Terminating");
}

#[test]
fn cron_job() {
    let cj = json!({
        "metadata": meta("nightly", 7 * 86400),
        "spec": {"schedule": "0 3 * * *", "suspend": false,
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
        "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(9 * 3600)}
    });
    assert_eq!(
        cells("batch", "cronjobs", cj),
        json!(["nightly", "0 3 * * *", "<none>", "False", 1, "9h", "7d", "c", "i", "<none>"])
    );
    let never = json!({"metadata": meta("n", 1), "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC"}});
    assert_eq!(slice(&cells("batch", "cronjobs", never), 2..6), json!(["Etc/UTC", "<unset>", 0, "<none>"]));
}

// ---------------------------------------------------------------------------------------------
// Services, endpoints, nodes.

#[test]
fn service_with_ports_and_node_ports() {
    assert_eq!(
        headers("", "services"),
        [
            ("Name".into(), 0),
            ("Type".into(), 0),
            ("Cluster-IP".into(), 0),
            ("External-IP".into(), 0),
            ("Port(s)".into(), 0),
            ("Age".into(), 0),
            ("Selector".into(), 1),
        ]
    );
    let svc = json!({
        "metadata": meta("web", 45 * 86400),
        "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "selector": {"app": "web"},
                 "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}
    });
    assert_eq!(
        cells("", "services", svc),
        json!(["web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "45d", "app=web"])
    );
}

#[test]
fn service_external_ips_by_type() {
    let svc = |spec: Value, status: Value| json!({"metadata": meta("s", 1), "spec": spec, "status": status});
    let lb_pending = svc(
        json!({"type": "LoadBalancer", "clusterIP": "10.0.0.1", "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
        json!({}),
    );
    assert_eq!(slice(&cells("", "services", lb_pending), 2..5), json!(["10.0.0.1", "<pending>", "443:31443/TCP"]));
    let lb = svc(
        json!({"type": "LoadBalancer", "clusterIP": "10.0.0.1", "externalIPs": ["1.1.1.1"]}),
        json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a-very-long-load-balancer.example.com"}, {"ip": "203.0.113.9"}]}}),
    );
    assert_eq!(cells("", "services", lb)[3], "203.0.113.9,a-very-long-load-balancer.example.com,1.1.1.1");
    let external_name = svc(json!({"type": "ExternalName", "externalName": "db.example.com"}), json!({}));
    assert_eq!(slice(&cells("", "services", external_name), 2..5), json!(["<none>", "db.example.com", "<none>"]));
    let headless = svc(
        json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "externalIPs": ["5.5.5.5", "6.6.6.6"]}),
        json!({}),
    );
    assert_eq!(slice(&cells("", "services", headless), 2..4), json!(["None", "5.5.5.5,6.6.6.6"]));
    assert_eq!(
        slice(&cells("", "services", svc(json!({}), json!({}))), 1..7),
        json!(["", "<none>", "<unknown>", "<none>", "1s", "<none>"])
    );
}

#[test]
fn endpoints_list_three_then_more() {
    let ep = json!({
        "metadata": meta("web", 1),
        "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 8080}, {"port": 9090}]},
            {"addresses": [{"ip": "fd00::1"}]}
        ]
    });
    assert_eq!(cells("", "endpoints", ep)[1], "10.0.0.1:8080,10.0.0.2:8080,10.0.0.1:9090 + 2 more...");
    let v6 =
        json!({"metadata": meta("x", 1), "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]});
    assert_eq!(cells("", "endpoints", v6)[1], "[fd00::1]:80");
    assert_eq!(cells("", "endpoints", json!({"metadata": meta("none", 1)}))[1], "<none>");
    let not_ready = json!({"metadata": meta("nr", 1), "subsets": [{"notReadyAddresses": [{"ip": "10.0.0.3"}], "ports": [{"port": 80}]}]});
    assert_eq!(cells("", "endpoints", not_ready)[1], "");
}

#[test]
fn node_status_roles_and_wide_columns() {
    let node = json!({
        "metadata": {"name": "cp-1", "creationTimestamp": ago(400 * 86400),
                     "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                                "kubernetes.io/role": "master"}},
        "spec": {"unschedulable": true},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": "cp-1"}],
            "nodeInfo": {"kubeletVersion": "v1.30.2", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1.0",
                         "containerRuntimeVersion": "containerd://1.7.13"}
        }
    });
    assert_eq!(
        cells("", "nodes", node),
        json!([
            "cp-1",
            "Ready,SchedulingDisabled",
            "control-plane,master",
            "400d",
            "v1.30.2",
            "192.168.1.10",
            "<none>",
            "Debian GNU/Linux 12",
            "6.1.0",
            "containerd://1.7.13"
        ])
    );
    let bare = json!({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    assert_eq!(
        cells("", "nodes", bare),
        json!(["n", "NotReady", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"])
    );
    assert_eq!(cells("", "nodes", json!({"metadata": {"name": "n"}}))[1], "Unknown");
}

// ---------------------------------------------------------------------------------------------
// Events.

#[test]
fn event_columns_and_cells() {
    assert_eq!(
        headers("", "events"),
        [
            ("Last Seen".into(), 0),
            ("Type".into(), 0),
            ("Reason".into(), 0),
            ("Object".into(), 0),
            ("Subobject".into(), 1),
            ("Source".into(), 1),
            ("Message".into(), 0),
            ("First Seen".into(), 1),
            ("Count".into(), 1),
            ("Name".into(), 1),
        ]
    );
    let ev = json!({
        "metadata": meta("web.17a", 300),
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "fieldPath": "spec.containers{nginx}"},
        "reason": "Pulled", "type": "Normal", "message": "Successfully pulled image \"nginx\"\n",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(300), "lastTimestamp": ago(65), "count": 3
    });
    assert_eq!(
        cells("", "events", ev),
        json!([
            "65s",
            "Normal",
            "Pulled",
            "pod/web",
            "spec.containers{nginx}",
            "kubelet, node-1",
            "Successfully pulled image \"nginx\"",
            "5m",
            3,
            "web.17a"
        ])
    );
}

#[test]
fn new_style_events_use_event_time_series_and_reporting_controller() {
    let core = json!({
        "metadata": meta("e", 10),
        "involvedObject": {"kind": "Node", "name": ""},
        "reason": "Starting", "type": "Normal", "message": "hi",
        "eventTime": "2024-05-01T11:59:00.123456Z",
        "reportingComponent": "kube-proxy", "reportingInstance": "n1"
    });
    assert_eq!(
        cells("", "events", core),
        json!(["59s", "Normal", "Starting", "node", "", "kube-proxy, n1", "hi", "59s", 1, "e"])
    );

    let v1 = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": meta("e2", 10),
        "regarding": {"kind": "Deployment", "name": "web"},
        "reason": "ScalingReplicaSet", "type": "Normal", "note": "Scaled up",
        "eventTime": "2024-05-01T11:50:00.000000Z",
        "series": {"count": 7, "lastObservedTime": "2024-05-01T11:59:30.000000Z"},
        "reportingController": "deployment-controller", "reportingInstance": ""
    });
    assert_eq!(
        cells("events.k8s.io", "events", v1),
        json!([
            "30s",
            "Normal",
            "ScalingReplicaSet",
            "deployment/web",
            "",
            "deployment-controller",
            "Scaled up",
            "10m",
            7,
            "e2"
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Simple kinds.

#[test]
fn secret_config_map_namespace_service_account_and_lease() {
    assert_eq!(
        headers("", "secrets").iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["Name", "Type", "Data", "Age"]
    );
    let secret =
        json!({"metadata": meta("tls", 3661), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
    assert_eq!(cells("", "secrets", secret), json!(["tls", "kubernetes.io/tls", 2, "61m"]));
    let string_data =
        json!({"metadata": meta("s", 1), "type": "Opaque", "data": {"a": ""}, "stringData": {"a": "x", "b": "y"}});
    assert_eq!(cells("", "secrets", string_data)[2], 2);

    let cm = json!({"metadata": meta("c", 1), "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
    assert_eq!(cells("", "configmaps", cm), json!(["c", 3, "1s"]));

    let ns =
        json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(4 * 3600)}, "status": {"phase": "Active"}});
    assert_eq!(cells("", "namespaces", ns), json!(["kube-system", "Active", "4h"]));

    let sa = json!({"metadata": meta("default", 1), "secrets": [{"name": "t"}]});
    assert_eq!(cells("", "serviceaccounts", sa), json!(["default", 1, "1s"]));
    assert_eq!(cells("", "serviceaccounts", json!({"metadata": meta("x", 1)}))[1], 0);

    let lease = json!({"metadata": meta("kube-scheduler", 15), "spec": {"holderIdentity": "cp-1_abc"}});
    assert_eq!(cells("coordination.k8s.io", "leases", lease), json!(["kube-scheduler", "cp-1_abc", "15s"]));
    assert_eq!(cells("coordination.k8s.io", "leases", json!({"metadata": meta("l", 1)}))[1], "");
}

#[test]
fn role_bindings_list_subjects() {
    let rb = json!({
        "metadata": meta("read-pods", 1),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [
            {"kind": "User", "name": "jane"}, {"kind": "User", "name": "joe"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}
        ]
    });
    assert_eq!(
        cells("rbac.authorization.k8s.io", "rolebindings", rb),
        json!(["read-pods", "Role/pod-reader", "1s", "jane, joe", "devs", "ci/builder"])
    );
    let crb = json!({"metadata": meta("admin", 1), "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
                     "subjects": [{"kind": "Group", "name": "system:masters"}]});
    assert_eq!(
        cells("rbac.authorization.k8s.io", "clusterrolebindings", crb),
        json!(["admin", "ClusterRole/cluster-admin", "1s", "", "system:masters", ""])
    );
    assert_eq!(headers("rbac.authorization.k8s.io", "clusterrolebindings")[3], ("Users".into(), 1));
}

#[test]
fn every_row_has_one_cell_per_column() {
    for d in crate::builtin::resources() {
        let t = object_to_table(d.printer(), &json!({"metadata": {"name": "x"}}), &TableOptions::default(), now());
        let cols = t["columnDefinitions"].as_array().unwrap().len();
        assert_eq!(t["rows"][0]["cells"].as_array().unwrap().len(), cols, "{}", d.resource);
    }
}

// ---------------------------------------------------------------------------------------------
// admissionregistration.k8s.io and flowcontrol.apiserver.k8s.io.

const AR: &str = "admissionregistration.k8s.io";
const FC: &str = "flowcontrol.apiserver.k8s.io";

fn cluster_meta(name: &str, age_secs: i64) -> Value {
    json!({"name": name, "creationTimestamp": ago(age_secs)})
}

fn names_of(h: Vec<(String, i64)>) -> Vec<String> {
    h.into_iter().map(|(n, _)| n).collect()
}

#[test]
fn webhook_configurations_count_their_webhooks() {
    for resource in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        assert_eq!(names_of(headers(AR, resource)), vec!["Name", "Webhooks", "Age"]);
        let cfg = json!({"metadata": cluster_meta("cfg", 65), "webhooks": [{"name": "a.b.c"}, {"name": "d.e.f"}]});
        assert_eq!(cells(AR, resource, cfg), json!(["cfg", 2, "65s"]));
        assert_eq!(cells(AR, resource, json!({"metadata": cluster_meta("none", 1)})), json!(["none", 0, "1s"]));
    }
    let t = table(AR, "mutatingwebhookconfigurations", &json!({"metadata": cluster_meta("c", 1)}));
    assert_eq!(t["columnDefinitions"][1]["type"], "integer");
    assert_eq!(
        t["columnDefinitions"][1]["description"],
        "Webhooks indicates the number of webhooks registered in this configuration"
    );
}

#[test]
fn validating_admission_policies_and_bindings() {
    assert_eq!(names_of(headers(AR, "validatingadmissionpolicies")), vec!["Name", "Validations", "ParamKind", "Age"]);
    let p = json!({"metadata": cluster_meta("limit", 3600),
                   "spec": {"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                            "validations": [{"expression": "true"}, {"expression": "false"}]}});
    assert_eq!(
        cells(AR, "validatingadmissionpolicies", p),
        json!(["limit", 2, "rules.example.com/v1/ReplicaLimit", "60m"])
    );
    let bare = json!({"metadata": cluster_meta("audit-only", 1), "spec": {"auditAnnotations": [{"key": "k"}]}});
    assert_eq!(cells(AR, "validatingadmissionpolicies", bare), json!(["audit-only", 0, "<unset>", "1s"]));

    assert_eq!(
        names_of(headers(AR, "validatingadmissionpolicybindings")),
        vec!["Name", "PolicyName", "ParamRef", "Age"]
    );
    let binding = |param: Value| {
        let mut b = json!({"metadata": cluster_meta("b", 1), "spec": {"policyName": "limit"}});
        if !param.is_null() {
            b["spec"]["paramRef"] = param;
        }
        cells(AR, "validatingadmissionpolicybindings", b)[2].clone()
    };
    assert_eq!(binding(Value::Null), json!("<unset>"));
    assert_eq!(binding(json!({"name": "p", "namespace": "ns"})), json!("ns/p"));
    assert_eq!(binding(json!({"name": "p"})), json!("*/p"), "no namespace: could be any");
    assert_eq!(
        binding(json!({"selector": {"matchLabels": {"tier": "web", "app": "x"},
                                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}})),
        json!(
            "&LabelSelector{MatchLabels:map[string]string{app: x,tier: web,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[a b],},},}"
        )
    );
    assert_eq!(
        binding(json!({"selector": {}})),
        json!("&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}")
    );
    assert_eq!(binding(json!({"parameterNotFoundAction": "Deny"})), json!("<unset>"));
}

#[test]
fn flow_schemas_print_in_matching_order() {
    assert_eq!(
        names_of(headers(FC, "flowschemas")),
        vec!["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"]
    );
    let fs = |name: &str, precedence: i64| {
        json!({"metadata": cluster_meta(name, 120), "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                                                               "matchingPrecedence": precedence}})
    };
    assert_eq!(cells(FC, "flowschemas", fs("a", 9000)), json!(["a", "workload-low", 9000, "<none>", "2m", "?"]));
    let mut dangling = fs("b", 800);
    dangling["spec"]["distinguisherMethod"] = json!({"type": "ByUser"});
    dangling["status"] =
        json!({"conditions": [{"type": "Other", "status": "True"}, {"type": "Dangling", "status": "False"}]});
    assert_eq!(cells(FC, "flowschemas", dangling), json!(["b", "workload-low", 800, "ByUser", "2m", "False"]));
    let (z, y, x) = (fs("z", 100), fs("y", 500), fs("x", 500));
    let t = to_table(
        def(FC, "flowschemas").printer(),
        &[&y, &z, &x],
        &TableOptions::default(),
        ListMetaInfo::default(),
        now(),
    );
    let order: Vec<&str> = t["rows"].as_array().unwrap().iter().map(|r| r["cells"][0].as_str().unwrap()).collect();
    assert_eq!(order, vec!["z", "x", "y"], "by precedence, then name");
}

#[test]
fn priority_levels_print_limits_or_none() {
    assert_eq!(
        names_of(headers(FC, "prioritylevelconfigurations")),
        vec!["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"]
    );
    let queued = json!({"metadata": cluster_meta("workload-low", 5), "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
    assert_eq!(
        cells(FC, "prioritylevelconfigurations", queued),
        json!(["workload-low", "Limited", 100, 128, 6, 50, "5s"])
    );
    let rejecting = json!({"metadata": cluster_meta("catch-all", 5), "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}});
    assert_eq!(
        cells(FC, "prioritylevelconfigurations", rejecting),
        json!(["catch-all", "Limited", 5, "<none>", "<none>", "<none>", "5s"])
    );
    let exempt = json!({"metadata": cluster_meta("exempt", 5), "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}});
    assert_eq!(
        cells(FC, "prioritylevelconfigurations", exempt),
        json!(["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5s"])
    );
}
