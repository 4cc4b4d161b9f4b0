#!/usr/bin/env bash
# Redis memory under sustained load: a private deployment (tests/bench/lib/deployment.sh:
# Redis, a leader, WORKERS workers, GATEWAYS gateways) driven by `pushonce-bench fanout` at
# RATE msgs/s for DURATION_S seconds (one run, no warm-up, every frame verified). Samples
# Redis's used_memory, the users' inboxes (MEMORY USAGE) and the key count every SAMPLE_S
# seconds (summed over the masters on a Redis Cluster), and reports whether memory
# plateaus (growth of the last third over the middle third, target < 10 %), the bytes
# Redis retains per message beyond the inboxes: (used_memory - inbox bytes - empty-server
# baseline) / (RATE × dedup window), redis-server's CPU per message over the run
# (/proc/PID/stat) and Redis's calls per delivered message in the steady state.
# The messages carry no idempotency key (`--no-idempotency-keys`), so the figure is the
# system's own; with IDEMPOTENCY_KEYS=1 each carries one, which Redis keeps for the dedup
# window: what one costs is then measured first and given apart.
# Exit 1 on growth >= 10 %, more than 250 bytes per message of the system's own (beyond the
# inboxes and the idempotency keys), or a duplicate or a loss.
#   tests/bench/bench_soak.sh BIN_DIR                  (BIN_DIR: build/bin)
# Settings by environment [default]: RATE [4000] DURATION_S [300] WINDOW_S [120, the
#   default dedup window] SAMPLE_S [10] WORKERS [3] GATEWAYS [2] SESSIONS [200] USERS [100]
#   EXPIRE_EFFORT [0: leave Redis's active-expire-effort at its default (1), the setting the
#   memory target is for; a number: CONFIG SET it on every master first (a Redis Cluster
#   keeps a key per claim record, where a higher effort keeps the keyspace down)]
#   IDEMPOTENCY_KEYS [0] CLUSTER [0] REPLICAS [0] (lib/deployment.sh has the rest)
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: bench_soak.sh BIN_DIR}" bench-soak
RATE=${RATE:-4000} DURATION_S=${DURATION_S:-300} WINDOW_S=${WINDOW_S:-120}
SAMPLE_S=${SAMPLE_S:-10} EXPIRE_EFFORT=${EXPIRE_EFFORT:-0} IDEMPOTENCY_KEYS=${IDEMPOTENCY_KEYS:-0}
WORKERS=${WORKERS:-3} GATEWAYS=${GATEWAYS:-2} SESSIONS=${SESSIONS:-200} USERS=${USERS:-100}
ns=${PUSHONCE_NAMESPACE:-pushonce}
out="$DEPLOY_DIR/soak"
mkdir -p "$out"

deployment_redis
deployment_leader
deployment_workers "$WORKERS"
deployment_gateways "$GATEWAYS"
deployment_ready
masters=("${REDIS_MASTER_PORTS[@]}")
if [[ "$EXPIRE_EFFORT" != 0 ]]; then
  for port in "${masters[@]}"; do rcli "$port" CONFIG SET active-expire-effort "$EXPIRE_EFFORT" >/dev/null; done
fi
effort="$(rcli "${masters[0]}" CONFIG GET active-expire-effort | awk 'NR == 2')"

