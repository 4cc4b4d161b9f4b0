#!/usr/bin/env bash
# The Debian package, installed for real on this machine and taken off again:
#   1. apt-get install ./pushonce_*.deb: files, the pushonce user, the conffile, the secrets
#   2. systemd-analyze verify on the installed units
#   3. the programs started as the units would start them (no systemd runs in this
#      sandbox: each unit's Environment= and ExecStart= lines, its EnvironmentFile and
#      LimitNOFILE, credentials copied into a directory of the pushonce user), as the pushonce
#      user, against a private redis-server: the gateway answers /healthz and the demo page;
#      publish --id, trace by the key, status numbers
#   4. an upgrade to a higher version whose shipped pushonce.env changed, with the installed
#      one edited: dpkg keeps the edit (--force-confold), the new one beside it as .dpkg-dist
#   5. remove (configuration kept), purge (configuration gone)
# The machine is left as found (trap): the package purged, a pushonce user this test made
# deleted. Skipped (exit 77) when not root or when pushonce is already installed here.
#   tests/deploy/package_install.sh [DEB]   (default: build-release/'s, made or brought up to
#                                            date by deploy/package.sh first)
#   tests/deploy/package_install.sh --build-dir DIR   the package of a Release build
#                                            configured with -DPUSHONCE_PACKAGE=ON (the test
#                                            command's build/: deploy/package.sh --build-dir)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
t_start=$SECONDS

[ "$(id -u)" -eq 0 ] || { echo "SKIP: installing a package needs root"; exit 77; }
if dpkg-query -W -f='${Status}' pushonce 2>/dev/null | grep -q "installed"; then
  echo "SKIP: a pushonce package is installed on this machine: not touching it"
  exit 77
fi
if [ -e /etc/pushonce ]; then
  echo "SKIP: /etc/pushonce exists (an installation of deploy/install.sh?): not touching it"
  exit 77
fi

deb=${1:-}
pkg_args=() pkg_dir=$here/build-release
if [ "$deb" = --build-dir ]; then
  pkg_dir=$(readlink -f "${2:?--build-dir needs a directory}")
  pkg_args=(--build-dir "$pkg_dir")
  deb=""
fi
if [ -z "$deb" ]; then
  # this tree's package: deploy/package.sh is incremental (seconds when the build is up to
  # date), so a package of an older commit is never what is tested
  t_pkg=$SECONDS
  mkdir -p "$pkg_dir"
  bash "$here/deploy/package.sh" "${pkg_args[@]}" >"$pkg_dir/package-test.log" 2>&1 ||
    { tail -n 40 "$pkg_dir/package-test.log"; echo "FAIL: deploy/package.sh"; exit 1; }
  echo "deploy/package.sh: $((SECONDS - t_pkg)) s"
  deb=$(ls -t "$pkg_dir"/pushonce_*_amd64.deb | head -1)
fi
deb=$(readlink -f "$deb")
echo "package: $deb"

fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
chmod 0755 "$tmp"
pids=()
user_before=0
getent passwd pushonce >/dev/null && user_before=1
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if dpkg-query -W -f='${Status}' pushonce 2>/dev/null | grep -q "installed\|config-files"; then
    dpkg --purge pushonce >/dev/null 2>&1 || true
  fi
  rm -rf /etc/pushonce
  if ((!user_before)) && getent passwd pushonce >/dev/null; then
    userdel pushonce 2>/dev/null || true
    getent group pushonce >/dev/null && groupdel pushonce 2>/dev/null || true
  fi
  rm -rf "$tmp"
  echo "package test: $((SECONDS - t_start)) s (exit $rc)"
}
trap cleanup EXIT

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
    >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "apt-get install $*"; }
}

# --- 0. package.sh on a machine without a build dependency: names it, exits non-zero -----
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/dpkg-query" <<'FAKE'
#!/bin/sh
# dpkg-query as on a machine without help2man and libjwt-dev
for a; do case "$a" in help2man | libjwt-dev) exit 1 ;; esac; done
exec /usr/bin/dpkg-query "$@"
FAKE
chmod +x "$tmp/fakebin/dpkg-query"
out=$(PATH=$tmp/fakebin:$PATH bash "$here/deploy/package.sh" 2>&1) && fail "package.sh went on without help2man"
[[ "$out" == *"missing build dependencies: libjwt-dev help2man"* ]] || fail "package.sh does not name what is missing: $out"
echo "ok: package.sh without build dependencies: $(head -1 <<<"$out")"

