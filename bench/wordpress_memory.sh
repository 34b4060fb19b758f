#!/usr/bin/env bash
# wordpress_memory.sh -- issue 33's scenario: the WordPress kit's whole stack (MariaDB, PHP, the
# front end) in one small memory cgroup, siege -c C for T, N runs in a row of each front end, and
# per run: OOM kills (and of which process, from the kernel's log), failed transactions, trans/s,
# and the cgroup's sampled peaks (usage with page cache; rss+shmem, also as a share of the limit;
# the most PHP processes at once, masters included; CPU per transaction of the front end, PHP and
# MariaDB, from /proc/PID/stat); at the end a Markdown table of every run
# and a summary per front end, to paste; per run, where the memory went at the peak, and every half
# second the PHP processes and MariaDB's share ($front.php-timeline.txt: seconds since start, PHP
# processes, MariaDB MiB, epoch seconds).
# warren-pool runs with pm.max_children auto (FPM_MAX_CHILDREN=auto, or a number to compare a fixed
# pool); nginx's php-fpm keeps its 5. "late trans/s" is the rate over the run's second half, from the
# front end's access log (requests by the second they arrived): a pool sized to memory starts at a
# conservative count until its children's peaks are known, and this shows the rate once it is.
#
#   bench/wordpress_memory.sh                     # N=3 runs of warren-pool and nginx, 128M, -c 50, 20 s
#   N=5 LIMIT=64M bench/wordpress_memory.sh warren-pool nginx
#
# Env: N (3), LIMIT (128M), C (50), T (20S), KIT (../shared/wordpress), OUT (/tmp/wp-memory),
# WARREN (target/release/warren), DB_CNF (a MariaDB config to run instead of the kit's my.cnf, e.g.
# bench/wordpress_mariadb_64m_aria.cnf for 64M: no InnoDB, the kit's database copied with its tables
# in Aria by bench/wordpress_aria_db.sh into a data directory of its own, done here when missing; or
# bench/wordpress_mariadb_64m.cnf for 64M: the kit is copied under $OUT with it), KEEP_PEAKS (1:
# warren's learned pool peaks, <PidFile>.peaks, are kept from one run to the next as across a
# restart, the batch's first run starting without; 0: every run learns from the 32 MB prior, as
# before 2026-11-28: the kit's wp-serve.sh removes /tmp/wp-warren at each start, so the kit is
# copied under $OUT with a wp-serve.sh that keeps the file), PHP_INI (php.ini settings for both
# stacks' PHP alike, space-separated NAME=VALUE, e.g. "opcache.enable=0 memory_limit=32M": given
# as php-fpm's -d NAME=VALUE to nginx's php-fpm master and to warren's pool's Command, so read
# before opcache's shared memory is sized; a word starting with "-", as -n, is passed as it is),
# FPM_MAX_CHILDREN (auto; a number for warren's pool and
# nginx's php-fpm both: below 3, the kit's spare-server settings are cut to fit it, start 1, spares
# 1 to N, as php-fpm refuses spares above max_children).
# Needs the kit's wp-setup.sh to have run once (siege, MariaDB, WP).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
kit=${KIT:-$root/../shared/wordpress}
[ -x "$kit/wp-bench.sh" ] || kit=/work/shared/wordpress
N=${N:-3}; LIMIT=${LIMIT:-128M}; C=${C:-50}; T=${T:-20S}; out=${OUT:-/tmp/wp-memory}
fronts=("$@"); [ ${#fronts[@]} -gt 0 ] || fronts=(warren-pool nginx)
export WARREN=${WARREN:-$root/target/release/warren}
cg=${WP_CGROUP:-/sys/fs/cgroup/memory/vps256}
command -v siege >/dev/null || { echo "siege is missing: run $kit/wp-setup.sh once" >&2; exit 2; }
mkdir -p "$out"
children=${FPM_MAX_CHILDREN:-auto}
small_pool=0; case $children in [12]) small_pool=1;; esac
# The kit is run from a copy under $OUT, changed below as the settings ask.
rm -rf "$out/kit"; cp -r "$kit" "$out/kit"; kit=$out/kit
# siege 4.0.7 can hang once its time is up ("Lifting the server siege..." with its users' kept
# connections still open; twice in 70 runs on 2026-11-28): stopped a minute after its time, the run
# is reported as such and the batch goes on.
sed -i 's|^  siege -R |  timeout -k 10 $((secs + 60)) siege -R |' "$kit/wp-bench.sh"
grep -q '^  timeout -k 10 .* siege -R ' "$kit/wp-bench.sh" || { echo "the kit's wp-bench.sh changed: cannot bound siege's time" >&2; exit 2; }
# The kit's scripts find my.cnf beside them: a copy with ours.
[ -n "${DB_CNF:-}" ] && cp "$DB_CNF" "$kit/my.cnf"
# A config with a data directory of its own (bench/wordpress_mariadb_64m_aria.cnf): the kit's
# database copied into it once, its tables in Aria.
db_dir=$([ -n "${DB_CNF:-}" ] && sed -n 's/^datadir *= *//p' "$DB_CNF")
if [ -n "$db_dir" ] && [ "$db_dir" != /var/lib/mysql ] && [ ! -d "$db_dir/wordpress" ]; then
  ARIA_DATADIR=$db_dir KIT=$kit "$root/bench/wordpress_aria_db.sh" || exit 2
fi
if [ -n "${PHP_INI:-}" ]; then
  # A word starting with "-" is passed as it is: "-n" (no php.ini, no conf.d) with
  # "extension=mysqli ..." loads only the extensions named.
  d_args=$(for s in $PHP_INI; do case $s in -*) printf ' %s' "$s";; *) printf ' -d %s' "$s";; esac; done)
  sed -i -e "s|^  php-fpm8.2 -y /tmp/wp-fpm/php-fpm.conf\$|&$d_args|" -e "s|^  Command \$cmd\$|&$d_args|" "$kit/wp-serve.sh"
  [ "$(grep -c -- "$d_args\$" "$kit/wp-serve.sh")" = 2 ] || { echo "PHP_INI: the kit's wp-serve.sh changed: cannot add -d settings" >&2; exit 2; }
