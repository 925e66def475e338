#!/bin/bash
# A mixed pair on one etcd, checked by hand: a reference kube-apiserver (KUBE_APISERVER, built
# as ../shared/reference/kube-e2e.md describes) and this server (APISERVER), each writing
# through the other's eyes. Not part of the test command: it needs the kube binary.
#
#   KUBE_APISERVER=/tmp/kube-ref/bin/kube-apiserver APISERVER=target/release/apiserver \
#     KUBECTL=$(command -v kubectl) deploy/mixed-with-kube.sh
#
# Ports 2479, 2480, 7443, 16443, 17443 and 17444 must be free. Prints each check and exits non-zero
# on the first that fails; the work directory (logs, kubeconfigs) is kept in $WORK. HELM names
# helm (default: the one on PATH); STABLE_SECONDS is how long the bootstrap objects must stay
# unchanged at the end (default 600).
set -euo pipefail
KUBE_APISERVER=${KUBE_APISERVER:-/tmp/kube-ref/bin/kube-apiserver}
APISERVER=${APISERVER:-target/release/apiserver}
KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
STABLE_SECONDS=${STABLE_SECONDS:-600}
WORK=${WORK:-$(mktemp -d /tmp/mixed-XXXX)}
pids=()
trap 'touch "$WORK/stop-writers"; kill "${pids[@]}" 2>/dev/null || true' EXIT

etcd --data-dir "$WORK/etcd" --listen-client-urls http://127.0.0.1:2479 --advertise-client-urls http://127.0.0.1:2479 \
  --listen-peer-urls http://127.0.0.1:2480 --initial-advertise-peer-urls http://127.0.0.1:2480 \
  --initial-cluster default=http://127.0.0.1:2480 > "$WORK/etcd.log" 2>&1 & pids+=($!)
openssl genrsa -out "$WORK/sa.key" 2048 2>/dev/null
openssl rsa -in "$WORK/sa.key" -pubout -out "$WORK/sa.pub" 2>/dev/null
echo 'mixed-admin,admin,uid-admin,"system:masters"' > "$WORK/tokens.csv"
common=(--etcd-servers http://127.0.0.1:2479 --bind-address 127.0.0.1 --token-auth-file "$WORK/tokens.csv"
  --authorization-mode RBAC --service-account-issuer https://kubernetes.default.svc
  --service-account-key-file "$WORK/sa.pub" --service-account-signing-key-file "$WORK/sa.key"
  --service-cluster-ip-range 10.0.0.0/20)
sleep 2
for port in 7443 17443; do
  k=(--kubeconfig "$WORK/k$port")
  "$KUBECTL" "${k[@]}" config set-cluster c --server "https://127.0.0.1:$port" --insecure-skip-tls-verify=true >/dev/null
  "$KUBECTL" "${k[@]}" config set-credentials a --token mixed-admin >/dev/null
  "$KUBECTL" "${k[@]}" config set-context c --cluster c --user a >/dev/null
  "$KUBECTL" "${k[@]}" config use-context c >/dev/null
done
ready() { for _ in $(seq 90); do "$KUBECTL" --kubeconfig "$WORK/k$1" get --raw /readyz >/dev/null 2>&1 && return; sleep 1; done; echo "port $1 never ready"; exit 1; }
start_kube() {
  "$KUBE_APISERVER" "${common[@]}" --secure-port 7443 --cert-dir "$WORK/certs" >> "$WORK/kube.log" 2>&1 &
  kube_pid=$!; pids+=($kube_pid); ready 7443
}
start_ours() {
  "$APISERVER" "${common[@]}" --secure-port 17443 --admin-port 17444 --data-dir "$WORK/ours" >> "$WORK/ours.log" 2>&1 &
  ours_pid=$!; pids+=($ours_pid); ready 17443
}
start_kube
start_ours
kube() { "$KUBECTL" --kubeconfig "$WORK/k7443" "$@"; }
ours() { "$KUBECTL" --kubeconfig "$WORK/k17443" "$@"; }
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; exit 1; fi; }

kube create namespace mix >/dev/null
kube -n mix create configmap from-kube --from-literal=a=1 >/dev/null
check "a ConfigMap kube wrote reads here" "$(ours -n mix get cm from-kube -o jsonpath='{.data.a}')" 1
ours -n mix create deployment from-ours --image=nginx:1.25 --replicas=2 >/dev/null
check "a Deployment written here reads in kube" "$(kube -n mix get deploy from-ours -o jsonpath='{.spec.replicas}/{.metadata.generation}')" 2/1
kube -n mix scale deploy from-ours --replicas=3 >/dev/null
ours -n mix label deploy from-ours touched=yes >/dev/null
check "kube's scale and this server's label, generation once" \
  "$(kube -n mix get deploy from-ours -o jsonpath='{.spec.replicas}/{.metadata.labels.touched}/{.metadata.generation}')" 3/yes/2
