#!/usr/bin/env bash
# CPU per proxied request for HTTP/2 clients: warren event (ProxyPass
# http:// to a kept-alive nginx serving comparison_workdir's files), two
# warren builds A and B run in turn (A B A B ...), each round h2load
# (h2c prior knowledge) through the front server; the figure is warren's CPU
# time (parent and children, user and system, from /proc ticks) per request,
# which a loaded machine disturbs far less than req/s.
#   proxy-45     the 45-byte index.html
#   proxy-100k   the 100 KB file
# Usage: bench/proxy_h2_cpu.sh A_BINARY B_BINARY
#        (N=20000 requests, CLIENTS=8, STREAMS=8 per client, ROUNDS=3,
#        PORT=18580, BACKEND_PORT=18581)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
A=$1 B=$2
declare -A WHY
N=${N:-20000}
CLIENTS=${CLIENTS:-8}
STREAMS=${STREAMS:-8}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18580}
BACKEND_PORT=${BACKEND_PORT:-18581}

need nginx:nginx h2load:nghttp2-client curl:curl
comparison_workdir warren-proxy-h2-bench
FPM_SOCK=$WORK/unused.sock

start_nginx_file_backend

cat > "$WORK/warren-event.conf" <<CONF
$(warren_base_conf event)
LogLevel warn
Protocols h2c http/1.1
StartServers 1
ThreadsPerChild 8
MaxRequestWorkers 8
ProxyPass /p/ http://127.0.0.1:$BACKEND_PORT/
CONF

# us_per_request URL: runs h2load on the server running as SERVER_PID.
us_per_request() {
    local before after done
    before=$(cpu_ticks "$SERVER_PID")
    done=$(h2load -n "$N" -c "$CLIENTS" -m "$STREAMS" "$1" 2>&1 | awk '/^requests:/ {print $8}')
    after=$(cpu_ticks "$SERVER_PID")
    [ "${done:-0}" -gt 0 ] || { echo "no request succeeded" >&2; exit 1; }
    awk -v t=$((after - before)) -v n="$done" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }'
}

printf "%-6s %-4s %12s %12s   %s\n" round build "proxy-45" "proxy-100k" "load average"
for round in $(seq 1 "$ROUNDS"); do
    for build in A B; do
        WARREN=${!build}
        start_server warren-event "http://127.0.0.1:$PORT" || { echo "$build: ${WHY[warren-event]}"; exit 1; }
        small=$(us_per_request "http://127.0.0.1:$PORT/p/index.html")
        large=$(us_per_request "http://127.0.0.1:$PORT/p/file100k.bin")
        printf "%-6s %-4s %9s us %9s us   %s\n" "$round" "$build" "$small" "$large" "$(cut -d' ' -f1-3 /proc/loadavg)"
        stop_server
    done
done
