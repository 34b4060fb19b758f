#!/usr/bin/env bash
# A `<Pool>` run by warren's php-fpm master against a php-fpm started by hand
# with the same settings, by CPU per request of each side, for a machine
# other work also loads (where req/s mostly shows how the cores were
# shared). One warren (event) serves /pool/hello.php from its `<Pool bench>`
# (Command php-fpm, pm static 4, User www-data) and /hand/hello.php through
# proxy:unix: to a php-fpm started here in a session of its own (as the
# pool's master is), pm static 4, children as www-data. Each round runs wrk
# on one, then the other (the order alternating by round); a figure is the
# utime + stime of every process of a php-fpm's session (master and
# children) over the run, from /proc/PID/stat, divided by the requests wrk
# completed, and warren's own (its processes outside the pool's session).
# Each difference between the two is tried by adding lines to one side:
#   POOL_EXTRA   lines added inside <Pool bench> (php-fpm settings pass
#                through as they are: "request_terminate_timeout 30")
#   HAND_EXTRA   lines added to the hand-started php-fpm's pool section
#   HAND_GLOBAL  lines added to its [global] section
#   SERVER_EXTRA lines added to warren's configuration ("MemoryBudget 1G")
#   NO_CGROUP=1  the pool's processes moved back to warren's cgroup after
#                start (what the pool's own memory cgroup costs; cgroup v1)
# Usage: WARREN=target/release/warren bench/pool_cpu.sh
#        (ROUNDS=3, DURATION=5 seconds a run, wrk THREADS=2 CONNECTIONS=16, PORT=18531;
#        DUMP=1 prints both php-fpm configurations, each side's processes
#        (cgroup, oom_score_adj, nice, rlimits, sockets' flags, user) and the
#        difference in what PHP sees: its request variables and ini settings).
# Prints each run, then the medians of each side (us/request, req/s) and pool/hand.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
: "${WARREN:=target/debug/warren}"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
PORT=${PORT:-18531}
need wrk:wrk curl:curl
FPM_BIN=$(ls /usr/sbin/php-fpm* | sort | tail -1)
# Not quiet_debian_services: nothing here needs Debian's php-fpm stopped.
ulimit -n 65536 2>/dev/null || true
comparison_workdir warren-pool-cpu
mkdir -p "$DOCROOT/pool" "$DOCROOT/hand"
cp "$DOCROOT/hello.php" "$DOCROOT/pool/"
cp "$DOCROOT/hello.php" "$DOCROOT/hand/"
# What each side's PHP is given: its request variables and its settings.
printf '<?php ksort($_SERVER); foreach ($_SERVER as $k => $v) if (!in_array($k, ["REQUEST_TIME", "REQUEST_TIME_FLOAT", "REMOTE_PORT", "SCRIPT_FILENAME", "SCRIPT_NAME", "REQUEST_URI", "PHP_SELF", "DOCUMENT_URI", "CONTEXT_DOCUMENT_ROOT"])) echo "$k=$v\n"; foreach (ini_get_all(null, false) as $k => $v) echo "ini $k=$v\n";' > "$DOCROOT/pool/env.php"
cp "$DOCROOT/pool/env.php" "$DOCROOT/hand/"
chmod -R a+rX "$DOCROOT"

HAND_SOCK=$WORK/hand.sock
cat > "$WORK/hand-fpm.conf" <<CONF
[global]
error_log = $WORK/hand-fpm.log
daemonize = no
${HAND_GLOBAL:-}
[hand]
listen = $HAND_SOCK
listen.mode = 0666
user = www-data
group = www-data
pm = static
pm.max_children = 4
${HAND_EXTRA:-}
CONF
setsid "$FPM_BIN" -R -F -y "$WORK/hand-fpm.conf" >"$WORK/hand-fpm.out" 2>&1 & FPM_PID=$!
for _ in $(seq 1 100); do [ -S "$HAND_SOCK" ] && break; sleep 0.1; done

cat > "$WORK/warren.conf" <<CONF
LoadModule mpm_event_module modules/mod_mpm_event.so
Listen 127.0.0.1:$PORT
ServerName localhost
DocumentRoot $DOCROOT
PidFile $WORK/warren.pid
User www-data
Group www-data
ErrorLog $WORK/warren-error.log
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
${SERVER_EXTRA:-}
<Pool bench>
    Command $FPM_BIN
    pm static
    pm.max_children 4
${POOL_EXTRA:-}
</Pool>
<Directory $DOCROOT/pool>
    SetHandler pool:bench
</Directory>
<Directory $DOCROOT/hand>
    SetHandler "proxy:unix:$HAND_SOCK|fcgi://localhost"
