#!/usr/bin/env bash
# Requests lost to graceful restarts: wrk keeps 50 keep-alive connections
# busy on a static file, then on a PHP script (warren's own pool of php-cgi),
# while warren is told `-k graceful` five times, 1.5 s apart. Prints wrk's
# socket errors and non-2xx answers for each MPM (target: 0 and 0).
# Loopback only; about 12 s per MPM and URL.
# Usage: bench/reload.sh [WARREN_BINARY]   (default: target/release/warren)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
need wrk:wrk php-cgi:php-cgi curl:curl
PORT=${PORT:-18091}
RESTARTS=${RESTARTS:-5}
for MPM in ${MPMS:-event worker prefork}; do
    for URL in /a.txt /hello.php; do
        D=$(mktemp -d /tmp/warren-reload.XXXX)
        php_site "$D"
        php_pool_conf "$MPM" "$PORT" w > "$D/w.conf"
        "$BIN" -f "$D/w.conf" & P=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$URL" >/dev/null && break; sleep 0.1; done
        wrk -t2 -c50 -d$((RESTARTS * 3 / 2 + 3))s "http://127.0.0.1:$PORT$URL" > "$D/wrk.out" & W=$!
        sleep 1.5
        for _ in $(seq "$RESTARTS"); do "$BIN" -f "$D/w.conf" -k graceful; sleep 1.5; done
        wait $W
        echo "$MPM $URL: $(wrk_failures "$D/wrk.out")"
        kill $P; wait $P 2>/dev/null || true
        rm -rf "$D"
    done
done
