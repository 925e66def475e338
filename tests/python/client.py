"""The official Python `kubernetes` client against the apiserver.

Usage: client.py KUBECONFIG SCENARIO
Each scenario asserts what a user of the client sees and exits non-zero on the first failure.
"""

import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def api():
    config.load_kube_config(config_file=sys.argv[1])
    return client.CoreV1Api()


def cm(name, labels=None, data=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}), data=data or {}
    )


def crud_and_selectors():
    v1 = api()
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py")))
    for i in range(6):
        tier = "web" if i % 2 == 0 else "db"
        v1.create_namespaced_config_map("py", cm(f"c{i}", {"tier": tier, "idx": str(i)}, {"i": str(i)}))
    names = lambda items: sorted(o.metadata.name for o in items)
    got = v1.list_namespaced_config_map("py", label_selector="tier=web").items
    assert names(got) == ["c0", "c2", "c4"], names(got)
    got = v1.list_namespaced_config_map("py", label_selector="tier in (db),idx!=3").items
    assert names(got) == ["c1", "c5"], names(got)
    got = v1.list_namespaced_config_map("py", field_selector="metadata.name=c4").items
    assert names(got) == ["c4"], names(got)
    got = v1.list_config_map_for_all_namespaces(label_selector="tier").items
    assert len(got) == 6, names(got)

    # Paging: three pages of two, consistent.
    page = v1.list_namespaced_config_map("py", limit=2)
    seen = names(page.items)
    assert page.metadata.remaining_item_count == 4, page.metadata.remaining_item_count
    while page.metadata._continue:
        page = v1.list_namespaced_config_map("py", limit=2, _continue=page.metadata._continue)
        seen += names(page.items)
    assert seen == ["c0", "c1", "c2", "c3", "c4", "c5"], seen

    # Replace with a stale resourceVersion: 409 Conflict.
    c0 = v1.read_namespaced_config_map("c0", "py")
    c0.data["i"] = "changed"
    v1.replace_namespaced_config_map("c0", "py", c0)
    c0.data["i"] = "stale write"
    try:
        v1.replace_namespaced_config_map("c0", "py", c0)
        raise AssertionError("stale replace succeeded")
    except ApiException as e:
        assert e.status == 409, e.status
        assert '"reason":"Conflict"' in e.body.replace(" ", ""), e.body
        assert "the object has been modified" in e.body, e.body
    assert v1.read_namespaced_config_map("c0", "py").data["i"] == "changed"

    # Create twice: 409 AlreadyExists; read a missing one: 404.
    try:
        v1.create_namespaced_config_map("py", cm("c1"))
        raise AssertionError("duplicate create succeeded")
    except ApiException as e:
        assert e.status == 409 and "AlreadyExists" in e.body, (e.status, e.body)
    try:
        v1.read_namespaced_config_map("nope", "py")
        raise AssertionError("read of a missing object succeeded")
    except ApiException as e:
        assert e.status == 404 and 'configmaps \\"nope\\" not found' in e.body, e.body
    print("ok")


def watch_in_order():
    v1 = api()
    start = v1.list_namespaced_config_map("default")
    rv = start.metadata.resource_version
    v1.create_namespaced_config_map("default", cm("w1", data={"v": "1"}))
    obj = v1.read_namespaced_config_map("w1", "default")
    obj.data["v"] = "2"
    v1.replace_namespaced_config_map("w1", "default", obj)
    v1.delete_namespaced_config_map("w1", "default")
    events = []
    w = watch.Watch()
    for ev in w.stream(
        v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=10
    ):
        events.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        if len(events) == 3:
            w.stop()
    kinds = [e[0] for e in events]
    assert kinds == ["ADDED", "MODIFIED", "DELETED"], events
    revs = [int(e[2]) for e in events]
    assert revs == sorted(revs) and len(set(revs)) == 3, events
    assert all(e[1] == "w1" for e in events), events
    print("ok")


