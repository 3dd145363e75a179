#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks formatting and lints, then runs
# every test (unit, integration against real etcd and SQLite, crash tests) with nextest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
./scripts/install-deps.sh
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo nextest run --workspace --locked --no-fail-fast "$@"
