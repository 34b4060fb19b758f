#!/usr/bin/env bash
# The CPU and memory a hostile request head costs warren's children: one
# ~785 KB head (98 fields of 8000 bytes, inside the default limits) sent 100
# bytes at a time with a pause between pieces, so that the server reads it
# piece by piece. Prints the children's CPU (from /proc utime+stime) and RSS
# before and after, for each MPM. Loopback only; one request per MPM.
# Usage: bench/slow_head.sh [WARREN_BINARY]   (default: target/release/warren)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/warren}
[ -x "$BIN" ] || cargo build --release --locked
PORT=${PORT:-18090}
for MPM in event worker prefork; do
    D=$(mktemp -d /tmp/warren-slow-head.XXXX)
    mkdir -p "$D/htdocs"; echo hello > "$D/htdocs/a.txt"; chmod -R a+rX "$D"
    printf 'LoadModule mpm_%s_module x\nListen 127.0.0.1:%s\nDocumentRoot htdocs\nPidFile w.pid\nErrorLog error.log\nUser nobody\nGroup nogroup\nStartServers 1\n' "$MPM" "$PORT" > "$D/w.conf"
    "$BIN" -f "$D/w.conf" & P=$!
    for _ in $(seq 50); do [ -f "$D/w.pid" ] && break; sleep 0.1; done
    sleep 0.5
    cpu() { local t=0; for c in $(pgrep -P $P); do t=$((t + $(awk '{print $14+$15}' /proc/$c/stat))); done; echo $t; }
    rss() { local t=0; for c in $(pgrep -P $P); do t=$((t + $(awk '/VmRSS/{print $2}' /proc/$c/status))); done; echo $t; }
    c0=$(cpu); r0=$(rss)
    status=$(python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
head = b"GET /a.txt HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 8000) for i in range(98))
sent = 0
try:
    for i in range(0, len(head), 100):
        s.sendall(head[i:i + 100])
        sent = i + 100
        time.sleep(0.0002)
    s.sendall(b"Connection: close\r\n\r\n")
except OSError:
    pass  # refused part way: the answer is waiting
data = b""
try:
    while (d := s.recv(65536)):
        data += d
except OSError:
    pass
print(data.split(b"\r\n")[0].decode(), "after", min(sent, len(head)), "bytes sent")
PY
)
    c1=$(cpu); r1=$(rss)
    echo "$MPM: $status; children CPU $(( (c1 - c0) * 10 )) ms; children RSS ${r0} kB -> ${r1} kB"
    kill $P; wait $P 2>/dev/null || true
    rm -rf "$D"
done