# --- 1. install -------------------------------------------------------------------------
apt_install "$deb"
version=$(dpkg-query -W -f='${Version}' pushonce)
echo "installed pushonce $version"
for f in /usr/bin/pushonce-leader /usr/bin/pushonce-worker /usr/bin/pushonce-gateway \
  /usr/bin/pushonce-bench; do
  [ -x "$f" ] || fail "$f not installed"
done
for f in /lib/systemd/system/pushonce-leader.service /lib/systemd/system/pushonce-worker@.service \
  /lib/systemd/system/pushonce-gateway@.service /usr/lib/sysusers.d/pushonce.conf \
  /usr/share/pushonce/nginx/pushonce.conf /usr/share/pushonce/prometheus/alerts.yml \
  /usr/share/pushonce/grafana/pushonce-drop.json /usr/share/doc/pushonce/copyright \
  /usr/share/doc/pushonce/changelog.Debian.gz /usr/share/doc/pushonce/examples/sysctl-pushonce.conf \
  /usr/share/man/man1/pushonce-leader.1.gz /usr/share/man/man1/pushonce-gateway.1.gz; do
  [ -f "$f" ] || fail "$f not installed"
done
depends=$(dpkg-query -W -f='${Depends}' pushonce)
for lib in libhiredis0.14 libfmt9 libjwt0 libssl3 libboost-json1.81.0; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
[[ "$(dpkg-query -W -f='${Recommends}' pushonce)" == *redis-server* ]] || fail "no Recommends: redis-server"
# the units run as pushonce, from /usr/bin, with room for a socket per session
for u in pushonce-leader.service pushonce-worker@.service pushonce-gateway@.service; do
  f=/lib/systemd/system/$u
  grep -q '^User=pushonce$' "$f" || fail "$u does not run as pushonce"
  grep -q '^ExecStart=/usr/bin/' "$f" || fail "$u does not start /usr/bin's program"
  grep -q '^LimitNOFILE=' "$f" || fail "$u sets no LimitNOFILE"
  grep -q '^AssertFileNotEmpty=/etc/pushonce/pushonce.env$' "$f" || fail "$u starts without its env file"
  grep -q '^StartLimitBurst=' "$f" || fail "$u restarts without a limit"
done
grep -q '^LimitNOFILE=262144$' /lib/systemd/system/pushonce-gateway@.service || fail "gateway LimitNOFILE"
getent passwd pushonce | grep -q ':/usr/sbin/nologin$' || fail "no pushonce system user with nologin"
env_file=/etc/pushonce/pushonce.env
[ "$(stat -c '%a %U %G' "$env_file")" = "640 root pushonce" ] ||
  fail "pushonce.env is $(stat -c '%a %U %G' "$env_file"), not 640 root pushonce"
grep -q "^ $env_file " <<<"$(dpkg-query -W -f='${Conffiles}' pushonce)" || fail "pushonce.env is not a conffile"
[ "$(stat -c %a /etc/pushonce/secrets)" = 700 ] || fail "secrets not 0700"
for s in jwt_secret api_key admin_token redis_url; do
  [ -s "/etc/pushonce/secrets/$s" ] || fail "secrets/$s not made"
  [ "$(stat -c %a "/etc/pushonce/secrets/$s")" = 600 ] || fail "secrets/$s not 0600"
done
cp -a /etc/pushonce/secrets "$tmp/secrets-before"
echo "ok: files, user, conffile, secrets"

# --- 2. systemd-analyze verify ----------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$tmp/units"
  ln -s /lib/systemd/system/pushonce-leader.service "$tmp/units/pushonce-leader.service"
  ln -s /lib/systemd/system/pushonce-worker@.service "$tmp/units/pushonce-worker@1.service"
  ln -s /lib/systemd/system/pushonce-gateway@.service "$tmp/units/pushonce-gateway@8081.service"
  out=$(cd "$tmp/units" && systemd-analyze verify pushonce-leader.service \
    pushonce-worker@1.service pushonce-gateway@8081.service 2>&1) && rc=0 || rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify: exit $rc"; }
  echo "ok: systemd-analyze verify (the installed units)"
fi
if [ "$(systemctl is-system-running 2>/dev/null || true)" != offline ] && [ -d /run/systemd/system ]; then
  echo "note: systemd runs here; the units are still started by hand below, not enabled"
fi

