#!/usr/bin/env bash
# pushonce-bench against a private deployment on this machine (tests/bench/lib/deployment.sh):
# Redis (one redis-server without persistence, or a Redis Cluster with CLUSTER=N), one
# leader, WORKERS workers and GATEWAYS gateways (--dev-auth), then RUNS runs of
# `pushonce-bench fanout` with the given arguments (after a warm-up run of WARMUP
# messages). Each run prints its JSON line (stdout) with the gateways' RSS and CPU (--pids)
# and, added by this script, the CPU per message of the Redis masters, of the replicas and
# of the workers over the run (/proc/PID/stat before and after, divided by the messages
# published: every one of them is verified delivered); a summary of the medians goes to
# stderr. Exit 1 when a run found a duplicate or a loss.
#   tests/bench/bench_fanout.sh BIN_DIR [pushonce-bench fanout options...]
#   tests/bench/bench_fanout.sh build/bin --rate 6500 --messages 30000
#   CLUSTER=3 REPLICAS=1 tests/bench/bench_fanout.sh build/bin --messages 20000
#   CLUSTER=3 REPLICAS=1 KILL_MASTER_AFTER_S=3 RUNS=1 WARMUP=0 \
#     tests/bench/bench_fanout.sh build/bin --rate 2000 --duration 10 --grace 30
# Settings by environment [default]: WORKERS [3] GATEWAYS [2] RUNS [3] WARMUP [5000]
#   GATEWAY_ARGS [extra gateway options] CLUSTER [0] REPLICAS [0] PUSHONCE_BUS_SHARDS
#   [the programs' default: 1, or 16 on a cluster] KILL_MASTER_AFTER_S [none; S: each run
#   SIGKILLs the master owning slot 0 S seconds after the tool started, replicas needed]
#   (lib/deployment.sh has the rest)
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: bench_fanout.sh BIN_DIR [pushonce-bench options]}" bench-fanout
shift
WORKERS=${WORKERS:-3} GATEWAYS=${GATEWAYS:-2} RUNS=${RUNS:-3} WARMUP=${WARMUP:-5000}
bench="$DEPLOY_BIN/pushonce-bench"
if [[ -n "${KILL_MASTER_AFTER_S:-}" && ( "${CLUSTER:-0}" == 0 || "${REPLICAS:-0}" != 1 ) ]]; then
  echo "error: KILL_MASTER_AFTER_S needs a replica to take over (CLUSTER=N REPLICAS=1)" >&2
  exit 2
fi

deployment_redis
deployment_leader
deployment_workers "$WORKERS"
# shellcheck disable=SC2086
deployment_gateways "$GATEWAYS" ${GATEWAY_ARGS:-}
deployment_ready
echo "fanout: ${PUSHONCE_REDIS_CLUSTER:-$PUSHONCE_REDIS}" \
  "(${#REDIS_MASTER_PORTS[@]} master(s), ${#REDIS_REPLICA_PORTS[@]} replica(s)," \
  "bus shards ${PUSHONCE_BUS_SHARDS:-default}), $WORKERS workers, $GATEWAYS gateways" >&2

# SIGKILL to the master that owns slot 0 (a replica of it takes over).
kill_slot0_master() {
  local port i
  port="$(rcli "${REDIS_MASTER_PORTS[0]}" CLUSTER NODES |
    awk '$3 ~ /master/ { for (i = 9; i <= NF; i++) if ($i ~ /^0(-|$)/) { split($2, a, "[:@]"); print a[2] } }')"
  for i in "${!REDIS_MASTER_PORTS[@]}"; do
    if [[ "${REDIS_MASTER_PORTS[$i]}" == "$port" ]]; then
      echo "killing the master of slot 0 (port $port) with SIGKILL" >&2
      kill -KILL "${REDIS_MASTER_PIDS[$i]}"
      wait "${REDIS_MASTER_PIDS[$i]}" 2>/dev/null || true
    fi
  done
}

if [[ "$WARMUP" -gt 0 ]]; then
  "$bench" fanout --gateway "$GATEWAY_LIST" --messages "$WARMUP" --json --no-progress >/dev/null
fi
lines="$DEPLOY_DIR/runs.jsonl"
status=0
for ((r = 1; r <= RUNS; r++)); do
  m0="$(cpu_ticks "${REDIS_MASTER_PIDS[@]}")" r0="$(cpu_ticks "${REDIS_REPLICA_PIDS[@]}")"
  w0="$(cpu_ticks "${WORKER_PIDS[@]}")"
  "$bench" fanout --gateway "$GATEWAY_LIST" --pids "$GATEWAY_PID_LIST" --json --no-progress "$@" \
    >"$DEPLOY_DIR/run.json" &
  tool=$!
  DEPLOY_PIDS+=("$tool")
  if [[ -n "${KILL_MASTER_AFTER_S:-}" ]]; then
    sleep "$KILL_MASTER_AFTER_S"
    kill_slot0_master
  fi
  wait "$tool" || status=1
  run="$(<"$DEPLOY_DIR/run.json")"
  m1="$(cpu_ticks "${REDIS_MASTER_PIDS[@]}")" r1="$(cpu_ticks "${REDIS_REPLICA_PIDS[@]}")"
  w1="$(cpu_ticks "${WORKER_PIDS[@]}")"
  n="$(jq '.published' <<<"$run")"
  masters="$(ticks_us_per_message "$m0" "$m1" "$n")" replicas=null
  ((${#REDIS_REPLICA_PIDS[@]} > 0)) && replicas="$(ticks_us_per_message "$r0" "$r1" "$n")"
  # (a killed master's CPU is gone with it: no Redis figure for such a run)
  [[ -n "${KILL_MASTER_AFTER_S:-}" ]] && masters=null replicas=null
  jq -c --argjson masters "$masters" --argjson replicas "$replicas" \
    --argjson workers "$(ticks_us_per_message "$w0" "$w1" "$n")" \
    --argjson cluster "${CLUSTER:-0}" --argjson with_replicas "${REPLICAS:-0}" \
    '. + {redis_cluster_masters: $cluster, redis_replicas_per_master: $with_replicas,
          redis_cpu_us_per_message: $masters, redis_replicas_cpu_us_per_message: $replicas,
          workers_cpu_us_per_message: $workers}' <<<"$run" | tee -a "$lines"
done
jq -rs 'def med: sort | .[length / 2 | floor];
  def r(x): if x == null then "-" else (x * 10 | round / 10 | tostring) end;
  "median of \(length): \(map(.delivered_messages_per_s) | med | round) msgs/s delivered, " +
  "p50 \(r(map(.latency.p50_ms) | med)) / p99 \(r(map(.latency.p99_ms) | med)) ms, " +
  "Redis \(r(map(.redis_cpu_us_per_message) | if .[0] == null then null else med end)) us/msg (masters), " +
  "replicas \(r(map(.redis_replicas_cpu_us_per_message) | if .[0] == null then null else med end)), " +
  "workers \(r(map(.workers_cpu_us_per_message) | med)), " +
  "gateways \(r(map(.pids_cpu_us_per_message) | med)); " +
  "duplicates \(map(.duplicates) | add), lost \(map(.lost) | add)"' "$lines" >&2
exit "$status"
