#!/usr/bin/env bash
# The headline figures (README "Numbers", docs/benchmarks.md "Headline figures"), each
# benchmark run once, in one sitting, on this machine. Builds nothing: give it the folder of
# a Release build's programs (default build-release/bin), configured with
# -DPUSHONCE_BENCH=ON and the tests on (bench_waiting_room is a test-tree program, and it
# starts the programs of the folder it was built into). Prints on stdout the headline table
# in Markdown: figure, value, the command that produced it, then the commit
# (`git rev-parse --short HEAD`, "-dirty" when the tree has changes) and the date.
# Every bench's own output is kept in a temp dir, named at the end. Exit 1 when a bench
# failed (a duplicate, a loss, a wrong position, a target of the bench's own not met) or
# printed nothing to read: its figures then read "failed" and the others are still printed.
#   tests/bench/headline.sh [BIN_DIR]
#   SKIP="soak idle" tests/bench/headline.sh build-release/bin
#
# What each figure needs (about 12 minutes in all on a 2-core box, the soak half of it):
#   fanout    tests/bench/bench_fanout.sh at full speed, 20000 messages, 3 runs after a
#             warm-up: delivered msgs/s, p50 / p99 (due → frame), Redis CPU per message
#             (redis-server's /proc/PID/stat over the run ÷ messages). ~1 min.
#   rate      the same at 6500 msgs/s in batches of 10 (30000 messages, 3 runs), with 3 and
#             with 2 workers: p50 / p99, Redis CPU per message. ~1.5 min. (The latency
#             includes the load generator's own, `pushonce-bench floor`: docs/benchmarks.md.)
#   claim     tests/bench/bench_claim_script.sh: claim.lua alone on a private redis-server,
#             2000 calls of 100 messages, 3 runs: EVALSHA µs and redis-server CPU per
#             message, memory per message. ~30 s.
#   waiting   bench_waiting_room with 100,000 waiting (6 gateways, 6 client processes of
#             ~17,000 sessions: 20,000 descriptors per process are enough; arrivals spread
#             at 5,000/s, about what 2 cores take: offered 10,000/s on a slow day, Redis
#             fell 5 s behind, the gateways reconnected and joins failed over and over):
#             join rate, gateway RSS per session, Redis memory per waiting user, the
#             leader's RSS (sampled every 0.5 s), a join/leave's Redis calls/s, 10,000
#             resources at once reaching their users (p99), Redis CPU per assignment.
#             ~1.5 min.
#   idle      tests/bench/idle_connections.sh, 19,000 idle sessions on one gateway: gateway
#             RSS per session, idle CPU. ~1 min.
#   soak      tests/bench/bench_soak.sh, 4000 msgs/s for 300 s: Redis memory growth (last
#             third over the middle third) and bytes per message of rate × dedup window.
#             ~5.5 min.
# Settings by environment [default]: SKIP [none: names from the list above to leave out]
#   ONLY [all: names to run, the others left out]
# The side-by-side with the Socket.IO peer is not here: it needs the peer's checkout and
# generator (docs/benchmarks.md, "Side by side with the Socket.IO peer").
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin_arg="${1:-build-release/bin}"
bin="$(cd "$bin_arg" 2>/dev/null && pwd)" || { echo "error: no folder $bin_arg" >&2; exit 2; }
for p in pushonce-leader pushonce-worker pushonce-gateway pushonce-bench bench_waiting_room; do
  [[ -x "$bin/$p" ]] || { echo "error: $bin/$p is missing (build it first: docs/benchmarks.md)" >&2; exit 2; }
done
for t in jq python3 redis-server redis-cli curl; do
  command -v "$t" >/dev/null || { echo "error: $t is not installed" >&2; exit 2; }
done
out="$(mktemp -d /tmp/pushonce-headline-XXXXXX)"
status=0
rows=()

