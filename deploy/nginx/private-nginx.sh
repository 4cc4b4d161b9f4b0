#!/usr/bin/env bash
# Runs a private nginx (not the system service) from deploy/nginx/pushonce.conf, in the
# foreground, for tests and `deploy/run.sh --nginx PORT`:
#
#   deploy/nginx/private-nginx.sh --dir DIR --port PORT [--tls-port PORT]
#                                 --gateway HOST:PORT [--gateway HOST:PORT]...
#                                 [--checkout HOST:PORT] [--fail-open]
#
# DIR gets nginx.conf, the rendered pushonce.conf, a self-signed certificate for
# localhost/127.0.0.1 (tls/, made once), temp files and logs. PORT is the plain-HTTP
# listener on 127.0.0.1 (the "local" one), --tls-port the TLS one (127.0.0.1 too; default
# PORT+1). --checkout: the app behind the gate's /checkout/ (default 127.0.0.1:8090);
# --fail-open: the gate's failure policy switched to fail open (docs/operations.md "Protecting a checkout"). Runs
# `exec nginx -p DIR -c DIR/nginx.conf -g 'daemon off;'`: the caller owns the process and
# stops it with SIGTERM (SIGQUIT: graceful).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir="" port="" tls_port="" gateways=() checkout="127.0.0.1:8090" fail_open=0
while (($#)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --tls-port) tls_port=$2; shift 2 ;;
    --gateway) gateways+=("$2"); shift 2 ;;
    --checkout) checkout=$2; shift 2 ;;
    --fail-open) fail_open=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] && [ -n "$port" ] && ((${#gateways[@]})) || { echo "error: --dir, --port and --gateway are required" >&2; exit 2; }
tls_port=${tls_port:-$((port + 1))}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx_bin" ] || { echo "error: nginx is not installed (deploy/setup.sh installs it)" >&2; exit 1; }

mkdir -p "$dir/tls" "$dir/logs" "$dir/tmp"
dir=$(cd "$dir" && pwd)
if [ ! -s "$dir/tls/pushonce.crt" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/tls/pushonce.key" -out "$dir/tls/pushonce.crt" 2>/dev/null
fi

upstreams=""
for g in "${gateways[@]}"; do
  upstreams+="    server $g max_fails=1 fail_timeout=5s;  # gateway\n"
done
# The shipped file with this run's ports, gateways and certificate.
sed -e '/# redirect-begin/,/# redirect-end/d' \
    -e '/# gateway$/d' \
    -e "s|^upstream pushonce_gateways {|&\n$upstreams|" \
    -e "s|^upstream pushonce_sse {|&\n$upstreams|" \
    -e "s|listen 443 ssl;  # https|listen 127.0.0.1:$tls_port ssl;  # https|" \
    -e '/# https6$/d' \
    -e "s|listen 127.0.0.1:8088;  # local|listen 127.0.0.1:$port;  # local|" \
    -e "s|/etc/pushonce/tls/|$dir/tls/|g" \
    -e "s|server 127.0.0.1:8090;  # checkout|server $checkout;  # checkout|" \
    "$here/pushonce.conf" >"$dir/pushonce.conf"
if ((fail_open)); then
  sed -i 's|error_page 500 = @pushonce_fail_closed;|error_page 500 502 503 504 = @pushonce_fail_open;|' "$dir/pushonce.conf"
fi

cat >"$dir/nginx.conf" <<CONF
# Made by deploy/nginx/private-nginx.sh: a private nginx for pushonce (not the system one).
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log $dir/logs/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    include $dir/pushonce.conf;
}
CONF
"$nginx_bin" -t -q -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' 2>&1 | grep -v '^nginx: \[alert\] could not open error log' >&2 || true
exec "$nginx_bin" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;'
