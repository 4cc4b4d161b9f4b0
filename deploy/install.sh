#!/usr/bin/env bash
# Installs the pushonce programs, systemd units and configuration on this machine
# (docs/operations.md "Three machines"). Idempotent: a second run changes nothing, and an
# edited /etc/pushonce/pushonce.env or an existing secret is never overwritten.
#
#   deploy/install.sh [--prefix DIR] [--sysconfdir DIR] [--destdir DIR] [--bin-dir DIR]
#                     [--secrets-from DIR] [--no-user] [--dry-run]
#
#   --prefix DIR      programs in DIR/bin, docs in DIR/share (default /usr/local)
#   --sysconfdir DIR  pushonce.env, secrets and units under DIR (default /etc)
#   --destdir DIR     stage everything under DIR (paths inside the files stay as if
#                     installed for real; no user is made, systemd is not told)
#   --bin-dir DIR     where the built programs are (default build/bin; see deploy/build.sh)
#   --secrets-from DIR  take jwt_secret, api_key and admin_token from DIR (a copy of the
#                     first machine's /etc/pushonce/secrets) instead of making new ones:
#                     every machine of a deployment must share them; a different one
#                     already here is replaced
#   --no-user         do not create the pushonce system user
#   --dry-run         print what would be done, change nothing
#
# Then: systemctl enable --now pushonce-leader pushonce-worker@{1..4}
#       systemctl enable --now pushonce-gateway@8081 pushonce-gateway@8082
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

prefix=/usr/local sysconfdir=/etc destdir="" bin_dir="$here/build/bin" make_user=1 dry=0
secrets_from=""
while (($#)); do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --sysconfdir) sysconfdir=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --secrets-from) secrets_from=$2; shift 2 ;;
    --no-user) make_user=0; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see $0 --help)" >&2; exit 2 ;;
  esac
done
case "$prefix$sysconfdir" in *[!A-Za-z0-9/._-]*) echo "error: odd characters in a path" >&2; exit 2 ;; esac
[ -n "$destdir" ] && make_user=0
if [ -n "$secrets_from" ]; then
  for s in jwt_secret api_key admin_token; do
    [ -s "$secrets_from/$s" ] || { echo "error: --secrets-from: $secrets_from/$s is missing or empty" >&2; exit 1; }
  done
fi

programs=(pushonce-leader pushonce-worker pushonce-gateway)
units=(pushonce-leader.service pushonce-worker@.service pushonce-gateway@.service)
for p in "${programs[@]}"; do
  [ -x "$bin_dir/$p" ] || { echo "error: $bin_dir/$p is missing: run deploy/build.sh first" >&2; exit 1; }
done
# pushonce-bench (the load generator and verifier, docs/operations.md "Check your
# deployment") is installed when it was built; the daemons do not need it.
if [ -x "$bin_dir/pushonce-bench" ]; then
  programs+=(pushonce-bench)
else
  echo "install: $bin_dir/pushonce-bench not built: installing without it" >&2
fi

changed=0
say() { echo "install: $*"; }
run() { if ((dry)); then say "(dry run) $*"; else "$@"; fi; }

# Installs $1 as $2 with mode $3 (and group $4 when given) unless an identical file is
# already there.
put() {
  local src=$1 dst=$2 mode=$3 grp=${4:-}
  if [ -f "$dst" ] && cmp -s "$src" "$dst" && [ "$(stat -c %a "$dst")" = "${mode#0}" ]; then return; fi
  say "$dst"
  run install -D -m "$mode" ${grp:+-g "$grp"} "$src" "$dst"
  changed=1
}

# A unit with the install paths put in (the files in deploy/systemd/ name the defaults).
render_unit() {
  sed -e "s|/usr/local/bin/|$prefix/bin/|g" \
      -e "s|/usr/local/share/|$prefix/share/|g" \
      -e "s|/etc/pushonce/|$sysconfdir/pushonce/|g" "$here/deploy/systemd/$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. the programs, the docs and the nginx example
for p in "${programs[@]}"; do put "$bin_dir/$p" "$destdir$prefix/bin/$p" 0755; done
put "$here/docs/operations.md" "$destdir$prefix/share/doc/pushonce/operations.md" 0644
put "$here/docs/protocol.md" "$destdir$prefix/share/doc/pushonce/protocol.md" 0644
put "$here/deploy/nginx/pushonce.conf" "$destdir$prefix/share/pushonce/nginx/pushonce.conf" 0644

# 2. the units
for u in "${units[@]}"; do
  render_unit "$u" >"$tmp/$u"
  put "$tmp/$u" "$destdir$sysconfdir/systemd/system/$u" 0644
done

# 3. the service user (the group that may read pushonce.env)
if ((make_user)) && ! getent passwd pushonce >/dev/null; then
  say "system user pushonce"
  run useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin pushonce
  changed=1
fi
group=""
[ -z "$destdir" ] && getent group pushonce >/dev/null && group=pushonce

# 4. configuration: the example always, pushonce.env only when there is none. pushonce.env
# is 0640 root:pushonce (it may hold addresses and options an operator would rather keep
# private; the Redis URL with its password goes to secrets/redis_url): an existing one
# more open than that is closed, its contents left alone.
conf="$destdir$sysconfdir/pushonce"
put "$here/deploy/systemd/pushonce.env.example" "$conf/pushonce.env.example" 0644
if [ -f "$conf/pushonce.env" ]; then
  if [ "$(stat -c %a "$conf/pushonce.env")" != 640 ]; then
    say "$conf/pushonce.env: mode 0640"
    run chmod 0640 "$conf/pushonce.env"
    [ -n "$group" ] && run chgrp "$group" "$conf/pushonce.env"
    changed=1
  fi
else
  put "$here/deploy/systemd/pushonce.env.example" "$conf/pushonce.env" 0640 "$group"
fi

# 5. secrets (systemd credentials): made once, readable by root only
if [ ! -d "$conf/secrets" ]; then
  say "$conf/secrets/"
  run install -d -m 0700 "$conf/secrets"
  changed=1
fi
for s in jwt_secret api_key admin_token; do
  if [ -n "$secrets_from" ]; then
    if [ -s "$conf/secrets/$s" ] && cmp -s "$secrets_from/$s" "$conf/secrets/$s"; then continue; fi
    say "$conf/secrets/$s (from $secrets_from)"
    run install -m 0600 "$secrets_from/$s" "$conf/secrets/$s"
    changed=1
    continue
  fi
  [ -s "$conf/secrets/$s" ] && continue
  say "$conf/secrets/$s (new random secret)"
  if ((!dry)); then
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$conf/secrets/$s")
  fi
  changed=1
done
# The Redis URL (redis://:PASSWORD@host:port when Redis wants a password), a credential of
# every unit; made once with the local default.
if [ ! -s "$conf/secrets/redis_url" ]; then
  say "$conf/secrets/redis_url (redis://127.0.0.1:6379: edit it)"
  ((dry)) || (umask 077; echo "redis://127.0.0.1:6379" >"$conf/secrets/redis_url")
  changed=1
fi

# 6. systemd told about new units (a real install only)
if [ -z "$destdir" ] && ((changed)) && [ -d /run/systemd/system ]; then
  run systemctl daemon-reload
fi
((changed)) && say "done" || say "nothing to do (already installed)"
