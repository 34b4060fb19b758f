#!/usr/bin/env bash
# Slow-client attacks with a real tool, and what a normal client sees during them.
#
# slowhttptest (Debian's package) opens 1,000 connections against one server at
# a time and keeps them busy in one of three ways:
#   slowloris    -H  a request head that never ends: one more header line every 10 s
#   slow-body    -B  a POST to the PHP script announcing 100,000 bytes and sending
#                    a few bytes every 10 s (what holds a backend if the server hands
#                    the body over as it comes instead of reading it first)
#   slow-read    -X  a GET answered in full at once, read 32 bytes every 5 s through a
#                    tiny TCP window: against a 10 MB static file (holds whatever
#                    sends it) and against a PHP script printing 1 MB (holds the
#                    PHP child if the server relays the answer at the client's pace)
# plus a row without attack. While the 1,000 connections are open (from 8 s after
# the attack starts, once all are made) two normal clients run for 10 s, side by
# side: one fetching a 45-byte static file, one a small PHP script, each 20
# requests a second on fresh connections (`warren bench --rate 20 -c 20`, open
# loop: a response time counts from when the request was due, so a stalled
# server shows its queue). Each cell gives their p99 (ms, over the answers that
# came) and how many of the 200 due requests (RATE x SECS) did not get a 2xx/3xx answer within
# 10 s (timeouts, errors, 503s, and requests never sent because all 20 of the
# client's connections were waiting).
#
# Servers, one at a time, each on its own port, each restarted for every attack:
#   warren event, worker, prefork: their defaults (no MPM block), PHP in warren's own
#       <Pool> of php-cgi (pm static, pm.max_children 4), User nobody
#   nginx + php-fpm: worker_processes auto, worker_connections 4096 (as bench/compare.sh),
#       Debian's timeouts (60 s), fastcgi buffering on (its default)
#   Apache event + mod_proxy_fcgi + php-fpm: Debian's mpm_event values and Debian's
#       default mod_reqtimeout (header=20-40,minrate=500 body=10,minrate=500)
# php-fpm is a pool of its own (pm static, 4 children, its own config and socket in
# the scratch directory, not Debian's service), restarted with each server.
#
# Loopback only; about 10 minutes; cleans up its processes and scratch directory.
# slowhttptest, the servers and the clients share the machine's cores: compare
# servers within one run.
# Usage: bench/slow_attacks.sh [WARREN_BINARY]     (default: target/release/warren)
#   SERVERS="warren-event warren-worker warren-prefork nginx apache" chooses servers,
#   ATTACKS="none slowloris slow-body slow-read-static slow-read-php" the attacks,
#   CONNS=1000 the attack's connections, RAMP=8, SECS=10 and RATE=20 the clients' start,
#   length and rate, LOGS=DIR keeps every log (servers', php-fpm's,
#   slowhttptest's, the clients' JSON) in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVERS=${SERVERS:-warren-event warren-worker warren-prefork nginx apache}
ATTACKS=${ATTACKS:-none slowloris slow-body slow-read-static slow-read-php}
CONNS=${CONNS:-1000}
RAMP=${RAMP:-8}   # seconds from the attack's start to the clients' start (1000 at 200/s: 5 s)
SECS=${SECS:-10}  # the clients' run
RATE=${RATE:-20}  # each client's requests a second
LOGS=${LOGS:-}

need=()
command -v slowhttptest >/dev/null 2>&1 || need+=(slowhttptest)
[ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/sbin/apache2 ] || need+=(apache2)
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need+=(php-fpm)
command -v php-cgi >/dev/null 2>&1 || need+=(php-cgi)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian starts the services it installs; they must not take our CPU.
for s in nginx apache2; do service "$s" stop >/dev/null 2>&1 || true; done
for p in /run/php/php*-fpm.pid; do [ -f "$p" ] && start-stop-daemon --stop --quiet --retry=QUIT/10/TERM/5/KILL/5 --pidfile "$p" >/dev/null 2>&1 || true; done
# 1,000 attack connections and the clients': raise the soft limit as far as allowed.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
ulimit -n "$nofile"

WARREN=$(realpath -m "${1:-target/release/warren}")
[ -x "$WARREN" ] || cargo build --release --locked -q
FPM_BIN=$(ls /usr/sbin/php-fpm* | sort | tail -1)