cat > "$WORK/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
    additionalPrinterColumns: [{name: Size, type: integer, jsonPath: .spec.size}]
YAML
ours apply -f "$WORK/crd.yaml" >/dev/null
kube wait --for condition=established crd/gadgets.example.com >/dev/null
printf 'apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: mix}\nspec: {size: 7}\n' > "$WORK/g.yaml"
kube apply -f "$WORK/g.yaml" >/dev/null
for _ in $(seq 20); do ours -n mix get gadget g1 >/dev/null 2>&1 && break; sleep 0.5; done
check "a CRD written here serves in kube, its object reads here" "$(ours -n mix get gadget g1 -o jsonpath='{.spec.size}')" 7
ours -n mix get cm -w --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' > "$WORK/watch.out" 2>&1 &
watcher=$!; sleep 2
for i in 1 2 3; do kube -n mix create configmap "w$i" >/dev/null; done
kube -n mix delete configmap w2 >/dev/null
sleep 3; kill $watcher 2>/dev/null || true
check "a watch here sees kube's writes in order" "$(grep -v from-kube "$WORK/watch.out" | tr '\n' ',')" "ADDED w1,ADDED w2,ADDED w3,DELETED w2,"
kube -n mix get secret -w --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' > "$WORK/watch-kube.out" 2>&1 &
watcher=$!; sleep 2
for i in 1 2 3; do ours -n mix create secret generic "s$i" --from-literal=k=v >/dev/null; done
ours -n mix label secret s1 seen=yes >/dev/null
ours -n mix delete secret s3 >/dev/null
sleep 3; kill $watcher 2>/dev/null || true
check "a watch in kube sees this server's writes in order" "$(tr '\n' ',' < "$WORK/watch-kube.out")" \
  "ADDED s1,ADDED s2,ADDED s3,MODIFIED s1,DELETED s3,"

# helm: a release installed here, upgraded through kube, read and removed here.
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
mkdir -p "$WORK/chart/templates"
printf 'apiVersion: v2\nname: mixchart\nversion: 0.1.0\n' > "$WORK/chart/Chart.yaml"
printf 'value: one\n' > "$WORK/chart/values.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .Release.Name }}-cm"}\ndata: {value: "{{ .Values.value }}"}\n' \
  > "$WORK/chart/templates/cm.yaml"
"$HELM" --kubeconfig "$WORK/k17443" -n mix install rel "$WORK/chart" --wait >/dev/null
"$HELM" --kubeconfig "$WORK/k7443" -n mix upgrade rel "$WORK/chart" --set value=two --wait >/dev/null
check "helm: installed here, upgraded through kube, two revisions seen here" \
  "$("$HELM" --kubeconfig "$WORK/k17443" -n mix history rel | tail -n +2 | wc -l)/$(ours -n mix get cm rel-cm -o jsonpath='{.data.value}')" 2/two
"$HELM" --kubeconfig "$WORK/k17443" -n mix uninstall rel >/dev/null
check "helm: uninstalled here, gone in kube" "$(kube -n mix get cm rel-cm --ignore-not-found -o name)" ""

# Both behind one TCP balancer (haproxy, round robin per connection), as in a rolling replacement.
if command -v haproxy >/dev/null; then
  printf '%s\n' 'defaults' '  mode tcp' '  timeout connect 5s' '  timeout client 1h' '  timeout server 1h' \
    'frontend api' '  bind 127.0.0.1:16443' '  default_backend apiservers' 'backend apiservers' '  balance roundrobin' \
    '  server kube 127.0.0.1:7443' '  server ours 127.0.0.1:17443' > "$WORK/haproxy.cfg"
  haproxy -f "$WORK/haproxy.cfg" -db > "$WORK/haproxy.log" 2>&1 & pids+=($!)
  sed 's/:7443/:16443/' "$WORK/k7443" > "$WORK/k16443"
  lb() { "$KUBECTL" --kubeconfig "$WORK/k16443" "$@"; }
  sleep 1
  versions=$(for _ in 1 2 3 4 5 6; do lb get --raw /version | grep -o '"gitVersion": *"[^"]*"'; done | sort -u | wc -l)
  check "the balancer reaches both servers (two versions answer /version)" "$versions" 2
  lb -n mix get cm -w --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' > "$WORK/watch-lb.out" 2>&1 &
  watcher=$!; sleep 2
  for i in $(seq 1 20); do lb -n mix create configmap "lb$i" >/dev/null; done
  sleep 3; kill $watcher 2>/dev/null || true
  check "a watch through the balancer sees 20 creates made through it, in order" \
    "$(grep ' lb' "$WORK/watch-lb.out" | tr '\n' ',')" "$(for i in $(seq 1 20); do printf 'ADDED lb%s,' "$i"; done)"
  "$HELM" --kubeconfig "$WORK/k16443" -n mix install lbrel "$WORK/chart" --wait >/dev/null
  "$HELM" --kubeconfig "$WORK/k16443" -n mix upgrade lbrel "$WORK/chart" --set value=three --wait >/dev/null
  check "helm through the balancer: two revisions, the new value" \
    "$("$HELM" --kubeconfig "$WORK/k16443" -n mix history lbrel | tail -n +2 | wc -l)/$(lb -n mix get cm lbrel-cm -o jsonpath='{.data.value}')" 2/three
  "$HELM" --kubeconfig "$WORK/k16443" -n mix uninstall lbrel >/dev/null
