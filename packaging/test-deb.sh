#!/bin/bash
# Builds warren's .deb and installs it into a clean Debian root, as a user
# would on a fresh machine, then checks that it serves: the default page and
# a PHP page through the package's php-fpm pool, started and stopped with
# warren-ctl; and that dpkg keeps the user's edit of /etc/warren/warren.conf
# over a reinstall.
#
# The root is made with debootstrap (minbase) from deb.debian.org, once:
# kept as a tarball in /var/cache/warren-test (WARREN_DEB_CACHE) for the
# next run. Run as root; the root lives in a temporary directory, removed
# at the end (KEEP_ROOT=1 keeps it).
#   packaging/test-deb.sh [--dev]    --dev: package the debug build (faster)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test-deb.sh: run as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null 2>&1 || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }

suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${WARREN_DEB_CACHE:-/var/cache/warren-test}"
began=$SECONDS
say() { echo "[$((SECONDS - began)) s] $*" >&2; }

deb="$(packaging/build-deb.sh "$@")"
say "built $deb"

root="$(mktemp -d /var/tmp/warren-debroot.XXXXXX)"
cleanup() {
    [ -x "$root/usr/sbin/warren-ctl" ] && chroot "$root" /usr/sbin/warren-ctl stop >/dev/null 2>&1 || true
    for m in proc dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
    if [ -z "${KEEP_ROOT:-}" ]; then rm -rf --one-file-system "$root"; else echo "root kept: $root" >&2; fi
}
trap cleanup EXIT

base="$cache/debroot-$suite.tar"
if [ -f "$base" ]; then
    tar -C "$root" -xf "$base"
    say "Debian $suite root from $base"
else
    mkdir -p "$cache"
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2
    tar -C "$root" -cf "$base.part" . && mv "$base.part" "$base"
    say "debootstrapped Debian $suite into $root (kept as $base)"
fi

# The chroot's / as a system's (mktemp made it 0700, and the tarball keeps
# that): www-data, which the children and the pool run as, must pass it.
chmod 755 "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Packages' services are not started in the chroot (php-fpm's own): only warren runs.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"

cp "$deb" "$root/tmp/warren.deb"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C DEBIAN_FRONTEND=noninteractive "$@"; }
in_root apt-get update -qq >&2
# apt installs the local file with its Depends, and the Recommends the test
# uses named (all Recommends would pull in cron and a mail server, whose
# configuration fails in a chroot).
in_root apt-get install -y -qq --no-install-recommends /tmp/warren.deb php-fpm curl logrotate >&2
say "installed: $(in_root dpkg-query -W -f='${Package} ${Version} ${Status}' warren)"

fail() { echo "test-deb.sh: FAILED: $*" >&2; exit 1; }
# The unit as systemd reads it, in the root it is installed in.
if command -v systemd-analyze >/dev/null 2>&1 && [ -d "$root/usr/lib/systemd/system" ]; then
    systemd-analyze verify --man=no --root="$root" warren.service >&2 || fail "systemd-analyze verify warren.service"
    say "systemd-analyze verify: warren.service is sound"
fi
conffiles="$(in_root dpkg-query -W -f='${Conffiles}' warren)"
grep -q '/etc/warren/warren.conf' <<<"$conffiles" || fail "warren.conf is not a conffile: $conffiles"
[ -f "$root/var/www/html/index.html" ] || fail "postinst did not install the default page"
[ -d "$root/var/log/warren" ] || fail "postinst did not make /var/log/warren"
[ -f "$root/usr/share/man/man8/warren.8" ] || [ -f "$root/usr/share/man/man8/warren.8.gz" ] || fail "no man page"