wanted() { # wanted NAME: not in SKIP, and in ONLY when ONLY is set
  [[ " ${SKIP:-} " != *" $1 "* ]] && { [[ -z "${ONLY:-}" ]] || [[ " $ONLY " == *" $1 "* ]]; }
}
# run NAME COMMAND...: runs it from the repository's root (BIN_DIR made absolute) with its
# stdout and stderr in $out/NAME.{out,err}; the table shows the command as given.
run() {
  local name="$1" t0 rc
  shift
  echo "== $name: $*" >&2
  t0=$(date +%s)
  (cd "$root" && "${@/#"$bin_arg"/$bin}") >"$out/$name.out" 2>"$out/$name.err"
  rc=$?
  echo "   exit $rc after $(($(date +%s) - t0)) s" >&2
  if ((rc != 0)); then
    status=1
    tail -n 5 "$out/$name.err" | sed 's/^/   | /' >&2
  fi
  return "$rc"
}
row() { rows+=("| $1 | $2 | \`$3\` |"); }
# The median of the JSON lines' field (a jq path) in FILE, rounded to DIGITS decimals.
med() {
  jq -rs --arg d "${3:-1}" "map($2) | sort | .[length / 2 | floor] |
    if . == null then \"?\" else (. * pow(10; (\$d | tonumber)) | round / pow(10; (\$d | tonumber)) | tostring) end" "$1"
}
sum() { jq -s "map($2) | add" "$1"; }
jsonl() { grep '^{' "$out/$1.out" >"$out/$1.jsonl"; [[ -s "$out/$1.jsonl" ]]; }
# The largest VmRSS (kB) seen of the processes named NAME that descend from this script,
# sampled every 0.5 s while the file FLAG exists; printed when it is gone.
peak_rss_kb() {
  local name="$1" flag="$2" peak=0 pid p rss
  while [[ -e "$flag" ]]; do
    for pid in $(pgrep -x "$name"); do
      p=$pid
      while [[ "$p" -gt 1 && "$p" != "$$" ]]; do
        p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null || echo 1)
      done
      [[ "$p" == "$$" ]] || continue
      rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
      ((rss > peak)) && peak=$rss
    done
    sleep 0.5
  done
  echo "$peak"
}
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$(date +%s)

# --- fan-out at full speed ---------------------------------------------------------------
if wanted fanout; then
  cmd=(tests/bench/bench_fanout.sh "$bin_arg" --messages 20000)
  if run fanout "${cmd[@]}" && jsonl fanout; then
    f="$out/fanout.jsonl"
    row "fan-out at full speed: delivered msgs/s (median of 3)" "$(med "$f" .delivered_messages_per_s 0)" "${cmd[*]}"
    row "fan-out at full speed: p50 / p99" "$(med "$f" .latency.p50_ms) / $(med "$f" .latency.p99_ms) ms" "${cmd[*]}"
    row "Redis CPU per message at full speed" "$(med "$f" .redis_cpu_us_per_message) µs" "${cmd[*]}"
    row "fan-out at full speed: duplicates / losses" "$(sum "$f" .duplicates) / $(sum "$f" .lost)" "${cmd[*]}"
  else
    row "fan-out at full speed" "failed" "${cmd[*]}"
  fi
fi

# --- fan-out at 6500 msgs/s, batches of 10 -----------------------------------------------
if wanted rate; then
  for w in 3 2; do
    cmd=(env "WORKERS=$w" tests/bench/bench_fanout.sh "$bin_arg" --rate 6500 --messages 30000 --batch 10)
    shown="${cmd[*]:1}"
    if run "rate$w" "${cmd[@]}" && jsonl "rate$w"; then
      f="$out/rate$w.jsonl"
      row "at 6500 msgs/s, batches of 10, $w workers: p50 / p99 (median of 3)" \
        "$(med "$f" .latency.p50_ms 2) / $(med "$f" .latency.p99_ms 2) ms" "$shown"
      ((w == 3)) && row "Redis CPU per message at 6500 msgs/s, batches of 10" "$(med "$f" .redis_cpu_us_per_message) µs" "$shown"
      row "at 6500 msgs/s, $w workers: duplicates / losses" "$(sum "$f" .duplicates) / $(sum "$f" .lost)" "$shown"
    else
      row "at 6500 msgs/s, batches of 10, $w workers" "failed" "$shown"
    fi
  done
fi

# --- claim.lua alone ---------------------------------------------------------------------
if wanted claim; then
  cmd=(tests/bench/bench_claim_script.sh)
  if run claim "${cmd[@]}" && grep -q '^run ' "$out/claim.out"; then
    # run N: ... EVALSHA X us/message, redis-server CPU Y us/message; used_memory Z bytes/message
    claim_field() {
      sed -nE "s|.*$1 ([0-9.]+) $2.*|\1|p" "$out/claim.out" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
    }
    row "\`claim.lua\` alone: \`EVALSHA\` time / redis-server CPU per message (median of 3)" \
      "$(claim_field EVALSHA us/message) / $(claim_field 'redis-server CPU' us/message) µs" "${cmd[*]}"
    row "\`claim.lua\` alone: Redis memory per message (inbox entry included)" \
      "$(claim_field used_memory bytes/message) bytes" "${cmd[*]}"
  else
    row "\`claim.lua\` alone" "failed" "${cmd[*]}"
  fi
