#!/usr/bin/env bash
# Redis's cost of claim.lua alone, per delivered message: a private redis-server, CALLS
# EVALSHA calls of BATCH new messages each (one per user, BATCH users, every message
# delivered: the winner's path), sent with `redis-cli --pipe`. Prints the EVALSHA time per
# message from INFO commandstats, redis-server's CPU per message (used_cpu_user + sys), the
# growth of used_memory per message and the calls the script made per message. No subscribers and no other client: what the
# script costs, not what a delivery costs the whole system (tests/bench/bench_soak.sh and
# the Socket.IO peer's load/bench.sh measure that: docs/benchmarks.md).
#   tests/bench/bench_claim_script.sh [SCRIPT]     (default lua/claim.lua)
# Settings by environment [default]: CALLS [2000] BATCH [100] RUNS [3: fresh Redis each]
#   BOUND [1: each message's record field "<id>.<digest>" as the workers send it; 0: the bare
#   id, for a claim.lua from before bound records]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
script="${1:-$here/lua/claim.lua}"
CALLS=${CALLS:-2000} BATCH=${BATCH:-100} RUNS=${RUNS:-3} BOUND=${BOUND:-1}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dir="$(mktemp -d /tmp/pushonce-claimbench-XXXXXX)"
port=""
cleanup() {
  if [[ -n "$port" ]]; then redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
# The script as the programs send it: lua/lib/prelude.lua first (cmake/embed_scripts.cmake).
cat "$here/lua/lib/prelude.lua" "$script" >"$dir/script.lua"
mem() { redis-cli -p "$port" INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }
cpu() { redis-cli -p "$port" INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { print s }'; }
for run in $(seq 1 "$RUNS"); do
  port="$(free_port)"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
    --daemonize yes --logfile "$dir/redis.log" >/dev/null
  for _ in $(seq 1 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
  sha="$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$dir/script.lua")")"
  # claim.lua's arguments: owner, lease, window, max attempts, inbox maxlen, idle ttl (7 days),
  # epoch, oldest publish time (0), publish mode; then an id and a frame tail per message.
  # The users share bus shard 0, as the users of one custom publish share a shard.
  python3 - "$sha" "$CALLS" "$BATCH" "$BOUND" >"$dir/calls.resp" <<'PY'
import hashlib, sys
sha, calls, batch, bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
out = sys.stdout.buffer
def command(args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    out.write(b"".join(parts))
seq = 0
for _ in range(calls):
    keys, per_message = [], []
    for u in range(batch):
        seq += 1
        mid = str(seq * 4096)
        keys.append(f"pushonce:{{bus:0}}:u:bench-user-{u}:c:{mid}")
        body = ',"kind":"message","data":{"run":"bench","seq":%d,"t":1732200000000000}' % seq
        # The record's field as the workers send it (core/lua/claim.cpp record_field), or
        # the bare id with BOUND=0 (a claim.lua from before bound records).
        user = "bench-user-%d" % u
        field = mid + "." + hashlib.sha256((user + "\n" + body).encode()).hexdigest()[:12] \
            if bound else mid
        per_message += [field, body + ',"ts":1732200000000}']
    command(["EVALSHA", sha, str(batch)] + keys +
            ["w1:1", "5000", "120000", "5", "1000", "604800000", "E1", "0", "p"] +
            per_message)
PY
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  before="$(cpu)" mem_before="$(mem)"
  redis-cli -p "$port" --pipe <"$dir/calls.resp" >"$dir/pipe.out"
  after="$(cpu)" mem_after="$(mem)"
  stats="$(redis-cli -p "$port" INFO commandstats)"
  # Every message delivered: the users' offsets add up to them (inboxes are trimmed).
  delivered="$(redis-cli -p "$port" --scan --pattern 'pushonce:*:meta' | while read -r k; do
    redis-cli -p "$port" HGET "$k" offset; done | awk '{ s += $1 } END { print s }')"
  python3 - "$CALLS" "$BATCH" "$before" "$after" "$delivered" "$run" "$mem_before" "$mem_after" <<PY
import re, sys
calls, batch, before, after, delivered, run, mem_before, mem_after = sys.argv[1:]
n = int(calls) * int(batch)
if int(delivered) != n: sys.exit(f"run {run}: {delivered} of {n} messages delivered")
stats = {m[0]: (int(m[1]), int(m[2]))
         for m in re.findall(r"cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)", """$stats""")}
evalsha_us = stats["evalsha"][1] / n
inner = {k: v[0] / n for k, v in stats.items() if k not in ("evalsha", "config|resetstat", "info")}
inner = ", ".join(f"{k} {v:.2f}" for k, v in sorted(inner.items()) if v >= 0.005)
print(f"run {run}: {n} messages; EVALSHA {evalsha_us:.2f} us/message, redis-server CPU "
      f"{(float(after) - float(before)) * 1e6 / n:.2f} us/message; used_memory "
      f"{(int(mem_after) - int(mem_before)) / n:.0f} bytes/message (inbox entries included); "
      f"calls per message: {inner}")
PY
  redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  port=""
  rm -f "$dir/dump.rdb"
done
