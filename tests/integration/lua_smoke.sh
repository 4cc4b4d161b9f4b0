#!/usr/bin/env bash
# The scripts in lua/ as Redis sees them, against a private redis-server: each one, with the
# prelude in front as the programs send it, loads (SCRIPT LOAD compiles it); none uses an
# unbounded command; and source.lua, the one script no C++ test calls directly, answers as
# documented. What each other script does is tested once, in C++, against a real
# redis-server: tests/integration/test_claim.cpp (claim, release, dead_letter),
# test_publish_script.cpp (publish), test_rate_limit_script.cpp, test_queue_scripts.cpp and
# test_queue_batches.cpp (join, leave, accept, resources, assign, expire, positions),
# test_dead_letters.cpp (dead_letter_add, replay), test_ack_session.cpp (session, ack),
# test_waiting_room_controls.cpp (settings, standing, opening_draw, opening_move),
# test_wait_replicas.cpp (published), test_cluster_scripts.cpp (leader_lease) and the
# leader e2e tests (its advance mode), test_presence.cpp (presence_*, abandon),
# test_pow_join.cpp (join with a proof of work), test_revoke_script.cpp (revoke); claim_batch (the workers' race) in the e2e tests.
# Starts its own redis-server on a free port in a temp dir, stops it on exit, exits non-zero
# on any mismatch. Needs redis-server and redis-cli.
#   tests/integration/lua_smoke.sh [-v]
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LUA=${PUSHONCE_LUA_DIR:-$ROOT/lua}   # override to check another copy of the scripts
VERBOSE=0
[ "${1:-}" = "-v" ] && VERBOSE=1

for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null || { echo "lua_smoke: $tool not found" >&2; exit 2; }
done

DIR=$(mktemp -d)
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$DIR"
}
trap cleanup EXIT

# --- start a private redis-server on a free port (never 6379) ---------------------------
PORT=""
for _ in $(seq 1 20); do
  p=$((17000 + RANDOM % 2000))
  redis-cli -p "$p" PING >/dev/null 2>&1 && continue   # somebody is there
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
    --logfile "$DIR/redis.log" >/dev/null 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 50); do
    if [ "$(redis-cli -p "$p" PING 2>/dev/null)" = "PONG" ]; then PORT=$p; break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$PORT" ] && break
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
done
[ -n "$PORT" ] || { echo "lua_smoke: could not start redis-server" >&2; exit 2; }

# --- helpers ----------------------------------------------------------------------------
FAILS=0
PASSES=0
# ev SCRIPT NKEYS ARGS... : typed reply, lines joined with " | "
ev() {
  local s=$1; shift
  redis-cli -p "$PORT" --no-raw EVAL "$(cat "$LUA/lib/prelude.lua" "$LUA/$s.lua")" "$@" 2>&1 | paste -sd'|' - | sed 's/|/ | /g'
}
# rc ARGS... : a plain command, raw reply
rc() { redis-cli -p "$PORT" --raw "$@" 2>&1; }
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then
    PASSES=$((PASSES + 1))
    [ $VERBOSE = 1 ] && echo "ok   $1"
  else
    FAILS=$((FAILS + 1))
    echo "FAIL $1"; echo "     expected: $2"; echo "     actual:   $3"
  fi
}
check_match() {  # check_match NAME REGEX ACTUAL
  if [[ "$3" =~ $2 ]]; then
    PASSES=$((PASSES + 1))
    [ $VERBOSE = 1 ] && echo "ok   $1"
  else
    FAILS=$((FAILS + 1))
    echo "FAIL $1"; echo "     expected /$2/"; echo "     actual:   $3"
  fi
}
NS=t

# --- every script loads ------------------------------------------------------------------
for f in "$LUA"/*.lua; do
  check_match "$(basename "$f") loads" '^[0-9a-f]{40}$' \
    "$(redis-cli -p "$PORT" --raw SCRIPT LOAD "$(cat "$LUA/lib/prelude.lua" "$f")" 2>&1)"
done

# --- source.lua -------------------------------------------------------------------------
check "source: first queue gets 16" "(integer) 16" "$(ev source 1 $NS:sources q:default)"
check "source: same name, same index" "(integer) 16" "$(ev source 1 $NS:sources q:default)"
check "source: next queue gets 17" "(integer) 17" "$(ev source 1 $NS:sources q:other)"
check "source: empty name" "(error) bad_request source name is empty" "$(ev source 1 $NS:sources '')"
check "source: the index names its queue" "q:other" "$(rc HGET $NS:sources i:17)"
check "source: a held index is kept" "(integer) 17" "$(ev source 1 $NS:sources q:other 17)"
check_match "source: a bad held index" "^\(error\) bad_request held index" "$(ev source 1 $NS:sources q:other 3)"
# A failover lost q:other's allocation (its two fields and next): its leader still uses 17.
rc HDEL $NS:sources q:other i:17 >/dev/null; rc HSET $NS:sources next 16 >/dev/null
check "source: a lost index comes back to its user" "(integer) 17" "$(ev source 1 $NS:sources q:other 17)"
check "source: and next moves past it" "(integer) 18" "$(ev source 1 $NS:sources q:third)"
# Lost again, and another queue took 17 before the leader came back: a new index, not 17.
rc HDEL $NS:sources q:other i:17 >/dev/null; rc HSET $NS:sources next 16 >/dev/null
check "source: the index went to another queue" "(integer) 17" "$(ev source 1 $NS:sources q:fourth)"
check "source: the first user gets a new one, past those in use" "(integer) 19" "$(ev source 1 $NS:sources q:other 17)"
check "source: which names it" "q:other" "$(rc HGET $NS:sources i:19)"
rc HSET $NS:sources next 4094 >/dev/null
check "source: 4095 is the last" "(integer) 4095" "$(ev source 1 $NS:sources q:last)"
check_match "source: exhausted past 4095" "^\(error\) exhausted " "$(ev source 1 $NS:sources q:more)"
check "source: exhausted allocates nothing" "0" "$(rc HEXISTS $NS:sources q:more)"

# --- every script is bounded: no KEYS outside its slot ------------------------------------
for f in "$LUA"/*.lua; do
  if grep -nE "redis\.call\('(KEYS|SCAN|HGETALL|SMEMBERS|LRANGE)'" "$f" >/dev/null; then
    FAILS=$((FAILS + 1)); echo "FAIL $(basename "$f"): unbounded command"
  fi
done

echo "lua_smoke: $PASSES passed, $FAILS failed (redis-server on port $PORT)"
[ "$FAILS" -eq 0 ]
