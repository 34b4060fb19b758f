#!/usr/bin/env bash
# Regenerates expected.txt from cases.txt by running Debian's Apache 2.4
# (/usr/sbin/apache2, modules from /usr/lib/apache2/modules) on 127.0.0.1.
# Nothing of /etc/apache2 is used. See README.md for the formats.
#
#   crates/rewrite/tests/apache/generate.sh [CASES [EXPECTED]]
#
# Environment: APACHE2 (default /usr/sbin/apache2), MODDIR (default
# /usr/lib/apache2/modules), KEEP=1 keeps the temp dir (for debugging; the
# error log has mod_rewrite's trace3), ONLY=NAME runs one case and prints
# its line instead of writing EXPECTED.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASES=${1:-$HERE/cases.txt}
EXPECTED=${2:-$HERE/expected.txt}
APACHE2=${APACHE2:-/usr/sbin/apache2}
MODDIR=${MODDIR:-/usr/lib/apache2/modules}
RUN_USER=www-data
RUN_GROUP=www-data

die() { echo "generate.sh: $*" >&2; exit 1; }

if [[ ! -x $APACHE2 ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends apache2 >&2
    else
        die "$APACHE2 missing (apt-get install apache2)"
    fi
fi
command -v curl >/dev/null || die "curl missing"
if [[ $(id -u) -eq 0 ]]; then
    id "$RUN_USER" >/dev/null 2>&1 || die "user $RUN_USER missing"
else   # not root: Apache cannot switch users; it runs as us
    RUN_USER=$(id -un); RUN_GROUP=$(id -gn)
fi

W=$(mktemp -d /tmp/warren-apachecases.XXXXXX)
chmod 755 "$W"
APACHE_PID=
stop_apache() {
    [[ -n $APACHE_PID ]] || return 0
    local i
    kill -WINCH "$APACHE_PID" 2>/dev/null || true   # graceful-stop: requests in flight finish
    for i in $(seq 1 100); do
        kill -0 "$APACHE_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$APACHE_PID" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$APACHE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$APACHE_PID" 2>/dev/null; then
        kill -KILL -- "-$APACHE_PID" 2>/dev/null || true
    fi
    wait "$APACHE_PID" 2>/dev/null || true
    APACHE_PID=
}
cleanup() {
    stop_apache || true
    if [[ ${KEEP:-0} == 1 ]]; then echo "kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$W/tree" "$W/d" "$W/logs" "$W/run" "$W/conf" "$W/cases" "$W/out" "$W/maindoc"

# ---------------------------------------------------------------- parsing
# Comments: '#' at the start of a line or after whitespace, to end of line.
strip() {
    local l=$1
    l="${l#"${l%%[![:space:]]*}"}"   # leading blanks
    [[ $l == \#* ]] && l=
    l=${l%%[[:space:]]#*}            # a comment after a blank
    l="${l%"${l##*[![:space:]]}"}"   # trailing blanks
    printf '%s' "$l"
}

declare -a NAMES=()
state=top   # top | tree | case
mapfile_path=
cur=
where=
lineno=0
while IFS= read -r raw || [[ -n $raw ]]; do
    lineno=$((lineno + 1))
    line=$(strip "$raw")
    [[ -z $line ]] && continue
    kw=${line%%[[:space:]]*}
    rest=
    [[ $line == *[[:space:]]* ]] && rest=$(strip "${line#*[[:space:]]}")
    case $state in
    top)
        case $kw in
        tree) state=tree ;;
        case)
            [[ $rest =~ ^[A-Za-z0-9_-]+$ ]] || die "line $lineno: bad case name '$rest'"
            for o in "${NAMES[@]}"; do   # host names: unique without regard to case
                [[ ${o,,} == "${rest,,}" ]] && die "line $lineno: duplicate case $rest"
            done
            cur=$rest; where=server; state=case
            mkdir -p "$W/cases/$cur/ht" "$W/cases/$cur/dir"
            : >"$W/cases/$cur/server"; : >"$W/cases/$cur/main"; : >"$W/cases/$cur/headers"
            : >"$W/cases/$cur/env"; : >"$W/cases/$cur/request"; : >"$W/cases/$cur/flags"
            : >"$W/cases/$cur/resp"
            NAMES+=("$cur") ;;
        *) die "line $lineno: expected 'tree' or 'case', got '$kw'" ;;
        esac ;;
    tree)
        if [[ $kw != line ]]; then mapfile_path=; fi
        case $kw in
        end) state=top ;;
        file)
            mkdir -p "$(dirname "$W/tree/$rest")"
            printf 'file:%s\n' "$rest" >"$W/tree/$rest" ;;
        dir) mkdir -p "$W/tree/$rest" ;;
        empty) mkdir -p "$(dirname "$W/tree/$rest")"; : >"$W/tree/$rest" ;;
        link)
            [[ $rest =~ ^(.+[^[:space:]])[[:space:]]+-\>[[:space:]]+(.+)$ ]] || die "line $lineno: link A -> B"
            mkdir -p "$(dirname "$W/tree/${BASH_REMATCH[1]}")"
            ln -s "${BASH_REMATCH[2]}" "$W/tree/${BASH_REMATCH[1]}" ;;
        mapfile)
            mkdir -p "$(dirname "$W/tree/$rest")"; : >"$W/tree/$rest"; mapfile_path=$rest ;;
        line)
            [[ -n $mapfile_path ]] || die "line $lineno: 'line' outside a mapfile"
            printf '%s\n' "$rest" >>"$W/tree/$mapfile_path" ;;
        *) die "line $lineno: unknown tree entry '$kw'" ;;
        esac ;;
    case)
        C=$W/cases/$cur
        case $kw in
        end)
            [[ -s $C/request ]] || die "case $cur: no request"
            state=top ;;
        where)
            if [[ $rest == server || $rest == main ]]; then where=$rest
            elif [[ $rest =~ ^(htaccess|directory)([[:space:]]+(.*))?$ ]]; then
                d=${BASH_REMATCH[3]}
                [[ $d == '""' || $d == . ]] && d=
                d=${d%/}
                [[ $d == *..* ]] && die "line $lineno: bad dir"
                where="${BASH_REMATCH[1]} $d"
            else die "line $lineno: where server|main|htaccess DIR|directory DIR"; fi
            [[ $where == main ]] && echo solo >>"$C/flags"
            true ;;
        rule)
            case $where in
            server) printf '%s\n' "$rest" >>"$C/server" ;;
            main) printf '%s\n' "$rest" >>"$C/main" ;;
            "htaccess "*) d=${where#htaccess }; printf '%s\n' "$rest" >>"$C/ht/d$(printf '%s' "$d" | od -An -tx1 | tr -d ' \n')" ;;
            "directory "*) d=${where#directory }; printf '%s\n' "$rest" >>"$C/dir/d$(printf '%s' "$d" | od -An -tx1 | tr -d ' \n')" ;;
            esac ;;
        request)
            [[ -s $C/request ]] && die "line $lineno: one request per case"
            [[ $rest =~ ^([A-Z]+)[[:space:]]+([^[:space:]]+)$ ]] || die "line $lineno: request METHOD TARGET"
            printf '%s\n%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >"$C/request" ;;
        header)
            [[ $rest == *:* ]] || die "line $lineno: header Name: value"
            printf '%s\n' "$rest" >>"$C/headers"
            shopt -s nocasematch
            [[ $rest == host:* ]] && echo solo >>"$C/flags"
            shopt -u nocasematch ;;
        env)
            [[ $rest =~ ^[A-Za-z0-9_]+$ ]] || die "line $lineno: env VAR"
            printf '%s\n' "$rest" >>"$C/env" ;;
        resp)
            [[ $rest =~ ^[A-Za-z0-9_-]+$ ]] || die "line $lineno: resp Header-Name"
            printf '%s\n' "$rest" >>"$C/resp" ;;
        expect-config-error) echo config-error >>"$C/flags" ;;
        *) die "line $lineno: unknown case entry '$kw'" ;;
        esac ;;
    esac
