#!/usr/bin/env bash
# HTTP/2: warren event vs nginx (Debian's) vs Apache event with mod_http2 and
# mod_ssl (Debian's), in one run, on loopback, one server at a time, each
# with a cleartext h2 listener (h2c by prior knowledge) and a TLS one (ALPN
# h2; compare_tls.sh's certificates: ECDSA P-256 and RSA 2048, TLS 1.2 and
# 1.3), at most 100 streams at once a connection (H2MaxSessionStreams,
# http2_max_concurrent_streams), the same number of requests a connection
# may carry (KEEPALIVE_REQUESTS) and the same idle timeout (IDLE_TIMEOUT);
# access logs off. The client is h2load (Debian's nghttp2-client), one thread.
# Scenarios:
#   h2c-static      45-byte index.html, cleartext h2, h2load -c10 -m100: req/s
#   h2-static-tls   the same over TLS
#   h2-100k-tls     a 100 KB file over TLS, h2load -c10 -m10
#   h2-php          hello.php through one php-fpm pool every server shares (pm
#                   static, 4 children), over TLS, h2load -c10 -m10 (100 in
#                   flight, each server queueing them for the 4 children, as
#                   compare_tls.sh's 50 connections do); median of 3 runs
#   h2-idle-1000    1000 idle h2 connections (bench/idle.py --h2 --tls: TLS,
#                   ALPN h2, the preface and SETTINGS exchanged both ways, no
#                   request): the server's PSS then, and less its PSS with
#                   none, per connection still open (KB); a fresh h2
#                   request's time meanwhile (h2load -n1 -c1 over TLS:
#                   connect, handshake, SETTINGS, response; the median of 5),
#                   and first with none idle
#   attacks         bench/h2_attacks.py against the cleartext port for
#                   ATTACK_SECS (10) seconds, from one process: rapid-reset
#                   (CVE-2023-44487), continuation (flood), hpack-bomb,
#                   settings-flood, ping-flood, zero-window (held streams);
#                   from 1 s in, a normal client (h2load -c4 -m10 on
#                   index.html over h2c) for ATTACK_SECS - 2 s: its req/s and
#                   p99 (ms, from h2load's per-request log); the server is
#                   restarted for each attack, and a row "none" has no attack
# Until warren speaks HTTP/2, its column reads n/a with the reason (its refusal
# of the configuration, or what curl got instead of an HTTP/2 answer).
# Usage: bench/compare_h2.sh     (DURATION=5 seconds a run, PORT=18082 (h2c),
#        TLS_PORT=18445; WARREN=binary measures that build;
#        SERVERS="warren-event nginx apache-event"; ROUNDS=3: the servers in
#        turn three times, each figure the median; KEEPALIVE_REQUESTS=1000000;
#        IDLE_TIMEOUT=60; IDLE_REQUEST=1: h2-idle-1000's connections each make
#        one request before idling; ATTACKS="rapid-reset ..." (none: no
#        attack rows); ATTACK_SECS=10; LOGS=DIR keeps the servers' error logs
#        and outputs, php-fpm's log and the last attack's summary)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-5}
PORT=${PORT:-18082}
TLS_PORT=${TLS_PORT:-18445}
# Requests an h2 connection may carry: nginx's keepalive_requests (which
# bounds h2 connections since 1.19.7; 1000 by default), warren's and
# Apache's MaxKeepAliveRequests (Debian's mod_http2 is not bound by it:
# 32,041 requests on 2 connections with 100). h2load does not reconnect in
# a timed run: a connection the server closes is lost for the rest of the
# run (with 10000, nginx's 10 connections ended after 100,000 requests), so
# the default is more than a run makes.
KEEPALIVE_REQUESTS=${KEEPALIVE_REQUESTS:-1000000}
# How long an idle h2 connection is kept (KeepAliveTimeout, nginx's
# keepalive_timeout): long enough for idle.py to open all 1000.
IDLE_TIMEOUT=${IDLE_TIMEOUT:-60}
ATTACKS=${ATTACKS:-rapid-reset continuation hpack-bomb settings-flood ping-flood zero-window}
ATTACK_SECS=${ATTACK_SECS:-10}
LOGS=${LOGS:-}   # a directory to keep the servers' logs and outputs in
[ "$ATTACK_SECS" -ge 3 ] || ATTACK_SECS=3   # the normal client runs ATTACK_SECS - 2
STREAMS=100
H2LOAD_STATIC="-c10 -m100"
H2LOAD_BIG="-c10 -m10"
H2LOAD_NORMAL="-c4 -m10"

