#!/usr/bin/env bash
# Forecast benchmark driver: builds and installs pg_tide, starts a throwaway
# PostgreSQL, and runs bench/forecast_bench.sql at 10k pending x 1k nodes,
# and with --big also at 100k pending x 10k nodes (docs/benchmarks.md).
# TIDE_PG_BIN: the bin directory of a private copy of the server
# (tools/lib.sh), so that nothing else waits on the install.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/forecast_bench.sh [--big]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
BIG=
for arg in "$@"; do
    case $arg in
        --big) BIG=1 ;;
        *) echo "usage: $0 [--big]" >&2; exit 2 ;;
    esac
done
run() {
    echo "== $1 pending x $2 nodes"
    "$PG_BIN/psql" -X -q -v jobs="$1" -v nodes="$2" -f "$SRC/bench/forecast_bench.sql" postgres | grep -v '^$'
}

bench_setup "$SRC"
cluster_start "$TMP" "$PORT" postgres
run 10000 1000
[ -n "$BIG" ] && run 100000 10000
exit 0
