#!/usr/bin/env bash
# Runs the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer) on a stable toolchain.
#
#   deploy/fuzz.sh [SECONDS] [TARGET...]
#
# Each target (default: all of them) runs SECONDS (default 60) in turn, one process at a time,
# starting from its committed corpus in fuzz/corpus/<target>/ and adding what it finds there.
# A crash stops that target and leaves its input in fuzz/artifacts/<target>/; the script goes
# on with the next one and exits non-zero at the end. RUSTC_BOOTSTRAP=1 lets stable rustc take
# the sanitizer flags cargo-fuzz passes; set FUZZ_SANITIZER=none where AddressSanitizer does
# not work. The build needs the Kubernetes .proto files (deploy/build-deps.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_EACH="${1:-60}"
shift || true
SANITIZER="${FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
export K8S_PROTO_DIR="${K8S_PROTO_DIR:-$ROOT/target/k8s-protos}"

log() { printf '[fuzz] %s\n' "$*" >&2; }

if ! cargo fuzz --version >/dev/null 2>&1; then
  log "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

cd "$ROOT"
if (($# == 0)); then
  mapfile -t targets < <(cargo fuzz list)
else
  targets=("$@")
fi

log "building ${#targets[@]} targets (sanitizer: $SANITIZER)"
cargo fuzz build --sanitizer "$SANITIZER"

failed=()
for t in "${targets[@]}"; do
  log "$t: ${SECONDS_EACH}s"
  mkdir -p "fuzz/corpus/$t"
  if ! cargo fuzz run --sanitizer "$SANITIZER" "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1; then
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  log "crashed: ${failed[*]} (inputs in fuzz/artifacts/)"
  exit 1
fi
log "no crashes"
