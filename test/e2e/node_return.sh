#!/usr/bin/env bash
# A node the cycle lost returns as it was at its launcher's next heartbeat:
# a draining node is draining again, a ready node ready, at once.  A node
# an administrator set down stays down whatever its launcher says, until
# tide.resume_node; the launcher logs each change of its node's state.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.node_timeout = 3" >/dev/null
setup_cluster n1 2

start_launcher n1
L=$LAST_LAUNCHER
is "$(wait_for "SELECT heartbeat_at IS NOT NULL FROM tide.nodes WHERE name = 'n1'" t)" t "the launcher heartbeats"
is "$(q "SELECT tide.drain_node('n1')")" draining "n1 is drained"
kill -KILL "$L"; wait "$L" 2>/dev/null; LAUNCHER_PIDS=()
is "$(cycle_until_down n1)" down "its launcher gone, the cycle marks it down"
is "$(q "SELECT down_reason || ' ' || state_before_down FROM tide.nodes WHERE name = 'n1'")" "lost draining" \
    "lost, and it was draining"

start_launcher n1
L=$LAST_LAUNCHER
is "$(wait_for "SELECT state FROM tide.nodes WHERE name = 'n1'" draining 5)" draining \
    "its launcher back, it is draining again within a heartbeat"
is "$(q "SELECT down_reason IS NULL AND state_before_down IS NULL FROM tide.nodes WHERE name = 'n1'")" t "nothing of down is left"
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT state FROM tide.nodes WHERE name = 'n1'")" draining "and the next cycle leaves it draining"
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=draining" "the launcher logs its node's state"

# lost while ready: back to ready; resume_node of a lost draining node keeps it draining
q "SELECT tide.resume_node('n1')" >/dev/null
kill -KILL "$L"; wait "$L" 2>/dev/null; LAUNCHER_PIDS=()
is "$(cycle_until_down n1)" down "lost again, while ready"
start_launcher n1
L=$LAST_LAUNCHER
is "$(wait_for "SELECT state FROM tide.nodes WHERE name = 'n1'" ready 5)" ready "back to ready at its first heartbeat"

# an administrator's down is not undone by heartbeats
q "UPDATE tide.nodes SET state = 'down' WHERE name = 'n1'" >/dev/null
is "$(q "SELECT down_reason || ' ' || state_before_down FROM tide.nodes WHERE name = 'n1'")" "admin ready" \
    "an administrator sets it down"
sleep 3
is "$(q "SELECT state FROM tide.nodes WHERE name = 'n1'")" down "heartbeats do not bring it back"
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=down \(was ready\)" "the launcher logs that it is down"
is "$(q "SELECT tide.resume_node('n1')")" ready "tide.resume_node does"
sleep 1.5
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=ready \(was down\)" "the launcher logs that it is ready again"

# resume_node of a node lost while draining returns it to draining
q "SELECT tide.drain_node('n1')" >/dev/null
kill -KILL "$L"; wait "$L" 2>/dev/null; LAUNCHER_PIDS=()
is "$(cycle_until_down n1)" down "lost while draining"
is "$(q "SELECT tide.resume_node('n1')")" draining "tide.resume_node brings it back draining, as it was"
finish
