#!/usr/bin/env bash
# Time limits end to end (R-T1): the database stops a job at its limit
# through the eviction path, whatever its launcher does.  A job with a 3 s
# limit whose shell traps SIGTERM is stopped by a real launcher, ends
# failed with the time-limit reason and is not retried (max_retries 2);
# and the same when its launcher is stopped before the limit and started
# again after it: the cycle decides alone, the new launcher carries it out.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
start_launcher n1 --grace-period 2


limited() {
    q "SELECT tide.submit('e2e', 'gpu=1', time_limit => '3 seconds', max_retries => 2,
                          command => \$c\$echo \$\$ > $WORK/$1.pid; trap 'echo TERM > $WORK/$1.term; exit 143' TERM; sleep 300 & wait\$c\$)"
}

# 1. the launcher runs throughout
ja=$(limited a)
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $ja" running)" running "a job with a 3 s limit runs"
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $ja" failed 30)" failed "it is stopped at its limit and fails"
is "$(q "SELECT state_reason FROM tide.jobs WHERE id = $ja")" "time limit 00:00:03 reached" \
    "its state_reason names the limit"
is "$(cat "$WORK/a.term" 2>/dev/null)" TERM "its shell saw SIGTERM"
ran=$(q "SELECT extract(epoch FROM finished_at - started_at)::numeric(6,1) FROM tide.jobs WHERE id = $ja")
is "$(q "SELECT $ran >= 3 AND $ran < 15")" t "it ran its 3 s and was stopped soon after (${ran} s)"
is "$(q "SELECT reason FROM tide.evictions WHERE job_id = $ja")" "time limit 00:00:03 reached" "through an eviction"
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT count(*) FROM tide.jobs WHERE retry_of = $ja")" 0 "not retried, although max_retries is 2"
alive "$(cat "$WORK/a.pid" 2>/dev/null || echo 999999)"
is "$?" 1 "its process is gone"

# 2. the launcher is stopped before the limit and started after it
jb=$(limited b)
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $jb" running)" running "another limited job runs"
kill -TERM "$LAST_LAUNCHER"
wait "$LAST_LAUNCHER" 2>/dev/null
LAUNCHER_PIDS=()
is "$(cycle_until "SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = $jb" "evicting | time limit 00:00:03 reached" 30)" \
    "evicting | time limit 00:00:03 reached" "with no launcher, the cycle stops it at its limit all the same"
alive "$(cat "$WORK/b.pid" 2>/dev/null || echo 999999)"
is "$?" 0 "its process still runs while no launcher does"
start_launcher n1 --grace-period 2
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $jb" failed 30)" failed "the new launcher stops it; it fails"
is "$(q "SELECT state_reason FROM tide.jobs WHERE id = $jb")" "time limit 00:00:03 reached" "with the time-limit reason"
is "$(cat "$WORK/b.term" 2>/dev/null)" TERM "its shell saw SIGTERM"
is "$(q "SELECT count(*) FROM tide.jobs WHERE retry_of = $jb")" 0 "not retried"

# 3. the GPUs are free for the next job
jc=$(submit 'gpu=4' "echo \"\$CUDA_VISIBLE_DEVICES\" > $WORK/c.out")
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $jc" succeeded)" succeeded "the next job gets every GPU"
finish
