#!/usr/bin/env bash
# graphile-worker (npm) and pg_tide on the same throwaway server: starts a
# PostgreSQL 15 with pg_cron, runs bench.mjs for graphile-worker (in-process
# no-op tasks, then tasks that start /bin/sh -c true as a launcher does),
# then bench/launcher_throughput.sh for pg_tide against the same server.
#
#   (cd bench/graphile && npm install)
#   flock -o /tmp/pg_tide_install.lock bash -c 'make install && bash bench/graphile/run.sh [N=20000] [CONCURRENCY=32]'
#
# BENCH_PG_BIN: the bin directory of another PostgreSQL installation that
# has this build installed.  Results: docs/benchmarks.md ("Submitters and
# launchers at scale").
set -uo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$DIR/../.." && pwd)
. "$SRC/tools/lib.sh"
PG_BIN=${BENCH_PG_BIN:-$PG_BIN}
N=${1:-20000}
CONC=${2:-32}
[ -d "$DIR/node_modules/graphile-worker" ] || die "run npm install in bench/graphile first"
[ "$(id -u)" = 0 ] || die "run as root"
TMP=$(mktemp -d /tmp/pg_tide_graphile.XXXXXX)
chmod 755 "$TMP"
trap 'cluster_stop "$TMP/pg"; rm -rf "$TMP"' EXIT
cluster_start "$TMP/pg" "$((58000 + RANDOM % 1000))" tide_bench
createdb graphile_bench || die "createdb"
export DATABASE_URL="postgres:///graphile_bench?host=$PGHOST&port=$PGPORT&user=postgres"
for task in noop spawn; do
    node "$DIR/bench.mjs" "$N" "$CONC" "$task" || die "graphile-worker bench failed"
done
say "pg_tide on the same server"
BENCH_PG_BIN=$PG_BIN BENCH_ANALYZE=1 bash "$SRC/bench/launcher_throughput.sh" "$N" 2
