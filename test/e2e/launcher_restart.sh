#!/usr/bin/env bash
# Killing a launcher and starting it again loses nothing: work it started
# keeps running under its shepherds and is adopted by the next launcher,
# exits that happened meanwhile are reported with their codes, work placed
# while no launcher ran is started, and nothing runs twice.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 8
start_launcher n1 --grace-period 1
L1=$LAST_LAUNCHER

# each command appends to a runs file, so a second run would show
cmd() { echo "echo \$TIDE_ALLOCATION_ID >> $WORK/runs.$1; $2"; }

ja=$(submit 'gpu=1' "$(cmd a "sleep 4; touch $WORK/a.done; exit 3")")
jb=$(submit 'gpu=1' "$(cmd b "sleep 4; touch $WORK/b.done")")
jl=$(submit 'gpu=1' "$(cmd l "sleep 300")")
place "$ja" n1 0; place "$jb" n1 1; place "$jl" n1 2
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb, $jl) AND state = 'running'" 3)" 3 \
    "three jobs run"
kill -KILL "$L1"
wait "$L1" 2>/dev/null
LAUNCHER_PIDS=()

# while no launcher runs: two jobs end, one is placed
for _ in $(seq 300); do [ -e "$WORK/a.done" ] && [ -e "$WORK/b.done" ] && break; sleep 0.1; done
jc=$(submit 'gpu=1' "$(cmd c "exit 0")")
place "$jc" n1 3
is "$(q "SELECT state FROM tide.jobs WHERE id = $ja")" running "without a launcher the ended job still reads running"

start_launcher n1 --grace-period 1
L2=$LAST_LAUNCHER
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $ja) FROM tide.jobs WHERE id = $ja" "failed 3")" "failed 3" \
    "the new launcher reports the exit code (3) that happened while none ran"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" succeeded)" succeeded "and the success"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" succeeded)" succeeded "work placed while no launcher ran is started"
is "$(q "SELECT state FROM tide.jobs WHERE id = $jl")" running "the long job is still running"
like "$(cat "$WORK/launcher-n1.log")" "event=adopt alloc=[0-9]+ job=$jl" "the new launcher adopts it"

# a clean stop (SIGTERM) leaves work running too; the next launcher reports it
jd=$(submit 'gpu=1' "$(cmd d "sleep 4; touch $WORK/d.done; exit 5")")
place "$jd" n1 4
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jd" running)" running "another job runs"
kill -TERM "$L2"
wait "$L2"
is "$?" 0 "SIGTERM: the launcher exits 0"
LAUNCHER_PIDS=()
for _ in $(seq 300); do [ -e "$WORK/d.done" ] && break; sleep 0.1; done
start_launcher n1 --grace-period 1
is "$(wait_for "SELECT (SELECT exit_code FROM tide.allocations WHERE job_id = $jd)" 5)" 5 \
    "the exit (5) that happened after a clean stop is reported"

# an adopted job can still be evicted
q "SELECT tide.cancel($jl)" >/dev/null
is "$(wait_for "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $jl" released)" released \
    "an adopted job is stopped on eviction"

# the database gives up on a node while its launcher is away (node marked
# down, allocations released): the launcher that comes back stops that work,
# whose GPUs may already be someone else's
if [ "$(q "SELECT to_regprocedure('tide._nodes_lost(text[], text)') IS NOT NULL")" = t ]; then
    jm=$(submit 'gpu=1' "$(cmd m "echo \$\$ > $WORK/m.pid; sleep 300")")
    place "$jm" n1 5
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jm" running)" running "a job runs"
    for _ in $(seq 50); do [ -s "$WORK/m.pid" ] && break; sleep 0.1; done
    for p in "${LAUNCHER_PIDS[@]}"; do kill -KILL "$p"; wait "$p" 2>/dev/null; done
    LAUNCHER_PIDS=()
    q "SELECT tide._nodes_lost(ARRAY['n1'], 'e2e: node lost')" >/dev/null
    is "$(q "SELECT state FROM tide.allocations WHERE job_id = $jm")" released "the database released it (node lost)"
    alive "$(cat "$WORK/m.pid")"
    is "$?" 0 "while its process still runs"
    start_launcher n1 --grace-period 1
    for _ in $(seq 100); do alive "$(cat "$WORK/m.pid")" || break; sleep 0.1; done
    alive "$(cat "$WORK/m.pid")"
    is "$?" 1 "the launcher that comes back stops it"
    like "$(cat "$WORK/launcher-n1.log")" "event=gone alloc=[0-9]+ job=$jm" "and says why"

    # a launcher that is alive but whose node was given up (heartbeats
    # late): the NOTIFY of _nodes_lost makes it stop that work at once, long
    # before its next poll (60 s here)
    stop_launchers
    q "SELECT tide.resume_node('n1')" >/dev/null
    start_launcher n1 --grace-period 1 --poll-interval 60
    jn=$(submit 'gpu=1' "echo \$\$ > $WORK/n.pid; sleep 300")
    place "$jn" n1 0
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jn" running)" running "a job runs under a launcher that polls once a minute"
    for _ in $(seq 50); do [ -s "$WORK/n.pid" ] && break; sleep 0.1; done
    q "SELECT tide._nodes_lost(ARRAY['n1'], 'e2e: heartbeat late')" >/dev/null
    for _ in $(seq 200); do alive "$(cat "$WORK/n.pid")" || break; sleep 0.1; done
    alive "$(cat "$WORK/n.pid")"
    is "$?" 1 "the live launcher stops the work of its lost node when told, not at its next poll"
    like "$(cat "$WORK/launcher-n1.log")" "event=gone alloc=[0-9]+ job=$jn" "and says why"
else
    for i in 1 2 3 4 5 6 7 8; do skip "tide._nodes_lost() not in this schema"; done
fi

for x in a b c d l; do
    is "$(wc -l < "$WORK/runs.$x" 2>/dev/null | tr -d ' ')" 1 "job $x ran exactly once"
done
is "$(q "SELECT count(*) FROM tide.allocations WHERE state <> 'released'")" 0 "every allocation is released"
finish
