#!/usr/bin/env bash
# h2ws-echo: the server's CPU per round trip of a 32-byte WebSocket message
# through a tunnel over HTTP/2 (RFC 8441, h2c), warren under each MPM given
# (prefork and event by default), runs interleaved: ROUNDS rounds, each
# starting every MPM's server in turn, SAMPLES round trips on one tunnel
# (bench/h2ws_echo.py), CPU from /proc ticks of warren and its children.
# One echo backend (Python `websockets`, bench/ws_idle.py) for all. nginx
# has no RFC 8441: no comparison. Loopback only.
#
# Usage: bench/h2ws_echo.sh [SAMPLES] [ROUNDS]
#   (WARREN=path: a given binary, e.g. target/debug/warren; MPMS="prefork worker event")
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

SAMPLES=${1:-20000}
ROUNDS=${2:-3}
MPMS=${MPMS:-prefork event}
PORT=${PORT:-18490}
PY=${WARREN_TEST_PYTHON:-/opt/warren-test-venv/bin/python}
need curl:curl
build_warren
comparison_workdir h2ws-echo
start_ws_echo_backend

for mpm in $MPMS; do
    cat > "$WORK/warren-$mpm.conf" <<CONF
$(warren_base_conf "$mpm" proxy proxy_wstunnel http2)
StartServers 2
Protocols h2c http/1.1
H2WebSockets on
ProxyPass /ws/ ws://127.0.0.1:$BACKEND/
CONF
done

echo "h2ws-echo: $SAMPLES round trips of 32 bytes a run, $ROUNDS rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); warren $WARREN"
printf '%-6s %-8s %8s %8s %12s %14s\n' round mpm ticks trips "wall s" "CPU µs/trip"
hz=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
    for mpm in $MPMS; do
        # launch_server knows the event conf's name; the others are started here alike.
        "$WARREN" -f "$WORK/warren-$mpm.conf" >"$WORK/warren-$mpm.out" 2>&1 & SERVER_PID=$!
        for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/index.html" && break; sleep 0.1; done
        read -r ticks trips wall <<<"$("$PY" bench/h2ws_echo.py "$PORT" /ws/ "$SAMPLES" ". bench/lib.sh; cpu_ticks $SERVER_PID")"
        printf '%-6s %-8s %8s %8s %12s %14s\n' "$round" "$mpm" "$ticks" "$trips" "$wall" "$(awk -v t="$ticks" -v n="$trips" -v hz="$hz" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
        stop_server
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
