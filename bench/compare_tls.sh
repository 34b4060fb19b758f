#!/usr/bin/env bash
# HTTPS: warren event vs nginx (Debian's, OpenSSL) vs Apache event with mod_ssl,
# in one run, on loopback, one server at a time, the same certificates for all:
# an ECDSA P-256 and an RSA 2048 self-signed certificate for localhost, made
# once per run with the openssl CLI, both configured in every server (a client
# offering ECDSA gets the ECDSA one). TLS 1.2 and 1.3, a shared session cache
# and session tickets on; access logs off. Scenarios:
#   https-static-ka        45-byte index.html, keep-alive, 50 connections (wrk -t1 -c50)
#   https-100k             a 100 KB file, the same
#   https-php              hello.php through one php-fpm pool every server shares
#                          (pm static, 4 children), the same; median of 3 runs;
#                          and the server's own CPU time per request over the
#                          3 runs (its processes' user and system time, php-fpm
#                          and wrk not counted), since on 2 cores shared by
#                          client, server and php-fpm the req/s ratio also
#                          shows how the cores were shared
#   https-handshake-full   a new connection per request, 50 at a time, full
#                          handshakes (warren bench --no-resume): connections/s
#                          and the handshake's p50 (ms, TCP established to done)
#   https-handshake-resumed  the same, sessions resumed (rustls' session cache:
#                          tickets in TLS 1.3); the share resumed is printed
#   https-handshake-rsa    full handshakes, the client offering only RSA
#                          signature schemes, so the RSA certificate is used
#   https-idle-1000        1000 idle TLS keep-alive connections open (bench/idle.py
#                          --tls): the server's PSS then, and a fresh request's
#                          time (ms, TCP connect, full handshake and response;
#                          the median of 5, warren bench), and first the same
#                          with no idle connection
# Until warren speaks TLS, its column reads n/a with the reason (its refusal of
# the configuration, or the failed handshake).
# Prints first the CPU features and crypto code that the TLS figures depend on.
# Usage: bench/compare_tls.sh     (DURATION=5 seconds a run, CONNS=50, PORT=18443;
#        WARREN=binary measures that build; SERVERS="warren-event nginx apache-event";
#        ROUNDS=3 runs the servers in turn three times, each figure the median;
#        KEEPALIVE_REQUESTS=N gives every server that keep-alive request limit)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
PORT=${PORT:-18443}
# Requests a keep-alive connection may carry: each server's default unless
# set (Apache's and warren's MaxKeepAliveRequests 100, nginx's
# keepalive_requests 1000). Over TLS it weighs: wrk's reconnection is a full
# handshake every 100 requests.
KEEPALIVE_REQUESTS=${KEEPALIVE_REQUESTS:-}

# crypto_facts: what the TLS figures depend on besides the code: the CPU's
# features the AES-GCM implementations choose by, and the crypto each
# server uses. aws-lc (under rustls' aws-lc-rs provider) picks its AES-GCM
# by these flags (crypto/fipsmodule/modes/gcm.c): VAES + VPCLMULQDQ +
# AVX512F/BW/DQ/VL gives the AVX-512 code, else AES-NI + PCLMULQDQ + AVX +
# MOVBE gives aesni_gcm (_aesni_ctr32_ghash_6x): a Zen 3 EPYC, with VAES
# and AVX2 but no AVX-512, gets the latter.
crypto_facts() {
    local flags have=() f
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    for f in aes pclmulqdq avx movbe avx2 vaes vpclmulqdq avx512f avx512bw avx512dq avx512vl; do
        grep -qw "$f" <<<"$flags" && have+=("$f") || have+=("no-$f")
    done
    echo "CPU: $(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //'); ${have[*]}"
    local gcm="aesni_gcm (AES-NI + AVX)"
    if grep -qw vaes <<<"$flags" && grep -qw vpclmulqdq <<<"$flags" && grep -qw avx512f <<<"$flags" \
        && grep -qw avx512bw <<<"$flags" && grep -qw avx512dq <<<"$flags" && grep -qw avx512vl <<<"$flags"; then
        gcm="AVX-512 + VAES"
    elif ! grep -qw aes <<<"$flags"; then
        gcm="no AES-NI: constant-time software"
    fi
    echo "warren's TLS: $(awk '/^name = "(rustls|aws-lc-rs|aws-lc-sys)"$/ { n = $3; getline; gsub(/"/, "", n); gsub(/"/, "", $3); printf "%s%s %s", sep, n, $3; sep = ", " }' Cargo.lock) (provider aws-lc-rs, as this tree's Cargo.lock has it); aws-lc's AES-GCM here: $gcm"
    echo "nginx's and Apache's TLS: $(openssl version)"
}

