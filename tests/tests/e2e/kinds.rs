//! The built-in kinds beyond the common ones, as kubectl and a raw client see them: a manifest
//! of one of each applied, their `kubectl get` tables, an HPA through both versions, their
//! validation, and discovery as `kubectl api-resources` lists it.

use serde_json::{Value, json};
use tests::{Caller, TestServer};

const MANIFEST: &str = include_str!("all-kinds.yaml");
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

pub(crate) async fn call(s: &TestServer, method: &str, path: &str, accept: &str, body: Option<Value>) -> (u16, Value) {
    let answer = s.request(Caller::Admin, method, path).header("Accept", accept).json_opt(body.as_ref()).send().await;
    (answer.code, answer.body)
}

/// `*` matches any cell (ages).
fn check_table(path: &str, table: &Value, columns: &[&str], cells: &[Value]) {
    let names: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, columns, "{path}: columns");
    let row = &table["rows"][0]["cells"];
    for (i, want) in cells.iter().enumerate() {
        if want != "*" {
            assert_eq!(&row[i], want, "{path}: cell {i} ({}) of {row}", columns[i]);
        }
    }
}

#[actix_web::test]
async fn every_newly_served_kind_applies_and_prints_kube_columns() {
    let s = TestServer::start();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], MANIFEST);
    let stdout = tests::assert_success("kubectl apply", &out);
    assert_eq!(stdout.lines().filter(|l| l.ends_with(" created")).count(), 21, "{stdout}");

    let ns = "/api/v1/namespaces/default";
    let cases: Vec<(String, Vec<&str>, Vec<Value>)> = vec![
        (
            "/api/v1/persistentvolumes".into(),
            vec![
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode",
            ],
            vec![
                json!("pv1"),
                json!("1Gi"),
                json!("RWO"),
                json!("Retain"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!("<unset>"),
                json!(""),
                json!("*"),
                json!("Filesystem"),
            ],
        ),
        (
            format!("{ns}/persistentvolumeclaims"),
            vec![
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
            vec![
                json!("claim1"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("<unset>"),
                json!("*"),
                json!("Filesystem"),
            ],
        ),
        (
            format!("{ns}/resourcequotas"),
            vec!["Name", "Age", "Request", "Limit"],
            // Request is `used/hard` once the quota controller has counted it (see quota.rs).
            vec![json!("quota1"), json!("*"), json!("*"), json!("")],
        ),
        (format!("{ns}/limitranges"), vec!["Name", "Created At"], vec![json!("limits1")]),
        (
            format!("{ns}/podtemplates"),
            vec!["Name", "Containers", "Images", "Pod Labels"],
            vec![json!("tmpl1"), json!("c"), json!("nginx"), json!("app=web")],
        ),
        (
            format!("{ns}/replicationcontrollers"),
            vec!["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"],
            vec![json!("rc1"), json!(2), json!(0), json!(0), json!("*"), json!("c"), json!("nginx"), json!("app=rc1")],
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions".into(),
            vec!["Name", "Controller", "Revision", "Age"],
            vec![json!("rev1"), json!("daemonset.apps/ds1"), json!(3)],
        ),
        (
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers".into(),
            vec!["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
            vec![json!("hpa1"), json!("Deployment/web"), json!("cpu: <unknown>/60%"), json!("1"), json!(5), json!(0)],
        ),
        (
            "/apis/certificates.k8s.io/v1/certificatesigningrequests".into(),
            vec!["Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"],
            vec![json!("csr1"), json!("*"), json!("example.com/signer"), json!("*"), json!("24h"), json!("Pending")],
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices".into(),
            vec!["Name", "AddressType", "Ports", "Endpoints", "Age"],
            vec![json!("slice1"), json!("IPv4"), json!("80"), json!("10.0.0.1")],
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses".into(),
            vec!["Name", "Class", "Hosts", "Address", "Ports", "Age"],
            vec![json!("ing1"), json!("nginx"), json!("shop.example.com"), json!(""), json!("80")],
        ),
        (
            "/apis/networking.k8s.io/v1/ingressclasses".into(),
            vec!["Name", "Controller", "Parameters", "Age"],
            vec![json!("nginx"), json!("example.com/ingress-nginx"), json!("<none>")],
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies".into(),
            vec!["Name", "Pod-Selector", "Age"],
            vec![json!("np1"), json!("app=web")],
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses".into(),
            vec!["Name", "Handler", "Age"],
            vec![json!("gvisor"), json!("runsc")],
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets".into(),
            vec!["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
            vec![json!("pdb1"), json!("1"), json!("N/A"), json!(0)],
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses/high".into(),
            vec!["Name", "Value", "Global-Default", "Age"],
            vec![json!("high"), json!(1000), json!(false)],
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses".into(),
            vec!["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"],
            vec![json!("fast"), json!("example.com/fast"), json!("Delete"), json!("Immediate"), json!(false)],
        ),
        (
            "/apis/storage.k8s.io/v1/csidrivers".into(),
            vec![
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age",
            ],
            vec![
                json!("csi.example.com"),
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent"),
            ],
        ),
        ("/apis/storage.k8s.io/v1/csinodes".into(), vec!["Name", "Drivers", "Age"], vec![json!("node1"), json!(1)]),
        (
            "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities".into(),
            vec!["Name", "StorageClassName", "Capacity"],
            vec![json!("cap1"), json!("fast"), json!("10Gi")],
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments".into(),
            vec!["Name", "Attacher", "PV", "Node", "Attached", "Age"],
            vec![json!("va1"), json!("csi.example.com"), json!("pv1"), json!("node1"), json!(false)],
        ),
    ];
    for (path, columns, cells) in &cases {
        let (code, table) = call(&s, "GET", path, TABLE, None).await;
        assert_eq!(code, 200, "{path}: {table}");
        check_table(path, &table, columns, cells);
    }
    // The requester is who created the request, whatever the body said.
    let (_, csr) =
        call(&s, "GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr1", "application/json", None).await;
    assert_eq!(csr["spec"]["groups"], json!(["system:masters", "system:authenticated"]));
    // Approval through kubectl, then what the condition rules refuse.
    s.kubectl_ok(&["certificate", "approve", "csr1"]);
    let approval = "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr1/approval";
    let (_, mut approved) = call(&s, "GET", approval, "application/json", None).await;
    let condition = &approved["status"]["conditions"][0];
    assert_eq!((condition["type"].as_str(), condition["reason"].as_str()), (Some("Approved"), Some("KubectlApprove")));
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    approved["status"]["conditions"].as_array_mut().unwrap().push(json!({"type": "Denied", "status": "True"}));
    let (code, st) = call(&s, "PUT", approval, "application/json", Some(approved.clone())).await;
    assert_eq!(
        (code, st["message"].as_str()),
        (
            422,
            Some(
                "CertificateSigningRequest.certificates.k8s.io \"csr1\" is invalid: status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
            )
        )
    );
    approved["status"]["conditions"] = json!([]);
    let (code, st) = call(&s, "PUT", approval, "application/json", Some(approved)).await;
    assert_eq!(
        (code, st["message"].as_str()),
        (
            422,
            Some(
                "CertificateSigningRequest.certificates.k8s.io \"csr1\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            )
        )
    );
    // The system classes are there from the start, as kube's bootstrap hook makes them, and
    // cannot be deleted.
    let (code, st) =
        call(&s, "DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", "application/json", None)
            .await;
    assert_eq!(
        (code, st["message"].as_str()),
        (
            403,
            Some(
                "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
            )
        )
    );
    let pcs =
        s.kubectl_ok(&["get", "priorityclasses", "-o", "custom-columns=N:.metadata.name,V:.value", "--no-headers"]);
    assert!(
        pcs.contains("system-cluster-critical   2000000000") && pcs.contains("system-node-critical      2000001000"),
        "{pcs}"
    );
    // kubectl renders the same table.
    let quota = s.kubectl_ok(&["get", "sc"]);
    assert!(
        quota.starts_with("NAME   PROVISIONER        RECLAIMPOLICY   VOLUMEBINDINGMODE   ALLOWVOLUMEEXPANSION   AGE"),
        "{quota}"
    );
}

#[actix_web::test]
async fn an_hpa_written_at_v2_reads_at_v1_and_back_with_nothing_lost() {
    let s = TestServer::start();
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let hpa = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Pods", "pods": {"metric": {"name": "pps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}
        }
    });
    let (code, created) = call(&s, "POST", v2, "application/json", Some(hpa)).await;
    assert_eq!(code, 201, "{created}");
    // v2 defaults filled the behaviour.
    assert_eq!(
        created["spec"]["behavior"]["scaleUp"]["policies"][0],
        json!({"type": "Pods", "value": 4, "periodSeconds": 15})
    );

    let (code, old) = call(&s, "GET", &format!("{v1}/web"), "application/json", None).await;
    assert_eq!(code, 200);
    assert_eq!(old["apiVersion"], "autoscaling/v1");
    assert_eq!(old["spec"]["targetCPUUtilizationPercentage"], 50);
    assert!(old["spec"].get("metrics").is_none());
    let annotations = &old["metadata"]["annotations"];
    assert_eq!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Pods","pods":{"metricName":"pps","targetAverageValue":"1k"}}]"#
    );
    assert!(
        annotations["autoscaling.alpha.kubernetes.io/behavior"]
            .as_str()
            .unwrap()
            .contains(r#""ScaleDown":{"StabilizationWindowSeconds":300"#)
    );

    // A v1 client changes what it knows and writes the object back.
    let mut edited = old.clone();
    edited["spec"]["maxReplicas"] = json!(12);
    let (code, put) = call(&s, "PUT", &format!("{v1}/web"), "application/json", Some(edited)).await;
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["apiVersion"], "autoscaling/v1");

    let (_, back) = call(&s, "GET", &format!("{v2}/web"), "application/json", None).await;
    assert_eq!(back["spec"]["maxReplicas"], 12);
    assert_eq!(back["spec"]["minReplicas"], 2);
    // Both metrics survive (kube puts the CPU one last), and so does the behaviour.
    assert_eq!(
        back["spec"]["metrics"],
        json!([
            {"type": "Pods", "pods": {"metric": {"name": "pps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
        ])
    );
    assert_eq!(back["spec"]["behavior"], created["spec"]["behavior"]);
    assert!(back["metadata"].get("annotations").is_none(), "the round-trip annotations are not stored: {back}");

    // A v1 create without a target gets kube's implicit 80% CPU.
    let bare = json!({"metadata": {"name": "bare"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3}});
    let (code, made) = call(&s, "POST", v1, "application/json", Some(bare)).await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(made["spec"]["minReplicas"], 1);
}

#[actix_web::test]
async fn invalid_objects_of_the_new_kinds_get_kube_causes() {
    let s = TestServer::start();
    let cases = [
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}}),
            "PersistentVolumeClaim \"c\" is invalid: spec.resources[storage]: Required value",
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            json!({"metadata": {"name": "system-mine"}, "value": 5}),
            "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            json!({"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
            "Ingress.networking.k8s.io \"i\" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"metadata": {"name": "s"}, "reclaimPolicy": "Recycle"}),
            "StorageClass.storage.k8s.io \"s\" is invalid: [provisioner: Required value, reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"]",
        ),
        (
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 3, "maxReplicas": 2}}),
            "HorizontalPodAutoscaler.autoscaling \"h\" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            json!({"metadata": {"name": "n"}, "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]}}),
            "NetworkPolicy.networking.k8s.io \"n\" is invalid: spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`",
        ),
        (
            "/api/v1/namespaces/default/limitranges",
            // The default limit and request are defaulted from max (1Gi), then checked against min.
            json!({"metadata": {"name": "l"}, "spec": {"limits": [{"type": "Container", "min": {"memory": "2Gi"}, "max": {"memory": "1Gi"}}]}}),
            "LimitRange \"l\" is invalid: [spec.limits[0].min[memory]: Invalid value: \"2Gi\": min value 2Gi is greater than max value 1Gi, spec.limits[0].defaultRequest[memory]: Invalid value: \"1Gi\": min value 2Gi is greater than default request value 1Gi, spec.limits[0].default[memory]: Invalid value: \"2Gi\": min value 2Gi is greater than default value 1Gi]",
        ),
        (
            "/api/v1/namespaces/default/resourcequotas",
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0.5"}}}),
            "ResourceQuota \"q\" is invalid: spec.hard[pods]: Invalid value: \"500m\": must be an integer",
        ),
        (
            // "hi\n" is no PEM block; kube prints the bytes as a Go []byte.
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({"metadata": {"name": "c"}, "spec": {"request": "aGkK", "signerName": "example.com/s", "usages": ["client auth"]}}),
            "CertificateSigningRequest.certificates.k8s.io \"c\" is invalid: spec.request: Invalid value: []byte{0x68, 0x69, 0x0a}: PEM block type must be CERTIFICATE REQUEST",
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": [{"addresses": ["0.0.0.0"]}]}),
            "EndpointSlice.discovery.k8s.io \"e\" is invalid: endpoints[0].addresses[0]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
        ),
    ];
    for (path, body, message) in cases {
        let (code, status) = call(&s, "POST", path, "application/json", Some(body)).await;
        assert_eq!(
            (code, status["reason"].as_str(), status["message"].as_str()),
            (422, Some("Invalid"), Some(message)),
            "{path}"
        );
    }
    let (_, list) =
        call(&s, "GET", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json", None).await;
    assert_eq!(list["items"], json!([]), "nothing invalid was stored");
}

