# Helpers for the end-to-end tests (sourced; not a test itself: test/run.sh
# runs test/e2e/*.sh only).  Environment from test/run.sh: PGHOST PGPORT
# PGUSER (a running throwaway cluster), TIDE_DB (the database pg_cron
# serves), TIDE_SRC, TIDE_TMP (scratch; also the cluster's directory),
# PG_BIN.
#
# Placement: when tide.run_cycle() exists the tests let the real cycle
# place the jobs; otherwise (or with TIDE_E2E_DIRECT=1) `place` writes the
# allocation rows itself, as a stand-in cycle would.

set -u
: "${TIDE_SRC:?}" "${TIDE_TMP:?}" "${PG_BIN:=/usr/lib/postgresql/15/bin}"
export PGHOST PGPORT PGUSER

T_N=0
T_FAIL=0
T_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "$TIDE_TMP/e2e-$T_NAME.XXXXXX")
chmod 755 "$WORK"
LAUNCHER_PIDS=()
DB=""
OWN_DB=""

LAUNCHER=$PG_BIN/tide-launcher
[ -x "$LAUNCHER" ] || LAUNCHER=$TIDE_SRC/tide-launcher

ok() {
    T_N=$((T_N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $T_N - $2"
    else
        echo "not ok $T_N - $2"
        T_FAIL=$((T_FAIL + 1))
    fi
}

# skip REASON: a test that cannot run here (counts as passed)
skip() {
    T_N=$((T_N + 1))
    echo "ok $T_N # SKIP $1"
}

# is GOT EXPECTED MESSAGE
is() {
    if [ "$1" = "$2" ]; then
        ok 0 "$3"
    else
        ok 1 "$3"
        echo "#   got:      '$1'"
        echo "#   expected: '$2'"
    fi
}

# like GOT REGEX MESSAGE
like() {
    if printf '%s' "$1" | grep -Eq -- "$2"; then
        ok 0 "$3"
    else
        ok 1 "$3"
        echo "#   got:      '$(printf '%s' "$1" | head -c 600)'"
        echo "#   expected to match: '$2'"
    fi
}

# One value (or rows, |-separated) from SQL in the test's database.
q() {
    psql -qAtX -v ON_ERROR_STOP=1 -d "$DB" -c "$1"
}

# Poll SQL until it returns EXPECTED or TIMEOUT seconds pass; prints the
# last value.  Waiting for an outcome is not timing it: the timeout only
# bounds a failure.
wait_for() {
    local sql=$1 expected=$2 timeout=${3:-20} got="" end
    end=$(($(date +%s) + timeout))
    while :; do
        got=$(q "$sql" 2>/dev/null)
        [ "$got" = "$expected" ] && break
        [ "$(date +%s)" -ge "$end" ] && break
        sleep 0.2
    done
    printf '%s' "$got"
}

# Servers of the test's own, beside the shared test cluster (a primary
# and its streaming standby): owned by the postgres OS user, each in DIR
# (data in DIR/data, its socket in DIR), stopped at exit.
pg_as() { runuser -u postgres -- "$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; }

# own_primary DIR PORT [SETTING...]: initdb, set up to stream, start.
own_primary() {
    local dir=$1 port=$2
    shift 2
    mkdir -p "$dir" && chown postgres: "$dir" && chmod 700 "$dir"
    at_exit "pg_as $PG_BIN/pg_ctl -D $dir/data -m immediate -w stop"
    pg_as "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; echo "Bail out! initdb failed"; exit 1; }
    printf '%s\n' "listen_addresses = ''" "fsync = off" "full_page_writes = off" "wal_level = replica" \
        "max_wal_senders = 4" "hot_standby = on" "$@" >>"$dir/data/postgresql.conf"
    pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port -k $dir" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/server.log"; echo "Bail out! the server in $dir did not start"; exit 1; }
}

# own_standby DIR PORT PRIMARY_DIR PRIMARY_PORT: pg_basebackup, start streaming.
own_standby() {
    local dir=$1 port=$2
    mkdir -p "$dir" && chown postgres: "$dir" && chmod 700 "$dir"
    at_exit "pg_as $PG_BIN/pg_ctl -D $dir/data -m immediate -w stop"
    pg_as "$PG_BIN/pg_basebackup" -h "$3" -p "$4" -U postgres -D "$dir/data" -R -X stream -c fast \
        >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log"; echo "Bail out! pg_basebackup failed"; exit 1; }
    pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port -k $dir" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/server.log"; echo "Bail out! the standby in $dir did not start"; exit 1; }
}

# A fresh database with pg_tide, dropped at exit.
fresh_db() {
    DB=tide_e2e_${T_NAME//[^a-z0-9_]/_}_$$
    OWN_DB=$DB
    createdb "$DB" || { echo "Bail out! createdb $DB failed"; exit 1; }
    if [ -n "${TIDE_E2E_SETUP_SQL:-}" ]; then
        # development only: a stand-in schema file instead of the extension
        psql -qX -v ON_ERROR_STOP=1 -d "$DB" -f "$TIDE_E2E_SETUP_SQL" >/dev/null || exit 1
    else
        q "CREATE EXTENSION pg_tide" >/dev/null || { echo "Bail out! CREATE EXTENSION pg_tide failed"; exit 1; }
    fi
}

# Start a launcher for NODE in the background (extra options follow).
start_launcher() {
    local node=$1
    shift
    "$LAUNCHER" --node "$node" --dsn "dbname=$DB" --state-dir "$WORK/state-$node" \
        --poll-interval 1 --heartbeat-interval 1 --max-backoff 1 "$@" \
        2>>"$WORK/launcher-$node.log" &
    LAUNCHER_PIDS+=($!)
    LAST_LAUNCHER=$!
}

stop_launchers() {
    local p
    for p in "${LAUNCHER_PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${LAUNCHER_PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    LAUNCHER_PIDS=()
}

AT_EXIT=()
# Run a shell command at exit (before the database is dropped).
at_exit() {
    AT_EXIT+=("$1")
}

cleanup() {
    local i
    for ((i = ${#AT_EXIT[@]} - 1; i >= 0; i--)); do
        eval "${AT_EXIT[i]}" >/dev/null 2>&1
    done
    stop_launchers
    # work that the tests left running (a launcher leaves its children)
    local f pid
    for f in "$WORK"/state-*/*.pid; do
        [ -f "$f" ] || continue
        read -r pid _ <"$f" && [ "${pid:-0}" -gt 1 ] && kill -KILL -- "-$pid" 2>/dev/null
    done
    if [ -n "$OWN_DB" ]; then
        psql -qAtX -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$OWN_DB' AND pid <> pg_backend_pid()" >/dev/null 2>&1
        dropdb --if-exists "$OWN_DB" >/dev/null 2>&1
    fi
    if [ "$T_FAIL" -gt 0 ]; then
        for f in "$WORK"/launcher-*.log; do
            [ -f "$f" ] || continue
            echo "# ---- $f (last lines)"
            tail -25 "$f" | sed 's/^/# /'
        done
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# Print the plan and leave with the right status.
finish() {
    echo "1..$T_N"
    [ "$T_FAIL" -eq 0 ]
    exit $?
}

has_run_cycle() {
    [ -z "${TIDE_E2E_DIRECT:-}" ] && [ "$(q "SELECT to_regprocedure('tide.run_cycle()') IS NOT NULL")" = t ]
}

# A queue and a node with GPUS GPUs (one topology domain).
setup_cluster() {
    local node=$1 gpus=$2
    q "INSERT INTO tide.queues (name) VALUES ('e2e') ON CONFLICT DO NOTHING" >/dev/null
    q "SELECT tide.register_node('$node', 'cpu=64, memory=256Gi, gpu=$gpus')" >/dev/null
}

# Submit a one-replica job; prints its id.  COMMAND may be empty (NULL).
submit() {
    local request=$1 command=$2
    if [ -n "$command" ]; then
        q "SELECT tide.submit('e2e', '$request', command => \$cmd\$$command\$cmd\$)"
    else
        q "SELECT tide.submit('e2e', '$request')"
    fi
}

# Place pending jobs: the real cycle when it exists, else a stand-in that
# follows the cycle's protocol (advisory lock, a tide.cycles row, the job
# allocated, one allocation per replica; the insert trigger NOTIFYs the
# node) and puts job JOB on NODE with GPU mask GPUS (replica r gets the
# r-th of masks separated by '|', e.g. '0-1|2-3').  TIDE_E2E_DIRECT=1
# forces the stand-in.
place() {
    local job=$1 node=$2 gpus=$3
    if has_run_cycle; then
        q "SELECT tide.run_cycle()" >/dev/null
    else
        q "DO \$\$
           DECLARE c bigint;
           BEGIN
               PERFORM pg_advisory_xact_lock(tide._cycle_lock_key());
               INSERT INTO tide.cycles DEFAULT VALUES RETURNING id INTO c;
               PERFORM set_config('tide.cycle_id', c::text, true);
               UPDATE tide.jobs SET state = 'allocated', pending_reason = NULL WHERE id = $job;
               INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, cycle_id)
               SELECT t.job_id, t.role, r, '$node', t.request,
                      split_part('$gpus', '|', r + 1)::tide.gpumask, c
                 FROM tide.job_tasks t, generate_series(0, t.replicas - 1) r WHERE t.job_id = $job;
               UPDATE tide.cycles SET finished_at = clock_timestamp(), jobs_placed = 1 WHERE id = c;
           END \$\$" >/dev/null
    fi
}

# Is PID a live process (a zombie is not)?
alive() {
    local st
    [ -r "/proc/$1/stat" ] || return 1
    st=$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)
    [ "$st" != Z ] && [ "$st" != X ]
}

# Run cycles until NODE is marked down (at most 20 s: the test sets a short
# tide.node_timeout); prints its last state.
cycle_until_down() {
    local got=""
    for _ in $(seq 80); do
        q "SELECT tide.run_cycle()" >/dev/null
        got=$(q "SELECT state FROM tide.nodes WHERE name = '$1'")
        [ "$got" = down ] && break
        sleep 0.25
    done
    printf '%s' "$got"
}

# Run cycles until SQL returns EXPECTED or TIMEOUT seconds (default 30)
# pass; prints the last value.
cycle_until() {
    local sql=$1 expected=$2 timeout=${3:-30} got="" end
    end=$(($(date +%s) + timeout))
    while :; do
        q "SELECT tide.run_cycle()" >/dev/null
        got=$(q "$sql" 2>/dev/null)
        [ "$got" = "$expected" ] && break
        [ "$(date +%s)" -ge "$end" ] && break
        sleep 0.25
    done
    printf '%s' "$got"
}

# Write each ```sql block of markdown file FILE to DIR/blockNN.sql.
sql_blocks() {
    python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for i, block in enumerate(re.findall(r"```sql\n(.*?)```", text, re.S)):
    open("%s/block%02d.sql" % (sys.argv[2], i), "w").write(block)
PY
}

job_state() {
    q "SELECT state FROM tide.jobs WHERE id = $1"
}
