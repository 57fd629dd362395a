#!/usr/bin/env bash
# A start timeout of a whole first cycle (R-T4): builds and installs
# pg_tide, starts a throwaway PostgreSQL, loads a synthetic cluster
# (bench/cycle_cluster.psql), runs the first cycle, lets no launcher start
# what it placed, moves the placements past tide.start_timeout (as the
# tests do) and times the cycle that releases them all, the launchers'
# confirmation, and the cycles after; then the decide with a fifth of the
# backlog avoiding a node where an attempt failed (R-L4), as after such a
# timeout in a cluster that stayed full.  bench/cycle_timeout.sql.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_timeout.sh [--jobs N] [--nodes N]
# The defaults (10,000 pending x 1,000 nodes) take a minute; the size of
# the largest clusters:
#   bash bench/cycle_timeout.sh --jobs 100000 --nodes 10000
# TIDE_PG_BIN: another copy of the server (tools/lib.sh).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
JOBS=10000 NODES=1000
usage() {
    echo "usage: $0 [--jobs N] [--nodes N]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage
    case $1 in
        --jobs) JOBS=$2 ;;
        --nodes) NODES=$2 ;;
        *) usage ;;
    esac
    shift 2
done
bench_setup "$SRC"
cluster_start "$TMP" "$PORT" postgres
echo "== $JOBS pending x $NODES nodes, shared_buffers $(psql -XAtc 'SHOW shared_buffers' postgres)"
psql -X -q -v jobs="$JOBS" -v nodes="$NODES" -f "$SRC/bench/cycle_timeout.sql" postgres 2>&1 \
    | sed -u -e 's/^psql:[^:]*:[0-9]*: NOTICE:  //' | grep --line-buffered -v '^$'
