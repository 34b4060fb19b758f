#!/usr/bin/env bash
# ws-echo: what a WebSocket message round trip through an HTTP/1.1 tunnel
# costs the server, warren (event MPM, `ProxyPass ws://`) against nginx
# (`proxy_pass` with the Upgrade and Connection headers), both with two
# processes, configured as bench/ws_idle.sh does, to one echo backend
# (Python `websockets`, bench/ws_idle.py). ROUNDS interleaved pairs: each
# round starts warren, then nginx; N tunnels are opened, then SAMPLES round
# trips of a 32-byte message are timed, each on a tunnel picked at random
# (bench/ws_echo.py): the server's CPU per round trip (/proc ticks of all
# its processes, and the share of it in the kernel), and the round trip's
# median and p99. Client, server and backend share the machine's cores: CPU
# per round trip is the server's own figure, the round trip is everyone's.
# `taskset -c 0 bench/ws_echo.sh` puts all three on one core: no wake-up
# crosses cores (on a VM a costly one, which moves the figures more than
# the server's own work). Loopback only.
#
# STRACE=1: instead of CPU, `strace -c -f` on the server's children (the
# warren child or nginx worker that carries the tunnels, and the other)
# over the timed round trips, printed per round trip: the system calls,
# epoll_wait returns and the failed calls (EAGAIN reads) that a message
# costs. strace slows the server: its round trips are not a measure then.
#
# Usage: bench/ws_echo.sh [N] [SAMPLES] [ROUNDS]   (100, 5000, 3; WARREN=path: a given binary)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

N=${1:-100}
SAMPLES=${2:-5000}
ROUNDS=${3:-3}
PORT=${PORT:-18500}
PY=${WARREN_TEST_PYTHON:-/opt/warren-test-venv/bin/python}
need nginx:nginx curl:curl
[ "${STRACE:-0}" = 1 ] && need strace:strace
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
build_warren
comparison_workdir ws-echo
start_ws_echo_backend
ws_tunnel_confs "$N"

# strace_start PID OUT: strace -c -f on PID's children into OUT, returning
# once every thread of theirs is traced; prints 0 (ws_echo.py wants a word).
strace_start() {
    local args=() p
    for p in $(pgrep -P "$1"); do args+=(-p "$p"); done
    strace -c -f -o "$2" "${args[@]}" >/dev/null 2>&1 &
    echo $! > "$2.pid"
    for _ in $(seq 1 100); do
        ! grep -qs '^TracerPid:[[:space:]]*0$' $(for p in $(pgrep -P "$1"); do echo /proc/"$p"/task/*/status; done) && break
        sleep 0.1
    done
    echo 0
}
# strace_stop OUT: ends strace_start's strace and waits for its summary.
strace_stop() {
    kill -INT "$(cat "$1.pid")"
    for _ in $(seq 1 100); do grep -qs '^100.00' "$1" && break; sleep 0.1; done
    echo 0
}
# user_sys PID: the user and system CPU ticks of PID and its children, as USER,SYS.
user_sys() {
    local user=0 sys=0 p u s
    for p in $1 $(pgrep -P "$1" || true); do
        read -r u s <<<"$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $14, $13 + $15}')"
        user=$((user + ${u:-0}))
        sys=$((sys + ${s:-0}))
    done
    echo "$user,$sys"
}
export -f strace_start strace_stop user_sys

hz=$(getconf CLK_TCK)
echo "ws-echo: $N tunnels, $SAMPLES round trips of 32 bytes a run, $ROUNDS rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); warren $WARREN, $(nginx -v 2>&1 | sed 's|.*/|nginx |')"
[ "${STRACE:-0}" = 1 ] || printf '%-6s %-8s %8s %8s %14s %10s %12s %12s\n' round server tunnels ticks "CPU µs/trip" "of it sys" "rtt med µs" "rtt p99 µs"
for round in $(seq 1 "$ROUNDS"); do
    for server in warren-event nginx; do
        start_ws_tunnel_server "$server" || continue
        if [ "${STRACE:-0}" = 1 ]; then
            out=$WORK/$server.$round.strace
            read -r opened _ _ med p99 _ <<<"$("$PY" bench/ws_echo.py "$WS_PORT" /ws/ "$N" "$SAMPLES" "strace_start $SERVER_PID $out" "strace_stop $out")"
            echo "round $round ${server%-event}: $opened tunnels, per round trip (strace: median $med µs, p99 $p99):"
            # strace -c's rows: % time, seconds, usecs/call, calls, [errors,] syscall.
            awk -v n="$SAMPLES" '$1 ~ /^[0-9.]+$/ && $NF != "total" { calls = $4; errors = (NF == 6) ? $5 : 0; total += calls; printf "    %-16s %6.2f calls %6.2f failed\n", $NF, calls / n, errors / n }
                END { printf "    %-16s %6.2f calls\n", "all", total / n }' "$out"
        else
            read -r opened before after med p99 _ <<<"$("$PY" bench/ws_echo.py "$WS_PORT" /ws/ "$N" "$SAMPLES" "user_sys $SERVER_PID" "user_sys $SERVER_PID")"
            printf '%-6s %-8s %8s %s %12s %12s\n' "$round" "${server%-event}" "$opened" \
                "$(awk -v b="$before" -v a="$after" -v n="$SAMPLES" -v hz="$hz" 'BEGIN { split(b, x, ","); split(a, y, ","); t = y[1] + y[2] - x[1] - x[2]; s = y[2] - x[2]
                    printf "%8d %14.1f %9.0f%%", t, t * 1e6 / hz / n, t ? 100 * s / t : 0 }')" "$med" "$p99"
        fi
        stop_server
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
