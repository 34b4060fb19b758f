#!/usr/bin/env bash
# CPU per proxied upload under the event MPM: warren relaying a 1 MB
# request body to an HTTP backend as it arrives (/up/, the default) against
# reading it whole first (/buf/, SetEnv proxy-sendcl: a temporary file past
# 64 KB, then a worker thread), rounds interleaved on one server. The
# backend is the tests' Python recorder (crates/warren/tests/proxy_upload/
# backend.py), so req/s is the backend's; the figure is warren's CPU time
# (parent and children, user and system, from /proc ticks) per upload.
# Usage: bench/proxy_upload_cpu.sh [WARREN_BINARY]
#        (N=100 uploads a round, ROUNDS=3, SIZE=1048576, PORT=18590)
set -euo pipefail
cd "$(dirname "$0")/.."
WARREN=${1:-target/debug/warren}
N=${N:-100} ROUNDS=${ROUNDS:-3} SIZE=${SIZE:-1048576} PORT=${PORT:-18590}
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
LoadModule mpm_event_module modules/mod_mpm_event.so
Listen 127.0.0.1:$PORT
ServerName localhost
DocumentRoot $WORK/htdocs
PidFile $WORK/warren.pid
ErrorLog $WORK/error.log
StartServers 1
ThreadsPerChild 4
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
python3 - "$WORK/warren.pid" "$PORT" "$N" "$ROUNDS" "$SIZE" <<'PY'
import http.client, os, sys, time
pidfile, port, n, rounds, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
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

def upload_round(path):
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
