#!/usr/bin/env bash
# Requests lost when one of three php-fpm members of a balancer://, each in
# its own network namespace behind a veth pair, is killed (SIGKILL to its
# process group, mid-request) and later started again, under `wrk -t2 -c50`
# on a PHP script: BalancerMember ... hcmethod=TCP hcinterval=1. Prints, for
# each MPM, wrk's requests, socket errors and non-2xx answers (target: 0 and
# 0), when the health check took the member out and brought it back after
# the kill and the restart, and how many requests each member answered.
# Needs root (ip netns). About 16 s per MPM.
# Usage: bench/balancer_failover.sh [WARREN_BINARY]   (default: target/release/warren)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
need wrk:wrk curl:curl ip:iproute2
FPM_BIN=$(ls /usr/sbin/php-fpm* | sort | tail -1)
PORT=${PORT:-18195}
D=$(mktemp -d /tmp/warren-bal.XXXX)
NS=wbal$$
FPM_PIDS=()
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    for p in "${FPM_PIDS[@]}"; do kill -9 -- "-$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for i in 1 2 3; do ip netns del "$NS$i" 2>/dev/null || true; done
    rm -rf "$D"
}
trap cleanup EXIT
mkdir -p "$D/htdocs"
echo '<?php echo "member=", getenv("MEMBER"), "\n";' > "$D/htdocs/who.php"
chmod -R a+rX "$D"
for i in 1 2 3; do
    ip netns add "$NS$i"
    ip link add "${NS}o$i" type veth peer name "${NS}i$i" netns "$NS$i"
    ip addr add "10.231.$i.1/30" dev "${NS}o$i"; ip link set "${NS}o$i" up
    ip -n "$NS$i" addr add "10.231.$i.2/30" dev "${NS}i$i"; ip -n "$NS$i" link set "${NS}i$i" up; ip -n "$NS$i" link set lo up
    printf '%s\n' "[global]" "error_log = $D/fpm$i.log" "daemonize = no" "[m$i]" "listen = 10.231.$i.2:9000" "listen.backlog = 4096" \
        "pm = static" "pm.max_children = 4" "env[MEMBER] = $i" > "$D/fpm$i.conf"
done
FPM=()
start_fpm() { # MEMBER
    setsid ip netns exec "$NS$1" "$FPM_BIN" -R -F -y "$D/fpm$1.conf" >/dev/null 2>&1 &
    FPM[$1]=$!; FPM_PIDS+=("$!")
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/10.231.$1.2/9000") 2>/dev/null && return; sleep 0.1; done
    echo "php-fpm $1 did not start" >&2; exit 1
}
for MPM in ${MPMS:-event worker prefork}; do
    for i in 1 2 3; do start_fpm "$i"; done
    printf '%s\n' "LoadModule mpm_${MPM}_module x" "Listen 127.0.0.1:$PORT" "DocumentRoot htdocs" "PidFile warren.pid" \
        "ErrorLog error.log" "LogLevel info" "User nobody" "Group nogroup" "MaxRequestWorkers 50" \
        "LogFormat \"%{BALANCER_WORKER_NAME}e %>s\" member" "CustomLog access.log member" "<Proxy balancer://php>" \
        "    BalancerMember fcgi://10.231.1.2:9000 hcmethod=TCP hcinterval=1" \
        "    BalancerMember fcgi://10.231.2.2:9000 hcmethod=TCP hcinterval=1" \
        "    BalancerMember fcgi://10.231.3.2:9000 hcmethod=TCP hcinterval=1" \
        "</Proxy>" "ProxyPassMatch ^/(.*\\.php)\$ balancer://php$D/htdocs/\$1" > "$D/warren.conf"
    : > "$D/error.log"; : > "$D/access.log"
    "$BIN" -f "$D/warren.conf" &
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/who.php" >/dev/null && break; sleep 0.1; done
    wrk -t2 -c50 -d14s "http://127.0.0.1:$PORT/who.php" > "$D/wrk.out" & W=$!
    sleep 3
    kill -9 -- "-${FPM[2]}"; killed=$(date +%s%N)
    until grep -q 'failed its health check' "$D/error.log"; do sleep 0.02; done
    out_ms=$(( ($(date +%s%N) - killed) / 1000000 ))
    sleep 4
    start_fpm 2; restarted=$(date +%s%N)
    until grep -q 'passed its health check' "$D/error.log"; do sleep 0.02; done
    back_ms=$(( ($(date +%s%N) - restarted) / 1000000 ))
    wait $W
    echo "$MPM: $(wrk_failures "$D/wrk.out")"
    echo "  member 2 out ${out_ms} ms after the kill, back ${back_ms} ms after its port opened again (hcinterval 1 s); $(grep -c 'went away before answering\|refused the connection' "$D/error.log" || true) requests sent on to another member"
    echo "  answered by member: $(awk '{ n[$1]++ } END { for (m in n) printf "%s %d  ", m, n[m] }' "$D/access.log")"
    "$BIN" -f "$D/warren.conf" -k stop || true
    for i in 1 2 3; do kill -9 -- "-${FPM[$i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    FPM_PIDS=()
done
