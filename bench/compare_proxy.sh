#!/usr/bin/env bash
# Reverse proxy to a kept-alive HTTP backend: warren event (ProxyPass
# http://) vs nginx (proxy_pass to an `upstream { keepalive 32; }`) vs
# Apache event (mod_proxy_http), in one run, on loopback, one front server at
# a time, all proxying to the same backend: an nginx (one worker, access log
# off) serving comparison_workdir's files. Scenarios, each wrk -t1 -c50
# keep-alive through the front server:
#   proxy-45     the 45-byte index.html: req/s and p99 (ms)
#   proxy-100k   the 100 KB file: req/s and p99 (ms)
# and for each the CPU time per request of the front server (all its
# processes), of the backend and of wrk, and their sum.
# The client, the front server and the backend share the machine's cores, so
# the req/s ratio also shows how much CPU each front server leaves the others;
# ROUNDS=3 runs the servers in turn, each figure the median.
# Usage: bench/compare_proxy.sh   (DURATION=5, CONNS=50, PORT=18480,
#        BACKEND_PORT=18481; SERVERS="warren-event nginx apache-event"; ROUNDS=1;
#        WARREN=binary measures that build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
PORT=${PORT:-18480}
BACKEND_PORT=${BACKEND_PORT:-18481}

need nginx:nginx apache2:apache2 wrk:wrk curl:curl
quiet_debian_services
build_warren
comparison_workdir warren-proxy-bench
FPM_SOCK=$WORK/unused.sock

start_nginx_file_backend

BACKEND=http://127.0.0.1:$BACKEND_PORT
cat > "$WORK/warren-event.conf" <<CONF
$(warren_base_conf event)
ProxyPass / $BACKEND/ keepalive=On
$EVENT_BLOCK
CONF
cat > "$WORK/apache-event.conf" <<CONF
$(apache_base_conf event proxy proxy_http)
ProxyPass / $BACKEND/ keepalive=On
$EVENT_BLOCK
CONF
cat > "$WORK/nginx.conf" <<CONF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$PORT;
        server_name localhost;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF

# wrk_run PATH: "req/s p99ms front backend client" of one wrk run through
# the front server, the last three each party's CPU time over the run
# divided by the requests (us): the front server's processes, the backend
# nginx's, and wrk's own. On a loaded machine req/s shows how the cores
# were shared; CPU per request what each party costs, and their sum what
# a request costs the machine when the three share its cores.
wrk_run() {
    local f0 f1 b0 b1 client TIMEFORMAT='%U %S'
    f0=$(cpu_ticks "$SERVER_PID"); b0=$(cpu_ticks "$BACKEND_PID")
    client=$( { time wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT$1" > "$WORK/wrk.out" 2>/dev/null; } 2>&1 )
    f1=$(cpu_ticks "$SERVER_PID"); b1=$(cpu_ticks "$BACKEND_PID")
    awk -v front=$((f1 - f0)) -v backend=$((b1 - b0)) -v client="$client" -v hz="$(getconf CLK_TCK)" '
        /requests in/ { n = $1 }
        /Requests\/sec/ { rps = int($2) }
        $1 == "99%" { v = $2; if (v ~ /us$/) ms = v / 1000; else if (v ~ /ms$/) ms = v + 0; else if (v ~ /s$/) ms = v * 1000; }
        END {
            split(client, c, " ")
            if (n == 0) n = 1
            printf "%d %.2f %.1f %.1f %.1f", rps, ms, front * 1e6 / hz / n, backend * 1e6 / hz / n, (c[1] + c[2]) * 1e6 / n
        }' "$WORK/wrk.out"
}

measure() { # name
    local name=$1 out
    start_server "$name" "http://127.0.0.1:$PORT" || return 0
    for f in index.html:45 file100k.bin:102400; do
        got=$(curl -s -o /dev/null -w '%{http_code}:%{size_download}' "http://127.0.0.1:$PORT/${f%%:*}")
        [ "$got" = "200:${f##*:}" ] || { WHY[$name]="answered $got for /${f%%:*} through the proxy"; stop_server; return 0; }
    done
    wrk_run /index.html >/dev/null   # warm-up: backend connections opened, children grown
    for f in index.html:proxy-45 file100k.bin:proxy-100k; do
        read -r rps p99 front backend client <<< "$(wrk_run "/${f%%:*}")"
        put "$name,${f#*:}" "$rps"; put "$name,${f#*:}-p99" "$p99"; put "$name,${f#*:}-cpu" "$front"
        put "$name,${f#*:}-backend" "$backend"; put "$name,${f#*:}-client" "$client"
        put "$name,${f#*:}-all" "$(awk -v a="$front" -v b="$backend" -v c="$client" 'BEGIN { printf "%.1f", a + b + c }')"
    done
    stop_server
}

rounds measure
echo "warren $("$WARREN" --version | awk '{print $2}'), $(versions); wrk -t1 -c$CONNS -d${DURATION}s, $ROUNDS round(s); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
row scenario warren nginx apache w/nginx w/apache
line "proxy-45 (req/s)" proxy-45
line "proxy-45 p99 (ms)" proxy-45-p99
line "proxy-100k (req/s)" proxy-100k
line "proxy-100k p99 (ms)" proxy-100k-p99
for f in proxy-45 proxy-100k; do
    line "$f front server CPU (us/req)" $f-cpu
    line "$f backend CPU (us/req)" $f-backend
    line "$f wrk CPU (us/req)" $f-client
    line "$f all three (us/req)" $f-all
done
why_not
echo "(req/s: higher is better; ms and us/req: lower is better)"
