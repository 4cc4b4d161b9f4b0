#!/usr/bin/env bash
# Token refresh under load (docs/benchmarks.md "Token refresh"): a private redis-server, a
# leader, a worker and one gateway (JWT secret, --jwt-leeway LEEWAY, per-address limits
# off), then tests/bench/token_refresh.mjs: N browser clients with TTL-second tokens that
# refresh on their own, RATE messages/s to random users for DURATION_S seconds. Prints its
# JSON (refreshes, closes by reason, lost and duplicated messages) plus the gateway's RSS.
# Exit 1 when a session was closed for expiry or a message was lost or duplicated.
#   tests/bench/bench_token_refresh.sh BIN_DIR            (BIN_DIR: build/bin)
# Settings by environment [default]: N [10000] TTL [60] DURATION_S [600] RATE [200]
#   LEEWAY [5]
set -euo pipefail
# shellcheck source=lib/deployment.sh disable=SC1091
. "$(dirname "$0")/lib/deployment.sh"
deployment_init "${1:?usage: bench_token_refresh.sh BIN_DIR}" bench-refresh
N=${N:-10000} TTL=${TTL:-60} DURATION_S=${DURATION_S:-600} RATE=${RATE:-200} LEEWAY=${LEEWAY:-5}
export PUSHONCE_NAMESPACE=refreshbench
export PUSHONCE_JWT_SECRET=${PUSHONCE_JWT_SECRET:-bench-refresh-secret-0123456789abcdef}

deployment_redis
deployment_leader
deployment_workers 1
deployment_gateways 1 --max-connections-per-ip 0 --max-sessions-per-ip 0 --jwt-leeway "$LEEWAY"
deployment_ready
gw=${GATEWAY_PIDS[0]}
node --experimental-websocket --no-warnings "$(dirname "$0")/token_refresh.mjs" \
  --gateway "$GATEWAY_LIST" --sessions "$N" --ttl "$TTL" --duration "$DURATION_S" --rate "$RATE" \
  --progress >"$DEPLOY_DIR/refresh.json" &
tool=$!
DEPLOY_PIDS+=("$tool")
rc=0
wait "$tool" || rc=$?
rss=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$gw/status")
metric() { curl -s -m 5 "http://$GATEWAY_LIST/metrics" | awk -v m="$1" 'index($1, m "{") == 1 {print $2; exit}'; }
jq -c --argjson rss "$rss" --argjson refreshes "$(metric pushonce_gateway_token_refreshes_total)" \
  --argjson expiry "$(metric pushonce_gateway_token_expiry_closes_total)" \
  '. + {gateway_rss_kb: $rss, gateway_refreshes: $refreshes, gateway_expiry_closes: $expiry}' \
  "$DEPLOY_DIR/refresh.json"
exit "$rc"
