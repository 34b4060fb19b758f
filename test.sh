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
# default-ssl's snakeoil certificate (ssl-cert's make-ssl-cert), and openssl
# for warren-tls's tests.
command -v make-ssl-cert >/dev/null 2>&1 || missing+=(ssl-cert)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
php -m 2>/dev/null | grep -qx mysqli || missing+=(php-mysql)
# The HTTP/2 conformance suite (crates/warren/tests/h2) is Python, in a
# virtualenv of its own (python3 -m venv needs Debian's python3-venv).
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

[ -f /etc/ssl/certs/ssl-cert-snakeoil.pem ] || make-ssl-cert generate-default-snakeoil

# h2_conformance.rs runs tests/h2/conformance.py with this Python: h2, hpack
# and hyperframe from PyPI, installed once (pip needs the network then).
venv="${WARREN_TEST_VENV:-/opt/warren-test-venv}"
if ! "$venv/bin/python" -c 'import h2, hpack, hyperframe' >/dev/null 2>&1; then
    echo "test.sh: making $venv (h2, hpack, hyperframe from PyPI)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'h2>=4.1,<5' 'hpack>=4,<5' 'hyperframe>=6,<7'
fi
export WARREN_TEST_PYTHON="$venv/bin/python"

# The idle-connection tests hold a thousand sockets open at once.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo test --workspace --locked
