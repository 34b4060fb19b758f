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

cat > "$WORK/warren-event.conf" <<CONF
$(warren_base_conf event proxy proxy_wstunnel)
StartServers 2
ServerLimit 2
ThreadsPerChild 25
MaxRequestWorkers 50
# A tunnel is one of these (its backend socket is not counted): room for
# all of them in either child, as nginx's worker_connections below.
MaxChildConnections $((N + 100))
ProxyPass /ws/ ws://127.0.0.1:$BACKEND/
ProxyWebsocketIdleTimeout 600
# Every tunnel comes from 127.0.0.1: no per-client bound (nginx has none).
ProxyWebsocketMaxPerClient 0
CONF
# No PHP here: nginx_conf names a php-fpm socket nobody serves.
FPM_SOCK=$WORK/none.sock
nginx_conf 2 "127.0.0.1:$PORT" -- \
    "map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }" \
    "server { listen 127.0.0.1:$((PORT + 1)); location /ws/ { proxy_pass http://127.0.0.1:$BACKEND/; proxy_http_version 1.1; proxy_set_header Upgrade \$http_upgrade; proxy_set_header Connection \$connection_upgrade; proxy_read_timeout 600s; } }"
# Room for two sockets a tunnel in each of the two workers.
sed -i "s/worker_connections 4096;/worker_connections $((2 * N + 1000));/; s/^worker_processes 2;/worker_processes 2;\nworker_rlimit_nofile $((2 * N + 2000));/" "$WORK/nginx.conf"

measure() { # name port
    local out
    out=$("$PY" bench/ws_idle.py client "$2" /ws/ "$N" "$SAMPLES" ". bench/lib.sh; pss $SERVER_PID")
    echo "$1 $out"
}

echo "ws-idle: $N tunnels, $SAMPLES round trips; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); warren $("$WARREN" --version | awk '{print $2}'), $(nginx -v 2>&1 | sed 's|.*/|nginx |')"
printf '%-8s %8s %10s %12s %12s %12s\n' server tunnels "PSS kB" "idle PSS kB" "rtt med µs" "rtt p99 µs"
for server in warren-event nginx; do
    port=$PORT
    [ "$server" = nginx ] && port=$((PORT + 1))
    if ! start_server "$server" "http://127.0.0.1:$PORT"; then
        echo "$server: ${WHY[$server]}"
        continue
    fi
    idle=$(pss "$SERVER_PID")
    read -r name opened kb med p99 <<<"$(measure "$server" "$port")"
    printf '%-8s %8s %10s %12s %12s %12s\n' "${name%-event}" "$opened" "$kb" "$idle" "$med" "$p99"
    stop_server
done
