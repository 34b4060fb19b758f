# Shell functions shared by the bench scripts (sourced, not run).

# need CMD:PACKAGE ... installs the Debian packages of the commands missing.
need() {
    local missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
}

# php_site DIR: a static file (a.txt) and a PHP script (hello.php) under DIR/htdocs.
php_site() {
    mkdir -p "$1/htdocs"
    echo hello > "$1/htdocs/a.txt"
    echo '<?php echo "hello\n";' > "$1/htdocs/hello.php"
    chmod -R a+rX "$1"
}

# php_pool_conf MPM PORT NAME [DIRECTIVE...]: a warren config serving
# htdocs, with its PHP in a pool of four php-cgi children; NAME names the
# pid file and error log; each further argument is one more line.
php_pool_conf() {
    printf '%s\n' "LoadModule mpm_$1_module x" "Listen 127.0.0.1:$2" "DocumentRoot htdocs" \
        "PidFile $3.pid" "ErrorLog $3.error.log" "User nobody" "Group nogroup" "${@:4}" \
        "<Pool php>" "    Command php-cgi" "    pm static" "    pm.max_children 4" "</Pool>" \
        "<FilesMatch \"\\.php\$\">" "    SetHandler pool:php" "</FilesMatch>"
}

# wrk_failures FILE: wrk's requests, socket errors and non-2xx/3xx answers, in one line.
wrk_failures() {
    local errors non2xx total
    errors=$(awk '/Socket errors/ {gsub(",", ""); print "connect " $4 " read " $6 " write " $8 " timeout " $10}' "$1")
    non2xx=$(awk '/Non-2xx/ {print $NF}' "$1")
    total=$(awk '/requests in/ {print $1}' "$1")
    echo "$total requests, socket errors: ${errors:-none}, non-2xx: ${non2xx:-0}"
}

