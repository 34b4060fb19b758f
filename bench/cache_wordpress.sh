#!/usr/bin/env bash
# cache_wordpress.sh -- issue 38's WordPress targets: the kit's whole stack (../shared/wordpress:
# MariaDB, php-fpm with 5 children, the front end) in one 128 MB memory cgroup, siege -c C for T on
# two URLs, the front page and a post page, and per run: trans/s, failed, OOM kills, the cgroup's
# sampled rss+shmem peak, and the Cache-Status of each URL after the run. Front ends:
#   warren-nocache  the kit's warren-event
#   warren-cache    the same, plus a 60 s disk cache (CacheEnable disk /, CacheDefaultExpire 60,
#                   CacheIgnoreNoLastMod On: WordPress sends no lifetime nor validator; CacheLock;
#                   SetEnvIf Cookie "wordpress_logged_in" no-cache)
#   nginx-cache     the kit's nginx, plus fastcgi_cache: 60 s, the same bypass (a cookie whose
#                   name contains wordpress_logged_in), a lock
# The kit's configs are kept as they are; the cache lines are added by wrappers (warren's: appended
# to its config; nginx's: spliced into the http block and the PHP location) made under $OUT.
# The post page: with PERMALINKS (default /%postname%/, as a WordPress site that has chosen pretty
# links; restored at the end) a URL without query string; PERMALINKS= keeps the kit's plain links,
# /?p=N, which Apache's mod_cache and warren do not store without an explicit lifetime (a query
# string: RFC 9111 4.2.2's caution). Both warren front ends then get `FallbackResource /index.php`
# (nginx has try_files already).
# Runs alternate: for each of N rounds, each front end in turn.
#   bench/cache_wordpress.sh                   # N=2, 128M, -c 50, 20 s, the three front ends
#   N=1 T=10S bench/cache_wordpress.sh warren-cache nginx-cache
# Env: N (2), LIMIT (128M), C (50), T (20S), PORT (8080), KIT (../shared/wordpress), OUT
# (/tmp/wp-cache), WARREN (target/release/warren), PERMALINKS (/%postname%/), RAMP (e.g. 1-300:20:
# also `warren bench --ramp` on the same URLs after siege, per run), STATIC (1: also siege, in the
# same run, a static file holding the front page's bytes, /wp-content/bench-static.html, which
# warren-cache serves with CacheDisable: what the client and the server reach on a plain file of
# that size), WBENCH (1: also `warren bench -c C -t T`, a client of several threads, on the URLs).
# Per client run: the front end's CPU per transaction (utime+stime ticks of its processes in the
# cgroup, from /proc/PID/stat, before and after) and the client's own (bash's `time`).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
kit=${KIT:-$root/../shared/wordpress}
[ -x "$kit/wp-bench.sh" ] || kit=/work/shared/wordpress
N=${N:-2}; LIMIT=${LIMIT:-128M}; C=${C:-50}; T=${T:-20S}; PORT=${PORT:-8080}; out=${OUT:-/tmp/wp-cache}
PERMALINKS=${PERMALINKS-/%postname%/}
fronts=("$@"); [ ${#fronts[@]} -gt 0 ] || fronts=(warren-nocache warren-cache nginx-cache)
real_warren=${WARREN:-$root/target/release/warren}
cg=${WP_CGROUP:-/sys/fs/cgroup/memory/vps256}
command -v siege >/dev/null || { echo "siege is missing: run $kit/wp-setup.sh once" >&2; exit 2; }
case " ${fronts[*]} ${RAMP:+ramp}" in *warren*|*ramp*) [ -x "$real_warren" ] || { echo "no $real_warren: cargo build --release -p warren" >&2; exit 2; } ;; esac
case $T in *S|*s) secs=${T%?};; *M|*m) secs=$(( ${T%?} * 60 ));; *) secs=$T;; esac
mkdir -p "$out/bin"
sql() { mariadb --socket=/run/mysqld/mysqld.sock -N wordpress -e "$1"; }
STATIC=${STATIC:-1}; WBENCH=${WBENCH:-0}
static_file=/var/lib/wordpress/wp-content/bench-static.html
# front_ticks NAME: utime+stime ticks of the cgroup's processes called NAME (the front end).
front_ticks() {
  local t=0 pid; for pid in $(cat "$cg/cgroup.procs"); do
    [ "$(cat /proc/$pid/comm 2>/dev/null)" = "$1" ] || continue
    t=$(( t + $(awk '{print $14 + $15}' /proc/$pid/stat 2>/dev/null || echo 0) ))
  done; echo $t
}
# measured NAME OUTFILE COMMAND...: runs a client (its report in OUTFILE), then prints trans/s,
# the front end's and the client's CPU per transaction in microseconds.
measured() {
  local name=$1 file=$2; shift 2
  local before after tk=$(getconf CLK_TCK)
  before=$(front_ticks "$name")
  { TIMEFORMAT='%U %S'; time "$@" > "$file" 2>&1; } 2> "$file.time"
  after=$(front_ticks "$name")
  awk -v ft=$((after - before)) -v tk="$tk" -v ct="$(tail -1 "$file.time")" -F: '
    /Transactions:/ {gsub(/[^0-9]/,"",$2); n=$2} /Transaction rate/ {gsub(/[^0-9.]/,"",$2); r=$2}
    END {split(ct, c, " "); if (n > 0) printf "%s %.1f %.1f\n", r, ft * 1e6 / tk / n, (c[1] + c[2]) * 1e6 / n; else print "? ? ?"}' "$file"
}

