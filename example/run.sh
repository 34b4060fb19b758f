#!/usr/bin/env bash
# Builds warren and serves the bundled example site on http://127.0.0.1:8080/:
# static files from example/htdocs, and its PHP in a pool of php-cgi
# processes that warren starts itself (php-cgi is installed from Debian when
# missing). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v php-cgi >/dev/null 2>&1; then
    echo "run.sh: installing php-cgi"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq php-cgi >/dev/null
fi
cargo build --release --locked
echo "run.sh: serving example/htdocs on http://127.0.0.1:8080/ (PHP: http://127.0.0.1:8080/hello.php)"
exec ./target/release/warren -f example/warren.conf
