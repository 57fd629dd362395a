#!/usr/bin/env bash
# R-C7 and R-C8 with real launchers: what a failover or a reboot leaves
# behind is mended at the next connect, and a GPU never runs two commands.
#  1. A node rebooted (launcher, shepherd, work and state directory gone)
#     within the node timeout: the database still has its work running.
#     The new launcher's first connect releases it (as lost: the job runs
#     again), instead of leaving it running forever.
#  2. The database gives a GPU to new work while the old command there is
#     still in its grace period (what a failover that lost the release
#     does): the launcher stops the old one and starts the new one only
#     once the old one has ended.
#  3. An allocation id handed out again for another job (what a failover
#     that lost allocations does): the launcher does not take the new
#     allocation for its running one (no "started" for a command that
#     never ran); it stops its own and then starts the new one.
# Every command (gpu_job.bash) holds a lock on each of its GPUs while it
# runs: a lock it cannot take is two commands on one GPU.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.retry_backoff = 0" >/dev/null
q "INSERT INTO tide.queues (name) VALUES ('e2e')" >/dev/null
: >"$WORK/events"
# submit NODE PRIORITY [TERM_DELAY]: a one-GPU job pinned to NODE
job() {
    q "SELECT tide.submit('e2e', 'gpu=1', priority => $2, node_selector => '{\"host\": \"$1\"}',
                          command => 'bash $TIDE_SRC/test/e2e/gpu_job.bash',
                          env => '{\"DIR\": \"$WORK\", \"TERM_DELAY\": \"${3:-0}\"}')"
}
for n in n1 n2 n3; do
    q "SELECT tide.register_node('$n', 'cpu=64, memory=256Gi, gpu=1', labels => '{\"host\": \"$n\"}')" >/dev/null
done
started() { awk -v j="$1" '$2 == "start" && $3 == j' "$WORK/events" | wc -l; }
ended_at() { awk -v j="$1" '$2 == "end" && $3 == j { print $1 }' "$WORK/events"; }
started_at() { awk -v j="$1" '$2 == "start" && $3 == j { print $1 }' "$WORK/events"; }

# ---------------------------------------------------------------- 1. a reboot
start_launcher n1
L1=$LAST_LAUNCHER
j1=$(job n1 0)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j1" running)" running "n1 runs job $j1"
a1=$(q "SELECT id FROM tide.allocations WHERE job_id = $j1")
# the machine goes away with everything on it, and comes back within the
# node timeout: a new launcher, an empty state directory
shep=$(sed -n 's/.*event=shepherd pid=\([0-9]*\).*/\1/p' "$WORK/launcher-n1.log" | head -1)
read -r p1 _ <"$WORK/state-n1/$a1.pid"
kill -KILL "$L1" ${shep:+"$shep"}; kill -KILL -- "-$p1"
wait "$L1" 2>/dev/null; LAUNCHER_PIDS=()
rm -rf "$WORK/state-n1"
is "$(q "SELECT state FROM tide.allocations WHERE id = $a1")" running "the database still counts allocation $a1 running"
start_launcher n1
is "$(wait_for "SELECT state FROM tide.allocations WHERE id = $a1" released 10)" released \
    "the new launcher's first connect releases it"
is "$(q "SELECT release_reason FROM tide.allocations WHERE id = $a1")" \
    "its launcher does not run it (reconciled when the launcher connected)" "with the reason"
like "$(cat "$WORK/launcher-n1.log")" "event=reconcile allocation $a1 of job $j1 was running on node n1 in the database, but its launcher does not run it" \
    "the launcher says so"
like "$(cat "$WORK/launcher-n1.log")" "event=reconcile known=0 stopped=0 released=1" "and sums it up"
is "$(cycle_until "SELECT count(*) FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
                   WHERE (j.id = $j1 OR j.retry_of = $j1) AND a.id <> $a1 AND a.state = 'running'" 1 20)" 1 \
    "the job (or its retry) runs again, in a new allocation"

# ---------------------------------------------------------------- 2. a GPU given away too early
start_launcher n2 --grace-period 10
jold=$(job n2 0 2)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jold" running)" running "n2 runs job $jold (it takes 2 s to stop)"
aold=$(q "SELECT id FROM tide.allocations WHERE job_id = $jold")
# the database forgets it (a failover lost it) and gives the GPU away
q "UPDATE tide.jobs SET on_evict = 'fail' WHERE id = $jold" >/dev/null
q "UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'lost in a failover (test)' WHERE id = $aold" >/dev/null
jnew=$(job n2 10)
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT gpus::text FROM tide.allocations WHERE job_id = $jnew")" "$(q "SELECT gpus::text FROM tide.allocations WHERE id = $aold")" \
    "the new job is placed on the same GPU"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jnew" running 15)" running "the new job runs"
like "$(cat "$WORK/launcher-n2.log")" "event=fence alloc=[0-9]+ job=$jnew replica=0 waits: GPU 0 is still held by alloc=$aold job=$jold" \
    "the launcher held it back while the old command held the GPU"
t_end=$(ended_at "$jold")
t_start=$(started_at "$jnew")
ok "$(awk -v e="${t_end:-9e18}" -v s="${t_start:-0}" 'BEGIN { print (s >= e) ? 0 : 1 }')" \
    "the new command started after the old one ended ($t_end, $t_start)"

# ---------------------------------------------------------------- 3. an id handed out again
start_launcher n3 --grace-period 10
jold3=$(job n3 0 1)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jold3" running)" running "n3 runs job $jold3"
x=$(q "SELECT id FROM tide.allocations WHERE job_id = $jold3")
# the failover lost allocation $x, and the new primary's sequence hands
# out $x again, to another job on the same GPU
q "UPDATE tide.jobs SET on_evict = 'fail' WHERE id = $jold3" >/dev/null
q "UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'lost in a failover (test)' WHERE id = $x" >/dev/null
q "UPDATE tide.allocations SET id = id + 1000000 WHERE id = $x" >/dev/null
q "SELECT setval('tide.allocations_id_seq', $x - 1)" >/dev/null
jnew3=$(job n3 10)
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT id FROM tide.allocations WHERE job_id = $jnew3")" "$x" "job $jnew3 gets allocation id $x again"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jnew3" running 15)" running "job $jnew3 runs"
is "$(started "$jnew3")" 1 "... its own command started (not taken for the one that ran under that id)"
like "$(cat "$WORK/launcher-n3.log")" "event=gone alloc=$x job=$jold3 replica=0 runs here, but" \
    "the old command under that id was stopped, and the launcher says why"
t_end=$(ended_at "$jold3")
t_start=$(started_at "$jnew3")
ok "$(awk -v e="${t_end:-9e18}" -v s="${t_start:-0}" 'BEGIN { print (s >= e) ? 0 : 1 }')" \
    "the new command started after the old one ended"
q "SELECT tide.cancel($jnew3)" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jnew3" cancelled 15)" cancelled "the new job can be cancelled"
is "$(ended_at "$jnew3" | wc -l)" 1 "... which stops its own command"

is "$(cat "$WORK/overlaps" 2>/dev/null)" "" "no GPU ran two commands at once"
finish
