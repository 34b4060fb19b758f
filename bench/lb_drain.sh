#!/usr/bin/env bash
# Requests lost when one of two warren servers behind HAProxy (Debian's) is
# stopped gracefully, the drain a load balancer expects: wrk keeps 50
# keep-alive connections busy through HAProxy (round robin, health checks,
# `option redispatch`, `retries 3`) on a static file, then on a PHP script
# (warren's own pool of php-cgi), while `warren -k graceful-stop` stops one
# server. Prints wrk's socket errors and non-2xx answers for each MPM
# (target: 0 and 0). MPMS may also name apache-prefork (or apache-event,
# apache-worker): two Debian Apache httpd servers with that MPM, each with a
# php-fpm of the same pm settings, the drain by apache2 -k graceful-stop.
# Loopback only; about 8 s per MPM and URL.
# Usage: bench/lb_drain.sh [WARREN_BINARY]   (default: target/release/warren)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
need wrk:wrk php-cgi:php-cgi haproxy:haproxy curl:curl
PORT=${PORT:-18095}
A=$((PORT + 1)); B=$((PORT + 2))
D=$(mktemp -d /tmp/warren-lb.XXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
php_site "$D"
haproxy_drain_conf "$PORT" /a.txt "server a 127.0.0.1:$A check inter 500ms" "server b 127.0.0.1:$B check inter 500ms" > "$D/haproxy.cfg"
# The server's control command: warren's, or Apache's for apache-*.
ctl() { # NAME -k ACTION
    case $MPM in
    apache-*) /usr/sbin/apache2 -f "$D/$1.conf" "${@:2}" ;;
    *) "$BIN" -f "$D/$1.conf" "${@:2}" ;;
    esac
}
FPMS=()
start_warren() { # MPM PORT NAME
    case $1 in
    apache-*)
        php_fpm_for_apache "$D" "$3" "pm = static" "pm.max_children = 4"; FPMS+=("$FPM_PID")
        apache_php_conf "${1#apache-}" "$2" "$D" "$3" "GracefulShutdownTimeout 10" > "$D/$3.conf"
        # Its own session: Apache prefork answers TERM by signalling its process group.
        setsid /usr/sbin/apache2 -f "$D/$3.conf" -DFOREGROUND & ;;
    *)
        php_pool_conf "$1" "$2" "$3" "GracefulShutdownTimeout 10" > "$D/$3.conf"
        "$BIN" -f "$D/$3.conf" & ;;
    esac
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$2/hello.php" >/dev/null && return; sleep 0.1; done
}
for MPM in ${MPMS:-event worker prefork}; do
    for URL in /a.txt /hello.php; do
        start_warren "$MPM" "$A" a; start_warren "$MPM" "$B" b
        haproxy -f "$D/haproxy.cfg" -db > "$D/haproxy.log" 2>&1 & H=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$URL" >/dev/null && break; sleep 0.1; done
        sleep 1
        wrk -t2 -c50 -d8s "http://127.0.0.1:$PORT$URL" > "$D/wrk.out" & W=$!
        sleep 3
        ctl a -k graceful-stop
        wait $W
        down=$(grep -c "is DOWN" "$D/haproxy.log" || true)
        echo "$MPM $URL: $(wrk_failures "$D/wrk.out"); HAProxy saw a server go down: $down"
        kill $H; wait $H 2>/dev/null || true
        ctl b -k stop
        for _ in $(seq 100); do [ -f "$D/a.pid" ] || [ -f "$D/b.pid" ] || break; sleep 0.1; done
        if [ ${#FPMS[@]} -gt 0 ]; then kill "${FPMS[@]}" 2>/dev/null || true; wait "${FPMS[@]}" 2>/dev/null || true; FPMS=(); fi
        sleep 0.5
    done
done
