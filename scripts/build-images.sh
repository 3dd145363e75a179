#!/usr/bin/env bash
# Builds rkube's offline demo images, with no network, from Debian packages on this machine
# (scripts/install-deps.sh installs them), as OCI archives in OUT_DIR:
#
#   nginx-latest.tar    docker.io/library/nginx:latest   Debian's nginx serving "Welcome to nginx!" on :80
#   nginx-1.22.tar      docker.io/library/nginx:1.22     the same image
#   nginx-1.22-r2.tar   docker.io/library/nginx:1.22-r2  the same nginx, page "Welcome to nginx! (r2)"
#   busybox-latest.tar  docker.io/library/busybox:latest static busybox with its applets, CMD ["sh"]
#   busybox-1.36.tar    docker.io/library/busybox:1.36   the same image
#
# OUT_DIR/images.tsv lists "FILE<TAB>REFERENCE" per archive. Archives are packed with
# `rkube image pack` ($RKUBE, else the newer of $CARGO_TARGET_DIR/{release,debug}/rkube, else
# of the repo's target/, else `rkube` on PATH). Nothing is rebuilt while OUT_DIR/.stamp matches the
# inputs (this script, the oci crate, the host binaries and files copied in). Concurrent
# runs on one OUT_DIR wait for each other (flock).
#
# Usage: scripts/build-images.sh OUT_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
OUT=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

exec 9>"$OUT/.lock"
flock 9

NGINX_BIN=/usr/sbin/nginx
BUSYBOX_BIN=/bin/busybox
MIME_TYPES=/etc/nginx/mime.types
for need in "$NGINX_BIN:nginx" "$BUSYBOX_BIN:busybox-static" "$MIME_TYPES:nginx-common"; do
  f=${need%%:*}
  [ -e "$f" ] || { echo "build-images: $f missing: install Debian package ${need#*:} (scripts/install-deps.sh)" >&2; exit 1; }
done

# The libraries (and loader) a dynamic binary needs, one path a line.
libs_of() {
  LC_ALL=C ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}

NGINX_LIBS=$(libs_of "$NGINX_BIN")
ARCHIVES="nginx-latest.tar nginx-1.22.tar nginx-1.22-r2.tar busybox-latest.tar busybox-1.36.tar"