need nginx:nginx apache2:apache2 wrk:wrk curl:curl openssl:openssl python3:python3 php-cgi:php-cgi
crypto_facts
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need php-fpm:php-fpm
quiet_debian_services
build_warren
BENCH=$WARREN   # the client: warren bench (rustls), whichever build is measured

comparison_workdir warren-bench-tls
CERTS=$WORK/certs
mkdir -p "$CERTS"
tls_certs "$CERTS"

start_php_fpm

SSL_VHOST=$(ssl_vhost "$CERTS")

cat > "$WORK/warren-event.conf" <<CONF
$(LISTEN_PROTOCOL=https warren_base_conf event)
KeepAlive On
MaxKeepAliveRequests ${KEEPALIVE_REQUESTS:-100}
KeepAliveTimeout 5
SSLSessionCache shmcb:$WORK/warren_scache(512000)
<VirtualHost *:$PORT>
    ServerName localhost
    DocumentRoot $DOCROOT
$SSL_VHOST
</VirtualHost>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$FPM_SOCK|fcgi://localhost"
</FilesMatch>
$EVENT_BLOCK
CONF

cat > "$WORK/apache-event.conf" <<CONF
ServerRoot /etc/apache2
$(apache_modules socache_shmcb ssl)
Listen 127.0.0.1:$PORT https
ServerName localhost
DocumentRoot $DOCROOT
PidFile $WORK/apache.pid
ErrorLog $WORK/apache-error.log
Mutex file:$WORK default
TypesConfig /etc/mime.types
DirectoryIndex index.html
KeepAlive On
MaxKeepAliveRequests ${KEEPALIVE_REQUESTS:-100}
KeepAliveTimeout 5
SSLSessionCache shmcb:$WORK/apache_scache(512000)
<VirtualHost *:$PORT>
    ServerName localhost
    DocumentRoot $DOCROOT
$SSL_VHOST
</VirtualHost>
<Directory $DOCROOT>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$FPM_SOCK|fcgi://localhost"
</FilesMatch>
$EVENT_BLOCK
CONF

nginx_conf auto "127.0.0.1:$PORT ssl" -- "keepalive_requests ${KEEPALIVE_REQUESTS:-1000};" \
    "ssl_session_cache shared:SSL:10m;" "ssl_session_tickets on;" "ssl_protocols TLSv1.2 TLSv1.3;"

URL=https://127.0.0.1:$PORT

rps() { # path
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "$URL$1" 2>/dev/null | awk '/Requests\/sec/ {printf "%d", $2}'
}

# handshakes NAME KEY [bench options]: a new connection per request, CONNS at
# a time, one client thread (as wrk -t1): connections/s, handshake p50, and
# how many of the handshakes resumed a session.
handshakes() {
    local name=$1 key=$2; shift 2
    local j
    j=$("$BENCH" bench --json --insecure --threads 1 -c "$CONNS" -t "$DURATION" "$@" "$URL/index.html" 2>/dev/null || echo '{}')
    put "$name,$key" "$(jq -r 'if (.successful_transactions // 0) > 0 then (.transaction_rate | floor) else "fail" end' <<<"$j")"
    put "$name,$key-p50" "$(jq -r '.tls.handshake_ms["50"] // "-" | if type == "number" then (. * 100 | round / 100) else . end' <<<"$j")"
    put "$name,$key-resumed" "$(jq -r 'if .tls then "\(.tls.resumed)/\(.tls.handshakes)" else "-" end' <<<"$j")"
    local err
    err=$(jq -r '.tls_error // empty' <<<"$j")
    [ -n "$err" ] && echo "$name: $key: first TLS error: $err" >&2
    return 0
}