# tls_certs DIR: a self-signed ECDSA P-256 (DIR/ecdsa.crt, .key) and RSA 2048
# (DIR/rsa.crt, .key) certificate for localhost and 127.0.0.1, valid 2 days.
tls_certs() {
    local name
    for name in ecdsa rsa; do
        local key=(-newkey rsa:2048)
        [ "$name" = ecdsa ] && key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
        openssl req -x509 -nodes -days 2 -subj /CN=localhost "${key[@]}" \
            -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=critical,CA:FALSE" \
            -addext "keyUsage=digitalSignature" -addext "extendedKeyUsage=serverAuth" \
            -keyout "$1/$name.key" -out "$1/$name.crt" 2>/dev/null
    done
    chmod 644 "$1"/*.crt "$1"/*.key
}

# quiet_debian_services: Debian starts the services it installs; they must
# not hold the ports or the CPU the comparisons measure. Also raises the
# open-files limit for the many connections.
quiet_debian_services() {
    systemctl stop nginx apache2 >/dev/null 2>&1 || service nginx stop >/dev/null 2>&1 || true
    service apache2 stop >/dev/null 2>&1 || true
    # Debian's php-fpm by its pid file alone: its init script's stop also
    # signals every process running the php-fpm binary (start-stop-daemon
    # --exec), which on a shared machine are other runs' pools and php-fpms.
    local p
    for p in /run/php/php*-fpm.pid; do [ -f "$p" ] && start-stop-daemon --stop --quiet --retry=QUIT/10/TERM/5/KILL/5 --pidfile "$p" >/dev/null 2>&1 || true; done
    ulimit -n 65536 2>/dev/null || true
}

# build_warren: WARREN, the binary measured: a release build of this tree
# unless WARREN names one (a build from before a change, to show the
# change's effect in the same conditions).
build_warren() {
    if [ -z "${WARREN:-}" ]; then
        cargo build --release --locked -q
        WARREN=$PWD/target/release/warren
    fi
}

# comparison_workdir PREFIX: WORK (removed on exit, with the server of
# SERVER_PID and the php-fpm of FPM_PID stopped), and DOCROOT in it with
# the compared files: index.html (45 bytes), file100k.bin, hello.php.
comparison_workdir() {
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    SERVER_PID=
    FPM_PID=
    trap cleanup EXIT
    DOCROOT=$WORK/htdocs
    mkdir -p "$DOCROOT"
    # nginx and Apache workers run unprivileged: they must be able to read the files.
    chmod 755 "$WORK"
    printf '<html><body><h1>It works!</h1></body></html>\n' > "$DOCROOT/index.html"   # 45 bytes
    head -c 102400 /dev/urandom > "$DOCROOT/file100k.bin"
    printf '<?php echo "Hello World";' > "$DOCROOT/hello.php"
}

# stop_server: stops the server of SERVER_PID (TERM, then KILL after 10 s).
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
    fi
}

cleanup() {
    stop_server
    if [ -n "$FPM_PID" ]; then kill -TERM "$FPM_PID" 2>/dev/null || true; wait "$FPM_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}

# start_php_fpm: one php-fpm pool every compared server shares (pm static,
# 4 children, as DESIGN.md's figures), its socket FPM_SOCK in WORK, its
# pid FPM_PID (stopped by cleanup).
start_php_fpm() {
    FPM_SOCK=$WORK/php.sock
    cat > "$WORK/php-fpm.conf" <<CONF
[global]
error_log = $WORK/php-fpm.log
daemonize = no
[bench]
listen = $FPM_SOCK
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = 4
CONF
    local bin
    bin=$(ls /usr/sbin/php-fpm* | sort | tail -1)
    "$bin" -R -F -y "$WORK/php-fpm.conf" >/dev/null 2>&1 & FPM_PID=$!
    for _ in $(seq 1 100); do [ -S "$FPM_SOCK" ] && break; sleep 0.1; done
}

# cpu_ticks PID: the CPU time (user and system, in clock ticks) of a process
# and its children, with that of the children they have waited for.
cpu_ticks() {
    local total=0 p v
    for p in $1 $(pgrep -P "$1" || true); do
        # The fields after the command name, which may hold spaces.
        v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15}')
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

# pss PID: PSS in kB of a process and all its descendants (php-cgi, the
# pool's PHP workers, not counted for anyone).
pss() {
    local total=0 p v
    for p in $1 $(pgrep -P "$1" || true); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = php-cgi ] && continue
        v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

# The event MPM block as the seeds give it (Apache's and Debian's defaults).
EVENT_BLOCK="<IfModule mpm_event_module>
    StartServers 2
    MinSpareThreads 25
    MaxSpareThreads 75
    ThreadLimit 64
    ThreadsPerChild 25
    MaxRequestWorkers 150
    MaxConnectionsPerChild 0
</IfModule>"

# ssl_vhost CERTS: mod_ssl's directives of a TLS virtual host, as warren and
# Apache read them, with tls_certs' two certificates in CERTS.
ssl_vhost() {
    cat <<SSL
    SSLEngine on
    SSLCertificateFile $1/ecdsa.crt
    SSLCertificateKeyFile $1/ecdsa.key
    SSLCertificateFile $1/rsa.crt
    SSLCertificateKeyFile $1/rsa.key
    SSLProtocol -all +TLSv1.2 +TLSv1.3
    SSLSessionTickets on
SSL
}

# apache_modules MODULE...: Apache's LoadModule lines for the event MPM and
# what serves the compared files (mod_proxy_fcgi for PHP), then the ones named.
apache_modules() {
    local m
    for m in mpm_event authz_core mime dir proxy proxy_fcgi "$@"; do
        echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_$m.so"
    done
}

# apache_base_conf MPM [MODULE...]: the lines an Apache httpd (Debian's)
# comparison config opens with: MPM's module, authz_core and each MODULE
# loaded, listening on 127.0.0.1:PORT, serving DOCROOT, its pid file, error
# log and mutexes under WORK.
apache_base_conf() {
    local m
    echo "ServerRoot /etc/apache2"
    for m in "mpm_$1" authz_core "${@:2}"; do
        echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_$m.so"
    done
    printf '%s\n' "Listen 127.0.0.1:$PORT" "ServerName localhost" "DocumentRoot $DOCROOT" \
        "PidFile $WORK/apache.pid" "ErrorLog $WORK/apache-error.log" "Mutex file:$WORK default"
}

# warren_base_conf MPM [MODULE...]: the lines a warren comparison config
# opens with, as apache_base_conf: MPM's module and each MODULE loaded,
# listening on 127.0.0.1:PORT (with LISTEN_PROTOCOL after it when set, e.g.
# https), serving DOCROOT, its pid file and error log under WORK, its
# children as www-data (started as root, warren refuses to run them as root).
warren_base_conf() {
    local m
    for m in "mpm_$1" "${@:2}"; do
        echo "LoadModule ${m}_module modules/mod_$m.so"
    done
    printf '%s\n' "Listen 127.0.0.1:$PORT${LISTEN_PROTOCOL:+ $LISTEN_PROTOCOL}" "ServerName localhost" "DocumentRoot $DOCROOT" \
        "PidFile $WORK/warren.pid" "ErrorLog $WORK/warren-error.log" "User www-data" "Group www-data"
}

# launch_server NAME: starts NAME (warren-event, apache-event or nginx) with
# WORK/NAME.conf, in the foreground, its output in WORK/NAME.out, its pid
# SERVER_PID.
launch_server() {
    case $1 in
    warren-event) "$WARREN" -f "$WORK/$1.conf" >"$WORK/$1.out" 2>&1 & SERVER_PID=$! ;;
    # Its own session: Apache answers TERM by signalling its whole process group.
    apache-event) setsid /usr/sbin/apache2 -f "$WORK/$1.conf" -DFOREGROUND >"$WORK/$1.out" 2>&1 & SERVER_PID=$! ;;
    nginx) nginx -c "$WORK/nginx.conf" -g 'daemon off;' >"$WORK/$1.out" 2>&1 & SERVER_PID=$! ;;
    esac
}

# start_server NAME URL [CURL_OPTION...]: launches NAME and waits (10 s) for
# an answer to URL/index.html; 0 if one came, else 1 with the reason in
# WHY[NAME] (its refusal of the configuration, or curl's error) and the
# server stopped.
start_server() {
    local name=$1 url=$2; shift 2
    launch_server "$name"
    for _ in $(seq 1 100); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        curl -s "$@" -o /dev/null "$url/index.html" && return 0
        sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        local err
        err=$(curl -sS "$@" -o /dev/null "$url/index.html" 2>&1 | head -1)
        case $err in *"wrong version number"*) err="$err (it answered in plain HTTP: its listener does not speak TLS)" ;; esac
        WHY[$name]="no answer: $err"
    else
        WHY[$name]="refused its configuration: $(grep -v '^\s*$' "$WORK/$name.out" | head -1)"
    fi
    stop_server
    return 1
}

# serves_whole NAME VERSION URL [CURL_OPTION...]: 0 if the server answers
# 200 with the whole of each compared file (comparison_workdir's) at URL in
# HTTP version VERSION (curl's %{http_version}: 1.1, 2), else 1 with the
# reason in WHY[NAME] and the server stopped.
serves_whole() {
    local name=$1 version=$2 url=$3 f got; shift 3
    for f in index.html:45 file100k.bin:102400 hello.php:11; do
        got=$(curl -s "$@" -o /dev/null -w '%{http_code}:%{size_download}:%{http_version}' "$url/${f%%:*}")
        if [ "$got" != "200:${f##*:}:$version" ]; then
            WHY[$name]="answered $got (status:bytes:HTTP version) for $url/${f%%:*}; expected 200:${f##*:}:$version"
            stop_server
            return 1
        fi
    done
}

# The results: R[NAME,KEY] holds each round's figure, WHY[NAME] the reason a
# server was left out.
declare -A R WHY
# put NAME,KEY VALUE: one round's figure (ROUNDS > 1 keeps them all).
put() { R[$1]="${R[$1]:+${R[$1]} }${2:--}"; }

# The servers compared (compare_tls.sh, compare_h2.sh), and how many rounds.
SERVERS=${SERVERS:-warren-event nginx apache-event}
ROUNDS=${ROUNDS:-1}

# rounds MEASURE: MEASURE NAME for each of SERVERS, ROUNDS times in turn
# (warren, nginx, apache, warren, ...), so that on a shared machine a burst
# of other work spoils one round, not one server's figures; a server left
# out (WHY) is not tried again.
rounds() {
    local round s
    for round in $(seq 1 "$ROUNDS"); do
        for s in $SERVERS; do
            [ -n "${WHY[$s]:-}" ] && continue
            [ "$ROUNDS" -gt 1 ] && echo "round $round: $s" >&2
            "$1" "$s"
        done
    done
}

cell() { # name key: the median of the rounds' figures (n/a for a server left out)
    if [ -n "${WHY[$1]:-}" ]; then echo n/a; return; fi
    local v=${R[$1,$2]:--}
    # (For "a/b" figures, by a.)
    tr ' ' '\n' <<<"$v" | sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "-" }'; }
row() { printf "%-34s %10s %10s %10s %9s %9s\n" "$@"; }
line() { # label key: one row of the table, warren against nginx and Apache
    local w n a
    w=$(cell warren-event "$2"); n=$(cell nginx "$2"); a=$(cell apache-event "$2")
    row "$1" "$w" "$n" "$a" "$(ratio "$w" "$n")" "$(ratio "$w" "$a")"
}
# why_not: the reason of each server left out.
why_not() {
    local s
    for s in $SERVERS; do
        [ -n "${WHY[$s]:-}" ] && echo "$s: n/a: ${WHY[$s]}"
    done
    return 0
}

# versions: nginx's, OpenSSL's and Apache's, for a table's header.
versions() {
    echo "nginx $(nginx -v 2>&1 | sed 's|.*/||') ($(openssl version | awk '{print $1, $2}')), Apache $(/usr/sbin/apache2 -v | sed -n 's|.*Apache/\([^ ]*\).*|\1|p')"
}

