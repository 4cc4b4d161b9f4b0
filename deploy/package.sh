#!/usr/bin/env bash
# Builds the Debian package: the four programs in Release (-O3) in build-release/, then
# build-release/pushonce_<version>-<revision>_amd64.deb (CPack; cmake/package.cmake says what
# goes where, deploy/debian/ holds the maintainer scripts). Depends: is read off the
# programs' shared libraries (dpkg-shlibdeps). Then lintian, when installed, checks it.
#
#   deploy/package.sh            build the package (and print lintian's findings)
#   deploy/package.sh --build-dir DIR   package an existing Release build configured with
#                                -DPUSHONCE_PACKAGE=ON (the test command's build/): its
#                                programs are brought up to date, it is not reconfigured;
#                                the package goes to DIR/
#   PUSHONCE_DEB_RELEASE=2 deploy/package.sh   the Debian revision (default 1)
#
# Install it with: apt-get install ./build-release/pushonce_*_amd64.deb
# (docs/operations.md "Installing the Debian package").
# Environment: PUSHONCE_JOBS, PUSHONCE_CMAKE_ARGS (passed to deploy/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=""
case "${1:-}" in
  "") ;;
  --build-dir)
    build_dir=${2:?"package.sh: --build-dir needs a directory"}
    cache="$build_dir/CMakeCache.txt"
    [ -f "$cache" ] || { echo "package.sh: $build_dir is not a configured build" >&2; exit 2; }
    grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$cache" && grep -q '^PUSHONCE_PACKAGE:BOOL=ON$' "$cache" ||
      { echo "package.sh: $build_dir is not a Release build with -DPUSHONCE_PACKAGE=ON" >&2; exit 2; }
    ;;
  -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
  *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

# What building the package needs (Debian 12 names): the build toolchain and -dev
# packages (deploy/setup.sh installs them), dpkg-dev (dpkg-shlibdeps), file (CPack reads
# the programs with it) and help2man (the man pages).
needed=(
  cmake g++ make pkg-config
  libhiredis-dev libfmt-dev libssl-dev libjwt-dev
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-program-options1.81-dev
  dpkg-dev file help2man
)
missing=()
for p in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "package.sh: missing build dependencies: ${missing[*]}" >&2
  echo "package.sh: install them with: apt-get install ${missing[*]}" >&2
  exit 1
fi

targets=(pushonce-leader pushonce-worker pushonce-gateway pushonce-bench pushonce_package_docs)
if [ -n "$build_dir" ]; then
  release=$(sed -n 's/^PUSHONCE_DEB_RELEASE:STRING=//p' "$build_dir/CMakeCache.txt")
  echo "package: bringing the programs of $build_dir up to date"
  cmake --build "$build_dir" -j "${PUSHONCE_JOBS:-2}" $(printf -- '--target %s ' "${targets[@]}")
else
  build_dir=build-release
  release=${PUSHONCE_DEB_RELEASE:-1}
  echo "package: building the programs in Release in build-release/ (a first build takes 10-20 min on 2 cores)"
  PUSHONCE_BUILD_DIR=build-release PUSHONCE_BUILD_TYPE=Release \
    PUSHONCE_CMAKE_ARGS="-DPUSHONCE_TESTS=OFF -DPUSHONCE_PACKAGE=ON -DPUSHONCE_DEB_RELEASE=$release ${PUSHONCE_CMAKE_ARGS:-}" \
    bash deploy/build.sh "${targets[@]}"
fi

version=$(sed -n 's/^project(pushonce VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$build_dir/pushonce_${version}-${release}_amd64.deb
rm -f "$deb"
(cd "$build_dir" && cpack -G DEB >cpack.log 2>&1) || { cat "$build_dir/cpack.log" >&2; exit 1; }
[ -f "$deb" ] || { echo "package.sh: cpack made no $deb ($build_dir/cpack.log)" >&2; exit 1; }

echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb -f "$deb" Package Version Depends Recommends | sed 's/^/  /'
if command -v lintian >/dev/null; then
  # errors fail the build; warnings and notes are printed
  out=$(lintian --tag-display-limit 0 "$deb" 2>&1) || true
  [ -z "$out" ] && echo "lintian: clean" || echo "$out" | sed 's/^/lintian: /'
  if grep -q '^E: ' <<<"$out"; then
    echo "package.sh: lintian reports errors" >&2
    exit 1
  fi
else
  echo "package: lintian not installed (apt-get install lintian): not checked"
fi
