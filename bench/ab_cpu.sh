#!/usr/bin/env bash
# Interleaved A/B of two servers by the server's own CPU time per request,
# for a machine other work also loads (where req/s mostly shows how the
# cores were shared): each round starts A, runs every scenario, stops it,
# then the same for B, and so on ROUNDS times. A figure is the server's
# user + system time (/proc/PID/stat of the parent and its children, as
# bench/lib.sh's cpu_ticks) over a run, divided by the requests the client
# completed; php-fpm and the client are not counted. The event MPM, the
# files of bench/lib.sh's comparison_workdir, compare_tls.sh's certificates.
# Scenarios (SCENARIOS; all but 100k-wb by default):
#   static-ka    45-byte index.html, keep-alive, wrk -t1 -c50
#   100k         a 100 KB file, the same
#   100k-wb      the 100 KB file with `warren bench -k -c 50 --threads 1` (A's
#                binary) as the client: it reads 64 KB a call where wrk reads
#                8 KB, so the two weigh segment sizes (TCP_CORK) differently
#   php          hello.php through one php-fpm pool both share (pm static, 4)
#   https-100k   the 100 KB file over TLS 1.3, wrk -t1 -c50
#   h2-100k-tls  the 100 KB file over HTTP/2 and TLS, h2load -t1 -c10 -m10
#   h2-static-tls  the 45-byte index.html over HTTP/2 and TLS, h2load -t1
#                -c10 -m100 (compare_h2.sh's h2-static-tls; not by default)
# Usage: A=path/to/warren B=path/to/warren|nginx bench/ab_cpu.sh
#        (ROUNDS=3, DURATION=5 seconds a run, PORT=18481 and PORT+1 for TLS,
#        KEEPALIVE_REQUESTS=100 for every server). Prints each run, then per
#        scenario the median us/request and req/s of each side and B/A.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
: "${A:?A=binary of the first warren}" "${B:?B=binary of the second warren, or nginx}"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
PORT=${PORT:-18481}
TLS_PORT=$((PORT + 1))
KEEPALIVE_REQUESTS=${KEEPALIVE_REQUESTS:-100}
SCENARIOS=${SCENARIOS:-static-ka 100k php https-100k h2-100k-tls}
# The warren whose `bench` is 100k-wb's client: A, or B's when A is no warren.
BENCH=$A
[ -x "$BENCH" ] && "$BENCH" bench --help >/dev/null 2>&1 || BENCH=$B

need nginx:nginx wrk:wrk h2load:nghttp2-client curl:curl openssl:openssl
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need php-fpm:php-fpm
quiet_debian_services
comparison_workdir warren-ab-cpu
CERTS=$WORK/certs
mkdir -p "$CERTS"
tls_certs "$CERTS"
start_php_fpm

cat > "$WORK/warren.conf" <<CONF
$(warren_base_conf event)
Listen 127.0.0.1:$TLS_PORT https
KeepAlive On
MaxKeepAliveRequests $KEEPALIVE_REQUESTS
KeepAliveTimeout 5
Protocols h2 http/1.1
SSLSessionCache shmcb:$WORK/warren_scache(512000)
<VirtualHost *:$TLS_PORT>
    ServerName localhost
    DocumentRoot $DOCROOT
$(ssl_vhost "$CERTS")
</VirtualHost>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$FPM_SOCK|fcgi://localhost"
</FilesMatch>
$EVENT_BLOCK
CONF
nginx_conf auto "127.0.0.1:$PORT" "127.0.0.1:$TLS_PORT ssl http2" -- "keepalive_requests $KEEPALIVE_REQUESTS;" \
    "ssl_session_cache shared:SSL:10m;" "ssl_protocols TLSv1.2 TLSv1.3;"

