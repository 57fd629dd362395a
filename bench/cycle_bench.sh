#!/usr/bin/env bash
# Cycle benchmark driver: builds and installs pg_tide, starts a throwaway
# PostgreSQL, and runs bench/cycle_bench.sql at 10k pending x 1k nodes, and
# with --big also at 100k pending x 10k nodes.  Prints load, decide and write
# times, the SQL floor, a steady-state cycle and the backend's peak memory.
# With --pipelines each size runs twice more: a fifth of the backlog waiting
# on dependencies, and ten arrays of 1,000 members (cycle_bench.sql).
# With --limits, two running jobs with time limits per node (20k at 10k
# nodes) before the first cycle, and what the cycle's time-limit and
# start-timeout steps (R-T1, R-T4) cost with them.
# With --tree, each size runs with 100 queues flat and then with the same
# 100 queues as the leaves of a 3-level tree (4 organisations x 5
# departments x 5 teams, R-O5), to compare the two.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_bench.sh [--big] [--pipelines] [--limits] [--tree]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
BIG= PIPELINES= LIMITS= TREE=
for arg in "$@"; do
    case $arg in
        --big) BIG=--big ;;
        --pipelines) PIPELINES=1 ;;
        --limits) LIMITS=1 ;;
        --tree) TREE=1 ;;
        *) echo "usage: $0 [--big] [--pipelines] [--limits] [--tree]" >&2; exit 2 ;;
    esac
done
PORT=${TIDE_BENCH_PORT:-$((56000 + RANDOM % 1000))}
TMP=$(mktemp -d /tmp/pg_tide_bench.XXXXXX)
trap 'cluster_stop "$TMP"; rm -rf "$TMP"' EXIT

run() {
    echo "== $1 pending x $2 nodes"
    local running=0
    [ -n "$LIMITS" ] && running=$((2 * $2))
    psql -X -q -v jobs="$1" -v nodes="$2" -v pipelines=0 -v running=$running \
        -f "$SRC/bench/cycle_bench.sql" postgres | grep -v '^$'
    if [ -n "$TREE" ]; then
        echo "== $1 pending x $2 nodes, 100 queues flat"
        psql -X -q -v jobs="$1" -v nodes="$2" -v pipelines=0 -v running=$running -v queues=100 \
            -f "$SRC/bench/cycle_bench.sql" postgres | grep -v '^$'
        echo "== $1 pending x $2 nodes, the same 100 queues as the leaves of a 3-level tree"
        psql -X -q -v jobs="$1" -v nodes="$2" -v pipelines=0 -v running=$running -v queues=100 -v tree=1 \
            -f "$SRC/bench/cycle_bench.sql" postgres | grep -v '^$'
    fi
    if [ -n "$PIPELINES" ]; then
        echo "== $1 pending x $2 nodes, with dependencies and arrays"
        psql -X -q -v jobs="$1" -v nodes="$2" -v pipelines=1 -v running=$running \
            -f "$SRC/bench/cycle_bench.sql" postgres | grep -v '^$'
    fi
}

# Hold the install lock for the whole run: the library must stay ours.
exec 9>/tmp/pg_tide_install.lock
flock 9
build_and_install "$SRC"
cluster_start "$TMP" "$PORT" postgres
echo "engine alone (no SQL):"
cc -std=gnu11 -O2 -I"$SRC/src/engine" "$SRC"/bench/cycle_engine_bench.c "$SRC"/src/engine/[a-z]*.c -lm -o "$TMP/ceb"
"$TMP/ceb" 10000 1000
[ "$BIG" = --big ] && "$TMP/ceb" 100000 10000
run 10000 1000
if [ "$BIG" = --big ]; then
    run 100000 10000
fi
