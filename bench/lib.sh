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
    local s
    for s in /etc/init.d/php*-fpm; do [ -x "$s" ] && "$s" stop >/dev/null 2>&1 || true; done
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