# start SIDE: the server of A or B, SERVER_PID, answering (10 s at most).
start() {
    local bin=${!1}
    if [ "$bin" = nginx ]; then
        nginx -c "$WORK/nginx.conf" -g 'daemon off;' >"$WORK/$1.out" 2>&1 & SERVER_PID=$!
    else
        "$bin" -f "$WORK/warren.conf" >"$WORK/$1.out" 2>&1 & SERVER_PID=$!
    fi
    for _ in $(seq 1 100); do
        curl -sk -o /dev/null "https://127.0.0.1:$TLS_PORT/index.html" && curl -s -o /dev/null "http://127.0.0.1:$PORT/index.html" && break
        sleep 0.1
    done
    # The whole file, byte for byte, each way it is measured.
    local url
    for url in "http://127.0.0.1:$PORT" "https://127.0.0.1:$TLS_PORT" "--http2 https://127.0.0.1:$TLS_PORT"; do
        # shellcheck disable=SC2086
        if ! curl -sk $url/file100k.bin 2>/dev/null | cmp -s - "$DOCROOT/file100k.bin"; then
            echo "$1 ($bin) did not serve file100k.bin whole at $url: $(head -3 "$WORK/$1.out")" >&2
            exit 1
        fi
    done
}

# client SCENARIO SECONDS: runs the client; prints the requests completed.
client() {
    local http=http://127.0.0.1:$PORT https=https://127.0.0.1:$TLS_PORT
    case $1 in
    static-ka) wrk -t1 -c50 -d"$2s" "$http/index.html" ;;
    100k) wrk -t1 -c50 -d"$2s" "$http/file100k.bin" ;;
    100k-wb) "$BENCH" bench -k -c 50 --threads 1 -t "$2s" --json "$http/file100k.bin" ;;
    php) wrk -t1 -c50 -d"$2s" "$http/hello.php" ;;
    https-100k) wrk -t1 -c50 -d"$2s" "$https/file100k.bin" ;;
    h2-100k-tls) h2load -t1 -c10 -m10 -D "$2" "$https/file100k.bin" ;;
    h2-static-tls) h2load -t1 -c10 -m100 -D "$2" "$https/index.html" ;;
    *) echo "unknown scenario $1" >&2; exit 1 ;;
    esac 2>/dev/null | awk '/requests in/ { n = $1 } /^requests:/ { n = $8 } /"transactions":/ { sub(/.*"transactions":/, ""); n = $0 + 0 } END { print n + 0 }'
}

declare -A CPU RPS
for round in $(seq 1 "$ROUNDS"); do
    for side in A B; do
        start "$side"
        for s in $SCENARIOS; do
            client "$s" 1 >/dev/null   # warm-up: page cache, pool, children
            t0=$(cpu_ticks "$SERVER_PID")
            n=$(client "$s" "$DURATION")
            t=$(($(cpu_ticks "$SERVER_PID") - t0))
            us=$(awk -v t="$t" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { if (n > 0) printf "%.1f", t * 1e6 / hz / n; else print "-" }')
            rps=$((n / DURATION))
            CPU[$s,$side]="${CPU[$s,$side]:-} $us"
            RPS[$s,$side]="${RPS[$s,$side]:-} $rps"
            echo "round $round $side $s: $rps req/s, $us us/request ($t ticks, $n requests; load $(cut -d' ' -f1-3 /proc/loadavg))"
        done
        stop_server
    done
done

ratio3() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else printf "-" }'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "A=$A"
echo "B=$B"
echo "ROUNDS=$ROUNDS DURATION=${DURATION}s, event MPM, $(nproc) cores, load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %10s %10s %8s %10s %10s %8s\n" scenario "A us/req" "B us/req" "B/A" "A req/s" "B req/s" "B/A"
for s in $SCENARIOS; do
    ca=$(median <<<"${CPU[$s,A]}"); cb=$(median <<<"${CPU[$s,B]}")
    ra=$(median <<<"${RPS[$s,A]}"); rb=$(median <<<"${RPS[$s,B]}")
    printf "%-12s %10s %10s %8s %10s %10s %8s\n" "$s" "$ca" "$cb" "$(ratio3 "$cb" "$ca")" "$ra" "$rb" "$(ratio3 "$rb" "$ra")"
done
