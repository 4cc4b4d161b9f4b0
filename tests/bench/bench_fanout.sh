#!/usr/bin/env bash
# pushonce-bench against a private deployment on this machine: a redis-server (no
# persistence), one leader, WORKERS workers and GATEWAYS gateways (--dev-auth), then RUNS
# runs of `pushonce-bench fanout` with the given arguments (after a warm-up run of 5000
# messages), each printing its JSON line, with the gateways' RSS and CPU (--pids).
#   tests/bench/bench_fanout.sh BIN_DIR [pushonce-bench fanout options...]
#   tests/bench/bench_fanout.sh build/bin --rate 6500 --messages 30000
# Settings by environment [default]: WORKERS [3] GATEWAYS [2] RUNS [3] WARMUP [5000]
#   GATEWAY_ARGS [extra gateway options]
set -euo pipefail
bin="$(cd "${1:?usage: bench_fanout.sh BIN_DIR [pushonce-bench options]}" && pwd)"
shift
WORKERS=${WORKERS:-3} GATEWAYS=${GATEWAYS:-2} RUNS=${RUNS:-3} WARMUP=${WARMUP:-5000}
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
dir="$(mktemp -d /tmp/bench-fanout-XXXXXX)"
pids=()
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --logfile "$dir/redis.log" &
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
  # shellcheck disable=SC2086
  "$bin/pushonce-gateway" --listen "127.0.0.1:$port" --dev-auth --id "g$i" ${GATEWAY_ARGS:-} \
    2>"$dir/gateway-$i.log" &
  pids+=($!)
  gateway_pids+=($!)
  gateways+=("127.0.0.1:$port")
done
for g in "${gateways[@]}"; do
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://$g/readyz" 2>/dev/null && break; sleep 0.1; done
done
for _ in $(seq 1 100); do
  n="$("$bin/pushonce-leader" status --json 2>/dev/null | jq '.workers | length' 2>/dev/null || echo 0)"
  [[ "$n" -ge "$WORKERS" ]] && break
  sleep 0.1
done
list="$(IFS=,; echo "${gateways[*]}")"
plist="$(IFS=,; echo "${gateway_pids[*]}")"
if [[ "$WARMUP" -gt 0 ]]; then
  "$bin/pushonce-bench" fanout --gateway "$list" --messages "$WARMUP" --json --no-progress >/dev/null
fi
for ((r = 1; r <= RUNS; r++)); do
  "$bin/pushonce-bench" fanout --gateway "$list" --pids "$plist" --json --no-progress "$@"
done
