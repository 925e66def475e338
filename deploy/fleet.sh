#!/usr/bin/env bash
# A local fleet on loopback, in one command: a 3-member etcd cluster, a separate etcd for the
# churn (events and leases), a storage stage process serving events and leases on it, N gateway
# replicas on the etcd cluster, and HAProxy in front of the gateways.
#
#   deploy/fleet.sh up        start what is not running (idempotent); prints how to reach it
#   deploy/fleet.sh status    every process, its health, and the balancer's view
#   deploy/fleet.sh kill NAME SIGKILL one process (etcd-2, gateway-1, stage-churn, ...), for drills
#   deploy/fleet.sh stop NAME SIGTERM one process and wait for it (a gateway shuts down gracefully)
#   deploy/fleet.sh down      stop everything (data kept; `down --purge` removes it)
#
# Env: FLEET_DIR (./fleet), FLEET_GATEWAYS (3), FLEET_PORT_BASE (20000), APISERVER_BIN
# (./target/release/apiserver, built if missing). Logs in $FLEET_DIR/logs, pids in
# $FLEET_DIR/pids, certificates in $FLEET_DIR/pki, the admin kubeconfig in
# $FLEET_DIR/admin.kubeconfig (a system:masters client certificate; the balancer's address).
# Ports, from FLEET_PORT_BASE (B): etcd clients B+1..B+3 (peers B+11..B+13), churn etcd B+21
# (peer B+22), the stage process B+31, gateways B+41.. (admin ports B+61..), balancer B+100,
# its statistics page B+101.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="$(mkdir -p "${FLEET_DIR:-./fleet}" && cd "${FLEET_DIR:-./fleet}" && pwd)"
GATEWAYS="${FLEET_GATEWAYS:-3}"
B="${FLEET_PORT_BASE:-20000}"
BIN="${APISERVER_BIN:-$PWD/target/release/apiserver}"
LB_PORT=$((B + 100))
STATS_PORT=$((B + 101))
STAGE_PORT=$((B + 31))
PKI="$DIR/pki"
ETCD_SERVERS="http://127.0.0.1:$((B + 1)),http://127.0.0.1:$((B + 2)),http://127.0.0.1:$((B + 3))"
CHURN_ETCD="http://127.0.0.1:$((B + 21))"

log() { printf '[fleet] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"

install_deps() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v etcdctl >/dev/null || missing+=(etcd-client)
  command -v haproxy >/dev/null || missing+=(haproxy)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    # Keep the packages from starting system services (the fleet runs its own), putting back
    # any policy-rc.d the machine had: install-tools.sh's `with_services_held_off`.
    (
      # shellcheck source=deploy/install-tools.sh
      source ./deploy/install-tools.sh
      with_services_held_off $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    )
  fi
  if [[ ! -x "$BIN" ]]; then
    log "building the apiserver"
    ./deploy/build-deps.sh
    cargo build --release --locked -p gateway --bin apiserver
  fi
}

# One CA for the fleet: it signs the gateways' serving certificate (shared, so a client trusts
# every replica behind the balancer), the admin client certificate, and the certificate the
# processes present to each other. One ServiceAccount signing key, so a token issued by one
# replica is accepted by all.
make_pki() {
  [[ -f "$PKI/ca.crt" ]] && return
  mkdir -p "$PKI"
  log "creating the fleet's certificates in $PKI"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 3650 -subj "/CN=apiserver fleet CA" 2>/dev/null
  sign() { # name subject extensions
    openssl req "${ec[@]}" -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" 2>/dev/null
    printf '%b' "$3" >"$PKI/$1.ext"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
      -out "$PKI/$1.crt" -days 825 -extfile "$PKI/$1.ext" 2>/dev/null
    rm -f "$PKI/$1.csr" "$PKI/$1.ext"
  }
  sign serving "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n"
  sign admin "/O=system:masters/CN=fleet-admin" "extendedKeyUsage=clientAuth\n"
  sign stage "/CN=apiserver-stage" "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  chmod 600 "$PKI"/*.key
}