def concurrent_updates():
    v1 = api()
    v1.create_namespaced_config_map("default", cm("counter", data={"n": "0"}))
    workers, per_worker = 8, 25
    errors = []

    def loop():
        local = client.CoreV1Api(client.ApiClient(client.Configuration.get_default_copy()))
        done = 0
        while done < per_worker:
            obj = local.read_namespaced_config_map("counter", "default")
            obj.data["n"] = str(int(obj.data["n"]) + 1)
            try:
                local.replace_namespaced_config_map("counter", "default", obj)
                done += 1
            except ApiException as e:
                if e.status != 409:
                    errors.append(e)
                    return

    threads = [threading.Thread(target=loop) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    n = int(v1.read_namespaced_config_map("counter", "default").data["n"])
    assert n == workers * per_worker, n
    print("ok")


def new_kinds():
    """The typed APIs of kinds the 1.30 API serves beyond the core ones: an HPA written at
    autoscaling/v2 and read at v1, a PodDisruptionBudget refusing an eviction with 429, a
    NetworkPolicy's 422, PriorityClasses and a top-level Binding."""
    v1 = api()
    v2 = client.AutoscalingV2Api()
    hpa = client.V2HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V2HorizontalPodAutoscalerSpec(
            scale_target_ref=client.V2CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web"),
            min_replicas=2,
            max_replicas=5,
            metrics=[
                client.V2MetricSpec(
                    type="Resource",
                    resource=client.V2ResourceMetricSource(
                        name="cpu", target=client.V2MetricTarget(type="Utilization", average_utilization=60)
                    ),
                )
            ],
        ),
    )
    v2.create_namespaced_horizontal_pod_autoscaler("default", hpa)
    old = client.AutoscalingV1Api().read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert old.spec.target_cpu_utilization_percentage == 60, old.spec
    assert old.spec.max_replicas == 5, old.spec
    back = v2.read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert back.spec.metrics[0].resource.target.average_utilization == 60, back.spec.metrics
    # kube fills a behaviour's missing rules, and leaves an absent behaviour absent.
    assert back.spec.behavior is None, back.spec.behavior
    assert back.spec.min_replicas == 2, back.spec

    # A budget that allows no disruption: the eviction is refused with 429.
    labels = {"app": "db"}
    policy = client.PolicyV1Api()
    policy.create_namespaced_pod_disruption_budget(
        "default",
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="db"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels=labels)
            ),
        ),
    )
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="db-0", labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="db", image="postgres")]),
    )
    v1.create_namespaced_pod("default", pod)
    # A running, ready pod: pending or unready ones are evicted whatever the budget, as kube does.
    v1.patch_namespaced_pod_status(
        "db-0", "default", {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    )
    budget = policy.read_namespaced_pod_disruption_budget_status("db", "default")
    budget.status = client.V1PodDisruptionBudgetStatus(
        current_healthy=1, desired_healthy=1, disruptions_allowed=0, expected_pods=1,
        observed_generation=budget.metadata.generation,
    )
    policy.replace_namespaced_pod_disruption_budget_status("db", "default", budget)
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="db-0", namespace="default"))
    try:
        v1.create_namespaced_pod_eviction("db-0", "default", eviction)
        raise AssertionError("eviction allowed")
    except ApiException as e:
        assert e.status == 429, (e.status, e.body)
        assert "needs 1 healthy pods and has 1 currently" in e.body, e.body

    # The top-level bindings resource schedules the pod.
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="db-0"),
        target=client.V1ObjectReference(kind="Node", name="node-1", api_version="v1"),
    )
    try:
        v1.create_namespaced_binding("default", binding)
    except ValueError:
        # The client cannot deserialize the Status kube answers with (a known client issue).
        pass
    assert v1.read_namespaced_pod("db-0", "default").spec.node_name == "node-1"

    # Validation: an except outside its CIDR.
    networking = client.NetworkingV1Api()
    bad = client.V1NetworkPolicy(
        metadata=client.V1ObjectMeta(name="np"),
        spec=client.V1NetworkPolicySpec(
            pod_selector=client.V1LabelSelector(),
            ingress=[
                client.V1NetworkPolicyIngressRule(
                    _from=[client.V1NetworkPolicyPeer(ip_block=client.V1IPBlock(cidr="10.0.0.0/8", _except=["11.0.0.0/16"]))]
                )
            ],
        ),
    )
    try:
        networking.create_namespaced_network_policy("default", bad)
        raise AssertionError("invalid policy stored")
    except ApiException as e:
        assert e.status == 422, (e.status, e.body)
        assert "must be a strict subset of `cidr`" in e.body, e.body

    names = [p.metadata.name for p in client.SchedulingV1Api().list_priority_class().items]
    assert "system-cluster-critical" in names and "system-node-critical" in names, names
    print("ok")


