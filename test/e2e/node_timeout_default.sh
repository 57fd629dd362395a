#!/usr/bin/env bash
# The default tide.node_timeout (5 minutes) outlasts a launcher restart: a
# node whose launcher was away for a minute is not marked down, its work is
# not placed again, and the launcher that comes back adopts it.
. "$(dirname "$0")/lib.bash"

fresh_db
is "$(q "LOAD 'pg_tide'; SHOW tide.node_timeout")" 5min "tide.node_timeout defaults to 5 minutes"

setup_cluster n1 2
start_launcher n1 --grace-period 1
L1=$LAST_LAUNCHER
j=$(submit 'gpu=1' "echo \$TIDE_ALLOCATION_ID >> $WORK/runs; exec sleep 300")
place "$j" n1 0
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j" running)" running "a job runs"
kill -KILL "$L1"
wait "$L1" 2>/dev/null
LAUNCHER_PIDS=()

# a restart that took a minute (twice the former 30 s default)
q "UPDATE tide.nodes SET heartbeat_at = now() - interval '60 seconds' WHERE name = 'n1'" >/dev/null
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT state FROM tide.nodes WHERE name = 'n1'")" ready "after a minute of silence the node is still ready"
is "$(q "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $j")" running "its work was not released"

start_launcher n1 --grace-period 1
like "$(wait_for "SELECT 1 FROM tide.nodes WHERE heartbeat_at > now() - interval '10 seconds'" 1 10)" 1 "the launcher is back"
sleep 1.5
like "$(cat "$WORK/launcher-n1.log")" "event=adopt alloc=[0-9]+ job=$j" "and adopts the work it left running"
is "$(q "SELECT state FROM tide.jobs WHERE id = $j")" running "the job is still running"
is "$(wc -l < "$WORK/runs" | tr -d ' ')" 1 "it ran once"
finish