write_config() {
  cat >"$DIR/topology.yaml" <<EOF
# Which resources' storage stage runs in its own process (apiserver stage --shard NAME).
shards:
- name: churn
  url: https://127.0.0.1:$STAGE_PORT
  resources: [events, leases.coordination.k8s.io]
EOF
  {
    printf 'global\n  maxconn 4000\n'
    printf 'defaults\n  mode tcp\n  retries 3\n  option redispatch\n  timeout connect 2s\n  timeout client 1h\n  timeout server 1h\n  timeout tunnel 1h\n'
    printf 'frontend apiserver\n  bind 127.0.0.1:%s\n  default_backend gateways\n' "$LB_PORT"
    printf 'backend gateways\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n'
    printf '  default-server inter 1s fall 2 rise 2 check-ssl verify none\n'
    for i in $(seq 1 "$GATEWAYS"); do printf '  server gateway-%s 127.0.0.1:%s check\n' "$i" $((B + 40 + i)); done
    printf 'listen stats\n  bind 127.0.0.1:%s\n  mode http\n  stats enable\n  stats uri /\n' "$STATS_PORT"
  } >"$DIR/haproxy.cfg"
  local b64; b64() { base64 -w0 <"$1"; }
  cat >"$DIR/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: "https://127.0.0.1:$LB_PORT", certificate-authority-data: $(b64 "$PKI/ca.crt")}
users:
- name: fleet-admin
  user: {client-certificate-data: $(b64 "$PKI/admin.crt"), client-key-data: $(b64 "$PKI/admin.key")}
contexts:
- name: fleet
  context: {cluster: fleet, user: fleet-admin}
current-context: fleet
EOF
}