def custom_resources():
    """A CRD created and used through the typed apiextensions API and CustomObjectsApi."""
    config.load_kube_config(config_file=sys.argv[1])
    ext = client.ApiextensionsV1Api()
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["gz"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "size": {"type": "string", "default": "medium"},
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                }}},
            }],
        },
    }
    created = ext.create_custom_resource_definition(crd)
    assert created.status.stored_versions == ["v1"], created.status
    for _ in range(100):
        got = ext.read_custom_resource_definition("gizmos.example.com")
        conditions = {c.type: c.status for c in (got.status.conditions or [])}
        if conditions.get("Established") == "True":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"never Established: {got.status}")
    assert got.status.accepted_names.short_names == ["gz"], got.status.accepted_names

    client.CoreV1Api().create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="pycr")))
    co = client.CustomObjectsApi()
    g, v, ns, plural = "example.com", "v1", "pycr", "gizmos"

    def gizmo(name, spec):
        return {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}

    # The resource may answer a moment after Established on a busy machine.
    for _ in range(100):
        try:
            made = co.create_namespaced_custom_object(g, v, ns, plural, gizmo("g1", {"replicas": 1, "color": "red"}))
            break
        except ApiException as e:
            assert e.status == 404, (e.status, e.body)
            time.sleep(0.05)
    assert made["spec"]["size"] == "medium", made
    try:
        co.create_namespaced_custom_object(g, v, ns, plural, gizmo("bad", {"replicas": 20}))
        raise AssertionError("an invalid gizmo was created")
    except ApiException as e:
        assert e.status == 422, (e.status, e.body)
        assert "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10" in e.body, e.body

    patched = co.patch_namespaced_custom_object(g, v, ns, plural, "g1", {"spec": {"replicas": 3}})
    assert (patched["spec"]["replicas"], patched["metadata"]["generation"]) == (3, 2), patched
    co.patch_namespaced_custom_object_status(g, v, ns, plural, "g1", {"status": {"replicas": 3}})
    scale = co.get_namespaced_custom_object_scale(g, v, ns, plural, "g1")
    assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (3, 3), scale

    listed = co.list_namespaced_custom_object(g, v, ns, plural)
    assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [("Gizmo", "g1")], listed
    rv = listed["metadata"]["resourceVersion"]
    co.create_namespaced_custom_object(g, v, ns, plural, gizmo("g2", {"color": "blue"}))
    co.delete_namespaced_custom_object(g, v, ns, plural, "g1")
    seen = []
    w = watch.Watch()
    for event in w.stream(co.list_namespaced_custom_object, g, v, ns, plural, resource_version=rv, timeout_seconds=10):
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "g2"), ("DELETED", "g1")], seen

    ext.delete_custom_resource_definition("gizmos.example.com")
    for _ in range(100):
        try:
            co.list_namespaced_custom_object(g, v, ns, plural)
        except ApiException as e:
            assert e.status == 404, (e.status, e.body)
            break
        time.sleep(0.05)
    else:
        raise AssertionError("gizmos still served after their CRD was deleted")
    print("ok")


