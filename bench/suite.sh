#!/usr/bin/env bash
# Runs bench/seeds.suite (or the suite given) with `warren bench --suite`:
# installs what its set-ups need from Debian when missing (nginx, apache2,
# php-fpm, php-cgi), stops the services Debian starts with them, builds
# warren in release mode and writes the report to bench/report (or $OUT).
# Usage: bench/suite.sh [SUITE]
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=${1:-bench/seeds.suite}
OUT=${OUT:-bench/report}

need=()
[ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/sbin/apache2 ] || need+=(apache2)
command -v php-cgi >/dev/null 2>&1 || need+=(php-cgi)
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need+=(php-fpm)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian starts the services it installs; they must not take the CPUs.
service nginx stop >/dev/null 2>&1 || true
service apache2 stop >/dev/null 2>&1 || true
for p in /run/php/php*-fpm.pid; do [ -f "$p" ] && start-stop-daemon --stop --quiet --retry=QUIT/10/TERM/5/KILL/5 --pidfile "$p" >/dev/null 2>&1 || true; done

cargo build --release --locked -q
exec target/release/warren bench --suite "$SUITE" --out "$OUT"