# --- 3. the programs as the units start them ----------------------------------------------
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { local p=$1; while ! port_free "$p"; do p=$((p + 1)); done; echo "$p"; }
rport=$(free_port 6450)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
  >"$tmp/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis_url=redis://127.0.0.1:$rport
# The credentials directory systemd would make (%d): copies of the secrets, the pushonce
# user's; redis_url points at the private redis-server.
cred=$tmp/credentials
install -d -m 0700 -o pushonce -g pushonce "$cred"
for s in jwt_secret api_key admin_token; do
  install -m 0400 -o pushonce -g pushonce "/etc/pushonce/secrets/$s" "$cred/$s"
done
echo "$redis_url" >"$cred/redis_url"
chown pushonce:pushonce "$cred/redis_url"

# start_unit UNIT INSTANCE LOG: the unit's Environment= lines, its EnvironmentFile, its
# LimitNOFILE and its ExecStart (%i, %l, %d and $VARs as systemd expands them), as its User.
start_unit() {
  local unit=/lib/systemd/system/$1 inst=$2 log=$3 host
  host=$(hostname)
  local exec env_lines nofile
  exec=$(sed -n 's/^ExecStart=//p' "$unit" | sed -e "s|%i|$inst|g" -e "s|%l|$host|g")
  env_lines=$(sed -n 's/^Environment=//p' "$unit" | sed -e "s|%d|$cred|g" -e "s|%i|$inst|g")
  nofile=$(sed -n 's/^LimitNOFILE=//p' "$unit")
  [ "$(sed -n 's/^User=//p' "$unit")" = pushonce ] || fail "$1: not User=pushonce"
  (
    set -a
    # shellcheck disable=SC1090
    . "$(sed -n 's/^EnvironmentFile=//p' "$unit")"
    while IFS= read -r line; do [ -n "$line" ] && export "${line?}"; done <<<"$env_lines"
    set +a
    # the unit's LimitNOFILE, or this sandbox's hard limit when that is lower (noted below)
    if [ "$(ulimit -Hn)" != unlimited ] && (($(ulimit -Hn) < nofile)); then nofile=$(ulimit -Hn); fi
    ulimit -n "$nofile"
    eval "set -- $exec"
    exec runuser -u pushonce -- "$@"
  ) >"$log" 2>&1 &
  pids+=($!)
}
gport=$(free_port 8470)
start_unit pushonce-leader.service "" "$tmp/leader.log"
start_unit pushonce-worker@.service 1 "$tmp/worker-1.log"
start_unit pushonce-gateway@.service "$gport" "$tmp/gateway.log"
show_logs() { tail -n 20 "$tmp"/leader.log "$tmp"/worker-1.log "$tmp"/gateway.log; }
ok=0
for _ in $(seq 200); do
  if curl -fsS "http://127.0.0.1:$gport/healthz" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.05
done
((ok)) || { show_logs; fail "the gateway (pushonce-gateway@$gport) does not answer /healthz"; }
# (the page read whole first: grep -q ending the pipe early would fail curl under pipefail)
page=$(curl -fsS "http://127.0.0.1:$gport/") || { show_logs; fail "GET / failed"; }
grep -qi '<html' <<<"$page" || { show_logs; fail "no demo page at /"; }
# each program runs as the pushonce user, with the unit's descriptor limit
gpid=$(pgrep -u pushonce -f "pushonce-gateway --listen 127.0.0.1:$gport" | head -1)
[ -n "$gpid" ] || fail "the gateway does not run as pushonce"
want=262144
if [ "$(ulimit -Hn)" != unlimited ] && (($(ulimit -Hn) < want)); then
  echo "note: this sandbox's hard limit on open files is $(ulimit -Hn), below the gateway unit's $want: started with $(ulimit -Hn)"
  want=$(ulimit -Hn)
fi
grep -q "^Max open files *$want " "/proc/$gpid/limits" || fail "the gateway's open files limit is not $want: $(grep 'open files' "/proc/$gpid/limits")"
pgrep -u pushonce -f "pushonce-leader run" >/dev/null || { show_logs; fail "the leader does not run as pushonce"; }
pgrep -u pushonce -f "pushonce-worker --id" >/dev/null || { show_logs; fail "the worker does not run as pushonce"; }
echo "ok: leader, worker and gateway@$gport run as pushonce; /healthz and the demo page answer"

