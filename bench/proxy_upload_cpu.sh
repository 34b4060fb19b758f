#!/usr/bin/env bash
# CPU per proxied upload under the event MPM: warren relaying a 1 MB
# request body to an HTTP backend as it arrives (/up/, the default) against
# reading it whole first (/buf/, SetEnv proxy-sendcl: a temporary file past
# 64 KB, then a worker thread), rounds interleaved on one server. The
# backend is the tests' Python recorder (crates/warren/tests/proxy_upload/
# backend.py), so req/s is the backend's; the figure is warren's CPU time
# (parent and children, user and system, from /proc ticks) per upload.
# H2=1: the uploads are HTTP/2 streams (h2c, prior knowledge, with Python's
# `h2` from the tests' venv, H2_PYTHON), one connection a round; MPM=prefork
# or worker to measure those instead of event.
# Usage: bench/proxy_upload_cpu.sh [WARREN_BINARY]
#        (N=100 uploads a round, ROUNDS=3, SIZE=1048576, PORT=18590)
set -euo pipefail
cd "$(dirname "$0")/.."
WARREN=${1:-target/debug/warren}
N=${N:-100} ROUNDS=${ROUNDS:-3} SIZE=${SIZE:-1048576} PORT=${PORT:-18590} H2=${H2:-0} MPM=${MPM:-event}
H2_PYTHON=${H2_PYTHON:-/opt/warren-test-venv/bin/python}
CLIENT_PYTHON=python3
[ "$H2" = 1 ] && CLIENT_PYTHON=$H2_PYTHON
WORK=$(mktemp -d /tmp/warren-upload-bench.XXXXXX)
BACKEND=
cleanup() {
    [ -f "$WORK/warren.pid" ] && kill "$(cat "$WORK/warren.pid")" 2>/dev/null || true
    [ -n "$BACKEND" ] && kill "$BACKEND" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
mkfifo "$WORK/stdin"
python3 crates/warren/tests/proxy_upload/backend.py < "$WORK/stdin" > "$WORK/port" &
BACKEND=$!
exec 3> "$WORK/stdin"
until [ -s "$WORK/port" ]; do sleep 0.1; done
BP=$(head -1 "$WORK/port")
mkdir -p "$WORK/htdocs"
cat > "$WORK/warren.conf" <<CONF
LoadModule mpm_${MPM}_module modules/mod_mpm_${MPM}.so
Protocols h2c http/1.1
Listen 127.0.0.1:$PORT
ServerName localhost
DocumentRoot $WORK/htdocs
PidFile $WORK/warren.pid
ErrorLog $WORK/error.log
StartServers 1
$( [ "$MPM" = prefork ] || echo "ThreadsPerChild 4" )
MaxRequestWorkers 4
User nobody
Group nogroup
ProxyPass /up/ http://127.0.0.1:$BP/
ProxyPass /buf/ http://127.0.0.1:$BP/
SetEnvIf Request_URI ^/buf/ proxy-sendcl
CONF
"$WARREN" -f "$WORK/warren.conf" > "$WORK/stdout" 2>&1 &
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
    sleep 0.1
done
[ -s "$WORK/warren.pid" ] || { cat "$WORK/stdout" "$WORK/error.log" 2>/dev/null; exit 1; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$CLIENT_PYTHON" - "$WORK/warren.pid" "$PORT" "$N" "$ROUNDS" "$SIZE" "$H2" <<'PY'
import http.client, os, socket, sys, time
pidfile, port, n, rounds, size, h2mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"

parent = int(open(pidfile).read())
body = os.urandom(size)
hz = os.sysconf("SC_CLK_TCK")

def ticks():
    pids = [parent] + [int(p) for p in open(f"/proc/{parent}/task/{parent}/children").read().split()]
    total = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total

def h2_round(path):
    import h2.config, h2.connection, h2.events
    sock = socket.create_connection(("127.0.0.1", port))
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    t0, w0 = ticks(), time.time()
    for _ in range(n):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":authority", "localhost"), (":path", path + "upload?id=bench"), ("content-length", str(size))])
        left, text, done = body, b"", False
        while not done:
            while left:
                room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                if room <= 0:
                    break
                conn.send_data(sid, left[:room], end_stream=len(left) <= room)
                left = left[room:]
            sock.sendall(conn.data_to_send())
            for ev in conn.receive_data(sock.recv(65536)):
                if isinstance(ev, h2.events.DataReceived):
                    text += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamEnded):
                    done = True
            sock.sendall(conn.data_to_send())
        assert f"bytes={size}".encode() in text, text
    t1, w1 = ticks(), time.time()
    sock.close()
    return (t1 - t0) / hz / n * 1e6, n / (w1 - w0)

def upload_round(path):
    if h2mode:
        return h2_round(path)
    c = http.client.HTTPConnection("127.0.0.1", port)
    t0, w0 = ticks(), time.time()
    for _ in range(n):
        c.request("POST", path + "upload?id=bench", body=body)
        r = c.getresponse()
        text = r.read()
        assert r.status == 200 and f"bytes={size}".encode() in text, text
    t1, w1 = ticks(), time.time()
    c.close()
    return (t1 - t0) / hz / n * 1e6, n / (w1 - w0)

upload_round("/up/")  # warm-up: the children the MPM starts at first are not counted
got = {"/up/": [], "/buf/": []}
for r in range(rounds):
    for path in got:
        cpu, rate = upload_round(path)
        got[path].append(cpu)
        print(f"{path:6} round {r}: {cpu:.0f} us CPU per upload of {size} bytes ({rate:.1f} req/s)", flush=True)
for path, v in got.items():
    print(f"{path:6} {min(v):.0f}-{max(v):.0f} us")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
