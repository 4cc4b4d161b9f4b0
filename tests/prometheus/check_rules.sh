#!/usr/bin/env bash
# deploy/prometheus/alerts.yml is valid (promtool check rules) and each alert fires on the
# series that cause it (promtool test rules tests/prometheus/alerts_test.yml).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
command -v promtool >/dev/null || { echo "promtool missing (deploy/setup.sh installs prometheus)"; exit 1; }
promtool check rules "$here/deploy/prometheus/alerts.yml"
cd "$here/tests/prometheus"
promtool test rules alerts_test.yml
# the dashboard is one JSON object with panels
jq -e '.panels | length > 0' "$here/deploy/grafana/pushonce-drop.json" >/dev/null ||
  { echo "FAIL: deploy/grafana/pushonce-drop.json is not a dashboard"; exit 1; }
