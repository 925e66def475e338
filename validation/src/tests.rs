use serde_json::{Value, json};

use crate::test_kinds::{def, find};
use apimachinery::ApiError;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::Cause;

/// What the registry does before validating a create: defaults, uid, PrepareForCreate.
fn create(def: &ResourceDef, mut obj: Value) -> Vec<Cause> {
    def.apply_defaults(&mut obj);
    obj["metadata"]["uid"] = json!("0b7c4e8a-uid");
    def.prepare_for_create(&mut obj);
    def.validate(&obj)
}

/// What the registry does before validating an update.
fn update(def: &ResourceDef, mut new: Value, old: &Value) -> Vec<Cause> {
    def.apply_defaults(&mut new);
    def.prepare_for_update(&mut new, old);
    def.validate_update(&new, old)
}

/// A stored object, as create left it.
fn stored(def: &ResourceDef, mut obj: Value) -> Value {
    def.apply_defaults(&mut obj);
    obj["metadata"]["uid"] = json!("0b7c4e8a-uid");
    obj["metadata"]["resourceVersion"] = json!("5");
    obj["metadata"]["generation"] = json!(1);
    obj["metadata"]["creationTimestamp"] = json!("2024-05-01T00:00:00Z");
    def.prepare_for_create(&mut obj);
    assert_eq!(def.validate(&obj), vec![], "fixture must be valid");
    obj
}

fn pairs(causes: &[Cause]) -> Vec<(&str, &str)> {
    causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect()
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn deployment(labels: Value, selector: Option<Value>) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
    });
    if let Some(sel) = selector {
        d["spec"]["selector"] = sel;
    }
    d
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": containers}})
}

#[test]
fn bad_name_is_reported_with_kubes_message() {
    let c = create(def("", "configmaps"), json!({"metadata": {"name": "Bad_Name", "namespace": "default"}}));
    assert_eq!(pairs(&c), vec![("metadata.name", format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}").as_str())]);
    assert_eq!(c[0].reason, "FieldValueInvalid");
    let e = ApiError::invalid("", "ConfigMap", "Bad_Name", c);
    assert_eq!(
        e.message,
        format!("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")
    );
}

#[test]
fn generate_name_prefix_may_end_with_dash() {
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"generateName": "cfg-", "name": "cfg-x7k2p", "namespace": "default"}}),
    );
    assert!(c.is_empty(), "{c:?}");
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"generateName": "Cfg-", "name": "cfg-x7k2p", "namespace": "default"}}),
    );
    assert_eq!(c[0].field, "metadata.generateName");
}

#[test]
fn namespace_names_are_dns_labels() {
    let c = create(def("", "namespaces"), json!({"metadata": {"name": "a.b"}}));
    assert_eq!(pairs(&c), vec![("metadata.name", "Invalid value: \"a.b\": must not contain dots")]);
}

#[test]
fn service_names_are_dns_1035_labels() {
    let c = create(
        def("", "services"),
        json!({"metadata": {"name": "1web", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(c[0].field, "metadata.name");
    assert!(c[0].message.starts_with("Invalid value: \"1web\": a DNS-1035 label must consist of"), "{}", c[0].message);
}

#[test]
fn label_and_annotation_rules() {
    let big = "x".repeat(256 * 1024);
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"name": "a", "namespace": "default", "labels": {"bad key": "v"}, "annotations": {"a": big}}}),
    );
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].field, "metadata.labels");
    assert!(c[0].message.starts_with("Invalid value: \"bad key\": name part must consist of alphanumeric characters"));
    assert_eq!(pairs(&c[1..]), vec![("metadata.annotations", "Too long: must have at most 262144 bytes")]);
    assert_eq!(c[1].reason, "FieldValueTooLong");
}

#[test]
fn config_map_keys_and_size() {
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"name": "a", "namespace": "default"}, "data": {"bad key": "v", "ok.key": "v"}}),
    );
    assert_eq!(
        pairs(&c),
        vec![(
            "data[bad key]",
            "Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        )]
    );
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"name": "a", "namespace": "default"}, "data": {"k": "x".repeat(1024 * 1024 + 1)}}),
    );
    assert_eq!(pairs(&c), vec![("", "Too long: must have at most 1048576 bytes")]);
}

