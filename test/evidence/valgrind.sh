#!/usr/bin/env bash
# The pg_regress suite (sql/*.sql) against a server running under valgrind
# memcheck (every backend traced), then the errors valgrind found in
# pg_tide's own code: any error whose stack passes through pg_tide.so.
# Errors only in PostgreSQL itself are counted apart (a server built
# without USE_VALGRIND reports some harmless ones, e.g. padding bytes
# written to WAL).  Slow: each backend runs about 20 to 50 times slower.
#
#   bash test/evidence/valgrind.sh            # the whole regression suite
#   REGRESS="resvec gpumask" bash test/evidence/valgrind.sh
#
# Needs valgrind (apt-get install valgrind) and the build installed (make
# install under the install lock, or EVIDENCE_PG_BIN: another installation
# that has it).  Exit status 0 when the suite passed and pg_tide.so had no
# error.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tools/lib.sh"
PG_BIN=${EVIDENCE_PG_BIN:-$PG_BIN}
command -v valgrind >/dev/null || die "valgrind is not installed"
[ "$(id -u)" = 0 ] || die "run as root"
D=$(mktemp -d /tmp/pg_tide_valgrind.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/vg" && chown postgres: "$D/vg"
trap 'cluster_stop "$D/pg"; [ -n "${EVIDENCE_KEEP:-}" ] || rm -rf "$D"' EXIT
# the server's own executable, wrapped: pg_ctl -p runs it
cat >"$D/postgres-vg" <<WRAP
#!/bin/sh
exec valgrind --quiet --trace-children=yes --track-origins=no --leak-check=no \
    --num-callers=30 --log-file=$D/vg/vg.%p.log $PG_BIN/postgres "\$@"
WRAP
chmod 755 "$D/postgres-vg"
mkdir -p "$D/pg"
chown postgres: "$D/pg"
runuser -u postgres -- "$PG_BIN/initdb" -D "$D/pg/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 \
    >"$D/initdb.log" 2>&1 || die "initdb failed"
PORT=$((59000 + RANDOM % 500))
cat >>"$D/pg/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$D/pg'
fsync = off
max_connections = 20
autovacuum = off
CONF
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$D/pg/data" -p "$D/postgres-vg" -l "$D/pg/server.log" -w -t 600 start >/dev/null \
    3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- || { tail "$D/pg/server.log"; die "server under valgrind did not start"; }
export PGHOST=$D/pg PGPORT=$PORT PGUSER=postgres
t0=$(date +%s)
REGRESS_LIST=${REGRESS:-$(ls "$SRC"/sql/*.sql | xargs -n1 basename | sed 's/\.sql$//' | tr '\n' ' ')}
# the tests write results/... relative to the working directory
mkdir -p "$D/out/results"
( cd "$D/out" && "$PG_BIN/../lib/pgxs/src/test/regress/pg_regress" --bindir="$PG_BIN" --inputdir="$SRC" \
    --outputdir="$D/out" --load-extension=pg_tide $REGRESS_LIST ) >"$D/regress.log" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
tail -3 "$D/regress.log"
[ -s "$D/out/regression.diffs" ] && head -40 "$D/out/regression.diffs"
cluster_stop "$D/pg"
# one error block = from "==PID== <kind>" to the blank "==PID== " line after its stack
# a frame of pg_tide's code: the library, or one of its source files
# (with debugging information valgrind names the file, not the library)
SRCS='\(('"$(cd "$SRC/src" && ls *.c core/*.c engine/*.c | xargs -n1 basename | sed 's/\.c$//' | paste -sd'|')"')\.c:'
ours=0
theirs=0
for f in "$D"/vg/vg.*.log; do
    [ -s "$f" ] || continue
    read -r a b < <(SRCS=$SRCS awk '
        /^==[0-9]+== [A-Z][a-z]/ && !/^==[0-9]+== (HEAP|LEAK|ERROR SUMMARY|For lists|Use --|Rerun|Memcheck|Copyright|Command)/ { inblk = 1; mine = 0; next }
        inblk && ($0 ~ /pg_tide\.so/ || $0 ~ ENVIRON["SRCS"]) { mine = 1 }
        inblk && /^==[0-9]+== $/ { if (mine) o++; else t++; inblk = 0 }
        END { print o + 0, t + 0 }' "$f")
    ours=$((ours + a))
    theirs=$((theirs + b))
    [ "$a" -gt 0 ] && { echo "--- $f"; head -80 "$f"; }
done
echo "valgrind: regression suite ($REGRESS_LIST) in ${secs} s, pg_regress exit $rc; errors through pg_tide.so: $ours; errors in PostgreSQL alone: $theirs"
[ "$rc" = 0 ] && [ "$ours" = 0 ]