WORK=$(mktemp -d /tmp/warren-slow-attacks.XXXXXX)
SERVER_PID=
FPM_PID=
ATTACK_PID=
# Each of these runs in a session of its own (setsid), so that its whole process
# group can be ended, children included, and nothing else.
stop() { # pid: TERM, up to 3 s, then KILL to its process group
    local p=$1
    [ -n "$p" ] || return 0
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
stop_all() {
    stop "$ATTACK_PID"; ATTACK_PID=
    stop "$SERVER_PID"; SERVER_PID=
    stop "$FPM_PID"; FPM_PID=
}
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The site: readable by the servers' unprivileged users.
DOC=$WORK/htdocs
mkdir -p "$DOC" "$WORK/nginx-tmp"
printf '<html><body><h1>It works!</h1></body></html>\n' > "$DOC/index.html"   # 45 bytes
printf '<?php echo "Hello World";' > "$DOC/hello.php"                         # 11 bytes
printf '<?php echo str_repeat("x", 1048576);' > "$DOC/big.php"                # 1 MB
head -c 10485760 /dev/zero > "$DOC/big.bin"                                    # 10 MB
chmod 755 "$WORK"; chmod -R a+rX "$DOC"
chown www-data: "$WORK/nginx-tmp"

port() { case $1 in warren-event) echo 18101 ;; warren-worker) echo 18102 ;; warren-prefork) echo 18103 ;; nginx) echo 18104 ;; apache) echo 18105 ;; esac; }

start_fpm() {
    local sock=$WORK/php-fpm.sock
    cat > "$WORK/php-fpm.conf" <<CONF
[global]
error_log = $WORK/php-fpm.log
daemonize = no
[slow]
user = www-data
group = www-data
listen = $sock
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = 4
CONF
    rm -f "$sock"
    setsid "$FPM_BIN" -F -y "$WORK/php-fpm.conf" >/dev/null 2>&1 & FPM_PID=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
}

start_server() { # name
    local name=$1 p; p=$(port "$1")
    case $name in
    warren-*)
        cat > "$WORK/$name.conf" <<CONF
LoadModule mpm_${name#warren-}_module x
Listen 127.0.0.1:$p
ServerName localhost
DocumentRoot $DOC
PidFile $WORK/$name.pid
ErrorLog $WORK/$name-error.log
User nobody
Group nogroup
<Pool php>
    Command php-cgi
    pm static
    pm.max_children 4
</Pool>
<FilesMatch "\.php\$">
    SetHandler pool:php
</FilesMatch>
CONF
        setsid "$WARREN" -f "$WORK/$name.conf" 2>>"$WORK/$name-error.log" & SERVER_PID=$!
        ;;
    nginx)
        start_fpm
        cat > "$WORK/nginx.conf" <<CONF
user www-data;
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    access_log off;
    client_body_temp_path $WORK/nginx-tmp/body;
    fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
    proxy_temp_path $WORK/nginx-tmp/proxy;
    uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
    scgi_temp_path $WORK/nginx-tmp/scgi;
    server {
        listen 127.0.0.1:$p;
        root $DOC;
        index index.html;
        location ~ \.php\$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_pass unix:$WORK/php-fpm.sock;
        }
    }
}
CONF
        setsid /usr/sbin/nginx -c "$WORK/nginx.conf" -g 'daemon off;' 2>>"$WORK/nginx-error.log" & SERVER_PID=$!
        ;;
    apache)
        start_fpm
        local m=/usr/lib/apache2/modules
        cat > "$WORK/apache.conf" <<CONF
ServerRoot /etc/apache2
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule mime_module $m/mod_mime.so
LoadModule dir_module $m/mod_dir.so
LoadModule reqtimeout_module $m/mod_reqtimeout.so
LoadModule proxy_module $m/mod_proxy.so
LoadModule proxy_fcgi_module $m/mod_proxy_fcgi.so
Include /etc/apache2/mods-available/reqtimeout.conf
Include /etc/apache2/mods-available/mpm_event.conf
Listen 127.0.0.1:$p
ServerName localhost
User www-data
Group www-data
DocumentRoot $DOC
PidFile $WORK/apache.pid
ErrorLog $WORK/apache-error.log
Mutex file:$WORK default
TypesConfig /etc/mime.types
DirectoryIndex index.html
<Directory $DOC>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$WORK/php-fpm.sock|fcgi://localhost"
</FilesMatch>
CONF
        setsid /usr/sbin/apache2 -f "$WORK/apache.conf" -DFOREGROUND 2>>"$WORK/apache-error.log" & SERVER_PID=$!
        ;;
    esac
    for _ in $(seq 100); do curl -sf -m 2 -o /dev/null "http://127.0.0.1:$p/index.html" && break; sleep 0.1; done
    # It must answer every file whole, or its figures mean nothing.
    local f got
    for f in index.html:45 hello.php:11 big.php:1048576 big.bin:10485760; do
        got=$(curl -s -m 10 -o /dev/null -w '%{http_code}:%{size_download}' "http://127.0.0.1:$p/${f%%:*}")
        if [ "$got" != "200:${f##*:}" ]; then
            echo "$name answered $got for /${f%%:*}; expected 200:${f##*:}" >&2
            exit 1
        fi
    done
}