#[test]
fn deployment_without_selector() {
    let c = create(def("apps", "deployments"), deployment(json!({"app": "nginx"}), None));
    assert_eq!(
        pairs(&c),
        vec![
            ("spec.selector", "Required value"),
            (
                "spec.template.metadata.labels",
                "Invalid value: map[string]string{\"app\":\"nginx\"}: `selector` does not match template `labels`"
            ),
        ]
    );
    let e = ApiError::invalid("apps", "Deployment", "web", c);
    assert!(e.message.ends_with(
        "\"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"nginx\"}: `selector` does not match template `labels`]"
    ));
}

#[test]
fn deployment_selector_must_match_template() {
    let c = create(
        def("apps", "deployments"),
        deployment(json!({"app": "nginx"}), Some(json!({"matchLabels": {"app": "web"}}))),
    );
    assert_eq!(
        pairs(&c),
        vec![(
            "spec.template.metadata.labels",
            "Invalid value: map[string]string{\"app\":\"nginx\"}: `selector` does not match template `labels`"
        )]
    );
    let ok = create(
        def("apps", "deployments"),
        deployment(json!({"app": "web"}), Some(json!({"matchLabels": {"app": "web"}}))),
    );
    assert!(ok.is_empty(), "{ok:?}");
}

#[test]
fn deployment_empty_selector_and_negative_replicas() {
    let mut d = deployment(json!({"app": "web"}), Some(json!({})));
    d["spec"]["replicas"] = json!(-1);
    let c = create(def("apps", "deployments"), d);
    assert_eq!(
        pairs(&c),
        vec![
            ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
            (
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"
            ),
        ]
    );
}

#[test]
fn deployment_container_image_required_under_template_path() {
    let mut d = deployment(json!({"app": "web"}), Some(json!({"matchLabels": {"app": "web"}})));
    d["spec"]["template"]["spec"]["containers"] = json!([{"name": "nginx"}]);
    let c = create(def("apps", "deployments"), d);
    assert_eq!(pairs(&c), vec![("spec.template.spec.containers[0].image", "Required value")]);
    assert_eq!(c[0].reason, "FieldValueRequired");
}

#[test]
fn deployment_rolling_update_rules() {
    let mut d = deployment(json!({"app": "web"}), Some(json!({"matchLabels": {"app": "web"}})));
    d["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "x"}});
    let c = create(def("apps", "deployments"), d);
    assert_eq!(
        pairs(&c),
        vec![
            (
                "spec.strategy.rollingUpdate.maxSurge",
                "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"x\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ),
            (
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0"
            ),
        ]
    );
}

#[test]
fn deployment_selector_is_immutable() {
    let d = def("apps", "deployments");
    let old = stored(d, deployment(json!({"app": "web"}), Some(json!({"matchLabels": {"app": "web"}}))));
    let mut new = old.clone();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "web2"}});
    new["spec"]["template"]["metadata"]["labels"] = json!({"app": "web2"});
    let c = update(d, new, &old);
    assert_eq!(
        pairs(&c),
        vec![(
            "spec.selector",
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        )]
    );
    let mut scaled = old.clone();
    scaled["spec"]["replicas"] = json!(3);
    assert!(update(d, scaled, &old).is_empty());
}