# the admin CLI of the package against the same Redis: publish with an idempotency key, trace
# by that key, and numbers written as people write them
admin() { /usr/bin/pushonce-leader --redis "$redis_url" "$@"; }
for _ in $(seq 100); do admin status --json 2>/dev/null | grep -q '"leader":{' && break; sleep 0.1; done
published=$(admin publish alice '{"text":"hi"}' --id greeting-1)
echo "$published"
[[ "$published" =~ ^published\ message\ ([0-9]+)\ \(idempotency\ key\ greeting-1\ of\ alice\)$ ]] ||
  fail "publish --id does not name the message and its key: $published"
id=${BASH_REMATCH[1]}
traced=$(admin trace greeting-1 --user alice) || fail "trace greeting-1 --user alice: $traced"
[[ "$traced" == "message $id (idempotency key greeting-1 of alice)"* ]] || fail "trace by key: $traced"
refused=$(admin trace greeting-1 2>&1) && fail "trace greeting-1 without --user answered"
[[ "$refused" == *"trace greeting-1 --user USER"* ]] || fail "trace of a key does not say how: $refused"
admin join bob >/dev/null
admin resource add room-1 >/dev/null
for _ in $(seq 100); do admin status --json | grep -q '"assigned":1' && break; sleep 0.1; done
grep -q '"assigned":1' <<<"$(admin status --json)" || fail "room-1 was not assigned to bob"
status_json=$(admin status --json)
! grep -Eq '[0-9]E[-+]?[0-9]' <<<"$status_json" || fail "status --json writes a number with an exponent: $status_json"
rate_line=$(admin status | grep '^queue default:.*assignments/min' || true)
echo "$rate_line"
[[ "$rate_line" == *" 0 assignments/min"* ]] || fail "one assignment alone reads as a rate: $rate_line"
echo "ok: publish --id / trace KEY --user, status numbers"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()

# --- 4. upgrade, the conffile edited ------------------------------------------------------
echo "PUSHONCE_LOG_LEVEL=debug # edited by the operator" >>"$env_file"
edited=$(sha256sum <"$env_file")
# the next version: the same files, a higher revision, and a shipped pushonce.env that changed
next=${version%-*}-$((${version##*-} + 1))
dpkg-deb -R "$deb" "$tmp/next"
sed -i "s/^Version: .*/Version: $next/" "$tmp/next/DEBIAN/control"
echo "# shipped by $next" >>"$tmp/next/etc/pushonce/pushonce.env"
(cd "$tmp/next" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
  sort -z | xargs -0 md5sum >DEBIAN/md5sums)
dpkg-deb --root-owner-group -b "$tmp/next" "$tmp/pushonce_${next}_amd64.deb" >/dev/null
apt_install -o Dpkg::Options::=--force-confold "$tmp/pushonce_${next}_amd64.deb"
[ "$(dpkg-query -W -f='${Version}' pushonce)" = "$next" ] || fail "not upgraded to $next"
[ "$(sha256sum <"$env_file")" = "$edited" ] || fail "the upgrade overwrote the edited pushonce.env"
grep -q "shipped by $next" "$env_file.dpkg-dist" || fail "the new pushonce.env is not beside it (.dpkg-dist)"
[ "$(stat -c '%a %G' "$env_file")" = "640 pushonce" ] || fail "pushonce.env mode/group after the upgrade"
diff -r "$tmp/secrets-before" /etc/pushonce/secrets >/dev/null || fail "the upgrade changed the secrets"
echo "ok: upgraded $version -> $next; the edited pushonce.env kept, the shipped one as .dpkg-dist"

# --- 5. remove, purge ---------------------------------------------------------------------
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q pushonce >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "apt-get remove"; }
[ ! -e /usr/bin/pushonce-leader ] || fail "remove left /usr/bin/pushonce-leader"
[ ! -e /lib/systemd/system/pushonce-leader.service ] || fail "remove left the units"
[ "$(sha256sum <"$env_file")" = "$edited" ] || fail "remove did not keep pushonce.env"
[ -s /etc/pushonce/secrets/jwt_secret ] || fail "remove did not keep the secrets"
dpkg-query -W -f='${Status}' pushonce | grep -q "config-files" || fail "not in config-files state after remove"
dpkg --purge pushonce >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "dpkg --purge"; }
[ ! -e /etc/pushonce ] || fail "purge left /etc/pushonce: $(find /etc/pushonce)"
if dpkg-query -W -f='${Status}' pushonce 2>/dev/null | grep -q "installed\|config-files"; then fail "still known to dpkg after purge"; fi
echo "ok: remove kept the configuration, purge removed it"
echo "PASS: the Debian package installs, runs, upgrades, removes and purges"
