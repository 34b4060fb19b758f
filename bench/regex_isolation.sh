#!/usr/bin/env bash
# One tenant's catastrophic .htaccess regexes, and another tenant's static file.
#
# Two name-based virtual hosts on one port: 127.0.0.1 ("a", the attacker's:
# AllowOverride All, an .htaccess of 100 rules, each `RewriteCond %{HTTP:X-A}
# ^(a|a?)+$` then `RewriteRule ^ /matched.txt [END]`) and 127.0.0.2 ("b", a
# 16-byte static file). While 30 clients send a's page with `X-A: aaaa...ab`
# (40 a's: every condition backtracks until PCRE gives up), closed loop,
# fresh connections, b's file is fetched at RATE requests a second (open loop,
# `warren bench --rate`: a response time counts from when the request was due,
# so a stalled server shows its queue). Printed: b's p99 and worst time (ms),
# b's failures, and how many a requests were answered (and how many with 500:
# warren's time budget for rules) in the same time.
#
# Servers, one at a time, each on its own port: warren event, worker and
# prefork (their defaults, no MPM block, User nobody) and Apache (Debian's
# apache2 with mpm_event and Debian's mpm_event.conf, mod_rewrite; installed if
# missing), all serving the same tree and .htaccess.
#
# Target (issue 32): b's p99 under 20 ms under warren's event MPM.
# CONTROL=1 runs each row a second time with a linear pattern in the same
# rules (`^a+b$`, which matches the same header at once): what the same load
# costs b when no pattern is slow, so that the share of b's time the regexes
# take can be told from what 30 clients on this machine cost anyway.
#
# Loopback only; about 80 s (twice with BUSY=1, which runs the same rows again
# with one busy loop per core pinned beside the servers). Cleans up its
# processes and scratch directory.
# Usage: bench/regex_isolation.sh [WARREN_BINARY]     (default: target/release/warren)
#   SERVERS="warren-event warren-worker warren-prefork apache" chooses servers,
#   SECS=10 the run, RATE=100 b's requests a second, ATTACKERS=30, RULES=100,
#   BUSY=1 adds the loaded rows, CONTROL=1 the linear-pattern rows, LOGS=DIR
#   keeps the servers' error logs and the clients' JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVERS=${SERVERS:-warren-event warren-worker warren-prefork apache}
SECS=${SECS:-10}
RATE=${RATE:-100}
ATTACKERS=${ATTACKERS:-30}
RULES=${RULES:-100}
BUSY=${BUSY:-}
CONTROL=${CONTROL:-}
LOGS=${LOGS:-}

need=()
[ -x /usr/sbin/apache2 ] || need+=(apache2)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian starts the service it installs; it must not take our CPU.
service apache2 stop >/dev/null 2>&1 || true

WARREN=$(realpath -m "${1:-target/release/warren}")
[ -x "$WARREN" ] || cargo build --release --locked -q

WORK=$(mktemp -d /tmp/warren-regex-isolation.XXXXXX)
SERVER_PID=
BUSY_PIDS=()
# The server runs in a session of its own (setsid), so that its whole process
# group can be ended, children included, and nothing else.
stop() { # pid: TERM, up to 3 s, then KILL to its process group
    local p=$1
    [ -n "$p" ] || return 0
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
stop_busy() {
    local p
    for p in "${BUSY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    BUSY_PIDS=()
}
cleanup() { stop "$SERVER_PID"; SERVER_PID=; stop_busy; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tree: a's page, its .htaccess, b's file; readable by the servers' users.
mkdir -p "$WORK/a" "$WORK/b"
printf "a's page\n" > "$WORK/a/page.txt"
printf 'a pattern matched\n' > "$WORK/a/matched.txt"
printf "b's static file\n" > "$WORK/b/static.txt"   # 16 bytes
write_htaccess() { # pattern kind: catastrophic | linear
    local re='^(a|a?)+$'
    [ "$1" = linear ] && re='^a+b$'
    {
        echo "RewriteEngine On"
        for _ in $(seq "$RULES"); do
            echo "RewriteCond %{HTTP:X-A} $re"
            echo 'RewriteRule ^ /matched.txt [END]'
        done
    } > "$WORK/a/.htaccess"
}
write_htaccess catastrophic
chmod 755 "$WORK"; chmod -R a+rX "$WORK/a" "$WORK/b"
EVIL="X-A: $(printf 'a%.0s' $(seq 40))b"

port() { case $1 in warren-event) echo 18201 ;; warren-worker) echo 18202 ;; warren-prefork) echo 18203 ;; apache) echo 18204 ;; esac; }

# The two hosts, as both servers read them.
vhosts() { # port
    cat <<CONF
<Directory $WORK/a>
    AllowOverride All
</Directory>
<VirtualHost *:$1>
    ServerName 127.0.0.1
    DocumentRoot $WORK/a
</VirtualHost>
<VirtualHost *:$1>
    ServerName 127.0.0.2
    DocumentRoot $WORK/b
</VirtualHost>
CONF
}

