#!/usr/bin/env bash
# Recovery at full speed: `pushonce-bench fanout` publishes MESSAGES as fast as the gateway
# takes them while no worker runs (a private deployment, tests/bench/lib/deployment.sh: Redis,
# a leader, GATEWAYS gateways); WORKERS workers start STOPPED_S seconds after the tool did,
# and their recovery sweepers re-drive the outboxes (the bus had no subscriber). The tool
# waits up to GRACE_S for the last frame and checks that every session got every message
# exactly once. Prints the tool's JSON line, the system's counters and how long after the
# workers started the last frame arrived: the first outbox entry's time (Redis's clock,
# the tool's first publish) plus the tool's delivery_s (first publish to last frame).
# Exit 1 on any duplicate, loss or retention_exceeded.
#   tests/bench/bench_recovery.sh BIN_DIR              (BIN_DIR: build/bin)
# Settings by environment [default]: MESSAGES [200000] STOPPED_S [10] WORKERS [3]
#   GATEWAYS [1] SESSIONS [200] USERS [100] GRACE_S [120] CLUSTER [0] REPLICAS [0]
#   (lib/deployment.sh has the rest)
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: bench_recovery.sh BIN_DIR}" bench-recovery
MESSAGES=${MESSAGES:-200000} STOPPED_S=${STOPPED_S:-10} WORKERS=${WORKERS:-3}
GATEWAYS=${GATEWAYS:-1} SESSIONS=${SESSIONS:-200} USERS=${USERS:-100} GRACE_S=${GRACE_S:-120}
ns=${PUSHONCE_NAMESPACE:-pushonce}

deployment_redis
deployment_leader
deployment_gateways "$GATEWAYS"
deployment_ready

echo "recovery: $MESSAGES messages at full speed, $WORKERS workers started after ${STOPPED_S}s" >&2
"$DEPLOY_BIN/pushonce-bench" fanout --gateway "$GATEWAY_LIST" --sessions "$SESSIONS" \
  --users "$USERS" --messages "$MESSAGES" --grace "$GRACE_S" --json --no-progress \
  >"$DEPLOY_DIR/bench.json" 2>"$DEPLOY_DIR/bench.err" &
tool=$!
DEPLOY_PIDS+=("$tool")
sleep "$STOPPED_S"

# The outboxes so far: their entries (a publish request each) and the oldest entry's id,
# whose first part is Redis's clock in ms when the tool's first request was taken.
entries=0 first_ms=""
for port in "${REDIS_MASTER_PORTS[@]}"; do
  for key in $(rcli "$port" --scan --pattern "$ns:{bus:*}:outbox"); do
    entries=$((entries + $(rcli "$port" XLEN "$key")))
    id="$(rcli "$port" XRANGE "$key" - + COUNT 1 | awk 'NR == 1')"
    ms="${id%%-*}"
    [[ "$ms" =~ ^[0-9]+$ ]] && { [[ -z "$first_ms" ]] || ((ms < first_ms)); } && first_ms=$ms
  done
done
echo "workers start now; the outboxes hold $entries entries (publish requests)" >&2
start="$(date +%s.%N)"
deployment_workers "$WORKERS"
status=0
wait "$tool" || status=1
echo "the tool exited $(python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 1))' "$start") s" \
  "after the workers started (its --linger and closing included)" >&2
cat "$DEPLOY_DIR/bench.json"
counters="$("$DEPLOY_BIN/pushonce-leader" status --json | jq -c '.counters')"
echo "counters: $counters"
python3 - "$DEPLOY_DIR/bench.json" "$counters" "$start" "${first_ms:-0}" "$MESSAGES" <<'PY' || status=1
import json, sys
run = json.load(open(sys.argv[1])); c = json.loads(sys.argv[2])
start, first_ms, messages = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
took = first_ms / 1000 + run["delivery_s"] - start if first_ms else float("nan")
print(f"published {run['published']}, frames {run['delivered']} of {run['expected']}, "
      f"duplicates {run['duplicates']}, lost {run['lost']}, redelivered {c.get('redelivered')}, "
      f"retention_exceeded {c.get('retention_exceeded')}, "
      f"all delivered {took:.1f} s after the workers started")
bad = (not run["ok"] or run["published"] != messages
       or run["delivered"] != run["expected"] or int(c.get("retention_exceeded") or 0))
sys.exit(1 if bad else 0)
PY
exit "$status"
