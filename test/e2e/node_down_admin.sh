#!/usr/bin/env bash
# An administrator takes a node out now (tide.down_node, R-C3): the job
# running there is released at once, its launcher stops the process, and
# the job's retry runs on another node.  A plain UPDATE of the node's state
# to down does the same.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 1
setup_cluster n2 1
start_launcher n1 --grace-period 1
start_launcher n2 --grace-period 1
q "UPDATE tide.nodes SET state = 'draining' WHERE name = 'n2'" >/dev/null
j=$(q "SELECT tide.submit('e2e', 'gpu=1', max_retries => 1, command => \$c\$echo \$\$ > $WORK/pid.\$TIDE_ALLOCATION_ID; exec sleep 300\$c\$)")
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j" running)" running "the job runs on n1"
a1=$(q "SELECT id FROM tide.allocations WHERE job_id = $j")
for _ in $(seq 50); do [ -s "$WORK/pid.$a1" ] && break; sleep 0.1; done
p1=$(cat "$WORK/pid.$a1")
alive "$p1"
is "$?" 0 "its process is alive"

q "SELECT tide.resume_node('n2')" >/dev/null
is "$(q "SELECT tide.down_node('n1', 'ECC errors')")" down "tide.down_node takes n1 down"
is "$(q "SELECT state || ': ' || release_reason FROM tide.allocations WHERE id = $a1")" "released: node taken down: ECC errors" \
    "the allocation is released at once, with the reason"
for _ in $(seq 100); do alive "$p1" || break; sleep 0.1; done
alive "$p1"
is "$?" 1 "n1's launcher stops the process"
q "SELECT tide.run_cycle()" >/dev/null
r=$(q "SELECT id FROM tide.jobs WHERE retry_of = $j")
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $r" running)" running "the retry runs ..."
is "$(q "SELECT node FROM tide.allocations WHERE job_id = $r AND state <> 'released'")" n2 "... on n2"
sleep 1
is "$(q "SELECT state FROM tide.nodes WHERE name = 'n1'")" down "n1 stays down while its launcher heartbeats"

# the same by a plain UPDATE, on n2
a2=$(q "SELECT id FROM tide.allocations WHERE job_id = $r")
for _ in $(seq 50); do [ -s "$WORK/pid.$a2" ] && break; sleep 0.1; done
p2=$(cat "$WORK/pid.$a2")
q "UPDATE tide.nodes SET state = 'down' WHERE name = 'n2'" >/dev/null
is "$(q "SELECT state FROM tide.allocations WHERE id = $a2")" released "UPDATE ... SET state = 'down' releases the work too"
for _ in $(seq 100); do alive "$p2" || break; sleep 0.1; done
alive "$p2"
is "$?" 1 "and n2's launcher stops it"
is "$(q "SELECT state FROM tide.jobs WHERE id = $r")" pending "the retry, without retries left, is requeued (on_evict requeue)"
finish
