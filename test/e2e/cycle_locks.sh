#!/usr/bin/env bash
# A submitter's open transaction that holds its own pending job's row (an
# uncommitted cancel request, a task change) must not stall the cycle for
# everyone: after tide.cycle_lock_timeout the cycle leaves that job as it
# is and places the others; the next cycle after the commit places it.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
held=$(submit 'gpu=1' '')
free=$(submit 'gpu=1' '')

# hold the row for up to 60 s in another session; the test ends it sooner
psql -qAtX -d "$DB" -c "BEGIN; UPDATE tide.jobs SET cancel_requested = false WHERE id = $held; SELECT pg_sleep(60) /* e2e holder */; COMMIT;" >/dev/null 2>&1 &
holder=$!
at_exit "kill $holder"
is "$(wait_for "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%e2e holder%' AND wait_event = 'PgSleep'" 1)" 1 \
    "another transaction holds the job row"

q "SELECT tide.run_cycle()" >/dev/null
ok $? "a cycle runs to the end while the row is held"
is "$(q "SELECT state FROM tide.jobs WHERE id = $free")" allocated "it places the other job"
is "$(q "SELECT state FROM tide.jobs WHERE id = $held")" pending "and leaves the held one pending"
is "$(q "SELECT count(*) FROM tide.allocations WHERE job_id = $held")" 0 "without allocations"
is "$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%e2e holder%' AND wait_event = 'PgSleep'")" 1 \
    "the holder still holds it (the cycle did not wait for it)"

q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%e2e holder%' AND pid <> pg_backend_pid()" >/dev/null
wait "$holder" 2>/dev/null
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT state FROM tide.jobs WHERE id = $held")" allocated "once the row is free, the next cycle places it"

# with tide.cycle_lock_timeout = 0 the cycle skips held rows at once
third=$(submit 'gpu=1' '')
psql -qAtX -d "$DB" -c "BEGIN; UPDATE tide.jobs SET cancel_requested = false WHERE id = $third; SELECT pg_sleep(60) /* e2e holder */; COMMIT;" >/dev/null 2>&1 &
holder=$!
at_exit "kill $holder"
wait_for "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%e2e holder%' AND wait_event = 'PgSleep'" 1 >/dev/null
is "$(psql -qAtX -d "$DB" -c "SET tide.cycle_lock_timeout = 0" -c "SELECT tide.run_cycle() IS NOT NULL")" t "with the timeout 0 the cycle runs too"
is "$(q "SELECT state FROM tide.jobs WHERE id = $third")" pending "and skips the held job at once"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%e2e holder%' AND pid <> pg_backend_pid()" >/dev/null
wait "$holder" 2>/dev/null
finish