need nginx:nginx apache2:apache2 h2load:nghttp2-client curl:curl openssl:openssl python3:python3
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need php-fpm:php-fpm
quiet_debian_services
build_warren

comparison_workdir warren-bench-h2
CERTS=$WORK/certs
mkdir -p "$CERTS"
tls_certs "$CERTS"
start_php_fpm
SSL_VHOST=$(ssl_vhost "$CERTS")
PHP_HANDLER="<FilesMatch \"\\.php\$\">
    SetHandler \"proxy:unix:$FPM_SOCK|fcgi://localhost\"
</FilesMatch>"

# What warren and Apache share: both ports, HTTP/2 on both, the TLS host.
# ARGS: the name of the pid file and error log.
apache_style() {
    cat <<CONF
Listen 127.0.0.1:$PORT
Listen 127.0.0.1:$TLS_PORT https
ServerName localhost
DocumentRoot $DOCROOT
PidFile $WORK/$1.pid
ErrorLog $WORK/$1-error.log
KeepAlive On
MaxKeepAliveRequests $KEEPALIVE_REQUESTS
KeepAliveTimeout $IDLE_TIMEOUT
Protocols h2 h2c http/1.1
H2MaxSessionStreams $STREAMS
SSLSessionCache shmcb:$WORK/$1_scache(512000)
<VirtualHost *:$TLS_PORT>
    ServerName localhost
    DocumentRoot $DOCROOT
$SSL_VHOST
</VirtualHost>
$PHP_HANDLER
$EVENT_BLOCK
CONF
}

cat > "$WORK/warren-event.conf" <<CONF
LoadModule mpm_event_module modules/mod_mpm_event.so
LoadModule http2_module modules/mod_http2.so
User www-data
Group www-data
$(apache_style warren)
CONF

cat > "$WORK/apache-event.conf" <<CONF
ServerRoot /etc/apache2
$(apache_modules socache_shmcb ssl http2)
Mutex file:$WORK default
TypesConfig /etc/mime.types
DirectoryIndex index.html
<Directory $DOCROOT>
    Require all granted
</Directory>
$(apache_style apache)
CONF

nginx_conf 2 "127.0.0.1:$PORT http2" "127.0.0.1:$TLS_PORT ssl http2" -- \
    "keepalive_requests $KEEPALIVE_REQUESTS;" "keepalive_timeout ${IDLE_TIMEOUT}s;" \
    "http2_max_concurrent_streams $STREAMS;" "ssl_session_cache shared:SSL:10m;" \
    "ssl_session_tickets on;" "ssl_protocols TLSv1.2 TLSv1.3;"

H2C=http://127.0.0.1:$PORT
H2S=https://127.0.0.1:$TLS_PORT

# said: what the server's error log says last: a panic and its message,
# else its last line.
said() {
    local p
    p=$(grep -A1 'panicked at' "$ERRLOG" 2>/dev/null | tail -2 | tr '\n' ' ' || true)
    [ -n "$p" ] && echo "$p" || grep -v '^\s*$' "$ERRLOG" 2>/dev/null | tail -1 || true
}

# up NAME: the server started, answering in HTTP/2 with every file whole on
# both ports; else 1 with the reason in WHY[NAME].
up() {
    start_server "$1" "$H2C" --http2-prior-knowledge &&
        serves_whole "$1" 2 "$H2C" --http2-prior-knowledge &&
        serves_whole "$1" 2 "$H2S" -k --http2 && return 0
    WHY[$1]="${WHY[$1]}; its error log: $(said)"
    return 1
}

# h2rate URL H2LOAD_OPTIONS...: h2load's req/s for DURATION seconds, "fail"
# if no request succeeded (h2load's own words on stderr then).
h2rate() {
    local url=$1 out; shift
    out=$(timeout $((DURATION + 30)) h2load -t1 "$@" -D "$DURATION" "$url" 2>&1 || true)
    if awk '/^requests:/ { exit !($8 > 0) }' <<<"$out"; then
        awk '/^finished in/ { gsub(",", ""); printf "%d", $4 }' <<<"$out"
        # Failed requests (a connection closed, a reset stream) are said.
        awk -v what="h2load $* $url" '/^requests:/ && $10 > 0 { print what ": " $0 > "/dev/stderr" }' <<<"$out"
    else
        echo "h2load $* -D $DURATION $url: $(grep -m3 -iE 'error|fail|requests:' <<<"$out" | tr '\n' ' ')" >&2
        echo "  its error log: $(said)" >&2
        echo fail
    fi
}

