#!/usr/bin/env bash
# tide-launcher end to end: when the launcher itself cannot start a job's
# command (no command, a program that is not there or not executable, an
# output file that cannot be opened), the job fails with the launcher's
# reason in its state_reason; a program that exits 127 by itself keeps the
# plain message.  With the shepherd and with --no-shepherd.
. "$(dirname "$0")/lib.bash"

fresh_db
q "INSERT INTO tide.queues (name) VALUES ('e2e') ON CONFLICT DO NOTHING" >/dev/null
for n in n1 o1 d1; do
    q "SELECT tide.register_node('$n', 'cpu=64, memory=64Gi, gpu=8', labels => '{\"to\": \"$n\"}')" >/dev/null
done
mkdir -p "$WORK/out-o1"
start_launcher n1
start_launcher o1 --output-dir "$WORK/out-o1"
start_launcher d1 --no-shepherd

# Submit a job for NODE running COMMAND (empty: no command); prints its id.
submit_to() {
    q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"to\": \"$1\"}', command => NULLIF(\$cmd\$$2\$cmd\$, ''))"
}

# Wait until job JOB is failed; prints "exit_code|state_reason".
failed_with() {
    wait_for "SELECT state FROM tide.jobs WHERE id = $1" failed 30 >/dev/null
    q "SELECT exit_code || '|' || state_reason FROM tide.jobs WHERE id = $1 AND state = 'failed'"
}

printf '#!/bin/sh\nexit 0\n' > "$WORK/noexec.sh"
chmod 0644 "$WORK/noexec.sh"

j_none=$(submit_to n1 '')
j_missing=$(submit_to n1 'no-such-program-tide-e2e --epochs 3')
j_noexec=$(submit_to n1 "$WORK/noexec.sh")
j_own=$(submit_to n1 'exit 127')
j_inner=$(submit_to n1 'true; no-such-program-tide-e2e')
q "SELECT tide.run_cycle()" >/dev/null

is "$(failed_with "$j_none")" \
    "127|launcher on node n1 could not start replica 0 of role main: the job has no command (exit code 127)" \
    "a job with no command fails with the launcher's reason"
is "$(failed_with "$j_missing")" \
    "127|launcher on node n1 could not start replica 0 of role main: command \"no-such-program-tide-e2e\" not found (exit code 127)" \
    "a missing program: 127 and the launcher's reason names it"
is "$(failed_with "$j_noexec")" \
    "126|launcher on node n1 could not start replica 0 of role main: command \"$WORK/noexec.sh\" is not executable: Permission denied (exit code 126)" \
    "a program without execute permission: 126 and the reason"
is "$(failed_with "$j_own")" "127|replica 0 of role main exited with code 127 on node n1" \
    "a program that exits 127 by itself keeps the plain message"
is "$(failed_with "$j_inner")" "127|replica 0 of role main exited with code 127 on node n1" \
    "a program sh could not find later in the command: sh's 127, the plain message"
is "$(q "SELECT exit_reason FROM tide.allocations WHERE job_id = $j_missing")" \
    "command \"no-such-program-tide-e2e\" not found" "the reason is on the allocation too"
is "$(q "SELECT count(*) FROM tide.allocations WHERE job_id IN ($j_own, $j_inner) AND exit_reason IS NOT NULL")" 0 \
    "and none for the programs' own exits"
like "$(cat "$WORK/launcher-n1.log")" "event=not_started alloc=[0-9]+ job=$j_missing replica=0: command \"no-such-program-tide-e2e\" not found; reporting exit code 127" \
    "the launcher logs the same reason"

# an output directory that went away after the launcher started
rm -rf "$WORK/out-o1"
j_out=$(submit_to o1 'echo hello')
q "SELECT tide.run_cycle()" >/dev/null
got=$(failed_with "$j_out")
a_out=$(q "SELECT id FROM tide.allocations WHERE job_id = $j_out")
is "$got" \
    "126|launcher on node o1 could not start replica 0 of role main: cannot open output file $WORK/out-o1/job-$j_out-0-$a_out.log: No such file or directory (exit code 126)" \
    "an output file that cannot be opened: 126 and the reason names the file"

# --no-shepherd: the same reasons, from the launcher itself
j_dmissing=$(submit_to d1 'no-such-program-tide-e2e')
j_down=$(submit_to d1 'exit 127')
q "SELECT tide.run_cycle()" >/dev/null
is "$(failed_with "$j_dmissing")" \
    "127|launcher on node d1 could not start replica 0 of role main: command \"no-such-program-tide-e2e\" not found (exit code 127)" \
    "--no-shepherd: a missing program's reason"
is "$(failed_with "$j_down")" "127|replica 0 of role main exited with code 127 on node d1" \
    "--no-shepherd: a program's own 127 keeps the plain message"

# good work still runs on each node afterwards
j_ok=$(submit_to n1 'exit 0')
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j_ok" succeeded 30)" succeeded "the node runs good work afterwards"
finish