measure() { # name
    if ! start_server "$1" "$URL" -k || ! serves_whole "$1" 1.1 "$URL" -k; then
        echo "$1: n/a: ${WHY[$1]}" >&2
        return
    fi
    rps /index.html >/dev/null   # warm-up
    put "$1,https-static-ka" "$(rps /index.html)"
    put "$1,https-100k" "$(rps /file100k.bin)"
    local ticks runs
    ticks=$(cpu_ticks "$SERVER_PID")
    runs=$(for _ in 1 2 3; do rps /hello.php; echo; done)
    ticks=$(($(cpu_ticks "$SERVER_PID") - ticks))
    put "$1,https-php" "$(sort -n <<<"$runs" | sed -n 2p)"
    put "$1,https-php-cpu" "$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v d="$DURATION" '{ n += $1 * d } END { if (n > 0) printf "%.1f", t * 1e6 / hz / n; else print "-" }' <<<"$runs")"
    echo "$1 https-php runs: $(tr '\n' ' ' <<<"$runs")" >&2
    handshakes "$1" https-handshake-full --no-resume
    handshakes "$1" https-handshake-resumed
    handshakes "$1" https-handshake-rsa --no-resume --tls-auth rsa
    sleep 1
    # Five fresh requests one after another, each on a new connection with a
    # full handshake (warren bench, rustls): the median, TCP connect to the
    # response's end. First with nothing idle, then with 1000 idle.
    local fresh="$BENCH bench --json --insecure --no-resume --threads 1 -c 1 -n 5 $URL/index.html | jq -r 'if .successful_transactions == 5 then (.percentiles_ms[\"50\"] * 100 | round / 100) else \"fail\" end'"
    put "$1,idle0-ms" "$(sh -c "$fresh" 2>/dev/null || echo fail)"
    local idle
    idle=$(python3 bench/idle.py 127.0.0.1 "$PORT" 1000 /index.html --tls --exec "$fresh" --pss "$SERVER_PID" || echo "fail 1000 0")
    put "$1,idle-ms" "$(awk '{print $1}' <<<"$idle")"
    put "$1,idle-failed" "$(awk '{print $2}' <<<"$idle")"
    put "$1,idle-pss" "$(awk '{printf "%.1f", $3 / 1024}' <<<"$idle")"
    echo "$1: done" >&2
    stop_server
}

rounds measure

echo "warren $("$WARREN" --version | awk '{print $2}'), $(versions) event + mod_ssl; ECDSA P-256 + RSA 2048; wrk -t1 -c$CONNS -d${DURATION}s; warren bench --threads 1 -c$CONNS -t$DURATION; $(nproc) cores; ROUNDS=$ROUNDS; keep-alive requests ${KEEPALIVE_REQUESTS:-"Apache's and warren's 100, nginx's 1000"}"
echo
echo "== HTTPS, event MPM vs nginx"
row scenario warren nginx apache w/nginx w/apache
line "https-static-ka (req/s)" https-static-ka
line "https-100k (req/s)" https-100k
line "https-php (req/s)" https-php
line "  server CPU (us/request)" https-php-cpu
line "https-handshake-full (conn/s)" https-handshake-full
line "  handshake p50 (ms)" https-handshake-full-p50
line "https-handshake-resumed (conn/s)" https-handshake-resumed
line "  handshake p50 (ms)" https-handshake-resumed-p50
line "  resumed/handshakes" https-handshake-resumed-resumed
line "https-handshake-rsa (conn/s)" https-handshake-rsa
line "  handshake p50 (ms)" https-handshake-rsa-p50
line "https fresh, none idle (ms)" idle0-ms
line "https-idle-1000 fresh (ms)" idle-ms
line "https-idle-1000 PSS (MB)" idle-pss
line "https-idle-1000 failed conns" idle-failed
echo "(req/s, conn/s: higher is better; ms, us and MB: lower is better)"
why_not
