#!/bin/bash
# Boots a real systemd (systemd-nspawn -b) in a clean Debian root, installs
# warren's .deb there with apt as a user would, and measures issue 37's
# targets under that systemd:
#   - `systemctl start warren` until the default page and a PHP page (the
#     package's php-fpm pool) both answer on port 80: within 2 s;
#   - `systemctl reload warren` (twice) under `wrk -c50`: 0 failed requests,
#     each reload a graceful restart (the same main PID, a SIGHUP line in
#     the error log);
#   - `systemctl stop warren`: inactive, nothing answers on port 80;
# under each MPM in turn (MPMS, default "event worker prefork"), in one boot;
# then with the package's warren.socket (socket activation): a
# `systemctl restart warren` under wrk refuses no connection.
# The container has a network of its own (--private-network: only its
# loopback), so its port 80 is not the host's; curl and wrk are the host's,
# run in the container's network namespace (nsenter -n).
#
# The root: packaging/test-deb.sh's debootstrapped tarball, plus systemd,
# dbus, php-fpm and curl, installed once and kept as a second tarball in
# /var/cache/warren-test (WARREN_DEB_CACHE). php-fpm's own service is masked:
# only warren and its pool run. Run as root; the root is a temporary
# directory removed at the end (KEEP_ROOT=1 keeps it).
#   packaging/test-systemd.sh [--dev] [--no-build]   (build-deb.sh's options)
# Prints one line per figure, and PASS at the end; exits 1 on a failed
# target, 2 when the machine cannot run it (not root, no network for the
# first debootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test-systemd.sh: run as root (debootstrap, systemd-nspawn)" >&2; exit 2; }
. bench/lib.sh
need debootstrap:debootstrap systemd-nspawn:systemd-container nsenter:util-linux wrk:wrk curl:curl

suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${WARREN_DEB_CACHE:-/var/cache/warren-test}"
began=$SECONDS
say() { echo "[$((SECONDS - began)) s] $*" >&2; }
fail() { echo "test-systemd.sh: FAILED: $*" >&2; exit 1; }

deb="$(packaging/build-deb.sh "$@")"
say "built $deb"

root="$(mktemp -d /var/tmp/warren-sdroot.XXXXXX)"
machine="warren-test-$$"
console="$root.console"
NSPAWN=""
cleanup() {
    if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
        kill "$NSPAWN" 2>/dev/null || true   # SIGTERM: nspawn shuts the container down
        for _ in $(seq 100); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$NSPAWN" 2>/dev/null || true
    fi
    for m in proc dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
    if [ -z "${KEEP_ROOT:-}" ]; then rm -rf --one-file-system "$root" "$console"; else echo "root kept: $root" >&2; fi
}
trap cleanup EXIT

base="$cache/debroot-$suite.tar"
booted="$cache/debroot-$suite-systemd.tar"
in_chroot() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C DEBIAN_FRONTEND=noninteractive "$@"; }
if [ -f "$booted" ]; then
    tar -C "$root" -xf "$booted"
    say "Debian $suite root with systemd from $booted"
else
    mkdir -p "$cache"
    if [ -f "$base" ]; then
        tar -C "$root" -xf "$base"
    else
        debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2 || { echo "test-systemd.sh: debootstrap failed (no network?)" >&2; exit 2; }
        tar -C "$root" -cf "$base.part" . && mv "$base.part" "$base"
    fi
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # Nothing the packages bring is started in the chroot.
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    mount -t proc proc "$root/proc"
    in_chroot apt-get update -qq >&2 || { umount "$root/proc"; echo "test-systemd.sh: apt-get update in the root failed (no network?)" >&2; exit 2; }
    in_chroot apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus php-fpm curl logrotate >&2
    umount "$root/proc"
    rm "$root/usr/sbin/policy-rc.d"
    # Only warren (and the php-fpm its pool starts) runs: Debian's php-fpm
    # service would be a second PHP server nobody asked for here.
    for unit in "$root"/usr/lib/systemd/system/php*-fpm.service; do
        ln -sf /dev/null "$root/etc/systemd/system/$(basename "$unit")"
    done
    # No login prompt on the console: nobody logs in.
    ln -sf /dev/null "$root/etc/systemd/system/console-getty.service"
    tar -C "$root" -cf "$booted.part" . && mv "$booted.part" "$booted"
    say "installed systemd, php-fpm and curl into the Debian $suite root (kept as $booted)"
