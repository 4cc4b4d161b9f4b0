#!/usr/bin/env bash
# The one command that installs what is missing, builds, and runs every check, one function
# per tier, each timed:
#   setup     packages (deploy/setup.sh --test: the run command's and the tests' own)
#   build     build/: the programs in Release (-O3, as a user's and the package's build),
#             with line tables and -Werror, and every test program (their own code at -O0)
#   format    clang-format --dry-run --Werror on every C++ file
#   lua       every Lua script loads on a real redis-server (redis-cli)
#   ctest     every CTest tier of build/ (unit, integration, e2e, chaos, js, browser, deploy:
#             the Debian package of build/, installed, upgraded and purged, nginx)
#   asan      ASan+UBSan build in build-asan/: the unit and integration tiers, and the e2e
#             tier of build/ against the sanitized programs; any sanitizer report (leak, UB,
#             memory error) fails the run
#   fuzz      libFuzzer targets (clang) in build-fuzz/, PUSHONCE_FUZZ_SECONDS each (30)
#   benches   the benchmark programs (tests/bench/) compile in build/
# While the ctest tier runs, the builds of the asan, fuzz and benches tiers run on the CPU its
# tests leave idle (SCHED_IDLE: the tests see the machine as before); each of those tiers
# then waits for its build, or builds itself when run without the ctest tier.
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

# Line tables only (PUSHONCE_LINE_TABLES): stack traces keep file and line, and the build
# compiles about a fifth faster than with full debug information. Every build compiles in
# unity batches (PUSHONCE_UNITY, on by default). PUSHONCE_PACKAGE: the package test
# (ctest -L deploy) packages this build (deploy/package.sh --build-dir build).
tier_build() {
  PUSHONCE_BUILD_TYPE=Release \
    PUSHONCE_CMAKE_ARGS="-DPUSHONCE_WERROR=ON -DPUSHONCE_BENCH=ON -DPUSHONCE_LINE_TABLES=ON -DPUSHONCE_PACKAGE=ON ${PUSHONCE_CMAKE_ARGS:-}" \
    bash deploy/build.sh pushonce_test_programs
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

build_fuzz() {
  CC=clang CXX=clang++ cmake -S tests/fuzz -B build-fuzz >/dev/null
  cmake --build build-fuzz -j "${PUSHONCE_JOBS:-2}"
}

build_benches() { cmake --build build -j "${PUSHONCE_JOBS:-2}" --target pushonce_benches; }

# The builds of the tiers after ctest, one after the other, started with the ctest tier at
# the lowest CPU priority: they take only the cycles the tests leave idle (the tests spend
# much of their time waiting on their processes), so the tests see the machine as before
# and the later tiers find most of their builds done. Each build's output goes to
# <dir>/<name>.log and its exit status to <dir>/<name>.status.
background_pid=""
start_background_builds() {
  local name script="" log status
  for name in "$@"; do
    case $name in
      asan) log=build-asan/build.log status=build-asan/build.status ;;
      fuzz) log=build-fuzz/build.log status=build-fuzz/build.status ;;
      benches) log=build/benches.log status=build/benches.status ;;
    esac
    mkdir -p "$(dirname "$log")"
    rm -f "$status"
    script+="build_$name >$log 2>&1; echo \$? >$status; "
  done
  [[ -n "$script" ]] || return 0
  # in a process group of its own (setsid), so that a failed tier, which ends the run, ends
  # the background builds with it
  setsid chrt --idle 0 nice -n 19 bash -c "$(declare -f build_asan build_fuzz build_benches); $script" &
  background_pid=$!
  trap 'kill -- -"$background_pid" 2>/dev/null || true' EXIT
}

# await_build NAME LOG STATUS: waits for a background build, shows its log's end, and fails
# when it failed; without a background job, runs build_NAME here.
await_build() {
  local name=$1 log=$2 status=$3
  if [[ -z "$background_pid" ]]; then
    "build_$name"
    return
  fi
  while [[ ! -f "$status" ]]; do
    if ! kill -0 "$background_pid" 2>/dev/null && [[ ! -f "$status" ]]; then
      echo "the background build of $name stopped without a status: $log"
      tail -n 60 "$log" 2>/dev/null
      return 1
    fi
    sleep 2
  done
  if [[ "$(cat "$status")" != 0 ]]; then
    tail -n 60 "$log"
    return 1
  fi
  tail -n 3 "$log"
}

tier_asan() {
  await_build asan build-asan/build.log build-asan/build.status
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
  await_build fuzz build-fuzz/build.log build-fuzz/build.status
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

tier_benches() {
  [[ -f build/CMakeCache.txt ]] || tier_build
  await_build benches build/benches.log build/benches.status
}

t_all=$SECONDS
if (($#)); then
  timed setup tier_setup
  timed build tier_build
  timed ctest tier_ctest "$@"
else
  tiers=" ${PUSHONCE_TIERS:-setup build format lua ctest asan fuzz benches} "
  for tier in $tiers; do
    if [[ "$tier" == ctest ]]; then
      later=()
      for t in asan fuzz benches; do [[ "$tiers" == *" $t "* ]] && later+=("$t"); done
      start_background_builds "${later[@]}"
    fi
    timed "$tier" "tier_$tier"
  done
fi
echo "== all tiers passed in $((SECONDS - t_all)) s"