/// `kubectl api-resources -o wide` of kube-apiserver 1.30 for the groups this server serves,
/// whitespace collapsed.
const KUBE_1_30_API_RESOURCES: &str = "\
bindings v1 true Binding create
componentstatuses cs v1 false ComponentStatus get,list
configmaps cm v1 true ConfigMap create,delete,deletecollection,get,list,patch,update,watch
endpoints ep v1 true Endpoints create,delete,deletecollection,get,list,patch,update,watch
events ev v1 true Event create,delete,deletecollection,get,list,patch,update,watch
limitranges limits v1 true LimitRange create,delete,deletecollection,get,list,patch,update,watch
namespaces ns v1 false Namespace create,delete,get,list,patch,update,watch
nodes no v1 false Node create,delete,deletecollection,get,list,patch,update,watch
persistentvolumeclaims pvc v1 true PersistentVolumeClaim create,delete,deletecollection,get,list,patch,update,watch
persistentvolumes pv v1 false PersistentVolume create,delete,deletecollection,get,list,patch,update,watch
pods po v1 true Pod create,delete,deletecollection,get,list,patch,update,watch all
podtemplates v1 true PodTemplate create,delete,deletecollection,get,list,patch,update,watch
replicationcontrollers rc v1 true ReplicationController create,delete,deletecollection,get,list,patch,update,watch all
resourcequotas quota v1 true ResourceQuota create,delete,deletecollection,get,list,patch,update,watch
secrets v1 true Secret create,delete,deletecollection,get,list,patch,update,watch
serviceaccounts sa v1 true ServiceAccount create,delete,deletecollection,get,list,patch,update,watch
services svc v1 true Service create,delete,deletecollection,get,list,patch,update,watch all
mutatingwebhookconfigurations admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration create,delete,deletecollection,get,list,patch,update,watch api-extensions
validatingadmissionpolicies admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy create,delete,deletecollection,get,list,patch,update,watch api-extensions
validatingadmissionpolicybindings admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding create,delete,deletecollection,get,list,patch,update,watch api-extensions
validatingwebhookconfigurations admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration create,delete,deletecollection,get,list,patch,update,watch api-extensions
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition create,delete,deletecollection,get,list,patch,update,watch api-extensions
apiservices apiregistration.k8s.io/v1 false APIService create,delete,deletecollection,get,list,patch,update,watch api-extensions
controllerrevisions apps/v1 true ControllerRevision create,delete,deletecollection,get,list,patch,update,watch
daemonsets ds apps/v1 true DaemonSet create,delete,deletecollection,get,list,patch,update,watch all
deployments deploy apps/v1 true Deployment create,delete,deletecollection,get,list,patch,update,watch all
replicasets rs apps/v1 true ReplicaSet create,delete,deletecollection,get,list,patch,update,watch all
statefulsets sts apps/v1 true StatefulSet create,delete,deletecollection,get,list,patch,update,watch all
selfsubjectreviews authentication.k8s.io/v1 false SelfSubjectReview create
tokenreviews authentication.k8s.io/v1 false TokenReview create
localsubjectaccessreviews authorization.k8s.io/v1 true LocalSubjectAccessReview create
selfsubjectaccessreviews authorization.k8s.io/v1 false SelfSubjectAccessReview create
selfsubjectrulesreviews authorization.k8s.io/v1 false SelfSubjectRulesReview create
subjectaccessreviews authorization.k8s.io/v1 false SubjectAccessReview create
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler create,delete,deletecollection,get,list,patch,update,watch all
cronjobs cj batch/v1 true CronJob create,delete,deletecollection,get,list,patch,update,watch all
jobs batch/v1 true Job create,delete,deletecollection,get,list,patch,update,watch all
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest create,delete,deletecollection,get,list,patch,update,watch
leases coordination.k8s.io/v1 true Lease create,delete,deletecollection,get,list,patch,update,watch
endpointslices discovery.k8s.io/v1 true EndpointSlice create,delete,deletecollection,get,list,patch,update,watch
events ev events.k8s.io/v1 true Event create,delete,deletecollection,get,list,patch,update,watch
flowschemas flowcontrol.apiserver.k8s.io/v1 false FlowSchema create,delete,deletecollection,get,list,patch,update,watch
prioritylevelconfigurations flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration create,delete,deletecollection,get,list,patch,update,watch
ingressclasses networking.k8s.io/v1 false IngressClass create,delete,deletecollection,get,list,patch,update,watch
ingresses ing networking.k8s.io/v1 true Ingress create,delete,deletecollection,get,list,patch,update,watch
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy create,delete,deletecollection,get,list,patch,update,watch
runtimeclasses node.k8s.io/v1 false RuntimeClass create,delete,deletecollection,get,list,patch,update,watch
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget create,delete,deletecollection,get,list,patch,update,watch
clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding create,delete,deletecollection,get,list,patch,update,watch
clusterroles rbac.authorization.k8s.io/v1 false ClusterRole create,delete,deletecollection,get,list,patch,update,watch
rolebindings rbac.authorization.k8s.io/v1 true RoleBinding create,delete,deletecollection,get,list,patch,update,watch
roles rbac.authorization.k8s.io/v1 true Role create,delete,deletecollection,get,list,patch,update,watch
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass create,delete,deletecollection,get,list,patch,update,watch
csidrivers storage.k8s.io/v1 false CSIDriver create,delete,deletecollection,get,list,patch,update,watch
csinodes storage.k8s.io/v1 false CSINode create,delete,deletecollection,get,list,patch,update,watch
csistoragecapacities storage.k8s.io/v1 true CSIStorageCapacity create,delete,deletecollection,get,list,patch,update,watch
storageclasses sc storage.k8s.io/v1 false StorageClass create,delete,deletecollection,get,list,patch,update,watch
volumeattachments storage.k8s.io/v1 false VolumeAttachment create,delete,deletecollection,get,list,patch,update,watch";

