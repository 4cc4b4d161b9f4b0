#!/usr/bin/env bash
# The one command that installs what is missing, builds, and runs every test tier
# (unit, integration against real redis-server processes, end-to-end with the real
# programs). Usage: deploy/test.sh [ctest arguments, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
bash deploy/build.sh
echo "== Formatting (.clang-format)"
git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror
echo "== Lua scripts smoke check (redis-cli)"
bash tests/integration/lua_smoke.sh
echo "== CTest"
cd build
ctest --output-on-failure --timeout 900 "$@"