# fresh: one request on a new h2 connection over TLS (h2load -n1 -c1: TCP
# connect, handshake, SETTINGS, response), five times: the median in ms.
cat > "$WORK/fresh.sh" <<SH
for i in 1 2 3 4 5; do
    h2load -n1 -c1 -m1 "$H2S/index.html" 2>/dev/null |
        awk '/^finished in/ { t = \$3; sub(",", "", t); m = t ~ /ms\$/ ? 1 : t ~ /us\$/ ? 0.001 : 1000; sub(/[mu]?s\$/, "", t) }
             /^requests:/ { ok = (\$8 == 1) } END { if (ok) printf "%.2f\n", t * m }'
done | sort -n | awk '{ v[NR] = \$0 } END { print NR == 5 ? v[3] : "fail" }'
SH

# attack NAME ATTACK: the server restarted, ATTACK (or none) for ATTACK_SECS,
# and meanwhile the normal client's req/s and p99.
attack() {
    local name=$1 what=$2 pid= out log=$WORK/h2load-requests.log secs=$((ATTACK_SECS - 2))
    stop_server
    if ! up "$name"; then   # this row only: the rest of the column stands
        echo "$name before $what: ${WHY[$name]}" >&2
        unset "WHY[$name]"
        put "$name,attack-$what-rps" down
        put "$name,attack-$what-p99" down
        return 0
    fi
    local seen
    seen=$(wc -l < "$ERRLOG" 2>/dev/null || echo 0)
    if [ "$what" != none ]; then
        python3 bench/h2_attacks.py "$what" 127.0.0.1 "$PORT" --seconds "$ATTACK_SECS" >"$WORK/attack.out" 2>&1 & pid=$!
        sleep 1
    fi
    rm -f "$log"
    out=$(timeout $((secs + 30)) h2load -t1 $H2LOAD_NORMAL -D "$secs" --log-file="$log" "$H2C/index.html" 2>&1 || true)
    [ -n "$pid" ] && { wait "$pid" || true; }
    local ok
    ok=$(awk '/^requests:/ { print $8 }' <<<"$out")
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        put "$name,attack-$what-rps" died
        put "$name,attack-$what-p99" died
        echo "$name died under $what: $(tail -3 "$WORK/$name.out" | tr '\n' ' ')" >&2
    elif [ "${ok:-0}" -gt 0 ]; then
        put "$name,attack-$what-rps" "$((ok / secs))"
        # The log: start (us), status, time (us) per request; p99 of the 2xx.
        put "$name,attack-$what-p99" "$(awk '$2 >= 200 && $2 < 300 { print $3 }' "$log" | sort -n |
            awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < NR * 0.99) i++; if (i < 1) i = 1; printf "%.1f", v[i] / 1000 }')"
    else
        put "$name,attack-$what-rps" fail
        put "$name,attack-$what-p99" fail
        echo "$name under $what: h2load: $(grep -m3 -iE 'error|fail|requests:' <<<"$out" | tr '\n' ' ')" >&2
        echo "  its error log: $(said)" >&2
    fi
    [ "$what" != none ] && echo "$name: $(tail -1 "$WORK/attack.out")" >&2
    stop_server
    # A child that crashed (Apache's "exit signal", a panic), said on stderr.
    tail -n +$((seen + 1)) "$ERRLOG" 2>/dev/null | grep -iE 'exit signal|panic|segmentation|abort' | head -3 |
        sed "s/^/$name under $what: error log: /" >&2 || true
    return 0
}

