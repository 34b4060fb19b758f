#!/usr/bin/env bash
# ws-idle: N idle WebSocket tunnels (10,000 by default) through warren
# (event MPM, `ProxyPass ws://`) and through nginx (`proxy_pass` with the
# Upgrade and Connection headers) in one run, to one echo backend (Python
# `websockets`, bench/ws_idle.py): the server's memory (PSS of all its
# processes, kB) while the tunnels are open and idle, and the round trip of
# a 32-byte message through a tunnel (median and p99 of SAMPLES, µs).
# Loopback only; each server gets at most 120 s to take the tunnels.
#
# Each tunnel is a socket in the client, one in the backend and two in the
# server: raise the open-files limit (run as root: `ulimit -n 65536` here)
# or lower N. Both servers run two processes (warren: StartServers 2 and
# ServerLimit 2; nginx: worker_processes 2).
#
# Usage: bench/ws_idle.sh [N] [SAMPLES]   (WARREN=path: a given binary)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

N=${1:-10000}
SAMPLES=${2:-2000}
PORT=${PORT:-18480}
PY=${WARREN_TEST_PYTHON:-/opt/warren-test-venv/bin/python}
need nginx:nginx curl:curl
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge $((2 * N + 100)) ] || { echo "ws_idle: ulimit -n is $(ulimit -n), $((2 * N + 100)) needed for N=$N" >&2; exit 1; }
build_warren
comparison_workdir ws-idle
start_ws_echo_backend

ws_tunnel_confs "$N"

measure() { # name port
    local out
    out=$("$PY" bench/ws_idle.py client "$2" /ws/ "$N" "$SAMPLES" ". bench/lib.sh; pss $SERVER_PID")
    echo "$1 $out"
}

echo "ws-idle: $N tunnels, $SAMPLES round trips; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); warren $("$WARREN" --version | awk '{print $2}'), $(nginx -v 2>&1 | sed 's|.*/|nginx |')"
printf '%-8s %8s %10s %12s %12s %12s\n' server tunnels "PSS kB" "idle PSS kB" "rtt med µs" "rtt p99 µs"
for server in warren-event nginx; do
    start_ws_tunnel_server "$server" || continue
    idle=$(pss "$SERVER_PID")
    read -r name opened kb med p99 <<<"$(measure "$server" "$WS_PORT")"
    printf '%-8s %8s %10s %12s %12s %12s\n' "${name%-event}" "$opened" "$kb" "$idle" "$med" "$p99"
    stop_server
done
