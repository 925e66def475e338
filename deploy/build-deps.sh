#!/usr/bin/env bash
# Installs what building the apiserver needs beyond Rust, on a fresh Debian machine: protoc and
# the well-known .proto files (protobuf-compiler, libprotobuf-dev), which the etcd-client crate
# compiles its protocol with. Idempotent: a second run only checks.
set -euo pipefail

APT=(protobuf-compiler libprotobuf-dev)
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"

missing=()
for p in "${APT[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  printf '[build-deps] apt-get install %s\n' "${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