#[test]
fn replicaset_and_daemonset_templates() {
    let mut rs = deployment(json!({"app": "web"}), Some(json!({"matchLabels": {"app": "web"}})));
    rs["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let c = create(def("apps", "replicasets"), rs);
    assert_eq!(
        pairs(&c),
        vec![("spec.template.spec.restartPolicy", "Unsupported value: \"Never\": supported values: \"Always\"")]
    );

    let ds = deployment(json!({"app": "web"}), None);
    let c = create(def("apps", "daemonsets"), ds);
    assert_eq!(
        pairs(&c),
        vec![(
            "spec.template.metadata.labels",
            "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`"
        )]
    );
}

#[test]
fn statefulset_rules() {
    let ss = def("apps", "statefulsets");
    let mut s = deployment(json!({"app": "db"}), Some(json!({"matchLabels": {"app": "db"}})));
    s["metadata"]["name"] = json!("db.v1");
    let c = create(ss, s);
    assert_eq!(pairs(&c), vec![("metadata.name", "Invalid value: \"db.v1\": must not contain dots")]);

    let old = stored(ss, deployment(json!({"app": "db"}), Some(json!({"matchLabels": {"app": "db"}}))));
    let mut new = old.clone();
    new["spec"]["serviceName"] = json!("other");
    let c = update(ss, new, &old);
    assert_eq!(
        pairs(&c),
        vec![(
            "spec",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        )]
    );
}

#[test]
fn pod_requires_containers() {
    let c = create(def("", "pods"), pod(json!([])));
    assert_eq!(pairs(&c), vec![("spec.containers", "Required value")]);
}

#[test]
fn pod_container_rules() {
    let c = create(
        def("", "pods"),
        pod(json!([
            {"name": "app", "image": "nginx", "imagePullPolicy": "Sometimes", "ports": [{"containerPort": 70000}]},
            {"name": "app", "image": "busybox"},
            {"name": "Bad", "image": "x"}
        ])),
    );
    assert_eq!(
        pairs(&c),
        vec![
            (
                "spec.containers[0].ports[0].containerPort",
                "Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            (
                "spec.containers[0].imagePullPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
            ),
            ("spec.containers[1].name", "Duplicate value: \"app\""),
            (
                "spec.containers[2].name",
                "Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ),
        ]
    );
    assert_eq!(c[2].reason, "FieldValueDuplicate");
    assert_eq!(c[1].reason, "FieldValueNotSupported");
}

#[test]
fn pod_restart_and_dns_policies() {
    let mut p = pod(json!([{"name": "a", "image": "x"}]));
    p["spec"]["restartPolicy"] = json!("Sometimes");
    p["spec"]["dnsPolicy"] = json!("Nope");
    let c = create(def("", "pods"), p);
    assert_eq!(
        pairs(&c),
        vec![
            (
                "spec.restartPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
            ),
            (
                "spec.dnsPolicy",
                "Unsupported value: \"Nope\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""
            ),
        ]
    );
}

#[test]
fn pod_volume_mounts_env_and_resources() {
    let c = create(
        def("", "pods"),
        pod(json!([{
            "name": "a", "image": "x",
            "volumeMounts": [{"name": "missing", "mountPath": "/data"}],
            "env": [{"name": "1BAD", "value": "v"}],
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
        }])),
    );
    assert_eq!(
        pairs(&c),
        vec![
            (
                "spec.containers[0].env[0].name",
                "Invalid value: \"1BAD\": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
            ),
            ("spec.containers[0].volumeMounts[0].name", "Not found: \"missing\""),
            (
                "spec.containers[0].resources.requests",
                "Invalid value: \"2\": must be less than or equal to cpu limit of 1"
            ),
        ]
    );
}

#[test]
fn pod_update_may_only_change_images() {
    let pods = def("", "pods");
    let old = stored(pods, pod(json!([{"name": "a", "image": "nginx:1"}])));
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert!(update(pods, new, &old).is_empty());
    let mut new = old.clone();
    new["spec"]["restartPolicy"] = json!("Never");
    let c = update(pods, new, &old);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].field, "spec");
    assert!(c[0].message.starts_with("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"));
    let mut new = old.clone();
    new["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "b", "image": "x"}));
    let c = update(pods, new, &old);
    assert_eq!(pairs(&c), vec![("spec.containers", "Forbidden: pod updates may not add or remove containers")]);
}

fn job(restart: Option<&str>) -> Value {
    let mut j = json!({
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}
    });
    if let Some(r) = restart {
        j["spec"]["template"]["spec"]["restartPolicy"] = json!(r);
    }
    j
}

#[test]
fn job_restart_policy_must_be_on_failure_or_never() {
    let c = create(def("batch", "jobs"), job(None));
    assert_eq!(
        pairs(&c),
        vec![("spec.template.spec.restartPolicy", "Required value: valid values: \"OnFailure\", \"Never\"")]
    );
    assert!(create(def("batch", "jobs"), job(Some("Never"))).is_empty());
}

