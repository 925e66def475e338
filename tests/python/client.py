"""The official Python `kubernetes` client against the apiserver.

Usage: client.py KUBECONFIG SCENARIO
Each scenario asserts what a user of the client sees and exits non-zero on the first failure.
"""

import sys
import threading

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


SCENARIOS = {
    "crud_and_selectors": crud_and_selectors,
    "watch_in_order": watch_in_order,
    "concurrent_updates": concurrent_updates,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[2]]()