else
  echo "skipped: no haproxy on PATH, so no check behind one balancer"
fi
creates=()
for i in $(seq 1 100); do
  kube -n mix create service clusterip "k$i" --tcp=80 >/dev/null & creates+=($!)
  ours -n mix create service clusterip "o$i" --tcp=80 >/dev/null & creates+=($!)
  if (( i % 20 == 0 )); then wait "${creates[@]}"; creates=(); fi
done
ips=$(kube -n mix get svc -o jsonpath='{range .items[*]}{.spec.clusterIP}{"\n"}{end}')
check "200 Services made by both, 200 distinct ClusterIPs" "$(echo "$ips" | sort -u | wc -l)/$(echo "$ips" | wc -l)" 200/200
for i in $(seq 1 100); do
  kube -n mix create service nodeport "kn$i" --tcp=80 >/dev/null & creates+=($!)
  ours -n mix create service nodeport "on$i" --tcp=80 >/dev/null & creates+=($!)
  if (( i % 20 == 0 )); then wait "${creates[@]}"; creates=(); fi
done
ports=$(kube -n mix get svc -o jsonpath='{range .items[*]}{.spec.ports[*].nodePort}{"\n"}{end}' | grep .)
check "200 NodePort Services made by both, 200 distinct node ports" "$(echo "$ports" | sort -u | wc -l)/$(echo "$ports" | wc -l)" 200/200
taken=$(ours -n mix get svc kn1 -o jsonpath='{.spec.ports[0].nodePort}')
refusal() { "$@" -n mix create service nodeport taken --tcp=81 --node-port="$taken" 2>&1; }
check "a node port kube took is refused here in kube's words" "$(refusal ours)" "$(refusal kube)"

# Either server killed (SIGKILL) under writes through both: every acknowledged write survives.
writer() {
  local i=0
  while [ ! -e "$WORK/stop-writers" ]; do
    i=$((i + 1))
    if "$1" -n mix create configmap "$2$i" >/dev/null 2>&1; then echo "$2$i"; else echo "$2$i" >> "$WORK/refused-$2"; fi
  done
}
rm -f "$WORK/stop-writers" "$WORK/refused-kw" "$WORK/refused-ow"
writer kube kw > "$WORK/acked-kube" & wk=$!; pids+=($wk)
writer ours ow > "$WORK/acked-ours" & wo=$!; pids+=($wo)
sleep 4; kill -9 "$ours_pid"; sleep 1; start_ours
sleep 4; kill -9 "$kube_pid"; sleep 1; start_kube
sleep 4; touch "$WORK/stop-writers"
wait "$wk" "$wo"
acked=$(cat "$WORK/acked-kube" "$WORK/acked-ours" | sort)
present() { "$1" -n mix get cm -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep -E '^(kw|ow)[0-9]+$' | sort; }
echo "acknowledged: $(wc -l < "$WORK/acked-kube") through kube, $(wc -l < "$WORK/acked-ours") through this server;" \
  "failed (while down): $(cat "$WORK/refused-kw" 2>/dev/null | wc -l) through kube, $(cat "$WORK/refused-ow" 2>/dev/null | wc -l) here"
check "after a kill of each, every acknowledged create reads through this server" \
  "$(comm -23 <(echo "$acked") <(present ours) | wc -l)" 0
check "... and through kube" "$(comm -23 <(echo "$acked") <(present kube) | wc -l)" 0

# The bootstrap objects of both, unchanged for STABLE_SECONDS once they agree.
snapshot() {
  for r in clusterroles clusterrolebindings roles rolebindings priorityclasses flowschemas prioritylevelconfigurations; do
    "$1" get "$r" -A -o jsonpath='{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}'
  done | sort
}
before=$(snapshot ours)
for _ in $(seq 30); do sleep 10; now=$(snapshot ours); [ "$now" = "$before" ] && break; before=$now; done
echo "$(echo "$before" | wc -l) bootstrap objects; watching them for ${STABLE_SECONDS}s"
sleep "$STABLE_SECONDS"
check "no bootstrap object rewritten in ${STABLE_SECONDS}s (read here)" "$(diff <(echo "$before") <(snapshot ours) | grep -c '^>')" 0
check "both servers list them alike" "$(diff <(snapshot ours) <(snapshot kube) | grep -c '^[<>]')" 0
echo "all checks passed; logs and kubeconfigs in $WORK"
