#!/usr/bin/env bash
# Runs warren's whole test suite: unit tests beside the code, and the
# integration tests that start the real binary on loopback and talk to it
# with raw sockets and curl. Installs what the tests need when missing.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
# The FastCGI tests run Debian's php-fpm (and DokuWiki on it), the pool tests php-cgi.
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || missing+=(php-fpm)
command -v php-cgi >/dev/null 2>&1 || missing+=(php-cgi)
[ -f /usr/share/dokuwiki/doku.php ] || missing+=(dokuwiki)
command -v md5sum >/dev/null 2>&1 || missing+=(coreutils)
# The WordPress test runs Debian's package on a private MariaDB.
[ -f /usr/share/wordpress/wp-settings.php ] || missing+=(wordpress)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v php >/dev/null 2>&1 || missing+=(php-cli)
# apache_tree.rs checks Debian's /etc/apache2, with php-fpm's conf in it.
[ -f /etc/apache2/apache2.conf ] || missing+=(apache2)
# piped_logs.rs runs Apache's rotatelogs as a piped-log program.
[ -x /usr/bin/rotatelogs ] || missing+=(apache2-utils)
# default-ssl's snakeoil certificate (ssl-cert's make-ssl-cert), and openssl
# for warren-tls's tests.
command -v make-ssl-cert >/dev/null 2>&1 || missing+=(ssl-cert)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# acme.rs runs Debian's pebble (an ACME test CA) and pebble-challtestsrv as its DNS.
command -v pebble >/dev/null 2>&1 || missing+=(pebble)
# warren-tls's proxy_client tests read the system's CA store.
[ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
php -m 2>/dev/null | grep -qx mysqli || missing+=(php-mysql)
# The HTTP/2 tests (h2_clients.rs) run nghttp and h2load, and load a page
# in Debian's Chromium, headless.
{ command -v nghttp >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1; } || missing+=(nghttp2-client)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The HTTP/2 conformance suite (crates/warren/tests/h2) is Python, in a
# virtualenv of its own (python3 -m venv needs Debian's python3-venv).
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
# metrics.rs checks the scrape with promtool and has a real Prometheus
# scrape warren (Debian's prometheus has both; no smaller package has promtool).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# balancer.rs puts php-fpm backends in network namespaces (ip netns, veth).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# systemd.rs checks packaging/warren.service and warren.socket with systemd-analyze.
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# haproxy_netns.rs: two warren hosts in network namespaces (iproute2, above) behind Debian's HAProxy.
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
# systemd_container.rs (packaging/test-systemd.sh) boots systemd in a
# debootstrapped root with systemd-nspawn and loads it with wrk.
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || missing+=(systemd-container)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

[ -f /etc/ssl/certs/ssl-cert-snakeoil.pem ] || make-ssl-cert generate-default-snakeoil

# acme.rs checks that the ACME helper drops to its own account (MDHelperUser's default).
getent passwd warren-acme >/dev/null || useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin warren-acme

# mod_php.rs loads Debian's mods-available/php8.x.conf as it is. Where
# libapache2-mod-php is not installed, its file is taken out of the package
# (installing it would switch Debian's apache2 to prefork).
if ! ls /etc/apache2/mods-available/php8*.conf >/dev/null 2>&1 && [ ! -f /var/cache/warren-test/mod_php/php.conf ]; then
    php_version="$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')"
    scratch="$(mktemp -d)"
    (cd "$scratch" && { apt-get download -qq "libapache2-mod-php$php_version" || { apt-get update -qq && apt-get download -qq "libapache2-mod-php$php_version"; }; } && dpkg-deb -x ./*.deb root)
    mkdir -p /var/cache/warren-test/mod_php
    cp "$scratch/root/etc/apache2/mods-available/php$php_version.conf" /var/cache/warren-test/mod_php/php.conf
    rm -rf "$scratch"
fi

# debian_package.rs builds the .deb with cargo-deb (packaging/build-deb.sh).
if ! command -v cargo-deb >/dev/null 2>&1; then
    echo "test.sh: installing cargo-deb"
    cargo install cargo-deb --locked
fi

# h2_conformance.rs runs tests/h2/conformance.py with this Python: h2, hpack
# and hyperframe from PyPI; proxy_websocket.rs's backend is `websockets`'
# server. Installed once (pip needs the network then).
venv="${WARREN_TEST_VENV:-/opt/warren-test-venv}"
if ! "$venv/bin/python" -c 'import h2, hpack, hyperframe, websockets.asyncio.server' >/dev/null 2>&1; then
    echo "test.sh: making $venv (h2, hpack, hyperframe, websockets from PyPI)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'h2>=4.1,<5' 'hpack>=4,<5' 'hyperframe>=6,<7' 'websockets>=13,<18'
fi
export WARREN_TEST_PYTHON="$venv/bin/python"

# The idle-connection tests hold a thousand sockets open at once.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo test --workspace --locked
