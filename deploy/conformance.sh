#!/usr/bin/env bash
# Kubernetes' own e2e suite as the yardstick: the [sig-api-machinery] ... [Conformance] specs that
# need no running container, against this server and against a kube-apiserver built from the same
# Kubernetes tree as the suite, in one run, each on an etcd of its own.
#
#   deploy/conformance.sh [OUT]        (OUT defaults to ./conformance-out)
#
# Needs an `e2e.test` and a `kube-apiserver` built from one Kubernetes source tree (`go test -c
# ./test/e2e`, `go build ./cmd/kube-apiserver`): E2E_TEST and KUBE_APISERVER name them (default
# /tmp/kube-ref/bin/). Without them it says so and exits 0: CI builds no Go. Also needs etcd,
# openssl and python3 (deploy/install-tools.sh installs them) and builds this server.
#
# Writes OUT/kube/ and OUT/apiserver/ (e2e.log, report.json, summary.txt: state<TAB>spec), and
# OUT/table.md, the table of docs/CONFORMANCE.md. Env: E2E_FOCUS, E2E_SKIP (the default skip
# leaves out specs needing a webhook, conversion webhook or sample API server pod, or a garbage
# collector), E2E_CONTENT_TYPE (application/json makes the suite speak JSON; protobuf is
# client-go's default), SEQUENTIAL=1 (one server after the other instead of both at once).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$(mkdir -p "${1:-conformance-out}" && cd "${1:-conformance-out}" && pwd)
E2E_TEST=${E2E_TEST:-/tmp/kube-ref/bin/e2e.test}
KUBE_APISERVER=${KUBE_APISERVER:-/tmp/kube-ref/bin/kube-apiserver}
FOCUS=${E2E_FOCUS:-'\[sig-api-machinery\].*\[Conformance\]'}
SKIP=${E2E_SKIP:-'AdmissionWebhook|CustomResourceConversionWebhook|Aggregator|Garbage collector|\[Slow\]'}
TOKEN=conformance-admin-token

for bin in "$E2E_TEST" "$KUBE_APISERVER"; do
  if [[ ! -x $bin ]]; then
    echo "conformance: skipped, no $bin (build it from a Kubernetes tree; see docs/CONFORMANCE.md)"
    exit 0
  fi
done
command -v etcd >/dev/null || { echo "conformance: etcd not found (deploy/install-tools.sh)"; exit 1; }
cargo build --release --locked -p gateway --bin apiserver || exit 1

WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_etcd() { # name -> prints its client URL
  local name=$1 client peer
  client=$(free_port); peer=$(free_port)
  etcd --name "$name" --data-dir "$WORK/$name-etcd" --listen-client-urls "http://127.0.0.1:$client" \
    --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "$name=http://127.0.0.1:$peer" \
    >"$WORK/$name-etcd.log" 2>&1 &
  pids+=($!)
  echo "http://127.0.0.1:$client"
}

wait_ready() { # url
  for _ in $(seq 1 120); do
    curl -sfk -H "Authorization: Bearer $TOKEN" "$1/readyz" >/dev/null && return 0
    sleep 1
  done
  echo "conformance: $1 never became ready"; return 1
}

echo "$TOKEN,conformance-admin,uid-admin,\"system:masters\"" >"$WORK/tokens.csv"
openssl genrsa -out "$WORK/sa.key" 2048 2>/dev/null
openssl rsa -in "$WORK/sa.key" -pubout -out "$WORK/sa.pub" 2>/dev/null

kube_etcd=$(start_etcd kube); ours_etcd=$(start_etcd apiserver)
sleep 2
kube_port=$(free_port); ours_port=$(free_port); ours_admin=$(free_port)
"$KUBE_APISERVER" --etcd-servers "$kube_etcd" --secure-port "$kube_port" --bind-address 127.0.0.1 \
  --cert-dir "$WORK/kube-certs" --token-auth-file "$WORK/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$WORK/sa.pub" \
  --service-account-signing-key-file "$WORK/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
  >"$WORK/kube-apiserver.log" 2>&1 &
pids+=($!)
"$ROOT/target/release/apiserver" serve --data-dir "$WORK/apiserver-data" --secure-port "$ours_port" \
  --admin-port "$ours_admin" --token-auth-file "$WORK/tokens.csv" --storage-backend etcd3 \
  --etcd-servers "$ours_etcd" >"$WORK/apiserver.log" 2>&1 &
pids+=($!)
wait_ready "https://127.0.0.1:$kube_port" || exit 1
wait_ready "https://127.0.0.1:$ours_port" || exit 1

