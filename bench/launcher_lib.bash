# Shared by bench/launcher_*.sh (sourced).  Starts a throwaway PostgreSQL
# with pg_cron for database $BENCH_DB unless PGHOST/PGPORT point at one
# already (then pg_tide must be installed there and, for the latency
# benchmark, pg_cron must serve $BENCH_DB).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
BENCH_DB=${BENCH_DB:-tide_bench}
BTMP=$(mktemp -d /tmp/pg_tide_bench.XXXXXX)
chmod 755 "$BTMP"
# The launchers' state files go where the launcher puts them by default, on
# tmpfs: on a disk file system (ext4) creating and deleting two small files
# per allocation costs more than starting its process.
BSTATE=$(mktemp -d "${BENCH_STATE_ROOT:-/dev/shm}/pg_tide_bench.XXXXXX")
LAUNCHERS=()
OWN_CLUSTER=""

bench_cleanup() {
    local p f pid
    for p in "${LAUNCHERS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${LAUNCHERS[@]}"; do wait "$p" 2>/dev/null; done
    for f in "$BSTATE"/state-*/*.pid; do
        [ -f "$f" ] || continue
        read -r pid _ <"$f" && [ "${pid:-0}" -gt 1 ] && kill -KILL -- "-$pid" 2>/dev/null
    done
    [ -n "$OWN_CLUSTER" ] && cluster_stop "$BTMP/pg"
    [ -n "${BENCH_KEEP:-}" ] && { echo "kept $BTMP $BSTATE" >&2; return; }
    rm -rf "$BTMP" "$BSTATE"
}
trap bench_cleanup EXIT

bench_cluster() {
    if [ -z "${PGHOST:-}" ]; then
        [ "$(id -u)" = 0 ] || die "run as root (or set PGHOST/PGPORT to a server with pg_tide)"
        OWN_CLUSTER=1
        cluster_start "$BTMP/pg" "$((55000 + RANDOM % 1000))" "$BENCH_DB"
    fi
    export PGHOST PGPORT PGUSER=${PGUSER:-postgres}
    psql -qAtX -d postgres -c "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null 2>&1
    createdb "$BENCH_DB" || die "createdb $BENCH_DB failed"
    bq "CREATE EXTENSION pg_tide" >/dev/null || die "CREATE EXTENSION pg_tide failed (make install?)"
    # BENCH_SETUP_SQL=FILE: run after CREATE EXTENSION (to try a changed function)
    if [ -n "${BENCH_SETUP_SQL:-}" ]; then
        psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" -f "$BENCH_SETUP_SQL" >/dev/null || die "$BENCH_SETUP_SQL failed"
    fi
}

bq() {
    psql -qAtX -v ON_ERROR_STOP=1 -d "$BENCH_DB" -c "$1"
}

# BENCH_LAUNCHER_BIN=PATH: run that tide-launcher (e.g. one built from an
# older commit, to compare) instead of the installed one.
bench_launcher() {
    local node=$1
    local bin=${BENCH_LAUNCHER_BIN:-$PG_BIN/tide-launcher}
    [ -x "$bin" ] || bin=$SRC/tide-launcher
    "$bin" --node "$node" --dsn "dbname=$BENCH_DB" --state-dir "$BSTATE/state-$node" --quiet --verbose ${BENCH_LAUNCHER_OPTS:-} \
        2>>"$BTMP/launcher-$node.log" &
    LAUNCHERS+=($!)
}

wait_connected() {
    local node
    for node in "$@"; do
        for _ in $(seq 100); do
            grep -q 'event=connected' "$BTMP/launcher-$node.log" 2>/dev/null && break
            sleep 0.1
        done
    done
}

machine() {
    printf '%s, %s cores, load average %s' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
        "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}
