#!/usr/bin/env bash
# Submit throughput: pgbench with C clients (default 8) for S seconds
# (default 15) calling tide.submit once per transaction, next to the floor
# (the same job, task and event rows inserted into trigger-less copies of
# the three tables with the same columns, checks and indexes), then the
# batch form tide.submit_many (B jobs a call, default 100) next to its
# floor.  Rounds alternate (R rounds, default 2).  Then a profile: the
# time of each function and trigger function per submission
# (track_functions) and one submission under auto_explain.
#
#   flock -o /tmp/pg_tide_install.lock bash -c 'make install && bash bench/submit_throughput.sh'
#   BENCH_CLIENTS=8 BENCH_SECONDS=15 BENCH_BATCH=100 BENCH_ROUNDS=2 bash bench/submit_throughput.sh
#
# BENCH_COMPARE_SQL=FILE (say, one that drops a trigger): a second database
# in the same server gets FILE after CREATE EXTENSION, and each round runs
# tide.submit in both, alternating, so both see the same load.
#
# Results: docs/benchmarks.md ("Submitters and launchers at scale").
. "$(dirname "$0")/launcher_lib.bash"
# BENCH_PG_BIN: the bin directory of another PostgreSQL installation (e.g.
# a private copy with this build installed, which needs no install lock)
PG_BIN=${BENCH_PG_BIN:-$PG_BIN}
C=${BENCH_CLIENTS:-8}
S=${BENCH_SECONDS:-15}
B=${BENCH_BATCH:-100}
R=${BENCH_ROUNDS:-2}

bench_cluster
DBS=("$BENCH_DB")
if [ -n "${BENCH_COMPARE_SQL:-}" ]; then
    DBS+=("${BENCH_DB}_fix")
    createdb "${BENCH_DB}_fix" || die "createdb"
    psql -qX -v ON_ERROR_STOP=1 -d "${BENCH_DB}_fix" -c "CREATE EXTENSION pg_tide" -f "$BENCH_COMPARE_SQL" \
        -c "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null || die "$BENCH_COMPARE_SQL failed"
fi
bq "ALTER SYSTEM SET track_functions = 'all'" >/dev/null
bq "SELECT pg_reload_conf()" >/dev/null
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
bq "CREATE SCHEMA floor;
    CREATE TABLE floor.jobs (LIKE tide.jobs INCLUDING ALL);
    CREATE TABLE floor.job_tasks (LIKE tide.job_tasks INCLUDING ALL);
    CREATE TABLE floor.job_events (LIKE tide.job_events INCLUDING ALL) PARTITION BY RANGE (at);
    CREATE TABLE floor.job_events_default PARTITION OF floor.job_events (PRIMARY KEY (id)) DEFAULT;
    CREATE INDEX ON floor.job_events_default (at);
    CREATE INDEX ON floor.job_events_default (job_id, id)" >/dev/null || die "floor tables"
# (tide.job_events is partitioned, its key and indexes on the partition: so
# is the floor's, or its event row would cost less than tide's)
same_idx="SELECT array_agg(regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') ORDER BY 1) FROM pg_index WHERE indrelid ="
[ "$(bq "$same_idx 'tide.job_events_default'::regclass")" = "$(bq "$same_idx 'floor.job_events_default'::regclass")" ] \
    || die "the floor's job_events indexes differ from tide's"
has_many=$(bq "SELECT to_regproc('tide.submit_many') IS NOT NULL")

# run NAME SCRIPT JOBS_PER_TRANSACTION [DB]: prints jobs/s
run() {
    local out tps
    out=$(pgbench -n -c "$C" -j 2 -T "$S" -D batch="$B" -f "$SRC/bench/$2" "${4:-$BENCH_DB}" 2>&1) || { echo "$out" >&2; die "pgbench $2"; }
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out" | tail -1)
    printf '%-28s %8.0f jobs/s  (%s transactions/s, %s)\n' "$1" "$(echo "$tps * $3" | bc)" "$tps" \
        "$(sed -n 's/^latency average = //p' <<<"$out")"
}
vacuum() { bq "VACUUM ANALYZE tide.jobs, tide.job_tasks, tide.job_events, floor.jobs, floor.job_tasks, floor.job_events" >/dev/null; }

