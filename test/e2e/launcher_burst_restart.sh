#!/usr/bin/env bash
# A launcher killed in the middle of a burst of starts loses nothing and
# starts nothing twice: what its shepherd had started is adopted (exit
# codes recorded by the shepherd while no launcher ran), what it had been
# asked to start but had not is left for the next launcher (the shepherd
# starts nothing for a launcher that is gone), and every allocation reports
# its command's real exit code.  Where in the burst the kill lands varies
# from run to run; what is asserted holds wherever it lands.
. "$(dirname "$0")/lib.bash"

N=600
fresh_db
if ! has_run_cycle; then
    for i in 1 2 3 4 5 6; do skip "needs tide.run_cycle()"; done
    finish
fi
q "INSERT INTO tide.queues (name) VALUES ('e2e')" >/dev/null
q "SELECT tide.register_node('b1', 'cpu=$N, memory=1Ti')" >/dev/null
# each run appends its allocation id; the exit code is the id modulo 7
q "SELECT count(tide.submit('e2e', 'cpu=1', command =>
       \$c\$echo \$TIDE_ALLOCATION_ID >> $WORK/runs; sleep 0.3; exit \$((TIDE_ALLOCATION_ID % 7))\$c\$))
     FROM generate_series(1, $N)" >/dev/null
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT count(*) FROM tide.allocations WHERE node = 'b1'")" "$N" "$N allocations placed on one node"

start_launcher b1 --quiet
L1=$LAST_LAUNCHER
# kill it once a quarter of the commands run: the burst is under way
for _ in $(seq 500); do
    [ "$(cat "$WORK/runs" 2>/dev/null | wc -l)" -ge $((N / 4)) ] && break
    sleep 0.01
done
kill -KILL "$L1"
wait "$L1" 2>/dev/null
LAUNCHER_PIDS=()
started_before=$(sort -u "$WORK/runs" 2>/dev/null | wc -l)
echo "# $started_before of $N commands had started when the launcher was killed"

start_launcher b1 --quiet
is "$(wait_for "SELECT count(*) FROM tide.allocations WHERE state = 'released'" "$N" 90)" "$N" \
    "the next launcher finishes the burst: every allocation is released"
is "$(wc -l < "$WORK/runs" | tr -d ' ')" "$N" "$N commands ran"
is "$(sort -u "$WORK/runs" | wc -l | tr -d ' ')" "$N" "each allocation's command ran exactly once"
is "$(q "SELECT count(*) FROM tide.allocations WHERE exit_code = id % 7")" "$N" \
    "every allocation reports its command's own exit code"
is "$(q "SELECT count(*) FROM tide.allocations WHERE exit_code = 137")" 0 "none is reported lost (137)"
finish
