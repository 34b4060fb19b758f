#!/usr/bin/env bash
# Requests lost when one of two warren hosts behind Debian's HAProxy is
# stopped gracefully and started again, each host in a network namespace of
# its own (ip netns, a veth pair to the host) as on two machines: HAProxy
# sends the PROXY protocol (send-proxy-v2, health checks too) and each
# warren reads it (RemoteIPProxyProtocol On). wrk keeps 50 keep-alive
# connections busy through HAProxy for 12 s on a static file, then on a PHP
# script (warren's own pool of php-cgi); 3 s in, host a gets
# `warren -k graceful-stop`, and once it has exited and HAProxy has marked
# it DOWN it is started again.
# Prints wrk's requests, socket errors and non-2xx answers for each MPM and
# URL (target: 0 and 0), and what HAProxy saw (a DOWN, then an UP).
# bench/lb_drain.sh is the same drain on loopback without the restart.
# Run as root. About 15 s per MPM and URL.
# Usage: bench/lb_netns.sh [WARREN_BINARY]   (default: target/release/warren;
#        MPMS="event worker prefork")
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
[ "$(id -u)" = 0 ] || { echo "lb_netns.sh: run as root (ip netns)" >&2; exit 2; }
need wrk:wrk php-cgi:php-cgi haproxy:haproxy curl:curl ip:iproute2
PORT=${PORT:-18097}
D=$(mktemp -d /tmp/warren-lbns.XXXX)
chmod 755 "$D"
NS=()
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    for ns in "${NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$D"
}
trap cleanup EXIT
php_site "$D"
echo up > "$D/htdocs/check.txt"

# netns NAME N: namespace NAME, its end of a veth pair 10.238.N.2/30, the
# host's 10.238.N.1.
netns() {
    ip netns del "$1" 2>/dev/null || true
    ip netns add "$1"; NS+=("$1")
    ip link add "lbh$2" type veth peer name "lbn$2"
    ip link set "lbn$2" netns "$1"
    ip addr add "10.238.$2.1/30" dev "lbh$2"; ip link set "lbh$2" up
    ip netns exec "$1" ip addr add "10.238.$2.2/30" dev "lbn$2"
    ip netns exec "$1" ip link set "lbn$2" up
    ip netns exec "$1" ip link set lo up
}
netns "warren-lb-a-$$" 1
netns "warren-lb-b-$$" 2
checks="send-proxy-v2 check check-send-proxy inter 200ms fall 2 rise 2"
haproxy_drain_conf "$PORT" /check.txt "server a 10.238.1.2:8080 $checks" "server b 10.238.2.2:8080 $checks" > "$D/haproxy.cfg"
start_host() { # MPM NAME N
    php_pool_conf "$1" 8080 "$2" "GracefulShutdownTimeout 10" "RemoteIPProxyProtocol On" \
        | sed "s/^Listen .*/Listen 10.238.$3.2:8080/" > "$D/$2.conf"
    ip netns exec "warren-lb-$2-$$" "$BIN" -f "$D/$2.conf" &
    for _ in $(seq 100); do [ -s "$D/$2.pid" ] && return; sleep 0.1; done
    echo "host $2 did not start: $(cat "$D/$2.error.log")" >&2; exit 1
}
for MPM in ${MPMS:-event worker prefork}; do
    for URL in /a.txt /hello.php; do
        start_host "$MPM" a 1; start_host "$MPM" b 2
        haproxy -f "$D/haproxy.cfg" -db > "$D/haproxy.log" 2>&1 & H=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$URL" >/dev/null && break; sleep 0.1; done
        sleep 1
        wrk -t2 -c50 -d12s "http://127.0.0.1:$PORT$URL" > "$D/wrk.out" & W=$!
        sleep 3
        A=$(cat "$D/a.pid")
        "$BIN" -f "$D/a.conf" -k graceful-stop
        t=$SECONDS
        while kill -0 "$A" 2>/dev/null; do sleep 0.05; done
        stopped=$((SECONDS - t))
        # Restarted once HAProxy has taken it out (its checks fail twice).
        for _ in $(seq 100); do grep -q 'is DOWN' "$D/haproxy.log" && break; sleep 0.1; done
        start_host "$MPM" a 1
        wait $W
        echo "$MPM $URL: $(wrk_failures "$D/wrk.out"); a stopped in ${stopped} s and restarted; HAProxy saw $(grep -c 'is DOWN' "$D/haproxy.log" || true) DOWN, $(grep -c 'is UP' "$D/haproxy.log" || true) UP"
        kill $H; wait $H 2>/dev/null || true
        "$BIN" -f "$D/a.conf" -k stop; "$BIN" -f "$D/b.conf" -k stop
        for _ in $(seq 100); do [ -f "$D/a.pid" ] || [ -f "$D/b.pid" ] || break; sleep 0.1; done
        sleep 0.5
    done
done
