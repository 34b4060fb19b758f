#!/usr/bin/env bash
# wordpress_aria_db.sh -- the WordPress kit's database copied into a data directory of its own with
# every table in Aria, for the 64 MB row without InnoDB
# (DB_CNF=bench/wordpress_mariadb_64m_aria.cnf bench/wordpress_memory.sh). MariaDB 10.11 with InnoDB
# holds 28.5-30.4 MiB of anonymous memory whatever its settings (docs/benchmarks.md); with InnoDB
# off, 14-15 MiB. WordPress needs no transactions: Aria is MariaDB's crash-safe MyISAM.
#
#   bench/wordpress_aria_db.sh        # once, after the kit's wp-setup.sh; again to make it anew: FORCE=1
#
# Env: ARIA_DATADIR (/var/lib/mysql-aria), KIT (../shared/wordpress).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kit=${KIT:-$root/../shared/wordpress}
datadir=${ARIA_DATADIR:-/var/lib/mysql-aria}
if [ -d "$datadir/wordpress" ] && [ "${FORCE:-0}" != 1 ]; then echo "$datadir already holds the wordpress database"; exit 0; fi
kit_sock=/run/mysqld/mysqld.sock
work=$(mktemp -d /tmp/wp-aria.XXXXXX); chown mysql:mysql "$work"
started_kit=0
if ! mariadb-admin --socket=$kit_sock ping >/dev/null 2>&1; then "$kit/wp-db.sh" start >/dev/null; started_kit=1; fi
mariadb-dump --socket=$kit_sock --single-transaction --skip-lock-tables wordpress > "$work/wordpress.sql"
[ $started_kit = 1 ] && "$kit/wp-db.sh" stop >/dev/null
sed -i 's/ENGINE=InnoDB/ENGINE=Aria/' "$work/wordpress.sql"
grep -q 'ENGINE=Aria' "$work/wordpress.sql" || { echo "no table in the dump" >&2; exit 1; }
rm -rf "$datadir"
mariadb-install-db --user=mysql --datadir="$datadir" --skip-test-db > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
sock=$work/sock
mariadbd --no-defaults --user=mysql --datadir="$datadir" --socket="$sock" --pid-file="$work/pid" --skip-networking \
  --innodb=OFF --default-storage-engine=Aria --default-tmp-storage-engine=Aria --log-error="$work/error.log" 2>/dev/null &
for _ in $(seq 150); do mariadb-admin --socket="$sock" ping >/dev/null 2>&1 && break; sleep 0.2; done
mariadb --socket="$sock" <<'SQL'
CREATE DATABASE wordpress CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
CREATE USER 'wordpress'@'localhost' IDENTIFIED BY 'wpbench';
GRANT ALL PRIVILEGES ON wordpress.* TO 'wordpress'@'localhost';
SQL
mariadb --socket="$sock" wordpress < "$work/wordpress.sql"
tables=$(mariadb --socket="$sock" -N -e "SELECT ENGINE, COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='wordpress' GROUP BY ENGINE")
mariadb-admin --socket="$sock" shutdown
echo "$datadir: wordpress tables by engine: $tables"
rm -rf "$work"
