#!/usr/bin/env bash
# What a launcher finds in its state directory, it trusts only as far as
# the records prove:
#   - a recorded pid that now names another process (started after the
#     record, or long before it), or a record of another boot, is reported
#     lost (137) and that process (and its group) is NOT signalled;
#   - an empty record whose creator still holds its lock (a shepherd of an
#     earlier launcher between recording and starting) makes the launcher
#     wait instead of starting the allocation a second time, and adopt it
#     once the record is complete;
#   - an empty record nobody holds (its shepherd died) is removed and the
#     allocation started.
# The records are written by the test, as an earlier launcher would have.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 8
SD=$WORK/state-n1
mkdir -p -m 700 "$SD"
HZ=$(getconf CLK_TCK)
BOOT=$(cat /proc/sys/kernel/random/boot_id)
starttime() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }
alloc_of() { q "SELECT id FROM tide.allocations WHERE job_id = $1"; }

# unrelated processes, each the leader of its own group (as a command is)
strangers=()
for i in 1 2 3 4; do
    setsid sleep 300 &
    strangers+=($!)
done
at_exit "kill -KILL ${strangers[*]}"
for _ in $(seq 50); do
    [ "$(ps -o pgid= -p "${strangers[3]}" | tr -d ' ')" = "${strangers[3]}" ] && break
    sleep 0.1
done

# placed while no launcher runs: assigned, to be claimed
jobs=()
for x in a b c d e; do
    j=$(submit 'gpu=1' "echo \$TIDE_ALLOCATION_ID >> $WORK/runs.$x; sleep 0.5")
    place "$j" n1 0
    jobs+=("$j")
done
is "$(q "SELECT count(*) FROM tide.allocations WHERE job_id IN ($(IFS=,; echo "${jobs[*]}")) AND state = 'assigned'")" 5 \
    "five allocations wait for the launcher"
ja=${jobs[0]} jb=${jobs[1]} jc=${jobs[2]} jd=${jobs[3]} je=${jobs[4]}
s1=${strangers[0]} s2=${strangers[1]} s3=${strangers[2]} s4=${strangers[3]}

# a: the pid was reused: the process there started after the record
echo "$s1 $(( $(starttime "$s1") - 2 * HZ )) $ja 0 $BOOT" >"$SD/$(alloc_of "$ja").pid"
# b: the process there started a minute before the record (one-sided checks
# took any earlier process for ours)
echo "$s2 $(( $(starttime "$s2") + 60 * HZ )) $jb 0 $BOOT" >"$SD/$(alloc_of "$jb").pid"
# c: the start time matches, but the record is of another boot
echo "$s3 $(starttime "$s3") $jc 0 00000000-0000-4000-8000-000000000000" >"$SD/$(alloc_of "$jc").pid"
# d: an empty record, held (locked) by its creator, not young
dfile=$SD/$(alloc_of "$jd").pid
: >"$dfile"
touch -d '1 minute ago' "$dfile"
flock "$dfile" sleep 300 &
holder=$!
at_exit "kill $holder"
# e: an empty record nobody holds: its shepherd died before starting it
efile=$SD/$(alloc_of "$je").pid
: >"$efile"
touch -d '1 minute ago' "$efile"

start_launcher n1 --grace-period 1
for x in a b c; do
    j=$(eval echo "\$j$x")
    is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $j) FROM tide.jobs WHERE id = $j" "failed 137")" \
        "failed 137" "record $x: reported lost (137)"
done
alive "$s1"
is "$?" 0 "the process that reused the pid is not signalled"
alive "$s2"
is "$?" 0 "the process that started long before the record is not signalled"
alive "$s3"
is "$?" 0 "the process named by a record of another boot is not signalled"
like "$(cat "$WORK/launcher-n1.log")" "event=lost alloc=[0-9]+ job=$ja .*its pid now belongs to another process" "the log says why (reused)"
like "$(cat "$WORK/launcher-n1.log")" "event=lost alloc=[0-9]+ job=$jc .*recorded before the last reboot" "the log says why (reboot)"

is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $je" succeeded)" succeeded \
    "an empty record nobody holds is removed and its allocation started"
like "$(cat "$WORK/launcher-n1.log")" "event=stale alloc=$(alloc_of "$je")" "the log says so"

# d is still held: not started meanwhile (e has run, so claims went by)
is "$(q "SELECT state FROM tide.allocations WHERE job_id = $jd")" assigned \
    "an empty record held by its creator: the allocation is not started"
[ -e "$WORK/runs.d" ]
is "$?" 1 "its command did not run"
# its creator completes it (it started s4) and lets go: adopted, not started
echo "$s4 $(starttime "$s4") $jd 0 $BOOT" >"$dfile"
kill "$holder"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jd" running)" running \
    "once complete, the record is adopted (the job runs)"
like "$(cat "$WORK/launcher-n1.log")" "event=adopt alloc=$(alloc_of "$jd") job=$jd" "the log says adopt"
[ -e "$WORK/runs.d" ]
is "$?" 1 "and the launcher did not start it a second time"
q "SELECT tide.cancel($jd)" >/dev/null
is "$(wait_for "SELECT state FROM tide.allocations WHERE job_id = $jd" released)" released \
    "the adopted work is stopped on eviction"
for _ in $(seq 50); do alive "$s4" || break; sleep 0.1; done
alive "$s4"
is "$?" 1 "its process (ours, by its record) is gone"
is "$(wc -l < "$WORK/runs.e" | tr -d ' ')" 1 "e ran exactly once"
finish