# Everything the output depends on.
stamp=$(
  {
    sha256sum "${BASH_SOURCE[0]}"
    find "$REPO/crates/oci/src" -type f -name '*.rs' 2>/dev/null | LC_ALL=C sort | xargs -r sha256sum
    # shellcheck disable=SC2086
    sha256sum "$NGINX_BIN" "$BUSYBOX_BIN" "$MIME_TYPES" $(for l in $NGINX_LIBS; do readlink -f "$l"; done)
  } | sed "s|$REPO/||" | sha256sum | cut -d' ' -f1
)
if [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$stamp" ]; then
  ok=1
  for a in $ARCHIVES; do [ -s "$OUT/$a" ] || ok=0; done
  if [ $ok = 1 ]; then
    echo "build-images: $OUT is up to date" >&2
    exit 0
  fi
fi

find_rkube() {
  if [ -n "${RKUBE:-}" ]; then echo "$RKUBE"; return; fi
  local d p newest=""
  for d in "${CARGO_TARGET_DIR:-}" "$REPO/target"; do
    [ -n "$d" ] || continue
    for p in "$d/release/rkube" "$d/debug/rkube"; do
      # The most recently built one: a stale release binary may lack `image pack`.
      if [ -x "$p" ] && { [ -z "$newest" ] || [ "$p" -nt "$newest" ]; }; then newest=$p; fi
    done
    if [ -n "$newest" ]; then echo "$newest"; return; fi
  done
  if command -v rkube >/dev/null 2>&1; then command -v rkube; return; fi
  echo "build-images: no rkube binary: set RKUBE or run 'cargo build -p rkube'" >&2
  exit 1
}
RKUBE_BIN=$(find_rkube)
if ! "$RKUBE_BIN" image pack --help >/dev/null 2>&1; then
  echo "build-images: $RKUBE_BIN has no 'image pack' (stale?): rebuild with 'cargo build -p rkube' or set RKUBE" >&2
  exit 1
fi

WORK="$OUT/.work"
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
rm -f "$OUT/.stamp"

PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# put ROOT PATH MODE < content
put() { mkdir -p "$(dirname "$1$2")"; cat >"$1$2"; chmod "$3" "$1$2"; }

base_etc() { # ROOT: users, groups, name service config
  local root=$1
  put "$root" /etc/passwd 0644 <<'EOF'
root:x:0:0:root:/root:/bin/sh
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
nginx:x:101:101:nginx:/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
  put "$root" /etc/group 0644 <<'EOF'
root:x:0:
www-data:x:33:
nginx:x:101:
nogroup:x:65534:
nobody:x:65534:
EOF
  put "$root" /etc/nsswitch.conf 0644 <<'EOF'
passwd: files
group: files
shadow: files
hosts: files dns
networks: files
protocols: files
services: files
EOF
  mkdir -p "$root/root" "$root/tmp" "$root/run" "$root/var/tmp"
  chmod 0700 "$root/root"
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 0755 "$root/run"
}

index_page() { # TITLE
  cat <<EOF
<!DOCTYPE html>
<html>
<head>
<title>$1</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto; font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>$1</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. This image was built by rkube from Debian's nginx package.</p>
</body>
</html>
EOF
}

build_nginx() { # ROOT TITLE
  local root=$1 title=$2 l
  mkdir -p "$root"
  chmod 0755 "$root"
  install -D -m 0755 "$NGINX_BIN" "$root/usr/sbin/nginx"
  for l in $NGINX_LIBS; do
    # Keep the host's mode: the dynamic loader must stay executable.
    install -D -m "$(stat -L -c %a "$l")" "$(readlink -f "$l")" "$root$l"
  done
  base_etc "$root"
  install -D -m 0644 "$MIME_TYPES" "$root/etc/nginx/mime.types"
  put "$root" /etc/nginx/nginx.conf 0644 <<'EOF'
user  www-data;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /run/nginx.pid;

events {
    worker_connections  1024;
}

http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';
    access_log  /var/log/nginx/access.log  main;

    sendfile           on;
    keepalive_timeout  65;

    include /etc/nginx/conf.d/*.conf;
}
EOF
  put "$root" /etc/nginx/conf.d/default.conf 0644 <<'EOF'
server {
    listen       80;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
EOF
  index_page "$title" | put "$root" /usr/share/nginx/html/index.html 0644
  put "$root" /usr/share/nginx/html/50x.html 0644 <<'EOF'
<!DOCTYPE html>
<html>
<head><title>Error</title></head>
<body><h1>An error occurred.</h1></body>
</html>
EOF
  mkdir -p "$root/var/log/nginx" "$root/var/lib/nginx" "$root/var/lock" "$root/var/cache/nginx"
  for d in body fastcgi proxy scgi uwsgi; do mkdir -p "$root/var/lib/nginx/$d"; done
  ln -sf /dev/stdout "$root/var/log/nginx/access.log"
  ln -sf /dev/stderr "$root/var/log/nginx/error.log"
  mkdir -p "$root/usr/bin" "$root/bin"
  # A basic userland, as the Debian base of Docker's nginx image has (sh, cat, ls, tar
  # for `kubectl cp`, …): static busybox with its applets.
  install -m 0755 "$BUSYBOX_BIN" "$root/bin/busybox"
  for a in $("$BUSYBOX_BIN" --list); do
    case $a in busybox|'['|'['*) ;; *) [ -e "$root/bin/$a" ] || ln -sf busybox "$root/bin/$a" ;; esac
  done
  find "$root" -type d -exec chmod u+rwx,go+rx {} +
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 0700 "$root/root"
}

pack_nginx() { # ROOT REF FILE
  "$RKUBE_BIN" image pack "$1" --name "$2" -o "$OUT/$3" \
    --env "$PATH_ENV" --env NGINX_VERSION=1.22.1 \
    --cmd '["nginx","-g","daemon off;"]' --expose 80/tcp --stop-signal SIGQUIT \
    --label org.opencontainers.image.source=debian:nginx >/dev/null
}

build_busybox() { # ROOT
  local root=$1 a
  mkdir -p "$root/bin"
  chmod 0755 "$root" "$root/bin"
  install -m 0755 "$BUSYBOX_BIN" "$root/bin/busybox"
  for a in $("$BUSYBOX_BIN" --list); do
    case $a in busybox|'['|'[[') ;; *) ln -sf busybox "$root/bin/$a" ;; esac
  done
  ln -sf busybox "$root/bin/["
  ln -sf busybox "$root/bin/[["
  base_etc "$root"
  mkdir -p "$root/home" "$root/usr/bin" "$root/usr/sbin" "$root/var/www" "$root/etc/network"
  echo "localhost" >"$root/etc/hostname"
  chmod 0644 "$root/etc/hostname"
}

pack_busybox() { # ROOT REF FILE
  "$RKUBE_BIN" image pack "$1" --name "$2" -o "$OUT/$3" \
    --env "$PATH_ENV" --cmd '["sh"]' >/dev/null
}

build_nginx "$WORK/nginx" "Welcome to nginx!"
pack_nginx "$WORK/nginx" docker.io/library/nginx:latest nginx-latest.tar
pack_nginx "$WORK/nginx" docker.io/library/nginx:1.22 nginx-1.22.tar
index_page "Welcome to nginx! (r2)" >"$WORK/nginx/usr/share/nginx/html/index.html"
pack_nginx "$WORK/nginx" docker.io/library/nginx:1.22-r2 nginx-1.22-r2.tar

build_busybox "$WORK/busybox"
pack_busybox "$WORK/busybox" docker.io/library/busybox:latest busybox-latest.tar
pack_busybox "$WORK/busybox" docker.io/library/busybox:1.36 busybox-1.36.tar

printf '%s\t%s\n' \
  nginx-latest.tar docker.io/library/nginx:latest \
  nginx-1.22.tar docker.io/library/nginx:1.22 \
  nginx-1.22-r2.tar docker.io/library/nginx:1.22-r2 \
  busybox-latest.tar docker.io/library/busybox:latest \
  busybox-1.36.tar docker.io/library/busybox:1.36 >"$OUT/images.tsv"
echo "$stamp" >"$OUT/.stamp"
echo "build-images: built $ARCHIVES in $OUT" >&2
