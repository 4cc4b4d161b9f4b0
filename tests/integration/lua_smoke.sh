#!/usr/bin/env bash
# Developer smoke check of every script in lua/ against a private redis-server.
# Self-contained: starts its own redis-server on a free port in a temp dir, stops it on
# exit, exits non-zero on any mismatch. Needs redis-server, redis-cli and jq.
#   tests/integration/lua_smoke.sh [-v]
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LUA=${PUSHONCE_LUA_DIR:-$ROOT/lua}   # override to check another copy of the scripts
VERBOSE=0
[ "${1:-}" = "-v" ] && VERBOSE=1

for tool in redis-server redis-cli jq; do
  command -v "$tool" >/dev/null || { echo "lua_smoke: $tool not found" >&2; exit 2; }
done

DIR=$(mktemp -d)
SERVER_PID=""
SUB_PID=""
cleanup() {
  [ -n "$SUB_PID" ] && kill "$SUB_PID" 2>/dev/null
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
now_ms() { rc EVAL "local t=redis.call('TIME') return t[1]*1000+math.floor(t[2]/1000)" 0; }

NS=t
WAKE=$NS:leader:wake
BUS=$NS:bus
Q="$NS:{q:default}"
W=$Q:waiting; A=$Q:assigned; T=$Q:ticket; REG=$Q:registered
RM=$Q:res:meta; RF=$Q:res:free; RS=$Q:res:seq; RH=$Q:res:holder
SEQ=$Q:seq; OUT=$Q:outbox; FENCE=$Q:fence; PEND=$Q:pending; PIDS=$Q:pending:ids; EVS=$Q:events
ASSIGN_KEYS=(11 "$W" "$A" "$RM" "$RF" "$RH" "$SEQ" "$OUT" "$FENCE" "$PEND" "$PIDS" "$EVS")
BSEQ="$NS:{bus:0}:seq"; BOUT="$NS:{bus:0}:outbox"
U="$NS:{bus:0}:u:alice"; CH=$U:ch; META=$U:meta; INBOX=$U:inbox

# subscriber on the bus, the wake channel and alice's channel
redis-cli -p "$PORT" --raw SUBSCRIBE "$BUS" "$WAKE" "$CH" >"$DIR/sub.txt" 2>&1 &
SUB_PID=$!
for _ in $(seq 1 50); do
  [ "$(rc PUBSUB NUMSUB "$CH" | tail -1)" = "1" ] && break
  sleep 0.1
done

# --- source.lua -------------------------------------------------------------------------
check "source: first queue gets 16" "(integer) 16" "$(ev source 1 $NS:sources q:default)"
check "source: same name, same index" "(integer) 16" "$(ev source 1 $NS:sources q:default)"
check "source: next queue gets 17" "(integer) 17" "$(ev source 1 $NS:sources q:other)"
check "source: empty name" "(error) bad_request source name is empty" "$(ev source 1 $NS:sources '')"
rc HSET $NS:sources next 4094 >/dev/null
check "source: 4095 is the last" "(integer) 4095" "$(ev source 1 $NS:sources q:last)"
check_match "source: exhausted past 4095" "^\(error\) exhausted " "$(ev source 1 $NS:sources q:more)"
check "source: exhausted allocates nothing" "0" "$(rc HEXISTS $NS:sources q:more)"

# --- join.lua / leave.lua ---------------------------------------------------------------
check_match "join: unregistered queue -> not_found" "^\(error\) not_found " "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" alice "$WAKE" default)"
check "join: not_found writes no key" "0" "$(rc EXISTS "$W" "$A" "$T")"
rc SET "$REG" 1 >/dev/null
check "join: alice first (position, ticket, event)" "1) (integer) 1 | 2) (integer) 1 | 3) (integer) 1" "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" alice "$WAKE" default)"
check "join: bob second" "1) (integer) 2 | 2) (integer) 2 | 3) (integer) 2" "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" bob "$WAKE" default)"
check_match "join: alice again -> already_queued" "^\(error\) already_queued " "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" alice "$WAKE" default)"
check "join: carol third" "1) (integer) 3 | 2) (integer) 3 | 3) (integer) 3" "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" carol "$WAKE" default)"
rc HSET "$A" dave r-old >/dev/null
check_match "join: assigned user -> already_assigned" "^\(error\) already_assigned " "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" dave "$WAKE" default)"
rc HDEL "$A" dave >/dev/null
check "join: failed joins take no ticket" "3" "$(rc GET "$T")"
check "leave: carol (event 4)" "(integer) 4" "$(ev leave 2 "$W" "$EVS" carol "$WAKE" default)"
check_match "leave: carol again -> not_queued" "^\(error\) not_queued " "$(ev leave 2 "$W" "$EVS" carol "$WAKE" default)"
check "leave: queue is alice, bob" "alice bob" "$(rc ZRANGE "$W" 0 -1 | paste -sd' ' -)"

# --- assign.lua with nothing free / nobody waiting ---------------------------------------
check "assign: nothing free -> nothing" "(empty array)" "$(ev assign "${ASSIGN_KEYS[@]}" default 16 0 0 100000 "$BUS" "$WAKE" 1)"
check "assign: nothing free leaves the queue" "2" "$(rc ZCARD "$W")"
E="$NS:{q:empty}"
check "assign: empty queue -> nothing" "(empty array)" "$(ev assign 11 "$E:waiting" "$E:assigned" "$E:res:meta" "$E:res:free" "$E:res:holder" "$E:seq" "$E:outbox" "$E:fence" "$E:pending" "$E:pending:ids" "$E:events" empty 18 0 0 100000 "$BUS" "$WAKE" 1)"