fi
chmod 755 "$root"
cp "$deb" "$root/root/warren.deb"
printf '<?php echo "php says ", 6 * 7, " from ", PHP_SAPI, "\\n";\n' > "$root/root/info.php"

# --register=no --keep-unit: no systemd-machined is needed on the host (a
# host whose PID 1 is not systemd has none). </dev/null: no console input.
systemd-nspawn --quiet --register=no --keep-unit --private-network --machine="$machine" -b -D "$root" \
    > "$console" 2>&1 < /dev/null &
NSPAWN=$!
leader=""
deadline=$((SECONDS + 30))
until [ -n "$leader" ] && [ "$(cat "/proc/$leader/comm" 2>/dev/null)" = systemd ]; do
    kill -0 "$NSPAWN" 2>/dev/null || { cat "$console" >&2; fail "systemd-nspawn exited"; }
    [ $SECONDS -lt $deadline ] || { cat "$console" >&2; fail "no systemd in the container within 30 s"; }
    sleep 0.1
    leader="$(pgrep -P "$NSPAWN" | head -1 || true)"
done
in_ct() { nsenter -t "$leader" -a /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C DEBIAN_FRONTEND=noninteractive "$@"; }
in_net() { nsenter -t "$leader" -n "$@"; }
# Until boot is over: "running", or "degraded" when a unit the container
# cannot run failed (which ones is printed). systemctl cannot connect until
# systemd has made its socket: polled.
deadline=$((SECONDS + 60))
state=""
until [ "$state" = running ] || [ "$state" = degraded ] || [ $SECONDS -ge $deadline ]; do
    sleep 0.2
    state="$(in_ct systemctl is-system-running 2>/dev/null || true)"
done
case "$state" in
running) ;;
degraded) say "the container's systemd is degraded: $(in_ct systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')" ;;
*) cat "$console" >&2; fail "the container's systemd did not finish booting: '$state'" ;;
esac
say "booted systemd $(in_ct systemctl --version | awk 'NR==1 {print $2}') as PID 1 of the container ($state)"

# The install: apt, with the package's Depends (php-fpm, its Recommends, is there).
in_ct apt-get install -y -qq --no-install-recommends /root/warren.deb >&2 || fail "apt-get install ./warren.deb"
say "installed: $(in_ct dpkg-query -W -f='${Package} ${Version} ${Status}' warren)"
in_ct systemctl is-enabled warren >/dev/null || fail "the package did not enable warren.service"
# The postinst started it, and its warren.socket (which holds port 80 and
# would start warren again at the first connection); the target is timed
# from a start of our own, without the socket until its own part below.
in_ct systemctl stop warren.socket warren
in_ct systemctl is-active warren.socket >/dev/null && fail "warren.socket still active after systemctl stop"
cp "$root/root/info.php" "$root/var/www/html/info.php"

url="http://127.0.0.1"
answers() { # the default page and PHP, both
    in_net curl -fsS --max-time 5 "$url/" 2>/dev/null | grep -q 'warren: it works' &&
        [ "$(in_net curl -fsS --max-time 5 "$url/info.php" 2>/dev/null)" = "php says 42 from fpm-fcgi" ]
}
errors_log="$root/var/log/warren/error.log"
count_in_log() { grep -c "$1" "$errors_log" 2>/dev/null || true; }