done <"$CASES"
[[ $state == top ]] || die "unterminated block at end of $CASES"
[[ ${#NAMES[@]} -gt 0 ]] || die "no cases"

if [[ -n ${ONLY:-} ]]; then
    [[ -d $W/cases/$ONLY ]] || die "no case $ONLY"
    NAMES=("$ONLY")
fi

hex2str() { local h=${1#d}; printf '%b' "$(sed 's/../\\x&/g' <<<"$h")"; }

# ---------------------------------------------------------------- config
write_mime() {
    cat >"$W/conf/mime.types" <<'EOF'
text/html html htm
text/plain txt
text/css css
application/javascript js
application/json json
image/png png
image/gif gif
EOF
}

# Writes the per-case docroot and the <VirtualHost> for case $1 on port $2.
setup_case() {
    local n=$1 port=$2 C=$W/cases/$1 D=$W/d/$1 f d fmt v
    rm -rf "$D"; cp -a "$W/tree" "$D"
    # .htaccess files
    for f in "$C"/ht/*; do
        [[ -e $f ]] || continue
        d=$(hex2str "$(basename "$f")")
        mkdir -p "$D/$d"
        sed "s|@DOCROOT@|$D|g" "$f" >"$D/${d:+$d/}.htaccess"
    done
    fmt='%v\t%>s\t%>U\t%q\t%f\t%{Location}o\t%{Content-Type}o\t%{Vary}o'
    while IFS= read -r v; do fmt+="\\t%{$v}e\\t%{REDIRECT_$v}e"; done <"$C/env"
    {
        echo "<VirtualHost 127.0.0.1:$port>"
        echo "  ServerName $n.case:80"
        echo "  DocumentRoot $D"
        echo "  CustomLog $W/logs/$n.log \"$fmt\""
        sed "s|@DOCROOT@|$D|g; s/^/  /" "$C/server"
        for f in "$C"/dir/*; do
            [[ -e $f ]] || continue
            d=$(hex2str "$(basename "$f")")
            echo "  <Directory $D${d:+/$d}>"
            sed "s|@DOCROOT@|$D|g; s/^/    /" "$f"
            echo "  </Directory>"
        done
        echo "</VirtualHost>"
    } >>"$W/conf/vhosts.conf"
    [[ -s $C/main ]] && sed "s|@DOCROOT@|$D|g" "$C/main" >>"$W/conf/main.conf"
    true
}

write_conf() {   # $1 = port
    local port=$1 m
    {
        echo "ServerRoot $W"
        echo "DefaultRuntimeDir $W/run"
        echo "PidFile $W/run/apache2.pid"
        echo "ServerName main.invalid"
        echo "Listen 127.0.0.1:$port"
        echo "User $RUN_USER"
        echo "Group $RUN_GROUP"
        for m in mpm_event:mpm_event authz_core:authz_core mime:mime dir:dir rewrite:rewrite \
                 headers:headers alias:alias env:env setenvif:setenvif; do
            echo "LoadModule ${m%%:*}_module $MODDIR/mod_${m#*:}.so"
        done
        cat <<EOF
StartServers 1
ServerLimit 1
ThreadsPerChild 8
MaxRequestWorkers 8
MinSpareThreads 1
MaxSpareThreads 8
Timeout 10
KeepAlive Off
ErrorLog $W/logs/error.log
LogLevel warn rewrite:trace3
TypesConfig $W/conf/mime.types
DirectoryIndex index.html index.php
DocumentRoot $W/maindoc
AccessFileName .htaccess
<Directory />
  Options None
  AllowOverride None
  Require all denied
</Directory>
<Directory $W/d>
  Options FollowSymLinks
  AllowOverride All
  Require all granted
</Directory>
<Directory $W/maindoc>
  Require all granted
</Directory>
<Files ".ht*">
  Require all denied
</Files>
Include $W/conf/main.conf
Include $W/conf/vhosts.conf
EOF
    } >"$W/conf/apache2.conf"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
    local p i
    for i in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        port_free "$p" && { echo "$p"; return; }
    done
    die "no free port"
}

start_apache() {   # $1 = port; returns 1 on a config error
    local port=$1 i
    if ! "$APACHE2" -t -f "$W/conf/apache2.conf" >"$W/run/configtest" 2>&1; then
        return 1
    fi
    setsid "$APACHE2" -f "$W/conf/apache2.conf" -DFOREGROUND </dev/null >>"$W/logs/stdout" 2>&1 &
    APACHE_PID=$!
    for i in $(seq 1 100); do
        if ! kill -0 "$APACHE_PID" 2>/dev/null; then
            wait "$APACHE_PID" 2>/dev/null || true
            APACHE_PID=
            if grep -q "could not bind\|Address already in use" "$W/logs/error.log" "$W/logs/stdout" 2>/dev/null; then
                grep -h "bind\|in use" "$W/logs/error.log" "$W/logs/stdout" | head -2 >&2 || true
                echo "generate.sh: port $port taken, trying another" >&2
                : >"$W/logs/error.log"; : >"$W/logs/stdout"
                return 2   # port taken meanwhile: the caller picks another
            fi
            cat "$W/logs/error.log" "$W/logs/stdout" >&2 || true
            die "apache2 exited at start"
        fi
        # connect only: no request, so nothing in the access logs
        if ! port_free "$port"; then sleep 0.2; return 0; fi
        sleep 0.1
    done
    die "apache2 not answering on $port"
}


send() {   # $1 = case, $2 = port
    local n=$1 port=$2 C=$W/cases/$1 method target h
    { read -r method; read -r target; } <"$C/request"
    local -a args=(-s -o "$W/out/$n.body" -D "$W/out/$n.hdr" -w '%{http_code}'
                   --max-time 10 --path-as-is)
    grep -qi '^host:' "$C/headers" || args+=(-H "Host: $n.case")
    while IFS= read -r h; do args+=(-H "$h"); done <"$C/headers"
    if [[ $method == HEAD ]]; then args+=(-I)
    elif [[ $method != GET ]]; then args+=(-X "$method"); fi
    curl "${args[@]}" "http://127.0.0.1:$port$target" >"$W/out/$n.code" 2>/dev/null || echo 000 >"$W/out/$n.code"
}

# One Apache for all ordinary cases; one each for cases marked solo (Host
# header set by the case, or rules in the main server).
run_group() {   # names...
    local tries rc=0
    for tries in 1 2 3 4 5; do
        rc=0
        run_group_on "$(pick_port)" "$@" || rc=$?
        [[ $rc == 2 ]] || return "$rc"
    done
    die "no port could be bound"
}

run_group_on() {   # port names...
    local port=$1 n rc=0
    shift
    : >"$W/conf/main.conf"; : >"$W/conf/vhosts.conf"
    for n in "$@"; do setup_case "$n" "$port"; done
    chmod -R a+rX "$W/d" "$W/maindoc" "$W/conf"
    write_conf "$port"
    start_apache "$port" || rc=$?
    [[ $rc == 2 ]] && return 2
    if [[ $rc != 0 ]]; then
        if [[ $# -gt 1 ]]; then   # a shared group: say which case broke it
            local ln
            cat "$W/run/configtest" >&2
            ln=$(grep -o 'line [0-9]* of [^:]*vhosts.conf' "$W/run/configtest" | head -1 | awk '{print $2}')
            [[ -n $ln ]] && head -n "$ln" "$W/conf/vhosts.conf" | grep ServerName | tail -1 >&2
            die "config error in a shared group: mark the case expect-config-error"
        fi
        for n in "$@"; do cp "$W/run/configtest" "$W/out/$n.configerror"; done
        return 0
    fi
    for n in "$@"; do send "$n" "$port"; done
    # the access log line is written after the response: wait for them (5 s at most)
    local i missing
    for i in $(seq 1 50); do
        missing=0
        for n in "$@"; do [[ -s $W/logs/$n.log ]] || { missing=1; break; }; done
        [[ $missing == 0 ]] && break
        sleep 0.1
    done
    stop_apache
    for n in "$@"; do
        if grep -q "127.0.0.1:$port\|:$port\b" "$W/logs/$n.log" 2>/dev/null; then
            echo "generate.sh: warning: case $n's result mentions the port $port" >&2
        fi
    done
}

write_mime
declare -a SHARED=() SOLO=()
for n in "${NAMES[@]}"; do
    if grep -q solo "$W/cases/$n/flags"; then SOLO+=("$n"); else SHARED+=("$n"); fi
done
# Config-error cases run alone as well, so they do not break the others.
declare -a SHARED2=()
for n in "${SHARED[@]}"; do
    if grep -q config-error "$W/cases/$n/flags"; then SOLO+=("$n"); else SHARED2+=("$n"); fi
done
[[ ${#SHARED2[@]} -gt 0 ]] && run_group "${SHARED2[@]}"
for n in "${SOLO[@]}"; do run_group "$n"; done

# ---------------------------------------------------------------- results
hdr() {   # $1 = header file, $2 = header name -> value(s) joined by ", ", or -
    local v
    v=$(tr -d '\r' <"$1" 2>/dev/null | grep -i "^$2:" | sed -E 's/^[^:]*:[[:space:]]*//' | awk 'NR > 1 { printf ", " } { printf "%s", $0 }') || true
    printf '%s' "${v:--}"
}

result_line() {
    local n=$1 C=$W/cases/$1 D=$W/d/$1 line v status uri query file loc ctype vary i
    local -a f envs=()
    if grep -q config-error "$C/flags"; then
        if [[ -e $W/out/$n.configerror ]]; then
            printf '%s\tconfig-error\n' "$n"
        else
            printf '%s\tNOT-a-config-error\n' "$n"
            echo "generate.sh: case $n: expected a config error, got none" >&2
        fi
        return
    fi
    if [[ -e $W/out/$n.configerror ]]; then
        cat "$W/out/$n.configerror" >&2
        die "case $n: unexpected config error"
    fi
    line=$(head -1 "$W/logs/$n.log" 2>/dev/null) || true
    [[ -n $line ]] || die "case $n: no access log line (curl said $(cat "$W/out/$n.code"))"
    [[ $(wc -l <"$W/logs/$n.log") -eq 1 ]] || echo "generate.sh: warning: case $n: several log lines" >&2
    IFS=$'\x1f' read -r -a f <<<"${line//$'\t'/$'\x1f'}"$'\x1f'"END"
    status=${f[1]}; uri=${f[2]}; query=${f[3]}; file=${f[4]}
    loc=${f[5]}; ctype=${f[6]}; vary=${f[7]}
    if [[ -z $query ]]; then query=-; else query=${query#\?}; fi
    if [[ $file == "$D" ]]; then file=.
    elif [[ $file == "$D"/* ]]; then file=${file#"$D"/}; file=${file:-.}; fi
    # cross-check with what curl saw
    local cs cl
    cs=$(cat "$W/out/$n.code"); cl=$(hdr "$W/out/$n.hdr" Location)
    [[ $cs == "$status" ]] || echo "generate.sh: warning: case $n: log status $status, curl $cs" >&2
    [[ $cl == "$loc" ]] || echo "generate.sh: warning: case $n: log location '$loc', curl '$cl'" >&2
    local out="$n	status=$status	uri=$uri	query=$query	file=$file	location=$loc	ctype=$ctype	vary=$vary"
    i=8
    while IFS= read -r v; do
        out+="	env.$v=${f[$i]}	env.REDIRECT_$v=${f[$((i + 1))]}"
        i=$((i + 2))
    done <"$C/env"
    while IFS= read -r v; do
        out+="	resp.$v=$(hdr "$W/out/$n.hdr" "$v" | tr '\t' ' ')"
    done <"$C/resp"
    out=${out//$D/@DOCROOT@}
    printf '%s\n' "$out"
}

if [[ -n ${ONLY:-} ]]; then
    result_line "$ONLY"
    if [[ ${KEEP:-0} == 1 ]]; then
        grep -h "$ONLY.case" "$W/logs/error.log" | sed -E 's/^.*\[rid#[^]]*\]//' | cut -c1-400 >&2 || true
        grep -v 'trace[0-9]\]' "$W/logs/error.log" | grep -v 'AH00489\|AH00094\|AH00491' >&2 || true
    fi
    exit 0
fi
{
    echo "# Generated by generate.sh from cases.txt with $("$APACHE2" -v | head -1 | sed 's/^Server version: //'); do not edit."
    for n in "${NAMES[@]}"; do result_line "$n"; done
} >"$EXPECTED.tmp"
mv "$EXPECTED.tmp" "$EXPECTED"
echo "wrote $EXPECTED (${#NAMES[@]} cases)" >&2