keep_logs() { # into LOGS, if set
    [ -n "$LOGS" ] || return 0
    mkdir -p "$LOGS"
    cp "$WORK"/*.log "$WORK"/*.out "$LOGS"/ 2>/dev/null || true
}

measure() { # name
    ERRLOG=$WORK/${1%-event}-error.log
    if ! up "$1"; then
        echo "$1: n/a: ${WHY[$1]}" >&2
        keep_logs
        return
    fi
    h2rate "$H2C/index.html" $H2LOAD_STATIC >/dev/null   # warm-up
    # What h2load's TLS agreed with each (the header says it once a server).
    local tls
    tls=$(h2load -n1 -c1 "$H2S/index.html" 2>&1 | awk -F': ' '/^TLS Protocol:/ { p = $2 } /^Cipher:/ { print p " " $2; exit }')
    case ${TLS_SEEN:-} in *"$1 "*) ;; *) TLS_SEEN="${TLS_SEEN:+$TLS_SEEN, }$1 $tls" ;; esac
    put "$1,h2c-static" "$(h2rate "$H2C/index.html" $H2LOAD_STATIC)"
    put "$1,h2-static-tls" "$(h2rate "$H2S/index.html" $H2LOAD_STATIC)"
    put "$1,h2-100k-tls" "$(h2rate "$H2S/file100k.bin" $H2LOAD_BIG)"
    put "$1,h2-php" "$(for _ in 1 2 3; do h2rate "$H2S/hello.php" $H2LOAD_BIG; echo; done | sort -n | sed -n 2p)"
    sleep 1
    put "$1,idle0-ms" "$(sh "$WORK/fresh.sh")"
    local base idle
    base=$(pss "$SERVER_PID")
    idle=$(python3 bench/idle.py 127.0.0.1 "$TLS_PORT" 1000 /index.html --tls "--h2${IDLE_REQUEST:+-request}" --exec "sh $WORK/fresh.sh" --pss "$SERVER_PID" || echo "fail 1000 0")
    put "$1,idle-ms" "$(awk '{print $1}' <<<"$idle")"
    put "$1,idle-failed" "$(awk '{print $2}' <<<"$idle")"
    put "$1,idle-pss" "$(awk '{printf "%.1f", $3 / 1024}' <<<"$idle")"
    # Per connection still open at the measurement.
    put "$1,idle-per-conn" "$(awk -v b="$base" '$3 > 0 && $2 < 1000 {printf "%.1f", ($3 - b) / (1000 - $2)}' <<<"$idle")"
    local a
    for a in none $ATTACKS; do
        [ "$a" = none ] && [ "$ATTACKS" = none ] && break
        attack "$1" "$a"
    done
    echo "$1: done" >&2
    stop_server
    keep_logs
}

rounds measure

[ "$ATTACKS" = none ] || ATTACK_NOTE=" attacks ${ATTACK_SECS}s each, normal client $H2LOAD_NORMAL -D $((ATTACK_SECS - 2))s;"
echo "warren $("$WARREN" --version | awk '{print $2}'), $(versions) event + mod_http2 + mod_ssl, $(h2load --version | head -1); h2load -t1, -D ${DURATION}s: h2c-static and h2-static-tls $H2LOAD_STATIC, h2-100k-tls and h2-php $H2LOAD_BIG;${ATTACK_NOTE:-} ECDSA P-256 + RSA 2048 (h2load's TLS: ${TLS_SEEN:-?}); $STREAMS streams a connection, $KEEPALIVE_REQUESTS requests, idle timeout ${IDLE_TIMEOUT}s; $(nproc) cores; ROUNDS=$ROUNDS"
echo
echo "== HTTP/2, event MPM vs nginx and Apache"
row scenario warren nginx apache w/nginx w/apache
line "h2c-static (req/s)" h2c-static
line "h2-static-tls (req/s)" h2-static-tls
line "h2-100k-tls (req/s)" h2-100k-tls
line "h2-php (req/s)" h2-php
line "h2 fresh, none idle (ms)" idle0-ms
line "h2-idle-1000 fresh (ms)" idle-ms
line "h2-idle-1000 PSS (MB)" idle-pss
line "  per open connection (KB)" idle-per-conn
line "h2-idle-1000 failed/closed conns" idle-failed
if [ "$ATTACKS" != none ]; then
    echo
    echo "== Under attack (${ATTACK_SECS}s from one process), a normal client: req/s, p99 ms"
    row attack warren nginx apache w/nginx w/apache
    for a in none $ATTACKS; do
        line "$a (req/s)" "attack-$a-rps"
        line "  p99 (ms)" "attack-$a-p99"
    done
fi
echo "(req/s: higher is better; ms, MB and KB: lower is better)"
why_not
