#!/usr/bin/env bash
# Requests lost to graceful restarts: wrk keeps 50 keep-alive connections
# busy on a static file, then on a PHP script (warren's own pool of php-cgi),
# while warren is told `-k graceful` five times, 1.5 s apart. Prints wrk's
# socket errors and non-2xx answers for each MPM (target: 0 and 0).
# Loopback only; about 12 s per MPM and URL.
# Usage: bench/reload.sh [WARREN_BINARY]   (default: target/release/warren)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
command -v php-cgi >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq php-cgi; }
PORT=${PORT:-18091}
RESTARTS=${RESTARTS:-5}
for MPM in ${MPMS:-event worker prefork}; do
    for URL in /a.txt /hello.php; do
        D=$(mktemp -d /tmp/warren-reload.XXXX)
        mkdir -p "$D/htdocs"; echo hello > "$D/htdocs/a.txt"
        echo '<?php echo "hello\n";' > "$D/htdocs/hello.php"
        chmod -R a+rX "$D"
        cat > "$D/w.conf" <<CONF
LoadModule mpm_${MPM}_module x
Listen 127.0.0.1:$PORT
DocumentRoot htdocs
PidFile w.pid
ErrorLog error.log
User nobody
Group nogroup
<Pool php>
    Command php-cgi
    pm static
    pm.max_children 4
</Pool>
<FilesMatch "\.php$">
    SetHandler pool:php
</FilesMatch>
CONF
        "$BIN" -f "$D/w.conf" & P=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$URL" >/dev/null && break; sleep 0.1; done
        wrk -t2 -c50 -d$((RESTARTS * 3 / 2 + 3))s "http://127.0.0.1:$PORT$URL" > "$D/wrk.out" & W=$!
        sleep 1.5
        for _ in $(seq "$RESTARTS"); do "$BIN" -f "$D/w.conf" -k graceful; sleep 1.5; done
        wait $W
        errors=$(awk '/Socket errors/ {gsub(",", ""); print "connect " $4 " read " $6 " write " $8 " timeout " $10}' "$D/wrk.out")
        non2xx=$(awk '/Non-2xx/ {print $NF}' "$D/wrk.out")
        total=$(awk '/requests in/ {print $1}' "$D/wrk.out")
        echo "$MPM $URL: $total requests, socket errors: ${errors:-none}, non-2xx: ${non2xx:-0}"
        kill $P; wait $P 2>/dev/null || true
        rm -rf "$D"
    done
done