# --- resource_add.lua -------------------------------------------------------------------
META_JSON='{"gpu":1,"tags":[],"o":{},"big":12345678901234567890}'
check "resource add: r1 r2" "(integer) 2" "$(ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "$META_JSON" r1 r2)"
check "resource add: meta verbatim" "$META_JSON" "$(rc HGET "$RM" r1)"
check "resource add: r2 (exists) r3 -> exists r2" "(error) exists r2" "$(ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" r3 r2)"
check "resource add: ... and r3 not added" "0 2" "$(rc HEXISTS "$RM" r3) $(rc ZCARD "$RF")"
check "resource add: free still r1 r2" "r1 r2" "$(rc ZRANGE "$RF" 0 -1 | paste -sd' ' -)"
check "resource add: r4 twice -> exists r4" "(error) exists r4" "$(ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" r4 r4)"
check "resource add: ... and r4 not added" "0" "$(rc HEXISTS "$RM" r4)"
check "resource add: r3 without meta" "(integer) 1" "$(ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" r3)"
check "resource add: no meta stored as null" "null" "$(rc HGET "$RM" r3)"
check "resource add: no ids -> 0" "(integer) 0" "$(ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "")"

# --- assign.lua -------------------------------------------------------------------------
T0=$(now_ms)
check "assign: alice gets r1, id 1*4096+16" '1) "4112" | 2) "alice" | 3) "r1"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 5 0 100000 "$BUS" "$WAKE" 1)"
check "assign: fence stored" "5" "$(rc GET "$FENCE")"
M=$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n 3p)
check "assign: outbox fields (only m)" "m" "$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n '2p')"
check_match "assign: message text (the bus layout, meta verbatim, accept_by null)" \
  '^\{"id":"4112","user":"alice","src":"q:default","kind":"assignment","data":\{"queue":"default","resource":"r1","meta":\{"gpu":1,"tags":\[\],"o":\{\},"big":12345678901234567890\},"accept_by":null\},"ts":[0-9]+\}$' "$M"
TS=$(echo "$M" | jq -r .ts)
T1=$(now_ms)
check "assign: ts is Redis time" "yes" "$([ "$TS" -ge "$T0" ] && [ "$TS" -le "$T1" ] && echo yes || echo "no ($T0 <= $TS <= $T1)")"
check "assign: alice holds r1" "r1 alice" "$(rc HGET "$A" alice) $(rc HGET "$RH" r1)"
check_match "assign: older token -> fenced" "^\(error\) fenced " "$(ev assign "${ASSIGN_KEYS[@]}" default 16 3 0 100000 "$BUS" "$WAKE" 1)"
check "assign: fenced call changed nothing" "bob|r2 r3|5" "$(rc ZRANGE "$W" 0 -1 | paste -sd' ' -)|$(rc ZRANGE "$RF" 0 -1 | paste -sd' ' -)|$(rc GET "$FENCE")"
check "assign: bob gets r2 (lowest free score), newer token, accept timeout" '1) "8208" | 2) "bob" | 3) "r2"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 30000 100000 "$BUS" "$WAKE" 1)"
check "assign: newer token stored" "7" "$(rc GET "$FENCE")"
M=$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n 3p)
check "assign: accept_by = ts + timeout" "30000" "$(echo "$M" | jq '.data.accept_by - .ts')"
check "assign: queue empty now -> nothing" "(empty array)" "$(ev assign "${ASSIGN_KEYS[@]}" default 16 0 0 100000 "$BUS" "$WAKE" 1)"
check_match "assign: alice cannot join while assigned" "^\(error\) already_assigned " "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" alice "$WAKE" default)"
check_match "assign: bad source -> bad_request" "^\(error\) bad_request " "$(ev assign "${ASSIGN_KEYS[@]}" default x 0 0 100000 "$BUS" "$WAKE" 1)"
check "assign: equal token accepted (same leader)" "(empty array)" "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"

# --- resource_release.lua ---------------------------------------------------------------
check_match "release: free resource -> not_assigned" "^\(error\) not_assigned " "$(ev resource_release 5 "$RM" "$RF" "$RS" "$RH" "$A" r3 "$WAKE" default)"
check_match "release: unknown -> not_found" "^\(error\) not_found " "$(ev resource_release 5 "$RM" "$RF" "$RS" "$RH" "$A" nope "$WAKE" default)"
check "release: r1" "(integer) 1" "$(ev resource_release 5 "$RM" "$RF" "$RS" "$RH" "$A" r1 "$WAKE" default)"
check "release: alice no longer assigned, r1 free after r3" "0 0 r3 r1" "$(rc HEXISTS "$A" alice) $(rc HEXISTS "$RH" r1) $(rc ZRANGE "$RF" 0 -1 | paste -sd' ' -)"
check "release: alice may join again" "1) (integer) 1 | 2) (integer) 4 | 3) (integer) 7" "$(ev join 5 "$W" "$A" "$T" "$REG" "$EVS" alice "$WAKE" default)"
check "assign: alice gets r3 (freed first)" '1) "12304" | 2) "alice" | 3) "r3"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"
M=$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n 3p)
check "assign: meta null spliced" "null" "$(echo "$M" | jq -c .data.meta)"

# --- resource_remove.lua ----------------------------------------------------------------
check "remove: r2 (held by bob)" "(integer) 1" "$(ev resource_remove 4 "$RM" "$RF" "$RH" "$A" r2)"
check "remove: r2 gone, bob free" "0 0 0" "$(rc HEXISTS "$RM" r2) $(rc HEXISTS "$RH" r2) $(rc HEXISTS "$A" bob)"
check_match "remove: r2 again -> not_found" "^\(error\) not_found " "$(ev resource_remove 4 "$RM" "$RF" "$RH" "$A" r2)"
check "remove: r1 (free)" "(integer) 1" "$(ev resource_remove 4 "$RM" "$RF" "$RH" "$A" r1)"
check "remove: r1 left the free set" "0" "$(rc ZCARD "$RF")"
check "assign: nothing free after removals -> nothing" "(empty array)" "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"

# --- ids across digit boundaries and near 2^52 ------------------------------------------
rc SET "$SEQ" 8 >/dev/null
ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" r5 r6 >/dev/null
ev join 5 "$W" "$A" "$T" "$REG" "$EVS" bob "$WAKE" default >/dev/null
ev join 5 "$W" "$A" "$T" "$REG" "$EVS" carol "$WAKE" default >/dev/null
check "ids: seq 9" '1) "36880" | 2) "bob" | 3) "r5"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"
check "ids: seq 10 (numerically larger, string-smaller than seq 2's 8208)" '1) "40976" | 2) "carol" | 3) "r6"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"
rc SET "$SEQ" 1099511627776 >/dev/null   # 2^40
ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" r7 >/dev/null
ev join 5 "$W" "$A" "$T" "$REG" "$EVS" erin "$WAKE" default >/dev/null
check "ids: seq 2^40+1 -> exact 2^52+4096+16" '1) "4503599627374608" | 2) "erin" | 3) "r7"' "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 1)"
check "ids: outbox m id matches" '"4503599627374608"' "$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n 3p | jq .id)"