# One MPM: chosen by a LoadModule line in conf.d (the package's warren.conf
# includes conf.d/*.conf and names none), then start, reload, stop. The
# same file raises LogLevel to notice (the package's is warn) for the start
# and SIGHUP lines the checks read.
under_mpm() {
    local mpm=$1 started t0 t_started t_served main_pid r0 s0 state result hups
    printf 'LoadModule mpm_%s_module modules/mod_mpm_%s.so\nLogLevel notice\n' "$mpm" "$mpm" > "$root/etc/warren/conf.d/mpm.conf"
    in_ct /usr/sbin/warren -f /etc/warren/warren.conf -V | grep -q "^Server MPM: *$mpm$" || fail "conf.d/mpm.conf did not choose the $mpm MPM"
    # A stop (the postinst's start, the last MPM's run) may still be letting
    # go of port 80 on a loaded machine: wait for that, at most 20 s.
    deadline=$((SECONDS + 20))
    while answers; do
        [ $SECONDS -lt $deadline ] || fail "something answers on port 80 before systemctl start"
        sleep 0.1
    done
    t0=$(date +%s%N)
    in_ct systemctl start warren || { in_ct journalctl -u warren --no-pager >&2; fail "$mpm: systemctl start warren"; }
    t_started=$(date +%s%N)
    deadline=$((SECONDS + 20))
    until answers; do
        [ $SECONDS -lt $deadline ] || { in_ct journalctl -u warren --no-pager >&2; fail "$mpm: no default page and PHP on port 80 within 20 s of systemctl start"; }
        sleep 0.01
    done
    t_served=$(date +%s%N)
    ms() { echo $(( ($1 - t0) / 1000000 )); }
    say "$mpm: systemctl start returned after $(ms "$t_started") ms (READY=1); the default page and PHP answered $(ms "$t_served") ms after the start"
    [ "$(ms "$t_served")" -le 2000 ] || fail "$mpm: serving took $(ms "$t_served") ms after systemctl start (target: 2000)"
    echo "$mpm start-to-serving-ms $(ms "$t_served") start-returned-ms $(ms "$t_started")"
    started="$(grep 'resuming normal operations' "$errors_log" | tail -n 1)"
    grep -q "(mpm $mpm," <<<"$started" || fail "$mpm: the error log's last start line names another MPM: $started"

    # systemctl reload under load: wrk's 50 connections on the default page,
    # two reloads in its 6 seconds. Each must be a graceful restart: the
    # same main PID, and warren's log line for a SIGHUP.
    main_pid="$(in_ct systemctl show -p MainPID --value warren)"
    hups=$(count_in_log 'SIGHUP received: graceful restart')
    in_net wrk -t2 -c50 -d6s "$url/" > "$root/root/wrk.out" 2>&1 &
    WRK=$!
    sleep 1.5
    for n in 1 2; do
        r0=$(date +%s%N)
        in_ct systemctl reload warren || { in_ct journalctl -u warren --no-pager >&2; fail "$mpm: systemctl reload warren ($n)"; }
        say "$mpm: systemctl reload $n returned after $(( ($(date +%s%N) - r0) / 1000000 )) ms"
        sleep 1.5
    done
    wait $WRK || fail "$mpm: wrk: $(cat "$root/root/wrk.out")"
    [ "$(in_ct systemctl show -p MainPID --value warren)" = "$main_pid" ] || fail "$mpm: the main PID changed over the reloads (a restart, not a reload)"
    [ "$(in_ct systemctl is-active warren)" = active ] || fail "$mpm: warren is not active after the reloads"
    [ "$(count_in_log 'SIGHUP received: graceful restart')" -eq $((hups + 2)) ] || fail "$mpm: the error log has not two more graceful restarts"
    result="$(wrk_failures "$root/root/wrk.out")"
    say "$mpm: wrk -t2 -c50 -d6s through two reloads: $result"
    echo "$mpm reload-under-wrk $result"
    grep -q 'Socket errors' "$root/root/wrk.out" && fail "$mpm: wrk saw socket errors over the reloads: $(grep 'Socket errors' "$root/root/wrk.out")"
    grep -q 'Non-2xx' "$root/root/wrk.out" && fail "$mpm: wrk saw non-2xx answers over the reloads"

    s0=$(date +%s%N)
    in_ct systemctl stop warren
    say "$mpm: systemctl stop returned after $(( ($(date +%s%N) - s0) / 1000000 )) ms"
    state="$(in_ct systemctl is-active warren || true)"
    [ "$state" = inactive ] || fail "$mpm: warren is $state after systemctl stop"
    ! in_net curl -fsS -o /dev/null --max-time 2 "$url/" 2>/dev/null || fail "$mpm: port 80 still answers after systemctl stop"
    [ -z "$(in_ct pgrep -x 'php-fpm8.[0-9]' || true)" ] || fail "$mpm: php-fpm left running after systemctl stop"
}
for mpm in ${MPMS:-event worker prefork}; do under_mpm "$mpm"; done

