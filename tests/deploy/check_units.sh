#!/usr/bin/env bash
# The systemd units of deploy/systemd/ as installed by deploy/install.sh, checked without a
# running systemd: install into a temporary root (--destdir), twice (the second run must
# change nothing), then `systemd-analyze verify --root` on instances of every unit. Any
# message from verify (an unknown key, a missing program) fails the check.
#   tests/deploy/check_units.sh BIN_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=${1:-$here/build/bin}
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (deploy/setup.sh installs systemd)"; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

bash "$here/deploy/install.sh" --destdir "$root" --bin-dir "$bin_dir"
second=$(bash "$here/deploy/install.sh" --destdir "$root" --bin-dir "$bin_dir")
echo "$second"
[[ "$second" == *"nothing to do"* ]] || { echo "FAIL: a second install changed files"; exit 1; }
for f in usr/local/bin/pushonce-gateway usr/local/bin/pushonce-bench etc/pushonce/pushonce.env etc/pushonce/secrets/api_key \
         etc/systemd/system/pushonce-worker@.service usr/local/share/pushonce/nginx/pushonce.conf; do
  [ -e "$root/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ "$(stat -c %a "$root/etc/pushonce/secrets")" = 700 ] || { echo "FAIL: secrets dir not 0700"; exit 1; }
# pushonce.env is not world-readable; the secrets, the Redis URL among them, are root's only
[ "$(stat -c %a "$root/etc/pushonce/pushonce.env")" = 640 ] || { echo "FAIL: pushonce.env not 0640"; exit 1; }
for s in jwt_secret api_key admin_token redis_url; do
  [ "$(stat -c %a "$root/etc/pushonce/secrets/$s")" = 600 ] || { echo "FAIL: secrets/$s not 0600"; exit 1; }
done
grep -q '^PUSHONCE_TRUSTED_PROXY=127.0.0.1' "$root/etc/pushonce/pushonce.env" ||
  { echo "FAIL: the example environment does not trust the local nginx"; exit 1; }
for u in pushonce-leader.service pushonce-worker@.service pushonce-gateway@.service; do
  grep -q '^Environment=PUSHONCE_REDIS_FILE=%d/redis_url' "$root/etc/systemd/system/$u" ||
    { echo "FAIL: $u does not read the Redis URL from its credential"; exit 1; }
done
# every daemon comes back whatever ended it (a signal systemd counts as clean, SIGHUP or
# SIGTERM from someone else, included), except a usage or configuration error (exit 2)
for u in pushonce-leader.service pushonce-worker@.service pushonce-gateway@.service; do
  f="$root/etc/systemd/system/$u"
  grep -q '^Restart=always$' "$f" || { echo "FAIL: $u does not restart on every exit (Restart=always)"; exit 1; }
  grep -q '^RestartPreventExitStatus=2$' "$f" || { echo "FAIL: $u restarts after a usage error (RestartPreventExitStatus=2)"; exit 1; }
done
# a second machine takes the first one's secrets (--secrets-from), replacing its own
second_root=$(mktemp -d)
trap 'rm -rf "$root" "$second_root"' EXIT
bash "$here/deploy/install.sh" --destdir "$second_root" --bin-dir "$bin_dir" >/dev/null
bash "$here/deploy/install.sh" --destdir "$second_root" --bin-dir "$bin_dir" \
  --secrets-from "$root/etc/pushonce/secrets" >/dev/null
for s in jwt_secret api_key admin_token; do
  cmp -s "$root/etc/pushonce/secrets/$s" "$second_root/etc/pushonce/secrets/$s" ||
    { echo "FAIL: --secrets-from did not carry $s over"; exit 1; }
  [ "$(stat -c %a "$second_root/etc/pushonce/secrets/$s")" = 600 ] || { echo "FAIL: copied $s not 0600"; exit 1; }
done
again=$(bash "$here/deploy/install.sh" --destdir "$second_root" --bin-dir "$bin_dir" --secrets-from "$root/etc/pushonce/secrets")
[[ "$again" == *"nothing to do"* ]] || { echo "FAIL: --secrets-from twice changed files"; exit 1; }
# the daemons do not need pushonce-bench: an install without it works
no_bench=$(mktemp -d)
trap 'rm -rf "$root" "$second_root" "$no_bench"' EXIT
for p in pushonce-leader pushonce-worker pushonce-gateway; do ln -s "$(cd "$bin_dir" && pwd)/$p" "$no_bench/$p"; done
bash "$here/deploy/install.sh" --destdir "$no_bench/root" --bin-dir "$no_bench" >/dev/null 2>&1 ||
  { echo "FAIL: install.sh refuses to install without pushonce-bench"; exit 1; }
# deploy/setup.sh --runtime lists every library the programs load (or a package it pulls in)
runtime=$(sed -n '/^RUNTIME_PACKAGES=(/,/^)/p' "$here/deploy/setup.sh" | grep -v '^RUNTIME_PACKAGES=(\|^)' | tr -s ' \n' '\n' | grep .)
allowed="$runtime"
for p in $runtime; do
  allowed+=$'\n'$(dpkg-query -W -f='${Depends}\n' "$p" 2>/dev/null | tr ',|' '\n\n' | sed 's/ *(.*//; s/^ *//; s/:any$//')
done
for prog in pushonce-leader pushonce-worker pushonce-gateway pushonce-bench; do
  for lib in $(ldd "$bin_dir/$prog" | awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in libc.so* | libm.so* | libgcc_s.so* | ld-linux* | libpthread* | libdl* | librt*) continue ;; esac
    pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || continue  # not from a package (a local build): nothing to list
    grep -qx "$pkg" <<<"$allowed" || { echo "FAIL: $prog loads $lib ($pkg), which setup.sh --runtime does not install"; exit 1; }
  done
done
# an older install's world-readable pushonce.env is closed by the next install
chmod 0644 "$root/etc/pushonce/pushonce.env"
bash "$here/deploy/install.sh" --destdir "$root" --bin-dir "$bin_dir" >/dev/null
[ "$(stat -c %a "$root/etc/pushonce/pushonce.env")" = 640 ] || { echo "FAIL: an open pushonce.env stays open"; exit 1; }

# verify needs the system's own units (sysinit.target, ...) inside the root
mkdir -p "$root/lib/systemd"
cp -a /lib/systemd/system "$root/lib/systemd/"
cd "$root/etc/systemd/system"
ln -sf pushonce-worker@.service pushonce-worker@1.service
ln -sf pushonce-gateway@.service pushonce-gateway@8081.service
units=(pushonce-leader.service pushonce-worker@1.service pushonce-gateway@8081.service)
out=$(systemd-analyze verify --root="$root" "${units[@]}" 2>&1) && rc=0 || rc=$?
echo "systemd-analyze verify: exit $rc"
[ -z "$out" ] || echo "$out"
[ "$rc" -eq 0 ] && [ -z "$out" ] || { echo "FAIL: the units do not verify"; exit 1; }
echo "units verify: ${units[*]}"