# nginx_conf WORKERS LISTEN... [-- DIRECTIVE...]: WORK/nginx.conf, for
# comparison_workdir's DOCROOT (index.html, its PHP through FPM_SOCK),
# worker_processes WORKERS, a "listen LISTEN;" line for each LISTEN, each
# DIRECTIVE one more line of the http block, the access log off; with CERTS
# set, tls_certs' two certificates.
nginx_conf() {
    local workers=$1 listen="" more="" certs=""; shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do listen+="        listen $1;"$'\n'; shift; done
    [ $# -gt 0 ] && shift
    [ $# -gt 0 ] && more=$(printf '    %s\n' "$@")
    local c
    [ -n "${CERTS:-}" ] && for c in ecdsa rsa; do
        certs+="        ssl_certificate $CERTS/$c.crt;"$'\n'"        ssl_certificate_key $CERTS/$c.key;"$'\n'
    done
    cat > "$WORK/nginx.conf" <<CONF
worker_processes $workers;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    access_log off;
$more
    server {
$listen        server_name localhost;
$certs        root $DOCROOT;
        index index.html;
        location ~ \.php\$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_pass unix:$FPM_SOCK;
        }
    }
}
CONF
}

# php_fpm_for_apache DIR NAME [SETTING...]: a php-fpm serving DIR/NAME.sock
# (its log DIR/NAME.fpm.log, its pid FPM_PID), for Apache's PHP in the
# scripts that set Apache prefork beside warren; each further argument is
# one more line of its pool (pm settings: warren's <Pool> as the script has
# it). Waits for the socket.
php_fpm_for_apache() {
    local dir=$1 name=$2 bin
    { printf '%s\n' "[global]" "error_log = $dir/$name.fpm.log" "daemonize = no" "[www]" \
        "listen = $dir/$name.sock" "listen.mode = 0666" "listen.backlog = 4096" "user = nobody" "group = nogroup"
      printf '%s\n' "${@:3}"; } > "$dir/$name.fpm.conf"
    bin=$(ls /usr/sbin/php-fpm* | sort | tail -1)
    "$bin" -R -F -y "$dir/$name.fpm.conf" >/dev/null 2>&1 & FPM_PID=$!
    for _ in $(seq 100); do [ -S "$dir/$name.sock" ] && return; sleep 0.1; done
}

