#!/usr/bin/env bash
# Memory of a looping backend: builds and installs pg_tide, starts a
# throwaway PostgreSQL, loads a synthetic cluster (bench/cycle_memory.sql)
# and runs many busy cycles in ONE backend (a few arrivals and exits before
# each, every cycle committed as tide.cycle_loop() commits), printing every
# N cycles the backend's resident size (VmRSS) and its peak (VmHWM), VmRSS
# split into its own memory (RssAnon: the one to watch), the shared
# buffers it has touched (RssShmem: they grow with the tables up to
# shared_buffers) and code (RssFile), PostgreSQL's own accounting of its
# memory contexts, and the size of pg_tide's tables.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_memory.sh [--jobs N] [--nodes N] [--cycles N] [--every N]
#                              [--arrivals N] [--exits N] [--shared-buffers SIZE]
# The defaults (20,000 pending x 2,000 nodes, 300 cycles, PostgreSQL's
# 128MB of shared buffers) fit a small machine in a few minutes.  The
# size of the largest clusters (an hour or two on a quiet 2-core VM):
#   bash bench/cycle_memory.sh --jobs 100000 --nodes 10000 --cycles 10000 --every 500
# TIDE_PG_BIN: another copy of the server (tools/lib.sh).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
JOBS=20000 NODES=2000 CYCLES=300 EVERY=25 ARRIVALS=10 EXITS=10 SHARED_BUFFERS=
usage() {
    echo "usage: $0 [--jobs N] [--nodes N] [--cycles N] [--every N] [--arrivals N] [--exits N] [--shared-buffers SIZE]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    if [ "$1" = --shared-buffers ] && [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+[kMG]B$ ]]; then
        SHARED_BUFFERS=$2
        shift 2
        continue
    fi
    [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage
    case $1 in
        --jobs) JOBS=$2 ;;
        --nodes) NODES=$2 ;;
        --cycles) CYCLES=$2 ;;
        --every) EVERY=$2 ;;
        --arrivals) ARRIVALS=$2 ;;
        --exits) EXITS=$2 ;;
        *) usage ;;
    esac
    shift 2
done
bench_setup "$SRC"
[ -n "$SHARED_BUFFERS" ] && export TIDE_EXTRA_CONF="${TIDE_EXTRA_CONF:-}
shared_buffers = $SHARED_BUFFERS"
cluster_start "$TMP" "$PORT" postgres
echo "== $JOBS pending x $NODES nodes, $CYCLES busy cycles ($ARRIVALS arrivals, $EXITS exits before each)," \
    "shared_buffers $(psql -XAtc 'SHOW shared_buffers' postgres)"
psql -X -q -v jobs="$JOBS" -v nodes="$NODES" -v cycles="$CYCLES" -v every="$EVERY" \
    -v arrivals="$ARRIVALS" -v exits="$EXITS" -f "$SRC/bench/cycle_memory.sql" postgres 2>&1 \
    | sed -u -e 's/^psql:[^:]*:[0-9]*: NOTICE:  //' | grep --line-buffered -v '^$'
