#!/usr/bin/env bash
# graphile-worker (npm) and pg_tide on the same throwaway server: starts a
# PostgreSQL 15 (bench/launcher_lib.bash), runs bench.mjs for graphile-worker
# (in-process no-op tasks, then tasks that start /bin/sh -c true as a
# launcher does), then bench/launcher_throughput.sh for pg_tide against the
# same server.
#
#   cd bench/graphile && npm install && cd ../..
#   flock -o /tmp/pg_tide_install.lock bash -c 'make install && bash bench/graphile/run.sh [N=20000] [CONCURRENCY=32]'
#
# Results: docs/benchmarks.md ("Submitters and launchers at scale").
BENCH_DB=graphile_bench
. "$(dirname "$0")/../launcher_lib.bash"
PG_BIN=${BENCH_PG_BIN:-$PG_BIN}
N=${1:-20000}
CONC=${2:-32}
DIR=$SRC/bench/graphile
[ -d "$DIR/node_modules/graphile-worker" ] || die "run npm install in bench/graphile first"
bench_cluster
export DATABASE_URL="postgres:///$BENCH_DB?host=$PGHOST&port=$PGPORT&user=postgres"
for task in noop spawn; do
    node "$DIR/bench.mjs" "$N" "$CONC" "$task" || die "graphile-worker bench failed"
done
say "pg_tide on the same server"
BENCH_DB=tide_bench BENCH_ANALYZE=1 bash "$SRC/bench/launcher_throughput.sh" "$N" 2
echo "machine: $(machine)"
