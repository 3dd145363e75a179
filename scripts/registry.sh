#!/usr/bin/env bash
# A local OCI registry for rkube's demos and tests: Debian's `docker-registry` (distribution
# 2.8) serving plain HTTP on 127.0.0.1:PORT, filesystem storage under DIR. Idempotent.
#
#   scripts/registry.sh start DIR [PORT=5000]   start in the background (DIR/registry.pid,
#                                              DIR/registry.log), wait until /v2/ answers
#   scripts/registry.sh stop DIR                stop it
#   scripts/registry.sh status DIR              exit 0 when running (prints the port)
#   scripts/registry.sh push DIR PORT FILE.tar REPO:TAG
#                                              copy an OCI archive in (skopeo)
#   scripts/registry.sh push-demo DIR PORT [IMAGES_DIR]
#                                              push every archive IMAGES_DIR/images.tsv lists
#                                              (default: build them into DIR/images with
#                                              scripts/build-images.sh) under its reference
#                                              without `docker.io/`, e.g. library/nginx:latest
#
# containerd reaches it as 127.0.0.1:PORT/REPO:TAG directly, or as docker.io/REPO:TAG with a
# CRI registry config_path whose docker.io/hosts.toml points at http://127.0.0.1:PORT.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  sed -n '5,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

answers() { # PORT
  curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/v2/" 2>/dev/null
}

running_pid() { # DIR: prints the pid when our registry runs
  local pidf=$1/registry.pid pid
  [ -f "$pidf" ] || return 1
  pid=$(cat "$pidf")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q docker-registry || return 1
  echo "$pid"
}

start() { # DIR PORT
  local dir=$1 port=$2 pid
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if pid=$(running_pid "$dir"); then
    if [ "$(cat "$dir/port" 2>/dev/null)" = "$port" ] && answers "$port"; then
      echo "registry: already running on 127.0.0.1:$port (pid $pid)" >&2
      return 0
    fi
    stop "$dir"
  fi
  if answers "$port"; then
    echo "registry: 127.0.0.1:$port is already served by another process" >&2
    return 1
  fi
  command -v docker-registry >/dev/null || {
    echo "registry: docker-registry missing: install Debian package docker-registry (scripts/install-deps.sh)" >&2
    return 1
  }
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  headers:
    X-Content-Type-Options: [nosniff]
EOF
  echo "$port" >"$dir/port"
  setsid docker-registry serve "$dir/config.yml" </dev/null >>"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  for _ in $(seq 1 200); do
    if answers "$port"; then
      echo "registry: serving 127.0.0.1:$port (pid $(cat "$dir/registry.pid"), storage $dir/data)" >&2
      return 0
    fi
    if ! running_pid "$dir" >/dev/null; then break; fi
    sleep 0.1
  done
  echo "registry: did not start; log:" >&2
  tail -n 20 "$dir/registry.log" >&2
  stop "$dir" || true
  return 1
}

stop() { # DIR
  local dir=$1 pid
  if pid=$(running_pid "$dir"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "registry: stopped (pid $pid)" >&2
  fi
  rm -f "$dir/registry.pid"
}

push() { # DIR PORT FILE REPO:TAG
  local dir=$1 port=$2 file=$3 ref=$4
  [ -f "$file" ] || { echo "registry: $file: no such archive" >&2; return 1; }
  answers "$port" || { echo "registry: nothing answers on 127.0.0.1:$port (run: $0 start $dir $port)" >&2; return 1; }
  mkdir -p "$dir/tmp"
  TMPDIR="$dir/tmp" skopeo copy --quiet --dest-tls-verify=false \
    "oci-archive:$file" "docker://127.0.0.1:$port/$ref"
  echo "registry: pushed $(basename "$file") as 127.0.0.1:$port/$ref" >&2
}

push_demo() { # DIR PORT [IMAGES_DIR]
  local dir=$1 port=$2 images=${3:-} file ref
  if [ -z "$images" ]; then
    images=$dir/images
    "$HERE/build-images.sh" "$images"
  fi
  [ -f "$images/images.tsv" ] || { echo "registry: $images/images.tsv missing (scripts/build-images.sh $images)" >&2; return 1; }
  while IFS=$'\t' read -r file ref; do
    [ -n "$file" ] || continue
    push "$dir" "$port" "$images/$file" "${ref#docker.io/}"
  done <"$images/images.tsv"
}

[ $# -ge 2 ] || usage
verb=$1 dir=$2
case $verb in
  start) [ $# -le 3 ] || usage; start "$dir" "${3:-5000}" ;;
  stop) [ $# -eq 2 ] || usage; stop "$dir" ;;
  status)
    [ $# -eq 2 ] || usage
    if running_pid "$dir" >/dev/null && answers "$(cat "$dir/port")"; then cat "$dir/port"; else exit 1; fi ;;
  push) [ $# -eq 5 ] || usage; push "$dir" "$3" "$4" "$5" ;;
  push-demo) [ $# -ge 3 ] && [ $# -le 4 ] || usage; push_demo "$dir" "$3" "${4:-}" ;;
  *) usage ;;
esac
