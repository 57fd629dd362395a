#!/usr/bin/env bash
# Cycles per resource group in parallel: the first cycle from empty of group
# g1 alone, then of g1 and g2 in two backends at once (each group :jobs
# pending x :nodes nodes; default 10k x 1k), then of a small group (a tenth)
# alone and while a huge group's (ten times) runs.  Every cycle is rolled
# back, so each starts from the same empty cluster.  Prints wall times in
# milliseconds, minimums over the repeats ("one group alone" and the
# per-cycle times are taken inside the session; the parallel wall time also
# counts starting two psql clients and their connections).  Builds and starts a throwaway
# PostgreSQL like bench/cycle_bench.sh; with TIDE_BENCH_EXISTING=1 uses the
# server PGHOST/PGPORT name (pg_tide installed there) instead.
#   bash bench/cycle_groups_bench.sh [jobs nodes repeats]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
JOBS=${1:-10000}
NODES=${2:-1000}
REPEATS=${3:-3}
DB=${TIDE_BENCH_DB:-postgres}
if [ -z "${TIDE_BENCH_EXISTING:-}" ]; then
    PORT=${TIDE_BENCH_PORT:-$((56000 + RANDOM % 1000))}
    TMP=$(mktemp -d /tmp/pg_tide_bench.XXXXXX)
    trap 'cluster_stop "$TMP"; rm -rf "$TMP"' EXIT
    exec 9>/tmp/pg_tide_install.lock
    flock 9
    build_and_install "$SRC"
    cluster_start "$TMP" "$PORT" postgres
fi
psql -X -q -v jobs="$JOBS" -v nodes="$NODES" -f "$SRC/bench/cycle_groups_setup.sql" "$DB"
# settle the tables first, so that no autovacuum of the fresh rows takes a
# core while the cycles are timed
psql -X -q -c 'VACUUM ANALYZE' "$DB"

# one group's cycle, rolled back; prints its wall milliseconds
cycle_ms() {
    psql -X -q -At "$DB" <<SQL | tail -1
BEGIN;
SELECT clock_timestamp() AS t0 \\gset
SELECT tide.run_cycle('$1') IS NOT NULL \\g /dev/null
SELECT round(1000 * extract(epoch FROM clock_timestamp() - :'t0'::timestamptz));
ROLLBACK;
SQL
}
min() { sort -n | head -1; }
now_ms() { date +%s%3N; }

echo "== groups of $JOBS pending x $NODES nodes, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
one=""; two=""; two_own=""; small=""; small_busy=""
for _ in $(seq "$REPEATS"); do
    one+="$(cycle_ms g1)"$'\n'
    t0=$(now_ms)
    cycle_ms g1 >/tmp/g1_ms.$$ & p1=$!
    cycle_ms g2 >/tmp/g2_ms.$$ & p2=$!
    wait $p1 $p2
    two+="$(( $(now_ms) - t0 ))"$'\n'
    # the slower of the two cycles, timed inside its session like "one"
    two_own+="$(cat /tmp/g1_ms.$$ /tmp/g2_ms.$$ | sort -n | tail -1)"$'\n'
    small+="$(cycle_ms small)"$'\n'
    cycle_ms huge >/tmp/huge_ms.$$ & ph=$!
    sleep 0.2
    small_busy+="$(cycle_ms small)"$'\n'
    wait $ph
    huge=$(cat /tmp/huge_ms.$$)
done
rm -f /tmp/huge_ms.$$ /tmp/g1_ms.$$ /tmp/g2_ms.$$
echo "one group alone: min $(printf %s "$one" | min) ms"
echo "two groups in parallel (wall, both done): min $(printf %s "$two" | min) ms"
echo "two groups in parallel (the slower cycle, timed in its session as above): min $(printf %s "$two_own" | min) ms"
echo "small group alone: min $(printf %s "$small" | min) ms"
echo "small group while the huge group's cycle runs: min $(printf %s "$small_busy" | min) ms (the huge one: $huge ms)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
