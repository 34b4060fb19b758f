#!/usr/bin/env bash
# A soak: does warren fail requests or grow while it is reloaded and its PHP
# children die under steady load? For DURATION seconds (default 600) wrk keeps
# CONNS keep-alive connections (default 20, each waiting DELAY_MS between
# requests, so about 1,500-2,000 requests a second: modest enough for a shared
# 2-core machine) busy with a mix of small static files (50 %), ~100 KB files
# (10 %) and two PHP scripts (40 %) run by warren's own <Pool> of php-cgi
# (pm dynamic, 4 children at most). Meanwhile:
#   - every RELOAD_EVERY seconds (30; 0 = never) `warren -k graceful -f CONF`;
#   - every KILL_EVERY seconds (20; 0 = never), starting KILL_OFFSET seconds in
#     (5), one pool child picked at random is SIGKILLed. The offset keeps kills
#     at least 5 s from reloads, so a failure can be laid to one or the other by
#     its time.
# MPMS may also name apache-prefork (or apache-event, apache-worker): Debian's
# Apache httpd with that MPM, its PHP through a php-fpm with the same pm
# settings (the kills pick its children; the reloads are apache2 -k
# graceful), for Apache's figures from the same run.
# At the end it prints, for each MPM in MPMS (default: $MPM, else event):
#   - requests, and failed requests (target 0): wrk's socket errors by kind and
#     answers >= 400 by status. Answers >= 400 are timed (by wrk's Lua script)
#     and laid to the kill or reload at most WINDOW seconds before them. wrk
#     does not time socket errors, and (version 4.1, Debian's) counts as a read
#     error every keep-alive connection the server closes, even one idle
#     between two requests, where nothing is lost; so the script also counts
#     the requests sent and never answered, per second (see write_lua), and
#     lays those to kills and reloads the same way;
#   - the access log's statuses >= 400 (the server's view of the same);
#   - error-log lines at error level or worse: count, kinds, a sample, and how
#     many came soon after a kill or a reload;
#   - RSS and PSS (/proc/PID/smaps_rollup) of the parent, the server children
#     summed and the pool children summed, WARMUP seconds in (20) and 2 s before
#     the end (no event falls in the last 10 s), with the change and PASS/FAIL
#     against "flat within 10 %", judged on RSS: a process's PSS also moves
#     when other programs on the machine map the same libraries (other PHP
#     processes, say). When a group has a different number of processes at the
#     two samples (spare-server or pm dynamic maintenance), the mean per
#     process is judged instead of the sum. Also the RSS every minute, to tell
#     growth that levels off from growth that goes on. Note that a graceful
#     restart replaces the server children and the kills replace pool children
#     (each lives about 80 s): only the parent lives through the whole soak.
# Loopback only, bounded in time (DURATION + about 30 s per MPM); stops warren
# and wrk and removes its directory on exit (KEEP=1 keeps the logs).
# Usage: bench/soak.sh [WARREN_BINARY]   (default: target/release/warren)
#        DURATION=120 MPMS="event worker prefork" bench/soak.sh
#        RELOAD_EVERY=0 bench/soak.sh       (kills only)
# Other settings: CONNS, THREADS (wrk's, 2), DELAY_MS, KILL_OFFSET, WARMUP,
# WINDOW, PORT (18131), KEEP.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/release/warren}")
[ -x "$BIN" ] || cargo build --release --locked
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
command -v php-cgi >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq php-cgi; }

DURATION=${DURATION:-600}
MPMS=${MPMS:-${MPM:-event}}
RELOAD_EVERY=${RELOAD_EVERY:-30}
KILL_EVERY=${KILL_EVERY:-20}
KILL_OFFSET=${KILL_OFFSET:-5}
WARMUP=${WARMUP:-20}
CONNS=${CONNS:-20}
THREADS=${THREADS:-2}
DELAY_MS=${DELAY_MS:-10}
WINDOW=${WINDOW:-5}
PORT=${PORT:-18131}
KEEP=${KEEP:-0}
[ "$DURATION" -ge $((WARMUP + 20)) ] || { echo "DURATION must be at least WARMUP + 20 s" >&2; exit 2; }

