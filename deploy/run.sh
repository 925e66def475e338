#!/usr/bin/env bash
# Installs what the build needs (protoc and the Kubernetes protos, see build-deps.sh), builds the
# apiserver and starts it on the embedded store with its data in ./data. It prints the address it
# serves and the path of an admin kubeconfig:
#   export KUBECONFIG=$PWD/data/admin.kubeconfig; kubectl get ns
# Extra arguments are passed to `apiserver serve` (see `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build-deps.sh
cargo build --release --locked -p gateway --bin apiserver
exec ./target/release/apiserver serve "$@"
