#!/usr/bin/env bash
# docs/operations.md "Backup and restore", followed step by step on a private redis-server
# with AOF on (as production runs it): the real programs write queues, assignments and
# inbox messages; a backup is taken both documented ways (the AOF directory after
# BGREWRITEAOF, and an RDB snapshot after BGSAVE); Redis is lost (stopped, its directory
# wiped); each backup is restored as documented; every key must be back with its value,
# and the system must serve again (a new message is delivered at the next offset).
#   tests/deploy/backup_restore.sh BIN_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$here/build/bin}" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -f "$work/port" ] && redis-cli -p "$(cat "$work/port")" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

port=$((20000 + RANDOM % 10000))
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
echo "$port" >"$work/port"
data="$work/redis"
mkdir -p "$data"
export PUSHONCE_REDIS="redis://127.0.0.1:$port" PUSHONCE_NAMESPACE=backup PUSHONCE_LOG_LEVEL=warn
cli() { redis-cli -p "$port" "$@"; }

# Redis as machine A runs it: AOF on, appendfsync everysec, its own directory.
start_redis() { # [appendonly yes|no]
  redis-server --port "$port" --bind 127.0.0.1 --dir "$data" --appendonly "${1:-yes}" \
    --appendfsync everysec --daemonize yes --logfile "$work/redis.log" --pidfile "$work/redis.pid"
  for _ in $(seq 100); do
    [ "$(cli ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  cat "$work/redis.log"
  fail "redis-server did not start"
}
stop_redis() { # as systemctl stop redis-server does: SIGTERM, then wait
  local pid
  pid=$(cat "$work/redis.pid")
  kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  fail "redis-server did not stop"
}
wait_info() { # FIELD VALUE: poll INFO persistence until FIELD:VALUE
  for _ in $(seq 200); do
    cli info persistence | tr -d '\r' | grep -q "^$1:$2\$" && return 0
    sleep 0.1
  done
  fail "INFO persistence never showed $1:$2"
}
# Every key with its DUMP. Keys that expire within a minute (a batch's claim lease, a
# sweep lock) are left out: they are gone by the time any restore is done, backup or not.
snapshot() {
  cli --scan --pattern 'backup*' | sort | while read -r k; do
    ttl=$(cli pttl "$k")
    # -2: gone since the scan listed it (a restored key whose time had passed, as NS:layout's
    # 10 s can between the backup and the restore: SCAN may still list it)
    [ "$ttl" -eq -2 ] && continue
    [ "$ttl" -ge 0 ] && [ "$ttl" -lt 60000 ] && continue
    printf '%s %s\n' "$k" "$(cli --no-raw dump "$k" | sha1sum | cut -c1-12)"
  done
}
inbox_len() { # USER
  local k
  k=$(cli --scan --pattern "backup*u:$1:inbox" | head -1)
  [ -n "$k" ] && cli xlen "$k" || echo 0
}
serve_once() { # USER: a message published now reaches the user's inbox; prints the XLEN
  local user=$1 before after
  before=$(inbox_len "$user")
  "$bin/pushonce-worker" --id w-restore >"$work/worker2.log" 2>&1 &
  local w=$!
  pids+=("$w")
  "$bin/pushonce-leader" publish "$user" '{"after":"restore"}' >/dev/null
  for _ in $(seq 100); do
    after=$(inbox_len "$user")
    [ "${after:-0}" -gt "${before:-0}" ] && break
    sleep 0.1
  done
  kill "$w"
  wait "$w" 2>/dev/null || true
  [ "${after:-0}" -gt "${before:-0}" ] && echo "served: inbox $before -> $after" || echo "not served: inbox $before -> $after"
}

# 1. The system writes: a queue, resources, assignments, messages in inboxes.
start_redis yes
"$bin/pushonce-leader" run --id l-backup >"$work/leader.log" 2>&1 &
pids+=($!)
"$bin/pushonce-worker" --id w-backup >"$work/worker.log" 2>&1 &
worker=$!
pids+=("$worker")
sleep 1
for u in u1 u2 u3 u4 u5; do "$bin/pushonce-leader" join "$u" >/dev/null; done
"$bin/pushonce-leader" resource add r1 r2 r3 >/dev/null
for i in $(seq 20); do "$bin/pushonce-leader" publish "u$((i % 5 + 1))" "{\"n\":$i}" >/dev/null; done
inbox_keys=0
for _ in $(seq 100); do
  inbox_keys=$(cli --scan --pattern 'backup*:inbox' | wc -l)
  [ "$inbox_keys" -ge 5 ] && break
  sleep 0.1
done
[ "$inbox_keys" -ge 5 ] || fail "the programs did not deliver (inboxes: $inbox_keys)"
# Quiet: the programs stop and their heartbeat keys expire (3 s), so the data set holds
# still while it is compared.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=()
for _ in $(seq 60); do
  [ -z "$(cli --scan --pattern 'backup:worker:*')$(cli --scan --pattern 'backup:gateway:*')" ] && break
  sleep 0.1
done
sleep 3.5 # the layout record and any heartbeat key left expire
snapshot >"$work/before.txt"
keys=$(wc -l <"$work/before.txt")
[ "$keys" -ge 10 ] || fail "only $keys keys written"
echo "backup_restore: $keys keys written"

# 2a. Backup, the AOF way: BGREWRITEAOF, wait for it, copy appendonlydir/.
cli bgrewriteaof >/dev/null
wait_info aof_rewrite_in_progress 0
wait_info aof_rewrite_scheduled 0
dirname=$(cli config get appenddirname | tail -1)
cp -a "$data/$dirname" "$work/backup-aof"
# 2b. Backup, the RDB way: BGSAVE, wait for it, copy dump.rdb.
cli bgsave >/dev/null 2>&1 || true
wait_info rdb_bgsave_in_progress 0
wait_info rdb_last_bgsave_status ok
cp "$data/dump.rdb" "$work/backup.rdb"

# 3. Redis is lost.
stop_redis
rm -rf "${data:?}"/*

# 4a. Restore the AOF backup: Redis stopped, appendonlydir/ put back, start (AOF on).
cp -a "$work/backup-aof" "$data/$dirname"
start_redis yes
snapshot >"$work/after-aof.txt"
diff "$work/before.txt" "$work/after-aof.txt" >/dev/null || {
  diff "$work/before.txt" "$work/after-aof.txt" | head -20
  fail "keys differ after restoring the AOF backup"
}
echo "backup_restore: AOF backup restored, $keys keys back"
n=$(serve_once u1)
[[ "$n" == served* ]] || fail "the system did not serve after the AOF restore ($n)"
echo "backup_restore: $n"

# What the restore must not do: dump.rdb put back into an empty directory while Redis
# starts with appendonly yes loads the (new, empty) AOF instead, and its next shutdown
# writes an empty dump.rdb over the backup's copy.
stop_redis
rm -rf "${data:?}"/*
cp "$work/backup.rdb" "$data/dump.rdb"
start_redis yes
[ "$(cli dbsize)" = 0 ] || fail "expected the trap: an RDB under appendonly yes loads nothing"
echo "backup_restore: (an RDB put back under appendonly yes loads 0 keys, as documented)"

# 4b. Restore the RDB backup: Redis stopped, data dir emptied (an AOF left there would be
# loaded instead of the RDB), dump.rdb put back, start with appendonly no, then turn AOF on
# with CONFIG SET (it writes a new AOF from what was loaded) and wait for that rewrite.
stop_redis
rm -rf "${data:?}"/*
cp "$work/backup.rdb" "$data/dump.rdb"
start_redis no
cli config set appendonly yes >/dev/null
wait_info aof_rewrite_in_progress 0
wait_info aof_rewrite_scheduled 0
wait_info aof_enabled 1
snapshot >"$work/after-rdb.txt"
diff "$work/before.txt" "$work/after-rdb.txt" >/dev/null || {
  diff "$work/before.txt" "$work/after-rdb.txt" | head -20
  fail "keys differ after restoring the RDB backup"
}
# ... and the data survives a restart with AOF on (the step the old procedure lost).
stop_redis
start_redis yes
snapshot >"$work/after-restart.txt"
diff "$work/before.txt" "$work/after-restart.txt" >/dev/null || fail "keys lost in the restart after the RDB restore"
echo "backup_restore: RDB backup restored, $keys keys back, kept across a restart with AOF on"
n=$(serve_once u2)
[[ "$n" == served* ]] || fail "the system did not serve after the RDB restore ($n)"
echo "backup_restore: $n"
echo "backup_restore: OK"
