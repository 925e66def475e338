#!/usr/bin/env bash
# Builds and starts the apiserver on the embedded store with its data in ./data. It prints the
# address it serves and the path of an admin kubeconfig:
#   export KUBECONFIG=$PWD/data/admin.kubeconfig; kubectl get ns
# Extra arguments are passed to `apiserver serve` (see `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p gateway --bin apiserver
exec ./target/release/apiserver serve "$@"
