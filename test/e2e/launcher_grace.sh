#!/usr/bin/env bash
# R-T3, the grace period of each job: between SIGTERM and SIGKILL a stopped
# job has its own grace_period, not the launcher's --grace-period, whoever
# does the killing: the shepherd (work it started) or the launcher (work
# adopted from an earlier launcher).  The stop here is tide.cancel; the
# cycle's evictions and the time limit use the same path.  A job without a
# grace_period gets the launcher's.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
start_launcher n1 --grace-period 30
L1=$LAST_LAUNCHER

# a command that notes SIGTERM in term.X and goes on
ignorer() { echo "echo \$\$ > $WORK/pid.$1; trap 'echo TERM >> $WORK/term.$1' TERM; while :; do sleep 0.1; done"; }
# submit with grace_period GRACE seconds (NULL: none)
job() {
    local j
    j=$(submit 'gpu=1' "$(ignorer "$1")")
    [ "$2" = NULL ] || q "UPDATE tide.jobs SET grace_period = '$2 s' WHERE id = $j" >/dev/null
    echo "$j"
}
# cancel JOB and print how many seconds its allocation took to be released
stop_time() {
    local t0 t1
    t0=$(date +%s.%N)
    q "SELECT tide.cancel($1)" >/dev/null
    wait_for "SELECT state FROM tide.allocations WHERE job_id = $1" released 40 >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

ja=$(job a 1)
jb=$(job b 0)
jc=$(job c NULL)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb, $jc) AND state = 'running'" 3)" 3 "three jobs that ignore SIGTERM run"
for x in a b c; do for _ in $(seq 50); do [ -s "$WORK/pid.$x" ] && break; sleep 0.1; done; done

# ---- the shepherd kills
t=$(stop_time "$ja")
between "$t" 0.9 4; ok $? "grace_period 1 s (the launcher's is 30 s): SIGKILL after about a second (released after $t s)"
is "$(cat "$WORK/term.a" 2>/dev/null)" TERM "after its SIGTERM"
like "$(cat "$WORK/launcher-n1.log")" "event=evict alloc=[0-9]+ job=$ja .*signal=TERM grace=1s" "the launcher logs the job's grace"
like "$(cat "$WORK/launcher-n1.log")" "event=kill alloc=[0-9]+ job=$ja .*signal=KILL" "and the SIGKILL"
alive "$(cat "$WORK/pid.a")"
is "$?" 1 "its process is gone"
t=$(stop_time "$jb")
between "$t" 0 2.5; ok $? "grace_period 0: SIGKILL at once (released after $t s)"
is "$(q "SELECT state FROM tide.jobs WHERE id = $ja")|$(q "SELECT state FROM tide.jobs WHERE id = $jb")" "cancelled|cancelled" "both are cancelled"

# ---- the launcher kills (adopted work), with the job's grace
jd=$(job d 1)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jd" running)" running "a fourth job runs"
for _ in $(seq 50); do [ -s "$WORK/pid.d" ] && break; sleep 0.1; done
kill "$L1"; wait "$L1" 2>/dev/null; LAUNCHER_PIDS=()
start_launcher n1 --grace-period 30
for _ in $(seq 50); do grep -q "event=adopt .*job=$jd " "$WORK/launcher-n1.log" && break; sleep 0.1; done
t=$(stop_time "$jd")
between "$t" 0.9 4; ok $? "adopted by a new launcher: its grace_period of 1 s still holds (released after $t s)"
like "$(grep "job=$jd " "$WORK/launcher-n1.log" | grep "event=evict")" "grace=1s" "the new launcher logs the job's grace"

# ---- no grace_period: the launcher's
q "UPDATE tide.jobs SET grace_period = NULL WHERE id = $jc" >/dev/null
q "SELECT tide.cancel($jc)" >/dev/null
for _ in $(seq 50); do grep -q "event=evict .*job=$jc .*grace=" "$WORK/launcher-n1.log" && break; sleep 0.1; done
like "$(grep "event=evict .*job=$jc " "$WORK/launcher-n1.log")" "grace=30s" "a job without a grace_period: the launcher's --grace-period"
is "$(q "SELECT state FROM tide.allocations WHERE job_id = $jc")" releasing "(still in its grace period)"
kill -KILL -- "-$(cat "$WORK/pid.c")" 2>/dev/null
finish