# apache_php_conf MPM PORT DIR NAME [DIRECTIVE...]: an Apache httpd
# (Debian's) config serving DIR/htdocs, its PHP through php_fpm_for_apache's
# socket DIR/NAME.sock, its pid file DIR/NAME.pid and error log
# DIR/NAME.error.log, as User nobody; each further argument is one more line.
apache_php_conf() {
    local AMOD=/usr/lib/apache2/modules
    cat <<CONF
ServerRoot /etc/apache2
LoadModule mpm_$1_module $AMOD/mod_mpm_$1.so
LoadModule authz_core_module $AMOD/mod_authz_core.so
LoadModule mime_module $AMOD/mod_mime.so
LoadModule proxy_module $AMOD/mod_proxy.so
LoadModule proxy_fcgi_module $AMOD/mod_proxy_fcgi.so
Listen 127.0.0.1:$2
ServerName localhost
DocumentRoot $3/htdocs
PidFile $3/$4.pid
ErrorLog $3/$4.error.log
Mutex file:$3 default
User nobody
Group nogroup
TypesConfig /etc/mime.types
<Directory $3/htdocs>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$3/$4.sock|fcgi://localhost"
</FilesMatch>
CONF
    printf '%s\n' "${@:5}"
}

# haproxy_drain_conf PORT CHECK_PATH SERVER_LINE...: HAProxy on
# 127.0.0.1:PORT balancing round robin over the servers (each argument one
# `server` line), health-checked with GET CHECK_PATH, and set to retry on
# the other server a request that finds its server gone (a drain's needs).
haproxy_drain_conf() {
    cat <<CONF
global
    maxconn 1000
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    option redispatch
    retries 3
    retry-on conn-failure empty-response response-timeout
frontend web
    bind 127.0.0.1:$1
    default_backend warren
backend warren
    balance roundrobin
    option httpchk GET $2
CONF
    printf '    %s\n' "${@:3}"
}