fi
if [ $small_pool = 1 ]; then
  sed -i -e "s/^pm.start_servers = 2\$/pm.start_servers = 1/" -e "s/^pm.max_spare_servers = 3\$/pm.max_spare_servers = $children/" \
    -e "s/^  pm.start_servers 2\$/  pm.start_servers 1/" -e "s/^  pm.max_spare_servers 3\$/  pm.max_spare_servers $children/" "$kit/wp-serve.sh"
  [ "$(grep -cE "^ *pm.max_spare_servers( =)? $children\$" "$kit/wp-serve.sh")" = 2 ] || { echo "FPM_MAX_CHILDREN=$children: the kit's wp-serve.sh changed: cannot fit its spares" >&2; exit 2; }
fi
if [ "${KEEP_PEAKS:-1}" = 1 ]; then
  # warren's PidFile directory is made afresh at each start: the peaks file is carried over, as a
  # server's /run directory keeps it across a restart.
  sed -i 's|^  d=/tmp/wp-warren; rm -rf $d; mkdir -p $d/root$|  d=/tmp/wp-warren; [ -f $d/warren.pid.peaks ] \&\& cp -p $d/warren.pid.peaks /tmp/wp-warren.peaks; rm -rf $d; mkdir -p $d/root; [ -f /tmp/wp-warren.peaks ] \&\& mv /tmp/wp-warren.peaks $d/warren.pid.peaks|' "$kit/wp-serve.sh"
  grep -q wp-warren.peaks "$kit/wp-serve.sh" || { echo "KEEP_PEAKS: the kit's wp-serve.sh changed: cannot keep the peaks file" >&2; exit 2; }
  rm -f /tmp/wp-warren/warren.pid.peaks /tmp/wp-warren.peaks
fi

