#!/usr/bin/env bash
# Settings that take, with real pg_cron and pg_tide preloaded (as the test
# cluster and docs/deployment.md have it):
# - ALTER SYSTEM SET tide.* works in a session that has not used pg_tide
#   (PostgreSQL 15 refuses a setting whose library the session has not
#   loaded), and a reload makes it every new session's value;
# - on pg_cron < 1.5, which starts jobs at whole minutes, cycles start
#   within a few seconds of tide.schedule_cycles(), in one loop;
# - a setting changed with ALTER SYSTEM and pg_reload_conf() reaches the
#   running loop within a couple of seconds, not at the next minute's loop.
# The timed part starts early in a minute, so that pg_cron's own minute
# start cannot be what the test sees; then the test waits for pg_cron's
# minute start (up to a minute) and changes a setting again.
. "$(dirname "$0")/lib.bash"
: "${TIDE_DB:?}"

DB=$TIDE_DB
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'pg_tide'")" = 0 ]; then
    q "CREATE EXTENSION pg_tide" >/dev/null
    at_exit "DB=$TIDE_DB q 'DROP EXTENSION IF EXISTS pg_tide CASCADE'"
fi
q "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
at_exit "DB=$TIDE_DB q 'SELECT tide.unschedule_cycles()'"
at_exit "DB=$TIDE_DB q 'ALTER SYSTEM RESET tide.reason_updates_per_cycle'; DB=$TIDE_DB q 'ALTER SYSTEM RESET tide.node_timeout'; DB=$TIDE_DB q 'ALTER SYSTEM RESET tide.history_retention'; DB=$TIDE_DB q 'SELECT pg_reload_conf()'"
at_exit "DB=$TIDE_DB q \"DELETE FROM tide.nodes WHERE name = 'e2e_settings_n1'\""
at_exit "DB=$TIDE_DB q \"DELETE FROM tide.queues WHERE name = 'e2e_settings'\""
at_exit "DB=$TIDE_DB q \"DELETE FROM tide.jobs WHERE queue = 'e2e_settings'\""
native=$(q "SELECT (regexp_match(extversion, '^(\d+)\.(\d+)'))[1]::int * 100 + (regexp_match(extversion, '^(\d+)\.(\d+)'))[2]::int >= 105 FROM pg_extension WHERE extname = 'pg_cron'")

# ---- ALTER SYSTEM in a fresh session (each q is one) ----
is "$(q "SELECT tide._preloaded()")" t "the test cluster preloads pg_tide"
is "$(q "ALTER SYSTEM SET tide.node_timeout = '60s'" 2>&1)" "" \
    "ALTER SYSTEM SET tide.node_timeout in a session that has not used pg_tide"
is "$(q "ALTER SYSTEM SET tide.history_retention = '30 days'" 2>&1)" "" \
    "ALTER SYSTEM SET tide.history_retention (a setting read in SQL) too"
is "$(q "SHOW tide.node_timeout")" 5min "not in effect before a reload"
q "SELECT pg_reload_conf()" >/dev/null
is "$(wait_for "SHOW tide.node_timeout" 1min 5)" 1min "after pg_reload_conf() a new session has it"
is "$(q "SELECT value FROM tide.history_settings() WHERE name = 'tide.history_retention'")" "30 days" \
    "and tide.history_settings() shows the history setting"
q "ALTER SYSTEM RESET tide.node_timeout" >/dev/null
q "ALTER SYSTEM RESET tide.history_retention" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null

# ---- a schedule rolled back starts no loop ----
tr=$(q "SELECT clock_timestamp()")
q "BEGIN; SELECT tide.schedule_cycles('1 second'); ROLLBACK;" >/dev/null
sleep 2
is "$(q "SELECT count(*) FROM tide.cycles WHERE started_at > '$tr'")|$(q "SELECT count(*) FROM cron.job WHERE starts_with(jobname, 'pg_tide_cycles')")" \
    "0|0" "tide.schedule_cycles() rolled back starts no loop: no cycle, no job"

# ---- cycles start at once ----
# a draining node: the jobs wait for it with a reason that the cycle writes
# (a reason of pending jobs that could fit, unlike those with no node at all)
q "INSERT INTO tide.queues (name, resource_group) VALUES ('e2e_settings', 'e2e_settings') ON CONFLICT DO NOTHING" >/dev/null
q "SELECT tide.register_node('e2e_settings_n1', 'cpu=4, gpu=1', resource_group => 'e2e_settings')" >/dev/null
q "SELECT tide.drain_node('e2e_settings_n1')" >/dev/null
# early in a minute: the next whole minute is at least 30 s away
while :; do
    s=$(date +%S); s=${s#0}
    [ "$s" -ge 2 ] && [ "$s" -le 25 ] && break
    sleep 0.5
done
t0=$(q "SELECT clock_timestamp()")
minute0=$(date +%M)
q "SELECT tide.schedule_cycles('1 second')" >/dev/null
first=$(wait_for "SELECT count(*) > 0 FROM tide.cycles WHERE started_at > '$t0'" t 10)
after=$(q "SELECT round(extract(epoch FROM min(started_at) - '$t0'::timestamptz), 1) FROM tide.cycles WHERE started_at > '$t0'")
is "$first" t "a cycle runs after tide.schedule_cycles() without anyone calling run_cycle"
ok $(awk -v a="${after:-99}" 'BEGIN { exit !(a <= 3) }'; echo $?) "the first cycle came ${after:-never} s after the call (at most 3 s)"
if [ "$native" = t ]; then
    skip "pg_cron >= 1.5: native second schedules, no loop"
    skip "pg_cron >= 1.5: native second schedules, no loop"
    skip "pg_cron >= 1.5: native second schedules, no loop"
    loop_pid=""
else
    is "$(date +%M)" "$minute0" "still in the minute of the call: not pg_cron's minute start"
    loop_pid=$(q "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'pg_tide cycle loop'")
    like "$loop_pid" '^[0-9]+$' "one pg_tide cycle loop worker runs the loop ($loop_pid)"
    q "SELECT tide.schedule_cycles('1 second')" >/dev/null
    sleep 1.5
    is "$(q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1953064044 AND granted")|$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_tide cycle loop'")" \
        "1|1" "scheduling the same cadence again starts no second loop: one loop holds the loop lock"
