#!/usr/bin/env bash
# Compares warren with nginx and Apache httpd in one run, on loopback, with
# equivalent configurations and access logs off: warren event vs nginx vs
# Apache event, then warren prefork and worker vs Apache prefork and worker
# with the seeds' MPM values. One server runs at a time. Scenarios:
#   static-ka     45-byte index.html, keep-alive, 50 connections (wrk -t1 -c50)
#   static-close  the same, a new connection per request
#   100k          a 100 KB file, keep-alive, 50 connections
#   idle-1000     1000 idle keep-alive connections open, then one fresh request (ms)
#   php           a tiny PHP script through one php-fpm pool (pm static, 4 children)
#                 that every server shares, keep-alive, 50 connections; median of 3 runs
#   php-1000      the same script, ab -r -n 5000 -c 1000 three times: failed requests
#                 and the median p99 (ms)
#   php-pool      warren only: the script in warren's own pool (pm static, 4 php-cgi
#                 children) instead of php-fpm; median of 3 runs
#   metrics       warren event only: static-ka without and with a Prometheus scrape
#                 of /metrics (SetHandler metrics) each second, in 3 interleaved
#                 pairs; the medians of each arm and their ratio (target: >= 0.99)
#   memory        PSS of each server's processes, summed, after the runs (MB),
#                 and how many processes there were then (MPMs grow under
#                 php-1000 and shrink a child a second afterwards)
# Usage: bench/compare.sh            (DURATION=5 seconds per wrk run by default;
#        MPMS="event worker prefork" chooses the tables; WARREN=binary, see below)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
MPMS=${MPMS:-event worker prefork}

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/sbin/apache2 ] || need+=(apache2)
command -v ab >/dev/null 2>&1 || need+=(apache2-utils)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v php-cgi >/dev/null 2>&1 || need+=(php-cgi)
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need+=(php-fpm)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
quiet_debian_services
build_warren

comparison_workdir warren-bench
mkdir -p "$DOCROOT/pool"
cp "$DOCROOT/hello.php" "$DOCROOT/pool/hello.php"

start_php_fpm

PORT=18080

# The MPM blocks, as the seeds give them (Apache's and Debian's defaults).
mpm_block() {
    case $1 in
    event) echo "$EVENT_BLOCK" ;;
    worker) cat <<B
<IfModule mpm_worker_module>
    StartServers 2
    MaxClients 150
    MinSpareThreads 25
    MaxSpareThreads 75
    ThreadsPerChild 25
    MaxRequestsPerChild 0
</IfModule>
B
    ;;
    prefork) cat <<B
<IfModule mpm_prefork_module>
    StartServers 5
    MinSpareServers 5
    MaxSpareServers 10
    MaxClients 150
    MaxRequestsPerChild 0
</IfModule>
B
    ;;
    esac
}

write_warren_conf() { # mpm
    cat > "$WORK/warren-$1.conf" <<CONF
$(warren_base_conf "$1")
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$FPM_SOCK|fcgi://localhost"
</FilesMatch>
# php-pool: /pool/*.php in warren's own pool, as many children as php-fpm's.
<Pool bench>
    Command php-cgi
    pm static
    pm.max_children 4
</Pool>
<Directory $DOCROOT/pool>
    <FilesMatch "\.php\$">
        SetHandler pool:bench
    </FilesMatch>
</Directory>
# The metrics row: scraped by a curl loop while wrk runs.
<Location /metrics>
    SetHandler metrics
    Require local
</Location>
$(mpm_block "$1")
CONF
}

write_apache_conf() { # mpm
    cat > "$WORK/apache-$1.conf" <<CONF
$(apache_base_conf "$1" mime dir proxy proxy_fcgi)
TypesConfig /etc/mime.types
DirectoryIndex index.html
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
<Directory $DOCROOT>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler "proxy:unix:$FPM_SOCK|fcgi://localhost"
</FilesMatch>
$(mpm_block "$1")
CONF
}

nginx_conf auto "127.0.0.1:$PORT"

start_server() { # name
    case $1 in
    warren-*) write_warren_conf "${1#warren-}"; "$WARREN" -f "$WORK/$1.conf" & SERVER_PID=$! ;;
    # Its own session: Apache prefork answers TERM by signalling its whole process group.
    apache-*) write_apache_conf "${1#apache-}"; setsid /usr/sbin/apache2 -f "$WORK/$1.conf" -DFOREGROUND & SERVER_PID=$! ;;
    nginx) nginx -c "$WORK/nginx.conf" -g 'daemon off;' & SERVER_PID=$! ;;
    esac
    for _ in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/index.html" && break
        sleep 0.1
    done
    # It must answer 200 with the whole file, or its figures mean nothing.
    local files="index.html:45 file100k.bin:102400 hello.php:11"
    case $1 in warren-*) files="$files pool/hello.php:11" ;; esac
    for f in $files; do
        got=$(curl -s -o /dev/null -w '%{http_code}:%{size_download}' "http://127.0.0.1:$PORT/${f%%:*}")
        if [ "$got" != "200:${f##*:}" ]; then
            echo "$1 answered $got for /${f%%:*}; expected 200:${f##*:}" >&2
            exit 1
        fi
    done
}