# --- assign.lua in batches, queue events, expire.lua in batches ---------------------------
ev resource_add 3 "$RM" "$RF" "$RS" "$WAKE" default "" b1 b2 b3 >/dev/null
for u in u1 u2 u3 u4; do ev join 5 "$W" "$A" "$T" "$REG" "$EVS" $u "$WAKE" default >/dev/null; done
check "batch: 3 of 4 users assigned in one call (ids in order)" \
  "$(for i in 1 2 3; do echo "$(( (1099511627777 + i) * 4096 + 16 ))|u$i|b$i"; done | paste -sd'|' -)" \
  "$(rc EVAL "$(cat "$LUA/lib/prelude.lua" "$LUA/assign.lua")" "${ASSIGN_KEYS[@]}" default 16 7 20000 100000 "$BUS" "$WAKE" 10 | paste -sd'|' -)"
check "batch: one outbox entry of three lines" "3" "$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n '3,$p' | wc -l)"
check "batch: u4 still waits, alone" "u4" "$(rc ZRANGE "$W" 0 -1 | paste -sd' ' -)"
check "batch: accept deadlines and ids for all three" "3 3" "$(rc ZMSCORE "$PEND" u1 u2 u3 | grep -c .) $(rc HMGET "$PIDS" u1 u2 u3 | grep -c .)"
check_match "batch: one queue event naming the three tickets" "^default [0-9]+ r [0-9]+ [0-9]+ [0-9]+$" "$(grep '^default [0-9]* r ' "$DIR/sub.txt" | tail -1)"
check "batch: positions.lua (event, u4 first, u1 gone)" "$(rc GET "$EVS")|1|$(rc ZSCORE "$W" u4)|0|0" "$(rc EVAL "$(cat "$LUA/lib/prelude.lua" "$LUA/positions.lua")" 2 "$W" "$EVS" u4 u1 | paste -sd'|' -)"
check_match "batch: size 0 -> bad_request" "^\(error\) bad_request " "$(ev assign "${ASSIGN_KEYS[@]}" default 16 7 0 100000 "$BUS" "$WAKE" 0)"
rc ZADD "$PEND" 1 u1 1 u2 >/dev/null   # u1's and u2's deadlines have passed
EXP_KEYS=(9 "$PEND" "$PIDS" "$A" "$RF" "$RS" "$RH" "$SEQ" "$OUT" "$FENCE")
check_match "expire: u1 and u2 in one call" "^[0-9]+\|u1\|b1\|[0-9]+\|[0-9]+\|u2\|b2\|[0-9]+$" "$(rc EVAL "$(cat "$LUA/lib/prelude.lua" "$LUA/expire.lua")" "${EXP_KEYS[@]}" default 16 7 100000 "$BUS" "$WAKE" 10 | paste -sd'|' -)"
check "expire: one outbox entry of two expired lines" "2" "$(rc XREVRANGE "$OUT" + - COUNT 1 | sed -n '3,$p' | grep -c '"kind":"expired"')"
check "expire: b1 b2 free again, u3 still pending" "b1 b2|1 0 1" "$(rc ZRANGE "$RF" 0 -1 | paste -sd' ' -)|$(rc ZMSCORE "$PEND" u1 u2 u3 | grep -c . ; true) $(rc HEXISTS "$A" u1) $(rc HEXISTS "$A" u3)"
check "expire: nothing due -> nothing" "(empty array)" "$(ev expire "${EXP_KEYS[@]}" default 16 7 100000 "$BUS" "$WAKE" 10)"

# --- publish.lua ------------------------------------------------------------------------
# KEYS seq, outbox, [stats], [rate bucket], idem keys (one per message that has one); ARGV
# shard, window ms, retention ms, bus channel, mode, rate ("0": none), burst, count in stats
# ("0"/"1"), then per message: user, data, has-key ("0"/"1").
DATA='{"a":[],"b":{},"n":12345678901234567890,"s":"x\"y"}'
PUB=(2 "$BSEQ" "$BOUT")
PUB_ARGS=(0 60000 100000 "$BUS" p 0 0 0)
check "publish: without key" '1) "4096" | 2) (integer) 0' "$(ev publish "${PUB[@]}" "${PUB_ARGS[@]}" alice "$DATA" 0)"
M=$(rc XREVRANGE "$BOUT" + - COUNT 1 | sed -n 3p)
check_match "publish: message text (the bus layout, data verbatim)" \
  '^\{"id":"4096","user":"alice","src":"bus:0","kind":"message","data":\{"a":\[\],"b":\{\},"n":12345678901234567890,"s":"x\\"y"\},"ts":[0-9]+\}$' "$M"
check "publish: outbox fields (only m)" "m" "$(rc XREVRANGE "$BOUT" + - COUNT 1 | sed -n 2p)"
IDEM="$NS:{bus:0}:idem:alice:order-1"
check "publish: with key k (seq 2 -> 4 digits)" '1) "8192" | 2) (integer) 0' "$(ev publish 3 "$BSEQ" "$BOUT" "$IDEM" "${PUB_ARGS[@]}" alice '{"k":1}' 1)"
check "publish: same key -> duplicate, first id" '1) "8192" | 2) (integer) 1' "$(ev publish 3 "$BSEQ" "$BOUT" "$IDEM" "${PUB_ARGS[@]}" alice '{"k":2}' 1)"
check "publish: duplicate wrote nothing" "2 2" "$(rc XLEN "$BOUT") $(rc GET "$BSEQ")"
check_match "publish: idem key has the window" "^(5[0-9]{4}|60000)$" "$(rc PTTL "$IDEM")"
check "publish: seq 3 -> 5 digits" '1) "12288" | 2) (integer) 0' "$(ev publish "${PUB[@]}" "${PUB_ARGS[@]}" alice 7 0)"
# a batch: bob's key b-1 twice (a duplicate of its first use inside the batch), alice without
IDEM2="$NS:{bus:0}:idem:bob:b-1"
check "publish: batch, a key repeated inside it is a duplicate of its first use" \
  '1) "16384" | 2) (integer) 0 | 3) "20480" | 4) (integer) 0 | 5) "16384" | 6) (integer) 1' \
  "$(ev publish 4 "$BSEQ" "$BOUT" "$IDEM2" "$IDEM2" "${PUB_ARGS[@]}" bob 1 1 alice 2 0 bob 3 1)"
