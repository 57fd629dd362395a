#!/usr/bin/env bash
# Analysts on a hot standby (docs/ha.md): a primary of its own (initdb in
# the test's directory, so the fixture's roles stay there) with the
# scripted day of history of the analyst tests, a streaming standby made
# with pg_basebackup, and on the standby, read-only, every analyst function
# and view (docs/analysts.md, its SQL blocks included) answers without
# error and as the primary does.
. "$(dirname "$0")/lib.bash"
. "$TIDE_SRC/tools/lib.sh"
export PGUSER=postgres

P_DIR=$WORK/primary
S_DIR=$WORK/standby
P_PORT=$((PGPORT + 101))
S_PORT=$((PGPORT + 102))

# ---- the primary: a cluster of its own, no pg_cron (analysts need none) ----
own_primary "$P_DIR" "$P_PORT"

DB=tide_analysts
qp() { psql -qAtX -v ON_ERROR_STOP=1 -h "$P_DIR" -p "$P_PORT" -d "$DB" -c "$1"; }
qs() { psql -qAtX -v ON_ERROR_STOP=1 -h "$S_DIR" -p "$S_PORT" -d "$DB" -c "$1"; }
createdb -h "$P_DIR" -p "$P_PORT" "$DB" || { echo "Bail out! createdb failed"; exit 1; }
qp "CREATE EXTENSION pg_tide" >/dev/null || { echo "Bail out! CREATE EXTENSION failed"; exit 1; }
{
    echo "BEGIN;"
    echo "\\ir $TIDE_SRC/test/pgtap/_fixture.psql"
    echo "\\ir $TIDE_SRC/test/pgtap/_analysts_history.psql"
    echo "COMMIT;"
    echo "SELECT tide.maintain_history() IS NOT NULL;"
} >"$WORK/history.sql"
err=$(psql -qAtX -v ON_ERROR_STOP=1 -h "$P_DIR" -p "$P_PORT" -d "$DB" -f "$WORK/history.sql" 2>&1 >/dev/null)
is "$err" "" "the primary holds the analysts' day of history"
P1=$(qp "SELECT id FROM tide.jobs WHERE name = 'p1'")

# ---- the standby: pg_basebackup, streaming, read-only ----
own_standby "$S_DIR" "$S_PORT" "$P_DIR" "$P_PORT"
is "$(qs "SELECT pg_is_in_recovery()")" t "the standby is in recovery"
# a change after the backup reaches it by streaming
qp "INSERT INTO tide.queues (name) VALUES ('after_backup')" >/dev/null
lsn=$(qp "SELECT pg_current_wal_lsn()")
got=""
for _ in $(seq 100); do
    got=$(qs "SELECT pg_last_wal_replay_lsn() >= '$lsn'" 2>/dev/null)
    [ "$got" = t ] && break
    sleep 0.1
done
is "$got" t "the standby streams from the primary"
err=$(qs "SELECT tide.submit('q1', 'gpu=1')" 2>&1)
like "$err" "read-only transaction" "a submit on the standby is refused (read-only)"

# ---- every analyst function and view, on both; equal where time does not enter ----
# label|SQL (one value: its rows aggregated to text)
checks=(
    "explain|SELECT tide.explain($P1) - 'computed_at' - 'estimate_start'"
    "estimate_start|SELECT coalesce(to_char(tide.estimate_start($P1), 'YYYY-MM-DD HH24'), 'null')"
    "pending|SELECT string_agg(p::text, ';' ORDER BY p.job_id) FROM tide.pending p"
    "metrics|SELECT count(*) FROM tide.metrics"
    "metrics names|SELECT string_agg(DISTINCT name, ',') FROM tide.metrics"
    "metrics_prometheus|SELECT length(tide.metrics_prometheus()) > 0"
    "queue_accounting|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.queue_accounting x"
    "node_accounting|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.node_accounting x"
    "queue_accounting_raw|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.queue_accounting_raw(current_date - 3, current_date - 1) x"
    "node_accounting_raw|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.node_accounting_raw(current_date - 3, current_date - 1) x"
    "gpu_usage|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.gpu_usage(current_date - 3, current_date - 1, '1 hour') x"
    "gpu_usage (rollup)|SELECT count(*) FROM tide.gpu_usage(current_date - 3, current_date - 1)"
    "eviction_log|SELECT string_agg(x::text, ';' ORDER BY x::text) FROM tide.eviction_log x"
    "node_fragmentation|SELECT count(*) FROM tide.node_fragmentation()"
    "job_waits|SELECT string_agg(x.job_id || ' ' || x.state || ' ' || coalesce(x.placed_at::text, '-'), ';' ORDER BY x.job_id) FROM tide.job_waits x"
    "wait_stats|SELECT string_agg((x.queue, x.jobs_placed, x.mean_wait, x.p99_wait, x.pending_now)::text, ';' ORDER BY x.queue) FROM tide.wait_stats(current_date - 3, current_date - 1) x"
    "jobs_all|SELECT count(*) FROM tide.jobs_all"
    "dry_run|SELECT count(*) FROM tide.dry_run()"
)
for c in "${checks[@]}"; do
    label=${c%%|*}
    sql=${c#*|}
    want=$(qp "$sql" 2>&1)
    got=$(qs "$sql" 2>&1)
    if printf '%s' "$got" | grep -q 'ERROR'; then
        ok 1 "$label answers on the standby"
        echo "#   $got"
    else
        ok 0 "$label answers on the standby"
    fi
    is "$got" "$want" "$label: the standby's answer equals the primary's"
done
# what exists only in some versions: answered on the standby when present
for f in "tide.forecast()" "tide.demand"; do
    case $f in
    *\(\)) exists=$(qs "SELECT to_regprocedure('$f') IS NOT NULL"); sql="SELECT count(*) FROM $f" ;;
    *) exists=$(qs "SELECT to_regclass('$f') IS NOT NULL"); sql="SELECT count(*) FROM $f" ;;
    esac
    if [ "$exists" = t ]; then
        is "$(qs "$sql" 2>&1)" "$(qp "$sql" 2>&1)" "$f answers on the standby as on the primary"
    else
        skip "$f does not exist here"
    fi
done

# ---- the SQL blocks of docs/analysts.md, as they stand, on the standby ----
sql_blocks "$TIDE_SRC/docs/analysts.md" "$WORK"
n=0
for f in "$WORK"/block*.sql; do
    n=$((n + 1))
    need=$(sed -n 's/^-- skip-if-missing: *\(.*\)$/\1/p' "$f")
    if [ -n "$need" ] && [ "$(qs "SELECT to_regprocedure('$need') IS NULL")" = t ]; then
        skip "block $n of docs/analysts.md needs $need"
        continue
    fi
    # a block that maintains the history, or changes a setting of a queue,
    # writes: the primary's work, refused here
    if grep -Eq 'maintain_history|schedule_maintenance|frag_shapes_refresh|^(UPDATE|INSERT|DELETE) ' "$f"; then
        err=$(psql -qAtX -v ON_ERROR_STOP=1 -h "$S_DIR" -p "$S_PORT" -d "$DB" -f "$f" 2>&1 >/dev/null)
        like "$err" "read-only|recovery" "block $n (it writes) is refused on the standby with a clear error"
        continue
    fi
    err=$(psql -qAtX -v ON_ERROR_STOP=1 -h "$S_DIR" -p "$S_PORT" -d "$DB" -f "$f" 2>&1 >/dev/null)
    is "$err" "" "block $n of docs/analysts.md runs on the standby: $(head -c 60 "$f" | tr '\n' ' ')"
done
finish
