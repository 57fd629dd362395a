#!/usr/bin/env bash
# Eviction benchmark driver: builds and installs pg_tide, starts a throwaway
# PostgreSQL, and runs bench/evict_bench.sql on a full cluster of 1000 nodes
# (8000 GPUs) with a backlog of 10000 pending jobs and 5 steps of 20
# high-priority inference arrivals (with --big: 10000 nodes, 100000 pending,
# 200 arrivals).  Run as root on Debian 12:  bash bench/evict_bench.sh [--big]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
BIG=${1:-}
PORT=${TIDE_BENCH_PORT:-$((57000 + RANDOM % 1000))}
TMP=$(mktemp -d /tmp/pg_tide_evbench.XXXXXX)
trap 'cluster_stop "$TMP"; rm -rf "$TMP"' EXIT

run() {
    echo "== $1 nodes, $2 backlog, $3 arrivals x $4 steps"
    psql -X -q -v nodes="$1" -v backlog="$2" -v arrivals="$3" -v steps="$4" \
        -f "$SRC/bench/evict_bench.sql" postgres | grep -v '^$'
}

# Hold the install lock for the whole run: the library must stay ours.
exec 9>/tmp/pg_tide_install.lock
flock 9
build_and_install "$SRC"
cluster_start "$TMP" "$PORT" postgres
run 1000 10000 20 5
if [ "$BIG" = --big ]; then
    run 10000 100000 200 3
fi