fi

# --- 100,000 waiting in one queue --------------------------------------------------------
if wanted waiting; then
  cmd=("$bin_arg/bench_waiting_room" --users 100000 --gateways 6 --clients 6 --resources 10000
       --sustained-rate 10000 --join-rate 5000)
  touch "$out/waiting.running"
  peak_rss_kb pushonce-leader "$out/waiting.running" >"$out/waiting.leader_rss" &
  sampler=$!
  run waiting "${cmd[@]}"
  rm -f "$out/waiting.running"
  wait "$sampler"
  if jsonl waiting; then
    w() { jq -r "$1" "$out/waiting.jsonl" | head -n 1; }
    row "100,000 waiting: all joined in (arrivals/s)" "$(w '"\(.join_s) s (\(.joins_per_s | round)/s)"')" "${cmd[*]}"
    row "100,000 waiting: gateway RSS per session / Redis memory per waiting user" \
      "$(w '"\(.gateway_rss_kb_per_session) KB / \(.redis_bytes_per_waiting_user | round) B"')" "${cmd[*]}"
    row "100,000 waiting: leader RSS (largest seen)" \
      "$(awk '{ printf "%.1f MB", $1 / 1024 }' "$out/waiting.leader_rss")" "${cmd[*]}"
    row "100,000 waiting: one user's joins and leaves, Redis calls/s above idle" "$(w .churn_calls_per_s_above_idle)" "${cmd[*]}"
    row "100,000 waiting: 10,000 resources at once, all assigned / first frame p50 / p99" \
      "$(w '"\(.assign_all_ms / 1000) / \(.first_frame_ms_p50 / 1000) / \(.first_frame_ms_p99 / 1000) s"')" "${cmd[*]}"
    row "100,000 waiting: Redis CPU per assignment" "$(w .redis_cpu_us_per_assignment) µs" "${cmd[*]}"
    row "100,000 waiting: sustained assignments/s, 1 % churning (offered 10,000)" "$(w .sustained_assignments_per_s)" "${cmd[*]}"
    row "100,000 waiting: duplicates / losses / wrong positions" \
      "$(w '"\(.duplicates + .users_assigned_twice) / \(.lost) / \(.wrong_positions)"')" "${cmd[*]}"
  else
    row "100,000 waiting" "failed" "${cmd[*]}"
  fi
fi

# --- idle sessions -----------------------------------------------------------------------
if wanted idle; then
  cmd=(env N=19000 IDLE_S=30 tests/bench/idle_connections.sh "$bin_arg")
  shown="${cmd[*]:1}"
  if run idle "${cmd[@]}" && jsonl idle; then
    i() { jq -r "$1" "$out/idle.jsonl" | head -n 1; }
    row "idle session: gateway RSS / heap per session (19,000 open)" \
      "$(i '"\(.bytes_per_connection) / \(.heap_bytes_per_connection) B"')" "$shown"
    row "19,000 idle sessions: gateway CPU" "$(i .idle_cpu_pct) % of a core" "$shown"
  else
    row "idle sessions" "failed" "$shown"
  fi
fi

# --- Redis memory under steady load ------------------------------------------------------
if wanted soak; then
  cmd=(tests/bench/bench_soak.sh "$bin_arg")
  run soak "${cmd[@]}"
  growth="$(sed -nE 's/.*growth ([-+0-9.]+ %).*/\1/p' "$out/soak.out" | head -n 1)"
  bytes="$(sed -nE 's/.*retained beyond inboxes ([0-9-]+) bytes.*/\1/p' "$out/soak.out" | head -n 1)"
  if [[ -n "$growth" && -n "$bytes" ]]; then
    row "Redis memory at 4000 msgs/s for 300 s: last third over the middle third" "$growth" "${cmd[*]}"
    row "Redis memory per message of rate × dedup window (beyond the inboxes)" "$bytes bytes" "${cmd[*]}"
  else
    row "Redis memory under steady load" "failed" "${cmd[*]}"
  fi
fi

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[[ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]] && commit+="-dirty"
echo "| figure | value | command |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average before" \
  "$load_before, $(($(date +%s) - t_start)) s in all; each bench's output in $out."
exit "$status"