# Socket activation: the package's warren.socket has systemd hold port 80
# (and 443, which the default configuration has no Listen line for: warren
# closes it with a warning). A `systemctl restart warren` (a stop and a
# start, not a graceful restart) under wrk then refuses no connection: they
# wait in the socket's queue while no warren runs.
printf 'LoadModule mpm_event_module modules/mod_mpm_event.so\nLogLevel notice\n' > "$root/etc/warren/conf.d/mpm.conf"
in_ct systemctl start warren.socket || fail "systemctl start warren.socket"
in_ct systemctl start warren || { in_ct journalctl -u warren --no-pager >&2; fail "socket activation: systemctl start warren"; }
deadline=$((SECONDS + 20))
until answers; do
    [ $SECONDS -lt $deadline ] || fail "socket activation: nothing answers on port 80"
    sleep 0.05
done
grep -q 'passed by systemd as descriptor .*no Listen directive names its address' "$errors_log" ||
    fail "socket activation: no warning for the passed 443 socket no Listen line takes"
! grep -q 'systemd passed no socket for this address' "$errors_log" || fail "socket activation: warren bound a Listen address itself: $(grep 'systemd passed no socket' "$errors_log")"
main_pid="$(in_ct systemctl show -p MainPID --value warren)"
in_net wrk -t2 -c50 -d6s "$url/" > "$root/root/wrk.out" 2>&1 &
WRK=$!
sleep 1.5
r0=$(date +%s%N)
in_ct systemctl restart warren || { in_ct journalctl -u warren --no-pager >&2; fail "socket activation: systemctl restart warren"; }
say "socket activation: systemctl restart returned after $(( ($(date +%s%N) - r0) / 1000000 )) ms"
wait $WRK || fail "wrk: $(cat "$root/root/wrk.out")"
[ "$(in_ct systemctl show -p MainPID --value warren)" != "$main_pid" ] || fail "socket activation: the main PID did not change over systemctl restart"
result="$(wrk_failures "$root/root/wrk.out")"
say "socket activation: wrk -t2 -c50 -d6s through systemctl restart: $result"
echo "socket-restart-under-wrk $result"
# wrk counts a refused connection as a write (or read) error, not a connect
# one (its connect is non-blocking): every error counts.
grep -q 'Socket errors' "$root/root/wrk.out" && fail "socket activation: wrk saw socket errors over systemctl restart: $(grep 'Socket errors' "$root/root/wrk.out")"
grep -q 'Non-2xx' "$root/root/wrk.out" && fail "socket activation: wrk saw non-2xx answers over systemctl restart"
in_ct systemctl stop warren warren.socket
say "PASS: under systemd, warren served within 2 s of start, reloaded twice under wrk with no failed request, and stopped (${MPMS:-event worker prefork}); with warren.socket, a restart under wrk refused no connection"
