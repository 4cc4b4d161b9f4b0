#!/usr/bin/env bash
# Redis memory under sustained load: runs the peer's bench driver at RATE msgs/s for
# DURATION_S seconds (PEER_DIR/load/bench.sh, one run, no warm-up), samples redis-server's
# used_memory every 10 s, and reports whether it plateaus (growth of the last third over
# the middle third, target < 10 %) and the bytes Redis retains per message beyond the
# user inboxes: (used_memory - inbox bytes - empty-server baseline) / (RATE × dedup window).
#   tests/bench/bench_soak.sh BIN_DIR PEER_DIR        (BIN_DIR: build/bin)
# PEER_DIR is a checkout of the Socket.IO peer, the comparison deployment that is not part
# of this repository: a Node.js + Socket.IO system doing the same work on the same Redis,
# with its load generator (load/loadgen.mjs) and bench driver (load/bench.sh); run
# `npm ci` in it first. Given as an argument or as PEER in the environment.
# Settings by environment [default]: RATE [4000] DURATION_S [300] WINDOW_S [120, the
# default dedup window] BENCH [PEER_DIR/load/bench.sh; given, PEER_DIR may be left out]
# EXPIRE_EFFORT [0: leave Redis's active-expire-effort at its default (1), the setting the
# memory target is for; a number: CONFIG SET it on the bench's Redis first (a Redis
# Cluster keeps a key per claim record, where a higher effort keeps the keyspace down)]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$(cd "${1:-$here/build/bin}" && pwd)"
RATE=${RATE:-4000} DURATION_S=${DURATION_S:-300} WINDOW_S=${WINDOW_S:-120}
EXPIRE_EFFORT=${EXPIRE_EFFORT:-0}
PEER=${2:-${PEER:-}}
[[ -n "${BENCH:-}" || -n "$PEER" ]] ||
  { echo "usage: tests/bench/bench_soak.sh BIN_DIR PEER_DIR (a checkout of the Socket.IO peer)" >&2; exit 2; }
BENCH=${BENCH:-$PEER/load/bench.sh}
[[ -x "$BENCH" ]] || { echo "error: no bench driver at $BENCH" >&2; exit 2; }
out="$(mktemp -d /tmp/pushonce-soak-XXXXXX)"
messages=$((RATE * DURATION_S))
RUNS=1 WARMUP=0 RATE=$RATE MESSAGES=$messages MAX_NOISE_PCT=100 OUT_DIR="$out/bench" \
  "$BENCH" pushonce "$bin" --timeout-s $((DURATION_S + 120)) >"$out/bench.out" 2>"$out/bench.err" &
bench=$!
port=""
for _ in $(seq 1 300); do
  port="$(grep -o 'redis redis://127.0.0.1:[0-9]*' "$out/bench.err" 2>/dev/null | grep -o '[0-9]*$' || true)"
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "$port" ]] || { echo "error: bench did not start" >&2; cat "$out/bench.err" >&2; exit 1; }
if [[ "$EXPIRE_EFFORT" != 0 ]]; then
  redis-cli -p "$port" CONFIG SET active-expire-effort "$EXPIRE_EFFORT" >/dev/null
fi
effort="$(redis-cli -p "$port" CONFIG GET active-expire-effort | tail -n 1)"
baseline="$(redis-cli -p "$port" INFO memory | grep '^used_memory:' | tr -dc 0-9)"
echo "soak: $RATE msgs/s for ${DURATION_S}s on redis :$port (baseline used_memory $baseline, active-expire-effort $effort)" >&2
echo "redis active-expire-effort: $effort"
: >"$out/samples.txt"
set +e  # the bench may stop Redis between two reads below: the last sample is then skipped
while kill -0 "$bench" 2>/dev/null; do
  sleep 10
  m="$(redis-cli -p "$port" INFO memory 2>/dev/null | grep '^used_memory:' | tr -dc 0-9)" || break
  [[ -n "$m" ]] || break
  inbox=0
  # SCAN with a large COUNT: redis-cli --scan asks for 10 keys a call, and with a key per
  # claim record (a Redis Cluster) its ~60k calls a sample would cost Redis ~4 us per message.
  cursor=0
  while :; do
    page="$(redis-cli -p "$port" SCAN "$cursor" MATCH '*:inbox' COUNT 10000 2>/dev/null)" || break
    cursor="$(head -n 1 <<<"$page")"
    for k in $(tail -n +2 <<<"$page"); do
      u="$(redis-cli -p "$port" MEMORY USAGE "$k" 2>/dev/null)"
      [[ "$u" =~ ^[0-9]+$ ]] && inbox=$((inbox + u))
    done
    [[ "$cursor" =~ ^[1-9][0-9]*$ ]] || break
  done
  keys="$(redis-cli -p "$port" DBSIZE 2>/dev/null)"
  [[ "$keys" =~ ^[0-9]+$ ]] || break
  echo "$(date +%s) $m $inbox $keys" | tee -a "$out/samples.txt" >&2
  # Redis's calls so far and the messages the workers counted delivered, for the calls per
  # message between the first and the last sample of the steady state (printed at the end).
  stats="$(redis-cli -p "$port" INFO commandstats 2>/dev/null)" || break
  delivered="$(redis-cli -p "$port" HGET pushonce:stats delivered 2>/dev/null)"
  { echo "delivered=${delivered:-0}"; echo "$stats"; } >"$out/commandstats.$(wc -l <"$out/samples.txt")"
done
set -e
wait "$bench" || true
tail -n 1 "$out/bench.out"
python3 - "$out/samples.txt" "$baseline" "$RATE" "$WINDOW_S" "$out/bench/runs.jsonl" "$out" <<'PY'
import json, os, re, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
base, rate, window = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
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
      f"retained beyond inboxes {per_msg:.0f} bytes/message (rate x {window} s window)")
if os.path.exists(sys.argv[5]):
    runs = [json.loads(l) for l in open(sys.argv[5]) if l.strip()]
    if runs and runs[-1].get("messages_delivered"):
        r = runs[-1]
        print(f"redis-server CPU over the run: {r['cpu_ms']['redis'] * 1000 / r['messages_delivered']:.1f} us/message")
def calls(i):  # {command: calls} and the delivered counter at sample i (1-based)
    try: text = open(f"{sys.argv[6]}/commandstats.{i}").read()
    except OSError: return None
    d = re.search(r"delivered=(\d+)", text)
    return int(d.group(1)), {c: int(k) for c, k in re.findall(r"cmdstat_([a-z|]+):calls=(\d+)", text)}
a, b = calls(n // 3), calls(n)
if a and b and b[0] > a[0]:
    per = {c: (b[1][c] - a[1].get(c, 0)) / (b[0] - a[0]) for c in b[1]}
    shown = ", ".join(f"{c} {v:.3f}" for c, v in sorted(per.items(), key=lambda x: -x[1]) if v >= 0.001)
    print(f"Redis calls per delivered message (scripts' inner calls included), samples {n // 3}..{n}: {shown}")
sys.exit(0 if growth < 10 and per_msg <= 250 else 1)
PY