# The user's edit: a free loopback port instead of 80 (which the host may use).
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
sed -i "s/^Listen 80$/Listen 127.0.0.1:$port/" "$root/etc/warren/warren.conf"
grep -q "^Listen 127.0.0.1:$port$" "$root/etc/warren/warren.conf" || fail "could not edit Listen"
in_root dpkg -i --force-confdef --force-confold /tmp/warren.deb >&2
grep -q "^Listen 127.0.0.1:$port$" "$root/etc/warren/warren.conf" || fail "reinstalling the package lost the user's edit of warren.conf"
say "the edited warren.conf survived a reinstall"
# An upgrade whose warren.conf changed too: dpkg keeps the user's file
# (--force-confold answers its question as a user keeping theirs would) and
# puts the package's beside it as warren.conf.dpkg-dist.
next="$root/tmp/warren-next"
dpkg-deb -R "$deb" "$next"
sed -i 's/^Version: \(.*\)$/Version: \1+next/' "$next/DEBIAN/control"
echo "# a line the next version adds" >> "$next/etc/warren/warren.conf"
dpkg-deb -b "$next" "$root/tmp/warren-next.deb" >/dev/null
rm -rf "$next"
in_root dpkg -i --force-confold /tmp/warren-next.deb >&2
grep -q "^Listen 127.0.0.1:$port$" "$root/etc/warren/warren.conf" || fail "an upgrade lost the user's edit of warren.conf"
grep -q "a line the next version adds" "$root/etc/warren/warren.conf.dpkg-dist" || fail "no warren.conf.dpkg-dist beside the kept file"
say "an upgrade with a changed warren.conf kept the user's (the package's is warren.conf.dpkg-dist)"

printf '<?php echo "php says ", 6 * 7, " from ", PHP_SAPI, "\\n";\n' > "$root/var/www/html/info.php"
in_root /usr/sbin/warren-ctl configtest >&2 || fail "warren-ctl configtest"
in_root /usr/sbin/warren-ctl start || fail "warren-ctl start"
url="http://127.0.0.1:$port"
deadline=$((SECONDS + 20))
until curl -fsS -o /dev/null "$url/"; do
    [ $SECONDS -lt $deadline ] || { cat "$root/var/log/warren/error.log" >&2 || true; fail "nothing answers on $url within 20 s"; }
    sleep 0.2
done
say "warren answers on $url"
curl -fsS "$url/" | grep -q 'warren: it works' || fail "the default page is not served"
php="$(curl -fsS "$url/info.php")" || { cat "$root/var/log/warren/error.log" >&2; fail "info.php failed"; }
[ "$php" = "php says 42 from fpm-fcgi" ] || fail "info.php answered: $php"
say "PHP runs in the package's php-fpm pool: $php"
# logrotate, forced, with the package's rules: the next request is logged
# in a new access.log (the postrotate reopened the logs).
# Access lines are buffered per thread and flushed shortly after: logrotate
# leaves an empty log be (notifempty).
deadline=$((SECONDS + 20))
until [ -s "$root/var/log/warren/access.log" ]; do
    [ $SECONDS -lt $deadline ] || fail "nothing logged in access.log within 20 s"
    sleep 0.2
done
in_root logrotate -f /etc/logrotate.d/warren >&2 || fail "logrotate"
[ -f "$root/var/log/warren/access.log.1" ] || fail "logrotate did not rotate access.log"
deadline=$((SECONDS + 20))
until curl -fsS -o /dev/null "$url/?after-rotation" && grep -q 'after-rotation' "$root/var/log/warren/access.log" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "no line in the new access.log after logrotate"
    sleep 0.2
done
say "logrotate rotated the logs; warren writes to the new ones"
in_root WARREN_STATUSURL="$url/server-status" /usr/sbin/warren-ctl status | grep -q '^BusyWorkers' || fail "warren-ctl status"
in_root /usr/sbin/warren-ctl graceful >&2 || fail "warren-ctl graceful"
curl -fsS -o /dev/null "$url/" || fail "no answer after a graceful restart"
in_root /usr/sbin/warren-ctl stop || fail "warren-ctl stop"
! curl -fsS -o /dev/null "$url/" 2>/dev/null || fail "warren still answers after warren-ctl stop"
in_root dpkg --purge warren >&2
[ ! -e "$root/etc/warren/warren.conf" ] || fail "purge left warren.conf"
[ -f "$root/var/www/html/index.html" ] || fail "purge removed the site"
say "PASS: installed, served the default page and PHP, kept the edited conffile, stopped, purged"