# OOM kills in the cgroup and in those below it (cgroup v1 counts a kill only in the cgroup whose
# limit it was for: warren's pools have cgroups of their own).
oom_kills() { find "$cg" -name memory.oom_control -exec awk '$1=="oom_kill"{s+=$2} END{print s+0}' {} + 2>/dev/null | awk '{s+=$1} END{print s+0}'; }
# The kernel's "Killed process PID (name)" lines since line $1 of its log, as "name name ...".
# By the kernel's own time stamps (seconds since boot), not by line: the log is a ring that, once
# full, keeps its number of lines while new ones push old ones out.
since_boot() { awk '{print $1}' /proc/uptime; }
# Only kills of tasks in the cgroup or below it: the kernel's `oom-kill:` line before each names the
# killed task's cgroup (task_memcg=, relative to the hierarchy's root), and the machine's other
# cgroups (a test suite's memory tests) have kills of their own that are not the stack's.
cg_rel=/${cg#/sys/fs/cgroup/memory/}
kills_since() { dmesg 2>/dev/null | awk -v t="$1" '{s=$0; sub(/^\[ */,"",s); sub(/\].*/,"",s)} s+0 > t+0' \
  | grep -oE "task_memcg=$cg_rel(/[^,]*)?,task=[^,]*,pid=[0-9]*" | sed -E 's/.*,task=(.*),pid=(.*)/Killed process \2 (\1)/'; }
victims() { kills_since "$1" | sed 's/.*(\(.*\))/\1/' | sort | uniq -c | awk '{printf "%s%s x%s", (NR>1?", ":""), $2, $1}'; }
mib() { awk -v m="$1" 'BEGIN{printf "%.1f", m}'; }
rows=$out/runs.tsv; : > "$rows"
case $T in *[Mm]) secs=$(( ${T%?} * 60 ));; *[Ss]) secs=${T%?};; *) secs=$T;; esac
limit_mib=$(numfmt --from=iec "$LIMIT" | awk '{printf "%.1f", $1/1048576}')