#[test]
fn job_template_is_immutable() {
    let jobs = def("batch", "jobs");
    let old = stored(jobs, job(Some("Never")));
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:2");
    let c = update(jobs, new, &old);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].field, "spec.template");
    assert!(c[0].message.ends_with(": field is immutable"));
}

#[test]
fn cronjob_schedule() {
    let cj = def("batch", "cronjobs");
    let mut c = json!({
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "a", "image": "x"}]}}}}}
    });
    assert_eq!(pairs(&create(cj, c.clone())), vec![("spec.schedule", "Required value")]);
    c["spec"]["schedule"] = json!("every minute");
    assert_eq!(
        pairs(&create(cj, c.clone())),
        vec![("spec.schedule", "Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]")]
    );
    c["spec"]["schedule"] = json!("*/1 * * * *");
    assert!(create(cj, c).is_empty());
}

fn service(ports: Value) -> Value {
    json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}, "ports": ports}})
}

#[test]
fn service_rules() {
    let svc = def("", "services");
    assert_eq!(pairs(&create(svc, service(json!([])))), vec![("spec.ports", "Required value")]);
    let c =
        create(svc, service(json!([{"name": "a", "port": 80}, {"name": "b", "port": 80}, {"name": "c", "port": 0}])));
    assert_eq!(
        pairs(&c),
        vec![
            ("spec.ports[2].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
            ("spec.ports[2].targetPort", "Invalid value: 0: must be between 1 and 65535, inclusive"),
            (
                "spec.ports[1]",
                "Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}"
            ),
        ]
    );
    let mut s = service(json!([{"port": 80}]));
    s["spec"]["type"] = json!("Internal");
    let c = create(svc, s);
    assert_eq!(
        pairs(&c),
        vec![(
            "spec.type",
            "Unsupported value: \"Internal\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
        )]
    );
    let c = create(svc, service(json!([{"port": 80}, {"port": 81}])));
    assert_eq!(pairs(&c), vec![("spec.ports[0].name", "Required value"), ("spec.ports[1].name", "Required value")]);
}

#[test]
fn service_cluster_ip_may_not_change() {
    let svc = def("", "services");
    let mut old = service(json!([{"port": 80}]));
    svc.apply_defaults(&mut old);
    kinds::defaults::set_cluster_ip(&mut old, "10.96.0.10");
    let old = stored(svc, old);
    let mut new = old.clone();
    new["spec"]["clusterIP"] = json!("10.96.0.11");
    new["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    let c = update(svc, new, &old);
    assert_eq!(
        pairs(&c),
        vec![("spec.clusterIPs[0]", "Invalid value: []string{\"10.96.0.11\"}: may not change once set")]
    );
}

#[test]
fn secret_rules() {
    let secrets = def("", "secrets");
    let c = create(
        secrets,
        json!({"metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls", "data": {}}),
    );
    assert_eq!(pairs(&c), vec![("data[tls.crt]", "Required value"), ("data[tls.key]", "Required value")]);
    let old = stored(
        secrets,
        json!({"metadata": {"name": "s", "namespace": "default"}, "immutable": true, "data": {"a": "YQ=="}}),
    );
    let mut new = old.clone();
    new["data"]["a"] = json!("Yg==");
    new["type"] = json!("kubernetes.io/basic-auth");
    let c = update(secrets, new, &old);
    assert_eq!(
        pairs(&c),
        vec![
            ("type", "Invalid value: \"kubernetes.io/basic-auth\": field is immutable"),
            ("data", "Forbidden: field is immutable when `immutable` is set"),
            ("data[username]", "Required value"),
            ("data[password]", "Required value"),
        ]
    );
}

#[test]
fn config_map_immutable() {
    let cms = def("", "configmaps");
    let old =
        stored(cms, json!({"metadata": {"name": "c", "namespace": "default"}, "immutable": true, "data": {"a": "1"}}));
    let mut new = old.clone();
    new["immutable"] = json!(false);
    let c = update(cms, new, &old);
    assert_eq!(pairs(&c), vec![("immutable", "Forbidden: field is immutable when `immutable` is set")]);
}

#[test]
fn metadata_identity_is_immutable_on_update() {
    let cms = def("", "configmaps");
    let old = stored(cms, json!({"metadata": {"name": "c", "namespace": "default"}}));
    let mut new = old.clone();
    new["metadata"]["name"] = json!("d");
    let c = update(cms, new, &old);
    assert_eq!(pairs(&c), vec![("metadata.name", "Invalid value: \"d\": field is immutable")]);
}

#[test]
fn rbac_rules_and_role_ref() {
    let roles = find("rbac.authorization.k8s.io", "v1", "roles").unwrap();
    let c = create(
        roles,
        json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
    );
    assert_eq!(pairs(&c), vec![("rules[0].verbs", "Required value: verbs must contain at least one value")]);
    let c = create(roles, json!({"metadata": {"name": "a/b", "namespace": "default"}}));
    assert_eq!(pairs(&c), vec![("metadata.name", "Invalid value: \"a/b\": may not contain '/'")]);

    let crbs = find("rbac.authorization.k8s.io", "v1", "clusterrolebindings").unwrap();
    let binding = json!({
        "metadata": {"name": "b"},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]
    });
    let c = create(crbs, binding.clone());
    assert_eq!(pairs(&c), vec![("subjects[1].namespace", "Required value")]);
    let mut fixed = binding;
    fixed["subjects"][1]["namespace"] = json!("default");
    let old = stored(crbs, fixed);
    let mut new = old.clone();
    new["roleRef"]["name"] = json!("edit");
    let c = update(crbs, new, &old);
    assert_eq!(
        pairs(&c),
        vec![(
            "roleRef",
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
        )]
    );
    let c = create(crbs, json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"}}));
    assert_eq!(pairs(&c), vec![("roleRef.kind", "Unsupported value: \"Role\": supported values: \"ClusterRole\"")]);
}

#[test]
fn lease_rules() {
    let leases = find("coordination.k8s.io", "v1", "leases").unwrap();
    let c = create(
        leases,
        json!({"metadata": {"name": "l", "namespace": "kube-system"}, "spec": {"leaseDurationSeconds": 0}}),
    );
    assert_eq!(pairs(&c), vec![("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")]);
}

#[test]
fn node_taints_use_kubes_metadata_path() {
    let nodes = def("", "nodes");
    let c =
        create(nodes, json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}));
    assert_eq!(
        pairs(&c),
        vec![(
            "metadata.taints[0].effect",
            "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
        )]
    );
}