fi

# ---- a reload reaches the running loop ----
q "SELECT tide.submit('e2e_settings', 'gpu=1') FROM generate_series(1, 3)" >/dev/null
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE queue = 'e2e_settings' AND pending_reason IS NOT NULL" 3 10)" 3 \
    "the loop's cycles write the pending reasons of new jobs"
q "ALTER SYSTEM SET tide.reason_updates_per_cycle = 1" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
t1=$(q "SELECT clock_timestamp()")
q "SELECT tide.submit('e2e_settings', 'gpu=1') FROM generate_series(1, 5)" >/dev/null
got=$(wait_for "SELECT coalesce(max(reasons_deferred), 0) FROM tide.cycles WHERE started_at > '$t1' AND jobs_considered > 0" 4 5)
is "$got" 4 "after ALTER SYSTEM and pg_reload_conf() the running loop writes 1 reason of 5 (4 deferred)"
took=$(q "SELECT round(extract(epoch FROM min(started_at) - '$t1'::timestamptz), 1) FROM tide.cycles WHERE started_at > '$t1' AND reasons_deferred > 0")
ok $(awk -v a="${took:-99}" 'BEGIN { exit !(a <= 2.5) }'; echo $?) "within ${took:-never} s of the reload (at most 2.5 s)"
if [ -n "$loop_pid" ]; then
    is "$(q "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'pg_tide cycle loop'")|$(date +%M)" \
        "$loop_pid|$minute0" "in the same loop, in the same minute (not a loop started afresh)"
else
    skip "pg_cron >= 1.5: no loop"
fi

# ---- the same in the loop pg_cron starts at the next minute ----
# pg_cron's workers ignore SIGHUP (a background worker does unless it
# asks); the loop takes it over at its first cycle
if [ -n "$loop_pid" ]; then
    cron_loop="SELECT string_agg(a.pid::text, ',') FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
                WHERE l.locktype = 'advisory' AND l.classid = 1953064044 AND l.granted AND a.backend_type <> 'pg_tide cycle loop'"
    cron_pid=""
    for _ in $(seq 90); do
        cron_pid=$(q "$cron_loop")
        [ -n "$cron_pid" ] && break
        sleep 1
    done
    like "$cron_pid" '^[0-9]+$' "at the next minute pg_cron's own worker runs the loop ($cron_pid)"
    is "$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_tide cycle loop'")" 0 "and pg_tide's worker has ended"
    q "ALTER SYSTEM SET tide.reason_updates_per_cycle = 2" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
    t2=$(q "SELECT clock_timestamp()")
    q "SELECT tide.submit('e2e_settings', 'gpu=1') FROM generate_series(1, 5)" >/dev/null
    is "$(wait_for "SELECT coalesce(max(reasons_deferred), 0) FROM tide.cycles WHERE started_at > '$t2' AND jobs_considered > 0" 3 5)" 3 \
        "a reload reaches pg_cron's loop too: it writes 2 reasons of 5 (3 deferred)"
    is "$(q "$cron_loop")" "$cron_pid" "in that same loop"
    # a new cadence: the running loop sees its job's new command at its
    # next tick and returns; the new cadence's loop takes over at once
    q "SELECT tide.schedule_cycles('2 seconds')" >/dev/null
    holder="SELECT string_agg(a.backend_type, ',') FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
             WHERE l.locktype = 'advisory' AND l.classid = 1953064044 AND l.granted"
    is "$(wait_for "$holder" "pg_tide cycle loop" 5)" "pg_tide cycle loop" \
        "a new cadence: pg_cron's old loop returns and the new cadence's loop runs at once"
    t3=$(q "SELECT clock_timestamp() + interval '0.5 seconds'")
    sleep 7
    is "$(q "SELECT round(extract(epoch FROM max(started_at) - min(started_at)) / (count(*) - 1)) FROM tide.cycles WHERE started_at > '$t3'")" 2 \
        "its cycles come every 2 seconds"
else
    for _ in 1 2 3 4 5 6; do skip "pg_cron >= 1.5: no loop"; done
fi

# ---- unscheduling stops the loop ----
q "SELECT tide.unschedule_cycles()" >/dev/null
is "$(wait_for "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1953064044 AND granted" 0 5)" 0 \
    "tide.unschedule_cycles() stops the loop at its next tick"
finish