# warren: the kit's config plus the lines for this front end (WARREN_EXTRA), then warren itself.
cat > "$out/bin/warren" <<SH
#!/bin/sh
# The kit starts this as \$WARREN -f CONFIG.
printf '%s\n' "\$WARREN_EXTRA" >> "\$2"
mkdir -p /tmp/wp-warren/cache && chown www-data /tmp/wp-warren/cache
exec "$real_warren" "\$@"
SH
# nginx: the kit's config (-c CONFIG) with fastcgi_cache spliced in, then nginx itself.
cat > "$out/bin/nginx" <<'SH'
#!/bin/sh
conf=$(echo "$@" | sed 's/.*-c \([^ ]*\).*/\1/'); d=$(dirname "$conf")
sed -i -e "s|^http {|http {\n  fastcgi_cache_path $d/cache levels=1:2 keys_zone=wp:10m max_size=64m inactive=60s;\n  map \$http_cookie \$wp_logged_in { default \"\"; ~wordpress_logged_in 1; }\n  add_header Cache-Status \$upstream_cache_status;|" \
  -e 's|^\( *\)fastcgi_pass unix:|\1fastcgi_cache wp;\n\1fastcgi_cache_key $scheme$request_method$host$request_uri;\n\1fastcgi_cache_valid 200 60s;\n\1fastcgi_cache_lock on;\n\1fastcgi_cache_bypass $wp_logged_in;\n\1fastcgi_no_cache $wp_logged_in;\n\1fastcgi_pass unix:|' "$conf"
exec /usr/sbin/nginx "$@"
SH
chmod +x "$out/bin/warren" "$out/bin/nginx"

fallback=""
old_links=""
restore() { rm -f "$static_file"; [ -n "$PERMALINKS" ] && [ -n "$old_links" ] && { "$kit/wp-db.sh" start >/dev/null; sql "update wp_options set option_value='${old_links#-}' where option_name='permalink_structure'; update wp_options set option_value='' where option_name='rewrite_rules'"; }; "$kit/wp-stop.sh" all >/dev/null; }
trap restore EXIT
if [ -n "$PERMALINKS" ]; then
  "$kit/wp-db.sh" start >/dev/null
  old_links=-$(sql "select option_value from wp_options where option_name='permalink_structure'")
  sql "update wp_options set option_value='$PERMALINKS' where option_name='permalink_structure'; update wp_options set option_value='' where option_name='rewrite_rules'"
  fallback="FallbackResource /index.php"
fi
cache_lines="CacheRoot /tmp/wp-warren/cache
CacheEnable disk /
CacheDefaultExpire 60
CacheMaxExpire 60
CacheIgnoreNoLastMod On
CacheLock On
CacheHeader On
SetEnvIf Cookie \"wordpress_logged_in\" no-cache
CacheDisable /wp-content/bench-static.html"

rows=$out/runs.tsv; : > "$rows"
printf '%-15s %3s %9s %7s %4s %14s  %s\n' front run "trans/s" failed oom "peak rss+shmem" "Cache-Status (front page | post); CPU us/trans front end, siege; static file trans/s, CPU us/trans"
for run in $(seq 1 "$N"); do
  for front in "${fronts[@]}"; do
    dir=$out/run$run; mkdir -p "$dir"
    case $front in
      warren-nocache) kitname=warren-event; extra=$fallback ;;
      warren-cache) kitname=warren-event; extra="$fallback
