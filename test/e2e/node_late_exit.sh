#!/usr/bin/env bash
# A node the cycle lost comes back and reports exits that happened while it
# was unreachable (its launcher was gone, the work ran on under its
# shepherds).  Work nothing replaced yet is recorded as finished: a
# requeued job still pending is succeeded, a failed job whose retry was
# never placed is succeeded and the retry cancelled.  Work placed again
# elsewhere keeps running; the late exit is only noted on the old
# allocation.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.node_timeout = 3" >/dev/null
q "INSERT INTO tide.queues (name) VALUES ('e2e')" >/dev/null
q "SELECT tide.register_node('n1', 'cpu=64, gpu=4', labels => '{\"zone\": \"a\"}')" >/dev/null
start_launcher n1 --grace-period 1
L1=$LAST_LAUNCHER

# each waits for its go file, so that it ends while the node is unreachable
waiter() { echo "echo \$TIDE_ALLOCATION_ID >> $WORK/runs.$1; while [ ! -e $WORK/go.$1 ]; do sleep 0.1; done; touch $WORK/done.$1; exit $2"; }
ja=$(q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"zone\": \"a\"}', command => \$c\$$(waiter a 0)\$c\$)")
jb=$(q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"zone\": \"a\"}', max_retries => 1, command => \$c\$$(waiter b 0)\$c\$)")
# c: the first copy waits and exits 7; a copy placed again runs on
jc=$(q "SELECT tide.submit('e2e', 'gpu=1', command => \$c\$[ -e $WORK/c.first ] && exec sleep 300; touch $WORK/c.first; $(waiter c 7)\$c\$)")
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb, $jc) AND state = 'running'" 3)" 3 "three jobs run on n1"
for _ in $(seq 50); do [ -e "$WORK/c.first" ] && break; sleep 0.1; done

kill -KILL "$L1"; wait "$L1" 2>/dev/null; LAUNCHER_PIDS=()
q "SELECT tide.register_node('n2', 'cpu=64, gpu=4')" >/dev/null
start_launcher n2 --grace-period 1
is "$(cycle_until_down n1)" down "n1's launcher gone: the cycle marks it down"
is "$(q "SELECT state FROM tide.jobs WHERE id = $ja")" pending "a (no retries) is requeued, and waits: only n1 is in zone a"
is "$(q "SELECT j.state || ' ' || r.state FROM tide.jobs j JOIN tide.jobs r ON r.retry_of = j.id WHERE j.id = $jb")" \
    "failed pending" "b failed and its retry waits"
is "$(wait_for "SELECT state || ' ' || (SELECT node FROM tide.allocations WHERE job_id = $jc AND state = 'running') FROM tide.jobs WHERE id = $jc" "running n2")" \
    "running n2" "c is placed again on n2 and runs there"

# meanwhile on n1, unreachable, all three finish
touch "$WORK/go.a" "$WORK/go.b" "$WORK/go.c"
for _ in $(seq 50); do [ -e "$WORK/done.a" ] && [ -e "$WORK/done.b" ] && [ -e "$WORK/done.c" ] && break; sleep 0.1; done
sleep 0.5
ev_c=$(q "SELECT count(*) FROM tide.job_events WHERE job_id = $jc")

start_launcher n1 --grace-period 1
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" succeeded 10)" succeeded \
    "n1 back: a, which finished there with 0 and was not placed again, is succeeded"
like "$(q "SELECT state_reason FROM tide.jobs WHERE id = $ja")" "exited 0 on node n1 while it was unreachable" "saying why"
is "$(q "SELECT old_state || '>' || new_state FROM tide.job_events WHERE job_id = $ja ORDER BY id DESC LIMIT 1")" \
    "pending>succeeded" "with a job_events row"
is "$(q "SELECT exit_code || ' ' || release_reason FROM tide.allocations WHERE job_id = $ja")" \
    "0 no heartbeat for more than 00:00:03; exited 0 after that (reported late)" "the exit is on its allocation"
is "$(wait_for "SELECT j.state || ' ' || r.state FROM tide.jobs j JOIN tide.jobs r ON r.retry_of = j.id WHERE j.id = $jb" "succeeded cancelled" 10)" \
    "succeeded cancelled" "b is succeeded and its retry, never placed, cancelled"
like "$(q "SELECT state_reason FROM tide.jobs WHERE retry_of = $jb")" "finished on node n1 while that node was unreachable" "saying why"
is "$(wait_for "SELECT exit_code FROM tide.allocations WHERE job_id = $jc AND node = 'n1'" 7 10)" 7 \
    "c's late exit (7) is recorded on its old allocation"
like "$(q "SELECT release_reason FROM tide.allocations WHERE job_id = $jc AND node = 'n1'")" "exited 7 after that \(reported late\)" "with a note"
is "$(q "SELECT state FROM tide.jobs WHERE id = $jc")" running "and changes nothing else: c runs on n2"
is "$(q "SELECT count(*) FROM tide.job_events WHERE job_id = $jc")" "$ev_c" "no event for c"
for x in a b; do
    is "$(wc -l < "$WORK/runs.$x" | tr -d ' ')" 1 "$x ran once"
done
finish