check "publish: the batch is ONE outbox entry of 2 lines" "4 2" "$(rc XLEN "$BOUT") $(rc XREVRANGE "$BOUT" + - COUNT 1 | sed -n '3,$p' | wc -l | tr -d ' ')"
check "publish: its lines are the fresh messages, in order" "16384 20480" "$(rc XREVRANGE "$BOUT" + - COUNT 1 | sed -n '3,$p' | jq -r .id | paste -sd' ' -)"
check "publish: the batch reserved ids in one INCRBY" "6" "$(rc GET "$BSEQ")"
check "publish: a batch of only duplicates writes nothing" '1) "16384" | 2) (integer) 1 | 3) "8192" | 4) (integer) 1' \
  "$(ev publish 4 "$BSEQ" "$BOUT" "$IDEM2" "$IDEM" "${PUB_ARGS[@]}" bob 9 1 alice 9 1)"
check "publish: ... outbox and seq unchanged" "4 6" "$(rc XLEN "$BOUT") $(rc GET "$BSEQ")"
check "publish: shard 3 source" '"bus:3"' "$(ev publish 2 "$NS:{bus:3}:seq" "$NS:{bus:3}:outbox" 3 60000 100000 "$BUS" p 0 0 0 alice null 0 >/dev/null; rc XREVRANGE "$NS:{bus:3}:outbox" + - COUNT 1 | sed -n 3p | jq .src)"
check_match "publish: bad window -> bad_request" "^\(error\) bad_request " "$(ev publish "${PUB[@]}" 0 x 100000 "$BUS" p 0 0 0 alice 1 0)"
check_match "publish: missing has-key -> bad_request" "^\(error\) bad_request " "$(ev publish "${PUB[@]}" "${PUB_ARGS[@]}" alice 1)"
check_match "publish: bad user -> bad_request" "^\(error\) bad_request " "$(ev publish "${PUB[@]}" "${PUB_ARGS[@]}" 'a b' 1 0)"
check_match "publish: empty data -> bad_request" "^\(error\) bad_request " "$(ev publish "${PUB[@]}" "${PUB_ARGS[@]}" alice '' 0)"
check_match "publish: bad publish mode -> bad_request" "^\(error\) bad_request " "$(ev publish "${PUB[@]}" 0 60000 100000 "$BUS" x 0 0 0 alice 1 0)"
check "publish: refused calls wrote nothing" "4 6" "$(rc XLEN "$BOUT") $(rc GET "$BSEQ")"
# On a single Redis the call also counts what it published in NS:stats and takes the
# request's token from the API key's bucket (rate 1/s, burst 2: the third call is refused).
PSTATS="$NS:pstats"; PRATE="$NS:ratelimit:api:smoke"
PUB_RL=(4 "$BSEQ" "$BOUT" "$PSTATS" "$PRATE" 0 60000 100000 "$BUS" p 1 2 1)
check "publish+rate: first call, 2 messages" '1) "28672" | 2) (integer) 0 | 3) "32768" | 4) (integer) 0' \
  "$(ev publish "${PUB_RL[@]}" alice 1 0 bob 2 0)"
check "publish+rate: stats published +2" "2" "$(rc HGET "$PSTATS" published)"
check_match "publish+rate: second call" '^1\) "36864"' "$(ev publish "${PUB_RL[@]}" alice 3 0)"
check_match "publish+rate: third call -> rate_limited with the wait in ms" '^\(error\) rate_limited [0-9]+$' \
  "$(ev publish "${PUB_RL[@]}" alice 4 0)"
check "publish+rate: the refused call wrote nothing (outbox, seq, stats)" "6 9 3" \
  "$(rc XLEN "$BOUT") $(rc GET "$BSEQ") $(rc HGET "$PSTATS" published)"
check_match "publish+rate: the bucket expires" "^[0-9]+$" "$(rc PTTL "$PRATE")"
check "publish+rate: stats only (no rate)" '1) "40960" | 2) (integer) 0' \
  "$(ev publish 3 "$BSEQ" "$BOUT" "$PSTATS" 0 60000 100000 "$BUS" p 0 0 1 carol 5 0)"
check "publish+rate: ... counted" "4" "$(rc HGET "$PSTATS" published)"
check_match "publish+rate: rate without burst -> bad_request" "^\(error\) bad_request " \
  "$(ev publish "${PUB_RL[@]:0:9}" p 5 0 1 alice 1 0)"

