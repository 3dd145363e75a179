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
# The e2e tests run the rkube binary; build it first (testkit's own `cargo build -p rkube`
# is then a no-op instead of a build racing the first tests' timeouts).
cargo build --locked -p rkube --bin rkube --bin rkube-pause
cargo nextest run --workspace --locked --no-fail-fast "$@"
