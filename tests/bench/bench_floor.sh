#!/usr/bin/env bash
# The load generator's own latency on this machine (tests/bench/harness_floor.mjs: a
# stand-in system that forwards each published message at once, no Redis): the floor
# under every latency figure bench.sh prints, for pushonce and the peer alike. Runs the
# peer's load generator RUNS times with bench.sh's default shape and prints each JSON
# line's rate and latency, then the medians.
#   tests/bench/bench_floor.sh PEER_DIR
# PEER_DIR is a checkout of the Socket.IO peer, the comparison deployment that is not part
# of this repository: a Node.js + Socket.IO system doing the same work on the same Redis,
# with its load generator (load/loadgen.mjs) and bench driver (load/bench.sh); run
# `npm ci` in it first. Given as an argument or as PEER in the environment.
# Settings by environment [default]: RATE [6500] MESSAGES [30000] CONNS [200] USERS [100]
#   BATCH [100] RUNS [3]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
PEER=${1:-${PEER:-}}
[[ -n "$PEER" ]] || { echo "usage: tests/bench/bench_floor.sh PEER_DIR (a checkout of the Socket.IO peer)" >&2; exit 2; }
RATE=${RATE:-6500} MESSAGES=${MESSAGES:-30000} CONNS=${CONNS:-200} USERS=${USERS:-100}
BATCH=${BATCH:-100} RUNS=${RUNS:-3}
[[ -d "$PEER/node_modules/ws" ]] || { echo "error: no $PEER/node_modules/ws (cd $PEER && npm ci)" >&2; exit 2; }
export NODE_PATH="$PEER/node_modules"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p1="$(free_port)" p2="$(free_port)"
node "$here/tests/bench/harness_floor.mjs" --listen "127.0.0.1:$p1,127.0.0.1:$p2" 2>/dev/null &
stub=$!
trap 'kill $stub 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -fsS -o /dev/null "http://127.0.0.1:$p1/healthz" 2>/dev/null && break; sleep 0.1; done
out="$(mktemp)"
for ((r = 1; r <= RUNS; r++)); do
  node "$PEER/load/loadgen.mjs" --target pushonce --servers "127.0.0.1:$p1,127.0.0.1:$p2" \
    --api-key floor --rate "$RATE" --messages "$MESSAGES" --connections "$CONNS" \
    --users "$USERS" --batch "$BATCH" | tee -a "$out" |
    jq -c '{delivered_msgs_per_s, latency_p50_ms, latency_p90_ms, latency_p99_ms, duplicates, losses}'
done
echo "median of $RUNS:"
jq -s -c 'def med: sort | .[length/2|floor];
  {p50: (map(.latency_p50_ms)|med), p90: (map(.latency_p90_ms)|med),
   p99: (map(.latency_p99_ms)|med), msgs_per_s: (map(.delivered_msgs_per_s)|med)}' "$out"
rm -f "$out"
