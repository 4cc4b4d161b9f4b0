#!/usr/bin/env bash
# Every command-line option README.md and docs/operations.md name (`--word`) exists: in the
# --help of a pushonce program, of a deploy/ script, or in the short list below of other
# tools' options the docs quote (redis-server, systemctl, chrt). A renamed or removed
# option fails this check until the docs follow.
#   tests/docs/check_options.sh BIN_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=${1:-$here/build/bin}
known=$(mktemp)
trap 'rm -f "$known"' EXIT
for p in pushonce-leader pushonce-worker pushonce-gateway pushonce-bench; do
  [ -x "$bin_dir/$p" ] || { echo "FAIL: $bin_dir/$p missing (build it first)"; exit 1; }
  "$bin_dir/$p" --help >>"$known" 2>&1
done
for s in install.sh run.sh setup.sh test.sh cluster.sh build.sh package.sh; do
  sed -n '1,40p' "$here/deploy/$s" >>"$known"
done
# Other tools' options the docs quote.
cat >>"$known" <<'OTHERS'
systemctl enable --now
apt-get --no-install-recommends -o Dpkg::Options::=--force-confold
dpkg --purge --force-confold
sysctl --system
chrt --idle
node --test
redis-server --tls-port --tls-cert-file --tls-key-file --tls-ca-cert-file --tls-cluster
  --tls-replication --port --appendonly --dir --dbfilename
redis-cli --cluster --rdb
the --redis-tls-* family: --redis-tls
OTHERS
missing=0
for doc in README.md docs/operations.md; do
  for opt in $(grep -oh -- '--[a-z][a-z0-9-]*[a-z0-9]' "$here/$doc" | sort -u); do
    if ! grep -qE -- "(^|[^a-z0-9-])$opt([^a-z0-9-]|$)" "$known"; then
      echo "FAIL: $doc names $opt, which no program or script offers"
      missing=1
    fi
  done
done
((missing)) && exit 1
echo "docs options: every option named in README.md and docs/operations.md exists"
