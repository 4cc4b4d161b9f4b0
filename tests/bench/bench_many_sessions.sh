#!/usr/bin/env bash
# Many concurrent sessions held by pushonce-bench, each sent one message: a private
# deployment (tests/bench/lib/deployment.sh: a redis-server, or a Redis Cluster with
# CLUSTER=N), one leader, WORKERS workers, GATEWAYS gateways (--dev-auth, per-address
# limits off), and PROCS pushonce-bench processes (a process holds at most ~20,000
# descriptors here), process i connecting from 127.0.0.(2+i) to every gateway. Each process
# opens SESSIONS/PROCS sessions (one user each), holds them HOLD seconds so that all
# processes are connected at once, then publishes one message per user at RATE/PROCS per
# second and verifies them. Prints the gateways' RSS per session at the peak and each
# process's JSON line; exit 1 when any process found a duplicate or a loss.
#   tests/bench/bench_many_sessions.sh BIN_DIR
# Settings by environment [default]: SESSIONS [100000] GATEWAYS [6] PROCS [6] WORKERS [3]
#   RATE [5000] HOLD [40]
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: bench_many_sessions.sh BIN_DIR}" bench-sessions
SESSIONS=${SESSIONS:-100000} GATEWAYS=${GATEWAYS:-6} PROCS=${PROCS:-6} WORKERS=${WORKERS:-3}
RATE=${RATE:-5000} HOLD=${HOLD:-40}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

REDIS_ARGS="--maxclients 1000 ${REDIS_ARGS:-}" deployment_redis
deployment_leader
deployment_workers "$WORKERS"
deployment_gateways "$GATEWAYS" --max-connections-per-ip 0 --max-sessions-per-ip 0 --publish-rate 0
deployment_ready
sleep 1
rss0=0
for p in "${GATEWAY_PIDS[@]}"; do rss0=$((rss0 + $(rss_kb "$p"))); done
per=$((SESSIONS / PROCS))
bench_pids=()
for ((i = 0; i < PROCS; i++)); do
  "$DEPLOY_BIN/pushonce-bench" fanout --gateway "$GATEWAY_LIST" --source "127.0.0.$((2 + i))" \
    --sessions "$per" --users "$per" --messages "$per" --rate "$((RATE / PROCS))" \
    --hold "$HOLD" --connect-concurrency 500 --grace 30 --user-prefix "many-$i-" \
    --json --no-progress >"$DEPLOY_DIR/bench-$i.json" 2>"$DEPLOY_DIR/bench-$i.err" &
  bench_pids+=($!)
  DEPLOY_PIDS+=($!)
done
# The peak: every session open on the gateways.
start=$SECONDS peak=0
while ((SECONDS - start < HOLD + 120)); do
  n=0
  for port in "${GATEWAY_PORTS[@]}"; do
    v="$(curl -fsS -m 2 "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '$1 ~ /^pushonce_gateway_sessions[{]/ {print $2}')"
    n=$((n + ${v:-0}))
  done
  ((n > peak)) && peak=$n
  ((n >= per * PROCS)) && break
  sleep 1
done
rss1=0
for p in "${GATEWAY_PIDS[@]}"; do rss1=$((rss1 + $(rss_kb "$p"))); done
echo "{\"sessions_at_peak\":$peak,\"seconds_to_peak\":$((SECONDS - start)),\"gateway_rss_bytes_per_session\":$(((rss1 - rss0) * 1024 / (peak > 0 ? peak : 1)))}"
status=0
for ((i = 0; i < PROCS; i++)); do
  wait "${bench_pids[$i]}" || status=1
  cat "$DEPLOY_DIR/bench-$i.json"
done
exit $status
