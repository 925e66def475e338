#!/usr/bin/env bash
# Installs what building the apiserver needs beyond Rust, on a fresh Debian machine:
# - protoc and the well-known .proto files (protobuf-compiler, libprotobuf-dev), which the
#   etcd-client crate compiles its protocol with;
# - Kubernetes' own .proto files (and the Go types beside them), from Debian's
#   golang-k8s-api-dev and golang-k8s-apimachinery-dev packages, into $K8S_PROTO_DIR
#   (default: target/k8s-protos). The `protobuf` crate compiles the wire format from them;
# - a C++ compiler (g++), which the fuzz crate's libFuzzer is built with.
# Idempotent: a second run only checks.
set -euo pipefail

APT=(protobuf-compiler libprotobuf-dev g++ xz-utils curl ca-certificates)
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PROTO_DIR="${K8S_PROTO_DIR:-$ROOT/target/k8s-protos}"
# The Kubernetes API packages: Debian's stable suite carries k8s.io/api 0.32 (a superset of
# v1.30's messages; field numbers never change).
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEBIAN_SUITE="trixie"
K8S_PACKAGES=(golang-k8s-api-dev golang-k8s-apimachinery-dev)

log() { printf '[build-deps] %s\n' "$*" >&2; }

# Marks a directory of protos this script made, so that a later run replaces only its own.
MARKER=".fetched-by-build-deps"
# Puts the protos fetched into $1 (a directory this script made) at $2. Something already at $2
# is replaced only if this script made it; anything else is left as it is, and the run stops
# saying so. Never deletes what it did not create.
install_protos() {
  local fetched=$1 dest=$2
  touch "$fetched/$MARKER"
  if [[ -e $dest || -L $dest ]]; then
    if [[ -L $dest || ! -f $dest/$MARKER ]]; then
      log "$dest already exists and was not made by this script: move it away, or set K8S_PROTO_DIR to another directory"
      return 1
    fi
    rm -rf "$dest"
  fi
  mv "$fetched" "$dest"
}

# Sourced (by the tests of the functions above): define, do nothing.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0

missing=()
for p in "${APT[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f "$PROTO_DIR/k8s.io/api/core/v1/generated.proto" \
   || ! -f "$PROTO_DIR/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto" ]]; then
  mkdir -p "$(dirname "$PROTO_DIR")"
  # Both made here, and removed however the run ends; the staging directory sits beside the
  # destination, so the files arrive there in one rename.
  work="$(mktemp -d)"
  staging="$(mktemp -d "$(dirname "$PROTO_DIR")/.k8s-protos.XXXXXX")"
  trap 'rm -rf "$work" "$staging"' EXIT
  log "reading $DEBIAN_SUITE's package index for ${K8S_PACKAGES[*]}"
  curl -fsSL "$DEBIAN_MIRROR/dists/$DEBIAN_SUITE/main/binary-all/Packages.xz" | xz -dc >"$work/Packages"
  for pkg in "${K8S_PACKAGES[@]}"; do
    # Filename and SHA256 of the package's entry in the (signed) index.
    read -r file sha < <(awk -v p="$pkg" '
      $1 == "Package:" { cur = $2 }
      cur == p && $1 == "Filename:" { f = $2 }
      cur == p && $1 == "SHA256:" { s = $2 }
      /^$/ { if (f != "" && s != "") { print f, s; exit } cur = "" }' "$work/Packages")
    [[ -n "${file:-}" ]] || { log "$pkg is not in $DEBIAN_SUITE's index"; exit 1; }
    log "fetching $file"
    curl -fsSL -o "$work/$pkg.deb" "$DEBIAN_MIRROR/$file"
    echo "$sha  $work/$pkg.deb" | sha256sum -c --quiet -
    dpkg-deb -x "$work/$pkg.deb" "$work/x"
  done
  src="$work/x/usr/share/gocode/src"
  # The .proto files, and the Go types they are generated from (which say what JSON inlines
  # and omits when empty).
  (cd "$src" && find k8s.io -name generated.proto -o -name 'types*.go' ! -name '*_test.go' \
     | tar -cf - -T -) | tar -xf - -C "$staging"
  install_protos "$staging" "$PROTO_DIR"
  log "Kubernetes protos in $PROTO_DIR ($(find "$PROTO_DIR" -name generated.proto | wc -l) files)"
fi
