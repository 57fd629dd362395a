#!/usr/bin/env bash
# History and accounting benchmark: builds and installs pg_tide, starts a
# throwaway PostgreSQL and runs bench/history_bench.sql (HOURS hours of raw
# history at 2,000 jobs a minute, default 2, then a year of daily rollups).
# Run as root on Debian 12:  bash bench/history_bench.sh [HOURS]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
HOURS=${1:-2}
PORT=${TIDE_BENCH_PORT:-$((56000 + RANDOM % 1000))}
TMP=$(mktemp -d /tmp/pg_tide_bench.XXXXXX)
trap 'cluster_stop "$TMP"; rm -rf "$TMP"' EXIT

# Hold the install lock for the whole run: the library must stay ours.
exec 9>/tmp/pg_tide_install.lock
flock 9
build_and_install "$SRC"
cluster_start "$TMP" "$PORT" postgres
createdb tide_bench
psql -qX -d tide_bench -c 'CREATE EXTENSION pg_tide'
cd "$SRC/bench"
psql -X -d tide_bench -v hours="$HOURS" -f history_bench.sql 2>&1 | grep -E '^(==|Time:|[ ]*[a-z_]+ *\||[ ]*[0-9{])' 