start_attack() { # attack port
    local a=(-c "$CONNS" -r 200 -l $((RAMP + SECS + 20)) -p 5 -g -o "$WORK/sht") url="http://127.0.0.1:$2"
    case $1 in
    slowloris)        a+=(-H -i 10 -x 24 -u "$url/index.html") ;;
    slow-body)        a+=(-B -i 10 -x 10 -s 100000 -u "$url/hello.php") ;;
    slow-read-static) a+=(-X -w 512 -y 1024 -n 5 -z 32 -k 1 -u "$url/big.bin") ;;
    slow-read-php)    a+=(-X -w 512 -y 1024 -n 5 -z 32 -k 1 -u "$url/big.php") ;;
    esac
    setsid slowhttptest "${a[@]}" > "$WORK/sht.out" 2>&1 & ATTACK_PID=$!
}

# p99 (ms) and failures out of RATE*SECS, from warren bench's JSON.
summary() {
    python3 - "$1" $((RATE * SECS)) <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("- all"); sys.exit()
ok = r["successful_transactions"]
p99 = f'{r["percentiles_ms"]["99"]:.1f}' if r["transactions"] else "-"
print(p99, max(int(sys.argv[2]) - ok, 0))
PY
}

# slowhttptest's connections still open when the clients were halfway (its CSV:
# seconds, closed, pending, connected, service available).
connected_at() {
    awk -F, -v t="$1" 'NR > 1 && $1 + 0 <= t { c = $4 } END { print c + 0 }' "$WORK/sht.csv" 2>/dev/null || echo "?"
}

declare -A R
run() { # server attack
    local p; p=$(port "$1")
    start_server "$1"
    rm -f "$WORK"/sht.*
    if [ "$2" != none ]; then start_attack "$2" "$p"; sleep "$RAMP"; fi
    "$WARREN" bench --rate "$RATE" -c 20 -t "$SECS" --timeout 10s --threads 1 --json \
        "http://127.0.0.1:$p/index.html" > "$WORK/static.json" 2>/dev/null & local s=$!
    "$WARREN" bench --rate "$RATE" -c 20 -t "$SECS" --timeout 10s --threads 1 --json \
        "http://127.0.0.1:$p/hello.php" > "$WORK/php.json" 2>/dev/null & local h=$!
    wait $s $h || true
    R[$1,$2,static]=$(summary "$WORK/static.json")
    R[$1,$2,php]=$(summary "$WORK/php.json")
    R[$1,$2,open]=-
    [ "$2" = none ] || R[$1,$2,open]=$(connected_at $((RAMP + SECS / 2)))
    if [ -n "$LOGS" ]; then
        local d="$LOGS/$1/$2"; mkdir -p "$d"
        cp "$WORK"/*.json "$d/"; cp "$WORK"/sht.* "$d/" 2>/dev/null || true
        cp "$WORK"/*error.log "$WORK"/php-fpm.log "$d/" 2>/dev/null || true
    fi
    stop_all
    rm -f "$WORK"/*error.log "$WORK/php-fpm.log"
    printf '%-15s %-17s static p99 %8s ms, %3s failed | php p99 %8s ms, %3s failed | attack connections open %s\n' \
        "$1" "$2" ${R[$1,$2,static]} ${R[$1,$2,php]} "${R[$1,$2,open]}" >&2
}

echo "warren $("$WARREN" --version | awk '{print $2}') ($(git rev-parse --short HEAD 2>/dev/null || echo '?')), nginx $(/usr/sbin/nginx -v 2>&1 | sed 's|.*/||'), Apache $(/usr/sbin/apache2 -v | sed -n 's|.*Apache/\([^ ]*\).*|\1|p'), $(slowhttptest -h 2>&1 | sed -n 's/.*version \(.*\)/slowhttptest \1/p'); $(nproc) cores; $CONNS attack connections; clients $RATE req/s each for ${SECS}s" >&2
for server in $SERVERS; do
    for attack in $ATTACKS; do run "$server" "$attack"; done
done

echo
echo "p99 in ms over the answers that came / requests of $((RATE * SECS)) without a 2xx-3xx answer within 10 s; 'open': the attack's connections open at mid-run"
printf '| %-14s | %-16s | %16s | %16s | %6s |\n' server attack "static p99 / fail" "PHP p99 / fail" open
printf '| %-14s | %-16s | %16s | %16s | %6s |\n' --- --- ---: ---: ---:
for server in $SERVERS; do
    for attack in $ATTACKS; do
        read -r sp sf <<<"${R[$server,$attack,static]}"
        read -r pp pf <<<"${R[$server,$attack,php]}"
        printf '| %-14s | %-16s | %16s | %16s | %6s |\n' "$server" "$attack" "$sp / $sf" "$pp / $pf" "${R[$server,$attack,open]}"
    done
done
