#!/usr/bin/env bash
# R-T6, finished work is never run again, without a failover: the launcher
# is paused (SIGSTOP) while its job's command exits, an eviction is decided
# meanwhile, and the launcher is resumed.  It reports the exit with how long
# ago it happened, and the database counts it as the exit: a command that
# exited 0 leaves its job succeeded (not requeued, not cancelled, not run a
# second time); one that exited 3 fails its job as an exit does, with its
# retry.  A command that ends only because of the stop stays an eviction.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
start_launcher n1 --grace-period 2
L1=$LAST_LAUNCHER

# each run is counted in runs.X; each waits for go.X, then exits with CODE
waiter() { echo "echo run >> $WORK/runs.$1; while [ ! -e $WORK/go.$1 ]; do sleep 0.1; done; touch $WORK/done.$1; exit $2"; }
runs() { wc -l <"$WORK/runs.$1" 2>/dev/null | tr -d ' '; }

# Pause the launcher, let job X's command exit, run SQL (the eviction),
# note JOB's state in PAUSED_STATE, resume the launcher.
exit_while_paused() {
    local x=$1 job=$2 sql=$3
    kill -STOP "$L1"
    touch "$WORK/go.$x"
    for _ in $(seq 50); do [ -e "$WORK/done.$x" ] && break; sleep 0.1; done
    sleep 0.5                      # the shepherd has reaped it and recorded the exit
    q "$sql" >/dev/null
    PAUSED_STATE=$(q "SELECT state FROM tide.jobs WHERE id = $job")
    kill -CONT "$L1"
}

# ---- exit 0, then a cancel
ja=$(submit 'gpu=1' "$(waiter a 0)")
place "$ja" n1 '0'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" running)" running "a job runs"
exit_while_paused a "$ja" "SELECT tide.cancel($ja)"
is "$PAUSED_STATE" evicting "(while the launcher was paused, the cancel made it evicting)"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" succeeded)" succeeded \
    "resumed: its command had exited 0 before the cancel, so the job succeeded"
like "$(q "SELECT state_reason FROM tide.jobs WHERE id = $ja")" "before its stop was decided" "saying why"
is "$(q "SELECT release_reason || ' ' || exit_code || ' ' || (exited_at < release_decided_at) FROM tide.allocations WHERE job_id = $ja")" \
    "exited 0 true" "its allocation records the exit, before the decision"
like "$(cat "$WORK/launcher-n1.log")" "event=exited alloc=[0-9]+ job=$ja .*exit_code=0" "the launcher logs the exit"
q "SELECT tide.run_cycle()" >/dev/null
sleep 1
is "$(runs a)" 1 "its command ran once"
is "$(q "SELECT count(*) FROM tide.jobs WHERE retry_of = $ja OR (id = $ja AND state <> 'succeeded')")" 0 \
    "nothing runs it again"

# ---- exit 3, then an eviction by the cycle's path (tide._evict, goal requeue)
jb=$(q "SELECT tide.submit('e2e', 'gpu=1', max_retries => 1, command => \$c\$$(waiter b 3)\$c\$)")
place "$jb" n1 '1'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" running)" running "a second job runs"
exit_while_paused b "$jb" "SELECT tide._evict(ARRAY[$jb]::bigint[], ARRAY['evicted for job 0 of queue e2e (R-E3)'], ARRAY['requeue'])"
is "$PAUSED_STATE" evicting "(while the launcher was paused, the eviction made it evicting)"
is "$(wait_for "SELECT state || ' ' || exit_code FROM tide.jobs WHERE id = $jb" "failed 3")" "failed 3" \
    "resumed: its command had exited 3 before the eviction, so the job failed as an exit does"
like "$(q "SELECT state_reason FROM tide.jobs WHERE id = $jb")" "exited with code 3 on node n1, before its stop was decided" "saying why"
is "$(q "SELECT state FROM tide.jobs WHERE retry_of = $jb")" pending "with its retry (retries as usual), not a requeue"
is "$(runs b)" 1 "its command ran once so far"

# ---- exit 0 only because of the stop: an eviction
jc=$(submit 'gpu=1' "echo run >> $WORK/runs.c; trap 'exit 0' TERM; while :; do sleep 0.1; done")
place "$jc" n1 '2'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" running)" running "a third job runs"
for _ in $(seq 50); do [ -s "$WORK/runs.c" ] && break; sleep 0.1; done
q "SELECT tide.cancel($jc)" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" cancelled)" cancelled \
    "a command that exits 0 on the stop's SIGTERM: the job is cancelled (the exit came after the decision)"
finish
