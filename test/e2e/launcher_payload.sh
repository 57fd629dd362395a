#!/usr/bin/env bash
# A job's payload end to end: tide-launcher exports the job's env (values
# with blanks, quotes and newlines byte for byte, over the launcher's own
# variables), starts the command in its workdir, exports TIDE_ARRAY_ID and
# TIDE_ARRAY_INDEX to array members only, and fails a job whose workdir is
# missing with its own reason.  With the shepherd and with --no-shepherd.
. "$(dirname "$0")/lib.bash"

fresh_db
q "INSERT INTO tide.queues (name) VALUES ('e2e') ON CONFLICT DO NOTHING" >/dev/null
for n in n1 d1; do
    q "SELECT tide.register_node('$n', 'cpu=64, memory=64Gi, gpu=8', labels => '{\"to\": \"$n\"}')" >/dev/null
done
EPOCHS=1 start_launcher n1           # the launcher's own EPOCHS: the job's replaces it
start_launcher d1 --no-shepherd

# A job for NODE: COMMAND, ENV (jsonb), WORKDIR (empty: none), ARRAY_ID and
# ARRAY_INDEX (empty: none), inserted directly as a multi-role job would be;
# prints its id.
job_for() {
    q "INSERT INTO tide.jobs (queue, node_selector, command, env, workdir, array_id, array_index)
       VALUES ('e2e', '{\"to\": \"$1\"}', \$c\$$2\$c\$, \$e\$$3\$e\$, NULLIF('$4', ''), NULLIF('$5', '')::bigint, NULLIF('$6', '')::int);
       INSERT INTO tide.job_tasks (job_id, replicas, request) VALUES (currval('tide.jobs_id_seq'), 1, 'gpu=1');
       SELECT currval('tide.jobs_id_seq')"
}

# Print what a command sees into the file $1 (relative: in the workdir).
SHOW='{ pwd; printf "%s|" "$EPOCHS" "$NOTE" "${TIDE_ARRAY_ID-unset}" "${TIDE_ARRAY_INDEX-unset}" "$TIDE_JOB_ID"; } >'

# Two arrays to join (their own one member held, so it never runs).
A1=$(q "SELECT tide.submit_array('e2e', 'gpu=1', 1, hold => true)")
A2=$(q "SELECT tide.submit_array('e2e', 'gpu=1', 1, hold => true)")

for node in n1 d1; do
    mkdir -p "$WORK/run-$node" "$WORK/arr-$node"
    j_env=$(job_for $node "$SHOW seen" '{"EPOCHS": 10, "NOTE": "it'\''s \"a\"\nb c"}' "$WORK/run-$node" '' '')
    j_arr=$(job_for $node "$SHOW seen" '{}' "$WORK/arr-$node" "$A1" 3)
    j_gone=$(job_for $node "$SHOW seen" '{}' "$WORK/no-such-dir-$node" '' '')
    j_file=$(job_for $node "$SHOW seen" '{}' "$WORK/run-$node/seen-not-yet" '' '')
    q "SELECT tide.run_cycle()" >/dev/null
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j_env" succeeded 30)" succeeded "$node: a job with env and workdir succeeds"
    is "$(cat "$WORK/run-$node/seen" 2>&1)" "$WORK/run-$node
10|it's \"a\"
b c|unset|unset|$j_env|" "$node: it ran in its workdir with its env (over the launcher's EPOCHS), byte for byte, and no TIDE_ARRAY_*"
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j_arr" succeeded 30)" succeeded "$node: an array member succeeds"
    own=$([ $node = n1 ] && echo 1)      # the launcher's own EPOCHS, inherited when the job sets none
    is "$(sed -n 2p "$WORK/arr-$node/seen" 2>&1)" "$own||$A1|3|$j_arr|" "$node: an array member sees TIDE_ARRAY_ID and TIDE_ARRAY_INDEX (and the launcher's variables)"
    is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j_gone" failed 30)" failed "$node: a job whose workdir is missing fails"
    is "$(q "SELECT exit_code || '|' || state_reason FROM tide.jobs WHERE id = $j_gone")" \
        "126|launcher on node $node could not start replica 0 of role main: workdir $WORK/no-such-dir-$node does not exist (exit code 126)" \
        "$node: ... with the launcher's reason in state_reason"
    wait_for "SELECT state FROM tide.jobs WHERE id = $j_file" failed 30 >/dev/null
    like "$(q "SELECT state_reason FROM tide.jobs WHERE id = $j_file")" \
        "workdir $WORK/run-$node/seen-not-yet does not exist|is not a directory" "$node: a workdir that is no directory fails the job too"
done
like "$(cat "$WORK/launcher-n1.log")" "event=not_started alloc=[0-9]+ job=[0-9]+ replica=0: workdir $WORK/no-such-dir-n1 does not exist; reporting exit code 126" \
    "the launcher logs the reason"

# A retry runs with the same payload.
mkdir -p "$WORK/retry"
j_try=$(job_for n1 "$SHOW seen-\$TIDE_JOB_ID; [ -e first ] || { touch first; exit 1; }" '{"NOTE": "again"}' "$WORK/retry" "$A2" 0)
q "UPDATE tide.jobs SET max_retries = 1 WHERE id = $j_try" >/dev/null
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j_try" failed 30)" failed "a job that fails once ..."
# (its retry's backoff, R-T5, cut short: the cycle lets it in at once)
q "UPDATE tide.jobs SET begin_at = now() WHERE retry_of = $j_try" >/dev/null
for _ in $(seq 40); do
    q "SELECT tide.run_cycle()" >/dev/null
    [ "$(q "SELECT state FROM tide.jobs WHERE retry_of = $j_try")" = succeeded ] && break
    sleep 0.25
done
r_try=$(q "SELECT id FROM tide.jobs WHERE retry_of = $j_try")
is "$(q "SELECT state FROM tide.jobs WHERE id = $r_try")" succeeded "... is retried, and the retry succeeds"
is "$(sed -n 2p "$WORK/retry/seen-$r_try" 2>&1)" "1|again|$A2|0|$r_try|" "the retry ran in the same workdir with the same env and array index"

finish
