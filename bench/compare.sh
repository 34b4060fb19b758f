#!/usr/bin/env bash
# Compares warren (event MPM) with nginx and Apache httpd (event MPM) in one
# run, on loopback, with equivalent configurations and access logs off:
#   static-ka     45-byte index.html, keep-alive, 50 connections (wrk -t1 -c50)
#   static-close  the same, a new connection per request
#   100k          a 100 KB file, keep-alive, 50 connections
#   idle-1000     1000 idle keep-alive connections open, then one fresh request (ms)
#   memory        PSS of each server's processes, summed, after the runs (MB)
# Usage: bench/compare.sh            (DURATION=5 seconds per wrk run by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/sbin/apache2 ] || need+=(apache2)
command -v ab >/dev/null 2>&1 || need+=(apache2-utils)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian starts the services it installs; they must not hold our ports or CPU.
systemctl stop nginx apache2 >/dev/null 2>&1 || service nginx stop >/dev/null 2>&1 || true
service apache2 stop >/dev/null 2>&1 || true
ulimit -n 65536 2>/dev/null || true

cargo build --release --locked -q
WARREN=$PWD/target/release/warren

WORK=$(mktemp -d /tmp/warren-bench.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

DOCROOT=$WORK/htdocs
mkdir -p "$DOCROOT"
# nginx and Apache workers run unprivileged: they must be able to read the files.
chmod 755 "$WORK"
printf '<html><body><h1>It works!</h1></body></html>\n' > "$DOCROOT/index.html"   # 45 bytes
head -c 102400 /dev/urandom > "$DOCROOT/file100k.bin"

WPORT=18080 NPORT=18081 APORT=18082

cat > "$WORK/warren.conf" <<CONF
LoadModule mpm_event_module modules/mod_mpm_event.so
Listen 127.0.0.1:$WPORT
ServerName localhost
DocumentRoot $DOCROOT
PidFile $WORK/warren.pid
ErrorLog $WORK/warren-error.log
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
<IfModule mpm_event_module>
    StartServers 2
    MinSpareThreads 25
    MaxSpareThreads 75
    ThreadLimit 64
    ThreadsPerChild 25
    MaxRequestWorkers 150
    MaxConnectionsPerChild 0
</IfModule>
CONF

cat > "$WORK/nginx.conf" <<CONF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    access_log off;
    server {
        listen 127.0.0.1:$NPORT;
        root $DOCROOT;
        index index.html;
    }
}
CONF

AMOD=/usr/lib/apache2/modules
cat > "$WORK/apache.conf" <<CONF
ServerRoot /etc/apache2
LoadModule mpm_event_module $AMOD/mod_mpm_event.so
LoadModule authz_core_module $AMOD/mod_authz_core.so
LoadModule mime_module $AMOD/mod_mime.so
LoadModule dir_module $AMOD/mod_dir.so
Listen 127.0.0.1:$APORT
ServerName localhost
DocumentRoot $DOCROOT
PidFile $WORK/apache.pid
ErrorLog $WORK/apache-error.log
Mutex file:$WORK default
TypesConfig /etc/mime.types
DirectoryIndex index.html
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
<Directory $DOCROOT>
    Require all granted
</Directory>
<IfModule mpm_event_module>
    StartServers 2
    MinSpareThreads 25
    MaxSpareThreads 75
    ThreadLimit 64
    ThreadsPerChild 25
    MaxRequestWorkers 150
    MaxConnectionsPerChild 0
</IfModule>
CONF

wait_port() {
    for _ in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$1/index.html" && return 0
        sleep 0.1
    done
    echo "server on port $1 did not start" >&2
    return 1
}

"$WARREN" -f "$WORK/warren.conf" & PIDS+=($!); WPID=$!
nginx -c "$WORK/nginx.conf" -g 'daemon off;' & PIDS+=($!); NPID=$!
/usr/sbin/apache2 -f "$WORK/apache.conf" -DFOREGROUND & PIDS+=($!); APID=$!
wait_port $WPORT; wait_port $NPORT; wait_port $APORT

# Every server must answer 200 with the whole file, or its figures mean nothing.
for port in $WPORT $NPORT $APORT; do
    for f in index.html:45 file100k.bin:102400; do
        got=$(curl -s -o /dev/null -w '%{http_code}:%{size_download}' "http://127.0.0.1:$port/${f%%:*}")
        if [ "$got" != "200:${f##*:}" ]; then
            echo "server on port $port answered $got for /${f%%:*}; expected 200:${f##*:}" >&2
            exit 1
        fi
    done
done

# PSS in kB of a process and all its descendants.
pss() {
    local total=0 p
    for p in $1 $(pgrep -P "$1" || true); do
        local v
        v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

rps() { # port path [extra wrk args]
    local port=$1 path=$2; shift 2
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "$@" "http://127.0.0.1:$port$path" 2>/dev/null | awk '/Requests\/sec/ {printf "%d", $2}'
}

declare -A R
for name in warren nginx apache; do
    case $name in warren) port=$WPORT ;; nginx) port=$NPORT ;; apache) port=$APORT ;; esac
    rps "$port" /index.html >/dev/null   # warm-up
    R[$name,static-ka]=$(rps "$port" /index.html)
    R[$name,static-close]=$(rps "$port" /index.html -H 'Connection: close')
    R[$name,100k]=$(rps "$port" /file100k.bin)
done
for name in warren nginx apache; do
    case $name in warren) port=$WPORT ;; nginx) port=$NPORT ;; apache) port=$APORT ;; esac
    R[$name,idle-1000]=$(python3 bench/idle.py 127.0.0.1 "$port" 1000 /index.html | awk '{print $1}')
done
R[warren,memory]=$(pss $WPID); R[nginx,memory]=$(pss $NPID); R[apache,memory]=$(pss $APID)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "" && a != "fail") printf "%.2f", a / b; else printf "-" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

echo
echo "warren $("$WARREN" --version | awk '{print $2}') vs nginx $(nginx -v 2>&1 | sed 's|.*/||') vs Apache $(/usr/sbin/apache2 -v | sed -n 's|.*Apache/\([^ ]*\).*|\1|p') (event); wrk -t1 -c$CONNS -d${DURATION}s; $(nproc) cores"
printf "%-22s %10s %10s %10s %10s %10s\n" scenario warren nginx apache w/nginx w/apache
for sc in static-ka static-close 100k; do
    printf "%-22s %10s %10s %10s %10s %10s\n" "$sc (req/s)" "${R[warren,$sc]}" "${R[nginx,$sc]}" "${R[apache,$sc]}" \
        "$(ratio "${R[warren,$sc]}" "${R[nginx,$sc]}")" "$(ratio "${R[warren,$sc]}" "${R[apache,$sc]}")"
done
printf "%-22s %10s %10s %10s %10s %10s\n" "idle-1000 (ms)" "${R[warren,idle-1000]}" "${R[nginx,idle-1000]}" "${R[apache,idle-1000]}" \
    "$(ratio "${R[warren,idle-1000]}" "${R[nginx,idle-1000]}")" "$(ratio "${R[warren,idle-1000]}" "${R[apache,idle-1000]}")"
printf "%-22s %10s %10s %10s %10s %10s\n" "memory PSS (MB)" "$(mb "${R[warren,memory]}")" "$(mb "${R[nginx,memory]}")" "$(mb "${R[apache,memory]}")" \
    "$(ratio "${R[warren,memory]}" "${R[nginx,memory]}")" "$(ratio "${R[warren,memory]}" "${R[apache,memory]}")"
echo "(req/s: higher is better; ms and MB: lower is better)"