# --- claim.lua (claims and delivers), release.lua, dead_letter.lua ---------------------
# KEYS claim keys NS:{TAG}:u:USER:c:ID; ARGV owner, lease ms, window ms, max attempts, inbox
# maxlen, idle ms, epoch, oldest publish time in the batch (0 = unknown; $OLDEST), publish
# mode (p, s or n; $MODE, default p), then per message: id, frame tail (empty: take a lease
# only). The records are fields of NS:{TAG}:c:<id mod 4096>:<id div 524288> (bkt below);
# each user here has its own tag, so the same ids can be reused per user.
bkt() {  # bkt CLAIMKEY: the record bucket claim.lua derives from it
  local key=$1 id=${1##*:c:}
  echo "${key%%\}*}}:c:$((id % 4096)):$((id / 524288))"
}
rec() { rc HGET "$(bkt "$1")" "${1##*:c:}"; }  # rec CLAIMKEY: the record
C1="$U:c:4096"
HEAD1='{"type":"message","id":"4096","offset":'
TAIL1=',"kind":"message","data":{"a":[]},"ts":1}'
FRAME1="${HEAD1}1${TAIL1}"
HEAD2='{"type":"message","id":"8192","offset":'
cl() {  # cl OWNER LEASE MAXATTEMPTS EPOCH KEY ID TAIL [KEY ID TAIL]...
  local owner=$1 lease=$2 max=$3 epoch=$4; shift 4
  local keys=() rest=()
  while [ $# -ge 3 ]; do keys+=("$1"); rest+=("$2" "$3"); shift 3; done
  ev claim "${#keys[@]}" "${keys[@]}" "$owner" "$lease" 60000 "$max" 1000 600000 "$epoch" \
    "${OLDEST:-0}" "${MODE:-p}" "${rest[@]}"
}
check "claim: lease only (empty tail) -> won 1" '1) "won" | 2) (integer) 1' "$(cl w1 300 5 E1 "$C1" 4096 '')"
check_match "claim: the lease record" '^l:w1:[0-9]+:1$' "$(rec "$C1")"
check "claim: w2 while the lease is live -> taken" '1) "taken" | 2) (integer) 0' "$(cl w2 300 5 E1 "$C1" 4096 "$TAIL1")"
check "claim: w1 itself while its lease is live -> taken" '1) "taken" | 2) (integer) 0' "$(cl w1 300 5 E1 "$C1" 4096 "$TAIL1")"
check_match "claim: has the dedup window" "^(5[0-9]{4}|60000)$" "$(rc PTTL "$(bkt "$C1")")"
check "claim: a lease writes no inbox" "0 0" "$(rc EXISTS "$META") $(rc EXISTS "$INBOX")"
sleep 0.4
check "claim: after the lease, w2 delivers at offset 1" '1) "delivered" | 2) (integer) 1' "$(cl w2 5000 5 E1 "$C1" 4096 "$TAIL1")"
check "claim: record <offset>:<attempts>" "1:2" "$(rec "$C1")"
check "deliver: inbox entry 1-0 f=frame" "1-0|f|$FRAME1" "$(rc XRANGE "$INBOX" - + | paste -sd'|' -)"
check "deliver: epoch created" "E1 1" "$(rc HMGET "$META" epoch offset | paste -sd' ' -)"
check_match "deliver: meta idle ttl" "^(5[0-9]{5}|600000)$" "$(rc PTTL "$META")"
check_match "deliver: inbox idle ttl" "^(5[0-9]{5}|600000)$" "$(rc PTTL "$INBOX")"
check_match "deliver: claim dedup window" "^(5[0-9]{4}|60000)$" "$(rc PTTL "$(bkt "$C1")")"
check "claim: after delivery -> done 1" '1) "done" | 2) (integer) 1' "$(cl w3 5000 5 E1 "$C1" 4096 "$TAIL1")"
check "claim: done wrote nothing" "1 1" "$(rc HGET "$META" offset) $(rc XLEN "$INBOX")"
# Published longer ago than window - lease (the tails say ts 1): with no record the
# message is not delivered (its record may have expired after a delivery); with one, as usual.
check "claim: old, no record -> expired" '1) "expired" | 2) (integer) 0' \
  "$(OLDEST=1 cl w3 5000 5 E1 "$U:c:12288" 12288 "$TAIL1")"
check "claim: ... nothing written" "0 1 1" "$(rc HEXISTS "$(bkt "$U:c:12288")" 12288) $(rc HGET "$META" offset) $(rc XLEN "$INBOX")"
check "claim: old, delivered record -> done" '1) "done" | 2) (integer) 1' "$(OLDEST=1 cl w3 5000 5 E1 "$C1" 4096 "$TAIL1")"
NOW_MS=$(( $(rc TIME | head -1) * 1000 ))
check "claim: recent (oldest = now) -> not expired" '1) "won" | 2) (integer) 1' \
  "$(OLDEST=$NOW_MS cl w3 5000 5 E1 "$U:c:16384" 16384 '')"
check_match "claim: bad oldest -> bad_request" "^\(error\) bad_request " "$(OLDEST=x cl w3 5000 5 E1 "$C1" 4096 "$TAIL1")"

C2="$U:c:8192"
check "claim: a batch: new message -> offset 2, the first -> done 1" \
  '1) "delivered" | 2) (integer) 2 | 3) "done" | 4) (integer) 1' "$(cl w9 5000 5 OTHER "$C2" 8192 '}' "$C1" 4096 "$TAIL1")"
check "deliver: stored epoch kept" "E1" "$(rc HGET "$META" epoch)"
check "deliver: record of a first attempt is the offset" "2" "$(rec "$C2")"
check "deliver: inbox ids 1-0 2-0" "1-0 2-0" "$(rc XRANGE "$INBOX" - + | grep -- '-0$' | paste -sd' ' -)"
# The idle TTL (600000 here) is renewed only when less than 7/8 of it (525000) is left.
T="$NS:{bus:tina}:u:tina"
check "deliver: tina's first -> offset 1" '1) "delivered" | 2) (integer) 1' "$(cl w9 5000 5 E1 "$T:c:4096" 4096 '}')"
rc PEXPIRE "$T:meta" 580000 >/dev/null; rc PEXPIRE "$T:inbox" 580000 >/dev/null
check "deliver: 7/8 of the idle ttl left -> offset 2" '1) "delivered" | 2) (integer) 2' "$(cl w9 5000 5 E1 "$T:c:8192" 8192 '}')"
check_match "deliver: ... meta and inbox ttl not renewed" "^5[0-8][0-9]{4} 5[0-8][0-9]{4}$" "$(rc PTTL "$T:meta") $(rc PTTL "$T:inbox")"
rc PEXPIRE "$T:meta" 520000 >/dev/null; rc PEXPIRE "$T:inbox" 520000 >/dev/null
check "deliver: less than 7/8 left -> offset 3" '1) "delivered" | 2) (integer) 3' "$(cl w9 5000 5 E1 "$T:c:12288" 12288 '}')"
check_match "deliver: ... meta and inbox ttl renewed" "^(59[0-9]{4}|600000) (59[0-9]{4}|600000)$" "$(rc PTTL "$T:meta") $(rc PTTL "$T:inbox")"
rc PERSIST "$T:meta" >/dev/null
check "deliver: meta without a ttl -> offset 4" '1) "delivered" | 2) (integer) 4' "$(cl w9 5000 5 E1 "$T:c:16384" 16384 '}')"
check_match "deliver: ... gets the idle ttl" "^(59[0-9]{4}|600000)$" "$(rc PTTL "$T:meta")"
# A session made the meta (fresh ttl, no inbox yet): the first delivery gives the inbox one.
V="$NS:{bus:vera}:u:vera"
rc HSET "$V:meta" epoch EV >/dev/null; rc PEXPIRE "$V:meta" 600000 >/dev/null
check "deliver: first delivery after a session -> offset 1" '1) "delivered" | 2) (integer) 1' "$(cl w1 5000 5 EV "$V:c:4096" 4096 '}')"
check_match "deliver: ... the new inbox gets the idle ttl" "^(59[0-9]{4}|600000)$" "$(rc PTTL "$V:inbox")"
# meta lost (new epoch) while an inbox of the old epoch is left: offsets restart at 1
Z="$NS:{bus:zed}:u:zed"
rc XADD "$Z:inbox" 7-0 f old >/dev/null
check "deliver: new epoch over a stale inbox -> offset 1" '1) "delivered" | 2) (integer) 1' "$(cl w1 5000 5 EZ "$Z:c:4096" 4096 '}')"
check "deliver: ... stale entries dropped" "1-0" "$(rc XRANGE "$Z:inbox" - + | head -1)"

# a failed inbox write: offset rolled back, the lease kept for a retry after it
F="$NS:{bus:fay}:u:fay"
rc HSET "$F:meta" epoch E0 offset 0 >/dev/null
rc SET "$F:inbox" "not a stream" >/dev/null
check_match "claim: inbox write fails -> failed with the error" '^1\) "failed" \| 2\) "WRONGTYPE' "$(cl w1 300 5 E1 "$F:c:4096" 4096 '}')"
check "claim: ... offset rolled back" "0" "$(rc HGET "$F:meta" offset)"
check_match "claim: ... meta and inbox ttl renewed together" "^(59[0-9]{4}|600000) (59[0-9]{4}|600000)$" "$(rc PTTL "$F:meta") $(rc PTTL "$F:inbox")"
check_match "claim: ... lease kept" '^l:w1:[0-9]+:1$' "$(rec "$F:c:4096")"
check "claim: ... nobody else before the lease ends" '1) "taken" | 2) (integer) 0' "$(cl w2 300 5 E1 "$F:c:4096" 4096 '}')"
rc DEL "$F:inbox" >/dev/null
sleep 0.4
check "claim: ... retried after the lease" '1) "delivered" | 2) (integer) 1' "$(cl w2 300 5 E1 "$F:c:4096" 4096 '}')"
check "claim: ... second attempt recorded" "1:2" "$(rec "$F:c:4096")"

# max attempts: a lease, no delivery, then dead_letter.lua by the lease holder
X="$NS:{bus:xavier}:u:xavier"; CX="$X:c:4096"
check "claim: max 1, lease only -> won 1" '1) "won" | 2) (integer) 1' "$(cl w1 50 1 E1 "$CX" 4096 '')"
sleep 0.1
check "claim: attempt 2 of max 1 -> won 2 (not delivered)" '1) "won" | 2) (integer) 2' "$(cl w2 60000 1 E1 "$CX" 4096 '}')"
check "claim: ... no inbox" "0" "$(rc EXISTS "$X:inbox")"
check "dead_letter: not the holder -> 0" "1) (integer) 0 | 2) (integer) 0" "$(ev dead_letter 1 "$(bkt "$CX")" w1 poison 60000 4096)"
check "dead_letter: the holder -> 1" "1) (integer) 1 | 2) (integer) 0" "$(ev dead_letter 1 "$(bkt "$CX")" w2 poison 60000 4096)"
check "dead_letter: record x:<attempts>:<reason>" "x:2:poison" "$(rec "$CX")"
check "claim: dead -> dead 0" '1) "dead" | 2) (integer) 0' "$(cl w3 5000 5 E1 "$CX" 4096 '}')"
check "dead_letter: twice -> 0" "1) (integer) 0 | 2) (integer) 0" "$(ev dead_letter 1 "$(bkt "$CX")" w2 poison 60000 4096)"

# replay.lua as on a cluster (only the record is decided here)
check "replay: marked dead -> re-driven" "(integer) 1 r:0" "$(ev replay 1 "$(bkt "$CX")" 4096 60000 "$NS:bus" '{}' 1-1) $(rec "$CX")"
check_match "replay: a delivered message -> not_dead" "^\(error\) not_dead " "$(rc HSET "$(bkt "$CX")" 4096 3 >/dev/null; ev replay 1 "$(bkt "$CX")" 4096 60000 "$NS:bus" '{}' 1-1)"
check_match "replay: no entry -> not_found" "^\(error\) not_found " "$(ev replay 1 "$NS:{bus:nobody}:c:0:0" 4096 60000 "$NS:bus" '{}')"

# release.lua: only the holder; the message is claimable at once
R="$NS:{bus:rita}:u:rita"; CR="$R:c:4096"
check "release: take a 60 s lease" '1) "won" | 2) (integer) 1' "$(cl w1 60000 5 E1 "$CR" 4096 '')"
check "release: not the holder -> 0" "(integer) 0" "$(ev release 1 "$(bkt "$CR")" w2 4096)"
check "release: the holder -> 1" "(integer) 1" "$(ev release 1 "$(bkt "$CR")" w1 4096)"
check "release: record r:<attempts>" "r:1" "$(rec "$CR")"
check_match "release: the window is kept" "^(5[0-9]{4}|60000)$" "$(rc PTTL "$(bkt "$CR")")"
check "release: claimable at once, attempt 2" '1) "delivered" | 2) (integer) 1' "$(cl w2 60000 5 E1 "$CR" 4096 '}')"
check "release: nothing to release once delivered" "(integer) 0 1:2" "$(ev release 1 "$(bkt "$CR")" w2 4096) $(rec "$CR")"

# Record buckets: the records are fields of NS:{TAG}:c:<source>:<id div 524288>, one
# window after the bucket's last write.
bc() { cl "$@"; }
Q="$NS:{bus:q}:u:quinn"; QB0="$NS:{bus:q}:c:9:0"; QB1="$NS:{bus:q}:c:9:1"  # source 9; seq 128 starts bucket 1
check "buckets: a batch over two buckets -> offsets 1 2 3" \
  '1) "delivered" | 2) (integer) 1 | 3) "delivered" | 4) (integer) 2 | 5) "delivered" | 6) (integer) 3' \
  "$(bc w1 5000 5 E1 "$Q:c:4105" 4105 '}' "$Q:c:8201" 8201 '}' "$Q:c:524297" 524297 '}')"
check "buckets: the records are fields" "1 2 3" "$(rc HGET "$QB0" 4105) $(rc HGET "$QB0" 8201) $(rc HGET "$QB1" 524297)"
check_match "buckets: each kept the window" "^(5[0-9]{4}|60000) (5[0-9]{4}|60000)$" "$(rc PTTL "$QB0") $(rc PTTL "$QB1")"
check "buckets: no key per record" "0" "$(rc EXISTS "$Q:c:4105" "$Q:c:8201" "$Q:c:524297")"
check "buckets: claimed again -> done" \
  '1) "done" | 2) (integer) 1 | 3) "done" | 4) (integer) 3' "$(bc w2 5000 5 E1 "$Q:c:4105" 4105 '}' "$Q:c:524297" 524297 '}')"
check "buckets: lease only -> won 1" '1) "won" | 2) (integer) 1' "$(bc w1 60000 5 E1 "$Q:c:12297" 12297 '')"
check_match "buckets: the lease record" '^l:w1:[0-9]+:1$' "$(rc HGET "$QB0" 12297)"
check "buckets: another claimer -> taken" '1) "taken" | 2) (integer) 0' "$(bc w2 60000 5 E1 "$Q:c:12297" 12297 '}')"
check "buckets: release, not the holder -> 0" "(integer) 0" "$(ev release 1 "$QB0" w2 12297)"
check "buckets: release, the holder -> 1" "(integer) 1 r:1" "$(ev release 1 "$QB0" w1 12297) $(rc HGET "$QB0" 12297)"
check "buckets: released -> delivered at attempt 2" '1) "delivered" | 2) (integer) 4' "$(bc w2 60000 5 E1 "$Q:c:12297" 12297 '}')"
check "buckets: ... recorded 4:2" "4:2" "$(rc HGET "$QB0" 12297)"
check "buckets: lease only for a dead letter" '1) "won" | 2) (integer) 1' "$(bc w1 60000 5 E1 "$Q:c:16393" 16393 '')"
rc PEXPIRE "$QB0" 1000 >/dev/null
check "buckets: dead_letter, the holder -> 1, with its entry" "1) (integer) 1 | 2) (integer) 0 x:1:poison 1" \
  "$(ev dead_letter 2 "$QB0" "$NS:dead-letters" w1 poison 60000 16393 10000 16393 quinn bus:9 1 '{}') $(rc HGET "$QB0" 16393) $(rc XLEN "$NS:dead-letters")"
check_match "buckets: ... the bucket kept a window after the mark" "^(5[0-9]{4}|60000)$" "$(rc PTTL "$QB0")"
check "buckets: dead -> dead 0" '1) "dead" | 2) (integer) 0' "$(bc w2 5000 5 E1 "$Q:c:16393" 16393 '}')"
check_match "buckets: an id that is not decimal -> bad_request" "^\(error\) bad_request " "$(bc w1 5000 5 E1 "$Q:c:1x" 1x '}')"
check "buckets: ... nothing written" "4" "$(rc HLEN "$QB0")"

# claim_batch.lua: the race for a bus payload; the first caller wins, for one lease
B="$NS:b:8192"
check "claim_batch: the first caller wins" "(integer) 1" "$(ev claim_batch 1 "$B" w1:1 5000)"
check "claim_batch: every later caller loses" "(integer) 0 (integer) 0" "$(ev claim_batch 1 "$B" w2:1 5000) $(ev claim_batch 1 "$B" w3:1 5000)"
check "claim_batch: the key holds the winner" "w1:1" "$(rc GET "$B")"
check_match "claim_batch: for one lease" "^([1-4][0-9]{3}|5000)$" "$(rc PTTL "$B")"
rc PEXPIRE "$B" 1 >/dev/null; sleep 0.05  # the lease runs out
check "claim_batch: after the lease a caller wins again" "(integer) 1" "$(ev claim_batch 1 "$B" w2:2 60000)"
check_match "claim_batch: empty owner -> bad_request" "^\(error\) bad_request " "$(ev claim_batch 1 "$NS:b:1" '' 200)"
check_match "claim_batch: bad lease -> bad_request" "^\(error\) bad_request " "$(ev claim_batch 1 "$NS:b:1" w1 0) $(ev claim_batch 1 "$NS:b:1" w1 abc)"
check "claim_batch: refused calls stored nothing" "0" "$(rc EXISTS "$NS:b:1")"

check_match "claim: bad lease -> bad_request" "^\(error\) bad_request " "$(cl w1 abc 5 E1 "$U:c:1" 1 '}')"
check_match "claim: empty owner -> bad_request" "^\(error\) bad_request " "$(cl '' 5000 5 E1 "$U:c:1" 1 '}')"
check_match "claim: no tail -> bad_request" "^\(error\) bad_request " "$(ev claim 1 "$U:c:1" w1 5000 60000 5 1000 600000 E1 1 p)"
check_match "claim: bad publish mode -> bad_request" "^\(error\) bad_request " "$(MODE=x cl w1 5000 5 E1 "$U:c:1" 1 '}')"
check "claim: refused calls stored nothing" "0" "$(rc HEXISTS "$(bkt "$U:c:1")" 1)"

# --- ack.lua / session.lua --------------------------------------------------------------
check "session: existing epoch kept" '1) "E1" | 2) (integer) 2 | 3) (integer) 0 | 4) (integer) 0' "$(ev session 1 "$META" E2)"
check "ack: 1" "(integer) 1" "$(ev ack 1 "$META" 1)"
check "ack: 0 never decreases" "(integer) 1" "$(ev ack 1 "$META" 0)"
check "ack: beyond the last offset is clamped" "(integer) 2" "$(ev ack 1 "$META" 99)"
check "ack: other epoch changes nothing" "(integer) 2" "$(rc HSET "$META" offset 5 >/dev/null; ev ack 1 "$META" 4 E0)"
check "ack: matching epoch" "(integer) 4" "$(ev ack 1 "$META" 4 E1)"
check "ack: 10 vs 9 numerically" "(integer) 10" "$(rc HSET "$META" acked 9 offset 10 >/dev/null; ev ack 1 "$META" 10)"
check_match "ack: -1 -> bad_request" "^\(error\) bad_request " "$(ev ack 1 "$META" -1)"
check_match "ack: 1.5 -> bad_request" "^\(error\) bad_request " "$(ev ack 1 "$META" 1.5)"
check_match "ack: abc -> bad_request" "^\(error\) bad_request " "$(ev ack 1 "$META" abc)"
check_match "ack: empty -> bad_request" "^\(error\) bad_request " "$(ev ack 1 "$META" '')"
check "session: after acks" '1) "E1" | 2) (integer) 10 | 3) (integer) 10 | 4) (integer) 0' "$(ev session 1 "$META" E2)"
check "ack: unknown user -> 0, creates nothing" "(integer) 0 0" "$(ev ack 1 "$NS:{bus:0}:u:nobody:meta" 3) $(rc EXISTS "$NS:{bus:0}:u:nobody:meta")"
check "session: new user" '1) "E5" | 2) (integer) 0 | 3) (integer) 0 | 4) (integer) 0' "$(ev session 1 "$NS:{bus:0}:u:bob:meta" E5)"
check "session: same user again keeps E5" '1) "E5" | 2) (integer) 0 | 3) (integer) 0 | 4) (integer) 0' "$(ev session 1 "$NS:{bus:0}:u:bob:meta" E6)"
check "session: no ttl argument -> no expiry" "-1" "$(rc PTTL "$NS:{bus:0}:u:bob:meta")"
check "session: idle ttl given, new user" '1) "E7" | 2) (integer) 0 | 3) (integer) 0 | 4) (integer) 0' "$(ev session 1 "$NS:{bus:0}:u:carol:meta" E7 600000)"
check_match "session: ... gets the idle ttl" "^(5[0-9]{5}|600000)$" "$(rc PTTL "$NS:{bus:0}:u:carol:meta")"
rc PEXPIRE "$META" 1000000 >/dev/null
check "session: existing expiry is not changed" '1) "E1" | 2) (integer) 10 | 3) (integer) 10 | 4) (integer) 0' "$(ev session 1 "$META" E2 600000)"
check_match "session: ... still the deliver ttl" "^(9[0-9]{5}|1000000)$" "$(rc PTTL "$META")"
check_match "session: bad ttl -> bad_request" "^\(error\) bad_request " "$(ev session 1 "$META" E2 x)"
check "session: since beyond the offset -> rotated" '1) "E3" | 2) (integer) 10 | 3) (integer) 10 | 4) (integer) 1' "$(ev session 1 "$META" E3 '' E1 11)"
check "session: ... the old epoch again -> no second rotation" '1) "E3" | 2) (integer) 10 | 3) (integer) 10 | 4) (integer) 0' "$(ev session 1 "$META" E4 '' E1 11)"
check_match "session: bad since offset -> bad_request" "^\(error\) bad_request " "$(ev session 1 "$META" E2 '' E3 x)"

# --- what went over Pub/Sub -------------------------------------------------------------
sleep 0.2
kill "$SUB_PID" 2>/dev/null; wait "$SUB_PID" 2>/dev/null; SUB_PID=""
# raw SUBSCRIBE output: triples "message" CHANNEL PAYLOAD
payloads() { awk -v ch="$1" 'prev2=="message" && prev1==ch {print} {prev2=prev1; prev1=$0}' "$DIR/sub.txt"; }
# wakes: 3 joins + 1 leave + 2 resource adds (r1 r2, r3) + 1 release + 1 join
#        + ids section: 1 add + 2 joins + 1 add + 1 join = 13
check "pubsub: wake payloads are the queue, or a queue event" "" "$(payloads "$WAKE" | grep -Ev '^default( [0-9]+ [jr]( [0-9]+)+)?$')"
check "pubsub: queue events numbered 1..N, each once" "$(seq 1 "$(rc GET "$EVS")" | paste -sd' ' -)" \
  "$(payloads "$WAKE" | awk 'NF>1{print $2}' | sort -n | paste -sd' ' -)"
# bus: assigns 4112 8208 12304 36880 40976 4503599627374608, the batch of three and the two
# expiries (one payload each), publishes 4096 8192 12288,
# the batch (ONE payload: 16384 and 20480 on two lines; payloads() shows the first line of
# each), the bus:3 one (4099) and the three with a rate check (28672 36864 40960; the
# refused one published nothing)
check "pubsub: bus ids (first line of each payload)" "4112 8208 12304 36880 40976 4503599627374608 4503599627378704 4503599627390992 4096 8192 12288 16384 4099 28672 36864 40960" \
  "$(payloads "$BUS" | jq -r .id | paste -sd' ' -)"
check "pubsub: the batch's second line came once, inside its payload" "1" "$(grep -c '"id":"20480"' "$DIR/sub.txt")"
check "pubsub: bus equals outbox m" "$(rc XRANGE "$OUT" - + | awk 'p=="m"{print} {p=$0}' | head -1)" "$(payloads "$BUS" | head -1)"
check "pubsub: user channel frames" "$FRAME1|${HEAD2}2}" "$(payloads "$CH" | paste -sd'|' -)"

# --- every script is bounded: no KEYS outside its slot ------------------------------------
for f in "$LUA"/*.lua; do
  if grep -nE "redis\.call\('(KEYS|SCAN|HGETALL|SMEMBERS|LRANGE)'" "$f" >/dev/null; then
    FAILS=$((FAILS + 1)); echo "FAIL $(basename "$f"): unbounded command"
  fi
done

echo "lua_smoke: $PASSES passed, $FAILS failed (redis-server on port $PORT)"
[ "$FAILS" -eq 0 ]