printf '%-12s %3s %9s %7s %6s %-24s %10s %14s %6s %4s %-24s %s\n' front run "trans/s" failed oom "killed" "peak usage" "peak rss+shmem" "%limit" "php" "CPU ms/trans (front, PHP, MariaDB)" "late trans/s"
for run in $(seq 1 "$N"); do
  for front in "${fronts[@]}"; do
    dir=$out/run$run; mkdir -p "$dir"
    before=$(since_boot)
    # PHP processes in the cgroup and those below it (the pools' own), sampled while the run lasts:
    # the most at once, and how many when (seconds since the front end was started).
    # At the highest rss+shmem seen, where it went ($front.peak.txt): the cgroup's memory.stat
    # totals and each kind of process's share (Pss_Anon + Pss_Shmem, by command name).
    ( most=0; top=0; t0=$(date +%s.%N); : > "$dir/$front.php-timeline.txt"; while sleep 0.5; do
        procs=$(cat $(find "$cg" -name cgroup.procs 2>/dev/null) 2>/dev/null)
        n=$(for p in $procs; do cat /proc/$p/comm 2>/dev/null; done | grep -c '^php')
        # MariaDB's share beside it (Pss_Anon + Pss_Shmem, MiB): how much the database grows after
        # warren's first measured count is what the budget's margin on the rest must cover.
        db=$(for p in $procs; do [ "$(cat /proc/$p/comm 2>/dev/null)" = mariadbd ] && cat /proc/$p/smaps_rollup 2>/dev/null; done | awk '$1=="Pss_Anon:"||$1=="Pss_Shmem:" {s+=$2} END{printf "%.1f", s/1024}')
        echo "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') $n $db $(date +%s.%N)" >> "$dir/$front.php-timeline.txt"
        # CPU used so far by each kind of process (utime + stime of the living, and of the children
        # each has reaped), in clock ticks: the last sample with the front end and PHP still running
        # is the run's (the sampler outlives the stack; once warren has reaped its php-fpm master,
        # PHP's time is in warren's).
        for p in $procs; do cat /proc/$p/stat 2>/dev/null; echo; done | sed -E 's/^[0-9]+ \((.*)\) /\1\t/' \
          | awk -F'\t' 'NF==2 {k=$1; gsub(/[ 0-9.]+$/,"",k); split($2,f," "); t[k]+=f[12]+f[13]+f[14]+f[15]} END{for (k in t) print k, t[k]}' > "$dir/$front.cpu.txt.new"
        grep -qE '^(warren|nginx) ' "$dir/$front.cpu.txt.new" && grep -q '^php' "$dir/$front.cpu.txt.new" && mv "$dir/$front.cpu.txt.new" "$dir/$front.cpu.txt"
        [ "$n" -gt "$most" ] && most=$n && echo "$most" > "$dir/$front.php.txt"
        a=$(awk '$1=="total_rss"||$1=="total_shmem" {s+=$2} END{print s+0}' "$cg/memory.stat" 2>/dev/null)
        if [ "${a:-0}" -gt "$top" ]; then
          top=$a
          { awk '$1 ~ /^total_(rss|shmem|mapped_file|cache)$/ {printf "%s %.1f MiB\n", $1, $2/1048576}' "$cg/memory.stat"
            for p in $procs; do
              c=$(cat /proc/$p/comm 2>/dev/null) || continue
              awk -v c="$c" '$1=="Pss_Anon:"||$1=="Pss_Shmem:" {s+=$2} END{print c, s+0}' /proc/$p/smaps_rollup 2>/dev/null
            done | awk '$1 !~ /^total_/ {n[$1]++; k[$1]+=$2} END{for (c in k) printf "%s x%d %.1f MiB\n", c, n[c], k[c]/1024}' | sort -k3 -nr
          } > "$dir/$front.peak.txt.new" && mv "$dir/$front.peak.txt.new" "$dir/$front.peak.txt"
        fi
      done ) &
    sampler=$!
    WP_MEM_LIMIT=$LIMIT FPM_MAX_CHILDREN=$children C=$C T=$T OUT=$dir "$kit/wp-bench.sh" "$front" > "$dir/$front.bench.txt" 2>&1
    kill $sampler 2>/dev/null; wait $sampler 2>/dev/null; rm -f "$dir/$front.cpu.txt.new"
    php=$(cat "$dir/$front.php.txt" 2>/dev/null || echo "?")
    # wp-bench.sh stops the stack: the counters are read from its outputs, the kills from the kernel.
    who=$(victims "$before")
    nkilled=$(kills_since "$before" | grep -c .)
    # No siege output: the stack did not serve (wp-bench.sh says why in $front.bench.txt).
    rate=$(awk -F: '/Transaction rate/ {gsub(/[^0-9.]/,"",$2); print $2}' "$dir/$front.siege.txt" 2>/dev/null)
    failed=$(awk -F: '/Failed transactions/ {gsub(/[^0-9]/,"",$2); print $2}' "$dir/$front.siege.txt" 2>/dev/null)
    usage=$(grep -o 'usage [0-9.]* MiB' "$dir/$front.sample.txt" 2>/dev/null | awk '{print $2}')
    anon=$(grep -o 'rss+shmem [0-9.]* MiB' "$dir/$front.sample.txt" 2>/dev/null | awk '{print $2}')
    if [ -z "$rate" ] && grep -q 'Lifting the server siege' "$dir/$front.siege.txt" 2>/dev/null; then
      rate="siege hung"
    fi
    [ -n "$rate" ] || rate="did not serve"
    kills=$(awk '/oom_kill/ {for (i=1;i<=NF;i++) if ($i=="oom_kill") print $(i+1)}' "$dir/$front.mem.txt" "$dir/$front.start.txt" 2>/dev/null | sort -n | tail -1)
    share=$([ -n "$anon" ] && awk -v a="$anon" -v l="$limit_mib" 'BEGIN{printf "%.0f %%", 100*a/l}' || echo "?")
    # Kills in the pools' own cgroups (gone with warren) are in the kernel's count, not the report's.
    [ "${nkilled:-0}" -gt "${kills:-0}" ] && kills=$nkilled
    # CPU per transaction (ms) of the front end (warren's or nginx's processes), PHP and MariaDB.
    trans=$(awk -F: '/^Transactions/ {gsub(/[^0-9]/,"",$2); print $2}' "$dir/$front.siege.txt" 2>/dev/null)
    cpu=$(awk -v n="${trans:-0}" -v hz="$(getconf CLK_TCK)" '$1=="warren"||$1=="nginx" {f+=$2} $1 ~ /^php/ {p+=$2} $1=="mariadbd" {d+=$2}
      END {if (n>0) printf "%.2f / %.2f / %.2f", f*1000/hz/n, p*1000/hz/n, d*1000/hz/n; else printf "?"}' "$dir/$front.cpu.txt" 2>/dev/null)
    # The second half of the run: requests whose access-log second (%t, when each arrived) is within
    # the last T/2 full seconds before the last one (which is partial).
    case $front in nginx) log=/tmp/wp-nginx/access.log;; *) log=/tmp/wp-warren/access.log;; esac
    late=$(awk -v half="$((secs / 2))" '{split(substr($4,14,8),t,":"); s=t[1]*3600+t[2]*60+t[3]; n[s]++; if (s>last) last=s}
      END {if (!last || half < 1) exit; for (i=last-half; i<last; i++) c+=n[i]; printf "%.1f", c/half}' "$log" 2>/dev/null)
    printf '%-12s %3s %9s %7s %6s %-24s %10s %14s %6s %4s %-24s %s\n' "$front" "$run" "${rate:-?}" "${failed:-?}" "${kills:-?}" "${who:--}" "${usage:-?} MiB" "${anon:-?} MiB" "$share" "$php" "${cpu:-?}" "${late:-?}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$front" "$run" "${rate:-?}" "${failed:-?}" "${kills:-?}" "${who:--}" "${usage:-?}" "${anon:-?}" "$share" "$php" "${cpu:-?}" "${late:-?}" >> "$rows"
    if [ "$front" != nginx ] && [ -f /tmp/wp-warren/error.log ]; then
      grep -E 'pm.max_children auto|memory pressure|grew to|cgroups' /tmp/wp-warren/error.log > "$dir/$front.decisions.txt" 2>/dev/null
      # The whole log too (the kit removes it at the next start): php-fpm's own lines, as `fork()
      # failed` when its pool's pids limit stops a child, are in it (its error_log is warren's).
      cp /tmp/wp-warren/error.log "$dir/$front.error.log" 2>/dev/null
    fi
  done
done
# To paste: every run, then per front end the totals and the spread.
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "LIMIT=$LIMIT C=$C T=$T N=$N FPM_MAX_CHILDREN=$children${PHP_INI:+ PHP_INI=\"$PHP_INI\"}${DB_CNF:+ DB_CNF=$DB_CNF}, $(date -u '+%Y-%m-%d %H:%M UTC'), load average at the end $load"
echo
echo "| front | run | trans/s | failed | OOM kills | killed | peak usage MiB | peak rss+shmem MiB | of limit | PHP processes | CPU ms/trans front / PHP / MariaDB | late trans/s |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12}' "$rows"
echo
echo "| front | runs | served | trans/s min / median / max | failed (sum) | OOM kills (sum) | peak rss+shmem max MiB | late trans/s median |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for front in "${fronts[@]}"; do
  awk -F'\t' -v f="$front" '$1==f {runs++; kills+=$5} $1==f && $3 ~ /^[0-9.]+$/ {n++; r[n]=$3+0; failed+=$4; if ($8+0>peak) peak=$8+0} $1==f && $12 ~ /^[0-9.]+$/ {m++; l[m]=$12+0}
    END {if (!runs) exit; if (!n) {printf "| %s | %d | 0 | - | - | %d | - | - |\n", f, runs, kills; exit}
         for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (r[j]<r[i]) {t=r[i]; r[i]=r[j]; r[j]=t}
         med = n%2 ? r[(n+1)/2] : (r[n/2]+r[n/2+1])/2
         for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (l[j]<l[i]) {t=l[i]; l[i]=l[j]; l[j]=t}
         late = !m ? "-" : sprintf("%.1f", m%2 ? l[(m+1)/2] : (l[m/2]+l[m/2+1])/2)
         printf "| %s | %d | %d | %.1f / %.1f / %.1f | %d | %d | %.1f | %s |\n", f, runs, n, r[1], med, r[n], failed, kills, peak, late}' "$rows"
done
echo
echo "outputs (siege, samples, cgroup reports, warren's sizing decisions, PHP processes over time): $out/run*/"
