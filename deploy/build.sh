#!/usr/bin/env bash
# Configures and builds pushonce into ./build (programs in build/bin). Used by run.sh and
# test.sh. Usage: deploy/build.sh [TARGET...] (default: everything, tests included).
# Environment: PUSHONCE_BUILD_TYPE (RelWithDebInfo), PUSHONCE_BUILD_DIR (build),
# PUSHONCE_CMAKE_ARGS (more cmake arguments), PUSHONCE_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
build_type=${PUSHONCE_BUILD_TYPE:-RelWithDebInfo}
dir=${PUSHONCE_BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$build_type" ${PUSHONCE_CMAKE_ARGS:-} >/dev/null
# Beast translation units need ~2 GB each: two jobs fit the 2-core/24 GB machines we target.
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "${PUSHONCE_JOBS:-2}" "${targets[@]}"
