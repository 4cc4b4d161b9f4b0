#!/usr/bin/env bash
# Idle WebSocket sessions on one gateway (docs/benchmarks.md "Idle connections"): a private
# redis-server and one pushonce-gateway --dev-auth (tests/bench/lib/deployment.sh, per-address
# limits off), then `pushonce-bench idle` opens N sessions (hello → welcome, a user each)
# from SOURCES loopback addresses (127.0.0.2, 127.0.0.3, ...: each address has its own ~28k
# ephemeral ports) and holds them. Once they are open this script waits SETTLE_S, reads the
# gateway's VmRSS, heap (its /metrics), the kernel's slab and Redis's used_memory, then its
# CPU over IDLE_S seconds of idleness (heartbeats and WebSocket pings), /healthz, the
# sessions metric and Redis's channel count. Prints one JSON object: per session the
# gateway's RSS and heap, the kernel's slab (both ends' sockets: loopback) and Redis's
# memory; the idle CPU; the tool's connect time and latency and the sessions the gateway
# closed while idle. Exit 1 when no session opened or one was closed while idle.
#   tests/bench/idle_connections.sh BIN_DIR            (BIN_DIR: build/bin)
# Settings by environment [default]: N [19000] SOURCES [4] THREADS [gateway default]
#   IDLE_S [30] SETTLE_S [3] CONCURRENCY [200 handshakes in flight]
#   TRANSPORT [ws; sse: the sessions are GET /sse streams, keep-alive comments instead of pings]
# One tool process holds the N sessions: N plus a few must fit the descriptor limit
# (ulimit -Hn), as for the gateway.
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: idle_connections.sh BIN_DIR}" bench-idle
N=${N:-19000} SOURCES=${SOURCES:-4} IDLE_S=${IDLE_S:-30} SETTLE_S=${SETTLE_S:-3}
CONCURRENCY=${CONCURRENCY:-200} THREADS=${THREADS:-} TRANSPORT=${TRANSPORT:-ws}
export PUSHONCE_NAMESPACE=idlebench

rss_kb() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
metric() { # a gauge of the gateway's /metrics
  curl -s -m 5 "http://$GATEWAY_LIST/metrics" | awk -v m="$1" '!seen && ($1 == m || index($1, m "{") == 1) {print $2; seen = 1}'
}
slab_kb() { awk '$1 == "Slab:" {print $2}' /proc/meminfo; }
redis_mem() { rcli "${REDIS_MASTER_PORTS[0]}" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'; }

deployment_redis
gw_args=(--max-connections-per-ip 0 --max-sessions-per-ip 0)
[[ -n "$THREADS" ]] && gw_args+=(--threads "$THREADS")
deployment_gateways 1 "${gw_args[@]}"
deployment_ready
gw=${GATEWAY_PIDS[0]}
sleep 1
rss_before=$(rss_kb "$gw") heap_before=$(metric pushonce_gateway_heap_in_use_bytes)
slab_before=$(slab_kb) redis_before=$(redis_mem)

sources=()
for ((i = 0; i < SOURCES; i++)); do sources+=("127.0.0.$((i + 2))"); done
# The tool holds the sessions while this script measures (SETTLE_S + IDLE_S and a margin for
# the reads), then reports and closes them. Its progress lines show when all are open: the
# hold's lines ("... disconnects D") follow the opening's.
"$DEPLOY_BIN/pushonce-bench" idle --gateway "$GATEWAY_LIST" --sessions "$N" \
  --source "$(IFS=,; echo "${sources[*]}")" --connect-concurrency "$CONCURRENCY" \
  --transport "$TRANSPORT" --hold $((SETTLE_S + IDLE_S + 10)) --pids "$gw" --json --progress \
  >"$DEPLOY_DIR/idle.json" 2>"$DEPLOY_DIR/idle.err" &
tool=$!
DEPLOY_PIDS+=("$tool")
until grep -q disconnects "$DEPLOY_DIR/idle.err" 2>/dev/null; do
  kill -0 "$tool" 2>/dev/null || { echo "error: pushonce-bench idle stopped:" >&2; cat "$DEPLOY_DIR/idle.err" >&2; exit 1; }
  sleep 0.2
done
sleep "$SETTLE_S"
rss_after=$(rss_kb "$gw") heap_after=$(metric pushonce_gateway_heap_in_use_bytes)
slab_after=$(slab_kb) redis_after=$(redis_mem)
ticks0=$(cpu_ticks "$gw")
sleep "$IDLE_S"
ticks1=$(cpu_ticks "$gw")
healthz=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$GATEWAY_LIST/healthz" || echo failed)
channels=$(rcli "${REDIS_MASTER_PORTS[0]}" PUBSUB CHANNELS 'idlebench:*' | wc -l)
sessions=$(metric pushonce_gateway_sessions)
rss_end=$(rss_kb "$gw")
status=0
wait "$tool" || status=1

jq -c --argjson rss_before "$rss_before" --argjson rss_after "$rss_after" --argjson rss_end "$rss_end" \
  --argjson heap_before "${heap_before:-null}" --argjson heap_after "${heap_after:-null}" \
  --argjson slab_before "$slab_before" --argjson slab_after "$slab_after" \
  --argjson redis_before "$redis_before" --argjson redis_after "$redis_after" \
  --argjson ticks $((ticks1 - ticks0)) --argjson hz "$(getconf CLK_TCK)" --argjson idle "$IDLE_S" \
  --arg healthz "$healthz" --argjson channels "$channels" --argjson sessions "${sessions:-null}" \
  --arg threads "${THREADS:-default}" --argjson sources "$SOURCES" '
  def per(a; b): if a == null or b == null then null else ((b - a) / ([.opened, 1] | max) | round) end;
  {opened, failed: .connect_failures, connect_s, connect_p50_ms: .connect_latency.p50_ms,
   connect_p99_ms: .connect_latency.p99_ms, sources: $sources, threads: $threads,
   rss_before_kb: $rss_before, rss_after_kb: $rss_after, rss_end_kb: $rss_end,
   bytes_per_connection: per($rss_before * 1024; $rss_after * 1024),
   heap_bytes_per_connection: per($heap_before; $heap_after),
   kernel_slab_bytes_per_connection_both_ends: per($slab_before * 1024; $slab_after * 1024),
   redis_bytes_per_connection: per($redis_before; $redis_after),
   tool_rss_bytes_per_session: (.tool_rss_bytes_per_session | round),
   idle_cpu_pct: ($ticks / $hz / $idle * 10000 | round / 100), idle_seconds: $idle,
   healthz: $healthz, redis_channels: $channels, sessions_metric: $sessions,
   closed_by_server_while_idle: .disconnects}' "$DEPLOY_DIR/idle.json"
[[ "$(jq '.disconnects' "$DEPLOY_DIR/idle.json")" == 0 ]] || status=1
exit "$status"
