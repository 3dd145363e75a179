#!/usr/bin/env bash
# Brings rkube up on this machine. The cluster itself (API server, controllers, kubelet)
# lands with the next issues; until then this builds rkube and runs what exists: the
# storage benchmark, embedded SQLite against a real etcd, side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
./scripts/install-deps.sh
cargo build --release --locked -p rkube
"$CARGO_TARGET_DIR/release/rkube" version
"$CARGO_TARGET_DIR/release/rkube" bench store --seconds "${SECONDS_PER_PHASE:-3}" "$@"
