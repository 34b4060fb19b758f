#!/usr/bin/env bash
# The differential suite against Apache (bench/apache_diff/diff.py): Debian's
# apache2 and warren on the same copy of /etc/apache2 and the same docroots,
# nine sites' rules, 756 requests; writes the per-site table, the list of
# differences by class and every answer into bench/apache_diff/report/.
# Installs what it needs when missing (apache2, php-fpm, and the wordpress and
# dokuwiki packages whose Apache rules it reads), builds warren.
# Usage: bench/apache_diff.sh [--fast] [--mpm event|worker|prefork] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/sbin/apache2 ] || missing+=(apache2)
command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || missing+=(php-fpm)
[ -f /etc/wordpress/htaccess ] || missing+=(wordpress)
[ -f /etc/dokuwiki/htaccess ] || missing+=(dokuwiki)
command -v make-ssl-cert >/dev/null 2>&1 || missing+=(ssl-cert)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
    echo "apache_diff.sh: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian starts the apache2 it installs; the suite runs its own.
systemctl stop apache2 >/dev/null 2>&1 || service apache2 stop >/dev/null 2>&1 || true
[ -f /etc/ssl/certs/ssl-cert-snakeoil.pem ] || make-ssl-cert generate-default-snakeoil

CARGO_INCREMENTAL=0 cargo build -q -p warren
exec python3 bench/apache_diff/diff.py --warren target/debug/warren --out bench/apache_diff/report "$@"