#[test]
fn api_resources_list_what_kube_1_30_lists() {
    let s = TestServer::start();
    let out = s.kubectl_ok(&["api-resources", "-o", "wide", "--no-headers"]);
    let got: Vec<String> = out.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    let want: Vec<&str> = KUBE_1_30_API_RESOURCES.lines().collect();
    assert_eq!(got, want);
    let versions = s.kubectl_ok(&["api-versions"]);
    assert!(versions.contains("autoscaling/v1\nautoscaling/v2\n"), "{versions}");
}

#[actix_web::test]
async fn evictions_honour_disruption_budgets() {
    let s = TestServer::start();
    let pods = "/api/v1/namespaces/default/pods";
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pod = json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(call(&s, "POST", pods, "application/json", Some(pod)).await.0, 201);
    merge(
        &s,
        &format!("{pods}/web/status"),
        json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await;
    let pdb = json!({"metadata": {"name": "web-pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let (code, created) = call(&s, "POST", pdbs, "application/json", Some(pdb)).await;
    assert_eq!(code, 201, "{created}");
    let eviction =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web", "namespace": "default"}});
    let evict = format!("{pods}/web/eviction");

    // Not yet observed by a disruption controller: retry later.
    let (code, st) = call(&s, "POST", &evict, "application/json", Some(eviction.clone())).await;
    assert_eq!((code, st["reason"].as_str()), (429, Some("TooManyRequests")), "{st}");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "The disruption budget web-pdb is still being processed by the server."
    );
    assert_eq!(st["details"]["retryAfterSeconds"], 10);

    // Observed, and no disruption allowed: the budget refuses, naming its numbers.
    let status = json!({"status": {"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 1}});
    merge(&s, &format!("{pdbs}/web-pdb/status"), status).await;
    let (code, st) = call(&s, "POST", &evict, "application/json", Some(eviction.clone())).await;
    assert_eq!(code, 429, "{st}");
    assert_eq!(st["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"}])
    );
    assert_eq!(call(&s, "GET", &format!("{pods}/web"), "application/json", None).await.0, 200, "the pod stays");

    // One disruption allowed: the eviction deletes the pod and spends it.
    merge(&s, &format!("{pdbs}/web-pdb/status"), json!({"status": {"disruptionsAllowed": 1}})).await;
    let (code, st) = call(&s, "POST", &evict, "application/json", Some(eviction)).await;
    assert_eq!(
        (code, &st),
        (201, &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}))
    );
    assert_eq!(call(&s, "GET", &format!("{pods}/web"), "application/json", None).await.0, 404);
    let (_, budget) = call(&s, "GET", &format!("{pdbs}/web-pdb"), "application/json", None).await;
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(budget["status"]["disruptedPods"]["web"].is_string(), "{budget}");
}

async fn merge(s: &TestServer, path: &str, patch: Value) {
    let client = s.client(true);
    let mut r = client
        .patch(s.url(path))
        .insert_header(("Content-Type", "application/merge-patch+json"))
        .send_body(patch.to_string())
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{path}: {:?}", r.body().await);
}

/// The top-level `bindings` resource: a pods/binding naming its pod in the body; only `create`.
#[actix_web::test]
async fn top_level_bindings_bind_the_named_pod() {
    let s = TestServer::start();
    let ns = "/api/v1/namespaces/default";
    for name in ["a", "gated"] {
        let mut pod = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if name == "gated" {
            pod["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
        }
        assert_eq!(call(&s, "POST", &format!("{ns}/pods"), "application/json", Some(pod)).await.0, 201);
    }
    let binding = |pod: &str, target: Value| json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": target});

    // kube validates a binding outside its 422 path: a reasonless 500 naming the fields.
    let bad = binding("a", json!({"kind": "Pod"}));
    let (code, st) = call(&s, "POST", &format!("{ns}/bindings"), "application/json", Some(bad)).await;
    assert_eq!(code, 500, "{st}");
    assert_eq!(st["reason"], Value::Null);
    assert_eq!(
        st["message"],
        "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );
    let (code, st) =
        call(&s, "POST", &format!("{ns}/bindings"), "application/json", Some(binding("gated", json!({"name": "n1"}))))
            .await;
    assert_eq!(code, 409, "{st}");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
    );
    let (code, st) =
        call(&s, "POST", &format!("{ns}/bindings"), "application/json", Some(binding("nope", json!({"name": "n1"}))))
            .await;
    assert_eq!((code, st["message"].as_str()), (404, Some("pods \"nope\" not found")));

    let (code, st) =
        call(&s, "POST", &format!("{ns}/bindings"), "application/json", Some(binding("a", json!({"name": "n1"}))))
            .await;
    assert_eq!((code, st["status"].as_str(), st["code"].as_i64()), (201, Some("Success"), Some(201)), "{st}");
    let (_, got) = call(&s, "GET", &format!("{ns}/pods/a"), "application/json", None).await;
    assert_eq!(got["spec"]["nodeName"], "n1");

    // Nothing to read back: only create is served.
    assert_eq!(call(&s, "GET", &format!("{ns}/bindings"), "application/json", None).await.0, 405);
    assert_eq!(call(&s, "GET", &format!("{ns}/bindings/a"), "application/json", None).await.0, 404);
    assert_eq!(call(&s, "GET", "/api/v1/bindings", "application/json", None).await.0, 404);
    let out = s.kubectl_ok(&["api-resources", "--verbs=create", "--namespaced=true", "-o", "name"]);
    assert!(out.lines().any(|l| l == "bindings"), "{out}");
}

#[actix_web::test]
async fn binding_ephemeral_containers_and_kubelet_subresources() {
    let s = TestServer::start();
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(call(&s, "POST", pods, "application/json", Some(pod)).await.0, 201);

    // Before scheduling: no host to reach.
    let (code, st) = call(&s, "GET", &format!("{pods}/p/exec?command=ls&stdout=1"), "application/json", None).await;
    assert_eq!((code, st["message"].as_str()), (400, Some("pod p does not have a host assigned")));
    let (code, st) = call(&s, "GET", &format!("{pods}/p/log?container=nope"), "application/json", None).await;
    assert_eq!((code, st["message"].as_str()), (400, Some("container nope is not valid for pod p")));
    assert_eq!(call(&s, "GET", &format!("{pods}/p/log"), "application/json", None).await.0, 200, "an empty log");

    // A scheduler binds it, once.
    let node = json!({"metadata": {"name": "n1"}, "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                      "daemonEndpoints": {"kubeletEndpoint": {"Port": tests::free_port()}}}});
    assert_eq!(call(&s, "POST", "/api/v1/nodes", "application/json", Some(node)).await.0, 201);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    let (code, st) = call(&s, "POST", &format!("{pods}/p/binding"), "application/json", Some(binding.clone())).await;
    assert_eq!((code, st["status"].as_str()), (201, Some("Success")), "{st}");
    let (_, got) = call(&s, "GET", &format!("{pods}/p"), "application/json", None).await;
    assert_eq!(got["spec"]["nodeName"], "n1");
    let (code, st) = call(&s, "POST", &format!("{pods}/p/binding"), "application/json", Some(binding)).await;
    assert_eq!(code, 409);
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
    );

    let (_, got) = call(&s, "GET", &format!("{pods}/p"), "application/json", None).await;
    let scheduled: Vec<&Value> =
        got["status"]["conditions"].as_array().unwrap().iter().filter(|c| c["type"] == "PodScheduled").collect();
    assert_eq!(scheduled.len(), 1, "{got}");
    assert_eq!(scheduled[0]["status"], "True");

    // Scheduled on a node whose kubelet does not answer: the dial fails as kube's does (an
    // exec that is no upgrade is refused first, as by a reference kube-apiserver).
    let (code, st) = call(&s, "GET", &format!("{pods}/p/exec?command=ls&stdout=1"), "application/json", None).await;
    assert_eq!((code, st["message"].as_str()), (400, Some("Upgrade request required")));
    let (code, st) = call(&s, "GET", &format!("{pods}/p/log"), "application/json", None).await;
    assert_eq!(code, 500);
    let message = st["message"].as_str().unwrap();
    assert!(
        message.starts_with("Get \"https://127.0.0.1:")
            && message.contains("/containerLogs/default/p/c\": dial tcp 127.0.0.1:")
            && message.ends_with(": connect: connection refused"),
        "{message}"
    );

    // Ephemeral containers change through their subresource only.
    let (_, mut current) = call(&s, "GET", &format!("{pods}/p/ephemeralcontainers"), "application/json", None).await;
    current["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    current["spec"]["containers"][0]["image"] = json!("ignored");
    let (code, updated) =
        call(&s, "PUT", &format!("{pods}/p/ephemeralcontainers"), "application/json", Some(current)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["ephemeralContainers"][0]["name"], "debug");
    assert_eq!(updated["spec"]["containers"][0]["image"], "nginx");

    // A Service's proxy with no endpoints.
    let (code, st) =
        call(&s, "GET", "/api/v1/namespaces/default/services/kubernetes/proxy", "application/json", None).await;
    assert_eq!((code, st["message"].as_str()), (503, Some("no endpoints available for service \"kubernetes\"")));
}

#[actix_web::test]
async fn component_statuses_report_storage_health_and_unreachable_components() {
    let s = TestServer::start();
    let (code, list) = call(&s, "GET", "/api/v1/componentstatuses", "application/json", None).await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ComponentStatusList");
    let by_name =
        |n: &str| list["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == n).cloned().unwrap();
    assert_eq!(by_name("etcd-0")["conditions"], json!([{"type": "Healthy", "status": "True", "message": "ok"}]));
    let scheduler = by_name("scheduler");
    assert_eq!(scheduler["conditions"][0]["status"], "False");
    assert_eq!(
        scheduler["conditions"][0]["message"],
        "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"
    );
    let (code, st) = call(&s, "GET", "/api/v1/componentstatuses/nope", "application/json", None).await;
    assert_eq!((code, st["message"].as_str(), st.get("reason")), (500, Some("Component not found: nope"), None));
    let out = s.kubectl(&["get", "componentstatuses"]);
    let stdout = tests::assert_success("kubectl get cs", &out);
    assert!(
        stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["etcd-0", "Healthy", "ok"]),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Warning: v1 ComponentStatus is deprecated in v1.19+"));
}
