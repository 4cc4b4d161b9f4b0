# shellcheck shell=bash disable=SC2034
# (SC2034: the variables this file sets are read by the script that sources it.)
# A private pushonce deployment on this machine for the benches in tests/bench: Redis (one
# redis-server, or a Redis Cluster), a leader, workers and gateways, each on a free loopback
# port with its files under a temp dir of its own, all stopped (by PID) when the sourcing
# script exits. Sourced, not run:
#
#   . "$(dirname "$0")/lib/deployment.sh"
#   deployment_init BIN_DIR NAME          # temp dir /tmp/NAME-XXXXXX, the EXIT trap
#   deployment_redis                      # single, or CLUSTER=N; exports PUSHONCE_REDIS*
#   deployment_leader
#   deployment_workers N                  # N more workers (ids w1, w2, ...)
#   deployment_gateways N [OPTION...]     # N more gateways (--dev-auth), extra options
#   deployment_ready                      # every gateway ready, every worker registered
#
# Settings by environment [default]:
#   CLUSTER [0: one redis-server; N: a Redis Cluster of N masters, slots split evenly]
#   REPLICAS [0; 1: a replica per master, replication in sync before anything starts]
#   REDIS_ARGS [extra redis-server options, every node]
#   PUSHONCE_BUS_SHARDS, PUSHONCE_NAMESPACE, ... [passed to every program as they are]
# After deployment_redis: REDIS_MASTER_PORTS, REDIS_REPLICA_PORTS, REDIS_MASTER_PIDS and
# REDIS_REPLICA_PIDS (arrays); after deployment_gateways: GATEWAY_LIST and
# GATEWAY_PID_LIST (comma-separated, as pushonce-bench --gateway and --pids take them),
# GATEWAY_PORTS and GATEWAY_PIDS (arrays); WORKER_PIDS (array) after deployment_workers.
# Every program logs into DEPLOY_DIR (leader.log, worker-I.log, gateway-I.log, redis-P/).
# Also for the scripts: rcli PORT ARGS... (redis-cli), cpu_ticks PID... (their utime +
# stime), ticks_us_per_message TICKS0 TICKS1 MESSAGES, free_port; a process a script starts
# itself goes into DEPLOY_PIDS to be stopped with the rest.

DEPLOY_PIDS=()
REDIS_MASTER_PORTS=() REDIS_REPLICA_PORTS=() REDIS_MASTER_PIDS=() REDIS_REPLICA_PIDS=()
GATEWAY_PORTS=() GATEWAY_PIDS=() WORKER_PIDS=()
GATEWAY_LIST="" GATEWAY_PID_LIST=""

