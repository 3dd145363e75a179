#!/usr/bin/env bash
# Brings rkube up on this machine: installs what is missing, builds rkube, starts
# `rkube server` (control plane on embedded SQLite, HTTPS on :6443) in the background unless
# one already answers, and deploys the demo with the real kubectl.
#
# Today the API server, the controllers and the scheduler turn the Deployment into a
# ReplicaSet and three pods; the node agent (kubelet) that runs them lands with issue 6, so
# with no node yet the demo stops at Pending pods (FailedScheduling) and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
./scripts/install-deps.sh
cargo build --release --locked -p rkube
RKUBE="$CARGO_TARGET_DIR/release/rkube"
DATA_DIR="${RKUBE_DATA_DIR:-/var/lib/rkube/server}"
PORT="${RKUBE_PORT:-6443}"
export KUBECONFIG="$DATA_DIR/admin.kubeconfig"
mkdir -p "$DATA_DIR"

ready() { [ -f "$KUBECONFIG" ] && kubectl get --raw /readyz >/dev/null 2>&1; }

if ready; then
  echo "rkube server already running (data dir $DATA_DIR)"
else
  # The agent (kubelet) is not built yet: the server runs the control plane only.
  nohup "$RKUBE" server --data-dir "$DATA_DIR" --https-port "$PORT" --disable-agent \
    >"$DATA_DIR/server.log" 2>&1 &
  echo $! >"$DATA_DIR/server.pid"
  for _ in $(seq 1 300); do
    ready && break
    sleep 0.2
  done
  ready || { echo "rkube server did not become ready; see $DATA_DIR/server.log" >&2; exit 1; }
  echo "rkube server started (pid $(cat "$DATA_DIR/server.pid"), log $DATA_DIR/server.log)"
fi

kubectl version
# Pods need the namespace's default ServiceAccount, which the controller manager creates
# just after the server is ready (as upstream).
for _ in $(seq 1 150); do
  kubectl get serviceaccount default >/dev/null 2>&1 && break
  sleep 0.2
done
kubectl get deployment nginx >/dev/null 2>&1 ||
  kubectl create deployment nginx --image=nginx --replicas=3
# Give the controllers a moment to create the ReplicaSet and its pods.
for _ in $(seq 1 50); do
  [ "$(kubectl get pods -l app=nginx --no-headers 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.2
done
kubectl get deployments,replicasets,pods -o wide
echo
echo "export KUBECONFIG=$KUBECONFIG   # to use kubectl against this cluster"
echo "Pods stay Pending for now: there is no node until the kubelet (issue 6) lands."