# start_ws_echo_backend: a WebSocket echo server (bench/ws_idle.py backend,
# Python `websockets` from PY) in BACKEND_PID, its port in BACKEND; it
# serves until its standard input (fd 3 here) closes, which the EXIT trap
# set here does, before cleanup. After comparison_workdir.
start_ws_echo_backend() {
    BACKEND_PID=
    trap 'exec 3>&- 2>/dev/null || true; [ -n "$BACKEND_PID" ] && kill "$BACKEND_PID" 2>/dev/null; cleanup' EXIT
    mkfifo "$WORK/backend.in"
    "$PY" bench/ws_idle.py backend < "$WORK/backend.in" > "$WORK/backend.port" & BACKEND_PID=$!
    exec 3> "$WORK/backend.in"
    for _ in $(seq 1 100); do [ -s "$WORK/backend.port" ] && break; sleep 0.1; done
    BACKEND=$(cat "$WORK/backend.port")
}

# ws_tunnel_confs N: WORK/warren-event.conf and WORK/nginx.conf for N
# WebSocket tunnels to the echo backend on BACKEND (start_ws_echo_backend),
# both servers with two processes: warren's `ProxyPass /ws/ ws://` on PORT,
# nginx's `proxy_pass` with the Upgrade and Connection headers on PORT + 1
# (its PORT serves DOCROOT, for start_server). For ws_idle.sh and ws_echo.sh.
ws_tunnel_confs() {
    local N=$1
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
}

# start_ws_tunnel_server NAME: starts NAME (warren-event or nginx) with
# ws_tunnel_confs' configuration, its tunnels' port in WS_PORT; 1, with
# the reason printed, if it did not start.
start_ws_tunnel_server() {
    WS_PORT=$PORT
    [ "$1" = nginx ] && WS_PORT=$((PORT + 1))
    start_server "$1" "http://127.0.0.1:$PORT" && return 0
    echo "$1: ${WHY[$1]}"
    return 1
}

# start_nginx_file_backend: the proxied backend of compare_proxy.sh and
# proxy_h2_cpu.sh: nginx, one worker, serving DOCROOT's files on
# BACKEND_PORT with kept connections; stopped (BACKEND_PID) on exit,
# returns once it answers.
start_nginx_file_backend() {
    cat > "$WORK/backend.conf" <<CONF
worker_processes 1;
pid $WORK/backend.pid;
error_log $WORK/backend-error.log;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    sendfile on;
    access_log off;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        root $DOCROOT;
    }
}
CONF
    nginx -c "$WORK/backend.conf" -g 'daemon off;' & BACKEND_PID=$!
    trap 'kill "$BACKEND_PID" 2>/dev/null || true; cleanup' EXIT
    for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$BACKEND_PORT/index.html" && break; sleep 0.1; done
}
