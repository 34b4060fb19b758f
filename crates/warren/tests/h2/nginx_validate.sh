#!/usr/bin/env bash
# Runs conformance.py against a private nginx (Debian's package): cleartext
# HTTP/2 with prior knowledge on 127.0.0.1:18601 and HTTP/2 over TLS (ALPN
# h2, a self-signed certificate) on 127.0.0.1:18602. Its own prefix in a
# temporary directory, never the system service. Stops nginx when done.
#   crates/warren/tests/h2/nginx_validate.sh [conformance.py options...]
# PYTHON (default /opt/warren-test-venv/bin/python) must have h2, hpack and hyperframe.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-/opt/warren-test-venv/bin/python}"
command -v nginx >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; }
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
dir="$(mktemp -d /tmp/h2-nginx.XXXXXX)"
mkdir -p "$dir/html" "$dir/logs" "$dir/tmp"
chmod 755 "$dir" "$dir/html"  # the workers run as nobody
echo '<html>hello</html>' >"$dir/html/index.html"
head -c 102400 /dev/urandom >"$dir/html/100k.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj /CN=localhost -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log info;
events { worker_connections 1024; }
http {
    access_log $dir/logs/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:18601 http2;
        listen 127.0.0.1:18602 ssl http2;
        ssl_certificate $dir/cert.pem;
        ssl_certificate_key $dir/key.pem;
        root $dir/html;
        location = /echo-cookie { default_type text/plain; return 200 "\$http_cookie"; }
        # A POST handler that reads the whole body (proxy_request_buffering):
        # the request goes on to the plain server below once it is complete.
        location = /post { proxy_pass http://127.0.0.1:18603/posted; }
    }
    server {
        listen 127.0.0.1:18603;
        location = /posted { return 200 "posted\n"; }
    }
}
CONF
"$nginx_bin" -p "$dir" -c "$dir/nginx.conf" || exit 1
trap 'kill "$(cat "$dir/nginx.pid")" 2>/dev/null; sleep 0.5; [ -n "${KEEP_LOGS:-}" ] && cp "$dir/logs/error.log" "$KEEP_LOGS"; rm -rf "$dir"' EXIT
for i in $(seq 50); do [ -f "$dir/nginx.pid" ] && break; sleep 0.1; done
opts=(--path /index.html --big-path /100k.bin --cookie-path /echo-cookie --post-path /post)
rc=0
echo "== nginx $("$nginx_bin" -v 2>&1 | sed 's/.*\///'), cleartext prior knowledge, port 18601"
"$py" "$here/conformance.py" --host 127.0.0.1 --port 18601 "${opts[@]}" "$@" || rc=1
echo "== nginx, TLS with ALPN h2, port 18602"
"$py" "$here/conformance.py" --host 127.0.0.1 --port 18602 --tls "${opts[@]}" "$@" || rc=1
exit $rc
