#!/usr/bin/env bash
# tide.schedule_cycles with real pg_cron: clear errors where pg_cron cannot
# serve, a named job that scheduling again replaces, the minute-long cycle
# loop of pg_cron < 1.5, and pg_cron really running cycles, which place a
# job that a launcher then runs, with nobody calling tide.run_cycle().
# pg_cron 1.4 schedules whole minutes: this test waits for the next minute
# to begin (at most about a minute).
. "$(dirname "$0")/lib.bash"
: "${TIDE_DB:?}"

# ---- a database that pg_cron does not serve ----
fresh_db
err=$(q "SELECT tide.schedule_cycles()" 2>&1)
like "$err" "pg_cron runs jobs in database \"$TIDE_DB\", not in \"$DB\"" "another database: the error names both"
like "$err" "HINT: .*cron.database_name" "and hints at the fix"
is "$(q "SELECT tide.unschedule_cycles()")" f "unschedule_cycles without pg_cron here: false"

# ---- the database pg_cron serves ----
DB=$TIDE_DB
if [ "$(q "SELECT to_regnamespace('tide') IS NULL")" = t ]; then
    q "CREATE EXTENSION pg_tide" >/dev/null
    at_exit "DB=$TIDE_DB q 'DROP EXTENSION IF EXISTS pg_tide CASCADE'"
fi
at_exit "DB=$TIDE_DB q 'SELECT tide.unschedule_cycles()'"
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'pg_cron'")" = 0 ]; then
    err=$(q "SELECT tide.schedule_cycles()" 2>&1)
    like "$err" "extension pg_cron is not installed in database \"$TIDE_DB\"" "pg_cron not created: clear error"
    like "$err" "HINT: .*CREATE EXTENSION pg_cron" "with the command that fixes it"
else
    skip "pg_cron already created in $TIDE_DB"
    skip "pg_cron already created in $TIDE_DB"
fi
q "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
native=$(q "SELECT (regexp_match(extversion, '^(\d+)\.(\d+)'))[1]::int * 100 + (regexp_match(extversion, '^(\d+)\.(\d+)'))[2]::int >= 105 FROM pg_extension WHERE extname = 'pg_cron'")

err=$(q "SELECT tide.schedule_cycles('500 milliseconds')" 2>&1)
like "$err" "shorter than one second" "sub-second cadence: clear error"
err=$(q "SELECT tide.schedule_cycles('90 seconds')" 2>&1)
like "$err" "is not supported" "90 seconds: clear error"

t0=$(q "SELECT clock_timestamp()")
id1=$(q "SELECT tide.schedule_cycles('1 second')")
like "$id1" '^[0-9]+$' "schedule_cycles returns the pg_cron job id"
id2=$(q "SELECT tide.schedule_cycles()")
is "$id2" "$id1" "scheduling again replaces the same job"
is "$(q "SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles'")" 1 "one named job"
if [ "$native" = t ]; then
    is "$(q "SELECT schedule || ' | ' || command FROM cron.job WHERE jobid = $id1")" "1 seconds | SELECT tide.run_cycle()" \
        "pg_cron >= 1.5: a native one-second schedule"
else
    is "$(q "SELECT schedule || ' | ' || command FROM cron.job WHERE jobid = $id1")" "* * * * * | CALL tide.cycle_loop('00:00:01')" \
        "pg_cron < 1.5: every minute, a loop of one-second cycles"
fi

setup_cluster e2e_cron_n1 2
start_launcher e2e_cron_n1
job=$(submit 'gpu=1' "echo \"\$CUDA_VISIBLE_DEVICES\" > $WORK/cron.out")

if has_run_cycle; then
    # the loop itself, for a few seconds: one committed cycle per tick
    before=$(q "SELECT count(*) FROM tide.cycles")
    q "CALL tide.cycle_loop('1 second', '2.5 seconds')" >/dev/null
    after=$(q "SELECT count(*) FROM tide.cycles")
    ok $(( after - before >= 2 ? 0 : 1 )) "cycle_loop runs a cycle per tick ($((after - before)) in 2.5 s)"
    # it placed our job: the launcher runs it
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $job" succeeded 20)" succeeded "a job placed by the loop's cycles succeeds"
    job=$(submit 'gpu=1' "echo \"\$CUDA_VISIBLE_DEVICES\" > $WORK/cron2.out")
    t0=$(q "SELECT clock_timestamp()")
else
    skip "tide.run_cycle() does not exist yet"
    skip "tide.run_cycle() does not exist yet"
fi

# ---- pg_cron itself starts the job (at the next minute on 1.4) ----
is "$(wait_for "SELECT count(*) > 0 FROM cron.job_run_details WHERE jobid = $id1 AND start_time >= '$t0'" t 75)" t \
    "pg_cron runs the job"
if has_run_cycle; then
    is "$(wait_for "SELECT count(*) > 0 FROM tide.cycles WHERE started_at >= '$t0'" t 20)" t "cycles happen without anyone calling run_cycle"
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $job" succeeded 20)" succeeded \
        "a job submitted with only pg_cron and a launcher running succeeds"
    is "$(cat "$WORK/cron2.out" 2>/dev/null)" "$(q "SELECT coalesce(tide.cuda_visible_devices(gpus), 'none') FROM tide.allocations WHERE job_id = ${job:-0}")" \
        "with its allocation's GPU mask"
else
    is "$(q "SELECT status FROM cron.job_run_details WHERE jobid = $id1 ORDER BY runid DESC LIMIT 1")" running \
        "the cycle loop is running (its cycles fail until tide.run_cycle() exists)"
    skip "tide.run_cycle() does not exist yet"
    skip "tide.run_cycle() does not exist yet"
fi

is "$(q "SELECT tide.unschedule_cycles()")" t "unschedule_cycles removes the job"
is "$(q "SELECT tide.unschedule_cycles()")" f "a second time: nothing to remove"
is "$(q "SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles'")" 0 "no pg_tide job left"
if [ "$native" != t ]; then
    # the running loop notices at its next tick and returns
    is "$(wait_for "SELECT count(*) FROM cron.job_run_details WHERE jobid = $id1 AND status IN ('running', 'starting')" 0 10)" 0 \
        "the running loop stops at its next tick"
fi
finish
