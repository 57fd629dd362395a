#!/usr/bin/env bash
# The eviction grace period covers the whole process group, not only the
# command's shell: `sh -c 'python train.py'` ends at once on SIGTERM, but
# its child that traps SIGTERM to save a checkpoint keeps the rest of the
# grace period (the eviction is reported once it has ended), and one that
# ignores SIGTERM is killed when the grace period is over.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
start_launcher n1 --grace-period 4

# the shell waits for a child that saves a checkpoint (1 s) on SIGTERM
ja=$(submit 'gpu=1' "sh -c 'trap \"sleep 1; echo saved > $WORK/a.ckpt; exit 0\" TERM; echo \$\$ > $WORK/a.child; while :; do sleep 0.1; done' & wait")
place "$ja" n1 0
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" running)" running "a job whose child checkpoints on SIGTERM runs"
for _ in $(seq 50); do [ -s "$WORK/a.child" ] && break; sleep 0.1; done
q "SELECT tide.cancel($ja)" >/dev/null
is "$(wait_for "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $ja" released)" released \
    "the eviction completes"
is "$(cat "$WORK/a.ckpt" 2>/dev/null)" saved "the child saved its checkpoint although the shell ended at once"
alive "$(cat "$WORK/a.child")"
is "$?" 1 "and it is gone"
unlike_kill=$(grep -c "event=kill alloc=[0-9]* job=$ja " "$WORK/launcher-n1.log")
is "$unlike_kill" 0 "nothing needed SIGKILL"

# a child that ignores SIGTERM under a shell that does not: SIGKILL at the deadline
jb=$(submit 'gpu=1' "sh -c 'trap \"\" TERM; echo \$\$ > $WORK/b.child; while :; do sleep 0.1; done' & wait")
place "$jb" n1 1
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" running)" running "a job whose child ignores SIGTERM runs"
for _ in $(seq 50); do [ -s "$WORK/b.child" ] && break; sleep 0.1; done
q "SELECT tide.cancel($jb)" >/dev/null
is "$(wait_for "SELECT string_agg(state, ',') FROM tide.allocations WHERE job_id = $jb" released)" released \
    "the eviction completes"
like "$(cat "$WORK/launcher-n1.log")" "event=kill alloc=[0-9]+ job=$jb .*signal=KILL .*had ended" \
    "after SIGKILL to the rest of the group at the deadline"
alive "$(cat "$WORK/b.child")"
is "$?" 1 "the child is gone"
finish