procs() { # the server's processes, as counted by pss
    local n=0 p
    for p in $1 $(pgrep -P "$1" || true); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = php-cgi ] || n=$((n + 1))
    done
    echo "$n"
}

rps() { # path [extra wrk args]
    local path=$1; shift
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "$@" "http://127.0.0.1:$PORT$path" 2>/dev/null | awk '/Requests\/sec/ {printf "%d", $2}'
}

declare -A R
# ab -r -n 5000 -c 1000, three times (its tail is noisy on two cores):
# failed requests of all runs (connect, receive, length and non-2xx
# together) and the median of the runs' 99th percentiles in ms.
php_1000() { # name
    local out failed non2xx total=0 p99s=()
    for _ in 1 2 3; do
        out=$(ab -r -q -n 5000 -c 1000 -s 30 "http://127.0.0.1:$PORT/hello.php" 2>/dev/null || true)
        failed=$(awk '/^Failed requests:/ {print $3}' <<<"$out")
        non2xx=$(awk '/^Non-2xx responses:/ {print $3}' <<<"$out")
        total=$(( total + ${failed:-5000} + ${non2xx:-0} ))
        p99s+=("$(awk '$1 == "99%" {print $2}' <<<"$out")")
    done
    R[$1,php-1000-failed]=$total
    R[$1,php-1000-p99]=$(printf '%s\n' "${p99s[@]}" | sort -n | sed -n 2p)
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# metrics_cost NAME: static-ka without and with a scrape of /metrics each
# second (as Prometheus at scrape_interval 1s), in interleaved pairs: one
# pair's figures differ by more than the 1 % looked for when wrk and the
# server share two cores, so the median of each arm is compared.
metrics_cost() {
    local plain=() scraped=() scrapes=() scraper n scrape
    # Read whole first: grep -q stopping early would fail the pipe (pipefail).
    scrape=$(curl -s "http://127.0.0.1:$PORT/metrics")
    grep -q '^warren_requests_total' <<<"$scrape" || { echo "$1: /metrics is not a scrape: ${scrape:0:200}" >&2; exit 1; }
    for _ in 1 2 3; do
        plain+=("$(rps /index.html)")
        : > "$WORK/scrapes"
        ( while :; do curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/metrics" >> "$WORK/scrapes"; sleep 1; done ) & scraper=$!
        scraped+=("$(rps /index.html)")
        kill "$scraper"; wait "$scraper" 2>/dev/null || true
        n=$(grep -c '^200$' "$WORK/scrapes" || true)
        # About one a second (a slow scrape on a loaded machine may drop one).
        [ "$n" -ge $(( (DURATION + 1) / 2 )) ] || { echo "$1: $n scrapes answered 200 in a ${DURATION}s run" >&2; exit 1; }
        scrapes+=("$n")
    done
    R[$1,static-ka-plain]=$(printf '%s\n' "${plain[@]}" | median)
    R[$1,static-ka-scraped]=$(printf '%s\n' "${scraped[@]}" | median)
    R[$1,metrics-pairs]="${plain[*]} / ${scraped[*]}, scrapes answered 200: ${scrapes[*]}"
}

measure() { # name
    start_server "$1"
    rps /index.html >/dev/null   # warm-up: lets the MPMs grow their children
    R[$1,static-ka]=$(rps /index.html)
    R[$1,static-close]=$(rps /index.html -H 'Connection: close')
    R[$1,100k]=$(rps /file100k.bin)
    # PHP's figure swings most from run to run (php-fpm and the server share
    # the cores): the median of three.
    R[$1,php]=$(for _ in 1 2 3; do rps /hello.php; echo; done | sort -n | sed -n 2p)
    case $1 in warren-*) R[$1,php-pool]=$(for _ in 1 2 3; do rps /pool/hello.php; echo; done | sort -n | sed -n 2p) ;; esac
    [ "$1" = warren-event ] && metrics_cost "$1"
    php_1000 "$1"
    R[$1,memory]=$(pss "$SERVER_PID")
    R[$1,procs]=$(procs "$SERVER_PID")
    if [ "${2:-}" = idle ]; then
        R[$1,idle-1000]=$(python3 bench/idle.py 127.0.0.1 "$PORT" 1000 /index.html | awk '{print $1}')
    fi
    stop_server
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "" && a != "fail") printf "%.2f", a / b; else printf "-" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
row() { printf "%-22s %10s %10s %10s %10s %10s\n" "$@"; }

echo "warren $("$WARREN" --version | awk '{print $2}'), nginx $(nginx -v 2>&1 | sed 's|.*/||'), Apache $(/usr/sbin/apache2 -v | sed -n 's|.*Apache/\([^ ]*\).*|\1|p'); wrk -t1 -c$CONNS -d${DURATION}s; $(nproc) cores"
for mpm in $MPMS; do
    if [ "$mpm" = event ]; then
        measure warren-event idle; measure nginx idle; measure apache-event idle
        echo
        echo "== event MPM vs nginx"
        row scenario warren nginx apache w/nginx w/apache
        for sc in static-ka static-close 100k php; do
            row "$sc (req/s)" "${R[warren-event,$sc]}" "${R[nginx,$sc]}" "${R[apache-event,$sc]}" \
                "$(ratio "${R[warren-event,$sc]}" "${R[nginx,$sc]}")" "$(ratio "${R[warren-event,$sc]}" "${R[apache-event,$sc]}")"
        done
        row "php-pool (req/s)" "${R[warren-event,php-pool]}" - - "$(ratio "${R[warren-event,php-pool]}" "${R[nginx,php]}")" "$(ratio "${R[warren-event,php-pool]}" "${R[apache-event,php]}")"
        row "php-1000 failed" "${R[warren-event,php-1000-failed]}" "${R[nginx,php-1000-failed]}" "${R[apache-event,php-1000-failed]}" - -
        row "php-1000 p99 (ms)" "${R[warren-event,php-1000-p99]}" "${R[nginx,php-1000-p99]}" "${R[apache-event,php-1000-p99]}" \
            "$(ratio "${R[warren-event,php-1000-p99]}" "${R[nginx,php-1000-p99]}")" "$(ratio "${R[warren-event,php-1000-p99]}" "${R[apache-event,php-1000-p99]}")"
        row "idle-1000 (ms)" "${R[warren-event,idle-1000]}" "${R[nginx,idle-1000]}" "${R[apache-event,idle-1000]}" \
            "$(ratio "${R[warren-event,idle-1000]}" "${R[nginx,idle-1000]}")" "$(ratio "${R[warren-event,idle-1000]}" "${R[apache-event,idle-1000]}")"
        row "memory PSS (MB)" "$(mb "${R[warren-event,memory]}")" "$(mb "${R[nginx,memory]}")" "$(mb "${R[apache-event,memory]}")" \
            "$(ratio "${R[warren-event,memory]}" "${R[nginx,memory]}")" "$(ratio "${R[warren-event,memory]}" "${R[apache-event,memory]}")"
        row "processes then" "${R[warren-event,procs]}" "${R[nginx,procs]}" "${R[apache-event,procs]}" - -
        row "static-ka, no scrape" "${R[warren-event,static-ka-plain]}" - - - -
        row "static-ka, scrape 1/s" "${R[warren-event,static-ka-scraped]}" - - - -
        echo "metrics cost: scraped / not scraped = $(ratio "${R[warren-event,static-ka-scraped]}" "${R[warren-event,static-ka-plain]}") (target >= 0.99; pairs: ${R[warren-event,metrics-pairs]})"
    else
        measure "warren-$mpm"; measure "apache-$mpm"
        echo
        echo "== $mpm MPM (the seeds' values)"
        printf "%-22s %10s %10s %10s\n" scenario warren apache w/apache
        for sc in static-ka static-close 100k php; do
            printf "%-22s %10s %10s %10s\n" "$sc (req/s)" "${R[warren-$mpm,$sc]}" "${R[apache-$mpm,$sc]}" "$(ratio "${R[warren-$mpm,$sc]}" "${R[apache-$mpm,$sc]}")"
        done
        printf "%-22s %10s %10s %10s\n" "php-pool (req/s)" "${R[warren-$mpm,php-pool]}" - "$(ratio "${R[warren-$mpm,php-pool]}" "${R[apache-$mpm,php]}")"
        printf "%-22s %10s %10s %10s\n" "php-1000 failed" "${R[warren-$mpm,php-1000-failed]}" "${R[apache-$mpm,php-1000-failed]}" -
        printf "%-22s %10s %10s %10s\n" "php-1000 p99 (ms)" "${R[warren-$mpm,php-1000-p99]}" "${R[apache-$mpm,php-1000-p99]}" "$(ratio "${R[warren-$mpm,php-1000-p99]}" "${R[apache-$mpm,php-1000-p99]}")"
        printf "%-22s %10s %10s %10s\n" "memory PSS (MB)" "$(mb "${R[warren-$mpm,memory]}")" "$(mb "${R[apache-$mpm,memory]}")" "$(ratio "${R[warren-$mpm,memory]}" "${R[apache-$mpm,memory]}")"
        printf "%-22s %10s %10s %10s\n" "processes then" "${R[warren-$mpm,procs]}" "${R[apache-$mpm,procs]}" -
    fi
done
echo "(req/s: higher is better; ms and MB: lower is better)"
