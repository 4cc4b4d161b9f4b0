#!/usr/bin/env bash
# Installs what pushonce needs on Debian 12, in three sets. Idempotent; run as root (or with
# sudo available). Skips apt when all packages are present.
#   deploy/setup.sh            build and run (the run command, deploy/run.sh): compilers,
#                              cmake, the -dev libraries and redis-server; nothing else
#   deploy/setup.sh --test     the test command (deploy/test.sh): that, and what the tests
#                              use: clang and libFuzzer, clang-format, nginx, chromium and
#                              Node.js, promtool, redis-sentinel, lintian, help2man; the
#                              system redis-server, redis-sentinel, nginx and prometheus it
#                              starts are stopped (the tests run private ones)
#   PUSHONCE_SETUP_EXTRA="PKG..." deploy/setup.sh   the build and run set and these (run.sh
#                              --nginx adds nginx)
#   deploy/setup.sh --runtime  a production host: only the shared libraries the installed
#                              programs load (RUNTIME_PACKAGES below); no service is
#                              started or stopped
set -euo pipefail

# The libraries pushonce-leader, -worker, -gateway and -bench link (Debian 12 names).
RUNTIME_PACKAGES=(
  libhiredis0.14 libfmt9 libssl3 libjwt0
  libboost-json1.81.0 libboost-url1.81.0 libboost-program-options1.81.0
  libstdc++6 ca-certificates
)

runtime=0 test=0
case "${1:-}" in
  --runtime) runtime=1 ;;
  --test) test=1 ;;
  "") ;;
  -h | --help)
    sed -n '2,15p' "$0"
    exit 0
    ;;
  *)
    echo "setup.sh: unknown option '$1' (see --help)" >&2
    exit 2
    ;;
esac

if ((runtime)); then
  packages=("${RUNTIME_PACKAGES[@]}")
else
  # building (tests included: deploy/build.sh configures them, doctest is headers only) and
  # running: about 140 MB to download on a bare Debian 12 (155 packages)
  packages=(
    cmake g++ make pkg-config git ca-certificates
    libhiredis-dev libfmt-dev doctest-dev libssl-dev
    libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-program-options1.81-dev
    libjwt-dev redis-server redis-tools openssl
  )
  if ((test)); then
    packages+=(
      redis-sentinel jq curl clang-format
      clang libclang-rt-14-dev
      chromium
      nginx systemd openssl
      python3-jwt python3-cryptography # the checkout examples' test (examples/checkout)
      prometheus # promtool: the test command checks deploy/prometheus/alerts.yml
      dpkg-dev file help2man lintian # deploy/package.sh and its test (tests/deploy/)
    )
    # Node.js runs the JS client's unit tests and the browser tests (Debian 12 ships 18.x;
    # a newer one already installed is used as it is).
    command -v node >/dev/null 2>&1 || packages+=(nodejs npm)
  fi
  # shellcheck disable=SC2206
  packages+=(${PUSHONCE_SETUP_EXTRA:-})
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${#missing[@]} packages with apt (a few minutes on a bare machine): ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  if ((runtime)); then
    echo "setup: runtime libraries installed; services left as they were"
    exit 0
  fi
  # Debian starts a system redis-server on 6379 (and redis-sentinel on 26379, prometheus on
  # 9090); pushonce's tests run their own private ones.
  for unit in redis-server redis-sentinel prometheus; do
    if command -v systemctl >/dev/null && systemctl is-active --quiet "$unit" 2>/dev/null; then
      $sudo systemctl stop "$unit" || true
    fi
  done
  # Likewise nginx: the tests and `deploy/run.sh --nginx` run private ones (own prefix and
  # config); a system nginx left on port 80 by the package is stopped, not used.
  if command -v systemctl >/dev/null && systemctl is-active --quiet nginx 2>/dev/null; then
    $sudo systemctl stop nginx || true
  elif [ -s /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
    $sudo nginx -s quit 2>/dev/null || true
  fi
else
  echo "setup: all packages present"
fi
((test)) || exit 0

# playwright-core drives Debian's chromium (never `npx playwright install`: downloads of
# browser builds are blocked); installed from the lock file.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$here/tests/browser/node_modules/playwright-core" ]; then
  echo "setup: npm ci in tests/browser"
  (cd "$here/tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
fi
# The checkout examples (examples/checkout, docs/operations.md) verify admission tokens with
# `jose`; the e2e tests run them. Installed from the lock file.
if [ ! -d "$here/examples/checkout/node_modules/jose" ]; then
  echo "setup: npm ci in examples/checkout"
  (cd "$here/examples/checkout" && npm ci --no-audit --no-fund --loglevel=error)
fi
