#!/usr/bin/env bash
# The response cache (docs/cache.md) measured: requests/s of two PHP pages
# through one php-fpm pool (pm static, 4 children), warren without cache,
# warren with `CacheEnable disk /` (60 s, as WordPress sends no caching
# headers: CacheIgnoreNoLastMod On, CacheDefaultExpire 60) and nginx with
# fastcgi_cache (fastcgi_cache_valid 200 60s); both skip the cache for a
# wordpress_logged_in cookie. One server at a time, wrk -t1 -c50 keep-alive.
#   hello         <?php echo "Hello World";
#   wp-like       15 ms of CPU, then a 32 KB page (a WordPress post's cost and size)
#   static-32k    that page's bytes as a static file (a hit should cost no more)
# Usage: bench/cache.sh   (DURATION=5 s per run; WARREN=binary, see lib.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
need nginx:nginx wrk:wrk php-fpm8.2:php-fpm
quiet_debian_services
build_warren
comparison_workdir warren-cache-bench
cat > "$DOCROOT/wp.php" <<'PHP'
<?php
$t = hrtime(true); $x = '';
while (hrtime(true) - $t < 15000000) { $x = md5($x); }
echo str_repeat("<p>A post of a WordPress-like site, with its text.</p>\n", 590);
PHP
php -r 'echo str_repeat("<p>A post of a WordPress-like site, with its text.</p>\n", 590);' > "$DOCROOT/static32k.html"
mkdir -p "$WORK/cache" "$WORK/nginx-cache"
chown nobody "$WORK/cache" "$WORK/nginx-cache" 2>/dev/null || true
chmod -R a+rX "$WORK"
start_php_fpm
PORT=18090

warren_conf() { # cache on|off
    printf '%s\n' "LoadModule mpm_event_module x" "Listen 127.0.0.1:$PORT" "DocumentRoot $DOCROOT" \
        "PidFile $WORK/warren.pid" "ErrorLog $WORK/warren.error.log" "User nobody" "Group nogroup" \
        "<FilesMatch \"\\.php\$\">" "    SetHandler \"proxy:unix:$FPM_SOCK|fcgi://localhost\"" "</FilesMatch>"
    if [ "$1" = on ]; then
        printf '%s\n' "CacheRoot $WORK/cache" "CacheEnable disk /" "CacheIgnoreNoLastMod On" "CacheDefaultExpire 60" \
            "CacheLock On" "SetEnvIf Cookie wordpress_logged_in no-cache"
    fi
}

nginx_conf() {
    cat <<NGINX
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx.error.log;
events { worker_connections 4096; }
http {
    access_log off;
    include /etc/nginx/mime.types;
    # WordPress names the cookie wordpress_logged_in_<hash>: \$cookie_wordpress_logged_in never matches it.
    map \$http_cookie \$wp_logged_in { default ""; ~wordpress_logged_in 1; }
    fastcgi_cache_path $WORK/nginx-cache levels=1:2 keys_zone=pages:10m max_size=64m inactive=60s;
    server {
        listen 127.0.0.1:$PORT;
        root $DOCROOT;
        location ~ \.php\$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_pass unix:$FPM_SOCK;
            fastcgi_cache pages;
            fastcgi_cache_key \$scheme\$host\$request_uri;
            fastcgi_cache_valid 200 60s;
            fastcgi_cache_lock on;
            fastcgi_cache_bypass \$wp_logged_in;
            fastcgi_no_cache \$wp_logged_in;
        }
    }
}
NGINX
}

start() { # warren-nocache | warren-cache | nginx
    case $1 in
    warren-nocache) warren_conf off > "$WORK/w.conf"; "$WARREN" -f "$WORK/w.conf" & SERVER_PID=$! ;;
    warren-cache) warren_conf on > "$WORK/w.conf"; "$WARREN" -f "$WORK/w.conf" & SERVER_PID=$! ;;
    nginx) nginx_conf > "$WORK/nginx.conf"; nginx -c "$WORK/nginx.conf" -g 'daemon off;' & SERVER_PID=$! ;;
    esac
    for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/static32k.html" && return; sleep 0.1; done
    echo "$1 did not start" >&2; exit 1
}

rps() { # path
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://127.0.0.1:$PORT$1" 2>/dev/null | awk '/Requests\/sec/ {printf "%d", $2}'
}

declare -A R
for server in warren-nocache warren-cache nginx; do
    start "$server"
    for page in hello:/hello.php wp-like:/wp.php static-32k:/static32k.html; do
        curl -fs -o /dev/null "http://127.0.0.1:$PORT${page#*:}"   # the first miss, stored
        R[$server,${page%%:*}]=$(rps "${page#*:}")
    done
    stop_server
done

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; wrk -t1 -c$CONNS -d${DURATION}s"
printf '%-12s %14s %14s %10s %14s %14s\n' page warren-nocache warren-cache nginx cache/nocache cache/nginx
for page in hello wp-like static-32k; do
    a=${R[warren-nocache,$page]} b=${R[warren-cache,$page]} c=${R[nginx,$page]}
    printf '%-12s %14s %14s %10s %14s %14s\n' "$page" "$a" "$b" "$c" \
        "$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%.2f", y ? x / y : 0 }')" "$(awk -v x="$b" -v y="$c" 'BEGIN { printf "%.2f", y ? x / y : 0 }')"
done
