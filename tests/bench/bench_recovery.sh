#!/usr/bin/env bash
# Recovery at full speed: publishes as fast as the gateway takes it while EVERY worker is
# stopped, starts the workers after STOPPED_S seconds, and checks that every message
# reaches every session exactly once (the recovery sweeper re-drives what the bus dropped).
# Prints the load generator's JSON line and the system's counters; exits non-zero on any
# duplicate, loss or retention_exceeded.
#   tests/bench/bench_recovery.sh BIN_DIR PEER_DIR     (BIN_DIR: build/bin)
# PEER_DIR is a checkout of the Socket.IO peer, the comparison deployment that is not part
# of this repository: a Node.js + Socket.IO system doing the same work on the same Redis,
# with its load generator (load/loadgen.mjs) and bench driver (load/bench.sh); run
# `npm ci` in it first. Given as an argument or as PEER in the environment.
# Settings by environment [default]: MESSAGES [200000] STOPPED_S [10] WORKERS [3]
#   CONNS [200] USERS [100] LOADGEN [PEER_DIR/load/loadgen.mjs; given, PEER_DIR may be left out]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$(cd "${1:-$here/build/bin}" && pwd)"
MESSAGES=${MESSAGES:-200000} STOPPED_S=${STOPPED_S:-10} WORKERS=${WORKERS:-3}
CONNS=${CONNS:-200} USERS=${USERS:-100}
PEER=${2:-${PEER:-}}
[[ -n "${LOADGEN:-}" || -n "$PEER" ]] ||
  { echo "usage: tests/bench/bench_recovery.sh BIN_DIR PEER_DIR (a checkout of the Socket.IO peer)" >&2; exit 2; }
LOADGEN=${LOADGEN:-$PEER/load/loadgen.mjs}
[[ -f "$LOADGEN" ]] || { echo "error: no load generator at $LOADGEN" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

dir="$(mktemp -d /tmp/pushonce-recovery-XXXXXX)"
pids=()
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport="$(free_port)" gport="$(free_port)"
redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --logfile "$dir/redis.log" &
pids+=($!)
for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
export PUSHONCE_REDIS="redis://127.0.0.1:$rport" PUSHONCE_API_KEY="recovery-$RANDOM$RANDOM"
export PUSHONCE_LOG_LEVEL=warn
"$bin/pushonce-gateway" --listen "127.0.0.1:$gport" --dev-auth >"$dir/gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$gport/healthz" 2>/dev/null && break; sleep 0.1; done

echo "recovery: $MESSAGES messages at full speed, $WORKERS workers started after ${STOPPED_S}s" >&2
node "$LOADGEN" --target pushonce --servers "127.0.0.1:$gport" --api-key "$PUSHONCE_API_KEY" \
  --connections "$CONNS" --users "$USERS" --messages "$MESSAGES" --grace-ms 120000 \
  --timeout-s 600 >"$dir/loadgen.json" 2>"$dir/loadgen.log" &
lg=$!
sleep "$STOPPED_S"
outbox_len="$(redis-cli -p "$rport" XLEN pushonce:{bus:0}:outbox)"
echo "workers start now; outbox holds $outbox_len entries (batches)" >&2
start=$(date +%s.%N)
for ((i = 1; i <= WORKERS; i++)); do
  "$bin/pushonce-worker" --id "worker-$i" >"$dir/worker-$i.log" 2>&1 &
  pids+=($!)
done
wait "$lg" || true
end=$(date +%s.%N)
cat "$dir/loadgen.json"
counters="$("$bin/pushonce-leader" status --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["counters"]))')"
echo "counters: $counters"
python3 - "$dir/loadgen.json" "$counters" "$start" "$end" <<'PY'
import json, sys
run = json.load(open(sys.argv[1])); c = json.loads(sys.argv[2])
took = float(sys.argv[4]) - float(sys.argv[3])
print(f"published {run['published']}, delivered {run['messages_delivered']}, duplicates {run['duplicates']}, "
      f"losses {run['losses']}, redelivered {c.get('redelivered')}, retention_exceeded {c.get('retention_exceeded')}, "
      f"all delivered {took:.1f} s after the workers started")
bad = run['duplicates'] or run['losses'] or run['published'] != run['messages_delivered'] or int(c.get('retention_exceeded') or 0)
sys.exit(1 if bad else 0)
PY
