# Sourced by the scripts: one build directory shared by every run and clone on this machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/rkube-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Scripted builds do not need incremental state (tens of GB per target dir over time).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