</Directory>
$EVENT_BLOCK
CONF
"$WARREN" -f "$WORK/warren.conf" >"$WORK/warren.out" 2>&1 & SERVER_PID=$!
for side in pool hand; do
    for _ in $(seq 1 100); do
        [ "$(curl -s "http://127.0.0.1:$PORT/$side/hello.php" 2>/dev/null)" = "Hello World" ] && break
        sleep 0.1
    done
    [ "$(curl -s "http://127.0.0.1:$PORT/$side/hello.php")" = "Hello World" ] || { echo "/$side/hello.php does not answer" >&2; cat "$WORK/warren-error.log" "$WORK/hand-fpm.log" >&2 || true; exit 1; }
done
# The pool's master leads its session; warren's processes are the rest of
# warren's tree.
POOL_MASTER=$(ps -eo pid=,sid=,comm= | awk -v hand="$FPM_PID" '$1 == $2 && $3 ~ "^php-fpm" && $1 != hand {print $1}' | while read -r p; do
    # Only a master whose ancestors include this warren.
    q=$p; while [ "$q" -gt 1 ]; do q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null || echo 1); [ "$q" = "$SERVER_PID" ] && echo "$p" && break; done
done | head -1)
[ -n "$POOL_MASTER" ] || { echo "no php-fpm master under warren $SERVER_PID" >&2; exit 1; }
if [ "${DUMP:-0}" = 1 ]; then
    conf_fd=$(find "/proc/$POOL_MASTER/fd" -lname "*memfd:warren-pool-*" | head -1)
    echo "--- the pool's php-fpm configuration (master $POOL_MASTER)"; cat "$conf_fd"
    echo "--- the hand-started one's"; cat "$WORK/hand-fpm.conf"
    for p in "$POOL_MASTER" "$FPM_PID"; do
        echo "--- $p: $(cat /proc/$p/cgroup | grep memory) oom_score_adj $(cat /proc/$p/oom_score_adj) nice $(awk '{print $19}' /proc/$p/stat)"
        grep -E "^(Max open files|Max core|Max processes)" "/proc/$p/limits"
        for fd in /proc/$p/fd/*; do case $(readlink "$fd") in socket:*) echo "    fd ${fd##*/} $(readlink "$fd") flags $(awk '/^flags/ {print $2}' "/proc/$p/fdinfo/${fd##*/}")";; esac; done
        for c in $(pgrep -P "$p"); do echo "    child $c: $(grep memory /proc/$c/cgroup) oom_score_adj $(cat /proc/$c/oom_score_adj) nice $(awk '{print $19}' /proc/$c/stat) uid $(awk '/^Uid/ {print $2}' /proc/$c/status)"; done
    done
    echo "--- what PHP sees, pool (<) against hand (>)"
    curl -s "http://127.0.0.1:$PORT/pool/env.php" > "$WORK/pool.env"; curl -s "http://127.0.0.1:$PORT/hand/env.php" > "$WORK/hand.env"
    echo "$(wc -l < "$WORK/pool.env") lines against $(wc -l < "$WORK/hand.env")"; diff "$WORK/pool.env" "$WORK/hand.env" || true
fi
if [ "${NO_CGROUP:-0}" = 1 ]; then
    own=$(awk -F: '$2 == "memory" {print $3}' /proc/$$/cgroup)
    for p in $(ps -eo pid=,sid= | awk -v s="$POOL_MASTER" '$2 == s {print $1}'); do echo "$p" > "/sys/fs/cgroup/memory$own/cgroup.procs"; done
    grep memory "/proc/$POOL_MASTER/cgroup"
fi

# session_counts SID: utime + stime in ticks (and that of reaped
# children), minor page faults, and context switches (voluntary or not) of
# every process in session SID.
session_counts() {
    ps -eo pid=,sid= | awk -v s="$1" '$2 == s {print $1}' | while read -r p; do
        echo "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15, $8}') $(awk '/ctxt_switches/ {n += $2} END {print n + 0}' "/proc/$p/status" 2>/dev/null)"
    done | awk '{t += $1; f += $2; c += $3} END {print t + 0, f + 0, c + 0}'
}
# warren_ticks: warren's processes, the pool's session left out.
warren_ticks() {
    local total=0 p v
    for p in $SERVER_PID $(pgrep -P "$SERVER_PID" || true); do
        [ "$p" = "$POOL_MASTER" ] && continue
        v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
HZ=$(getconf CLK_TCK)
RESULTS=$WORK/results
: > "$RESULTS"
run() { # side round
    local sid=$POOL_MASTER out=$WORK/wrk.out f0 w0 f1 w1 n
    [ "$1" = hand ] && sid=$FPM_PID
    read -r f0 pf0 cs0 < <(session_counts "$sid"); w0=$(warren_ticks)
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "http://127.0.0.1:$PORT/$1/hello.php" > "$out"
    read -r f1 pf1 cs1 < <(session_counts "$sid"); w1=$(warren_ticks)
    n=$(awk '/requests in/ {print $1}' "$out")
    if grep -q -e "Non-2xx" -e "Socket errors" "$out"; then echo "round $2 $1: failures: $(wrk_failures "$out")" >&2; fi
    awk -v side="$1" -v r="$2" -v n="$n" -v f=$((f1 - f0)) -v w=$((w1 - w0)) -v pf=$((pf1 - pf0)) -v cs=$((cs1 - cs0)) -v hz="$HZ" -v d="$DURATION" -v loadavg="$(cut -d' ' -f1 /proc/loadavg)" \
        'BEGIN {printf "round %d %-4s %7d req/s  php-fpm %6.1f us/req  warren %6.1f us/req  load %s  php-fpm %.2f faults %.2f switches a request\n", r, side, n / d, f * 1e6 / hz / n, w * 1e6 / hz / n, loadavg, pf / n, cs / n}' | tee -a "$RESULTS"
}
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then run pool "$r"; run hand "$r"; else run hand "$r"; run pool "$r"; fi
done
awk '{rate[$3] = rate[$3] " " $4; fpm[$3] = fpm[$3] " " $7; w[$3] = w[$3] " " $10}
    function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { p = median(fpm["pool"]); h = median(fpm["hand"]); printf "median php-fpm us/req: pool %.1f hand %.1f (pool/hand %.2f); warren us/req: pool %.1f hand %.1f; req/s: pool %d hand %d (pool/hand %.2f)\n", p, h, p / h, median(w["pool"]), median(w["hand"]), median(rate["pool"]), median(rate["hand"]), median(rate["pool"]) / median(rate["hand"]) }' "$RESULTS"
