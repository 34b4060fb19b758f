#!/usr/bin/env bash
# Builds warren and serves the bundled example site on http://127.0.0.1:8080/:
# static files from example/htdocs, and its PHP through a php-fpm that this
# script starts for it (installed from Debian when missing). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/sbin/php-fpm* >/dev/null 2>&1; then
    echo "run.sh: installing php-fpm"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq php-fpm >/dev/null
fi
cargo build --release --locked

RUN=$(mktemp -d /tmp/warren-example.XXXXXX)
chmod 755 "$RUN"
cat > "$RUN/php-fpm.conf" <<CONF
[global]
error_log = $RUN/php-fpm.log
daemonize = no
[example]
listen = $RUN/php.sock
listen.mode = 0666
pm = dynamic
pm.max_children = 4
pm.start_servers = 1
pm.min_spare_servers = 1
pm.max_spare_servers = 2
CONF
# As root php-fpm needs -R to run its workers without a User.
FPM_BIN=$(ls /usr/sbin/php-fpm* | sort | tail -1)
"$FPM_BIN" -R -F -y "$RUN/php-fpm.conf" & FPM_PID=$!
cleanup() {
    kill -TERM "$FPM_PID" 2>/dev/null || true
    wait "$FPM_PID" 2>/dev/null || true
    rm -rf "$RUN"
}
trap cleanup EXIT INT TERM
for _ in $(seq 1 50); do [ -S "$RUN/php.sock" ] && break; sleep 0.1; done

echo "run.sh: serving example/htdocs on http://127.0.0.1:8080/ (PHP: http://127.0.0.1:8080/hello.php)"
PHP_FPM_SOCKET="$RUN/php.sock" ./target/release/warren -f example/warren.conf -D PHP
