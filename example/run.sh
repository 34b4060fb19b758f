#!/usr/bin/env bash
# Builds warren and serves the bundled example site on http://127.0.0.1:8080/:
# static files from example/htdocs, and its PHP in a pool that warren starts
# itself: a php-fpm master of its own (php-fpm is installed from Debian when
# missing). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/sbin/php-fpm* >/dev/null 2>&1; then
    echo "run.sh: installing php-fpm"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq php-fpm >/dev/null
fi
# Debian starts the php-fpm service it installs; warren runs its own.
systemctl stop 'php*-fpm' >/dev/null 2>&1 || true
cargo build --release --locked
echo "run.sh: serving example/htdocs on http://127.0.0.1:8080/ (PHP: http://127.0.0.1:8080/hello.php)"
exec ./target/release/warren -f example/warren.conf