# Whether NAME runs: its pid is alive and not a zombie (a killed process nobody reaped yet).
running() {
  local pid state
  [[ -f "$DIR/pids/$1.pid" ]] || return 1
  pid=$(cat "$DIR/pids/$1.pid")
  state=$(ps -o stat= -p "$pid" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

# start NAME COMMAND...: runs COMMAND in the background unless NAME runs already.
start() {
  local name=$1; shift
  if running "$name"; then return; fi
  mkdir -p "$DIR/pids" "$DIR/logs"
  nohup "$@" >>"$DIR/logs/$name.log" 2>&1 &
  echo $! >"$DIR/pids/$name.pid"
  log "started $name (pid $!)"
}

wait_for() { # what, command...
  local what=$1; shift
  for _ in $(seq 1 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$what did not come up; see $DIR/logs"
}

etcd_member() { # index
  local i=$1 cluster=""
  for j in 1 2 3; do cluster+="${cluster:+,}etcd-$j=http://127.0.0.1:$((B + 10 + j))"; done
  start "etcd-$i" etcd --name "etcd-$i" --data-dir "$DIR/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$((B + i))" --advertise-client-urls "http://127.0.0.1:$((B + i))" \
    --listen-peer-urls "http://127.0.0.1:$((B + 10 + i))" --initial-advertise-peer-urls "http://127.0.0.1:$((B + 10 + i))" \
    --initial-cluster "$cluster" --initial-cluster-token apiserver-fleet --initial-cluster-state new
}

stage_flags=(--stage-topology "$DIR/topology.yaml" --stage-ca-file "$PKI/ca.crt"
  --stage-cert-file "$PKI/stage.crt" --stage-key-file "$PKI/stage.key")

gateway() { # index
  local i=$1
  start "gateway-$i" "$BIN" serve --data-dir "$DIR/gateway-$i" \
    --secure-port $((B + 40 + i)) --admin-port $((B + 60 + i)) \
    --tls-cert-file "$PKI/serving.crt" --tls-private-key-file "$PKI/serving.key" --client-ca-file "$PKI/ca.crt" \
    --service-account-signing-key-file "$PKI/sa.key" --service-account-key-file "$PKI/sa.key" \
    --storage-backend etcd3 --etcd-servers "$ETCD_SERVERS" "${stage_flags[@]}" \
    --shutdown-delay-duration 3s
}

up() {
  install_deps
  make_pki
  write_config
  for i in 1 2 3; do etcd_member "$i"; done
  start etcd-churn etcd --name etcd-churn --data-dir "$DIR/etcd-churn" \
    --listen-client-urls "$CHURN_ETCD" --advertise-client-urls "$CHURN_ETCD" \
    --listen-peer-urls "http://127.0.0.1:$((B + 22))" --initial-advertise-peer-urls "http://127.0.0.1:$((B + 22))" \
    --initial-cluster "etcd-churn=http://127.0.0.1:$((B + 22))"
  wait_for "the etcd cluster" env ETCDCTL_API=3 etcdctl --endpoints "$ETCD_SERVERS" endpoint health
  wait_for "the churn etcd" env ETCDCTL_API=3 etcdctl --endpoints "$CHURN_ETCD" endpoint health
  start stage-churn "$BIN" stage --shard churn --data-dir "$DIR/stage-churn" \
    --storage-backend etcd3 --etcd-servers "$ETCD_SERVERS" \
    --etcd-servers-overrides "/events#$CHURN_ETCD,coordination.k8s.io/leases#$CHURN_ETCD" "${stage_flags[@]}"
  for i in $(seq 1 "$GATEWAYS"); do gateway "$i"; done
  for i in $(seq 1 "$GATEWAYS"); do
    wait_for "gateway-$i" curl -sfk "https://127.0.0.1:$((B + 40 + i))/readyz"
  done
  start haproxy haproxy -db -f "$DIR/haproxy.cfg"
  wait_for "the balancer" curl -sfk "https://127.0.0.1:$LB_PORT/readyz"
  cat <<EOF
fleet up: $GATEWAYS gateways behind https://127.0.0.1:$LB_PORT (balancer statistics: http://127.0.0.1:$STATS_PORT/)
  export KUBECONFIG=$DIR/admin.kubeconfig
  kubectl get namespaces
admin endpoints: $(for i in $(seq 1 "$GATEWAYS"); do printf 'http://127.0.0.1:%s/ ' $((B + 60 + i)); done)
logs: $DIR/logs   status: deploy/fleet.sh status   stop: deploy/fleet.sh down
EOF
}

status() {
  [[ -d "$DIR/pids" ]] || die "no fleet in $DIR"
  local failed=0
  for f in "$DIR"/pids/*.pid; do
    local name; name=$(basename "$f" .pid)
    if running "$name"; then printf '%-14s running  pid %s\n' "$name" "$(cat "$f")"; else printf '%-14s DOWN\n' "$name"; failed=1; fi
  done
  echo "etcd cluster:"
  ETCDCTL_API=3 etcdctl --endpoints "$ETCD_SERVERS" endpoint status -w table 2>&1 | sed 's/^/  /' || true
  for i in $(seq 1 "$GATEWAYS"); do
    printf 'gateway-%s readyz: %s\n' "$i" "$(curl -sk --max-time 2 "https://127.0.0.1:$((B + 40 + i))/readyz" || echo unreachable)"
  done
  printf 'stage processes seen by gateway-1: %s\n' \
    "$(curl -s --max-time 2 "http://127.0.0.1:$((B + 61))/actors" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stageProcesses"])' 2>/dev/null || echo unknown)"
  echo "balancer:"
  curl -s --max-time 2 "http://127.0.0.1:$STATS_PORT/;csv" 2>/dev/null | awk -F, 'NR>1 && $1=="gateways" {printf "  %-12s %s\n", $2, $18}' || true
  return $failed
}

stop_all() {
  [[ -d "$DIR/pids" ]] || return 0
  # Gateways first (they drain), then the stage process, the balancer, etcd last.
  for pattern in 'gateway-*' 'stage-*' 'haproxy' 'etcd-*'; do
    for f in "$DIR"/pids/$pattern.pid; do
      [[ -f "$f" ]] || continue
      kill -TERM "$(cat "$f")" 2>/dev/null || true
    done
    for f in "$DIR"/pids/$pattern.pid; do
      [[ -f "$f" ]] || continue
      for _ in $(seq 1 100); do running "$(basename "$f" .pid)" || break; sleep 0.1; done
      kill -KILL "$(cat "$f")" 2>/dev/null || true
      rm -f "$f"
    done
  done
  log "stopped"
}

case "${1:-}" in
  up | start) up ;;
  status) status ;;
  kill)
    [[ -n "${2:-}" && -f "$DIR/pids/$2.pid" ]] || die "usage: fleet.sh kill NAME (one of: $(ls "$DIR/pids" 2>/dev/null | sed 's/\.pid$//' | tr '\n' ' '))"
    kill -KILL "$(cat "$DIR/pids/$2.pid")" && log "killed $2" ;;
  stop)
    [[ -n "${2:-}" && -f "$DIR/pids/$2.pid" ]] || die "usage: fleet.sh stop NAME"
    kill -TERM "$(cat "$DIR/pids/$2.pid")"
    for _ in $(seq 1 300); do running "$2" || break; sleep 0.1; done
    running "$2" && die "$2 did not stop within 30 s"
    log "stopped $2" ;;
  down)
    stop_all
    if [[ "${2:-}" == "--purge" ]]; then rm -rf "$DIR" && log "removed $DIR"; fi ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
