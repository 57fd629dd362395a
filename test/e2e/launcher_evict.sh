#!/usr/bin/env bash
# Evictions end to end: stopping a job's allocation sends SIGTERM to its
# whole process group; work that ignores SIGTERM gets SIGKILL after the
# grace period; then the launcher reports tide.evicted and the GPUs are
# free.  The stop is asked for with tide.cancel (the eviction path that
# needs no competing job); the cycle's preemptions use the same path.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
start_launcher n1 --grace-period 1

# a job that handles SIGTERM and has a child in its group
ja=$(submit 'gpu=2' "echo \$\$ > $WORK/a.pid; trap 'echo TERM > $WORK/a.term; exit 143' TERM; sleep 300 & echo \$! > $WORK/a.child; wait")
place "$ja" n1 '0-1'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" running)" running "a sleeping job runs"
for _ in $(seq 50); do [ -s "$WORK/a.child" ] && break; sleep 0.1; done
child=$(cat "$WORK/a.child" 2>/dev/null)
q "SELECT tide.cancel($ja)" >/dev/null
is "$(wait_for "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $ja" released)" released \
    "cancelling it stops its allocation (evicted, released)"
is "$(cat "$WORK/a.term" 2>/dev/null)" TERM "the command saw SIGTERM"
alive "${child:-999999}"
is "$?" 1 "its child in the same process group is gone too"
is "$(job_state "$ja")" cancelled "the job is cancelled"
like "$(cat "$WORK/launcher-n1.log")" "event=evict alloc=[0-9]+ job=$ja .*signal=TERM" "the launcher logs the eviction"

# a job that ignores SIGTERM: SIGKILL after the grace period
jb=$(submit 'gpu=2' "trap '' TERM; echo \$\$ > $WORK/b.pid; while :; do sleep 0.2; done")
place "$jb" n1 '2-3'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" running)" running "a job that ignores SIGTERM runs"
for _ in $(seq 50); do [ -s "$WORK/b.pid" ] && break; sleep 0.1; done
bpid=$(cat "$WORK/b.pid" 2>/dev/null)
q "SELECT tide.cancel($jb)" >/dev/null
is "$(wait_for "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $jb" released)" released \
    "it is stopped anyway"
like "$(cat "$WORK/launcher-n1.log")" "event=kill alloc=[0-9]+ job=$jb .*signal=KILL" "by SIGKILL after the grace period"
alive "${bpid:-999999}"
is "$?" 1 "its process is gone"

# after both, all four GPUs can be used again
jc=$(submit 'gpu=4' "echo \"\$CUDA_VISIBLE_DEVICES\" > $WORK/c.out")
place "$jc" n1 '0-3'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" succeeded)" succeeded "the freed GPUs run the next job"
is "$(cat "$WORK/c.out" 2>/dev/null)" "0,1,2,3" "on all four GPUs"
# a gang: the first non-zero exit fails the job and the other replica is stopped
jg=$(q "SELECT tide.submit('e2e', 'gpu=1', replicas => 2,
                           command => \$c\$if [ \"\$TIDE_REPLICA\" = 0 ]; then
                               while [ ! -e $WORK/g.go ]; do sleep 0.1; done; exit 3
                           fi
                           trap 'echo TERM > $WORK/g.term; exit 143' TERM; sleep 300 & wait\$c\$)")
place "$jg" n1 '0|1'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jg" running)" running "a gang of two runs"
touch "$WORK/g.go"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jg" failed)" failed "replica 0 exits 3: the job fails"
is "$(wait_for "SELECT string_agg(coalesce(exit_code::text, '-') || ':' || state, ',' ORDER BY replica) FROM tide.allocations WHERE job_id = $jg" "3:released,-:released")" \
    "3:released,-:released" "the other replica is stopped and released"
is "$(cat "$WORK/g.term" 2>/dev/null)" TERM "with SIGTERM"
finish
