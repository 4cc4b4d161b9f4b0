#!/usr/bin/env bash
# The one command that installs what is missing, builds, and runs every check, one function
# per tier, each timed:
#   setup     packages (deploy/setup.sh --test: the run command's and the tests' own)
#   build     the default build (RelWithDebInfo, -Werror) in build/
#   release   the programs in Release (-O3) in build-release/: a user's build must compile
#   format    clang-format --dry-run --Werror on every C++ file
#   lua       every Lua script loads on a real redis-server (redis-cli)
#   ctest     every CTest tier of build/ (unit, integration, e2e, chaos, js, browser)
#   asan      ASan+UBSan build in build-asan/ (built while the ctest tier runs, on idle
#             CPU only): the unit and integration tiers, and the e2e tier of build/ against
#             the sanitized programs; any sanitizer report (leak, UB, memory error) fails
#             the run
#   fuzz      libFuzzer targets (clang) in build-fuzz/, PUSHONCE_FUZZ_SECONDS each (30)
# Usage: deploy/test.sh                 everything
#        deploy/test.sh -L unit         setup, build, and only these ctest arguments
#        PUSHONCE_TIERS="asan fuzz" deploy/test.sh   only the tiers named
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

timed() {
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "== $name: done in $((SECONDS - t0)) s"
}

tier_setup() { bash deploy/setup.sh --test; }

# The bench programs are built (not run) so that they keep compiling. Line tables only
# (PUSHONCE_LINE_TABLES): stack traces keep file and line, and the test build compiles about
# a fifth faster than with full debug information. Every build compiles in unity batches
# (PUSHONCE_UNITY, on by default).
tier_build() {
  PUSHONCE_CMAKE_ARGS="-DPUSHONCE_WERROR=ON -DPUSHONCE_BENCH=ON -DPUSHONCE_LINE_TABLES=ON ${PUSHONCE_CMAKE_ARGS:-}" \
    bash deploy/build.sh
}

tier_release() {
  PUSHONCE_BUILD_DIR=build-release PUSHONCE_BUILD_TYPE=Release \
    PUSHONCE_CMAKE_ARGS="-DPUSHONCE_TESTS=OFF" \
    bash deploy/build.sh pushonce-leader pushonce-worker pushonce-gateway pushonce-bench
}

tier_format() { git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror; }

tier_lua() { bash tests/integration/lua_smoke.sh; }

# Two tests at a time (tests/CMakeLists.txt: which ones run alone and why).
tier_ctest() { (cd build && ctest -j "${PUSHONCE_JOBS:-2}" --output-on-failure --timeout 900 "$@"); }

build_asan() {
  PUSHONCE_BUILD_DIR=build-asan PUSHONCE_CMAKE_ARGS="-DPUSHONCE_SANITIZE=ON" \
    bash deploy/build.sh unit_tests integration_tests \
    pushonce-leader pushonce-worker pushonce-gateway pushonce-bench
}

# When the asan tier follows the ctest tier, its build starts with the ctest tier at the
# lowest CPU priority (SCHED_IDLE): it takes only the cycles the tests leave idle (they
# spend much of their time waiting on their processes), so the tests see the machine as
# before and the asan tier finds most of its build done. Its output goes to
# build-asan/build.log; the asan tier waits for it and shows it if it failed.
asan_build_pid=""
start_asan_build() {
  mkdir -p build-asan
  (exec chrt --idle 0 nice -n 19 bash -c "$(declare -f build_asan); build_asan") \
    >build-asan/build.log 2>&1 &
  asan_build_pid=$!
}

tier_asan() {
  if [[ -n "$asan_build_pid" ]]; then
    if ! wait "$asan_build_pid"; then
      tail -n 60 build-asan/build.log
      return 1
    fi
    tail -n 3 build-asan/build.log
  else
    build_asan
  fi
  # Leak checking is on (the default of ASan on Linux); a report makes the program exit
  # non-zero. tests/sanitizer/lsan.supp lists third-party leaks only.
  # The e2e tests check the programs, so the sanitized programs are what they need: build/'s
  # e2e_tests starts build-asan/bin's programs (PUSHONCE_TEST_BIN_DIR) and is not built a
  # second time. e2e_cluster_tests is left out here: the cluster client runs sanitized in
  # integration_cluster_tests, and the e2e cluster cases mostly wait on failovers.
  [[ -x build/tests/e2e_tests ]] || tier_build
  (cd build-asan && asan_ctest -L 'unit|integration')
  (cd build && PUSHONCE_TEST_BIN_DIR=$root/build-asan/bin PUSHONCE_TEST_SANITIZED=1 asan_ctest -L e2e -E '^e2e_cluster_tests$')
}

asan_ctest() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$root/tests/sanitizer/lsan.supp \
    ctest -j "${PUSHONCE_JOBS:-2}" --output-on-failure --timeout 1800 "$@"
}

# One fuzz target for PUSHONCE_FUZZ_SECONDS; its output goes to build-fuzz/fuzz_<target>.log
# and its exit status to build-fuzz/fuzz_<target>.status.
fuzz_one() {
  local t=$1
  # New inputs go to build-fuzz/corpus/<target>; the repo's seeds are read only.
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  local rc=0
  "build-fuzz/fuzz_$t" -max_total_time="${PUSHONCE_FUZZ_SECONDS:-30}" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$t/" \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"build-fuzz/fuzz_$t.log" 2>&1 || rc=$?
  echo "$rc" >"build-fuzz/fuzz_$t.status"
}

tier_fuzz() {
  CC=clang CXX=clang++ cmake -S tests/fuzz -B build-fuzz >/dev/null
  cmake --build build-fuzz -j "${PUSHONCE_JOBS:-2}"
  # Each target gets its full time on a core of its own: PUSHONCE_JOBS (2) run at once.
  local t failed=0 targets=(protocol publish_api jwt resume_state resp pow)
  for t in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= ${PUSHONCE_JOBS:-2})); do wait -n || true; done
    rm -f "build-fuzz/fuzz_$t.status"
    fuzz_one "$t" &
  done
  wait
  for t in "${targets[@]}"; do
    echo "-- fuzz_$t (${PUSHONCE_FUZZ_SECONDS:-30} s)"
    tail -n 12 "build-fuzz/fuzz_$t.log"
    if [ "$(cat "build-fuzz/fuzz_$t.status" 2>/dev/null)" != 0 ]; then
      echo "fuzz_$t found a crash: build-fuzz/crashes/$t/"
      failed=1
    fi
  done
  return "$failed"
}

t_all=$SECONDS
if (($#)); then
  timed setup tier_setup
  timed build tier_build
  timed ctest tier_ctest "$@"
else
  tiers=" ${PUSHONCE_TIERS:-setup build release format lua ctest asan fuzz} "
  for tier in $tiers; do
    if [[ "$tier" == ctest && "$tiers" == *" asan "* ]]; then start_asan_build; fi
    timed "$tier" "tier_$tier"
  done
fi
echo "== all tiers passed in $((SECONDS - t_all)) s"