# The suite wants one Ready, schedulable Node; no kubelet stands behind it.
add_node() { # url
  python3 - "$1" "$TOKEN" <<'PY'
import json, ssl, sys, urllib.request, datetime
url, token = sys.argv[1], sys.argv[2]
ctx = ssl._create_unverified_context()
def call(method, path, body, ctype="application/json"):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
    try:
        return urllib.request.urlopen(req, context=ctx).status
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode()[:300]}"
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
name = "conformance-node"
labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
created = call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
res = {"cpu": "16", "memory": "64Gi", "pods": "110"}
ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
         "lastHeartbeatTime": now, "lastTransitionTime": now}
patched = call("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"allocatable": res, "capacity": res, "conditions": [ready]}},
               "application/merge-patch+json")
# Admission (TaintNodesByCondition) taints a new Node not-ready; no node controller lifts it.
untainted = call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, "application/merge-patch+json")
print(f"conformance: node {name} at {url}: create {created}, status {patched}, untaint {untainted}", file=sys.stderr)
PY
}

run_suite() { # name url
  local dir="$OUT/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  cat >"$dir/kubeconfig" <<EOT
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$2", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: "$TOKEN"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
EOT
  add_node "$2"
  (cd "$dir" && timeout "${E2E_TIMEOUT:-3000}" "$E2E_TEST" --kubeconfig "$dir/kubeconfig" --provider skeleton \
    --e2e-verify-service-account=false ${E2E_CONTENT_TYPE:+--kube-api-content-type=$E2E_CONTENT_TYPE} \
    --allowed-not-ready-nodes=-1 --minStartupPods=-1 --delete-namespace=false \
    --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" --ginkgo.no-color --ginkgo.timeout=45m \
    --ginkgo.json-report="$dir/report.json" --ginkgo.flake-attempts=1 >"$dir/e2e.log" 2>&1)
  python3 - "$dir/report.json" "$dir/summary.txt" <<'PY'
import json, sys
specs = [s for suite in json.load(open(sys.argv[1])) for s in suite.get("SpecReports", [])
         if s.get("LeafNodeType") == "It" and s.get("State") != "skipped"]
with open(sys.argv[2], "w") as f:
    for s in sorted(specs, key=lambda s: " ".join(s.get("ContainerHierarchyTexts") or []) + s["LeafNodeText"]):
        name = " ".join(s.get("ContainerHierarchyTexts") or []) + " " + s["LeafNodeText"]
        f.write(f"{s['State']}\t{name}\n")
PY
}

if [[ ${SEQUENTIAL:-0} == 1 ]]; then
  run_suite kube "https://127.0.0.1:$kube_port"
  run_suite apiserver "https://127.0.0.1:$ours_port"
else
  run_suite kube "https://127.0.0.1:$kube_port" & k=$!
  run_suite apiserver "https://127.0.0.1:$ours_port" & a=$!
  wait "$k" "$a"
fi
cp "$WORK/apiserver.log" "$OUT/apiserver/server.log"
cp "$WORK/kube-apiserver.log" "$OUT/kube/server.log"

python3 - "$OUT" <<'PY'
import sys
out = sys.argv[1]
def read(name):
    rows = {}
    for line in open(f"{out}/{name}/summary.txt"):
        state, spec = line.rstrip("\n").split("\t", 1)
        rows[spec] = state
    return rows
kube, ours = read("kube"), read("apiserver")
specs = sorted(set(kube) | set(ours))
mark = {"passed": "pass", "failed": "**fail**", "timedout": "**timeout**", "panicked": "**panic**"}
lines = ["| spec | kube-apiserver | this server |", "|---|---|---|"]
for s in specs:
    name = s.replace("[sig-api-machinery] ", "").replace(" [Conformance]", "").replace("|", "\\|")
    lines.append(f"| {name} | {mark.get(kube.get(s), kube.get(s, '-'))} | {mark.get(ours.get(s), ours.get(s, '-'))} |")
count = lambda rows: sum(1 for v in rows.values() if v == "passed")
lines.append(f"| **passed** | **{count(kube)} of {len(kube)}** | **{count(ours)} of {len(ours)}** |")
open(f"{out}/table.md", "w").write("\n".join(lines) + "\n")
print(f"kube-apiserver: {count(kube)} of {len(kube)} passed; this server: {count(ours)} of {len(ours)} passed")
both = [s for s in specs if kube.get(s) == "passed" and ours.get(s) != "passed"]
for s in both:
    print(f"passes on kube-apiserver only: {s}")
PY