# Sums over the masters: used_memory, the inboxes' MEMORY USAGE, DBSIZE.
used_memory() {
  local port sum=0
  for port in "${masters[@]}"; do
    sum=$((sum + $(rcli "$port" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')))
  done
  echo "$sum"
}
inbox_bytes() {
  # SCAN with a large COUNT: redis-cli --scan asks for 10 keys a call, and with a key per
  # claim record (a Redis Cluster) its ~60k calls a sample would cost Redis ~4 us per message.
  local port cursor page k u sum=0
  for port in "${masters[@]}"; do
    cursor=0
    while :; do
      page="$(rcli "$port" SCAN "$cursor" MATCH '*:inbox' COUNT 10000)"
      cursor="$(awk 'NR == 1' <<<"$page")"
      for k in $(tail -n +2 <<<"$page"); do
        u="$(rcli "$port" MEMORY USAGE "$k")"
        [[ "$u" =~ ^[0-9]+$ ]] && sum=$((sum + u))
      done
      [[ "$cursor" =~ ^[1-9][0-9]*$ ]] || break
    done
  done
  echo "$sum"
}
key_count() {
  local port sum=0
  for port in "${masters[@]}"; do sum=$((sum + $(rcli "$port" DBSIZE))); done
  echo "$sum"
}

# With IDEMPOTENCY_KEYS=1 every message has an idempotency key: Redis keeps a key per
# message for the dedup window besides the system's own state. What one costs: RATE × WINDOW_S keys shaped
# like those publish.lua writes (name, message id, PX), written on the empty server in a
# database of their own, measured and flushed. A cluster has database 0 only: there the
# MEMORY USAGE of one such key, which leaves out its keyspace and expiry-table entries.
idem_cost() {
  local port=${masters[0]} count=$((RATE * WINDOW_S)) before after
  if ((${CLUSTER:-0} > 0)); then
    rcli "$port" -c SET "$ns:{bus:0}:idem:pb-0123abcd-17:0123abcd-123456" 1234567890123 PX 10000 >/dev/null
    rcli "$port" -c MEMORY USAGE "$ns:{bus:0}:idem:pb-0123abcd-17:0123abcd-123456"
    return
  fi
  before="$(used_memory)"
  python3 - "$ns" "$count" <<'PY' | rcli "$port" -n 9 --pipe >/dev/null
import sys
ns, count, out = sys.argv[1], int(sys.argv[2]), sys.stdout.buffer
for k in range(count):
    args = [b"SET", f"{ns}:{{bus:0}}:idem:pb-0123abcd-{k % 100}:0123abcd-{k}".encode(),
            str(1234567890123 + 4096 * k).encode(), b"PX", b"600000"]
    out.write(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
PY
  after="$(used_memory)"
  rcli "$port" -n 9 FLUSHDB >/dev/null
  echo $(((after - before) / count))
}
idem_bytes=0 keys_arg=(--no-idempotency-keys)
if [[ "$IDEMPOTENCY_KEYS" == 1 ]]; then idem_bytes="$(idem_cost)" keys_arg=(); fi
baseline="$(used_memory)"
echo "soak: $RATE msgs/s for ${DURATION_S}s on ${PUSHONCE_REDIS_CLUSTER:-$PUSHONCE_REDIS}" \
  "(baseline used_memory $baseline, active-expire-effort $effort)" >&2
echo "redis active-expire-effort: $effort"
[[ "$IDEMPOTENCY_KEYS" == 1 ]] && echo "an idempotency key costs Redis $idem_bytes bytes"
m0="$(cpu_ticks "${REDIS_MASTER_PIDS[@]}")" r0="$(cpu_ticks "${REDIS_REPLICA_PIDS[@]}")"
"$DEPLOY_BIN/pushonce-bench" fanout --gateway "$GATEWAY_LIST" --sessions "$SESSIONS" \
  --users "$USERS" --rate "$RATE" --duration "$DURATION_S" --grace 30 --json --no-progress \
  "${keys_arg[@]}" \
  >"$out/bench.json" 2>"$out/bench.err" &
tool=$!
DEPLOY_PIDS+=("$tool")
: >"$out/samples.txt"
while kill -0 "$tool" 2>/dev/null; do
  for _ in $(seq 1 $((SAMPLE_S * 10))); do kill -0 "$tool" 2>/dev/null && sleep 0.1; done
  echo "$(date +%s) $(used_memory) $(inbox_bytes) $(key_count)" | tee -a "$out/samples.txt" >&2
  # Redis's calls so far and the messages the workers counted delivered, for the calls per
  # message between the first and the last sample of the steady state (printed at the end).
  n="$(wc -l <"$out/samples.txt")"
  {
    echo "delivered=$(rcli "${masters[0]}" -c HGET "$ns:stats" delivered)"
    for port in "${masters[@]}"; do rcli "$port" INFO commandstats; done
  } >"$out/commandstats.$n"
done
status=0
wait "$tool" || status=1
m1="$(cpu_ticks "${REDIS_MASTER_PIDS[@]}")" r1="$(cpu_ticks "${REDIS_REPLICA_PIDS[@]}")"
jq -c '{published, delivered, expected, duplicates, lost, delivered_messages_per_s,
        latency: {p50_ms: .latency.p50_ms, p99_ms: .latency.p99_ms}}' "$out/bench.json"
n="$(jq '.published' "$out/bench.json")"
line="redis-server CPU over the run: $(ticks_us_per_message "$m0" "$m1" "$n") us/message"
if ((${#REDIS_REPLICA_PIDS[@]} > 0)); then
  line+=" (masters), replicas $(ticks_us_per_message "$r0" "$r1" "$n")"
fi
echo "$line"
python3 - "$out/samples.txt" "$baseline" "$RATE" "$WINDOW_S" "$out" "$idem_bytes" <<'PY' || status=1
import re, sys
from collections import Counter
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
base, rate, window, idem = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[6])
rows = rows[:-1] if len(rows) > 3 else rows   # the last sample may fall after the load
n = len(rows)
if n < 6: sys.exit("too few samples")
mid = rows[n // 3: 2 * n // 3]; last = rows[2 * n // 3:]
avg = lambda rs: sum(r[1] for r in rs) / len(rs)
growth = 100 * (avg(last) - avg(mid)) / avg(mid)
m, inbox = rows[-1][1], rows[-1][2]
per_msg = (m - inbox - base) / (rate * window)
print(f"used_memory: middle third {avg(mid)/1e6:.1f} MB, last third {avg(last)/1e6:.1f} MB, growth {growth:+.1f} %")
print(f"at the end: used_memory {m/1e6:.1f} MB, inboxes {inbox/1e6:.1f} MB, keys {rows[-1][3]}; "
      f"retained beyond inboxes {per_msg:.0f} bytes/message (rate x {window} s window)"
      + (f", of which ~{idem} the message's idempotency key: ~{per_msg - idem:.0f} bytes of the "
         "system's own" if idem else ""))
def calls(i):  # {command: calls over the masters} and the delivered counter at sample i (1-based)
    try: text = open(f"{sys.argv[5]}/commandstats.{i}").read()
    except OSError: return None
    d = re.search(r"delivered=(\d+)", text)
    per = Counter()
    for c, k in re.findall(r"cmdstat_([a-z|]+):calls=(\d+)", text): per[c] += int(k)
    return (int(d.group(1)) if d else 0), per
a, b = calls(n // 3), calls(n)
if a and b and b[0] > a[0]:
    per = {c: (b[1][c] - a[1].get(c, 0)) / (b[0] - a[0]) for c in b[1]}
    shown = ", ".join(f"{c} {v:.3f}" for c, v in sorted(per.items(), key=lambda x: -x[1]) if v >= 0.001)
    print(f"Redis calls per delivered message (scripts' inner calls included), samples {n // 3}..{n}: {shown}")
sys.exit(0 if growth < 10 and per_msg - idem <= 250 else 1)
PY
exit "$status"
