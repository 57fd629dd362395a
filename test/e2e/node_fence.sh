#!/usr/bin/env bash
# Fencing: a node the cycle lost whose work was placed again elsewhere may
# still run its copy.  When its launcher comes back, the database has
# released that work: the launcher stops the copy (event=gone) and does not
# report it as started again; the copy placed elsewhere runs on.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.node_timeout = 3" >/dev/null
setup_cluster n1 1
start_launcher n1 --grace-period 1
L1=$LAST_LAUNCHER
j=$(submit 'gpu=1' "echo \$\$ > $WORK/pid.\$TIDE_ALLOCATION_ID; exec sleep 300")
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j" running)" running "the job runs on n1"
a1=$(q "SELECT id FROM tide.allocations WHERE job_id = $j")
for _ in $(seq 50); do [ -s "$WORK/pid.$a1" ] && break; sleep 0.1; done
p1=$(cat "$WORK/pid.$a1")
started1=$(q "SELECT started_at FROM tide.allocations WHERE id = $a1")

kill -KILL "$L1"; wait "$L1" 2>/dev/null; LAUNCHER_PIDS=()
setup_cluster n2 1
start_launcher n2 --grace-period 1
is "$(cycle_until_down n1)" down "n1's launcher gone: n1 is marked down"
is "$(wait_for "SELECT node || ' ' || state FROM tide.allocations WHERE job_id = $j AND id <> $a1" "n2 running")" "n2 running" \
    "the job is placed again on n2 and runs there"
alive "$p1"
is "$?" 0 "while its first copy still runs on n1"
events=$(q "SELECT count(*) FROM tide.job_events WHERE job_id = $j")

start_launcher n1 --grace-period 1
for _ in $(seq 100); do alive "$p1" || break; sleep 0.1; done
alive "$p1"
is "$?" 1 "n1's launcher, back, stops the stale copy"
like "$(cat "$WORK/launcher-n1.log")" "event=gone alloc=$a1 job=$j" "and says why"
is "$(wait_for "SELECT state FROM tide.nodes WHERE name = 'n1'" ready)" ready "n1 is ready again"
sleep 1
is "$(q "SELECT state || ' ' || (started_at = '$started1') || ' ' || coalesce(exit_code::text, '-') FROM tide.allocations WHERE id = $a1")" \
    "released true -" "the stale copy is not reported started again (nor as an exit)"
is "$(q "SELECT count(*) FROM tide.job_events WHERE job_id = $j")" "$events" "the job's history is unchanged"
is "$(q "SELECT state FROM tide.jobs WHERE id = $j")" running "the job runs on, on n2"
is "$(q "SELECT count(*) FROM tide.allocations WHERE job_id = $j AND node = 'n1' AND state <> 'released'")" 0 "nothing of it is live on n1"
finish
