#!/usr/bin/env bash
# Installs the system packages rkube needs, with apt-get, only when missing.
# Idempotent and silent when everything is already present.
set -euo pipefail

# package -> a file it installs (to check presence without dpkg-query per package)
declare -A PKGS=(
  [etcd-server]=/usr/bin/etcd
  [etcd-client]=/usr/bin/etcdctl
  [containerd]=/usr/bin/containerd
  [runc]=/usr/sbin/runc
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [docker-registry]=/usr/bin/docker-registry
  [skopeo]=/usr/bin/skopeo
  [umoci]=/usr/bin/umoci
  [busybox-static]=/bin/busybox
  [nginx]=/usr/sbin/nginx
  [iproute2]=/usr/sbin/ip
  [iptables]=/usr/sbin/iptables
  [protobuf-compiler]=/usr/bin/protoc
  [libprotobuf-dev]=/usr/include/google/protobuf/descriptor.proto
  [sqlite3]=/usr/bin/sqlite3
)

missing=()
for pkg in "${!PKGS[@]}"; do
  [ -e "${PKGS[$pkg]}" ] || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/rkube-apt.log 2>&1; then
  $SUDO apt-get update -qq >>/tmp/rkube-apt.log 2>&1
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/rkube-apt.log 2>&1 || {
    echo "install-deps: apt-get failed; see /tmp/rkube-apt.log" >&2
    tail -n 20 /tmp/rkube-apt.log >&2
    exit 1
  }
fi
# Debian's packages may start their own daemons from init scripts; rkube runs its own
# instances, so stop the ones this run just installed.
for svc in etcd containerd docker-registry nginx; do
  case " ${missing[*]} " in *" $svc "*|*" etcd-server "*)
    if command -v service >/dev/null 2>&1; then $SUDO service "$svc" stop >/dev/null 2>&1 || true; fi ;;
  esac
done
exit 0