# Stops every process started here, newest first: SIGTERM, up to 10 s to exit, then
# SIGKILL; then removes the temp dir.
deployment_stop() {
  local i p
  for ((i = ${#DEPLOY_PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${DEPLOY_PIDS[$i]}" 2>/dev/null || true; done
  for p in "${DEPLOY_PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  DEPLOY_PIDS=()
  [[ -n "${DEPLOY_DIR:-}" ]] && rm -rf "$DEPLOY_DIR"
  return 0
}

deployment_init() {
  DEPLOY_BIN="$(cd "${1:?deployment_init BIN_DIR NAME}" && pwd)"
  DEPLOY_DIR="$(mktemp -d "/tmp/${2:?deployment_init BIN_DIR NAME}-XXXXXX")"
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  trap deployment_stop EXIT
  # A signal ends the script through its EXIT trap (a pipe closed by a reader, such as
  # `| head`, too): nothing it started outlives it.
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 141' PIPE
  trap 'exit 143' TERM
  export PUSHONCE_LOG_LEVEL=${PUSHONCE_LOG_LEVEL:-warn}
  export PUSHONCE_API_KEY=${PUSHONCE_API_KEY:-bench-$RANDOM$RANDOM}
}

# Starts a process in the background and keeps its PID for deployment_stop.
deployment_spawn() {
  local log=$1
  shift
  "$@" >>"$log" 2>&1 &
  DEPLOY_PIDS+=($!)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# redis-cli against a node; every other argument goes to it.
rcli() {
  local port=$1
  shift
  redis-cli -p "$port" "$@"
}

# utime + stime of the processes, in clock ticks (/proc/PID/stat fields 14 and 15; the text
# after the last ')' so that a process title with spaces cannot shift them).
cpu_ticks() {
  local p stat sum=0 f
  for p in "$@"; do
    stat="$(cat "/proc/$p/stat" 2>/dev/null)" || continue  # (a process killed on purpose)
    read -ra f <<<"${stat##*) }"
    sum=$((sum + f[11] + f[12]))
  done
  echo "$sum"
}

# µs of CPU per message from two tick counts and a message count ("null" for no messages).
ticks_us_per_message() {
  local hz
  hz="$(getconf CLK_TCK)"
  python3 -c 'import sys; d, hz, n = map(float, sys.argv[1:]); print(round(d * 1e6 / hz / n, 2) if n else "null")' \
    "$(($2 - $1))" "$hz" "$3"
}

# One redis-server, not daemonized (its PID is ours to stop and to read CPU from), in a dir
# of its own; sets REDIS_NODE_PORT and REDIS_NODE_PID.
deployment_redis_node() {
  local port node_dir
  port="$(free_port)"
  node_dir="$DEPLOY_DIR/redis-$port"
  mkdir -p "$node_dir"
  local args=(--port "$port" --bind 127.0.0.1 --dir "$node_dir" --save '' --appendonly no
    --logfile "$node_dir/redis.log")
  if ((CLUSTER > 0)); then
    args+=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
      --cluster-port "$(free_port)")
  fi
  # shellcheck disable=SC2086
  redis-server "${args[@]}" ${REDIS_ARGS:-} >/dev/null 2>&1 &
  DEPLOY_PIDS+=($!)
  REDIS_NODE_PID=$! REDIS_NODE_PORT=$port
  for _ in $(seq 1 50); do rcli "$port" PING >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "error: redis-server on port $port did not start ($node_dir/redis.log)" >&2
  return 1
}

deployment_redis() {
  CLUSTER=${CLUSTER:-0} REPLICAS=${REPLICAS:-0}
  [[ "$CLUSTER" =~ ^[0-9]+$ && "$REPLICAS" =~ ^[01]$ ]] ||
    { echo "error: CLUSTER is a number of masters (0: one redis-server), REPLICAS 0 or 1" >&2; return 2; }
  local ports=() pids=() i
  for ((i = 0; i < (CLUSTER > 0 ? CLUSTER * (1 + REPLICAS) : 1); i++)); do
    deployment_redis_node
    ports+=("$REDIS_NODE_PORT")
    pids+=("$REDIS_NODE_PID")
  done
  if ((CLUSTER == 0)); then
    REDIS_MASTER_PORTS=("${ports[0]}") REDIS_MASTER_PIDS=("${pids[0]}")
    unset PUSHONCE_REDIS_CLUSTER
    export PUSHONCE_REDIS="redis://127.0.0.1:${ports[0]}"
    return 0
  fi
  cluster_join ports
  cluster_wait_ok "${ports[@]}"
  # The roles as the cluster has them (redis-cli may pair nodes other than in the order given).
  for i in "${!ports[@]}"; do
    if [[ "$(rcli "${ports[$i]}" ROLE)" == master* ]]; then
      REDIS_MASTER_PORTS+=("${ports[$i]}") REDIS_MASTER_PIDS+=("${pids[$i]}")
    else
      REDIS_REPLICA_PORTS+=("${ports[$i]}") REDIS_REPLICA_PIDS+=("${pids[$i]}")
    fi
  done
  local seeds=()
  for i in "${REDIS_MASTER_PORTS[@]}"; do seeds+=("127.0.0.1:$i"); done
  unset PUSHONCE_REDIS
  PUSHONCE_REDIS_CLUSTER="redis://$(IFS=,; echo "${seeds[*]}")"
  export PUSHONCE_REDIS_CLUSTER
}

# Forms the cluster of the nodes named by the array $1: redis-cli --cluster create from 3
# masters up (it refuses fewer); for 1 or 2 masters the slots are assigned by hand
# (CLUSTER ADDSLOTSRANGE), the nodes met and the replicas attached.
cluster_join() {
  local -n nodes=$1
  local masters=$CLUSTER i
  if ((masters >= 3)); then
    local addrs=()
    for i in "${nodes[@]}"; do addrs+=("127.0.0.1:$i"); done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes \
      >"$DEPLOY_DIR/cluster-create.log" 2>&1 ||
      { echo "error: redis-cli --cluster create failed ($DEPLOY_DIR/cluster-create.log)" >&2; return 1; }
    return 0
  fi
  local per=$((16384 / masters)) first last
  for ((i = 0; i < masters; i++)); do
    first=$((i * per)) last=$((i == masters - 1 ? 16383 : (i + 1) * per - 1))
    rcli "${nodes[$i]}" CLUSTER SET-CONFIG-EPOCH $((i + 1)) >/dev/null
    rcli "${nodes[$i]}" CLUSTER ADDSLOTSRANGE "$first" "$last" >/dev/null
  done
  local bus
  bus="$(rcli "${nodes[0]}" CONFIG GET cluster-port | tail -n 1)"  # not port + 10000 here
  for ((i = 1; i < ${#nodes[@]}; i++)); do
    rcli "${nodes[$i]}" CLUSTER MEET 127.0.0.1 "${nodes[0]}" "$bus" >/dev/null
  done
  local known
  for _ in $(seq 1 100); do
    known="$(rcli "${nodes[0]}" CLUSTER INFO | tr -d '\r' | awk -F: '$1 == "cluster_known_nodes" {print $2}')"
    [[ "$known" == "${#nodes[@]}" ]] && break
    sleep 0.1
  done
  for ((i = masters; i < ${#nodes[@]}; i++)); do
    local master_id
    master_id="$(rcli "${nodes[$((i - masters))]}" CLUSTER MYID)"
    for _ in $(seq 1 50); do
      [[ "$(rcli "${nodes[$i]}" CLUSTER REPLICATE "$master_id" 2>&1)" == OK ]] && break
      sleep 0.1
    done
  done
}

# Every node says cluster_state:ok and every replica's link to its master is up and synced.
cluster_wait_ok() {
  local p ok info
  for _ in $(seq 1 300); do
    ok=1
    for p in "$@"; do
      [[ "$(rcli "$p" CLUSTER INFO)" == *cluster_state:ok* ]] || { ok=0; break; }
      if [[ "$(rcli "$p" ROLE)" == slave* ]]; then
        info="$(rcli "$p" INFO replication | tr -d '\r')"
        [[ "$info" == *master_link_status:up* && "$info" == *master_sync_in_progress:0* ]] ||
          { ok=0; break; }
      fi
    done
    ((ok)) && [[ "$(rcli "$1" CLUSTER NODES | grep -c slave)" -eq $((CLUSTER * REPLICAS)) ]] && return 0
    sleep 0.1
  done
  echo "error: the cluster did not become ok with its replicas in sync ($DEPLOY_DIR/redis-*/redis.log)" >&2
  return 1
}

deployment_leader() {
  deployment_spawn "$DEPLOY_DIR/leader.log" "$DEPLOY_BIN/pushonce-leader" run
}

deployment_workers() {
  local i first=$((${#WORKER_PIDS[@]} + 1))
  for ((i = first; i < first + ${1:?deployment_workers N}; i++)); do
    deployment_spawn "$DEPLOY_DIR/worker-$i.log" "$DEPLOY_BIN/pushonce-worker" --id "w$i"
    WORKER_PIDS+=("${DEPLOY_PIDS[-1]}")
  done
}

deployment_gateways() {
  local n=${1:?deployment_gateways N [OPTION...]} i port first
  shift
  first=$((${#GATEWAY_PIDS[@]} + 1))
  for ((i = first; i < first + n; i++)); do
    port="$(free_port)"
    deployment_spawn "$DEPLOY_DIR/gateway-$i.log" "$DEPLOY_BIN/pushonce-gateway" \
      --listen "127.0.0.1:$port" --dev-auth --id "g$i" "$@"
    GATEWAY_PIDS+=("${DEPLOY_PIDS[-1]}")
    GATEWAY_PORTS+=("$port")
  done
  local list=()
  for port in "${GATEWAY_PORTS[@]}"; do list+=("127.0.0.1:$port"); done
  GATEWAY_LIST="$(IFS=,; echo "${list[*]}")"
  GATEWAY_PID_LIST="$(IFS=,; echo "${GATEWAY_PIDS[*]}")"
}

# Waits for /readyz of every gateway and for the workers started to be registered with
# the leader (when one runs); an error if either is not so within 10 s.
deployment_ready() {
  local port n
  for port in "${GATEWAY_PORTS[@]}"; do
    for _ in $(seq 1 100); do curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.1; done
    curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$port/readyz" ||
      { echo "error: gateway on port $port is not ready ($DEPLOY_DIR/gateway-*.log)" >&2; return 1; }
  done
  ((${#WORKER_PIDS[@]} > 0)) || return 0
  for _ in $(seq 1 100); do
    n="$("$DEPLOY_BIN/pushonce-leader" status --json 2>/dev/null | jq '.workers | length' 2>/dev/null || echo 0)"
    [[ "$n" -ge "${#WORKER_PIDS[@]}" ]] && return 0
    sleep 0.1
  done
  echo "error: $n of ${#WORKER_PIDS[@]} workers registered ($DEPLOY_DIR/worker-*.log)" >&2
  return 1
}