# Warm-up, untimed (BENCH_WARMUP seconds of every script, default 3): the
# first timed tide.submit run in a fresh database went at about half the
# rate of the next round in every run, the floor's did not.
for f in submit_floor.sql submit_one.sql submit_floor_many.sql submit_many.sql; do
    [ "$has_many" = t ] || [[ $f != *many* ]] || continue
    for db in "${DBS[@]}"; do
        [ "$db" = "$BENCH_DB" ] || [ "$f" = submit_one.sql ] || continue
        pgbench -n -c "$C" -j 2 -T "${BENCH_WARMUP:-3}" -D batch="$B" -f "$SRC/bench/$f" "$db" >/dev/null 2>&1 || die "pgbench $f"
    done
done
say "submit throughput: $C clients, $S s a run, $R rounds, batches of $B"
for r in $(seq "$R"); do
    vacuum; run "floor (one job a txn)" submit_floor.sql 1
    vacuum; run "tide.submit" submit_one.sql 1
    if [ ${#DBS[@]} -gt 1 ]; then
        psql -qX -d "${DBS[1]}" -c "VACUUM ANALYZE tide.jobs, tide.job_tasks, tide.job_events" >/dev/null
        run "tide.submit, $(basename "$BENCH_COMPARE_SQL")" submit_one.sql 1 "${DBS[1]}"
    fi
    if [ "$has_many" = t ]; then
        vacuum; run "floor ($B jobs a statement)" submit_floor_many.sql "$B"
        vacuum; run "tide.submit_many ($B a call)" submit_many.sql "$B"
    fi
done
echo "jobs: $(bq "SELECT count(*) FROM tide.jobs"), floor rows: $(bq "SELECT count(*) FROM floor.jobs")"

# Where one submission's time goes: every function and trigger function
# called during a short run, per submission (self time excludes callees).
bq "SELECT pg_stat_reset()" >/dev/null
n0=$(bq "SELECT count(*) FROM tide.jobs")
pgbench -n -c "$C" -j 2 -T 5 -f "$SRC/bench/submit_one.sql" "$BENCH_DB" >/dev/null 2>&1
sleep 1
n=$(( $(bq "SELECT count(*) FROM tide.jobs") - n0 ))
echo "profile over $n submissions (track_functions; microseconds per submission):"
psql -qX -d "$BENCH_DB" -c "SELECT schemaname || '.' || funcname AS function, round(calls::numeric / $n, 2) AS calls_per_job,
                                   round((total_time * 1000 / $n)::numeric, 1) AS total_us,
                                   round((self_time * 1000 / $n)::numeric, 1) AS self_us
                              FROM pg_stat_user_functions ORDER BY total_time DESC LIMIT 12"
# and the statements inside (auto_explain of nested statements, one submission)
psql -qX -d "$BENCH_DB" >"$BTMP/explain.out" 2>&1 <<'SQL'
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_timing = on;
SET auto_explain.log_triggers = on;
SET client_min_messages = log;
SET auto_explain.log_level = notice;
SELECT tide.submit('bench', 'cpu=1, gpu=1', command => 'true') FROM generate_series(1, 20) \g /dev/null
SELECT tide.submit('bench', 'cpu=1, gpu=1', command => 'true');
SQL
echo "one submission under auto_explain (the 21st of a session): statements and their times"
# the last submission: from its own statement to the end (its commit-time checks)
grep -nE 'duration:|Query Text|Trigger ' "$BTMP/explain.out" | sed 's/^[0-9]*:NOTICE:  //' | tail -45
echo "machine: $(machine)"
