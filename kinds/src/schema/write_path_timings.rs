//! Timings of a write's schema work on one object, a pod as a density run's kubelets write it:
//! field checks, the status patch, managedFields, the protobuf codec and the stored form. Not
//! a test: `cargo test --release -p kinds --lib write_path_timings -- --ignored --nocapture`
//! prints the best of five batches per step (`ONLY=<step>` runs one, for a profiler).

use std::time::Instant;

use apimachinery::managedfields::{FieldManager, Scope};
use serde_json::{Value, json};

fn pod() -> Value {
    json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c8f6d-x2x9k","generateName":"web-7d4b9c8f6d-","namespace":"density","uid":"8b1f0c1e-1c2d-4a7e-9d7e-2f1c3b4a5d6e","resourceVersion":"12345","creationTimestamp":"2026-12-07T20:00:00Z","labels":{"app":"web","pod-template-hash":"7d4b9c8f6d"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f6d","uid":"1b1f0c1e-1c2d-4a7e-9d7e-2f1c3b4a5d6e","controller":true,"blockOwnerDeletion":true}],
    "managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-12-07T20:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1b1f0c1e-1c2d-4a7e-9d7e-2f1c3b4a5d6e\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"pause\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},
      {"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-12-07T20:00:02Z","fieldsType":"FieldsV1","subresource":"status","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}}}]},
    "spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],
     "containers":[{"name":"pause","image":"registry.k8s.io/pause:3.9","resources":{"requests":{"cpu":"10m","memory":"10M"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
     "restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"hollow-node-12","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},
    "status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-07T20:00:01Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-07T20:00:02Z"},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-07T20:00:02Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-07T20:00:00Z"}],
     "hostIP":"10.0.0.12","podIP":"10.64.3.17","podIPs":[{"ip":"10.64.3.17"}],"startTime":"2026-12-07T20:00:01Z","containerStatuses":[{"name":"pause","state":{"running":{"startedAt":"2026-12-07T20:00:02Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.k8s.io/pause:3.9","imageID":"docker://registry.k8s.io/pause:3.9","containerID":"docker://0123456789abcdef","started":true}],"qosClass":"Burstable"}})
}

fn time(name: &str, n: u32, mut f: impl FnMut()) {
    if std::env::var("ONLY").is_ok_and(|only| !name.contains(&only)) {
        return;
    }
    for _ in 0..n / 10 {
        f();
    }
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n / 5 {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / f64::from(n / 5));
    }
    println!("{name}: {best:.2} µs");
}

#[test]
#[ignore]
fn write_path_timings() {
    super::prepare_definitions();
    let p = pod();
    time("check_fields pod", 20000, || {
        let mut o = p.clone();
        std::hint::black_box(apimachinery::schema::check_fields("", "v1", "Pod", &mut o));
    });
    time("clone pod", 20000, || {
        std::hint::black_box(p.clone());
    });
    let node = apimachinery::schema::kind_node("", "v1", "Pod");
    let patch = br#"{"status":{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-12-07T20:01:00Z"}],"containerStatuses":[{"name":"pause","ready":false,"restartCount":1,"image":"registry.k8s.io/pause:3.9","imageID":"x","state":{"running":{"startedAt":"2026-12-07T20:01:00Z"}},"lastState":{}}]}}"#;
    time("smp status", 20000, || {
        std::hint::black_box(apimachinery::patch::strategic::strategic_merge_patch(&p, patch, node).unwrap());
    });
    let fm = FieldManager {
        node,
        api_version: "v1",
        kind: "Pod",
        subresource: "status",
        scope: Scope(&[]),
        now: "2026-12-07T20:01:00Z",
    };
    let patched = apimachinery::patch::strategic::strategic_merge_patch(&p, patch, node).unwrap();
    time("managedFields update (status)", 20000, || {
        let mut n = patched.clone();
        fm.update(Some(&p), &mut n, "kubelet");
        std::hint::black_box(n);
    });
    let bytes = protobuf::encode_object(&p).unwrap();
    time("protobuf encode pod", 20000, || {
        std::hint::black_box(protobuf::encode_object(&p).unwrap());
    });
    time("protobuf decode pod", 20000, || {
        std::hint::black_box(protobuf::decode_object(&bytes).unwrap());
    });
    time("stored form by round trip", 20000, || {
        let raw = protobuf::encode_stored_as(&p, "v1", "Pod").unwrap();
        std::hint::black_box(protobuf::decode_raw(&raw, "v1", "Pod").unwrap());
    });
    time("stored form direct", 20000, || {
        std::hint::black_box(protobuf::stored_form_as(&p, "v1", "Pod").unwrap());
    });
}