def noop_replace():
    """A read-modify-write that changes nothing writes nothing: the client sends its times as
    Python writes them (`+00:00`), which the server reads as kube reads them."""
    config.load_kube_config(config_file=sys.argv[1])
    v1, apps = client.CoreV1Api(), client.AppsV1Api()
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="noop")))
    labels = {"app": "web"}
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web", labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(
                    name="c", image="nginx",
                    resources=client.V1ResourceRequirements(limits={"cpu": "0.5", "memory": "1024Mi"}))]),
            ),
        ),
    )
    created = apps.create_namespaced_deployment("noop", dep)
    rv = created.metadata.resource_version
    limits = created.spec.template.spec.containers[0].resources.limits
    assert limits == {"cpu": "500m", "memory": "1Gi"}, limits
    got = apps.read_namespaced_deployment("web", "noop")
    assert got.metadata.managed_fields[0].time is not None
    same = apps.replace_namespaced_deployment("web", "noop", got)
    assert same.metadata.resource_version == rv, (rv, same.metadata.resource_version)
    cm_ = v1.create_namespaced_config_map("noop", cm("c", {"a": "b"}, {"k": "v"}))
    again = v1.replace_namespaced_config_map("c", "noop", v1.read_namespaced_config_map("c", "noop"))
    assert again.metadata.resource_version == cm_.metadata.resource_version
    # The first event after the object's creation is a real change, not the no-op write.
    got.metadata.labels = {"app": "web", "changed": "yes"}
    changed = apps.replace_namespaced_deployment("web", "noop", got)
    assert changed.metadata.resource_version != rv
    w = watch.Watch()
    events = []
    for ev in w.stream(apps.list_namespaced_deployment, "noop", resource_version=rv, timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.labels))
        break
    assert events == [("MODIFIED", {"app": "web", "changed": "yes"})], events
    print("ok")


def events_v1():
    """Events through events.k8s.io/v1: created, refused without an eventTime, patched in
    their own form, read back through core v1."""
    import datetime
    import json

    config.load_kube_config(config_file=sys.argv[1])
    ev = client.EventsV1Api()
    utc = datetime.timezone.utc
    body = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="scaled"),
        event_time=datetime.datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=utc),
        regarding=client.V1ObjectReference(api_version="apps/v1", kind="Deployment", namespace="default", name="web"),
        reason="Scaled", action="Scale", type="Normal", note="scaled up",
        reporting_controller="example.com/scaler", reporting_instance="scaler-1",
    )
    created = ev.create_namespaced_event("default", body)
    assert created.event_time == datetime.datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=utc), created.event_time
    print("created", created.metadata.name)
    untimed = {
        "metadata": {"name": "untimed"}, "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "R", "action": "A", "type": "Normal",
        "reportingController": "example.com/c", "reportingInstance": "i",
    }
    try:
        ev.create_namespaced_event("default", untimed)
        raise AssertionError("an Event without eventTime was created")
    except ApiException as e:
        cause = json.loads(e.body)["details"]["causes"][0]
        print("refused", e.status, cause["field"] + ": " + cause["message"])
    series = {"series": {"count": 3, "lastObservedTime": "2024-05-01T10:25:00.000000Z"}}
    patched = ev.patch_namespaced_event("scaled", "default", series)
    print("series", patched.series.count)
    core = client.CoreV1Api().read_namespaced_event("scaled", "default")
    assert (core.message, core.involved_object.name, core.series.count) == ("scaled up", "web", 3), core
    names = [e.metadata.name for e in ev.list_namespaced_event("default", field_selector="regarding.name=web").items]
    assert names == ["scaled"], names


SCENARIOS = {
    "crud_and_selectors": crud_and_selectors,
    "watch_in_order": watch_in_order,
    "concurrent_updates": concurrent_updates,
    "new_kinds": new_kinds,
    "custom_resources": custom_resources,
    "noop_replace": noop_replace,
    "events_v1": events_v1,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[2]]()
