"""Follows a namespace's ConfigMaps with the official client's watch and prints every event.

Usage: watch_sync.py KUBECONFIG NAMESPACE RESOURCE_VERSION COUNT
Prints `TYPE NAME RESOURCEVERSION` per event, from RESOURCE_VERSION on, until COUNT events
were seen. Watch.stream resumes from the last resourceVersion by itself when a watch ends, as
an informer would.
"""

import sys

from kubernetes import client, config, watch


def main():
    config.load_kube_config(config_file=sys.argv[1])
    namespace, rv, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
    v1 = client.CoreV1Api()
    seen = 0
    w = watch.Watch()
    print("WATCHING", flush=True)
    for event in w.stream(v1.list_namespaced_config_map, namespace, resource_version=rv):
        meta = event["raw_object"]["metadata"]
        print(event["type"], meta["name"], meta["resourceVersion"], flush=True)
        seen += 1
        if seen >= count:
            w.stop()


main()
