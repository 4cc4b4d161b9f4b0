#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole system on this machine:
# a private redis-server (AOF on; unless --redis is given), 1 leader, N workers and M
# gateways (dev auth), and with --nginx a private nginx in front of the gateways
# (deploy/nginx/pushonce.conf: plain HTTP on PORT, TLS with a self-signed certificate on
# PORT+1). --cluster starts a private Redis Cluster instead of one redis-server (3 masters,
# 1 replica each: deploy/cluster.sh) and runs the programs on it. Ctrl-C stops everything.
#
#   deploy/run.sh [--redis URL | --cluster] [--workers N] [--gateways M] [--port P]
#                 [--namespace NS] [--nginx PORT]
set -euo pipefail
cd "$(dirname "$0")/.."

redis_url="" cluster=0 workers=3 gateways=1 port=8080 ns=pushonce nginx_port=""
while (($#)); do
  case "$1" in
    --redis) redis_url=$2; shift 2 ;;
    --cluster) cluster=1; shift ;;
    --workers) workers=$2; shift 2 ;;
    --gateways) gateways=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --namespace) ns=$2; shift 2 ;;
    --nginx) nginx_port=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see $0 --help)" >&2; exit 2 ;;
  esac
done

cat <<MSG
run: 1. installing what building and running need, when missing (apt: compilers, -dev
        libraries, redis-server; ~140 MB, a few minutes on a bare Debian 12)
     2. building the four programs in build/ (15-25 min the first time on 2 cores, seconds after)
     3. starting redis-server, 1 leader, $workers workers, $gateways gateway(s)${nginx_port:+, nginx on $nginx_port}
MSG
PUSHONCE_SETUP_EXTRA=${nginx_port:+nginx} bash deploy/setup.sh
programs=(pushonce-leader pushonce-worker)
[ -f gateway/CMakeLists.txt ] && programs+=(pushonce-gateway)
# the load generator and verifier too: deploy/install.sh installs it with the others
programs+=(pushonce-bench)
bash deploy/build.sh "${programs[@]}"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { local p=$1; while ! port_free "$p"; do p=$((p + 1)); done; echo "$p"; }

state=.run
mkdir -p "$state/logs"
pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo "stopping..."
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ((cluster)) && bash deploy/cluster.sh stop "$state/cluster"
  echo "stopped"
}
trap cleanup INT TERM EXIT

if ((cluster)); then
  cluster_url=$(bash deploy/cluster.sh start "$state/cluster" | tail -1)
  echo "Redis Cluster (private, 3 masters + 3 replicas) at $cluster_url"
  export PUSHONCE_REDIS_CLUSTER=$cluster_url
  redis_url=${cluster_url%%,*}
elif [ -z "$redis_url" ]; then
  rport=$(free_port 6390)
  mkdir -p "$state/redis"
  redis-server --port "$rport" --bind 127.0.0.1 --dir "$PWD/$state/redis" \
    --appendonly yes --appendfsync everysec --save '' \
    >"$state/logs/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis_url="redis://127.0.0.1:$rport"
  echo "redis-server (private, AOF everysec) on $redis_url"
fi
export PUSHONCE_REDIS=$redis_url PUSHONCE_NAMESPACE=$ns
# Demo secrets, unless the caller brought its own.
rand() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
export PUSHONCE_JWT_SECRET=${PUSHONCE_JWT_SECRET:-$(rand)}
export PUSHONCE_API_KEY=${PUSHONCE_API_KEY:-$(rand)}
export PUSHONCE_ADMIN_TOKEN=${PUSHONCE_ADMIN_TOKEN:-$(rand)}
# Admission tokens signed with a demo ES256 key made once in the state folder: the leader
# signs with it, the gateways verify with it (the gate of nginx's /checkout/, the JWKS the
# checkout examples read). A caller's own key or secret is kept.
if [ -z "${PUSHONCE_ADMISSION_KEY:-}" ] && [ -z "${PUSHONCE_ADMISSION_SECRET:-}" ]; then
  if [ ! -s "$state/admission.pem" ]; then
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
      -out "$state/admission.pem" 2>/dev/null)
  fi
  export PUSHONCE_ADMISSION_KEY=$PWD/$state/admission.pem
