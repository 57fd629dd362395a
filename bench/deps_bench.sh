#!/usr/bin/env bash
# Dependency benchmark driver: builds and installs pg_tide, starts a
# throwaway PostgreSQL, and runs bench/deps_bench.sql at 20k and 100k
# pending jobs (a fifth of them given a dependency, docs/benchmarks.md).
# --sizes "N ...": the numbers of pending jobs instead (the cluster has a
# tenth as many nodes; no cycle runs).
# TIDE_PG_BIN: the bin directory of a private copy of the server
# (tools/lib.sh), so that nothing else waits on the install.
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/deps_bench.sh [--sizes "20000 100000"]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
SIZES="20000 100000"
while [ $# -gt 0 ]; do
    case $1 in
        --sizes) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+( [0-9]+)*$ ]] || { echo "usage: $0 [--sizes \"N ...\"]" >&2; exit 2; }
                 SIZES=$2; shift ;;
        *) echo "usage: $0 [--sizes \"N ...\"]" >&2; exit 2 ;;
    esac
    shift
done

bench_setup "$SRC"
cluster_start "$TMP" "$PORT" postgres
echo "deps_bench: commit $(git -C "$SRC" rev-parse --short HEAD)$(git -C "$SRC" diff --quiet HEAD -- src extension || echo +)," \
    "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
for n in $SIZES; do
    echo "== $n pending jobs, $((n / 5)) dependencies"
    "$PG_BIN/psql" -X -q -v jobs="$n" -v nodes="$((n / 10))" -f "$SRC/bench/deps_bench.sql" postgres | grep -v '^$'
done
