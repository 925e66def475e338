#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine with Rust: installs the real tools the
# end-to-end tests drive (kubectl 1.30, helm 3, the Python client, etcd), builds the apiserver
# binary, and runs every crate's tests, end-to-end ones included, in the release profile.
#
# One build for both: the binary is built in the same cargo invocation as the tests, so the
# dependencies are compiled once with the tests' features (a separate `cargo build -p gateway`
# resolves other features for tokio and friends and compiles the whole graph a second time).
# `--tests` selects every target with `test = true` (libraries, binaries, integration tests) and
# leaves out doctests: no crate has one (every fenced block in a doc comment is `ignore`, `text`
# or data), so rustdoc is not run. `--bins` would also select the fuzz targets, which are
# `test = false` and would fuzz forever. The time the whole command took is printed at the end.
#
# The release profile keeps line tables for profiling (`debug = "line-tables-only"`); the test
# build drops them (panics still name their file and line), which saves generating and linking
# them into every test binary.
#
# The `tests` package (the end-to-end suites, which drive the real binary) is compiled at
# opt-level 1 here: its code waits on servers and clients, and optimizing it fully took 348 s of
# a 426 s rebuild on 2 cores (123 s at opt-level 1). Everything it tests (the apiserver binary
# and every library) stays fully optimized, and the load generator's own build (`cargo run
# --release -p tests --bin loadgen`) keeps the release profile.
#
# Three test threads: the end-to-end tests mostly wait (on servers starting, kubectl, windows
# aging out), using under half of two cores at three threads.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
eval "$(./deploy/install-tools.sh)"
export KUBECTL HELM APISERVER_PYTHON
tools=$(date +%s)
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-false}"
tests_opt=(--config 'profile.release.package.tests.opt-level=1')
cargo build --release --locked "${tests_opt[@]}" --workspace --tests --bin apiserver
built=$(date +%s)
cargo test --release --locked "${tests_opt[@]}" --workspace --tests -- --test-threads="${TEST_THREADS:-3}"
done_at=$(date +%s)
echo "test.sh: tools $((tools - start))s, build $((built - tools))s, tests $((done_at - built))s, total $((done_at - start))s"