#[test]
fn events_new_api_is_strict() {
    // Both groups store the core form; the group the request was made to picks the rules.
    let core_ev = def("", "events");
    let ev = find("events.k8s.io", "v1", "events").unwrap();
    let body = json!({"metadata": {"name": "e", "namespace": "default"}, "involvedObject": {"namespace": "default"}, "type": "Normal"});
    let stored = ev.strategy.to_storage(body.clone()).unwrap();
    let causes = core_ev.validate_request(ev, &stored);
    assert_eq!(pairs(&causes), vec![("eventTime", "Required value")]);
    assert!(create(core_ev, body).is_empty());
}

#[test]
fn owner_references_and_finalizers() {
    let c = create(
        def("", "configmaps"),
        json!({"metadata": {"name": "a", "namespace": "default", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": ""}], "finalizers": ["custom"]}}),
    );
    assert_eq!(
        pairs(&c),
        vec![
            ("metadata.ownerReferences.uid", "Invalid value: \"\": uid must not be empty"),
            (
                "metadata.finalizers",
                "Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
            ),
        ]
    );
}

#[test]
fn kubectl_generated_objects_validate_cleanly() {
    let cases = [
        (
            def("apps", "deployments"),
            json!({"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"nginx","namespace":"default","creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx","resources":{}}]}},"strategy":{}},"status":{}}),
        ),
        (
            def("", "pods"),
            json!({"kind":"Pod","apiVersion":"v1","metadata":{"name":"nginx","namespace":"default","creationTimestamp":null,"labels":{"run":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx","resources":{}}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always"},"status":{}}),
        ),
        (
            def("batch", "jobs"),
            json!({"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"pi","namespace":"default","creationTimestamp":null},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"pi","image":"perl","command":["perl","-e","print 1"],"resources":{}}],"restartPolicy":"Never"}}},"status":{}}),
        ),
        (
            def("batch", "cronjobs"),
            json!({"kind":"CronJob","apiVersion":"batch/v1","metadata":{"name":"tick","namespace":"default","creationTimestamp":null},"spec":{"jobTemplate":{"metadata":{"name":"tick","creationTimestamp":null},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"tick","image":"busybox","resources":{}}],"restartPolicy":"OnFailure"}}}},"schedule":"*/1 * * * *"},"status":{}}),
        ),
        (
            def("", "services"),
            json!({"kind":"Service","apiVersion":"v1","metadata":{"name":"nginx","namespace":"default","creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"ports":[{"name":"80-80","protocol":"TCP","port":80,"targetPort":80}],"selector":{"app":"nginx"},"type":"NodePort"},"status":{"loadBalancer":{}}}),
        ),
        (
            def("", "secrets"),
            json!({"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"default","creationTimestamp":null},"data":{"k":"dg=="}}),
        ),
        (
            def("apps", "statefulsets"),
            json!({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"nginx"}},"serviceName":"nginx","replicas":3,"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"registry.k8s.io/nginx-slim:0.8","ports":[{"containerPort":80,"name":"web"}],"volumeMounts":[{"name":"www","mountPath":"/usr/share/nginx/html"}]}]}},"volumeClaimTemplates":[{"metadata":{"name":"www"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}),
        ),
        (
            def("apps", "daemonsets"),
            json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"fluentd","namespace":"kube-system"},"spec":{"selector":{"matchLabels":{"name":"fluentd"}},"template":{"metadata":{"labels":{"name":"fluentd"}},"spec":{"tolerations":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}],"containers":[{"name":"fluentd","image":"fluentd:v2","resources":{"limits":{"memory":"200Mi"},"requests":{"cpu":"100m","memory":"200Mi"}},"volumeMounts":[{"name":"varlog","mountPath":"/var/log"}]}],"volumes":[{"name":"varlog","hostPath":{"path":"/var/log"}}]}}}}),
        ),
        (
            find("rbac.authorization.k8s.io", "v1", "clusterroles").unwrap(),
            json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"system:reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]},{"nonResourceURLs":["/healthz"],"verbs":["get"]}]}),
        ),
        (
            find("coordination.k8s.io", "v1", "leases").unwrap(),
            json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"node-1","namespace":"kube-node-lease"},"spec":{"holderIdentity":"node-1","leaseDurationSeconds":40,"renewTime":"2024-05-01T00:00:00.000000Z"}}),
        ),
    ];
    for (d, obj) in cases {
        let c = create(d, obj);
        assert!(c.is_empty(), "{}: {c:?}", d.kind);
    }
}

