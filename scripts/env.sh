# Sourced by the scripts: one build directory shared by every run and clone on this machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/rkube-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