start_server() { # name
    local name=$1 p; p=$(port "$1")
    case $name in
    warren-*)
        {
            printf '%s\n' "LoadModule mpm_${name#warren-}_module x" "Listen 127.0.0.1:$p" "Listen 127.0.0.2:$p" \
                "ServerName localhost" "DocumentRoot $WORK/b" "PidFile $WORK/$name.pid" "ErrorLog $WORK/$name-error.log" \
                "User nobody" "Group nogroup"
            vhosts "$p"
        } > "$WORK/$name.conf"
        setsid "$WARREN" -f "$WORK/$name.conf" 2>>"$WORK/$name-error.log" & SERVER_PID=$!
        ;;
    apache)
        local m=/usr/lib/apache2/modules
        {
            cat <<CONF
ServerRoot /etc/apache2
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule mime_module $m/mod_mime.so
LoadModule rewrite_module $m/mod_rewrite.so
Include /etc/apache2/mods-available/mpm_event.conf
Listen 127.0.0.1:$p
Listen 127.0.0.2:$p
ServerName localhost
User www-data
Group www-data
DocumentRoot $WORK/b
PidFile $WORK/apache.pid
ErrorLog $WORK/apache-error.log
Mutex file:$WORK default
TypesConfig /etc/mime.types
<Directory $WORK>
    Require all granted
</Directory>
CONF
            vhosts "$p"
        } > "$WORK/apache.conf"
        setsid /usr/sbin/apache2 -f "$WORK/apache.conf" -DFOREGROUND 2>>"$WORK/apache-error.log" & SERVER_PID=$!
        ;;
    esac
    for _ in $(seq 100); do curl -sf -m 2 -o /dev/null "http://127.0.0.2:$p/static.txt" && break; sleep 0.1; done
    # Both hosts must answer as set up, or the figures mean nothing.
    local b a
    b=$(curl -s -m 5 "http://127.0.0.2:$p/static.txt" || true)
    a=$(curl -s -m 5 -H "X-A: b" "http://127.0.0.1:$p/page.txt" || true)
    if [ "$b" != "b's static file" ] || [ "$a" != "a's page" ]; then
        echo "$name: b answered '$b', a answered '$a'" >&2
        cat "$WORK"/*error.log >&2 || true
        exit 1
    fi
}

# p99, worst (ms) and failures out of RATE*SECS, from warren bench's JSON.
b_summary() {
    python3 - "$1" $((RATE * SECS)) <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("- - all"); sys.exit()
ok = r["successful_transactions"]
p = r["percentiles_ms"]
print(f'{p["99"]:.1f}' if r["transactions"] else "-", f'{r["longest_transaction"] * 1000:.0f}' if r["transactions"] else "-", max(int(sys.argv[2]) - ok, 0))
PY
}

# a's answers: all, and those that were not 2xx-3xx (warren's 500s).
a_summary() {
    python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("- -"); sys.exit()
print(r["transactions"], r["transactions"] - r["successful_transactions"])
PY
}

declare -A R
run() { # server load (idle or busy, either with -linear: see CONTROL)
    local p; p=$(port "$1")
    start_server "$1"
    "$WARREN" bench -c "$ATTACKERS" -t $((SECS + 4)) --timeout 30s --threads 1 --json -H "$EVIL" \
        "http://127.0.0.1:$p/page.txt" > "$WORK/a.json" 2>/dev/null & local a=$!
    sleep 2
    "$WARREN" bench --rate "$RATE" -c 20 -t "$SECS" --timeout 10s --threads 1 --json \
        "http://127.0.0.2:$p/static.txt" > "$WORK/b.json" 2>/dev/null || true
    wait $a || true
    R[$1,$2,b]=$(b_summary "$WORK/b.json")
    R[$1,$2,a]=$(a_summary "$WORK/a.json")
    if [ -n "$LOGS" ]; then
        local d="$LOGS/$1/$2"; mkdir -p "$d"
        cp "$WORK"/*.json "$WORK"/*error.log "$d/" 2>/dev/null || true
    fi
    stop "$SERVER_PID"; SERVER_PID=
    rm -f "$WORK"/*error.log
    printf '%-15s %-12s b: p99 %7s ms, worst %6s ms, %3s failed | a: %6s answers, %6s of them 500\n' \
        "$1" "$2" ${R[$1,$2,b]} ${R[$1,$2,a]} >&2
}

LOADS=idle
[ -n "$BUSY" ] && LOADS="idle busy"
[ -n "$CONTROL" ] && LOADS=$(for l in $LOADS; do printf '%s %s-linear ' "$l" "$l"; done)
echo "warren $("$WARREN" --version | awk '{print $2}') ($(git rev-parse --short HEAD 2>/dev/null || echo '?')), Apache $(/usr/sbin/apache2 -v | sed -n 's|.*Apache/\([^ ]*\).*|\1|p'); $(nproc) cores; $ATTACKERS attackers, $RULES rules; b at $RATE req/s for ${SECS}s" >&2
for load in $LOADS; do
    case $load in *-linear) write_htaccess linear ;; *) write_htaccess catastrophic ;; esac
    if [ "${load%-linear}" = busy ]; then
        for _ in $(seq "$(nproc)"); do (while :; do :; done) & BUSY_PIDS+=($!); done
    fi
    for server in $SERVERS; do run "$server" "$load"; done
    stop_busy
done

echo
echo "b: p99 and worst response time (ms) of the other host's static file, and its requests of $((RATE * SECS)) without a 2xx answer within 10 s; a: the attacker's requests answered meanwhile (500: out of warren's time budget for rules). Target: b's p99 < 20 ms under warren-event."
printf '| %-14s | %-12s | %9s | %9s | %6s | %9s | %7s |\n' server load "b p99 ms" "b worst" "b fail" "a answers" "a 500s"
printf '| %-14s | %-12s | %9s | %9s | %6s | %9s | %7s |\n' --- --- ---: ---: ---: ---: ---:
for load in $LOADS; do
    for server in $SERVERS; do
        # shellcheck disable=SC2086
        printf '| %-14s | %-12s | %9s | %9s | %6s | %9s | %7s |\n' "$server" "$load" ${R[$server,$load,b]} ${R[$server,$load,a]}
    done
done