fi

bin=build/bin
"$bin/pushonce-leader" run >"$state/logs/leader.log" 2>&1 &
pids+=($!)
for i in $(seq "$workers"); do
  "$bin/pushonce-worker" --id "worker-$i" >"$state/logs/worker-$i.log" 2>&1 &
  pids+=($!)
done
urls=()
if [ -x "$bin/pushonce-gateway" ]; then
  for i in $(seq "$gateways"); do
    gport=$(free_port "$port")
    # behind the private nginx, its X-Forwarded-For names each client (per-address limits)
    "$bin/pushonce-gateway" --id "gateway-$i" --listen "127.0.0.1:$gport" --dev-auth \
      ${nginx_port:+--trusted-proxy 127.0.0.1,::1} >"$state/logs/gateway-$i.log" 2>&1 &
    pids+=($!)
    urls+=("http://127.0.0.1:$gport")
    port=$((gport + 1))
  done
fi

if [ -n "$nginx_port" ] && ((${#urls[@]})); then
  port_free "$nginx_port" || { echo "error: port $nginx_port is taken" >&2; exit 1; }
  tls_port=$(free_port $((nginx_port + 1)))
  nginx_args=(--dir "$state/nginx" --port "$nginx_port" --tls-port "$tls_port")
  for u in "${urls[@]}"; do nginx_args+=(--gateway "${u#http://}"); done
  bash deploy/nginx/private-nginx.sh "${nginx_args[@]}" >"$state/logs/nginx.log" 2>&1 &
  pids+=($!)
  # A stand-in for the checkout behind the gate's /checkout/, unless one listens already.
  if port_free 8090 && command -v python3 >/dev/null; then
    python3 deploy/nginx/demo-checkout.py 8090 >"$state/logs/checkout.log" 2>&1 &
    pids+=($!)
  fi
  for _ in $(seq 50); do port_free "$nginx_port" || break; sleep 0.1; done
fi

cat <<MSG

pushonce is running (namespace $ns, logs in $state/logs/):
  leader: 1   workers: $workers   gateways: ${#urls[@]}
MSG
if [ -n "$nginx_port" ]; then
  echo "  nginx:   http://127.0.0.1:$nginx_port/ (demo page through nginx)   https://127.0.0.1:$tls_port/ (TLS, self-signed)"
  echo "  checkout behind the gate: http://127.0.0.1:$nginx_port/checkout/ (the waiting room first, then back, admitted)"
fi
for u in "${urls[@]}"; do echo "  gateway: $u/ (demo page)   $u/admin (dashboard)   WebSocket: ${u/http/ws}/ws"; done
cat <<MSG
  admin token (for /admin): $PUSHONCE_ADMIN_TOKEN

Try, in another shell:
  export PUSHONCE_REDIS=$redis_url PUSHONCE_REDIS_CLUSTER=${PUSHONCE_REDIS_CLUSTER:-} PUSHONCE_NAMESPACE=$ns PUSHONCE_JWT_SECRET=$PUSHONCE_JWT_SECRET
  $bin/pushonce-leader join alice
  $bin/pushonce-leader resource add room-1 --meta '{"name":"Room 1"}'
  $bin/pushonce-leader publish alice '{"text":"hello"}' --id greeting-1
  $bin/pushonce-leader status
  $bin/pushonce-leader token alice            # a JWT for the demo page's token field
  curl -s -X POST ${urls[0]:-http://127.0.0.1:8080}/api/publish -H 'Authorization: Bearer $PUSHONCE_API_KEY' \\
       -d '{"user":"alice","data":{"text":"over HTTP"},"id":"http-1"}'

Ctrl-C stops everything.
MSG
wait
