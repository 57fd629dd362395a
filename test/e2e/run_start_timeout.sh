#!/usr/bin/env bash
# Starts that never happen (R-T4), end to end.  A node whose allocations
# are claimed but never started (the test plays a launcher that claims
# and confirms evictions, never tide.started): after tide.start_timeout the
# job goes back to pending, after tide.start_attempts it fails.  And a gang
# with one replica on a node whose launcher never starts it: a real
# launcher's replica is stopped and its GPUs freed, not held.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.start_timeout = 2" >/dev/null
q "ALTER DATABASE $DB SET tide.start_attempts = 2" >/dev/null
setup_cluster n1 4

cycle() { q "SELECT tide.run_cycle()" >/dev/null; }
# the stuck launcher: claims, confirms evictions, never starts anything
claim() { q "SELECT count(*) FROM tide.claim('$1')"; }
confirm() { q "SELECT count(tide.evicted(a.id)) FROM tide.claim_evictions('$1') a"; }

j=$(q "SELECT tide.submit('e2e', 'gpu=1', max_retries => 1, command => 'true')")
cycle
is "$(claim n1)" 1 "the job is placed and its allocation claimed"
is "$(q "SELECT state FROM tide.jobs WHERE id = $j")" allocated "it stays allocated: nothing starts it"
is "$(cycle_until "SELECT state || ' ' || evict_goal FROM tide.jobs WHERE id = $j" "evicting requeue" 15)" "evicting requeue" \
    "after tide.start_timeout (2 s) the cycle releases it"
is "$(confirm n1)" 1 "the launcher confirms"
is "$(q "SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = $j")" \
    "pending | requeued after eviction: start timeout 00:00:02 reached before all replicas were running (1 of 2)" \
    "it is pending again, the reason naming the timeout"
cycle
is "$(claim n1)" 1 "placed again (no other node), claimed again"
is "$(cycle_until "SELECT state || ' ' || evict_goal FROM tide.jobs WHERE id = $j" "evicting fail" 15)" "evicting fail" \
    "the second timeout is the last (tide.start_attempts = 2)"
confirm n1 >/dev/null
is "$(q "SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = $j")" \
    "failed | start timeout 00:00:02 reached before all replicas were running, 2 of 2 times (tide.start_attempts)" \
    "it fails with the reason"
cycle
is "$(q "SELECT count(*) FROM tide.jobs WHERE retry_of = $j")" 0 "and is not retried"

# A gang over n1 (a real launcher) and n2 (no launcher ever starts its
# replica): n1's replica runs, then is stopped at the timeout, its GPUs freed.
q "ALTER DATABASE $DB SET tide.node_timeout = 6" >/dev/null
q "SELECT tide.register_node('n2', 'cpu=64, memory=256Gi, gpu=4')" >/dev/null
q "SELECT tide.heartbeat('n2')" >/dev/null
start_launcher n1 --grace-period 1
g=$(q "SELECT tide.submit('e2e', 'gpu=4', replicas => 2, max_retries => 1,
                          command => \$c\$trap 'echo TERM > $WORK/g.term; exit 143' TERM; sleep 300 & wait\$c\$)")
cycle
is "$(q "SELECT string_agg(node, ',' ORDER BY node) FROM tide.allocations WHERE job_id = $g")" "n1,n2" "the gang is placed on n1 and n2"
is "$(wait_for "SELECT state FROM tide.allocations WHERE job_id = $g AND node = 'n1'" running)" running \
    "n1's launcher starts its replica"
is "$(q "SELECT state FROM tide.jobs WHERE id = $g")" allocated "the job waits for n2's replica"
is "$(cycle_until "SELECT state FROM tide.allocations WHERE job_id = $g AND node = 'n1'" released 15)" released \
    "after the timeout n1's running replica is stopped and released"
is "$(cat "$WORK/g.term" 2>/dev/null)" TERM "with SIGTERM"
is "$(q "SELECT tide.gpu_count(free_gpus) FROM tide.node_usage WHERE node = 'n1'")" 4 "n1's GPUs are free for others"
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $g" pending 20)" pending \
    "once n2 is lost (its replica released) the gang is pending again"
is "$(q "SELECT start_timeouts FROM tide.jobs WHERE id = $g")" 1 "one start timeout counted"
finish
