#!/usr/bin/env bash
# Starts a local Redis Cluster for development: M masters with R replicas each (default 3
# and 1), every node a redis-server on a free loopback port with its own directory under
# DIR, joined with `redis-cli --cluster create`. Prints the seed URL (for --redis-cluster /
# PUSHONCE_REDIS_CLUSTER) on its last line once cluster_state is ok on every node.
#
#   deploy/cluster.sh start DIR [--masters M] [--replicas R] [--base-port P]
#   deploy/cluster.sh stop DIR
set -euo pipefail

usage() { sed -n '2,8p' "$0"; }
(($# >= 2)) || { usage >&2; exit 2; }
action=$1 dir=$2
shift 2
masters=3 replicas=1 base=7000
while (($#)); do
  case "$1" in
    --masters) masters=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

stop_nodes() {
  [ -f "$dir/ports" ] || return 0
  while read -r p; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done <"$dir/ports"
  rm -f "$dir/ports"
}

case "$action" in
  stop) stop_nodes; exit 0 ;;
  start) ;;
  *) echo "error: unknown action $action" >&2; usage >&2; exit 2 ;;
esac

command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  { echo "error: redis-server and redis-cli are needed (deploy/setup.sh)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stop_nodes

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=() p=$base
for _ in $(seq $((masters * (1 + replicas)))); do
  while ! port_free "$p" || ! port_free $((p + 10000)); do p=$((p + 1)); done  # +10000: the bus
  ports+=("$p")
  p=$((p + 1))
done
printf '%s\n' "${ports[@]}" >"$dir/ports"

for p in "${ports[@]}"; do
  mkdir -p "$dir/$p"
  rm -rf "$dir/$p/nodes.conf" "$dir/$p"/*.rdb "$dir/$p"/appendonly*  # appendonlydir/ too
  redis-server --port "$p" --bind 127.0.0.1 --dir "$dir/$p" --daemonize yes \
    --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
    --appendonly yes --appendfsync everysec --save '' --active-expire-effort 10
done
# (active-expire-effort 10: on a cluster every claim record is a key with its own expiry,
# and at the default effort Redis's active expiry falls behind them; docs/operations.md)
for p in "${ports[@]}"; do
  for _ in $(seq 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

nodes=()
for p in "${ports[@]}"; do nodes+=("127.0.0.1:$p"); done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log"

ok() {
  for p in "${ports[@]}"; do
    redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || return 1
    [ "$(redis-cli -p "$p" cluster nodes | grep -c slave)" -eq $((masters * replicas)) ] || return 1
  done
}
for _ in $(seq 300); do ok && break; sleep 0.1; done
ok || { echo "error: the cluster did not become ok (see $dir/*/redis.log)" >&2; exit 1; }

url="redis://$(IFS=,; echo "${nodes[*]}")"
echo "$url" >"$dir/url"
echo "$url"
