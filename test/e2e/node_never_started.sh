#!/usr/bin/env bash
# A registered node whose launcher never started is timed out too, counted
# from its registration (heartbeat_at NULL): work placed there does not wait
# forever in allocated, it is placed again on a node with a launcher.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.node_timeout = 3" >/dev/null
q "INSERT INTO tide.queues (name) VALUES ('e2e')" >/dev/null
q "SELECT tide.register_node('n1', 'cpu=8, gpu=1')" >/dev/null
j=$(submit 'gpu=1' "exit 0")
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT state || ' on ' || (SELECT node FROM tide.allocations WHERE job_id = $j) FROM tide.jobs WHERE id = $j")" \
    "allocated on n1" "the job is placed on n1, whose launcher never starts"

q "SELECT tide.register_node('n2', 'cpu=8, gpu=1')" >/dev/null
start_launcher n2
# n1 goes down once 3 s have passed since its registration
is "$(cycle_until_down n1)" down "n1, never heard from, is marked down after tide.node_timeout"
is "$(q "SELECT down_reason FROM tide.nodes WHERE name = 'n1'")" lost "as lost"
like "$(q "SELECT release_reason FROM tide.allocations WHERE job_id = $j AND node = 'n1'")" \
    "^no heartbeat since it was registered" "its allocation is released, saying why"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j" succeeded 15)" succeeded \
    "the job is placed again on n2, whose launcher runs it"
is "$(q "SELECT state FROM tide.nodes WHERE name = 'n2'")" ready "n2, which heartbeats, stays ready"
finish
