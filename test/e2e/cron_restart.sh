#!/usr/bin/env bash
# Cycles scheduled by tide.schedule_cycles resume at once after a crash of
# the server, not at the next whole minute.  On pg_cron < 1.5 the cycles
# run in a loop that pg_cron starts every minute; kill -9 of the postmaster
# ends it, and without a start at server start nothing places work until
# the minute turns (a few crashes in a row: minutes with the backlog waiting
# and the GPUs idle).  The test crashes the server early in a minute, then
# a job submitted right after the restart must run well before the next
# minute begins, with nobody but pg_cron calling tide.run_cycle().
. "$(dirname "$0")/lib.bash"
keep_bin=$PG_BIN
. "$TIDE_SRC/tools/lib.sh"     # cluster_start
PG_BIN=$keep_bin               # the server the runner started, not lib.sh's default
: "${TIDE_DB:?}"

DB=$TIDE_DB
# (an earlier test may have dropped the extension and left its schema)
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'pg_tide'")" = 0 ]; then
    q "CREATE EXTENSION pg_tide" >/dev/null
    at_exit "DB=$TIDE_DB q 'DROP EXTENSION IF EXISTS pg_tide CASCADE'"
fi
q "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
at_exit "DB=$TIDE_DB q 'SELECT tide.unschedule_cycles()'"
at_exit "DB=$TIDE_DB q \"DELETE FROM tide.nodes WHERE name = 'e2e_cron_restart_n1'\""
at_exit "DB=$TIDE_DB q \"DELETE FROM tide.jobs WHERE queue = 'e2e' AND command LIKE '%cron_restart%'\""

setup_cluster e2e_cron_restart_n1 2
start_launcher e2e_cron_restart_n1
q "SELECT tide.schedule_cycles('1 second')" >/dev/null

# crash early in a minute: the next whole minute is at least 35 s away
while :; do
    s=$(date +%S); s=${s#0}
    [ "$s" -ge 2 ] && [ "$s" -le 20 ] && break
    sleep 0.5
done
# the test cluster commits asynchronously: make what was set up durable
q "CHECKPOINT" >/dev/null
pm=$(head -1 "$TIDE_TMP/data/postmaster.pid")
kill -KILL "$pm"
for _ in $(seq 100); do
    ( cluster_start "$TIDE_TMP" "$PGPORT" "$TIDE_DB" ) >/dev/null 2>&1 && break
    sleep 0.2
done
pg_isready -q -t 30
ok $? "PostgreSQL started again after kill -9 of the postmaster"
t_up=$(date +%s)
next_minute=$(( (t_up / 60 + 1) * 60 ))

job=$(submit 'gpu=1' "echo ran > $WORK/cron_restart.out")
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = ${job:-0}" succeeded 15)" succeeded \
    "a job submitted right after the restart runs (cycles resumed without waiting for the minute)"
first=$(q "SELECT coalesce(round(extract(epoch FROM min(started_at) - to_timestamp($t_up)))::text, 'none')
             FROM tide.cycles WHERE started_at >= to_timestamp($t_up)")
first=${first:-none}
ok $([ "$first" != none ] && [ "$first" -le 5 ] && echo 0 || echo 1) \
    "the first cycle after the restart ran within 5 s of it (after: $first s)"
ok $(( $(date +%s) < next_minute ? 0 : 1 )) "all before the next whole minute ($(( next_minute - t_up )) s after the restart)"
is "$(cat "$WORK/cron_restart.out" 2>/dev/null)" ran "its command ran"
finish
