#!/usr/bin/env bash
# Busy cycles of several builds, alternated on one cluster: compares two
# (or more) source trees of pg_tide that share their install script (C
# changes: the engine, the load, the write), where separate runs on a
# shared machine differ by more than the change does.  Builds the first
# tree, starts a throwaway PostgreSQL, loads the synthetic cluster of the
# cycle benchmarks (bench/cycle_cluster.psql) once; then, ROUNDS times,
# for each tree in turn: builds and installs it, restarts the server (the
# library is preloaded), and in one session settles the cluster and runs
# CYCLES busy cycles (bench/cycle_ab.sql: 10 arrivals and 10 exits before
# each, every cycle committed as tide.cycle_loop() commits them).  Prints
# a line per tree and round: the busy cycles' CPU min / median (the
# backend's, /proc/PID/schedstat) and the load / decide / write medians
# (wall), milliseconds, and the kind of load they made.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_ab.sh [--jobs N] [--nodes N] [--rounds N] [--cycles N] TREE...
# e.g. git worktree add /tmp/before main && bash bench/cycle_ab.sh /tmp/before .
# Defaults: 100,000 pending x 10,000 nodes, 3 rounds, 30 busy cycles (the
# first busy cycle of each session is left out: the settle before it runs
# the backend's first cycles).
# TIDE_PG_BIN: another copy of the server (tools/lib.sh).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
JOBS=100000 NODES=10000 ROUNDS=3 CYCLES=30
usage() {
    echo "usage: $0 [--jobs N] [--nodes N] [--rounds N] [--cycles N] TREE..." >&2
    exit 2
}
while [ $# -gt 0 ] && [[ $1 == --* ]]; do
    [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage
    case $1 in
        --jobs) JOBS=$2 ;;
        --nodes) NODES=$2 ;;
        --rounds) ROUNDS=$2 ;;
        --cycles) CYCLES=$2 ;;
        *) usage ;;
    esac
    shift 2
done
[ $# -ge 1 ] || usage
TREES=()
for t in "$@"; do
    [ -f "$t/pg_tide.control" ] || die "$t is not a pg_tide source tree"
    TREES+=("$(cd "$t" && pwd)")
done
bench_setup "${TREES[0]}"
cluster_start "$TMP" "$PORT" postgres
say "loading $JOBS pending x $NODES nodes"
psql -X -q -v jobs="$JOBS" -v nodes="$NODES" postgres >/dev/null <<SQL
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION pg_tide;
\ir $SRC/bench/cycle_cluster.psql
VACUUM ANALYZE;
SQL
for r in $(seq 1 "$ROUNDS"); do
    for t in "${TREES[@]}"; do
        build_and_install "$t"
        cluster_restart "$TMP"
        printf '%s round %s %s: ' "$(date -u +%H:%M:%S)" "$r" "$t"
        psql -X -q -At -F' ' -v cycles="$CYCLES" -f "$SRC/bench/cycle_ab.sql" postgres | tail -1
    done
done
