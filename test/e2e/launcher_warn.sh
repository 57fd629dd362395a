#!/usr/bin/env bash
# R-T2, the warning before the time limit: a job with a time_limit and a
# warn_before gets the warning signal (SIGUSR1 by default) in its process
# group once, within a second of started_at + time_limit - warn_before, the
# job's started_at as the database has it.  Also across a launcher restart:
# a warning due after the restart is sent by the new launcher on time, one
# already sent is not sent again, and one that fell due while no launcher
# ran is sent late, once.  Each command traps the signal and writes the
# time; none depends on being stopped at its limit (the commands end on
# their own).
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 8
start_launcher n1
L1=$LAST_LAUNCHER

# a command that notes each USR1 in usr1.X (the time), and its child, a
# second member of the group, in child.X; it runs SECS seconds and exits 0
cat >"$WORK/trap.sh" <<EOF
x=\$1; n=\$((\$2 * 10))
trap 'date +%s.%N >> $WORK/usr1.\$x' USR1
( trap 'echo child >> $WORK/child.\$x' USR1; i=0; while [ \$i -lt \$n ]; do sleep 0.1; i=\$((i + 1)); done ) &
i=0; while [ \$i -lt \$n ]; do sleep 0.1; i=\$((i + 1)); done
exit 0
EOF
traps() { echo "exec sh $WORK/trap.sh $1 $2"; }
# submit a job running SECS with time_limit LIMIT and warn_before WARN (NULL: none)
warned_job() {
    local x=$1 secs=$2 limit=$3 warn=$4 j
    j=$(q "SELECT tide.submit('e2e', 'gpu=1', time_limit => '$limit s', command => \$c\$$(traps "$x" "$secs")\$c\$)")
    [ "$warn" = NULL ] || q "UPDATE tide.jobs SET warn_before = '$warn s' WHERE id = $j" >/dev/null
    echo "$j"
}
# seconds between the first USR1 of X and the job's due time (as an
# absolute value, rounded to tenths)
lag() {
    local t
    t=$(head -1 "$WORK/usr1.$1" 2>/dev/null)
    [ -n "$t" ] || { echo none; return; }
    q "SELECT round(abs($t - extract(epoch FROM started_at + time_limit - warn_before))::numeric, 1)
         FROM tide.jobs WHERE id = $2"
}
count() { if [ -f "$WORK/usr1.$1" ]; then wc -l <"$WORK/usr1.$1" | tr -d ' '; else echo 0; fi; }
within_a_second() { awk -v l="$1" 'BEGIN { exit !(l != "none" && l <= 1.0) }'; }

# ---- one launcher: a due in 3 s; b has a limit but no warning
ja=$(warned_job a 6 8 5)
jb=$(warned_job b 5 8 NULL)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb) AND state = 'running'" 2)" 2 "two jobs with time limits run"
wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb) AND state = 'succeeded'" 2 15 >/dev/null
l=$(lag a "$ja")
within_a_second "$l"; ok $? "a got SIGUSR1 within a second of started_at + time_limit - warn_before (off by $l s)"
is "$(count a)" 1 "once"
is "$(cat "$WORK/child.a" 2>/dev/null)" child "its whole process group got it (a child too)"
is "$(count b)" 0 "b, without warn_before, got none"
like "$(cat "$WORK/launcher-n1.log")" "event=warn alloc=[0-9]+ job=$ja .*signal=USR1" "the launcher logs the warning"
is "$(grep -c "event=warn .*job=$ja " "$WORK/launcher-n1.log")" 1 "in one line"
is "$(q "SELECT state FROM tide.jobs WHERE id = $ja")" succeeded "(the job went on after the warning)"

# ---- across a restart: c due in 6 s (after the restart), d due in 1 s
# (before it), e due in 3 s (while no launcher runs)
jc=$(warned_job c 8 10 4)
jd=$(warned_job d 7 9 8)
je=$(warned_job e 7 9 6)
q "SELECT tide.run_cycle()" >/dev/null
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($jc, $jd, $je) AND state = 'running'" 3)" 3 "three more run"
for _ in $(seq 30); do [ -s "$WORK/usr1.d" ] && break; sleep 0.1; done
is "$(count d)" 1 "d was warned before the restart"
kill "$L1"; wait "$L1" 2>/dev/null; LAUNCHER_PIDS=()
sleep 3.5
start_launcher n1
wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($jc, $jd, $je) AND state = 'succeeded'" 3 15 >/dev/null
l=$(lag c "$jc")
within_a_second "$l"; ok $? "c, due after the restart: warned by the new launcher within a second (off by $l s)"
is "$(count c)" 1 "once"
is "$(count d)" 1 "d, warned before the restart, is not warned again"
is "$(count e)" 1 "e, due while no launcher ran, is warned once after the restart"
like "$(grep "event=warn .*job=$je " "$WORK/launcher-n1.log")" "late" "late, and the log says so"
finish
