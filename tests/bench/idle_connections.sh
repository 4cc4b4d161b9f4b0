#!/usr/bin/env bash
# Idle WebSocket connections on one gateway (docs/benchmarks.md "Idle connections").
# Starts a private redis-server (free port, temp dir) and one pushonce-gateway --dev-auth,
# opens N idle sessions (hello → welcome) from PROCS load-generator processes
# (idle_clients.mjs), each binding its sockets to its own loopback source address
# (127.0.0.2, 127.0.0.3, ...), then reports: sessions opened, time to open them, the
# gateway's VmRSS before/after and bytes per session, its CPU while the sessions sit idle
# (IDLE_S seconds: heartbeats and WebSocket pings), whether /healthz still answers, and
# Redis's channel count. Stops everything it started (by PID).
# Usage: tests/bench/idle_connections.sh BIN_DIR WS_MODULE_DIR   (BIN_DIR: build/bin)
# WS_MODULE_DIR is a folder whose node_modules holds the `ws` package (the Socket.IO
# peer's checkout after `npm ci` has it, or any folder after `npm install ws`); given as an
# argument or as WS_MODULE_DIR in the environment.
# Environment [default]: N [19000] PROCS [4] THREADS [gateway default] IDLE_S [30]
#   SETTLE_S [3] CONCURRENCY [100 handshakes in flight per process]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin_dir="$(cd "${1:-$here/../../build/bin}" && pwd)"
WS_MODULE_DIR=${2:-${WS_MODULE_DIR:-}}
[[ -d "$WS_MODULE_DIR/node_modules/ws" ]] || {
  echo "usage: tests/bench/idle_connections.sh BIN_DIR WS_MODULE_DIR (a folder whose node_modules holds ws)" >&2
  exit 2
}
export WS_MODULE_DIR
N=${N:-19000} PROCS=${PROCS:-4} IDLE_S=${IDLE_S:-30} SETTLE_S=${SETTLE_S:-3}
CONCURRENCY=${CONCURRENCY:-100} THREADS=${THREADS:-}
ulimit -n "$(ulimit -Hn)"
tmp="$(mktemp -d /tmp/idle-bench-XXXXXX)"
pids=()
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
heap_bytes() { # the gateway's own count of heap bytes in use (glibc mallinfo2), if exported
  curl -s -m 5 "http://127.0.0.1:$gw_port/metrics" | awk '/^pushonce_gateway_heap_in_use_bytes[ {]/ {print $2; exit}'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
slab_kb() { awk '/^Slab:/ {print $2}' /proc/meminfo; }  # kernel: both ends' sockets (loopback)
redis_mem() { redis-cli -p "$redis_port" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$tmp" --save '' --appendonly no \
  --logfile "$tmp/redis.log" &
pids+=($!)
for _ in $(seq 1 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

gw_port="$(free_port)"
gw_args=(--listen "127.0.0.1:$gw_port" --dev-auth --redis "redis://127.0.0.1:$redis_port"
  --namespace idlebench)
[[ -n "$THREADS" ]] && gw_args+=(--threads "$THREADS")
# every connection comes from 127.0.0.1: the per-address caps (docs/security.md) are off here
gw_args+=(--max-connections-per-ip 0 --max-sessions-per-ip 0)
"$bin_dir/pushonce-gateway" "${gw_args[@]}" >"$tmp/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
for _ in $(seq 1 100); do curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$gw_port/healthz" 2>/dev/null && break; sleep 0.1; done
sleep 1
rss_before=$(rss_kb "$gw")
heap_before=$(heap_bytes)
slab_before=$(slab_kb)
redis_before=$(redis_mem)

per=$(((N + PROCS - 1) / PROCS))
t0=$(date +%s%N)
client_pids=()
for ((i = 0; i < PROCS; i++)); do
  count=$per
  ((i == PROCS - 1)) && count=$((N - per * (PROCS - 1)))
  node "$here/idle_clients.mjs" --url "ws://127.0.0.1:$gw_port/ws" --count "$count" \
    --local-address "127.0.0.$((i + 2))" --concurrency "$CONCURRENCY" --prefix "p$i-" \
    >"$tmp/client-$i.out" 2>"$tmp/client-$i.err" &
  client_pids+=($!)
  pids+=($!)
done
for ((i = 0; i < PROCS; i++)); do
  until grep -q '"connected"' "$tmp/client-$i.out" 2>/dev/null; do
    kill -0 "${client_pids[$i]}" 2>/dev/null || { echo "client $i died:" >&2; cat "$tmp/client-$i.err" >&2; exit 1; }
    sleep 0.2
  done
done
t1=$(date +%s%N)
connect_ms=$(((t1 - t0) / 1000000))
opened=0 failed=0
for ((i = 0; i < PROCS; i++)); do
  line="$(grep '"connected"' "$tmp/client-$i.out")"
  opened=$((opened + $(node -e 'console.log(JSON.parse(process.argv[1]).opened)' "$line")))
  failed=$((failed + $(node -e 'console.log(JSON.parse(process.argv[1]).failed)' "$line")))
  echo "client $i: $line" >&2
done
sleep "$SETTLE_S"
rss_after=$(rss_kb "$gw")
heap_after=$(heap_bytes)
slab_after=$(slab_kb)
redis_after=$(redis_mem)
ticks0=$(cpu_ticks "$gw")
sleep "$IDLE_S"
ticks1=$(cpu_ticks "$gw")
hz=$(getconf CLK_TCK)
healthz=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$gw_port/healthz" || echo failed)
channels=$(redis-cli -p "$redis_port" pubsub numsub >/dev/null; redis-cli -p "$redis_port" pubsub channels 'idlebench:*' | wc -l)
sessions=$(curl -s -m 5 "http://127.0.0.1:$gw_port/metrics" | awk '/^pushonce_gateway_sessions[ {]/ {print $2; exit}')
rss_end=$(rss_kb "$gw")
for p in "${client_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
sleep 1
closed=0
for ((i = 0; i < PROCS; i++)); do
  line="$(grep '"end"' "$tmp/client-$i.out" || echo '{"closed_by_server":0}')"
  closed=$((closed + $(node -e 'console.log(JSON.parse(process.argv[1]).closed_by_server)' "$line")))
done
node -e '
const [opened, failed, ms, before, after, end, ticks, hz, idle, healthz, channels, closed, threads, sessions, hb, ha, sb, sa, rb, ra] = process.argv.slice(1);
const cpu = Number(ticks) / Number(hz) / Number(idle) * 100;
console.log(JSON.stringify({
  opened: +opened, failed: +failed, connect_ms: +ms,
  rss_before_kb: +before, rss_after_kb: +after, rss_end_kb: +end,
  bytes_per_connection: Math.round((after - before) * 1024 / Math.max(1, opened)),
  heap_bytes_per_connection: hb && ha ? Math.round((ha - hb) / Math.max(1, opened)) : null,
  kernel_slab_bytes_per_connection_both_ends: Math.round((sa - sb) * 1024 / Math.max(1, opened)),
  redis_bytes_per_connection: Math.round((ra - rb) / Math.max(1, opened)),
  idle_cpu_pct: Math.round(cpu * 100) / 100, idle_seconds: +idle,
  healthz: healthz, redis_channels: +channels, sessions_metric: sessions || null,
  closed_by_server_while_idle: +closed, threads: threads || "default" }));
' "$opened" "$failed" "$connect_ms" "$rss_before" "$rss_after" "$rss_end" "$((ticks1 - ticks0))" \
  "$hz" "$IDLE_S" "$healthz" "$channels" "$closed" "$THREADS" "$sessions" "${heap_before:-}" "${heap_after:-}" \
  "$slab_before" "$slab_after" "$redis_before" "$redis_after"
