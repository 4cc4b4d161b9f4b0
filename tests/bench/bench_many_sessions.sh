#!/usr/bin/env bash
# Many concurrent sessions held by pushonce-bench, each sent one message: a private
# redis-server, one leader, WORKERS workers, GATEWAYS gateways (--dev-auth, per-address
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
bin="$(cd "${1:?usage: bench_many_sessions.sh BIN_DIR}" && pwd)"
SESSIONS=${SESSIONS:-100000} GATEWAYS=${GATEWAYS:-6} PROCS=${PROCS:-6} WORKERS=${WORKERS:-3}
RATE=${RATE:-5000} HOLD=${HOLD:-40}
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
dir="$(mktemp -d /tmp/bench-sessions-XXXXXX)"
pids=()
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --logfile "$dir/redis.log" --maxclients 1000 &
pids+=($!)
for _ in $(seq 1 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export PUSHONCE_REDIS="redis://127.0.0.1:$redis_port" PUSHONCE_LOG_LEVEL=warn
export PUSHONCE_API_KEY="bench-$RANDOM$RANDOM"
"$bin/pushonce-leader" run 2>"$dir/leader.log" &
pids+=($!)
for ((i = 1; i <= WORKERS; i++)); do
  "$bin/pushonce-worker" --id "w$i" 2>"$dir/worker-$i.log" &
  pids+=($!)
done
gateways=() gateway_pids=()
for ((i = 1; i <= GATEWAYS; i++)); do
  port="$(free_port)"
  "$bin/pushonce-gateway" --listen "127.0.0.1:$port" --dev-auth --id "g$i" \
    --max-connections-per-ip 0 --max-sessions-per-ip 0 --publish-rate 0 2>"$dir/gateway-$i.log" &
  pids+=($!)
  gateway_pids+=($!)
  gateways+=("127.0.0.1:$port")
done
for g in "${gateways[@]}"; do
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://$g/readyz" 2>/dev/null && break; sleep 0.1; done
done
sleep 1
rss0=0
for p in "${gateway_pids[@]}"; do rss0=$((rss0 + $(rss_kb "$p"))); done
list="$(IFS=,; echo "${gateways[*]}")"
per=$((SESSIONS / PROCS))
bench_pids=()
for ((i = 0; i < PROCS; i++)); do
  "$bin/pushonce-bench" fanout --gateway "$list" --source "127.0.0.$((2 + i))" \
    --sessions "$per" --users "$per" --messages "$per" --rate "$((RATE / PROCS))" \
    --hold "$HOLD" --connect-concurrency 500 --grace 30 --user-prefix "many-$i-" \
    --json --no-progress >"$dir/bench-$i.json" 2>"$dir/bench-$i.err" &
  bench_pids+=($!)
  pids+=($!)
done
# The peak: every session open on the gateways.
start=$SECONDS peak=0
while ((SECONDS - start < HOLD + 120)); do
  n=0
  for g in "${gateways[@]}"; do
    v="$(curl -fsS -m 2 "http://$g/metrics" 2>/dev/null | awk '$1 ~ /^pushonce_gateway_sessions[{]/ {print $2}')"
    n=$((n + ${v:-0}))
  done
  ((n > peak)) && peak=$n
  ((n >= per * PROCS)) && break
  sleep 1
done
rss1=0
for p in "${gateway_pids[@]}"; do rss1=$((rss1 + $(rss_kb "$p"))); done
echo "{\"sessions_at_peak\":$peak,\"seconds_to_peak\":$((SECONDS - start)),\"gateway_rss_bytes_per_session\":$(((rss1 - rss0) * 1024 / (peak > 0 ? peak : 1)))}"
status=0
for ((i = 0; i < PROCS; i++)); do
  wait "${bench_pids[$i]}" || status=1
  cat "$dir/bench-$i.json"
done
exit $status
