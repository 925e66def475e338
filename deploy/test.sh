#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine with Rust: installs the real tools the
# end-to-end tests drive (kubectl 1.30, helm 3, the Python client, etcd), builds the apiserver
# binary, and runs every crate's tests, end-to-end ones included, in the release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(./deploy/install-tools.sh)"
export KUBECTL HELM APISERVER_PYTHON
cargo build --release --locked -p gateway --bin apiserver
cargo test --release --locked --workspace -- --test-threads="${TEST_THREADS:-2}"