D='' SRV='' WRK='' FPM_PID='' APACHE=''
stop_all() {
    if [ -n "$WRK" ]; then kill "$WRK" 2>/dev/null || true; wait "$WRK" 2>/dev/null || true; fi
    if [ -n "$SRV" ] && kill -0 "$SRV" 2>/dev/null; then
        kill "$SRV"   # graceful stop of the children and the pool, at most 10 s
        for _ in $(seq 150); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SRV" 2>/dev/null || true   # its children follow (PR_SET_PDEATHSIG)
        wait "$SRV" 2>/dev/null || true
    fi
    if [ -n "$FPM_PID" ]; then kill "$FPM_PID" 2>/dev/null || true; wait "$FPM_PID" 2>/dev/null || true; fi
    if [ -n "$D" ]; then
        if [ "$KEEP" = 1 ]; then echo "logs kept in $D"; else rm -rf "$D"; fi
    fi
    D='' SRV='' WRK='' FPM_PID=''
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# The site: 20 small files (about 200 B to 4 KB), two of about 100 KB, a tiny
# PHP script and one that waits 3 ms (a database, say) and prints ~10 KB.
make_site() {
    local exts=(html css js txt) i
    mkdir -p "$D/htdocs/s" "$D/htdocs/b"
    for i in $(seq 0 19); do
        head -c $((200 + i * 200)) /dev/zero | tr '\0' 'x' > "$D/htdocs/s/$i.${exts[i % 4]}"
    done
    head -c 102400 /dev/urandom > "$D/htdocs/b/0.bin"
    head -c 102400 /dev/zero | tr '\0' 'y' > "$D/htdocs/b/1.txt"
    cat > "$D/htdocs/hello.php" <<'PHP'
<?php echo "hello ", $_SERVER['REQUEST_URI'], "\n";
PHP
    cat > "$D/htdocs/page.php" <<'PHP'
<?php
usleep(3000);
echo "<html><body><ul>\n";
for ($i = 0; $i < 250; $i++) { echo "<li>", md5($i . microtime()), "</li>\n"; }
echo "</ul></body></html>\n";
PHP
    chmod -R a+rX "$D"
}

# The pm settings of the pool, in php-fpm's words (write_conf has warren's).
FPM_PM=("pm = dynamic" "pm.max_children = 4" "pm.start_servers = 2" "pm.min_spare_servers = 1"
    "pm.max_spare_servers = 3" "pm.status_path = /fpm-status")

write_conf() {
    if [ -n "$APACHE" ]; then
        apache_php_conf "$APACHE" "$PORT" "$D" w 'LogFormat "%t %>s %D %P %b %X %U" soak' "CustomLog $D/access.log soak" \
            "<Location /fpm-status>" "    SetHandler \"proxy:unix:$D/w.sock|fcgi://localhost\"" "</Location>" > "$D/w.conf"
        return
    fi
    cat > "$D/w.conf" <<CONF
LoadModule mpm_$1_module x
Listen 127.0.0.1:$PORT
DocumentRoot htdocs
PidFile w.pid
ErrorLog error.log
LogFormat "%t %>s %D %P %b %X %U" soak
CustomLog access.log soak
User nobody
Group nogroup
<Pool php>
    Command php-cgi
    pm dynamic
    pm.max_children 4
    pm.start_servers 2
    pm.min_spare_servers 1
    pm.max_spare_servers 3
    pm.status_path /fpm-status
</Pool>
<FilesMatch "\.php\$">
    SetHandler pool:php
</FilesMatch>
CONF
}

# wrk's script: picks each request at random from the weighted list, waits
# DELAY_MS between a connection's requests, counts answers by status and times
# those >= 400 (per second), and writes the totals to $SOAK_OUT.
# wrk does not say when a socket error happened, but each one loses a request
# that was sent and never answered, so "sent - answered" = in flight + lost so
# far. Its lowest value in each second (connections are idle most of the time,
# so at some moment nothing is in flight) is the number lost so far; where it
# steps up, requests were lost in that second.
write_lua() {
    cat > "$D/mix.lua" <<'LUA'
local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
  thread:set("id", #threads)
end

function init(args)
  delay_ms = tonumber(args[1]) or 10
  math.randomseed(os.time() * 100 + id)
  local exts = {"html", "css", "js", "txt"}
  reqs = {}
  local function add(path, weight)
    for _ = 1, weight do reqs[#reqs + 1] = wrk.format("GET", path) end
  end
  for i = 0, 19 do add("/s/" .. i .. "." .. exts[i % 4 + 1], 5) end   -- 100 of 200
  add("/b/0.bin", 10); add("/b/1.txt", 10)                          -- 20
  add("/hello.php", 50)                                               -- 50
  add("/page.php", 30)                                                -- 30
  statuses, failures, lowest = {}, {}, {}
  -- wrk calls the first thread's request() once more, before the run, to
  -- see how many requests one call gives: that one is not sent.
  sent, answered = (id == 1) and -1 or 0, 0
end

function request()
  sent = sent + 1
  return reqs[math.random(#reqs)]
end

function delay() return delay_ms end

function response(status)
  local now = os.time()
  answered = answered + 1
  local d = sent - answered
  if not lowest[now] or d < lowest[now] then lowest[now] = d end
  local s = tostring(status)
  statuses[s] = (statuses[s] or 0) + 1
  if status >= 400 then
    local k = now .. " " .. s
    failures[k] = (failures[k] or 0) + 1
  end
end

-- Requests lost per second by one thread, from its lowest "sent - answered"
-- in each second: what was lost by then cannot exceed any later value either.
local function losses(lowest, into)
  local secs = {}
  for t in pairs(lowest) do secs[#secs + 1] = t end
  table.sort(secs)
  secs[#secs] = nil   -- the last second is cut short by the end of the run
  local bound, lost = {}, 0
  for i = #secs, 1, -1 do
    lost = (i == #secs) and lowest[secs[i]] or math.min(lowest[secs[i]], lost)
    bound[i] = lost
  end
  local before = 0
  for i, t in ipairs(secs) do
    if bound[i] > before then into[t] = (into[t] or 0) + bound[i] - before; before = bound[i] end
  end
end

function done(summary, latency)
  local out = io.open(os.getenv("SOAK_OUT"), "w")
  local e = summary.errors
  out:write(string.format("requests %d\nconnect %d\nread %d\nwrite %d\ntimeout %d\n",
    summary.requests, e.connect, e.read, e.write, e.timeout))
  out:write(string.format("p50_ms %.1f\np99_ms %.1f\nmax_ms %.1f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  local lost = {}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("statuses")) do out:write("status ", s, " ", n, "\n") end
    for k, n in pairs(t:get("failures")) do out:write("fail ", k, " ", n, "\n") end
    losses(t:get("lowest"), lost)
  end
  for t, n in pairs(lost) do out:write("lost ", t, " ", n, "\n") end
  out:close()
end
LUA
}

# Children of the parent: server children run the parent's executable, the
# rest are the pool's php-cgi processes.
children() {  # server|pool
    local exe c
    exe=$(readlink "/proc/$SRV/exe")
    if [ -n "$APACHE" ]; then   # php-fpm's children are its master's
        if [ "$1" = pool ]; then pgrep -P "$FPM_PID" || true; else pgrep -P "$SRV" || true; fi
        return 0
    fi
    for c in $(pgrep -P "$SRV" || true); do
        if [ "$(readlink "/proc/$c/exe" 2>/dev/null)" = "$exe" ]; then
            [ "$1" = server ] && echo "$c"
        else
            [ "$1" = pool ] && echo "$c"
        fi
    done
    return 0
}

# "count rss_kB pss_kB" summed over the PIDs given (ones that vanished skipped).
mem_of() {
    local n=0 rss=0 pss=0 p r s
    for p in "$@"; do
        read -r r s < <(awk '/^Rss:/ {r = $2} /^Pss:/ {s = $2} END {print r + 0, s + 0}' \
            "/proc/$p/smaps_rollup" 2>/dev/null || echo "0 0")
        [ "$r" -gt 0 ] || continue
        n=$((n + 1)); rss=$((rss + r)); pss=$((pss + s))
    done
    echo "$n $rss $pss"
}

sample_mem() {  # label: start, end or the second
    echo "$1 parent $(mem_of "$SRV")" >> "$D/mem"
    # shellcheck disable=SC2046
    echo "$1 server $(mem_of $(children server))" >> "$D/mem"
    # shellcheck disable=SC2046
    echo "$1 pool $(mem_of $(children pool))" >> "$D/mem"
    ps -o pid=,lstart=,comm= --ppid "$SRV" | sed "s/^/$1 /" >> "$D/mem.ps"   # which processes, since when
}

reload() {
    local rc=0
    if [ -n "$APACHE" ]; then
        /usr/sbin/apache2 -f "$D/w.conf" -k graceful >> "$D/ctl.out" 2>&1 || rc=$?
    else
        "$BIN" -k graceful -f "$D/w.conf" >> "$D/ctl.out" 2>&1 || rc=$?
    fi
    echo "$(date +%s) reload rc=$rc" >> "$D/events"
}

# SIGKILL one pool child at random; the status page says (a moment before)
# whether it was serving a request, and which.
kill_child() {
    local kids victim state
    mapfile -t kids < <(children pool)
    if [ ${#kids[@]} -eq 0 ]; then echo "$(date +%s) kill none" >> "$D/events"; return; fi
    victim=${kids[RANDOM % ${#kids[@]}]}
    state=$(curl -s --max-time 1 "http://127.0.0.1:$PORT/fpm-status?full" | awk -v p="$victim" '
        $1 == "pid:" {cur = $2} cur != p {next}
        $1 == "state:" {st = $2} /^request uri:/ {uri = $3} END {print "state=" st " uri=" uri}' || true)
    echo "$(date +%s) kill pid=$victim $state" >> "$D/events"
    kill -9 "$victim" 2>/dev/null || true
}

# Lays "EPOCH ..." lines (stdin) to the latest event at most WINDOW s before.
# Prints "kill N", "reload N", "none N".
attribute() {
    awk -v window="$WINDOW" -v events="$D/events" '
        BEGIN { while ((getline line < events) > 0) { split(line, f, " "); n++; et[n] = f[1]; ek[n] = f[2] } }
        { t = $1; w = ($2 == "" ? 1 : $2); kind = "none"
          for (i = n; i >= 1; i--) if (et[i] <= t) { if (t - et[i] <= window) kind = ek[i]; break }
          c[kind] += w }
        END { printf "kill %d reload %d none %d\n", c["kill"], c["reload"], c["none"] }'
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%+.1f", (b - a) * 100 / a; else print "n/a" }'; }

report() {
    local mpm=$1 out="$D/wrk.res" req sock non2xx failed lost verdict=PASS
    if [ ! -s "$out" ]; then echo "$mpm: wrk wrote no results (see $D/wrk.out)"; cat "$D/wrk.out"; return 1; fi
    get() { awk -v k="$1" '$1 == k {print $2}' "$out"; }
    req=$(get requests)
    sock=$(( $(get connect) + $(get read) + $(get write) + $(get timeout) ))
    non2xx=$(awk '$1 == "status" && $2 >= 400 {n += $3} END {print n + 0}' "$out")
    failed=$((sock + non2xx))
    echo "== $mpm: ${DURATION}s, $CONNS connections, $(grep -c ' reload ' "$D/events" || true) reloads," \
        "$(grep -c ' kill ' "$D/events" || true) kills"
    printf 'requests: %s (%s/s); latency p50 %s ms, p99 %s ms, max %s ms\n' "$req" "$((req / DURATION))" \
        "$(get p50_ms)" "$(get p99_ms)" "$(get max_ms)"
    printf 'statuses: %s\n' "$(awk '$1 == "status" {c[$2] += $3} END {for (s in c) print s " x" c[s]}' "$out" | sort | tr '\n' ' ')"
    printf 'failed: %d  (socket errors %d: connect %s read %s write %s timeout %s; answers >= 400: %d%s)\n' \
        "$failed" "$sock" "$(get connect)" "$(get read)" "$(get write)" "$(get timeout)" "$non2xx" \
        "$(awk '$1 == "status" && $2 >= 400 {c[$2] += $3} END {for (s in c) printf ", %s x%d", s, c[s]}' "$out")"
    if [ "$non2xx" -gt 0 ]; then
        echo "  answers >= 400 by cause (within ${WINDOW}s after): $(awk '$1 == "fail" {print $2, $4}' "$out" | sort -n | attribute)"
    fi
    if [ "$sock" -gt 0 ]; then
        lost=$(awk '$1 == "lost" {n += $3} END {print n + 0}' "$out")
        echo "  of the socket errors, requests sent and never answered: about $lost; by cause (within ${WINDOW}s after):" \
            "$(awk '$1 == "lost" {print $2, $3}' "$out" | sort -n | attribute)"
        echo "  (the rest are keep-alive connections closed by the server while idle: wrk 4.1 counts those as read errors too)"
    fi
    [ "$failed" -eq 0 ] || verdict=FAIL
    echo "failed requests: $verdict (target 0)"

    echo "access log: $(wc -l < "$D/access.log") lines (wrk's and the script's requests); statuses >= 400: $(awk '$3 >= 400 {c[$3]++} END {for (s in c) printf "%s x%d  ", s, c[s]}' "$D/access.log")"
    local kills running
    kills=$(grep -c ' kill pid=' "$D/events" || true)
    running=$(grep -c 'state=Running' "$D/events" || true)
    echo "kills: $kills ($running of them of a child the status page showed Running); error log 'exited on signal SIGKILL': $(cat "$D"/*.fpm.log "$D/error.log" 2>/dev/null | grep -c 'exited on signal \(SIGKILL\|9\)' || true)"

    local errs
    # Apache's levels name their module: [proxy_fcgi:error].
    errs=$(grep -E '^\[[^]]*\] \[([a-z_0-9]+:)?(error|crit|alert|emerg)\]' "$D/error.log" || true)
    if [ -z "$errs" ]; then
        echo "error log: 0 lines at error level or worse"
    else
        echo "error log: $(wc -l <<< "$errs") lines at error level or worse; by cause (within ${WINDOW}s after):" \
            "$(sed -E 's/^\[[A-Za-z]+ ([A-Za-z]+ [0-9]+ [0-9:]+)\.[0-9]+ ([0-9]+)\].*/\1 \2/' <<< "$errs" | sort | uniq -c |
                while read -r n t; do echo "$(date -d "$t" +%s) $n"; done | attribute)"
        echo "  kinds:"
        sed -E "s#$D/##g; s/^\\[[^]]*\\] //; s/\\[pid [0-9]+\\] //; s/\\[client [^]]*\\] //; s/[0-9]+/N/g" <<< "$errs" |
            sort | uniq -c | sort -rn | head -8 | cut -c1-220 | sed 's/^/   /'
        echo "  sample:"; head -3 <<< "$errs" | cut -c1-300 | sed 's/^/   /'
    fi

    echo "memory, kB (start = ${WARMUP}s in, end = 2 s before the end; verdict on RSS):"
    printf '  %-16s %14s %10s %14s %10s %8s %8s  %s\n' group "start n/RSS" "start PSS" "end n/RSS" "end PSS" "RSS" "PSS" verdict
    local g s e mverdict sn sr sp en er ep basis change name
    for g in parent server pool; do
        s=$(awk -v g="$g" '$1 == "start" && $2 == g {print $3, $4, $5}' "$D/mem")
        e=$(awk -v g="$g" '$1 == "end" && $2 == g {print $3, $4, $5}' "$D/mem")
        read -r sn sr sp <<< "$s"; read -r en er ep <<< "$e"
        if [ "$sn" = "$en" ]; then
            basis=sum; change=$(pct "$sr" "$er")
        else   # different process counts: compare the mean per process
            basis="mean per process"
            change=$(awk -v a="$sr" -v an="$sn" -v b="$er" -v bn="$en" \
                'BEGIN { if (a > 0 && an > 0 && bn > 0) printf "%+.1f", (b / bn - a / an) * 100 / (a / an); else print "n/a" }')
        fi
        mverdict=$(awk -v c="$change" 'BEGIN { print (c != "n/a" && c + 0 <= 10 && c + 0 >= -10) ? "PASS" : "FAIL" }')
        [ "$mverdict" = PASS ] || verdict=FAIL
        case $g in server) name="server children" ;; pool) name="pool children" ;; *) name=parent ;; esac
        printf '  %-16s %14s %10s %14s %10s %8s %8s  %s\n' "$name" "$sn/$sr" "$sp" "$en/$er" "$ep" \
            "$(pct "$sr" "$er")" "$(pct "$sp" "$ep")" "$mverdict ($basis of RSS: $change %)"
        echo "    RSS trend (s: n/kB): $(awk -v g="$g" '$2 == g {printf "%s: %s/%s  ", $1, $3, $4}' "$D/mem")"
    done
    SUMMARY+="$mpm: $req requests, $failed failed ($sock socket errors, $non2xx answers >= 400); overall $verdict"$'\n'
}

soak() {
    local mpm=$1 t0 now el next_reload next_kill next_sample=$WARMUP ended=''
    APACHE=''; case $mpm in apache-*) APACHE=${mpm#apache-} ;; esac
    D=$(mktemp -d /tmp/warren-soak.XXXX); chmod 755 "$D"
    make_site; write_conf "$mpm"; write_lua; : > "$D/events"; : > "$D/mem"
    if curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$PORT/"; then
        echo "port $PORT is in use (set PORT)" >&2; return 1
    fi
    if [ -n "$APACHE" ]; then
        php_fpm_for_apache "$D" w "${FPM_PM[@]}"
        # Its own session: Apache prefork answers TERM by signalling its process group.
        ln -s w.error.log "$D/error.log"
        setsid /usr/sbin/apache2 -f "$D/w.conf" -DFOREGROUND 2> "$D/stderr" & SRV=$!
    else
        "$BIN" -f "$D/w.conf" 2> "$D/stderr" & SRV=$!
    fi
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$PORT/hello.php" > /dev/null && curl -sf "http://127.0.0.1:$PORT/s/0.html" > /dev/null && break
        sleep 0.1
    done
    curl -sf "http://127.0.0.1:$PORT/page.php" > /dev/null || { echo "$mpm did not answer; $D/stderr:" >&2; cat "$D/stderr" >&2; return 1; }

    t0=$(date +%s)
    SOAK_OUT="$D/wrk.res" timeout $((DURATION + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --timeout 10s \
        -s "$D/mix.lua" "http://127.0.0.1:$PORT" -- "$DELAY_MS" > "$D/wrk.out" 2>&1 & WRK=$!
    next_reload=$(( RELOAD_EVERY > 0 ? RELOAD_EVERY : DURATION * 2 ))
    next_kill=$(( KILL_EVERY > 0 ? KILL_OFFSET : DURATION * 2 ))
    while kill -0 "$WRK" 2>/dev/null; do
        now=$(date +%s); el=$((now - t0))
        if [ "$el" -lt $((DURATION - 10)) ]; then
            if [ "$el" -ge "$next_reload" ]; then reload; next_reload=$((next_reload + RELOAD_EVERY)); fi
            if [ "$el" -ge "$next_kill" ]; then kill_child; next_kill=$((next_kill + KILL_EVERY)); fi
        fi
        if [ "$el" -ge "$next_sample" ] && [ "$el" -lt $((DURATION - 2)) ]; then
            sample_mem "$([ "$next_sample" = "$WARMUP" ] && echo start || echo "$el")"; next_sample=$((next_sample + 60))
        fi
        if [ -z "$ended" ] && [ "$el" -ge $((DURATION - 2)) ]; then sample_mem end; ended=1; fi
        sleep 1
    done
    wait "$WRK" || true; WRK=''
    sleep 1   # the access log is flushed every 250 ms
    [ -n "$ended" ] || sample_mem end
    report "$mpm" || true
    stop_all
}

SUMMARY=''
for mpm in $MPMS; do soak "$mpm"; echo; done
printf '%s' "$SUMMARY"
