#!/usr/bin/env bash
# Busy cycles with incremental loads against full ones (R-C9), alternated
# in one session: builds and installs pg_tide, starts a throwaway
# PostgreSQL and runs bench/cycle_incremental.sql.  Prints the first
# cycle's CPU each way and, per kind of load, the busy cycles' CPU and
# their load / decide / write (milliseconds).
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_incremental.sh [JOBS NODES]      # default 100000 10000
# TIDE_PG_BIN: another copy of the server (tools/lib.sh).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
JOBS=${1:-100000} NODES=${2:-10000}
bench_setup "$SRC"
cluster_start "$TMP" "$PORT" postgres
psql -X -q -v jobs="$JOBS" -v nodes="$NODES" -f "$SRC/bench/cycle_incremental.sql" postgres | grep -v '^$'