#[test]
fn malformed_objects_never_panic() {
    let shapes = [
        json!({}),
        json!({"metadata": null, "spec": null}),
        json!({"metadata": "x", "spec": "y", "status": 3}),
        json!({"metadata": {"name": 1, "labels": [1]}, "spec": {"containers": [1, "a", null], "ports": [1, null], "template": "t",
            "selector": "s", "strategy": [], "updateStrategy": 1, "volumes": [null, 1], "jobTemplate": {"spec": 1}},
            "data": [1], "subsets": [1], "rules": [null], "subjects": [1], "roleRef": "x"}),
        json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [1, {"port": "x"}], "clusterIPs": [1, 2, 3]}}),
        json!([1, 2]),
    ];
    for d in kinds::builtin::resources() {
        for shape in &shapes {
            let mut obj = shape.clone();
            d.apply_defaults(&mut obj);
            d.prepare_for_create(&mut obj);
            let _ = d.validate(&obj);
            let mut new = shape.clone();
            d.apply_defaults(&mut new);
            d.prepare_for_update(&mut new, &obj);
            let _ = d.validate_update(&new, &obj);
            let _ = d.validate_status_update(&new, &obj);
            let _ = kinds::defaults::node_ports_to_allocate(&obj);
            kinds::defaults::set_cluster_ip(&mut obj, "10.0.0.1");
        }
    }
}
