#!/usr/bin/env bash
# tide-launcher --no-listen (for a connection through a transaction pooler,
# which cannot carry LISTEN): the launcher says so, never LISTENs, and still
# claims and runs its node's work at every --poll-interval.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster p1 2
setup_cluster l1 2
q "UPDATE tide.nodes SET labels = jsonb_build_object('to', name) WHERE name IN ('p1', 'l1')" >/dev/null
start_launcher p1 --no-listen
start_launcher l1
wait_for "SELECT count(*) FROM tide.nodes WHERE name IN ('p1', 'l1') AND heartbeat_at IS NOT NULL" 2 >/dev/null

log_p1=$WORK/launcher-p1.log
log_l1=$WORK/launcher-l1.log
for _ in $(seq 50); do grep -q 'event=connected' "$log_p1" "$log_l1" 2>/dev/null && break; sleep 0.1; done
like "$(grep 'event=start' "$log_p1")" "no_listen" "--no-listen: the start line names the option"
like "$(grep 'event=connected' "$log_p1")" "channel=none" "--no-listen: connected without a channel"
like "$(grep 'event=connected' "$log_l1")" "channel=tide" "default: connected and listening on the node's channel"

j1=$(q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"to\": \"p1\"}', command => 'echo polled > $WORK/p1.out')")
j2=$(q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"to\": \"l1\"}', command => 'echo woken > $WORK/l1.out')")
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j1" succeeded 20)" succeeded \
   "--no-listen: the job placed on its node is claimed by polling and succeeds"
is "$(cat "$WORK/p1.out" 2>/dev/null)" polled "--no-listen: the command ran once, on its node"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j2" succeeded 20)" succeeded \
   "default: the listening launcher's job succeeds too"
is "$(q "SELECT count(*) FROM tide.allocations WHERE job_id = $j1 AND node = 'p1' AND started_at IS NOT NULL")" 1 \
   "--no-listen: one started allocation"
out=$("$LAUNCHER" --node p1 --no-listen --frobnicate 2>&1); st=$?
is "$st" 2 "--no-listen with a bad option still exits 2"
like "$("$LAUNCHER" --help 2>&1)" "--no-listen" "--help documents --no-listen"

finish
