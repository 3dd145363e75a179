#!/usr/bin/env bash
# Brings rkube up on this machine and deploys the seed command's demo, offline:
#   1. installs what is missing (apt), builds rkube (release);
#   2. builds the demo images from Debian packages (scripts/build-images.sh) and serves them
#      from a local registry on 127.0.0.1:5000, the node's mirror for docker.io;
#   3. starts `rkube server` (control plane on embedded SQLite, HTTPS on :6443, and its own
#      node: containerd started by rkube, runc, CNI bridge) unless one already answers;
#   4. runs `kubectl create deployment nginx --image=nginx --replicas=3` with the real
#      kubectl, waits for the three pods to be Running, and fetches nginx's page from one.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
./scripts/install-deps.sh
cargo build --release --locked -p rkube --bin rkube --bin rkube-pause
RKUBE="$CARGO_TARGET_DIR/release/rkube"
DATA_DIR="${RKUBE_DATA_DIR:-/var/lib/rkube/server}"
PORT="${RKUBE_PORT:-6443}"
REGISTRY_DIR="${RKUBE_REGISTRY_DIR:-/var/lib/rkube/registry}"
REGISTRY_PORT="${RKUBE_REGISTRY_PORT:-5000}"
export KUBECONFIG="$DATA_DIR/admin.kubeconfig"
mkdir -p "$DATA_DIR" "$REGISTRY_DIR"

# The demo images, offline, behind a local docker.io mirror.
RKUBE="$RKUBE" ./scripts/build-images.sh "$REGISTRY_DIR/images" >/dev/null
./scripts/registry.sh start "$REGISTRY_DIR" "$REGISTRY_PORT" >/dev/null
./scripts/registry.sh push-demo "$REGISTRY_DIR" "$REGISTRY_PORT" "$REGISTRY_DIR/images" >/dev/null

ready() { [ -f "$KUBECONFIG" ] && kubectl get --raw /readyz >/dev/null 2>&1; }

if ready; then
  echo "rkube server already running (data dir $DATA_DIR)"
else
  nohup "$RKUBE" server --data-dir "$DATA_DIR" --https-port "$PORT" \
    --registry-mirror "docker.io=http://127.0.0.1:$REGISTRY_PORT" \
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
# Pods need the namespace's default ServiceAccount (the controller manager creates it) and a
# Ready node.
for _ in $(seq 1 300); do
  kubectl get serviceaccount default >/dev/null 2>&1 &&
    kubectl wait --for=condition=Ready node --all --timeout=1s >/dev/null 2>&1 && break
  sleep 0.2
done
kubectl get deployment nginx >/dev/null 2>&1 ||
  kubectl create deployment nginx --image=nginx --replicas=3
kubectl rollout status deployment/nginx --timeout=180s
kubectl get deployments,replicasets -o wide
kubectl get pods -o wide
IP=$(kubectl get pods -l app=nginx -o jsonpath='{.items[0].status.podIP}')
echo
echo "GET http://$IP/ :"
curl -sS --max-time 5 "http://$IP/" | grep -i '<title>'
echo
echo "export KUBECONFIG=$KUBECONFIG   # to use kubectl against this cluster"
echo "Stop: kill \$(cat $DATA_DIR/server.pid); remove its pods: $RKUBE killall --data-dir $DATA_DIR/agent"