$cache_lines" ;;
      nginx-cache) kitname=nginx; extra="" ;;
      *) echo "unknown front end $front (warren-nocache, warren-cache, nginx-cache)" >&2; exit 2 ;;
    esac
    "$kit/wp-stop.sh" all >/dev/null
    "$kit/wp-cgroup.sh" --remove 2>/dev/null
    if ! WP_MEM_LIMIT=$LIMIT WARREN=$out/bin/warren WARREN_EXTRA="$extra" PATH=$out/bin:$PATH \
        "$kit/wp-cgroup.sh" "$kit/wp-serve.sh" "$kitname" "$PORT" > "$dir/$front.start.txt" 2>&1; then
      cat "$dir/$front.start.txt"; continue
    fi
    base=http://127.0.0.1:$PORT/
    # The newest post, linked from the front page.
    read -r id slug < <(sql "select ID, post_name from wp_posts where post_type='post' and post_status='publish' order by post_date desc limit 1")
    if [ -n "$PERMALINKS" ]; then post=$base$slug/; else post="$base?p=$id"; fi
    curl -s "$base" | grep -qF "href=\"$post\"" || { echo "the front page does not link $post" >&2; exit 1; }
    printf '%s\n%s\n' "$base" "$post" > "$dir/urls.txt"
    for i in 1 2 3; do for u in $base $post; do curl -s -o /dev/null "$u"; done; done   # warm opcache, fill the caches
    WP_MEM_LIMIT=$LIMIT "$kit/wp-cgroup.sh" --reset
    before_oom=$(awk '$1=="oom_kill"{print $2}' "$cg/memory.oom_control")
    "$kit/wp-cgroup.sh" --sample $((secs + 2)) > "$dir/$front.sample.txt" &
    sampler=$!
    # A bound: siege has been seen to hang at "Lifting the server siege" on this loaded machine.
    proc=warren; [ "$kitname" = nginx ] && proc=nginx
    read -r _ cpu_front cpu_siege < <(measured $proc "$dir/$front.siege.txt" timeout -s KILL $((secs + 60)) siege -R "$kit/siegerc" -b -c "$C" -t "$T" -f "$dir/urls.txt")
    wait $sampler
    static=""
    if [ "$STATIC" = 1 ]; then
      # The same bytes as the front page, as a plain file both front ends serve from wp-content.
      curl -s "$base" > "$static_file"; chmod 644 "$static_file"
      read -r srate sfront ssiege < <(measured $proc "$dir/$front.static.txt" timeout -s KILL $((secs + 60)) siege -R "$kit/siegerc" -b -c "$C" -t "$T" "${base}wp-content/bench-static.html")
      static="static $(stat -c %s "$static_file") B: $srate trans/s, CPU us/trans $sfront, siege $ssiege"
    fi
    wbench=""
    if [ "$WBENCH" = 1 ]; then
      read -r wrate wfront wclient < <(measured $proc "$dir/$front.wbench.txt" "$real_warren" bench -c "$C" -t "$secs" -f "$dir/urls.txt")
      wbench="warren bench: $wrate trans/s, CPU us/trans $wfront, client $wclient"
    fi
    if [ -n "${RAMP:-}" ]; then
      "$real_warren" bench --ramp "$RAMP" -f "$dir/urls.txt" > "$dir/$front.ramp.txt" 2>&1
    fi
    statuses=$(for u in $base $post; do curl -s -o /dev/null -D- "$u" | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status" || tolower($1)=="x-cache" {printf "%s; ", $2}'; echo -n "| "; done)
    "$kit/wp-cgroup.sh" --report > "$dir/$front.mem.txt"
    # Where the front end's share of rss+shmem is: each of its processes' anonymous and shared pages.
    for pid in $(cat "$cg/cgroup.procs"); do
      [ "$(cat /proc/$pid/comm 2>/dev/null)" = "$proc" ] && awk -v p=$pid '/^(RssAnon|RssShmem|Threads)/ {printf "%s %s %s  ", p, $1, $2} END {print ""}' /proc/$pid/status
    done >> "$dir/$front.mem.txt"
    oom=$(( $(awk '$1=="oom_kill"{print $2}' "$cg/memory.oom_control") - before_oom ))
    rate=$(awk -F: '/Transaction rate/ {gsub(/[^0-9.]/,"",$2); print $2}' "$dir/$front.siege.txt")
    failed=$(awk -F: '/Failed transactions/ {gsub(/[^0-9]/,"",$2); print $2}' "$dir/$front.siege.txt")
    anon=$(grep -o 'rss+shmem [0-9.]* MiB' "$dir/$front.sample.txt" | awk '{print $2}')
    ramp=$(awk -F: '/Transaction rate/ {gsub(/^ +/,"",$2); print "ramp " $2; exit}' "$dir/$front.ramp.txt" 2>/dev/null)
    cpu="CPU us/trans $cpu_front, siege $cpu_siege"
    printf '%-15s %3s %9s %7s %4s %10s MiB  %s; %s; %s %s %s\n' "$front" "$run" "${rate:-?}" "${failed:-?}" "$oom" "${anon:-?}" "${statuses% | }" "$cpu" "$static" "$wbench" "$ramp"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$front" "$run" "${rate:-?}" "${failed:-?}" "$oom" "${anon:-?}" "${statuses% | }" "$ramp" "$cpu" "$static" "$wbench" >> "$rows"
  done
done
echo
echo "LIMIT=$LIMIT C=$C T=$T N=$N PERMALINKS=$PERMALINKS, $(date -u '+%Y-%m-%d %H:%M UTC'), load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| front | run | trans/s | failed | OOM kills | peak rss+shmem MiB | Cache-Status after (front page, post) | CPU | static file | warren bench | ramp |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$9,$10,$11,$8}' "$rows"
echo
echo "outputs (siege, samples, cgroup reports$( [ -n "${RAMP:-}" ] && echo ", warren bench --ramp")): $out/run*/"
