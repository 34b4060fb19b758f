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
